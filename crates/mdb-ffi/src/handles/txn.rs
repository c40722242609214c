//! What a C transaction may do in its state (usable, broken, its engine
//! transaction to read or write through), taking its struct from the
//! environment's pool, and ending it: children first, then the handles it
//! opened, its cursors, and the struct back to the pool.

use super::cursor::detach;
use super::structs::{MDB_env, MDB_txn};
use super::txn_state::{Kind, View, WriteRoot};
use crate::types::*;
use mdb::RwTxn;
use std::os::raw::c_int;

impl MDB_txn {
    /// `MDB_BAD_TXN` if it has a child or failed earlier.
    pub(crate) fn usable(&self) -> Result<(), c_int> {
        if !self.child.is_null() || self.is_broken() {
            return Err(MDB_BAD_TXN);
        }
        Ok(())
    }

    /// Fit only to abort: marked here, or by the engine (which also breaks
    /// the parent of a child that failed to commit).
    pub(crate) fn is_broken(&self) -> bool {
        self.broken
            || match &self.kind {
                Kind::Write(root) => root.top_ref().is_broken(),
                // SAFETY: a child's root belongs to its top-level ancestor,
                // alive while the child is.
                Kind::Child(root) => unsafe { (**root).top_ref() }.is_broken(),
                Kind::Read(_) | Kind::Reset(_) | Kind::Dead => false,
            }
    }

    /// The engine transaction (`EINVAL` for a reset read transaction), to
    /// read through: what it returns may reach C, so a write transaction
    /// counts as having lent pointers into its pages.
    pub(crate) fn view(&mut self) -> Result<View<'_>, c_int> {
        self.usable()?;
        let root = match &mut self.kind {
            Kind::Read(r) => return Ok(View::Ro(r)),
            Kind::Write(root) => &mut **root,
            // SAFETY: a child's root belongs to its top-level ancestor, alive
            // while the child is.
            Kind::Child(root) => unsafe { &mut **root },
            Kind::Reset(_) | Kind::Dead => return Err(EINVAL),
        };
        root.lent = true;
        Ok(View::Rw(root.top()))
    }

    /// The root of a write transaction (`EACCES` for a read-only one).
    fn root(&mut self) -> Result<&mut WriteRoot, c_int> {
        match &mut self.kind {
            Kind::Write(root) => Ok(root),
            // SAFETY: a child's root belongs to its top-level ancestor, alive
            // while the child is.
            Kind::Child(root) => Ok(unsafe { &mut **root }),
            Kind::Read(_) => Err(EACCES),
            Kind::Reset(_) | Kind::Dead => Err(EINVAL),
        }
    }

    /// The engine write transaction (`EACCES` for a read-only one), for a
    /// call that hands C no pointer into its pages, and, if an earlier call
    /// did (see [`WriteRoot::lent`]), the buffer to copy arguments into.
    pub(crate) fn write_lent(
        &mut self,
    ) -> Result<(&mut RwTxn<'static>, Option<&mut Vec<u8>>), c_int> {
        if self.rdonly {
            return Err(EACCES);
        }
        self.usable()?;
        let root = match &mut self.kind {
            Kind::Write(root) => &mut **root,
            // SAFETY: a child's root belongs to its top-level ancestor, alive
            // while the child is.
            Kind::Child(root) => unsafe { &mut **root },
            Kind::Read(_) => return Err(EACCES),
            Kind::Reset(_) | Kind::Dead => return Err(EINVAL),
        };
        let scratch = root.lent.then_some(&mut self.scratch);
        Ok((root.top(), scratch))
    }

    /// Note that this (write) transaction handed C a pointer into its pages.
    pub(crate) fn lend(&mut self) {
        if let Ok(root) = self.root() {
            root.lent = true;
        }
    }

    /// The engine write transaction (`EACCES` for a read-only one), for a
    /// call that may hand C a pointer into its pages.
    pub(crate) fn write(&mut self) -> Result<&mut RwTxn<'static>, c_int> {
        if self.rdonly {
            return Err(EACCES);
        }
        self.usable()?;
        let root = self.root()?;
        root.lent = true;
        Ok(root.top())
    }

    /// Record the outcome of a write operation (§7.1).
    pub(crate) fn note<T>(&mut self, r: mdb::Result<T>) -> Result<T, c_int> {
        r.map_err(|e| {
            if crate::guard::is_fatal(&e) {
                self.broken = true;
            }
            e.code()
        })
    }
}

/// Take a struct of the environment's pool for `t`.
pub(crate) fn alloc(env: &MDB_env, t: MDB_txn) -> *mut MDB_txn {
    env.txns.lock().unwrap_or_else(|x| x.into_inner()).take(t)
}

/// End `txn` (and its children first): commit or abort, release its
/// handles and cursors, and return the struct to the pool.
///
/// # Safety
/// `txn` is a live transaction of an open environment.
pub(crate) unsafe fn finish(txn: *mut MDB_txn, commit: bool) -> c_int {
    // SAFETY: per the caller's contract.
    let t = unsafe { &mut *txn };
    let mut rc = 0;
    if !t.child.is_null() {
        // SAFETY: a live child of a live transaction.
        rc = unsafe { finish(t.child, commit) };
    }
    let parent = t.parent;
    let ok_to_commit = commit && rc == 0;
    let committed = match std::mem::replace(&mut t.kind, Kind::Dead) {
        Kind::Dead => false,
        Kind::Read(_) | Kind::Reset(_) => commit,
        Kind::Write(root) => {
            if ok_to_commit && !t.broken {
                match root.commit() {
                    Ok(()) => true,
                    Err(e) => {
                        rc = e.code();
                        false
                    }
                }
            } else {
                drop(root);
                if ok_to_commit {
                    rc = MDB_BAD_TXN;
                }
                false
            }
        }
        Kind::Child(root) => {
            // SAFETY: the root outlives its children.
            let root = unsafe { &mut *root };
            if !ok_to_commit {
                // Aborted, or its own child failed to commit: as LMDB, the
                // parent is left usable.
                let _ = root.pop(false);
                false
            } else if t.broken {
                // Failed in this layer only (the engine does not know): do
                // what the engine does for its own failures.
                let _ = root.pop(false);
                rc = MDB_BAD_TXN;
                // SAFETY: a child's parent is alive.
                unsafe { (*parent).broken = true };
                false
            } else {
                // A child the engine saw fail is discarded and its parent
                // broken by the engine itself (seen through `usable`).
                match root.pop(true) {
                    Ok(()) => true,
                    Err(e) => {
                        rc = e.code();
                        false
                    }
                }
            }
        }
    };
    t.engine = None;
    // SAFETY: the env outlives its transactions.
    let env = unsafe { &*t.env };
    if !t.new_dbis.is_empty() {
        let dbis = std::mem::take(&mut t.new_dbis);
        env.end_dbis(&dbis, txn, committed, parent);
        if committed && !parent.is_null() {
            // SAFETY: a child's parent is alive.
            unsafe { (*parent).new_dbis.extend(dbis) };
        }
    }
    for c in std::mem::take(&mut t.cursors) {
        // SAFETY: the cursors list holds live cursors of this transaction.
        unsafe { detach(c) };
    }
    if !parent.is_null() {
        // SAFETY: a child's parent is alive.
        unsafe { (*parent).child = std::ptr::null_mut() };
    }
    t.live = false;
    t.parent = std::ptr::null_mut();
    t.scratch = Vec::new();
    env.txns
        .lock()
        .unwrap_or_else(|x| x.into_inner())
        .give_back(txn);
    rc
}
