//! One commit record of the log: the dirty page runs of a transaction and
//! its meta update, checksummed, so that replaying it rewrites exactly what
//! the commit would have written to the data file.
//!
//! Layout (little-endian), padded to 8 bytes:
//!
//! | offset | field |
//! |---|---|
//! | 0 | magic `u32` |
//! | 4 | format version `u16`, then the *durable mark* `u16`: `d` says the records up to txnid `txnid - d` were durable when this one was appended (0: no claim; see `open.rs`) |
//! | 8 | segment sequence number `u64` (a stale record in a recycled segment carries an older one) |
//! | 16 | txnid `u64` |
//! | 24 | page size `u32` |
//! | 28 | number of page runs `u32` |
//! | 32 | body length `u64` |
//! | 40 | CRC32C of the previous record (chains records, see `log.rs`) `u32` |
//! | 44 | CRC32C of this header (this field zeroed) and the body `u32` |
//! | 48 | body: the run table (`pgno: u64`, `len: u32`, `gap_off: u32`, `gap_len: u32` per run), the run bytes, then the patch count, the patch table and the patches' ranges, then the meta update, then the commit time `u64` (nanoseconds since the Unix epoch) |
//!
//! Version 5 writes the patch table and the meta update compactly
//! (`compact.rs`: LEB128 varints): the count; per patch the page number
//! as a zigzag delta from the previous patch's (from 0 for the first),
//! the base as a zigzag delta from the page number, and the length of its
//! ranges; the meta update as `meta_off`, its length, then each of its
//! little-endian 64-bit words (the last zero-padded). Version 4 has the
//! count `u32`, per patch `pgno: u64`, `base: u64`, `len: u32`, and the
//! meta update as `meta_off: u64`, `meta_len: u32` and its bytes; it is
//! still read, so a log written before rolls forward.
//!
//! A *patch* (since version 4) is a one-page run told by the bytes that differ
//! from its base, the committed page it was copied from on write
//! (`format/patch.rs`): replay reads the base from the data file (as the
//! checkpoint left it, or as an earlier record of the same replay rebuilt
//! it) and applies the ranges. Commits leave the base in place until the
//! next checkpoint: a page of the last checkpoint's snapshot freed since
//! is not reused before the next one (`crate::txn::write`); a page written
//! since may be (`crate::pager::young`: replay rebuilds it first).
//!
//! A run's bytes leave out its gap: `len - gap_len` bytes stored, the
//! `gap_len` bytes at `gap_off` being zeros. A commit leaves out the free
//! gap of each branch and leaf page ([`free_gap`](crate::format::page::free_gap)), which no reader looks
//! at: pages with no base (a split's new page, an overflow run) are logged
//! whole but for that gap. Version 1 records (no gaps: 12-byte run
//! entries), version 2 records (no commit time, which restoring a backup
//! to a point in time reads) and version 3 records (no patches) are still
//! read.
//!
//! `parse` never panics and never overflows on arbitrary bytes: anything
//! that is not a whole, valid record is `None`, the end of the log.
//!
//! The rooms: `layout.rs` the header's offsets, the versions and the
//! table entries' sizes; `encode.rs` a commit's parts as a record;
//! `parse.rs` a record checked and read in place.

mod encode;
mod layout;
mod parse;

pub(crate) use encode::{encode_into, encoded_len, RecordParts};
pub(crate) use layout::{pad8, VERSION};
pub(crate) use parse::{newer_version, parse, RecordView};

#[cfg(test)]
mod tests;
