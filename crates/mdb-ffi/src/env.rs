//! Environment functions (c-api.md §6) and the reader table (§10).

use crate::guard::{code, guard, guard_or};
use crate::handles::{close, configure, env_ref, Config, MDB_assert_func, MDB_env};
use crate::types::*;
use mdb::{EnvFlags, EnvOptions};
use std::ffi::{CStr, CString, OsStr};
use std::os::raw::{c_char, c_int, c_uint, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `mdb_env_create`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_create(env: *mut *mut MDB_env) -> c_int {
    guard(move || {
        if env.is_null() {
            return EINVAL;
        }
        let e = Box::new(MDB_env::new());
        // SAFETY: env is a valid out-pointer (checked non-NULL).
        unsafe { *env = Box::into_raw(e) };
        0
    })
}

fn open_engine(cfg: &Config, path: &Path) -> mdb::Result<mdb::Env> {
    let mut o = EnvOptions::new();
    if cfg.flags & env_flags::NOLOCK != 0 {
        // SAFETY: lmdb.h makes the caller of MDB_NOLOCK responsible for
        // all concurrency control: it takes on `no_lock`'s contract.
        unsafe { o.no_lock() };
    }
    // Existing LMDB programs gain a map that grows with no code change:
    // the size they set becomes where the file starts, not a limit.
    let autogrow = match std::env::var("MDB_AUTOGROW") {
        Ok(v) => parse_size(&v).unwrap_or(0),
        Err(_) => cfg.autogrow,
    };
    let map_size = if autogrow > 0 {
        autogrow.max(cfg.map_size)
    } else {
        cfg.map_size
    };
    o.map_size(map_size)
        .auto_grow(autogrow > 0)
        .max_dbs(cfg.max_dbs)
        .max_readers(cfg.max_readers)
        .flags(EnvFlags(cfg.flags & !env_flags::NOLOCK))
        .mode(cfg.mode);
    // Existing LMDB programs gain WAL mode with no code change.
    let from_env = std::env::var_os("MDB_WAL").is_some_and(|v| v == "1");
    if (cfg.wal || from_env) && cfg.flags & env_flags::RDONLY == 0 {
        let mut w = mdb::WalOptions::default();
        w.sync_every =
            (cfg.wal_sync_ms > 0).then(|| std::time::Duration::from_millis(cfg.wal_sync_ms.into()));
        o.wal(w);
    }
    o.open(path)
}

/// An `MDB_AUTOGROW` value: `1` for the default ceiling, `0` for off, or
/// a ceiling in bytes with an optional K, M, G or T suffix (powers of 1024).
fn parse_size(v: &str) -> Option<usize> {
    let v = v.trim();
    if v == "1" {
        return Some(mdb::DEFAULT_CEILING);
    }
    let (num, shift) = match v.as_bytes().last()?.to_ascii_uppercase() {
        b'K' => (&v[..v.len() - 1], 10),
        b'M' => (&v[..v.len() - 1], 20),
        b'G' => (&v[..v.len() - 1], 30),
        b'T' => (&v[..v.len() - 1], 40),
        _ => (v, 0),
    };
    num.parse::<usize>().ok()?.checked_mul(1 << shift)
}

/// `mdb_env_open`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_open(
    env: *mut MDB_env,
    path: *const c_char,
    flags: c_uint,
    mode: libc::mode_t,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? };
            let mut st = e.st.write().unwrap_or_else(|x| x.into_inner());
            if st.tried || flags & !env_flags::VALID != 0 || path.is_null() {
                return Err(EINVAL);
            }
            st.tried = true;
            // SAFETY: path is a NUL-terminated string (checked non-NULL).
            let cpath = unsafe { CStr::from_ptr(path) }.to_owned();
            let p = Path::new(OsStr::from_bytes(cpath.as_bytes())).to_path_buf();
            st.cfg.flags |= flags;
            st.cfg.mode = mode;
            let engine = open_engine(&st.cfg, &p).map_err(|e| e.code())?;
            // Like LMDB's, the data file descriptor (`mdb_env_get_fd`) is
            // the only one not close-on-exec.
            let fd = engine.data_fd();
            // SAFETY: fcntl on the engine's open descriptor.
            unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFD);
                if fl >= 0 {
                    libc::fcntl(fd, libc::F_SETFD, fl & !libc::FD_CLOEXEC);
                }
            }
            st.cfg.flags = engine.flags().bits();
            st.engine = Some(Arc::new(engine));
            st.path = Some(cpath);
            Ok(())
        })())
    })
}
/// `mdb_env_close`: aborts what the caller left open, then frees everything.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_close(env: *mut MDB_env) {
    guard(move || {
        // SAFETY: env per the lmdb.h contract.
        if unsafe { env_ref(env) }.is_err() {
            return 0;
        }
        // SAFETY: a live environment handle, the caller's to close.
        unsafe { close(env) };
        0
    });
}

