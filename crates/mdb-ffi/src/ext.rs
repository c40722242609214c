//! Extensions beyond LMDB's API, declared in `include/lmdb_ext.h` (so that
//! `lmdb.h` stays LMDB's): write-ahead-log mode.

use crate::guard::{code, guard};
use crate::handles::{configure, env_ref, MDB_env};
use std::os::raw::{c_int, c_uint};

/// `mdb_env_set_wal`: choose write-ahead-log mode (`on` non-zero) before
/// `mdb_env_open`; `EINVAL` after it.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_wal(env: *mut MDB_env, on: c_int) -> c_int {
    // SAFETY: env per the lmdb.h contract.
    unsafe { configure(env, |c| c.wal = on != 0) }
}

/// `mdb_env_set_wal_sync`: write-ahead-log mode with relaxed durability
/// before `mdb_env_open`: a commit returns before the log sync, which
/// happens within `ms` milliseconds (or at `mdb_env_sync`); 0 makes every
/// commit durable again. `EINVAL` after `mdb_env_open`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_wal_sync(env: *mut MDB_env, ms: c_uint) -> c_int {
    // SAFETY: env per the lmdb.h contract.
    unsafe {
        configure(env, |c| {
            c.wal = true;
            c.wal_sync_ms = ms;
        })
    }
}

/// `mdb_env_set_autogrow`: before `mdb_env_open`, let the map grow by
/// itself up to `ceiling` bytes (at least the map size set), or keep
/// LMDB's fixed map (`ceiling` 0, the default unless `MDB_AUTOGROW` is set
/// in the environment, which takes precedence). `EINVAL` after open.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_autogrow(env: *mut MDB_env, ceiling: usize) -> c_int {
    // SAFETY: env per the lmdb.h contract.
    unsafe { configure(env, |c| c.autogrow = ceiling) }
}

/// `mdb_env_checkpoint`: sync the data file and let the log segments it
/// covers be recycled; stores the transaction id it covers in `*txnid`
/// when non-NULL. `MDB_INCOMPATIBLE` outside WAL mode, `MDB_BAD_TXN` from
/// the thread holding the write transaction.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_checkpoint(env: *mut MDB_env, txnid: *mut u64) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? }.engine()?;
            let t = e.checkpoint().map_err(|x| x.code())?;
            if !txnid.is_null() {
                // SAFETY: a non-NULL out-pointer from the caller.
                unsafe { *txnid = t };
            }
            Ok(())
        })())
    })
}
