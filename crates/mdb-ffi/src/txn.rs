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

use crate::guard::{code, guard, guard_or};
use crate::handles::{
    alloc, env_ref, finish, forget_leaf, txn_ref, Kind, MDB_env, MDB_txn, WriteRoot,
};
use crate::types::*;
use mdb::{RoTxn, RwTxn, Txn};
use std::os::raw::{c_int, c_uint};

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
                dbi_limit: e.dbi_limit(),
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
                t.dbi_limit = p.dbi_limit;
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
                    unsafe { forget_leaf(c) };
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
                    t.dbi_limit = unsafe { &*t.env }.dbi_limit();
                }
                Kind::Reset(None) => {
                    t.kind = Kind::Reset(None);
                    // SAFETY: the env outlives its transactions.
                    let env = unsafe { &*t.env };
                    let engine = env.engine()?;
                    let r = engine.read_txn().map_err(|e| e.code())?;
                    t.id = r.id();
                    t.dbi_limit = env.dbi_limit();
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
