//! The C types and constants of lmdb.h (c-api.md §1–§3).

use std::os::raw::{c_char, c_int, c_uint, c_void};

/// `MDB_dbi`: a database handle.
pub type MDB_dbi = c_uint;

/// `MDB_val`: a length and a pointer (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MDB_val {
    /// Length in bytes.
    pub mv_size: usize,
    /// The bytes.
    pub mv_data: *mut c_void,
}

/// `MDB_stat` (40 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MDB_stat {
    /// Page size.
    pub ms_psize: c_uint,
    /// Tree height.
    pub ms_depth: c_uint,
    /// Branch pages.
    pub ms_branch_pages: usize,
    /// Leaf pages.
    pub ms_leaf_pages: usize,
    /// Overflow pages.
    pub ms_overflow_pages: usize,
    /// Items.
    pub ms_entries: usize,
}

/// `MDB_envinfo` (40 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MDB_envinfo {
    /// Fixed map address (NULL unless FIXEDMAP).
    pub me_mapaddr: *mut c_void,
    /// This handle's map size.
    pub me_mapsize: usize,
    /// Highest page in use.
    pub me_last_pgno: usize,
    /// Newest committed transaction.
    pub me_last_txnid: usize,
    /// Reader slots available.
    pub me_maxreaders: c_uint,
    /// High-water mark of reader slots used.
    pub me_numreaders: c_uint,
}

/// `MDB_cmp_func`.
pub type MDB_cmp_func = unsafe extern "C" fn(a: *const MDB_val, b: *const MDB_val) -> c_int;
/// `MDB_rel_func` (stored, never called).
pub type MDB_rel_func =
    unsafe extern "C" fn(item: *mut MDB_val, old: *mut c_void, new: *mut c_void, ctx: *mut c_void);
/// `MDB_msg_func`.
pub type MDB_msg_func = unsafe extern "C" fn(msg: *const c_char, ctx: *mut c_void) -> c_int;

/// Return codes used by the layer itself.
pub const MDB_SUCCESS: c_int = 0;
/// `MDB_KEYEXIST`.
pub const MDB_KEYEXIST: c_int = mdb::error::code::KEYEXIST;
/// `MDB_NOTFOUND`.
pub const MDB_NOTFOUND: c_int = mdb::error::code::NOTFOUND;
/// `MDB_PANIC`.
pub const MDB_PANIC: c_int = mdb::error::code::PANIC;
/// `MDB_DBS_FULL`.
pub const MDB_DBS_FULL: c_int = mdb::error::code::DBS_FULL;
/// `MDB_INCOMPATIBLE`.
pub const MDB_INCOMPATIBLE: c_int = mdb::error::code::INCOMPATIBLE;
/// `MDB_BAD_TXN`.
pub const MDB_BAD_TXN: c_int = mdb::error::code::BAD_TXN;
/// `MDB_BAD_VALSIZE`.
pub const MDB_BAD_VALSIZE: c_int = mdb::error::code::BAD_VALSIZE;
/// `EINVAL`.
pub const EINVAL: c_int = libc::EINVAL;
/// `EACCES`.
pub const EACCES: c_int = libc::EACCES;

/// Environment flags (§3.1).
pub mod env_flags {
    /// `MDB_NOSUBDIR`.
    pub const NOSUBDIR: u32 = 0x4000;
    /// `MDB_RDONLY`.
    pub const RDONLY: u32 = 0x20000;
    /// `MDB_WRITEMAP`.
    pub const WRITEMAP: u32 = 0x80000;
    /// `MDB_NOTLS`.
    pub const NOTLS: u32 = 0x200000;
    /// `MDB_NOLOCK`.
    pub const NOLOCK: u32 = 0x400000;
    /// The 11 flags `mdb_env_open` accepts.
    pub const VALID: u32 = 0x01
        | 0x4000
        | 0x10000
        | 0x20000
        | 0x40000
        | 0x80000
        | 0x100000
        | 0x200000
        | 0x400000
        | 0x800000
        | 0x1000000;
    /// The flags `mdb_env_set_flags` may change.
    pub const CHANGEABLE: u32 = 0x10000 | 0x40000 | 0x100000 | 0x1000000;
}

/// Database flags (§3.2).
pub mod db_flags {
    /// `MDB_DUPSORT`.
    pub const DUPSORT: u32 = 0x04;
    /// `MDB_INTEGERKEY`.
    pub const INTEGERKEY: u32 = 0x08;
    /// `MDB_DUPFIXED`.
    pub const DUPFIXED: u32 = 0x10;
    /// The persistent flags.
    pub const PERSISTENT: u32 = 0x7e;
    /// `MDB_CREATE`.
    pub const CREATE: u32 = 0x40000;
}

/// Write flags (§3.3).
pub mod put_flags {
    /// `MDB_NOOVERWRITE`.
    pub const NOOVERWRITE: u32 = 0x10;
    /// `MDB_NODUPDATA`.
    pub const NODUPDATA: u32 = 0x20;
    /// `MDB_CURRENT`.
    pub const CURRENT: u32 = 0x40;
    /// `MDB_RESERVE`.
    pub const RESERVE: u32 = 0x10000;
    /// `MDB_APPEND`.
    pub const APPEND: u32 = 0x20000;
    /// `MDB_APPENDDUP`.
    pub const APPENDDUP: u32 = 0x40000;
    /// `MDB_MULTIPLE`.
    pub const MULTIPLE: u32 = 0x80000;
    /// What `mdb_put` accepts.
    pub const PUT_VALID: u32 = NOOVERWRITE | NODUPDATA | RESERVE | APPEND | APPENDDUP;
    /// What is passed on to the engine (the internal 0x02/0x8000 bits never are).
    pub const ENGINE: u32 = NOOVERWRITE | NODUPDATA | CURRENT | RESERVE | APPEND | APPENDDUP;
}

/// Longest key, duplicate value and database name.
pub const MAX_KEY: usize = 511;

/// The bytes an `MDB_val` describes (empty for a NULL pointer).
///
/// # Safety
/// `v` must describe `mv_size` readable bytes that stay alive and unchanged
/// for `'a`.
pub(crate) unsafe fn bytes<'a>(v: &MDB_val) -> &'a [u8] {
    if v.mv_data.is_null() || v.mv_size == 0 {
        &[]
    } else {
        // SAFETY: the caller's MDB_val describes mv_size readable bytes (lmdb.h contract).
        unsafe { std::slice::from_raw_parts(v.mv_data as *const u8, v.mv_size) }
    }
}

/// Point `out` (if not NULL) at `b`.
///
/// # Safety
/// `out` is NULL or a valid `MDB_val` to write.
pub(crate) unsafe fn set_val(out: *mut MDB_val, b: &[u8]) {
    if !out.is_null() {
        // SAFETY: out is a valid MDB_val pointer by the caller's contract.
        unsafe {
            (*out).mv_size = b.len();
            (*out).mv_data = b.as_ptr() as *mut c_void;
        }
    }
}

/// Fill `*out` with the engine's figures `s`.
pub(crate) fn fill_stat(out: *mut MDB_stat, s: &mdb::Stat) {
    // SAFETY: callers pass a checked non-NULL MDB_stat pointer.
    unsafe {
        *out = MDB_stat {
            ms_psize: s.page_size,
            ms_depth: s.depth,
            ms_branch_pages: s.branch_pages as usize,
            ms_leaf_pages: s.leaf_pages as usize,
            ms_overflow_pages: s.overflow_pages as usize,
            ms_entries: s.entries as usize,
        }
    };
}
