//! A minimal wrapper around the LMDB C API, just enough for the benchmark:
//! one environment, its main database and named databases, read/write
//! transactions, point gets, puts, a forward cursor and the few duplicate
//! cursor operations of the index workloads. Not a general-purpose binding.

use crate::lmdb_sys as sys;
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

/// An LMDB error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error(pub i32);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: mdb_strerror returns a pointer to a static (or
        // strerror-owned) NUL-terminated string for any code.
        let msg = unsafe { CStr::from_ptr(sys::mdb_strerror(self.0)) };
        write!(f, "LMDB error {}: {}", self.0, msg.to_string_lossy())
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn check(rc: i32) -> Result<()> {
    if rc == sys::MDB_SUCCESS {
        Ok(())
    } else {
        Err(Error(rc))
    }
}

fn val(bytes: &[u8]) -> sys::MDB_val {
    sys::MDB_val {
        mv_size: bytes.len(),
        mv_data: bytes.as_ptr() as *mut _,
    }
}

const EMPTY_VAL: sys::MDB_val = sys::MDB_val {
    mv_size: 0,
    mv_data: ptr::null_mut(),
};

/// # Safety
/// `v` must come from LMDB inside a transaction that outlives `'a`.
unsafe fn slice<'a>(v: sys::MDB_val) -> &'a [u8] {
    if v.mv_size == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(v.mv_data as *const u8, v.mv_size)
    }
}

/// The version string of the linked library, e.g. "LMDB 0.9.24: (July 24, 2019)".
pub fn version() -> String {
    // SAFETY: null out-pointers are allowed; the result is a static string.
    unsafe {
        let s = sys::mdb_version(ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        CStr::from_ptr(s).to_string_lossy().into_owned()
    }
}

/// A database handle (`MDB_dbi`).
pub type Dbi = sys::MDB_dbi;

/// `mdb_dbi_open` flags: sorted, fixed-size duplicates.
pub const DUPSORT: u32 = sys::MDB_DUPSORT;
pub const DUPFIXED: u32 = sys::MDB_DUPFIXED;
pub const INTEGERDUP: u32 = sys::MDB_INTEGERDUP;

/// An open environment and the handle of its main database.
pub struct Env {
    env: *mut sys::MDB_env,
    dbi: sys::MDB_dbi,
}

// SAFETY: an LMDB environment handle may be used from several threads at
// once (lmdb.h: each transaction and its cursors stay in one thread, which
// `Txn` borrowing from `Env` per thread respects); the dbi is a plain
// integer, opened before the Env is shared.
unsafe impl Sync for Env {}
// SAFETY: as above; the handle is not tied to the thread that opened it.
unsafe impl Send for Env {}

/// `--nosync`: both engines commit without syncing (MDB_NOSYNC), for
/// CPU-bound runs on disk (`--scale` past what /dev/shm holds).
pub static NOSYNC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Env {
    /// Open (creating) the environment in directory `dir` with default
    /// flags and room for `max_dbs` named databases.
    pub fn open(dir: &Path, map_size: usize, max_dbs: u32) -> Result<Env> {
        let path = CString::new(dir.as_os_str().as_bytes()).map_err(|_| Error(libc_einval()))?;
        let mut env = ptr::null_mut();
        // SAFETY: plain FFI calls following the documented protocol; the
        // env is closed on every error path after creation.
        unsafe {
            check(sys::mdb_env_create(&mut env))?;
            let mut e = Env { env, dbi: 0 };
            check(sys::mdb_env_set_mapsize(env, map_size))?;
            check(sys::mdb_env_set_maxdbs(env, max_dbs))?;
            let flags = if NOSYNC.load(std::sync::atomic::Ordering::Relaxed) {
                0x10000 // MDB_NOSYNC
            } else {
                0
            };
            check(sys::mdb_env_open(env, path.as_ptr(), flags, 0o644))?;
            let mut txn = ptr::null_mut();
            check(sys::mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn))?;
            let mut dbi = 0;
            let rc = sys::mdb_dbi_open(txn, ptr::null(), sys::MDB_CREATE, &mut dbi);
            if rc != 0 {
                sys::mdb_txn_abort(txn);
                return Err(Error(rc));
            }
            check(sys::mdb_txn_commit(txn))?;
            e.dbi = dbi;
            Ok(e)
        }
    }

    /// Create (or open) the named database `name` with `flags` (plus
    /// `MDB_CREATE`) in a write transaction of its own, and commit it: the
    /// handle stays valid for the environment's life.
    pub fn create_db(&self, name: &str, flags: u32) -> Result<Dbi> {
        let name = CString::new(name).map_err(|_| Error(libc_einval()))?;
        let txn = self.write_txn()?;
        let mut dbi = 0;
        // SAFETY: txn is a live write txn; name is NUL-terminated.
        check(unsafe {
            sys::mdb_dbi_open(txn.txn, name.as_ptr(), flags | sys::MDB_CREATE, &mut dbi)
        })?;
        txn.commit()?;
        Ok(dbi)
    }

    fn begin(&self, flags: u32) -> Result<Txn<'_>> {
        let mut txn = ptr::null_mut();
        // SAFETY: env is open; the txn is finished by commit or Drop.
        check(unsafe { sys::mdb_txn_begin(self.env, ptr::null_mut(), flags, &mut txn) })?;
        Ok(Txn {
            txn,
            dbi: self.dbi,
            _env: PhantomData,
        })
    }

    /// Write a compacted copy of the environment into directory `dir`
    /// (`mdb_env_copy2` with `MDB_CP_COMPACT`, as `mdb_copy -c`).
    pub fn copy_compact(&self, dir: &Path) -> Result<()> {
        let path = CString::new(dir.as_os_str().as_bytes()).map_err(|_| Error(libc_einval()))?;
        // SAFETY: env is open; path is NUL-terminated.
        check(unsafe { sys::mdb_env_copy2(self.env, path.as_ptr(), sys::MDB_CP_COMPACT) })
    }

    /// Begin the write transaction.
    pub fn write_txn(&self) -> Result<Txn<'_>> {
        self.begin(0)
    }

    /// Begin a read-only transaction.
    pub fn read_txn(&self) -> Result<Txn<'_>> {
        self.begin(sys::MDB_RDONLY)
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // SAFETY: every Txn borrows the Env, so none is alive here.
        unsafe { sys::mdb_env_close(self.env) }
    }
}

