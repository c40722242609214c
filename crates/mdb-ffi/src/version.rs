//! `mdb_version` and `mdb_strerror`.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::sync::Mutex;

/// The version this library reports: the header's (c-api.md §2).
const VERSION: &[u8] = b"LMDB 0.9.24: (July 24, 2019)\0";

/// `mdb_version`: store the three numbers and return the version string.
#[no_mangle]
pub unsafe extern "C" fn mdb_version(
    major: *mut c_int,
    minor: *mut c_int,
    patch: *mut c_int,
) -> *mut c_char {
    for (p, v) in [(major, 0), (minor, 9), (patch, 24)] {
        if !p.is_null() {
            // SAFETY: a non-NULL pointer given by the caller to an int.
            unsafe { *p = v };
        }
    }
    VERSION.as_ptr() as *mut c_char
}

/// Texts handed out by `mdb_strerror`, kept for the life of the process
/// (callers never free them). One per distinct code, so it stays small.
static TEXTS: Mutex<Vec<(c_int, &'static std::ffi::CStr)>> = Mutex::new(Vec::new());

/// `mdb_strerror`: LMDB's text for its codes, the system's for errno values.
#[no_mangle]
pub extern "C" fn mdb_strerror(err: c_int) -> *mut c_char {
    crate::guard::guard_or(c"Invalid error code".as_ptr() as *mut c_char, || {
        if err < 0 && !(mdb::error::code::KEYEXIST..=mdb::error::code::BAD_DBI).contains(&err) {
            return c"Invalid error code".as_ptr() as *mut c_char;
        }
        let mut t = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, s)) = t.iter().find(|(c, _)| *c == err) {
            return s.as_ptr() as *mut c_char;
        }
        if t.len() >= 1024 {
            return c"Unknown error".as_ptr() as *mut c_char;
        }
        let text = mdb::error::strerror(err).replace('\0', " ");
        let s: &'static std::ffi::CStr =
            Box::leak(CString::new(text).unwrap_or_default().into_boxed_c_str());
        t.push((err, s));
        s.as_ptr() as *mut c_char
    })
}
