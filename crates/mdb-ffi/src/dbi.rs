//! Database handles (c-api.md §8): open, flags, close, drop, stat,
//! comparators, and `mdb_cmp`/`mdb_dcmp`.
//!
//! C handle numbers are ours: `DbiTable` maps each to the engine's
//! [`mdb::Database`], allocating from the lowest free slot ≥ 2 as LMDB does.
//! That keeps the numbers stable when the engine is reopened
//! (`mdb_env_set_mapsize`).
//!
//! As in LMDB (c-api.md §8), a handle is private to the transactions that
//! opened it (and their children) until one of them commits, read-only or
//! not; it is closed if they all abort. A transaction may use only the
//! handles shared before it began, and its own: others get `EINVAL`.

use crate::env::MDB_env;
use crate::guard::{code, guard, is_fatal};
use crate::txn::{txn_ref, View};
use crate::types::*;
use mdb::{Database, DbFlags, Txn};
use std::cmp::Ordering;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_uint, c_void};

/// Handles below this number are looked up without a lock.
pub(crate) const FAST_DBIS: usize = 64;

/// One open handle.
#[derive(Clone)]
pub(crate) struct DbiEntry {
    pub(crate) db: Database,
    pub(crate) name: Option<Vec<u8>>,
    pub(crate) cmp: Option<MDB_cmp_func>,
    pub(crate) dcmp: Option<MDB_cmp_func>,
    /// Opened in the live write transaction, not committed yet: read
    /// transactions do not see it (the engine refuses them with `EINVAL`).
    pub(crate) pending: bool,
    /// The `MDB_env::dbi_epoch` at which a commit shared the handle with
    /// the transactions begun since; [`UNSHARED`] before.
    pub(crate) born: u32,
    /// The live transactions (addresses) that opened the handle and may
    /// use it whatever `born` says.
    pub(crate) owners: Vec<usize>,
}

/// `DbiEntry::born` of a handle only its openers may use.
pub(crate) const UNSHARED: u32 = u32::MAX;

/// The environment's handles, by C number.
pub(crate) struct DbiTable {
    slots: Vec<Option<DbiEntry>>,
}

impl DbiTable {
    pub(crate) fn new() -> DbiTable {
        let e = |db| {
            Some(DbiEntry {
                db,
                name: None,
                cmp: None,
                dcmp: None,
                pending: false,
                born: 0,
                owners: Vec::new(),
            })
        };
        DbiTable {
            slots: vec![e(Database::FREE), e(Database::MAIN)],
        }
    }

    pub(crate) fn get(&self, dbi: MDB_dbi) -> Option<&DbiEntry> {
        self.slots.get(dbi as usize).and_then(|s| s.as_ref())
    }

    /// The open handle named `name`; for a reader, not one still pending.
    pub(crate) fn find(&self, name: &[u8], reader: bool) -> Option<MDB_dbi> {
        self.slots
            .iter()
            .position(|s| {
                s.as_ref()
                    .is_some_and(|e| e.name.as_deref() == Some(name) && !(reader && e.pending))
            })
            .map(|i| i as MDB_dbi)
    }

    /// Take `owner` off the open handles of `dbis` it opened, and apply
    /// `f` to each.
    fn disown(&mut self, dbis: &[MDB_dbi], owner: usize, mut f: impl FnMut(&mut DbiEntry)) {
        for &d in dbis {
            if let Some(Some(e)) = self.slots.get_mut(d as usize) {
                if let Some(i) = e.owners.iter().position(|&o| o == owner) {
                    e.owners.swap_remove(i);
                    f(e);
                }
            }
        }
    }

    /// Top-level transaction `owner`, which opened `dbis`, committed:
    /// those still private are shared from epoch `epoch` on. Whether any was.
    fn share(&mut self, dbis: &[MDB_dbi], owner: usize, epoch: u32) -> bool {
        let mut any = false;
        self.disown(dbis, owner, |e| {
            e.pending = false;
            if e.born == UNSHARED {
                e.born = epoch;
                any = true;
            }
        });
        any
    }

