//! Database handles (c-api.md §8): open, flags, close, drop, stat,
//! comparators, and `mdb_cmp`/`mdb_dcmp`.
//!
//! C handle numbers are ours: `DbiTable` maps each to the engine's
//! [`mdb::Database`], allocating from the lowest free slot ≥ 2 as LMDB does.
//! That keeps the numbers stable when the engine is reopened
//! (`mdb_env_set_mapsize`).

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
}

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

    /// The write transaction that opened `dbis` committed.
    pub(crate) fn publish(&mut self, dbis: &[MDB_dbi]) {
        for &d in dbis {
            if let Some(Some(e)) = self.slots.get_mut(d as usize) {
                e.pending = false;
            }
        }
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

impl MDB_env {
    /// The engine database of handle `dbi` (`EINVAL` if not open).
    #[inline]
    pub(crate) fn db(&self, dbi: MDB_dbi) -> Result<Database, c_int> {
        if let Some(f) = self.dbi_fast.get(dbi as usize) {
            return match f.load(std::sync::atomic::Ordering::Acquire) {
                0 => Err(EINVAL),
                v => Ok(Database::from_dbi(v - 1)),
            };
        }
        let t = self.dbis.read().unwrap_or_else(|x| x.into_inner());
        t.get(dbi).map(|e| e.db).ok_or(EINVAL)
    }

    /// Mirror the table's first handles into `dbi_fast` (called with the
    /// write lock held, after a handle is opened or closed).
    fn sync_dbi_fast(&self, t: &DbiTable) {
        for (i, f) in self.dbi_fast.iter().enumerate() {
            let v = t.get(i as MDB_dbi).map_or(0, |e| e.db.dbi() + 1);
            f.store(v, std::sync::atomic::Ordering::Release);
        }
    }

    /// The engine database of a handle that user data may be read or
    /// written through: not the free DB.
    pub(crate) fn data_db(&self, dbi: MDB_dbi) -> Result<Database, c_int> {
        if dbi == 0 {
            return Err(EINVAL);
        }
        self.db(dbi)
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
                let tab = env.dbis.read().unwrap_or_else(|x| x.into_inner());
                if let Some(h) = tab.find(name, rdonly) {
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
            // SAFETY: the txn's env outlives it.
            let db = unsafe { &*t.env }.data_db(dbi)?;
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
            // SAFETY: the txn's env outlives it.
            let db = unsafe { &*t.env }.db(dbi)?;
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
            let db = env.data_db(dbi)?;
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
            let db = env.data_db(dbi)?;
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
            // SAFETY: the txn's env outlives it.
            unsafe { &*t.env }.data_db(dbi).map(|_| ())
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