fn libc_einval() -> i32 {
    22
}

/// A transaction (read-only or read-write); aborted on drop unless committed.
pub struct Txn<'e> {
    txn: *mut sys::MDB_txn,
    dbi: sys::MDB_dbi,
    _env: PhantomData<&'e Env>,
}

impl<'e> Txn<'e> {
    /// Store `key` -> `value` in the main database.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_in(self.dbi, key, value)
    }

    /// Store `key` -> `value` in database `dbi` (for DUPSORT: add the pair).
    pub fn put_in(&mut self, dbi: Dbi, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_flags(dbi, key, value, 0)
    }

    /// Append `key` -> `value` to the main database (`MDB_APPEND`).
    pub fn append(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_flags(self.dbi, key, value, sys::MDB_APPEND)
    }

    fn put_flags(&mut self, dbi: Dbi, key: &[u8], value: &[u8], flags: u32) -> Result<()> {
        let mut k = val(key);
        let mut v = val(value);
        // SAFETY: LMDB copies both buffers before returning.
        check(unsafe { sys::mdb_put(self.txn, dbi, &mut k, &mut v, flags) })
    }

    /// Delete `key` from the main database; whether it was there.
    #[cfg(feature = "matrix")]
    pub fn del(&mut self, key: &[u8]) -> Result<bool> {
        let mut k = val(key);
        // SAFETY: LMDB reads the key during the call only.
        match unsafe { sys::mdb_del(self.txn, self.dbi, &mut k, ptr::null_mut()) } {
            0 => Ok(true),
            sys::MDB_NOTFOUND => Ok(false),
            rc => Err(Error(rc)),
        }
    }

    /// Look `key` up in the main database.
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        let mut k = val(key);
        let mut v = EMPTY_VAL;
        // SAFETY: the returned value points into the map (or a dirty page)
        // and stays valid until the transaction ends, which `&self` bounds.
        match unsafe { sys::mdb_get(self.txn, self.dbi, &mut k, &mut v) } {
            0 => Ok(Some(unsafe { slice(v) })),
            sys::MDB_NOTFOUND => Ok(None),
            rc => Err(Error(rc)),
        }
    }

    /// A cursor over the main database.
    pub fn cursor(&self) -> Result<Cursor<'_>> {
        self.cursor_in(self.dbi)
    }

    /// A cursor over database `dbi`.
    pub fn cursor_in(&self, dbi: Dbi) -> Result<Cursor<'_>> {
        let mut c = ptr::null_mut();
        // SAFETY: the cursor is closed in Drop, before the txn ends.
        check(unsafe { sys::mdb_cursor_open(self.txn, dbi, &mut c) })?;
        Ok(Cursor {
            cursor: c,
            started: false,
            _txn: PhantomData,
        })
    }

    /// Commit.
    pub fn commit(mut self) -> Result<()> {
        let txn = std::mem::replace(&mut self.txn, ptr::null_mut());
        // SAFETY: commit frees the txn whether or not it succeeds.
        check(unsafe { sys::mdb_txn_commit(txn) })
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if !self.txn.is_null() {
            // SAFETY: not committed yet; cursors borrow the txn so are closed.
            unsafe { sys::mdb_txn_abort(self.txn) }
        }
    }
}