    /// Child `from`, which opened `dbis`, committed: they are its parent's.
    fn hand_over(&mut self, dbis: &[MDB_dbi], from: usize, to: usize) {
        self.disown(dbis, from, |e| {
            if !e.owners.contains(&to) {
                e.owners.push(to);
            }
        });
    }

    /// `owner`, which opened `dbis`, aborted: those nobody else holds and
    /// that were never shared are closed (their databases returned).
    fn abandon(&mut self, dbis: &[MDB_dbi], owner: usize) -> Vec<Database> {
        self.disown(dbis, owner, |_| {});
        let orphan = |e: &DbiEntry| e.owners.is_empty() && e.born == UNSHARED;
        dbis.iter()
            .filter(|&&d| self.get(d).is_some_and(orphan))
            .copied()
            .collect::<Vec<_>>()
            .into_iter()
            .filter_map(|d| self.remove(d).map(|e| e.db))
            .collect()
    }

    fn named(&self) -> usize {
        self.slots.iter().skip(2).filter(|s| s.is_some()).count()
    }

    fn insert(&mut self, e: DbiEntry) -> MDB_dbi {
        match self.slots.iter().skip(2).position(|s| s.is_none()) {
            Some(i) => {
                self.slots[i + 2] = Some(e);
                (i + 2) as MDB_dbi
            }
            None => {
                self.slots.push(Some(e));
                (self.slots.len() - 1) as MDB_dbi
            }
        }
    }

    fn remove(&mut self, dbi: MDB_dbi) -> Option<DbiEntry> {
        if dbi < 2 {
            return None;
        }
        self.slots.get_mut(dbi as usize).and_then(|s| s.take())
    }
}

impl crate::txn::MDB_txn {
    /// The engine database of handle `dbi` if this transaction may use it:
    /// shared before it began, or opened by it or an ancestor (else
    /// `EINVAL`, as LMDB).
    #[inline]
    pub(crate) fn db(&self, dbi: MDB_dbi) -> Result<Database, c_int> {
        // SAFETY: a live transaction's env outlives it.
        let env = unsafe { &*self.env };
        if let Some(f) = env.dbi_fast.get(dbi as usize) {
            let v = f.load(std::sync::atomic::Ordering::Acquire);
            let ix = v as u32;
            if ix == 0 {
                return Err(EINVAL);
            }
            if (v >> 32) as u32 <= self.dbi_epoch {
                return Ok(Database::from_dbi(ix - 1));
            }
        }
        self.db_slow(dbi)
    }

    #[cold]
    fn db_slow(&self, dbi: MDB_dbi) -> Result<Database, c_int> {
        // SAFETY: as in `db`.
        let env = unsafe { &*self.env };
        let t = env.dbis.read().unwrap_or_else(|x| x.into_inner());
        match t.get(dbi) {
            Some(e) if self.may_use(e) => Ok(e.db),
            _ => Err(EINVAL),
        }
    }

    /// Whether this transaction may use handle `e`.
    fn may_use(&self, e: &DbiEntry) -> bool {
        if e.born <= self.dbi_epoch {
            return true;
        }
        let mut t: *const crate::txn::MDB_txn = self;
        while !t.is_null() {
            if e.owners.contains(&(t as usize)) {
                return true;
            }
            // SAFETY: a live transaction's ancestors are live.
            t = unsafe { (*t).parent };
        }
        false
    }

    /// The engine database of a handle that user data may be read or
    /// written through: not the free DB.
    #[inline]
    pub(crate) fn data_db(&self, dbi: MDB_dbi) -> Result<Database, c_int> {
        if dbi == 0 {
            return Err(EINVAL);
        }
        self.db(dbi)
    }
}

impl MDB_env {
    /// Mirror the table's first handles into `dbi_fast` (called with the
    /// write lock held, after a handle is opened, shared or closed).
    fn sync_dbi_fast(&self, t: &DbiTable) {
        for (i, f) in self.dbi_fast.iter().enumerate() {
            let v = t
                .get(i as MDB_dbi)
                .map_or(0, |e| (u64::from(e.born) << 32) | u64::from(e.db.dbi() + 1));
            f.store(v, std::sync::atomic::Ordering::Release);
        }
    }

