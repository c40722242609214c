//! Where a record's fields lie (the table in `mod.rs`): the header's
//! offsets, the format versions, and the sizes of the body's entries.

/// "MDWR": marks the start of a record.
pub(super) const MAGIC: u32 = 0x5257_444d;
/// Bumped on any change of the layout; 2 added the gaps, 3 the commit
/// time, 4 the patches, 5 the compact patch table and meta update, 6 the
/// moves among a patch's ranges (`format/patch.rs`; read in a version 5
/// record too, where none was ever written).
pub(crate) const VERSION: u16 = 6;
/// The first version with the compact patch table and meta update.
pub(super) const V5: u16 = 5;
/// The last version with fixed-width patch entries and meta update.
pub(super) const V4: u16 = 4;
/// Bytes of the commit time at the end of a version 3 body.
pub(super) const TIME_LEN: usize = 8;
/// Bytes before the body.
pub(crate) const HEADER: usize = 48;
/// Bytes of one entry of the run table (version 1: 12).
pub(super) const RUN_ENTRY: usize = 20;
/// Bytes of the meta update's fixed part (`meta_off`, `meta_len`).
pub(super) const META_FIXED: usize = 12;
/// Offset of the record's own CRC in the header.
pub(super) const CRC_OFF: usize = 44;
/// Bytes of one entry of the patch table.
pub(super) const PATCH_ENTRY: usize = 20;

/// Round `n` up to a multiple of 8, `None` on overflow.
pub(crate) fn pad8(n: u64) -> Option<u64> {
    n.checked_add(7).map(|v| v & !7)
}
