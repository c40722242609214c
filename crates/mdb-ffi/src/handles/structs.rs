//! The C handle structs (`MDB_env`, `MDB_txn`, `MDB_cursor`) and their
//! lookups: a pointer C passes back is checked (NULL, a closed environment,
//! a finished transaction or cursor) before it is used. The three refer to
//! one another, so they are declared together here; what each one does is
//! in the files beside this one.

use super::dbi_table::{DbiTable, FAST_DBIS};
use super::slab::Slab;
use super::txn_state::Kind;
use crate::types::*;
use mdb::CursorState;
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// `MDB_env.magic` of a live environment handle.
pub(crate) const ENV_MAGIC: u32 = 0xBEEF_E4F1;

/// `MDB_assert_func`.
pub type MDB_assert_func = unsafe extern "C" fn(env: *mut MDB_env, msg: *const c_char);

/// Settings recorded before `mdb_env_open`.
#[derive(Clone, Copy)]
pub(crate) struct Config {
    pub(crate) map_size: usize,
    pub(crate) max_readers: u32,
    pub(crate) max_dbs: u32,
    pub(crate) flags: u32,
    pub(crate) mode: u32,
    /// Write-ahead-log mode (`mdb_env_set_wal`, or `MDB_WAL=1` at open).
    pub(crate) wal: bool,
    /// Relaxed durability's period in milliseconds (`mdb_env_set_wal_sync`;
    /// 0: every commit durable).
    pub(crate) wal_sync_ms: u32,
    /// Auto-grow's ceiling in bytes (`mdb_env_set_autogrow`, or
    /// `MDB_AUTOGROW` at open); 0: LMDB's fixed map.
    pub(crate) autogrow: usize,
}

/// What `mdb_env_open` establishes.
pub(crate) struct EnvState {
    pub(crate) cfg: Config,
    pub(crate) engine: Option<Arc<mdb::Env>>,
    pub(crate) path: Option<CString>,
    /// `mdb_env_open` was called (successfully or not): no second open.
    pub(crate) tried: bool,
}

/// `MDB_env`.
pub struct MDB_env {
    pub(crate) magic: AtomicU32,
    pub(crate) st: RwLock<EnvState>,
    pub(crate) dbis: RwLock<DbiTable>,
    /// The first handles, readable without the table's lock on every call:
    /// 0 closed, else `Database::dbi() + 1` in the low half and the handle's
    /// `born` epoch in the high half (see `DbiEntry`). Written under the
    /// table's write lock ([`MDB_env::sync_dbi_fast`]).
    pub(crate) dbi_fast: [AtomicU64; FAST_DBIS],
    /// Bumped by each commit that shares the handles it opened: a
    /// transaction may use the handles shared up to its begin.
    pub(crate) dbi_epoch: AtomicU32,
    pub(crate) txns: Mutex<Slab<MDB_txn>>,
    pub(crate) cursors: Mutex<Slab<MDB_cursor>>,
    pub(crate) userctx: AtomicPtr<c_void>,
    pub(crate) assert_fn: Mutex<Option<MDB_assert_func>>,
}

impl MDB_env {
    /// A new environment handle: LMDB's defaults, not opened.
    pub(crate) fn new() -> MDB_env {
        MDB_env {
            magic: AtomicU32::new(ENV_MAGIC),
            st: RwLock::new(EnvState {
                cfg: Config {
                    map_size: 0,
                    autogrow: 0,
                    max_readers: 126,
                    max_dbs: 0,
                    flags: 0,
                    mode: 0o644,
                    wal: false,
                    wal_sync_ms: 0,
                },
                engine: None,
                path: None,
                tried: false,
            }),
            dbis: RwLock::new(DbiTable::new()),
            dbi_fast: std::array::from_fn(|i| AtomicU64::new(if i < 2 { i as u64 + 1 } else { 0 })),
            dbi_epoch: AtomicU32::new(0),
            txns: Mutex::new(Slab::new()),
            cursors: Mutex::new(Slab::new()),
            userctx: AtomicPtr::new(std::ptr::null_mut()),
            assert_fn: Mutex::new(None),
        }
    }

    /// The opened engine (`EINVAL` before a successful open).
    pub(crate) fn engine(&self) -> Result<Arc<mdb::Env>, c_int> {
        let st = self.st.read().unwrap_or_else(|e| e.into_inner());
        st.engine.clone().ok_or(EINVAL)
    }
    pub(crate) fn max_dbs(&self) -> u32 {
        self.st
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .cfg
            .max_dbs
    }
    pub(crate) fn flags(&self) -> u32 {
        let st = self.st.read().unwrap_or_else(|e| e.into_inner());
        match &st.engine {
            Some(e) => e.flags().bits(),
            None => st.cfg.flags,
        }
    }
}

