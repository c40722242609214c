//! The boundary: no panic unwinds into C, and engine errors become LMDB codes.

use crate::types::MDB_PANIC;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Run `f`, turning a panic into `MDB_PANIC`.
pub fn guard(f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(MDB_PANIC)
}

/// [`guard`], inlined into its caller: for the hottest entry points, whose
/// fast path then costs no call.
#[inline(always)]
pub fn guard_inline(f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(MDB_PANIC)
}

/// Run `f`, turning a panic into `dflt`.
pub fn guard_or<T>(dflt: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(dflt)
}

/// The LMDB code of an engine result.
pub fn rc(r: mdb::Result<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.code(),
    }
}

/// Whether an error of a write operation leaves the transaction only fit
/// to abort (c-api.md §7.1): everything but lookup misses and argument checks.
/// EACCES too: a write in a read-only transaction, refused before it began.
pub fn is_fatal(e: &mdb::Error) -> bool {
    let k = e.kind();
    !(k.leaves_txn_usable() || k == mdb::ErrorKind::Os(libc::EACCES))
}

/// Whether `r` failed with `kind`.
pub fn failed_with<T>(r: &mdb::Result<T>, kind: mdb::ErrorKind) -> bool {
    r.as_ref().is_err_and(|e| *e == kind)
}

/// `Result<T, c_int>` folded into a return code.
pub fn code(r: Result<(), c_int>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(c) => c,
    }
}