    /// Transaction `txn` ended having opened `dbis`. Committed: a child's
    /// pass to its parent; a top-level one's are shared with the
    /// transactions that begin from now on. Aborted (or reset): closed
    /// unless another live transaction opened them too, or one shared them.
    pub(crate) fn end_dbis(
        &self,
        dbis: &[MDB_dbi],
        txn: *const crate::txn::MDB_txn,
        commit: bool,
        parent: *const crate::txn::MDB_txn,
    ) {
        if dbis.is_empty() {
            return;
        }
        let closed = {
            let mut t = self.dbis.write().unwrap_or_else(|x| x.into_inner());
            let closed = if !commit {
                t.abandon(dbis, txn as usize)
            } else if !parent.is_null() {
                t.hand_over(dbis, txn as usize, parent as usize);
                Vec::new()
            } else {
                let epoch = self.dbi_epoch.load(std::sync::atomic::Ordering::Relaxed);
                let next = epoch.saturating_add(1).min(UNSHARED - 1);
                if t.share(dbis, txn as usize, next) {
                    self.sync_dbi_fast(&t);
                    // After the entries: a transaction that reads `next`
                    // sees them shared.
                    self.dbi_epoch
                        .store(next, std::sync::atomic::Ordering::Release);
                }
                Vec::new()
            };
            if !closed.is_empty() {
                self.sync_dbi_fast(&t);
            }
            closed
        };
        if let Ok(en) = self.engine() {
            for db in closed {
                en.close_db(db);
            }
        }
    }

    /// Close handle `dbi` (no-op for 0, 1 and unknown handles).
    pub(crate) fn close_dbi(&self, dbi: MDB_dbi) {
        let e = {
            let mut t = self.dbis.write().unwrap_or_else(|x| x.into_inner());
            let e = t.remove(dbi);
            self.sync_dbi_fast(&t);
            e
        };
        if let (Some(e), Ok(en)) = (e, self.engine()) {
            en.close_db(e.db);
        }
    }
}

/// `mdb_dbi_open`.
#[no_mangle]
pub unsafe extern "C" fn mdb_dbi_open(
    txn: *mut crate::txn::MDB_txn,
    name: *const c_char,
    flags: c_uint,
    dbi: *mut MDB_dbi,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            if dbi.is_null() || flags & !(db_flags::PERSISTENT | db_flags::CREATE) != 0 {
                return Err(EINVAL);
            }
            t.usable()?;
            // SAFETY: the txn's env outlives it.
            let env = unsafe { &*t.env };
            let pflags = flags & db_flags::PERSISTENT;
            let create = flags & db_flags::CREATE != 0;
            let rdonly = t.rdonly;
            let mut view = t.view()?;
            if name.is_null() {
                if let View::Rw(w) = &mut view {
                    let cur = w.db_flags(Database::MAIN).map_err(|e| e.code())?.bits() as u32;
                    if pflags & !cur != 0 {
                        w.set_main_flags(DbFlags((cur | pflags) as u16))
                            .map_err(|e| e.code())?;
                    }
                }
                // SAFETY: dbi checked non-NULL.
                unsafe { *dbi = 1 };
                return Ok(());
            }
            // SAFETY: name is a NUL-terminated string (checked non-NULL).
            let name = unsafe { CStr::from_ptr(name) }.to_bytes();
            {
                let mut tab = env.dbis.write().unwrap_or_else(|x| x.into_inner());
                if let Some(h) = tab.find(name, rdonly) {
                    if let Some(e) = tab.slots[h as usize].as_mut() {
                        // Private to another transaction, or shared after
                        // this one began: it becomes this one's too.
                        if !t.may_use(e) {
                            e.owners.push(txn as usize);
                            t.new_dbis.push(h);
                        }
                    }
                    // SAFETY: dbi checked non-NULL.
                    unsafe { *dbi = h };
                    return Ok(());
                }
                if tab.named() >= env.max_dbs() as usize {
                    return Err(mdb::error::code::DBS_FULL);
                }
            }
            if name.is_empty() {
                return Err(MDB_BAD_VALSIZE);
            }
            if name.len() > MAX_KEY {
                return Err(if create {
                    MDB_BAD_VALSIZE
                } else {
                    MDB_NOTFOUND
                });
            }
            let main = match &view {
                View::Ro(r) => r.db_flags(Database::MAIN),
                View::Rw(w) => w.db_flags(Database::MAIN),
            }
            .map_err(|e| e.code())?
            .bits() as u32;
            if main & (db_flags::DUPSORT | db_flags::INTEGERKEY) != 0 {
                return Err(if create {
                    MDB_INCOMPATIBLE
                } else {
                    MDB_NOTFOUND
                });
            }
            let r = match view {
                View::Ro(r) => match r.open_db(name) {
                    Err(e) if e == mdb::ErrorKind::NotFound && create => {
                        Err(mdb::ErrorKind::Os(EACCES).into())
                    }
                    r => r,
                },
                View::Rw(w) if create => w.create_db(name, DbFlags(pflags as u16)),
                View::Rw(w) => w.open_db(name),
            };
            if let Err(e) = &r {
                if is_fatal(e) && !t.rdonly {
                    t.broken = true;
                }
            }
            let db = r.map_err(|e| e.code())?;
            let h = {
                let mut tab = env.dbis.write().unwrap_or_else(|x| x.into_inner());
                let h = tab.insert(DbiEntry {
                    db,
                    name: Some(name.to_vec()),
                    cmp: None,
                    dcmp: None,
                    pending: !t.rdonly,
                    born: UNSHARED,
                    owners: vec![txn as usize],
                });
                env.sync_dbi_fast(&tab);
                h
            };
            t.new_dbis.push(h);
            // SAFETY: dbi checked non-NULL.
            unsafe { *dbi = h };
            Ok(())
        })())
    })
}

