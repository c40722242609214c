//! The on-disk layout (lmdb-format.md): constants, page and node views,
//! meta pages, database records and flags, the key orders LMDB derives
//! from those flags, the free list's records, and a page told by its
//! differences from a base page (`patch.rs`, the write-ahead log's patches).
//!
//! This layer is pure: it works on byte slices, has no `unsafe` but the call
//! of a user's C comparator (`cmp.rs`), and never panics on corrupt input: a view that does not fit its page is
//! [`ErrorKind::Corrupted`](crate::error::ErrorKind::Corrupted). Bytes not yet validated
//! (a whole file under `check`, a page under `copy`) are read with the
//! checked readers of `bytes.rs` and the raw header reads of `page.rs` and
//! `meta.rs` ([`page::Header`], [`page::NodeHeader`], [`meta::MetaHeader`]).
//! Everything above reads the file through it (the engine, `check` and
//! `copy`).

pub mod bytes;
pub mod cmp;
pub mod flags;
pub mod freelist;
pub mod meta;
pub mod page;
pub(crate) mod patch;

/// A fixed xorshift sequence for tests: deterministic, cheap enough for
/// Miri, no dependency.
#[cfg(test)]
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
