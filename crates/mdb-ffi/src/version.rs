//! `mdb_version` and `mdb_strerror`.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::sync::{Mutex, OnceLock};

/// The version this library reports by default: the header's (c-api.md §2).
const VERSION: (c_int, c_int, c_int) = (0, 9, 24);
const VERSION_TEXT: &std::ffi::CStr = c"LMDB 0.9.24: (July 24, 2019)";

/// The version reported, and its text: the header's, or another 0.9 patch
/// level named by `MDB_REPORT_VERSION=0.9.N`. Programs that carry their own
/// LMDB and refuse any other patch level (OpenLDAP's back-mdb wants exactly
/// the one it was built with) then run on this library; the file format is
/// the same across 0.9, so only the number changes. Read once per process.
fn reported() -> &'static ((c_int, c_int, c_int), &'static std::ffi::CStr) {
    static REPORTED: OnceLock<((c_int, c_int, c_int), &'static std::ffi::CStr)> = OnceLock::new();
    REPORTED.get_or_init(|| {
        std::env::var("MDB_REPORT_VERSION")
            .ok()
            .and_then(|v| parse_0_9(&v))
            .map(|patch| {
                let text = format!("LMDB 0.9.{patch}: (mdb, MDB_REPORT_VERSION)");
                let text: &'static std::ffi::CStr =
                    Box::leak(CString::new(text).unwrap_or_default().into_boxed_c_str());
                ((0, 9, patch), text)
            })
            .unwrap_or((VERSION, VERSION_TEXT))
    })
}

/// The patch level of `0.9.N` (N a decimal below 1000); None for anything
/// else, which leaves the default version (another major or minor would
/// claim a file format this library does not write).
fn parse_0_9(v: &str) -> Option<c_int> {
    let n = v.trim().strip_prefix("0.9.")?;
    if n.is_empty() || n.len() > 3 || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// `mdb_version`: store the three numbers and return the version string.
#[no_mangle]
pub unsafe extern "C" fn mdb_version(
    major: *mut c_int,
    minor: *mut c_int,
    patch: *mut c_int,
) -> *mut c_char {
    let ((ma, mi, pa), text) = *reported();
    for (p, v) in [(major, ma), (minor, mi), (patch, pa)] {
        if !p.is_null() {
            // SAFETY: a non-NULL pointer given by the caller to an int.
            unsafe { *p = v };
        }
    }
    text.as_ptr() as *mut c_char
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

#[cfg(test)]
mod tests {
    use super::parse_0_9;

    #[test]
    fn only_0_9_patch_levels_are_reported() {
        assert_eq!(parse_0_9("0.9.29"), Some(29));
        assert_eq!(parse_0_9(" 0.9.33\n"), Some(33));
        for bad in [
            "", "0.9.", "0.9.x", "1.0.0", "0.10.1", "0.9.1234", "0.9.-1", "0.9.29a",
        ] {
            assert_eq!(parse_0_9(bad), None, "{bad:?}");
        }
    }
}
