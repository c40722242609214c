//! The free pages a write transaction holds in memory (lmdb-format.md §8).
//!
//! A page freed by this transaction that an older snapshot can still see
//! goes to `freed` and is saved under this transaction's id. A page this
//! transaction allocated and freed again is "loose" and reused at once.
//! Pages of free records older than every reader (`key < oldest`) are
//! "reclaimed" into `reclaimed`; what is left unused at commit is filed back
//! under the consumed keys, so nothing is ever lost. Reading and writing the
//! free database itself is the tree layer's work (`tree::alloc`,
//! `tree::freedb`).

/// Free-list state of one write transaction.
#[derive(Clone)]
pub(crate) struct FreeState {
    /// Pages from committed snapshots freed by this transaction.
    pub(crate) freed: Vec<u64>,
    /// Pages allocated and freed again in this transaction.
    pub(crate) loose: Vec<u64>,
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
}

impl FreeState {
    pub(crate) fn new(oldest: u64) -> FreeState {
        FreeState {
            freed: Vec::new(),
            loose: Vec::new(),
            reclaimed: Vec::new(),
            consumed: 0,
            oldest,
            exhausted: false,
            saving: false,
            kept: Vec::new(),
        }
    }

    /// Whether `n` consecutive free pages are at hand (one: any loose or
    /// reclaimed page).
    pub(crate) fn has_run(&self, n: usize) -> bool {
        (n == 1 && !self.loose.is_empty()) || self.find_run(n).is_some()
    }

    /// Where `n` consecutive reclaimed pages lie, preferring the lowest
    /// numbers: the index of the run's highest page.
    fn find_run(&self, n: usize) -> Option<usize> {
        let r = &self.reclaimed;
        if n == 0 || r.len() < n {
            return None;
        }
        // Descending list: a run is r[i-n+1..=i] with r[j] == r[j+1] + 1.
        (n - 1..r.len())
            .rev()
            .map(|i| i + 1 - n)
            .find(|&lo| r[lo] == r[lo + n - 1] + (n as u64 - 1))
    }

    /// Take `n` consecutive reclaimed pages, preferring the lowest numbers.
    pub(crate) fn take_run(&mut self, n: usize) -> Option<u64> {
        let lo = self.find_run(n)?;
        let first = self.reclaimed[lo + n - 1];
        self.reclaimed.drain(lo..lo + n);
        Some(first)
    }
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
}
