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

use crate::guard::{code, guard, is_fatal};
use crate::handles::{env_ref, txn_ref, DbiEntry, MDB_env, MDB_txn, View, UNSHARED};
use crate::types::*;
use mdb::{Database, DbFlags, Txn};
use std::cmp::Ordering;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_uint, c_void};

/// `mdb_dbi_open`.
#[no_mangle]
pub unsafe extern "C" fn mdb_dbi_open(
    txn: *mut MDB_txn,
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
                    if let Some(e) = tab.get_mut(h) {
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
    txn: *mut MDB_txn,
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
        if let Ok(e) = unsafe { env_ref(env) } {
            e.close_dbi(dbi);
        }
        0
    });
}

/// `mdb_stat`.
#[no_mangle]
pub unsafe extern "C" fn mdb_stat(txn: *mut MDB_txn, dbi: MDB_dbi, stat: *mut MDB_stat) -> c_int {
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
            fill_stat(stat, &s);
            Ok(())
        })())
    })
}

/// `mdb_drop`: empty a database (`del == 0`) or delete it (`del == 1`).
#[no_mangle]
pub unsafe extern "C" fn mdb_drop(txn: *mut MDB_txn, dbi: MDB_dbi, del: c_int) -> c_int {
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

fn set_cmp(txn: *mut MDB_txn, dbi: MDB_dbi, f: Option<MDB_cmp_func>, dup: bool) -> c_int {
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
            if let Some(e) = tab.get_mut(dbi) {
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
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    cmp: Option<MDB_cmp_func>,
) -> c_int {
    set_cmp(txn, dbi, cmp, false)
}

/// `mdb_set_dupsort`.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_dupsort(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    cmp: Option<MDB_cmp_func>,
) -> c_int {
    set_cmp(txn, dbi, cmp, true)
}

fn check_handle(txn: *mut MDB_txn, dbi: MDB_dbi) -> c_int {
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
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    _rel: Option<MDB_rel_func>,
) -> c_int {
    check_handle(txn, dbi)
}

/// `mdb_set_relctx`: accepted and ignored, as in LMDB 0.9.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_relctx(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    _ctx: *mut c_void,
) -> c_int {
    check_handle(txn, dbi)
}

fn compare(
    txn: *mut MDB_txn,
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
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    a: *const MDB_val,
    b: *const MDB_val,
) -> c_int {
    compare(txn, dbi, a, b, false)
}

/// `mdb_dcmp`: compare with the database's duplicate order.
#[no_mangle]
pub unsafe extern "C" fn mdb_dcmp(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    a: *const MDB_val,
    b: *const MDB_val,
) -> c_int {
    compare(txn, dbi, a, b, true)
}
