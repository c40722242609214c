//! Pages a writer in WAL mode may reuse before the next checkpoint.
//!
//! Free records past the last checkpoint are held (`crate::wal::hold`):
//! replay reads the base of a patched page from the data file, so a page
//! of the checkpoint's snapshot freed since must keep its content until
//! the next checkpoint. Replay applies the records in commit order, and a
//! record's bases are pages of the snapshot just before it, read after
//! every earlier record of the same replay was written (`record/parse.rs`
//! `expand`). So a page that was not in the checkpoint's snapshot, or
//! that a record past it wrote since, is rebuilt by replay before any
//! record reads it: it may be reused as soon as readers allow. Those are
//! the *young* pages: this set holds the pages this process's commits
//! wrote or allocated since the checkpoint it last saw (a page allocated
//! by a writer of the log was free in that snapshot, or young already),
//! and the keys of the free records past the checkpoint that list some.
//!
//! Pages of another process's commits are not in it (held, as before),
//! and it is emptied whenever the checkpoint moves (`Inner::saw` in
//! `wal/mode.rs`, under the writer lock): a page young for one checkpoint
//! may be in the next one's snapshot. A checkpoint therefore states the
//! snapshot published when it is recorded under the writer lock
//! (`wal/checkpointer.rs`), never an older one read before its data sync:
//! a young page of that older snapshot may have been freed and reused
//! meanwhile, while no page of the published one was (a page is reused
//! only once the commit that freed it is published). Young pages taken
//! from a held record and left unused, and loose pages, go back under a
//! held key at least as high as their record's, not under the low keys
//! every writer reuses (so a young page is only ever listed where it was
//! freed or later).

use crate::pgno_map::PgnoMap;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// The young pages of one environment handle in WAL mode (see the module
/// documentation).
#[derive(Default)]
pub(crate) struct Young(Mutex<Set>);

#[derive(Default)]
struct Set {
    pages: PgnoMap<()>,
    keys: BTreeSet<u64>,
    /// Young pages reused by the commits so far.
    reused: u64,
}

/// What a commit tells [`Young::committed`].
pub(crate) struct Committed<'a> {
    /// The commit's txnid (the key of its own free record).
    pub(crate) txnid: u64,
    /// Runs it wrote: `(first pgno, pages)`.
    pub(crate) written: &'a [(u64, u64)],
    /// Pages it allocated without writing them (filed as free again).
    pub(crate) unwritten: &'a [u64],
    /// Pages its own free record lists.
    pub(crate) own: &'a [u64],
    /// Held records it consumed and filed again, and whether each lists
    /// young pages still.
    pub(crate) refiled: &'a [(u64, bool)],
    /// Young pages it reused.
    pub(crate) reused: u64,
}

impl Young {
    fn set(&self) -> std::sync::MutexGuard<'_, Set> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The checkpoint moved: no page is known young for the new one.
    pub(crate) fn clear(&self) {
        let mut s = self.set();
        s.pages.clear();
        s.keys.clear();
    }

    /// Keys of held records in `lo..hi` that list young pages, ascending.
    pub(crate) fn keys_in(&self, lo: u64, hi: u64) -> Vec<u64> {
        if lo >= hi {
            return Vec::new();
        }
        self.set().keys.range(lo..hi).copied().collect()
    }

    /// `pages` split into (young, held), order kept.
    pub(crate) fn split(&self, pages: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let s = self.set();
        pages.iter().partition(|p| s.pages.contains_key(p))
    }

    /// Pages of `pages` that are not young: held until the next checkpoint.
    pub(crate) fn held_count(&self, pages: &[u64]) -> usize {
        let s = self.set();
        pages.iter().filter(|p| !s.pages.contains_key(p)).count()
    }

    /// A commit appended its record (before the writer lock is given
    /// back, so no checkpoint runs in between).
    pub(crate) fn committed(&self, c: Committed<'_>) {
        let mut s = self.set();
        s.reused += c.reused;
        for &(pg, n) in c.written {
            for p in pg..pg + n {
                s.pages.insert(p, ());
            }
        }
        for &p in c.unwritten {
            s.pages.insert(p, ());
        }
        for &(key, young) in c.refiled {
            if young {
                s.keys.insert(key);
            } else {
                s.keys.remove(&key);
            }
        }
        if c.own.iter().any(|p| s.pages.contains_key(p)) {
            s.keys.insert(c.txnid);
        }
    }

    /// Young pages the commits reused so far ([`crate::WalInfo`]).
    pub(crate) fn reused(&self) -> u64 {
        self.set().reused
    }
}
