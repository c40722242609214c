//! Transactions (c-api.md §7, §12).
//!
//! An engine transaction borrows its `Env`; a C `MDB_txn` must own it. The
//! struct therefore holds a clone of the environment's `Arc<mdb::Env>` next
//! to the transaction, whose lifetime is widened to `'static`: `finish` and
//! `mdb_txn_reset` always drop the transaction before the `Arc`, so the
//! borrow never outlives the `Env`.
//!
//! Nested C transactions are savepoints: the top-level write transaction's
//! `WriteRoot` keeps the engine `RwTxn` and a stack of `NestedTxn`s, one per
//! child level, each derived from the one below it. Only the innermost C
//! transaction may be used (the others have a child: `MDB_BAD_TXN`), and it
//! works on the top of the stack.

use crate::cursor::MDB_cursor;
use crate::env::{env_ref, MDB_env};
use crate::guard::{code, guard, guard_or};
use crate::types::*;
use mdb::{NestedTxn, RoTxn, RwTxn, Txn};
use std::os::raw::{c_int, c_uint};
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
    fn new(w: RwTxn<'static>) -> WriteRoot {
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

    fn push(&mut self) -> mdb::Result<()> {
        let n = self.top().nested()?;
        // SAFETY: the savepoint borrows the level below it, which stays in
        // place (the RwTxn is boxed; savepoints only hold references to it)
        // and is only used again after this savepoint is popped (LIFO).
        let n: NestedTxn<'static, 'static> = unsafe { std::mem::transmute(n) };
        self.stack.push(n);
        Ok(())
    }

    fn pop(&mut self, commit: bool) -> mdb::Result<()> {
        match self.stack.pop() {
            Some(n) if commit => n.commit(),
            Some(n) => {
                n.abort();
                Ok(())
            }
            None => Err(mdb::ErrorKind::BadTxn.into()),
        }
    }

    fn commit(mut self) -> mdb::Result<()> {
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

/// `MDB_txn`.
pub struct MDB_txn {
    pub(crate) live: bool,
    /// Declared before `engine`, and always cleared first.
    pub(crate) kind: Kind,
    pub(crate) engine: Option<Arc<mdb::Env>>,
    pub(crate) env: *mut MDB_env,
    pub(crate) parent: *mut MDB_txn,
    pub(crate) child: *mut MDB_txn,
    pub(crate) id: u64,
    pub(crate) rdonly: bool,
    /// A failed operation left the transaction fit only to abort.
    pub(crate) broken: bool,
    /// Handles first opened in this transaction: closed if it aborts.
    pub(crate) new_dbis: Vec<MDB_dbi>,
    /// `MDB_env::dbi_epoch` when it began: the shared handles it may use.
    pub(crate) dbi_epoch: u32,
    pub(crate) cursors: Vec<*mut MDB_cursor>,
    /// Copies of put/del arguments, which may point into the database.
    pub(crate) scratch: Vec<u8>,
}

/// Access to the engine transaction of a usable C transaction.
pub(crate) enum View<'a> {
    Ro(&'a RoTxn<'static>),
    Rw(&'a mut RwTxn<'static>),
}

/// A live transaction handle, or `EINVAL`.
///
/// # Safety
/// `txn` is NULL or a pointer from `mdb_txn_begin` whose environment is open.
pub(crate) unsafe fn txn_ref<'a>(txn: *mut MDB_txn) -> Result<&'a mut MDB_txn, c_int> {
    if txn.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: per the caller's contract the struct is alive (pooled structs
    // stay allocated until the environment is closed).
    let t = unsafe { &mut *txn };
    if !t.live {
        return Err(EINVAL);
    }
    Ok(t)
}

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

fn alloc(env: &MDB_env, t: MDB_txn) -> *mut MDB_txn {
    env.txns.lock().unwrap_or_else(|x| x.into_inner()).take(t)
}

/// `mdb_txn_begin`.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_begin(
    env: *mut MDB_env,
    parent: *mut MDB_txn,
    flags: c_uint,
    txn: *mut *mut MDB_txn,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? };
            if txn.is_null() {
                return Err(EINVAL);
            }
            let engine = e.engine()?;
            let rdonly = flags & env_flags::RDONLY != 0;
            let mut t = MDB_txn {
                live: true,
                kind: Kind::Dead,
                engine: None,
                env,
                parent,
                child: std::ptr::null_mut(),
                id: 0,
                rdonly,
                broken: false,
                new_dbis: Vec::new(),
                dbi_epoch: e.dbi_epoch.load(Ordering::Acquire),
                cursors: Vec::new(),
                scratch: Vec::new(),
            };
            if !parent.is_null() {
                // SAFETY: parent per the lmdb.h contract.
                let p = unsafe { txn_ref(parent)? };
                if p.rdonly {
                    return Err(EINVAL);
                }
                if rdonly || p.usable().is_err() || engine.flags().bits() & env_flags::WRITEMAP != 0
                {
                    return Err(MDB_BAD_TXN);
                }
                let root: *mut WriteRoot = match &mut p.kind {
                    Kind::Write(r) => &mut **r,
                    Kind::Child(r) => *r,
                    _ => return Err(EINVAL),
                };
                // SAFETY: the root is alive as long as its top-level transaction.
                unsafe { (*root).push() }.map_err(|e| e.code())?;
                t.kind = Kind::Child(root);
                t.id = p.id;
                t.dbi_epoch = p.dbi_epoch;
                let child = alloc(e, t);
                p.child = child;
                // SAFETY: txn checked non-NULL.
                unsafe { *txn = child };
                return Ok(());
            }
            if rdonly {
                let r = engine.read_txn().map_err(|e| e.code())?;
                t.id = r.id();
                // SAFETY: see the module comment: `engine` (the Arc) is stored
                // in the same struct and dropped only after the transaction.
                t.kind = Kind::Read(unsafe { std::mem::transmute::<RoTxn<'_>, RoTxn<'static>>(r) });
            } else {
                let w = engine.write_txn().map_err(|e| e.code())?;
                t.id = w.id();
                // SAFETY: as above.
                let w = unsafe { std::mem::transmute::<RwTxn<'_>, RwTxn<'static>>(w) };
                t.kind = Kind::Write(Box::new(WriteRoot::new(w)));
            }
            t.engine = Some(engine);
            // SAFETY: txn checked non-NULL.
            unsafe { *txn = alloc(e, t) };
            Ok(())
        })())
    })
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
    let dbis = std::mem::take(&mut t.new_dbis);
    env.end_dbis(&dbis, txn, committed, parent);
    if committed && !parent.is_null() {
        // SAFETY: a child's parent is alive.
        unsafe { (*parent).new_dbis.extend(dbis) };
    }
    for c in std::mem::take(&mut t.cursors) {
        // SAFETY: the cursors list holds live cursors of this transaction.
        unsafe { crate::cursor::detach(c) };
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

/// `mdb_txn_env`.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_env(txn: *mut MDB_txn) -> *mut MDB_env {
    // SAFETY: txn per the lmdb.h contract.
    guard_or(std::ptr::null_mut(), || match unsafe { txn_ref(txn) } {
        Ok(t) => t.env,
        Err(_) => std::ptr::null_mut(),
    })
}

