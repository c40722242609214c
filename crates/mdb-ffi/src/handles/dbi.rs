//! Which database handles a transaction may use (looked up on every data
//! call: one compare for the first handles, see `MDB_env::dbi_fast`), and
//! what becomes of the handles a transaction opened when it ends.

use super::dbi_table::{DbiEntry, DbiTable, UNSHARED};
use super::structs::{MDB_env, MDB_txn};
use crate::types::*;
use mdb::Database;
use std::os::raw::c_int;

impl MDB_txn {
    /// The engine database of handle `dbi` if this transaction may use it:
    /// shared before it began, or opened by it or an ancestor (else
    /// `EINVAL`, as LMDB).
    #[inline]
    pub(crate) fn db(&self, dbi: MDB_dbi) -> Result<Database, c_int> {
        // SAFETY: a live transaction's env outlives it.
        let env = unsafe { &*self.env };
        if let Some(f) = env.dbi_fast.get(dbi as usize) {
            let v = f.load(std::sync::atomic::Ordering::Acquire);
            // Open (not 0) and born by this transaction's epoch, in one
            // compare (see `MDB_env::dbi_limit`); the rest is for the slow
            // path, which also refuses a closed handle.
            if v.wrapping_sub(1) < self.dbi_limit {
                return Ok(Database::from_dbi(v as u32 - 1));
            }
        }
        self.db_slow(dbi)
    }

    #[cold]
    fn db_slow(&self, dbi: MDB_dbi) -> Result<Database, c_int> {
        // SAFETY: as in `db`.
        let env = unsafe { &*self.env };
        let t = env.dbis.read().unwrap_or_else(|x| x.into_inner());
        match t.get(dbi) {
            Some(e) if self.may_use(e) => Ok(e.db),
            _ => Err(EINVAL),
        }
    }

    /// Whether this transaction may use handle `e`.
    pub(crate) fn may_use(&self, e: &DbiEntry) -> bool {
        if u64::from(e.born) <= self.dbi_limit >> 32 {
            return true;
        }
        let mut t: *const MDB_txn = self;
        while !t.is_null() {
            if e.owners.contains(&(t as usize)) {
                return true;
            }
            // SAFETY: a live transaction's ancestors are live.
            t = unsafe { (*t).parent };
        }
        false
    }

    /// The engine database of a handle that user data may be read or
    /// written through: not the free DB.
    #[inline]
    pub(crate) fn data_db(&self, dbi: MDB_dbi) -> Result<Database, c_int> {
        if dbi == 0 {
            return Err(EINVAL);
        }
        self.db(dbi)
    }
}

impl MDB_env {
    /// What a transaction beginning now may use of `dbi_fast`: an entry
    /// `v` with `v - 1 < limit` (wrapping: not 0) was born by the current
    /// epoch `e`, as `limit` is `(e + 1) << 32` less one.
    pub(crate) fn dbi_limit(&self) -> u64 {
        let e = self.dbi_epoch.load(std::sync::atomic::Ordering::Acquire);
        ((u64::from(e) + 1) << 32) - 1
    }

    /// Mirror the table's first handles into `dbi_fast` (called with the
    /// write lock held, after a handle is opened, shared or closed).
    pub(crate) fn sync_dbi_fast(&self, t: &DbiTable) {
        for (i, f) in self.dbi_fast.iter().enumerate() {
            let v = t
                .get(i as MDB_dbi)
                .map_or(0, |e| (u64::from(e.born) << 32) | u64::from(e.db.dbi() + 1));
            f.store(v, std::sync::atomic::Ordering::Release);
        }
    }

    /// Transaction `txn` ended having opened `dbis`. Committed: a child's
    /// pass to its parent; a top-level one's are shared with the
    /// transactions that begin from now on. Aborted (or reset): closed
    /// unless another live transaction opened them too, or one shared them.
    #[inline(never)]
    pub(crate) fn end_dbis(
        &self,
        dbis: &[MDB_dbi],
        txn: *const MDB_txn,
        commit: bool,
        parent: *const MDB_txn,
    ) {
        let closed = {
            let mut t = self.dbis.write().unwrap_or_else(|x| x.into_inner());
            let closed = if !commit {
                t.abandon(dbis, txn as usize)
            } else if !parent.is_null() {
                t.hand_over(dbis, txn as usize, parent as usize);
                Vec::new()
            } else {
                let epoch = self.dbi_epoch.load(std::sync::atomic::Ordering::Relaxed);
                let next = epoch.saturating_add(1).min(UNSHARED - 1);
                if t.share(dbis, txn as usize, next) {
                    self.sync_dbi_fast(&t);
                    // After the entries: a transaction that reads `next`
                    // sees them shared.
                    self.dbi_epoch
                        .store(next, std::sync::atomic::Ordering::Release);
                }
                Vec::new()
            };
            if !closed.is_empty() {
                self.sync_dbi_fast(&t);
            }
            closed
        };
        if let Ok(en) = self.engine() {
            for db in closed {
                en.close_db(db);
            }
        }
    }

    /// Close handle `dbi` (no-op for 0, 1 and unknown handles).
    pub(crate) fn close_dbi(&self, dbi: MDB_dbi) {
        let e = {
            let mut t = self.dbis.write().unwrap_or_else(|x| x.into_inner());
            let e = t.remove(dbi);
            self.sync_dbi_fast(&t);
            e
        };
        if let (Some(e), Ok(en)) = (e, self.engine()) {
            en.close_db(e.db);
        }
    }
}
