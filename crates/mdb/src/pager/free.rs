//! The free pages a write transaction holds in memory (lmdb-format.md §8).
//!
//! A page freed by this transaction that an older snapshot can still see
//! goes to `freed` and is saved under this transaction's id. A page this
//! transaction allocated and freed again is "loose" and reused at once.
//! Pages of free records older than every reader (`key < oldest`) are
//! "reclaimed" into `reclaimed`; what is left unused at commit is filed back
//! under the consumed keys, so nothing is ever lost. In WAL mode, records
//! past the last checkpoint are held, but their young pages
//! (`young.rs`) are taken into `young_pool`, the rest filed again
//! under the record's key (`held`). Reading and writing the
//! free database itself is the tree layer's work (`tree::alloc`,
//! `tree::freedb`).

use crate::young::Young;
use std::sync::Arc;

/// Free-list state of one write transaction.
#[derive(Clone)]
pub(crate) struct FreeState {
    /// Pages from committed snapshots freed by this transaction.
    pub(crate) freed: Vec<u64>,
    /// Pages allocated and freed again in this transaction.
    pub(crate) loose: Vec<u64>,
    /// Loose pages the commit files in its own record, beside `freed`
    /// (when it consumed no record to file them under). Kept apart: they
    /// are not pages of the snapshot the transaction started from, so
    /// never a base of a patched page.
    pub(crate) loose_filed: Vec<u64>,
    /// Reusable pages taken from free records, sorted descending.
    pub(crate) reclaimed: Vec<u64>,
    /// Largest free-record key consumed so far.
    pub(crate) consumed: u64,
    /// Records with keys below this are invisible to every reader.
    pub(crate) oldest: u64,
    /// No further record can be consumed in this transaction.
    pub(crate) exhausted: bool,
    /// Saving the free list: allocation must not consume further records.
    pub(crate) saving: bool,
    /// Keys of the records this commit filed its unused reclaimed pages
    /// under: consuming steps over them.
    pub(crate) kept: Vec<u64>,
    /// WAL mode: the young pages (`young.rs`) and the readers' bound
    /// on free records (`oldest` is the lower of it and the checkpoint's).
    pub(crate) young: Option<(Arc<Young>, u64)>,
    /// Keys of held records listing young pages, not consumed yet by this
    /// transaction, descending (popped from the end); `None` until the
    /// first is wanted.
    pub(crate) young_keys: Option<Vec<u64>>,
    /// Young pages taken from held records, sorted descending.
    pub(crate) young_pool: Vec<u64>,
    /// Pages allocated from `young_pool`.
    pub(crate) young_used: u64,
    /// Held records consumed for their young pages, ascending by key.
    pub(crate) held: Vec<HeldRecord>,
    /// Loose pages the save filed (tell the young set at commit).
    pub(crate) filed_loose: Vec<u64>,
}

/// A free record past the checkpoint consumed for its young pages: filed
/// again under its key with the rest (the last one also with the young
/// pages and loose pages left over, see `young.rs`).
#[derive(Clone, Debug)]
pub(crate) struct HeldRecord {
    pub(crate) key: u64,
    /// Its pages that are not young, descending.
    pub(crate) pages: Vec<u64>,
    /// Reserved again by this transaction (so its leaf is dirty).
    pub(crate) reserved: bool,
    /// Filed with young pages (set by the save).
    pub(crate) young: bool,
}

impl FreeState {
    pub(crate) fn new(oldest: u64) -> FreeState {
        FreeState {
            freed: Vec::new(),
            loose: Vec::new(),
            loose_filed: Vec::new(),
            reclaimed: Vec::new(),
            consumed: 0,
            oldest,
            exhausted: false,
            saving: false,
            kept: Vec::new(),
            young: None,
            young_keys: None,
            young_pool: Vec::new(),
            young_used: 0,
            held: Vec::new(),
            filed_loose: Vec::new(),
        }
    }

    /// Take `n` consecutive young pages, preferring the lowest numbers.
    #[inline]
    pub(crate) fn take_young_run(&mut self, n: usize) -> Option<u64> {
        let p = take_from(&mut self.young_pool, n)?;
        self.young_used += n as u64;
        Some(p)
    }

    /// Whether `n` consecutive free pages are at hand (one: any loose or
    /// reclaimed page).
    pub(crate) fn has_run(&self, n: usize) -> bool {
        if n == 1 {
            return !self.loose.is_empty() || !self.reclaimed.is_empty();
        }
        find_run(&self.reclaimed, n).is_some() || {
            let mut l = self.loose.clone();
            sort_desc(&mut l);
            find_run(&l, n).is_some()
        }
    }

    /// Take `n` consecutive reclaimed pages, preferring the lowest numbers.
    #[inline]
    pub(crate) fn take_run(&mut self, n: usize) -> Option<u64> {
        take_from(&mut self.reclaimed, n)
    }

    /// Take `n` consecutive loose pages (n > 1: single pages are popped),
    /// preferring the lowest numbers. A run freed by this transaction (an
    /// overflow value replaced or deleted) is reused for the next run of
    /// its size or smaller, and loose pages that happen to be adjacent
    /// make runs too, so rewriting a large value many times in one
    /// transaction does not take new pages each time.
    pub(crate) fn take_loose_run(&mut self, n: usize) -> Option<u64> {
        if self.loose.len() < n {
            return None;
        }
        sort_desc(&mut self.loose);
        take_from(&mut self.loose, n)
    }
}

/// Sort page numbers descending, unless they already are (the common
/// case once sorted: frees since then are rare next to run allocations).
fn sort_desc(v: &mut [u64]) {
    if !v.is_sorted_by(|a, b| a > b) {
        crate::pager::sort_pgnos(v, true);
    }
}

/// Where `n` consecutive pages lie in the descending list `r`, preferring
/// the lowest numbers: the index of the run's highest page.
#[inline]
fn find_run(r: &[u64], n: usize) -> Option<usize> {
    if n == 0 || r.len() < n {
        return None;
    }
    // Descending list: a run is r[i-n+1..=i] with r[j] == r[j+1] + 1.
    (n - 1..r.len())
        .rev()
        .map(|i| i + 1 - n)
        .find(|&lo| r[lo] == r[lo + n - 1] + (n as u64 - 1))
}

/// Remove a run of `n` consecutive pages from the descending list `r`;
/// its first page.
#[inline]
fn take_from(r: &mut Vec<u64>, n: usize) -> Option<u64> {
    let lo = find_run(r, n)?;
    let first = r[lo + n - 1];
    r.drain(lo..lo + n);
    Some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_run_prefers_low_pages() {
        let mut f = FreeState::new(0);
        f.reclaimed = vec![20, 12, 11, 10, 5, 3];
        assert_eq!(f.take_run(1), Some(3));
        assert_eq!(f.take_run(3), Some(10));
        assert_eq!(f.reclaimed, vec![20, 5]);
        assert_eq!(f.take_run(2), None);
    }

    #[test]
    fn loose_runs_coalesce_across_frees() {
        let mut f = FreeState::new(0);
        // Two runs freed apart, adjacent in the file, and a stray page.
        f.loose = vec![10, 11, 12, 40, 7, 8, 9];
        assert!(f.has_run(6));
        assert!(!f.has_run(7));
        assert_eq!(f.take_loose_run(5), Some(7));
        assert_eq!(f.loose, vec![40, 12]);
        assert_eq!(f.take_loose_run(2), None);
    }
}