fn copy(env: *mut MDB_env, to: Target, flags: c_uint) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? }.engine()?;
            let compact = flags & 1 != 0;
            let r = match to {
                Target::Path(p) => {
                    if p.is_null() {
                        return Err(EINVAL);
                    }
                    // SAFETY: a NUL-terminated path from the caller.
                    let b = unsafe { CStr::from_ptr(p) }.to_bytes();
                    e.copy_to_path(Path::new(OsStr::from_bytes(b)), compact)
                }
                Target::Fd(fd) => {
                    if fd < 0 {
                        return Err(EINVAL);
                    }
                    // SAFETY: the caller's open descriptor, borrowed for the call.
                    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
                    e.copy_to_fd(fd, compact)
                }
            };
            r.map_err(|e| e.code())
        })())
    })
}

enum Target {
    Path(*const c_char),
    Fd(c_int),
}

/// `mdb_env_copy`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_copy(env: *mut MDB_env, path: *const c_char) -> c_int {
    copy(env, Target::Path(path), 0)
}

/// `mdb_env_copy2`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_copy2(
    env: *mut MDB_env,
    path: *const c_char,
    flags: c_uint,
) -> c_int {
    copy(env, Target::Path(path), flags)
}

/// `mdb_env_copyfd`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_copyfd(env: *mut MDB_env, fd: c_int) -> c_int {
    copy(env, Target::Fd(fd), 0)
}

/// `mdb_env_copyfd2`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_copyfd2(env: *mut MDB_env, fd: c_int, flags: c_uint) -> c_int {
    copy(env, Target::Fd(fd), flags)
}

/// `mdb_env_stat`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_stat(env: *mut MDB_env, stat: *mut MDB_stat) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? }.engine()?;
            if stat.is_null() {
                return Err(EINVAL);
            }
            fill_stat(stat, &e.stat().map_err(|e| e.code())?);
            Ok(())
        })())
    })
}

/// `mdb_env_info`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_info(env: *mut MDB_env, info: *mut MDB_envinfo) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? }.engine()?;
            if info.is_null() {
                return Err(EINVAL);
            }
            let i = e.info().map_err(|e| e.code())?;
            // SAFETY: info checked non-NULL.
            unsafe {
                *info = MDB_envinfo {
                    me_mapaddr: i.map_addr as *mut c_void,
                    me_mapsize: i.map_size,
                    me_last_pgno: i.last_pgno as usize,
                    me_last_txnid: i.last_txnid as usize,
                    me_maxreaders: i.max_readers,
                    me_numreaders: i.num_readers,
                }
            };
            Ok(())
        })())
    })
}

/// `mdb_env_sync`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_sync(env: *mut MDB_env, force: c_int) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? }.engine()?;
            e.sync(force != 0).map_err(|e| e.code())
        })())
    })
}

/// `mdb_env_set_flags`: only NOSYNC, NOMETASYNC, MAPASYNC and NOMEMINIT.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_flags(
    env: *mut MDB_env,
    flags: c_uint,
    onoff: c_int,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? };
            if flags & !env_flags::CHANGEABLE != 0 {
                return Err(EINVAL);
            }
            let mut st = e.st.write().unwrap_or_else(|x| x.into_inner());
            match &st.engine {
                Some(en) => en
                    .set_flags(EnvFlags(flags), onoff != 0)
                    .map_err(|e| e.code())?,
                None if onoff != 0 => st.cfg.flags |= flags,
                None => st.cfg.flags &= !flags,
            }
            Ok(())
        })())
    })
}

/// `mdb_env_get_flags`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_flags(env: *mut MDB_env, flags: *mut c_uint) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? };
            if flags.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: checked non-NULL.
            unsafe { *flags = e.flags() };
            Ok(())
        })())
    })
}

/// `mdb_env_get_path`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_path(env: *mut MDB_env, path: *mut *const c_char) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? };
            if path.is_null() {
                return Err(EINVAL);
            }
            let st = e.st.read().unwrap_or_else(|x| x.into_inner());
            let p = st.path.as_ref().map_or(std::ptr::null(), |p| p.as_ptr());
            // SAFETY: checked non-NULL; the string lives as long as the env.
            unsafe { *path = p };
            Ok(())
        })())
    })
}

/// `mdb_env_get_fd`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_fd(env: *mut MDB_env, fd: *mut c_int) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? };
            if fd.is_null() {
                return Err(EINVAL);
            }
            let st = e.st.read().unwrap_or_else(|x| x.into_inner());
            // SAFETY: checked non-NULL.
            unsafe { *fd = st.engine.as_ref().map_or(-1, |en| en.data_fd()) };
            Ok(())
        })())
    })
}