/// `mdb_dbi_flags`.
#[no_mangle]
pub unsafe extern "C" fn mdb_dbi_flags(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    flags: *mut c_uint,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            let db = t.data_db(dbi)?;
            if flags.is_null() {
                return Err(EINVAL);
            }
            let f = match t.view()? {
                View::Ro(r) => r.db_flags(db),
                View::Rw(w) => w.db_flags(db),
            }
            .map_err(|e| e.code())?;
            // SAFETY: checked non-NULL.
            unsafe { *flags = f.bits() as c_uint };
            Ok(())
        })())
    })
}

/// `mdb_dbi_close`.
#[no_mangle]
pub unsafe extern "C" fn mdb_dbi_close(env: *mut MDB_env, dbi: MDB_dbi) {
    guard(move || {
        // SAFETY: env per the lmdb.h contract.
        if let Ok(e) = unsafe { crate::env::env_ref(env) } {
            e.close_dbi(dbi);
        }
        0
    });
}

/// `mdb_stat`.
#[no_mangle]
pub unsafe extern "C" fn mdb_stat(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    stat: *mut MDB_stat,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            let db = t.db(dbi)?;
            if stat.is_null() {
                return Err(EINVAL);
            }
            t.usable()?;
            let s = match t.view()? {
                View::Ro(r) => r.stat(db),
                View::Rw(w) => w.stat(db),
            }
            .map_err(|e| e.code())?;
            crate::env::fill_stat(stat, &s);
            Ok(())
        })())
    })
}

/// `mdb_drop`: empty a database (`del == 0`) or delete it (`del == 1`).
#[no_mangle]
pub unsafe extern "C" fn mdb_drop(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    del: c_int,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            // SAFETY: the txn's env outlives it.
            let env = unsafe { &*t.env };
            let db = t.data_db(dbi)?;
            if !(0..=1).contains(&del) {
                return Err(EINVAL);
            }
            if t.rdonly {
                return Err(EACCES);
            }
            t.usable()?;
            let View::Rw(w) = t.view()? else {
                return Err(EACCES);
            };
            let r = if del == 1 && dbi >= 2 {
                w.delete_db(db)
            } else {
                w.clear_db(db)
            };
            if let Err(e) = r {
                if is_fatal(&e) {
                    t.broken = true;
                }
                return Err(e.code());
            }
            if del == 1 && dbi >= 2 {
                env.close_dbi(dbi);
                t.new_dbis.retain(|&d| d != dbi);
            }
            Ok(())
        })())
    })
}

