//! The write transaction's change counts, for detached cursors
//! (`CursorState`): a cursor re-finds its item only after a change that
//! may have moved it, a change of its own database or one that may move
//! any cursor. A put into one of slapd's index databases then leaves the
//! cursors of the others where they are (LMDB's cursors are fixed up in
//! place, per database, by the operation itself).
//!
//! A change to one database moves no page of another: copy-on-write,
//! splits and merges stay inside the tree changed, and spilling keeps page
//! numbers. What may move cursors of every database counts as a change to
//! all: creating or deleting a named database (the main tree holds their
//! records) and a nested transaction's abort (its pages go back).

use crate::db::Database;
use std::cell::{Cell, RefCell};

/// What the detached cursors of a write transaction did so far
/// ([`RwTxn::cursor_work`](crate::RwTxn::cursor_work)): how often they
/// searched again, and how often a put went without a search.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CursorWork {
    /// Re-finds of a cursor's item after a change (a search from the root).
    pub refinds: u64,
    /// Cursor puts that found the key's place on the cursor's leaf.
    pub from_leaf: u64,
    /// Cursor puts that left the cursor on the item by their own path.
    pub placed: u64,
    /// `CURRENT` puts that overwrote a duplicate in place.
    pub in_place: u64,
}

/// Change counts of one write transaction.
pub(crate) struct Changes {
    /// What the cursors did (tests).
    pub(crate) work: Cell<CursorWork>,
    /// Changes so far (never 0: read transactions report 0).
    count: Cell<u64>,
    /// `count` after the last change to every database.
    all: Cell<u64>,
    /// `count` after the last change to each database, by handle.
    per_db: RefCell<Vec<u64>>,
}

impl Changes {
    pub(crate) fn new() -> Changes {
        Changes {
            work: Cell::new(CursorWork::default()),
            count: Cell::new(1),
            all: Cell::new(1),
            per_db: RefCell::new(Vec::new()),
        }
    }

    /// Changes so far.
    #[inline]
    pub(crate) fn count(&self) -> u64 {
        self.count.get()
    }

    /// A change to `db` begins.
    #[inline]
    pub(crate) fn change(&self, db: Database) {
        let n = self.count.get() + 1;
        self.count.set(n);
        let i = db.0 as usize;
        let mut v = self.per_db.borrow_mut();
        if v.len() <= i {
            v.resize(i + 1, 0);
        }
        v[i] = n;
    }

    /// A change that may move the cursors of every database.
    pub(crate) fn change_all(&self) {
        let n = self.count.get() + 1;
        self.count.set(n);
        self.all.set(n);
    }

    /// Count some cursor work.
    #[inline]
    pub(crate) fn note(&self, f: impl FnOnce(&mut CursorWork)) {
        let mut w = self.work.get();
        f(&mut w);
        self.work.set(w);
    }

    /// The count a cursor of `db` compares with the one it saw last: equal
    /// while nothing that may move it happened.
    #[inline]
    pub(crate) fn of(&self, db: Database) -> u64 {
        let own = self
            .per_db
            .borrow()
            .get(db.0 as usize)
            .copied()
            .unwrap_or(0);
        own.max(self.all.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_moves_its_own_database_and_a_change_to_all_moves_every_one() {
        let c = Changes::new();
        let (a, b) = (Database(2, 0), Database(3, 0));
        let (a0, b0) = (c.of(a), c.of(b));
        assert_ne!(a0, 0);
        c.change(a);
        assert_ne!(c.of(a), a0);
        assert_eq!(c.of(b), b0);
        let a1 = c.of(a);
        c.change_all();
        assert_ne!(c.of(a), a1);
        assert_ne!(c.of(b), b0);
        assert_ne!(c.of(Database(40, 0)), b0);
    }
}