/// `mdb_env_set_mapsize`. Before open it records the size; after open the
/// engine maps the new size at once (`0` adopts the size stored in the
/// file, the `MDB_MAP_RESIZED` remedy; a size below the data in use is
/// raised to it). `EINVAL` while a write transaction of this handle is live,
/// as LMDB. Live read transactions keep the mapping they began on (LMDB
/// would remap under them and leave their pointers dangling). With
/// auto-grow the size is the ceiling.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_mapsize(env: *mut MDB_env, size: usize) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? };
            let mut st = e.st.write().unwrap_or_else(|x| x.into_inner());
            match st.engine.as_mut() {
                None => {
                    st.cfg.map_size = size;
                    Ok(())
                }
                Some(en) if en.write_txn_active() => Err(EINVAL),
                Some(en) => en.set_map_size(size).map_err(|e| e.code()),
            }
        })())
    })
}

/// `mdb_env_set_maxreaders` (before open only; at most [`mdb::MAX_READERS`]).
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_maxreaders(env: *mut MDB_env, readers: c_uint) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? };
            let mut st = e.st.write().unwrap_or_else(|x| x.into_inner());
            // Above the engine's bound the lock file would be absurd
            // (LMDB takes up to 2^32-1: a 256 GiB lock file).
            if !(1..=mdb::MAX_READERS).contains(&readers) || st.tried {
                return Err(EINVAL);
            }
            st.cfg.max_readers = readers;
            Ok(())
        })())
    })
}

/// `mdb_env_get_maxreaders`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_maxreaders(env: *mut MDB_env, readers: *mut c_uint) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? };
            if readers.is_null() {
                return Err(EINVAL);
            }
            let st = e.st.read().unwrap_or_else(|x| x.into_inner());
            let n = match &st.engine {
                Some(en) => match en.info() {
                    Ok(i) if i.max_readers > 0 => i.max_readers,
                    _ => st.cfg.max_readers,
                },
                None => st.cfg.max_readers,
            };
            // SAFETY: checked non-NULL.
            unsafe { *readers = n };
            Ok(())
        })())
    })
}

/// `mdb_env_set_maxdbs` (before open only).
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_maxdbs(env: *mut MDB_env, dbs: MDB_dbi) -> c_int {
    // SAFETY: env per the lmdb.h contract.
    unsafe { configure(env, |c| c.max_dbs = dbs) }
}

/// `mdb_env_get_maxkeysize`: 511, opened or not.
#[no_mangle]
pub extern "C" fn mdb_env_get_maxkeysize(_env: *mut MDB_env) -> c_int {
    MAX_KEY as c_int
}

/// `mdb_env_set_userctx`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_userctx(env: *mut MDB_env, ctx: *mut c_void) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            unsafe { env_ref(env)? }
                .userctx
                .store(ctx, Ordering::Relaxed);
            Ok(())
        })())
    })
}

/// `mdb_env_get_userctx`.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_userctx(env: *mut MDB_env) -> *mut c_void {
    guard_or(std::ptr::null_mut(), || {
        // SAFETY: env per the lmdb.h contract.
        match unsafe { env_ref(env) } {
            Ok(e) => e.userctx.load(Ordering::Relaxed),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

/// `mdb_env_set_assert`: stored; the engine reports its failures as error
/// codes, so it is never called.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_assert(
    env: *mut MDB_env,
    func: Option<MDB_assert_func>,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? };
            *e.assert_fn.lock().unwrap_or_else(|x| x.into_inner()) = func;
            Ok(())
        })())
    })
}

/// `mdb_reader_list`: the reader table, one line per callback call.
#[no_mangle]
pub unsafe extern "C" fn mdb_reader_list(
    env: *mut MDB_env,
    func: Option<MDB_msg_func>,
    ctx: *mut c_void,
) -> c_int {
    guard(move || {
        // SAFETY: env per the lmdb.h contract.
        let (Ok(e), Some(func)) = (unsafe { env_ref(env) }, func) else {
            return -1;
        };
        let text = match e.engine() {
            Ok(en) => en.reader_list_text(),
            Err(_) => "(no reader locks)\n".to_string(),
        };
        let mut last = 0;
        for line in text.split_inclusive('\n') {
            let c = CString::new(line).unwrap_or_default();
            // SAFETY: calling the caller's callback with a valid C string.
            last = unsafe { func(c.as_ptr(), ctx) };
            if last < 0 {
                break;
            }
        }
        last
    })
}

/// `mdb_reader_check`.
#[no_mangle]
pub unsafe extern "C" fn mdb_reader_check(env: *mut MDB_env, dead: *mut c_int) -> c_int {
    guard(move || {
        code((|| {
            if !dead.is_null() {
                // SAFETY: non-NULL out-pointer.
                unsafe { *dead = 0 };
            }
            // SAFETY: env per the lmdb.h contract.
            let e = unsafe { env_ref(env)? }.engine()?;
            let n = e.reader_check().map_err(|e| e.code())?;
            if !dead.is_null() {
                // SAFETY: non-NULL out-pointer.
                unsafe { *dead = n as c_int };
            }
            Ok(())
        })())
    })
}