fn set_cmp(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    f: Option<MDB_cmp_func>,
    dup: bool,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            // SAFETY: the txn's env outlives it.
            let env = unsafe { &*t.env };
            let db = t.data_db(dbi)?;
            let f = f.ok_or(EINVAL)?;
            env.engine()?
                .set_comparator(db, crate::cmp::c_comparator(f), dup)
                .map_err(|e| e.code())?;
            let mut tab = env.dbis.write().unwrap_or_else(|x| x.into_inner());
            if let Some(Some(e)) = tab.slots.get_mut(dbi as usize) {
                if dup {
                    e.dcmp = Some(f);
                } else {
                    e.cmp = Some(f);
                }
            }
            Ok(())
        })())
    })
}

/// `mdb_set_compare`.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_compare(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    cmp: Option<MDB_cmp_func>,
) -> c_int {
    set_cmp(txn, dbi, cmp, false)
}

/// `mdb_set_dupsort`.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_dupsort(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    cmp: Option<MDB_cmp_func>,
) -> c_int {
    set_cmp(txn, dbi, cmp, true)
}

fn check_handle(txn: *mut crate::txn::MDB_txn, dbi: MDB_dbi) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            t.data_db(dbi).map(|_| ())
        })())
    })
}

/// `mdb_set_relfunc`: accepted and ignored, as in LMDB 0.9.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_relfunc(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    _rel: Option<MDB_rel_func>,
) -> c_int {
    check_handle(txn, dbi)
}

/// `mdb_set_relctx`: accepted and ignored, as in LMDB 0.9.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_relctx(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    _ctx: *mut c_void,
) -> c_int {
    check_handle(txn, dbi)
}

fn compare(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    a: *const MDB_val,
    b: *const MDB_val,
    dup: bool,
) -> c_int {
    crate::guard::guard_or(0, || {
        (|| -> Result<c_int, c_int> {
            if a.is_null() || b.is_null() {
                return Err(0);
            }
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn) }.map_err(|_| 0)?;
            // SAFETY: the txn's env outlives it.
            let env = unsafe { &*t.env };
            let e = env
                .dbis
                .read()
                .unwrap_or_else(|x| x.into_inner())
                .get(dbi)
                .cloned()
                .ok_or(0)?;
            let user = if dup { e.dcmp } else { e.cmp };
            if let Some(f) = user {
                // SAFETY: the caller's comparator, called with the caller's values.
                return Ok(unsafe { f(a, b) });
            }
            let flags = match t.view().map_err(|_| 0)? {
                View::Ro(r) => r.db_flags(e.db),
                View::Rw(w) => w.db_flags(e.db),
            }
            .map_err(|_| 0)?
            .bits();
            if dup && flags as u32 & db_flags::DUPSORT == 0 {
                return Err(0);
            }
            let f = if dup {
                mdb::cmp::dup_for_flags(flags)
            } else {
                mdb::cmp::for_flags(flags)
            };
            // SAFETY: the caller's MDB_vals describe readable bytes.
            let (x, y) = unsafe { (bytes(&*a), bytes(&*b)) };
            Ok(match f.compare(x, y) {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            })
        })()
        .unwrap_or_else(|e| e)
    })
}

/// `mdb_cmp`: compare with the database's key order.
#[no_mangle]
pub unsafe extern "C" fn mdb_cmp(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    a: *const MDB_val,
    b: *const MDB_val,
) -> c_int {
    compare(txn, dbi, a, b, false)
}

/// `mdb_dcmp`: compare with the database's duplicate order.
#[no_mangle]
pub unsafe extern "C" fn mdb_dcmp(
    txn: *mut crate::txn::MDB_txn,
    dbi: MDB_dbi,
    a: *const MDB_val,
    b: *const MDB_val,
) -> c_int {
    compare(txn, dbi, a, b, true)
}
