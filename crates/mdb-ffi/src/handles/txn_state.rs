//! What a C transaction holds: the engine transaction in one of its states
//! ([`Kind`]), and for a write transaction its root ([`WriteRoot`]): the
//! engine's `RwTxn` and the stack of savepoints its nested C transactions
//! are.

use mdb::{NestedTxn, RoTxn, RwTxn};

/// The engine's write transaction and its open savepoints.
pub(crate) struct WriteRoot {
    /// From `Box::into_raw`; freed in `Drop` after the stack is emptied.
    rw: *mut RwTxn<'static>,
    stack: Vec<NestedTxn<'static, 'static>>,
    /// Some call handed C a pointer into this transaction's pages (a value
    /// read through it, a reserved slot): a later put's arguments may point
    /// into a page it changes, so they are copied first. Until then they
    /// are the caller's own memory or committed pages, which no put writes.
    pub(crate) lent: bool,
}

impl WriteRoot {
    pub(crate) fn new(w: RwTxn<'static>) -> WriteRoot {
        WriteRoot {
            rw: Box::into_raw(Box::new(w)),
            stack: Vec::new(),
            lent: false,
        }
    }

    /// The innermost transaction level.
    pub(crate) fn top(&mut self) -> &mut RwTxn<'static> {
        match self.stack.last_mut() {
            Some(n) => n,
            // SAFETY: rw is valid until Drop, and no savepoint borrows it now.
            None => unsafe { &mut *self.rw },
        }
    }

    /// The innermost transaction level, shared.
    pub(crate) fn top_ref(&self) -> &RwTxn<'static> {
        match self.stack.last() {
            Some(n) => n,
            // SAFETY: rw is valid until Drop, and no savepoint borrows it now.
            None => unsafe { &*self.rw },
        }
    }

    pub(crate) fn push(&mut self) -> mdb::Result<()> {
        let n = self.top().nested()?;
        // SAFETY: the savepoint borrows the level below it, which stays in
        // place (the RwTxn is boxed; savepoints only hold references to it)
        // and is only used again after this savepoint is popped (LIFO).
        let n: NestedTxn<'static, 'static> = unsafe { std::mem::transmute(n) };
        self.stack.push(n);
        Ok(())
    }

    pub(crate) fn pop(&mut self, commit: bool) -> mdb::Result<()> {
        match self.stack.pop() {
            Some(n) if commit => n.commit(),
            Some(n) => {
                n.abort();
                Ok(())
            }
            None => Err(mdb::ErrorKind::BadTxn.into()),
        }
    }

    pub(crate) fn commit(mut self) -> mdb::Result<()> {
        while !self.stack.is_empty() {
            self.pop(true)?;
        }
        let rw = std::mem::replace(&mut self.rw, std::ptr::null_mut());
        // SAFETY: rw came from Box::into_raw and no savepoint is left.
        unsafe { Box::from_raw(rw) }.commit()
    }
}

impl Drop for WriteRoot {
    fn drop(&mut self) {
        while let Some(n) = self.stack.pop() {
            n.abort();
        }
        if !self.rw.is_null() {
            // SAFETY: rw came from Box::into_raw; nothing borrows it any more.
            drop(unsafe { Box::from_raw(self.rw) });
        }
    }
}

/// What a C transaction is.
pub(crate) enum Kind {
    /// Finished: the struct waits in the environment's pool.
    Dead,
    /// Read-only.
    Read(RoTxn<'static>),
    /// Read-only after `mdb_txn_reset`. Under MDB_NOTLS the engine
    /// transaction is kept, reset, for its reader slot (as LMDB keeps it for
    /// `mdb_txn_renew`); otherwise the slot is the thread's and `None`.
    Reset(Option<RoTxn<'static>>),
    /// The top-level write transaction.
    Write(Box<WriteRoot>),
    /// A child of a write transaction: a savepoint of the root's stack.
    Child(*mut WriteRoot),
}

/// Access to the engine transaction of a usable C transaction.
pub(crate) enum View<'a> {
    Ro(&'a RoTxn<'static>),
    Rw(&'a mut RwTxn<'static>),
}