/// `mdb_txn_id`.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_id(txn: *mut MDB_txn) -> usize {
    // SAFETY: txn per the lmdb.h contract.
    guard_or(0, || match unsafe { txn_ref(txn) } {
        Ok(t) => t.id as usize,
        Err(_) => 0,
    })
}

/// `mdb_txn_commit`.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_commit(txn: *mut MDB_txn) -> c_int {
    guard(move || {
        // SAFETY: txn per the lmdb.h contract.
        match unsafe { txn_ref(txn) } {
            // SAFETY: a live transaction.
            Ok(_) => unsafe { finish(txn, true) },
            Err(c) => c,
        }
    })
}

/// `mdb_txn_abort`.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_abort(txn: *mut MDB_txn) {
    guard(move || {
        // SAFETY: txn per the lmdb.h contract.
        if unsafe { txn_ref(txn) }.is_ok() {
            // SAFETY: a live transaction.
            unsafe { finish(txn, false) };
        }
        0
    });
}

/// `mdb_txn_reset`: end a read transaction's snapshot, keep the handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_reset(txn: *mut MDB_txn) {
    guard(move || {
        // SAFETY: txn per the lmdb.h contract.
        let Ok(t) = (unsafe { txn_ref(txn) }) else {
            return 0;
        };
        match std::mem::replace(&mut t.kind, Kind::Dead) {
            Kind::Read(mut r) => {
                for &c in &t.cursors {
                    // SAFETY: the cursors list holds live cursors of this
                    // transaction; their kept leaves are of this snapshot.
                    unsafe { crate::cursor::forget_leaf(c) };
                }
                let keep_slot = t
                    .engine
                    .as_ref()
                    .is_some_and(|e| e.flags().contains(mdb::EnvFlags::NO_TLS));
                if keep_slot {
                    r.reset();
                    t.kind = Kind::Reset(Some(r));
                } else {
                    drop(r);
                    t.kind = Kind::Reset(None);
                    t.engine = None;
                }
                // SAFETY: the env outlives its transactions.
                let env = unsafe { &*t.env };
                env.end_dbis(
                    &std::mem::take(&mut t.new_dbis),
                    txn,
                    false,
                    std::ptr::null(),
                );
            }
            // A write or already reset transaction: nothing to do.
            other => t.kind = other,
        }
        0
    });
}

/// `mdb_txn_renew`: a fresh snapshot for a reset read transaction.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_renew(txn: *mut MDB_txn) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            match std::mem::replace(&mut t.kind, Kind::Dead) {
                Kind::Reset(Some(mut r)) => {
                    // The reset transaction still holds its slot (NOTLS).
                    if let Err(e) = r.renew() {
                        t.kind = Kind::Reset(Some(r));
                        return Err(e.code());
                    }
                    t.id = r.id();
                    t.kind = Kind::Read(r);
                    // SAFETY: the env outlives its transactions.
                    t.dbi_epoch = unsafe { &*t.env }.dbi_epoch.load(Ordering::Acquire);
                }
                Kind::Reset(None) => {
                    t.kind = Kind::Reset(None);
                    // SAFETY: the env outlives its transactions.
                    let env = unsafe { &*t.env };
                    let engine = env.engine()?;
                    let r = engine.read_txn().map_err(|e| e.code())?;
                    t.id = r.id();
                    t.dbi_epoch = env.dbi_epoch.load(Ordering::Acquire);
                    // SAFETY: as in mdb_txn_begin: the Arc is kept beside it.
                    t.kind =
                        Kind::Read(unsafe { std::mem::transmute::<RoTxn<'_>, RoTxn<'static>>(r) });
                    t.engine = Some(engine);
                }
                other => {
                    t.kind = other;
                    return Err(EINVAL);
                }
            }
            Ok(())
        })())
    })
}