/// A forward cursor.
pub struct Cursor<'t> {
    cursor: *mut sys::MDB_cursor,
    started: bool,
    _txn: PhantomData<&'t Txn<'t>>,
}

impl<'t> Cursor<'t> {
    /// The next item (the first one on the first call); `None` at the end.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<(&'t [u8], &'t [u8])>> {
        let op = if self.started {
            sys::MDB_NEXT
        } else {
            sys::MDB_FIRST
        };
        // SAFETY: both outputs are set by MDB_FIRST/MDB_NEXT and point into
        // the map, valid for the txn lifetime 't.
        Ok(self
            .op(EMPTY_VAL, EMPTY_VAL, op)?
            .map(|(k, v)| unsafe { (slice(k), slice(v)) }))
    }

    /// Delete the item at the cursor (`mdb_cursor_del`); the next `next`
    /// returns the item that followed it.
    pub fn del(&mut self) -> Result<()> {
        // SAFETY: the cursor is open and positioned by the caller.
        check(unsafe { sys::mdb_cursor_del(self.cursor, 0) })
    }

    /// Position at exactly `key` and value `value` (`MDB_GET_BOTH`);
    /// whether the pair exists. (LMDB leaves both inputs as they were, so
    /// there is nothing from the database to return.)
    pub fn get_both(&mut self, key: &[u8], value: &[u8]) -> Result<bool> {
        Ok(self.op(val(key), val(value), sys::MDB_GET_BOTH)?.is_some())
    }

    /// Position at exactly `key`; its first value (`MDB_SET_KEY`).
    pub fn set_key(&mut self, key: &[u8]) -> Result<Option<&'t [u8]>> {
        // SAFETY: MDB_SET_KEY sets the data output from the map.
        Ok(self
            .op(val(key), EMPTY_VAL, sys::MDB_SET_KEY)?
            .map(|(_, v)| unsafe { slice(v) }))
    }

    /// Position at the first key >= `key` (`MDB_SET_RANGE`); that item.
    /// Later `next` calls continue from it.
    #[cfg(feature = "matrix")]
    pub fn set_range(&mut self, key: &[u8]) -> Result<Option<(&'t [u8], &'t [u8])>> {
        // SAFETY: MDB_SET_RANGE sets both outputs from the map on success.
        Ok(self
            .op(val(key), EMPTY_VAL, sys::MDB_SET_RANGE)?
            .map(|(k, v)| unsafe { (slice(k), slice(v)) }))
    }

    /// DUPFIXED: the packed values of the current page (`MDB_GET_MULTIPLE`).
    pub fn get_multiple(&mut self) -> Result<Option<&'t [u8]>> {
        // SAFETY: the data output is set from the map on success.
        Ok(self
            .op(EMPTY_VAL, EMPTY_VAL, sys::MDB_GET_MULTIPLE)?
            .map(|(_, v)| unsafe { slice(v) }))
    }

    /// DUPFIXED: the next page of values of the current key (`MDB_NEXT_MULTIPLE`).
    pub fn next_multiple(&mut self) -> Result<Option<&'t [u8]>> {
        // SAFETY: the data output is set from the map on success.
        Ok(self
            .op(EMPTY_VAL, EMPTY_VAL, sys::MDB_NEXT_MULTIPLE)?
            .map(|(_, v)| unsafe { slice(v) }))
    }

    /// One `mdb_cursor_get` call: `k` and `v` are inputs for the operations
    /// that read them (LMDB only reads them during the call) and come back
    /// as that operation leaves them. Outputs LMDB sets point into the map
    /// (or a dirty page) and are valid for the transaction's lifetime `'t`;
    /// outputs it does not set still point at the caller's inputs, so each
    /// caller turns into slices only the outputs its operation sets.
    fn op(
        &mut self,
        mut k: sys::MDB_val,
        mut v: sys::MDB_val,
        op: i32,
    ) -> Result<Option<(sys::MDB_val, sys::MDB_val)>> {
        self.started = true;
        // SAFETY: the cursor is open; k and v are valid MDB_vals.
        match unsafe { sys::mdb_cursor_get(self.cursor, &mut k, &mut v, op) } {
            0 => Ok(Some((k, v))),
            sys::MDB_NOTFOUND => Ok(None),
            rc => Err(Error(rc)),
        }
    }
}

impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        // SAFETY: opened in Txn::cursor and the txn is still alive.
        unsafe { sys::mdb_cursor_close(self.cursor) }
    }
}
