//! Settings before `mdb_env_open`, and closing an environment handle:
//! what the caller left open is aborted, then every pooled struct freed.

use super::structs::{env_ref, Config, MDB_env};
use super::txn::finish;
use crate::guard::{code, guard};
use crate::types::EINVAL;
use std::os::raw::c_int;
use std::sync::atomic::Ordering;

/// Change a setting that only `mdb_env_open` reads: `EINVAL` once it ran.
///
/// # Safety
/// `env` is NULL or a pointer returned by `mdb_env_create` and not yet closed.
pub(crate) unsafe fn configure(env: *mut MDB_env, set: impl FnOnce(&mut Config)) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: per the caller's contract.
            let e = unsafe { env_ref(env)? };
            let mut st = e.st.write().unwrap_or_else(|x| x.into_inner());
            if st.tried {
                return Err(EINVAL);
            }
            set(&mut st.cfg);
            Ok(())
        })())
    })
}

/// Close `env`: abort its top-level transactions (their children first),
/// drop the engine, and free the handle and every pooled struct, so that
/// a pointer to any of them is dead from now on.
///
/// # Safety
/// `env` is a live environment handle (`env_ref` accepted it) that no other
/// thread uses.
pub(crate) unsafe fn close(env: *mut MDB_env) {
    // SAFETY: per the caller's contract.
    let e = unsafe { &*env };
    let txns: Vec<_> = e.txns.lock().unwrap_or_else(|x| x.into_inner()).all.clone();
    for t in txns {
        // SAFETY: every slab pointer is a valid MDB_txn until the slab is freed below.
        unsafe {
            if (*t).live && (*t).parent.is_null() {
                finish(t, false);
            }
        }
    }
    {
        let mut st = e.st.write().unwrap_or_else(|x| x.into_inner());
        st.engine = None;
    }
    e.magic.store(0, Ordering::Relaxed);
    // SAFETY: all slab pointers came from Box::into_raw and are freed once, here.
    unsafe {
        for t in std::mem::take(&mut e.txns.lock().unwrap_or_else(|x| x.into_inner()).all) {
            drop(Box::from_raw(t));
        }
        for c in std::mem::take(&mut e.cursors.lock().unwrap_or_else(|x| x.into_inner()).all) {
            drop(Box::from_raw(c));
        }
        drop(Box::from_raw(env));
    }
}
