//! `mdb_get`, `mdb_put`, `mdb_del` (c-api.md §9, §11).

use crate::guard::{code, failed_with, guard};
use crate::handles::{txn_ref, MDB_txn, View};
use crate::put::{answer_existing, check_sizes, db_flags, stash};
use crate::types::*;
use mdb::{Txn, WriteFlags};
use std::os::raw::{c_int, c_uint};

#[no_mangle]
pub unsafe extern "C" fn mdb_get(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    key: *mut MDB_val,
    data: *mut MDB_val,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            let db = t.data_db(dbi)?;
            if key.is_null() || data.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: checked non-NULL; the caller's key bytes.
            let k = unsafe { bytes(&*key) };
            let v = t.view()?;
            if k.is_empty() {
                return Err(MDB_BAD_VALSIZE);
            }
            if k.len() > MAX_KEY {
                return Err(MDB_NOTFOUND);
            }
            let r = match v {
                View::Ro(r) => r.get(db, k),
                View::Rw(w) => w.get(db, k),
            };
            match r {
                // SAFETY: data checked non-NULL.
                Ok(Some(v)) => unsafe { set_val(data, v) },
                Ok(None) => return Err(MDB_NOTFOUND),
                Err(e) => return Err(e.code()),
            }
            Ok(())
        })())
    })
}

/// `mdb_put`.
#[no_mangle]
pub unsafe extern "C" fn mdb_put(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    key: *mut MDB_val,
    data: *mut MDB_val,
    flags: c_uint,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            let db = t.data_db(dbi)?;
            if key.is_null() || data.is_null() || flags & !put_flags::PUT_VALID != 0 {
                return Err(EINVAL);
            }
            // SAFETY: checked non-NULL; the caller's values.
            let (k, d) = unsafe { (bytes(&*key), &mut *data) };
            // The arguments are copied first only if they may point into a
            // page of this transaction (see `WriteRoot::lent`).
            let (w, scratch) = t.write_lent()?;
            let wf = WriteFlags(flags & put_flags::ENGINE);
            if flags & put_flags::RESERVE != 0 {
                let dflags = db_flags(w, db)?;
                check_sizes(k, d.mv_size, dflags)?;
                let k = match scratch {
                    Some(s) => stash(s, k, &[]).0,
                    None => k,
                };
                let r = if dflags & db_flags::DUPSORT != 0 {
                    // LMDB answers an existing key first, else breaks the
                    // database (c-api.md §11): refused.
                    if !answer_existing(w, db, k, flags, d) {
                        return Err(EINVAL);
                    }
                    Err(mdb::ErrorKind::KeyExist.into())
                } else {
                    let r = w.reserve(db, k, d.mv_size, wf).map(|b| b.as_mut_ptr());
                    if failed_with(&r, mdb::ErrorKind::KeyExist) {
                        answer_existing(w, db, k, flags, d);
                    }
                    r
                };
                t.lend();
                let p = t.note(r)?;
                d.mv_data = p.cast();
                return Ok(());
            }
            // The engine checks sizes against the database's flags too;
            // these two keep a bad call from copying a huge value first.
            if k.is_empty() || k.len() > MAX_KEY || d.mv_size > u32::MAX as usize {
                return Err(MDB_BAD_VALSIZE);
            }
            // SAFETY: the caller's data bytes.
            let v = unsafe { bytes(d) };
            let (k, v) = match scratch {
                Some(s) => stash(s, k, v),
                None => (k, v),
            };
            let r = w.put(db, k, v, wf);
            if failed_with(&r, mdb::ErrorKind::KeyExist) && answer_existing(w, db, k, flags, d) {
                t.lend();
            }
            t.note(r)
        })())
    })
}

/// `mdb_del`.
#[no_mangle]
pub unsafe extern "C" fn mdb_del(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    key: *mut MDB_val,
    data: *mut MDB_val,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            let db = t.data_db(dbi)?;
            if key.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: checked non-NULL; the caller's key.
            let k = unsafe { bytes(&*key) };
            let (w, scratch) = t.write_lent()?;
            if k.is_empty() || k.len() > MAX_KEY {
                return Err(MDB_BAD_VALSIZE);
            }
            let dup = db_flags(w, db)? & db_flags::DUPSORT != 0;
            let r = if dup && !data.is_null() {
                // SAFETY: checked non-NULL; the caller's data.
                let v = unsafe { bytes(&*data) };
                let (k, v) = match scratch {
                    Some(s) => stash(s, k, v),
                    None => (k, v),
                };
                w.del_dup(db, k, v)
            } else {
                let k = match scratch {
                    Some(s) => stash(s, k, &[]).0,
                    None => k,
                };
                w.del(db, k)
            };
            if failed_with(&r, mdb::ErrorKind::Incompatible) {
                // A named database's record, which only `mdb_drop` may
                // delete: the engine refuses, and LMDB fails the txn too.
                t.broken = true;
            }
            match t.note(r)? {
                true => Ok(()),
                false => Err(MDB_NOTFOUND),
            }
        })())
    })
}