/// A live environment handle, or `EINVAL`.
///
/// # Safety
/// `env` is NULL or a pointer returned by `mdb_env_create` and not yet closed.
pub(crate) unsafe fn env_ref<'a>(env: *mut MDB_env) -> Result<&'a MDB_env, c_int> {
    if env.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: per the caller's contract env points at a live MDB_env.
    let e = unsafe { &*env };
    if e.magic.load(Ordering::Relaxed) != ENV_MAGIC {
        return Err(EINVAL);
    }
    Ok(e)
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
    /// The shared handles it may use: those of `MDB_env::dbi_epoch` when
    /// it began, as `MDB_env::dbi_limit` gives it.
    pub(crate) dbi_limit: u64,
    pub(crate) cursors: Vec<*mut MDB_cursor>,
    /// Copies of put/del arguments, which may point into the database.
    pub(crate) scratch: Vec<u8>,
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

/// `MDB_cursor`.
pub struct MDB_cursor {
    pub(crate) live: bool,
    /// Opened in a write transaction: pooled, freed with it.
    pub(crate) write: bool,
    /// NULL once the transaction ended (read cursors).
    pub(crate) txn: *mut MDB_txn,
    pub(crate) env: *mut MDB_env,
    pub(crate) dbi: MDB_dbi,
    pub(crate) st: Option<CursorState>,
    /// The leaf `st` stands on, for `MDB_NEXT` in a read transaction (see
    /// [`Leaf`]). Set only by `mdb_cursor_get` while the transaction is a
    /// live read snapshot; cleared when it ends or is reset ([`detach`],
    /// [`forget_leaf`]), by `mdb_cursor_renew` and by every other move. So
    /// it is `None` in write transactions, and puts and deletes (which need
    /// one) never meet it.
    pub(crate) leaf: Option<Leaf>,
    /// The page of the current key's values `st` stands on, for
    /// `MDB_NEXT_DUP` and `MDB_NEXT` in a read transaction of a DUPSORT
    /// database (see [`DupLeaf`]): kept and cleared with `leaf`, by the
    /// same calls.
    pub(crate) dups: Option<DupLeaf>,
}

/// A read cursor's leaf page, kept across calls so that `MDB_NEXT` along
/// it needs no page lookup: the page's bytes in the map (from the engine,
/// bounds-checked when taken), the leaf's level in the cursor's stack and
/// the cursor's index in it (mirrored into the engine's position at each
/// step). The bytes are a committed page of the cursor's read snapshot: the
/// map stays put until the environment closes, and no writer changes a page
/// while a snapshot that sees it lives.
#[derive(Clone, Copy)]
pub(crate) struct Leaf {
    pub(crate) ptr: *const u8,
    pub(crate) len: usize,
    pub(crate) level: usize,
    pub(crate) ix: usize,
}

/// A read cursor's page of the current key's values (a sub-page inside
/// the key's node, or a leaf of its sub-database), kept across calls so
/// that `MDB_NEXT_DUP` along it reads one value and no page: the key's
/// bytes, the page's bytes and the cursor's index on it (mirrored into
/// the engine's position at each step). Both lie in committed pages of the
/// cursor's read snapshot, as [`Leaf`]'s.
#[derive(Clone, Copy)]
pub(crate) struct DupLeaf {
    pub(crate) key: *const u8,
    pub(crate) key_len: usize,
    pub(crate) ptr: *const u8,
    pub(crate) len: usize,
    pub(crate) ix: usize,
}

impl MDB_cursor {
    /// Keep the leaf, or with `dups` the page of a key's values, the
    /// engine's position now stands on (read snapshots only; `None` when
    /// the next step needs the general path).
    pub(crate) fn keep_leaf(&mut self, r: &mdb::RoTxn<'static>, dups: bool) {
        self.leaf = self.st.as_ref().and_then(|st| st.leaf_of(r)).map(Leaf::new);
        self.dups = None;
        // (A plain leaf kept: no duplicates to look for, at a scan's every
        // leaf.)
        if dups && self.leaf.is_none() {
            self.keep_dups(r);
        }
    }

    /// [`keep_leaf`](Self::keep_leaf)'s page of a key's values (a call of
    /// its own: inline, it cost a scan's every leaf 20 instructions more).
    #[inline(never)]
    fn keep_dups(&mut self, r: &mdb::RoTxn<'static>) {
        self.dups = self
            .st
            .as_ref()
            .and_then(|st| st.dups_of(r))
            .map(DupLeaf::new);
    }

    /// Drop what [`keep_leaf`](Self::keep_leaf) kept.
    #[inline(always)]
    pub(crate) fn forget_kept(&mut self) {
        self.leaf = None;
        self.dups = None;
    }
}

impl DupLeaf {
    /// From the engine's (key, page bytes, index), as
    /// [`CursorState::dups_of`] gives them.
    pub(crate) fn new((k, b, ix): (&[u8], &[u8], usize)) -> DupLeaf {
        DupLeaf {
            key: k.as_ptr(),
            key_len: k.len(),
            ptr: b.as_ptr(),
            len: b.len(),
            ix,
        }
    }
}

impl Leaf {
    /// From the engine's (leaf bytes, level, index), as
    /// [`CursorState::leaf_of`] gives them.
    pub(crate) fn new((b, level, ix): (&[u8], usize, usize)) -> Leaf {
        Leaf {
            ptr: b.as_ptr(),
            len: b.len(),
            level,
            ix,
        }
    }
}

/// A live cursor, or `EINVAL`.
///
/// # Safety
/// `c` is NULL or a cursor from `mdb_cursor_open` (pooled structs stay
/// allocated until their environment closes).
pub(crate) unsafe fn cursor_ref<'a>(c: *mut MDB_cursor) -> Result<&'a mut MDB_cursor, c_int> {
    if c.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: per the caller's contract.
    let cur = unsafe { &mut *c };
    if !cur.live {
        return Err(EINVAL);
    }
    Ok(cur)
}
