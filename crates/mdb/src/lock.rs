//! The lock file (`lock.mdb`): reader table, writer mutex and the fcntl
//! byte-range protocol of LMDB 0.9 (lock format `0x00010001`).
//!
//! Layout on x86-64 glibc (offsets follow from the size of
//! `pthread_mutex_t`, exactly as LMDB's C structs do):
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `0xBEEFC0DE` |
//! | 4 | 4 | format `0x00010001` |
//! | 8 | 40 | reader-table mutex (process-shared, robust) |
//! | 48 | 8 | last committed txnid |
//! | 56 | 4 | numreaders (high-water mark) |
//! | 64 | 40 | writer mutex, padded to 128 |
//! | 128 + 64*i | 64 | reader slot i: txnid @0, pid @8, tid @16 |
//!
//! Protocol: byte 0 is locked exclusively by the process that initialises
//! the file and shared by every process that has it open; each process that
//! reads locks the byte at offset = its pid, which is how the stale-reader
//! check tells live processes from dead ones. These are POSIX record locks
//! (per process): closing *any* descriptor of the lock file drops them, so
//! the file is opened exactly once per process: every `Env` on it shares one
//! [`LockFile`] through the [`Registry`], keyed by device and inode.
//!
//! Without a lock file (NO_LOCK) the same table lives in private memory
//! ([`LockFile::in_memory`]), so the readers of this process still hold back
//! the pages they can see.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::{Error, ErrorKind, Result};

/// Lock file magic number.
const MAGIC: u32 = 0xBEEF_C0DE;
/// Lock format: version 1 plus bit 16 ("pid locks in use").
const FORMAT: u32 = 0x0001_0001;
/// The most reader slots a lock file is created with (Linux's
/// `PID_MAX_LIMIT`: no more threads can exist at once), a 256 MiB table.
/// LMDB has no bound: `maxreaders=4294967295` asks for a 256 GiB file.
/// Lock files made larger by other programs are still opened as they are.
pub const MAX_READERS: u32 = 1 << 22;
/// Reader slots are cache-line sized.
const CACHELINE: usize = 64;
/// Size of glibc's `pthread_mutex_t` on this target (40 on x86-64).
const MUTEX_SIZE: usize = std::mem::size_of::<libc::pthread_mutex_t>();

const fn align_up(n: usize, a: usize) -> usize {
    (n + a - 1) & !(a - 1)
}

const OFF_MAGIC: usize = 0;
const OFF_FORMAT: usize = 4;
const OFF_RMUTEX: usize = 8;
const OFF_TXNID: usize = align_up(OFF_RMUTEX + MUTEX_SIZE, 8);
const OFF_NUMREADERS: usize = OFF_TXNID + 8;
const OFF_WMUTEX: usize = align_up(OFF_NUMREADERS + 4, CACHELINE);
/// Start of the reader table.
const HEADER: usize = OFF_WMUTEX + align_up(MUTEX_SIZE, CACHELINE);
const SLOT_SIZE: usize = CACHELINE;
const SLOT_TXNID: usize = 0;
const SLOT_PID: usize = 8;
const SLOT_TID: usize = 16;

/// Slot txnid meaning "owned but no snapshot".
const IDLE: u64 = u64::MAX;

/// One reader slot as [`Env::readers`](crate::Env::readers) lists it.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let env = mdb::Env::open(dir.path())?;
/// let r = env.read_txn()?;
/// let me = env.readers()[0];
/// assert_eq!(me.pid, std::process::id());
/// assert_eq!(me.txnid, Some(0)); // reading the empty snapshot
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderInfo {
    /// Process id of the slot's owner.
    pub pid: u32,
    /// Thread id (`pthread_t`) of the owner.
    pub tid: u64,
    /// Snapshot txnid being read; `None` when the slot is idle.
    pub txnid: Option<u64>,
}

/// A `MAP_SHARED` mapping of the lock file, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(fd: libc::c_int, len: usize) -> Result<Mapping> {
        // SAFETY: a fresh shared mapping of `len` bytes of an open fd; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os());
        }
        Ok(Mapping {
            ptr: p.cast::<u8>(),
            len,
        })
    }

    /// `len` bytes of zeroed private memory.
    fn anonymous(len: usize) -> Result<Mapping> {
        // SAFETY: a fresh private anonymous mapping; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os());
        }
        Ok(Mapping {
            ptr: p.cast::<u8>(),
            len,
        })
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        assert!(off & 3 == 0 && off + 4 <= self.len);
        // SAFETY: in bounds, 4-aligned (the map is page-aligned), lives as long as `self`;
        // AtomicU32 has the layout of u32 and other processes access it as an aligned word.
        unsafe { &*self.ptr.add(off).cast::<AtomicU32>() }
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        assert!(off & 7 == 0 && off + 8 <= self.len);
        // SAFETY: as for `u32_at`, with 8-byte alignment.
        unsafe { &*self.ptr.add(off).cast::<AtomicU64>() }
    }

    fn mutex(&self, off: usize) -> *mut libc::pthread_mutex_t {
        assert!(off & 7 == 0 && off + MUTEX_SIZE <= self.len);
        // SAFETY: in bounds of the mapping (checked above).
        unsafe { self.ptr.add(off).cast::<libc::pthread_mutex_t>() }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` came from a successful mmap and nothing borrows it any more.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// Apply an fcntl record lock command on `len = 1` byte at `offset`.
/// Returns the (possibly updated, for F_GETLK) lock description, or the errno.
fn byte_lock(
    fd: libc::c_int,
    cmd: libc::c_int,
    ty: libc::c_int,
    offset: u64,
) -> std::result::Result<libc::flock, i32> {
    // SAFETY: flock is a plain C struct; all-zero is a valid value.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = ty as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = offset as libc::off_t;
    fl.l_len = 1;
    loop {
        // SAFETY: fcntl with a record-lock command and a valid pointer to a flock struct.
        let rc = unsafe { libc::fcntl(fd, cmd, &mut fl as *mut libc::flock) };
        if rc != -1 {
            return Ok(fl);
        }
        let e = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// How often an opener that finds the lock file half made lets go of it
/// and tries again (see [`take_byte0`]).
const ABANDONED_TRIES: u32 = 40;

/// Lock byte 0 of the lock file `file`: exclusively when no process has
/// it (`true`: this process initialises it), else shared once whoever
/// initialises it is done (`false`).
///
/// An opener killed while it initialises the file (SIGKILL between cutting
/// it to 0 and storing [`MAGIC`]) leaves it half made, and those that
/// waited for it get the shared lock on a table nobody will finish (LMDB
/// then fails with `MDB_INVALID`). Holding the shared lock, no one is
/// initialising it: they let go and try again, so that one of them,
/// alone, makes it anew. A table still half made after
/// [`ABANDONED_TRIES`] (another live process holds that file) is left to
/// the caller to refuse.
fn take_byte0(file: &File) -> Result<bool> {
    let fd = file.as_raw_fd();
    let mut tries = 0;
    loop {
        match byte_lock(fd, libc::F_SETLK, libc::F_WRLCK, 0) {
            Ok(_) => return Ok(true),
            Err(e) if e == libc::EAGAIN || e == libc::EACCES => {}
            Err(e) => return Err(ErrorKind::Os(e).into()),
        }
        byte_lock(fd, libc::F_SETLKW, libc::F_RDLCK, 0).map_err(ErrorKind::Os)?;
        if tries >= ABANDONED_TRIES || initialised(file)? {
            return Ok(false);
        }
        // Others waiting hold it shared too: all let go, one gets it first.
        byte_lock(fd, libc::F_SETLK, libc::F_UNLCK, 0).map_err(ErrorKind::Os)?;
        std::thread::sleep(std::time::Duration::from_millis(1 + u64::from(tries % 8)));
        tries += 1;
    }
}

/// Whether the lock file `file` holds a whole header with [`MAGIC`] (its
/// initialiser finished).
fn initialised(file: &File) -> Result<bool> {
    use std::os::unix::fs::FileExt;
    if file.metadata()?.len() < HEADER as u64 {
        return Ok(false);
    }
    let mut b = [0u8; 4];
    file.read_exact_at(&mut b, OFF_MAGIC as u64)?;
    Ok(u32::from_ne_bytes(b) == MAGIC)
}

fn getpid() -> u32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() as u32 }
}

fn current_tid() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// Initialise a process-shared robust mutex in place (the bytes are zeroed first).
fn init_mutex(m: *mut libc::pthread_mutex_t) -> Result<()> {
    // SAFETY: attr is initialised by pthread_mutexattr_init before use and destroyed after;
    // `m` points to MUTEX_SIZE writable bytes of the mapping that nobody else uses yet
    // (we hold the exclusive byte-0 lock).
    unsafe {
        std::ptr::write_bytes(m.cast::<u8>(), 0, MUTEX_SIZE);
        let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
        let mut rc = libc::pthread_mutexattr_init(&mut attr);
        if rc != 0 {
            return Err(ErrorKind::Os(rc).into());
        }
        rc = libc::pthread_mutexattr_setpshared(&mut attr, libc::PTHREAD_PROCESS_SHARED);
        if rc == 0 {
            rc = libc::pthread_mutexattr_setrobust(&mut attr, libc::PTHREAD_MUTEX_ROBUST);
        }
        if rc == 0 {
            rc = libc::pthread_mutex_init(m, &attr);
        }
        libc::pthread_mutexattr_destroy(&mut attr);
        if rc != 0 {
            return Err(ErrorKind::Os(rc).into());
        }
    }
    Ok(())
}

/// Give `file` (whose byte 0 we hold exclusively, so no process has it
/// mapped) `len` bytes of zeros, allocated on disk. Cutting it to 0 first
/// wipes the slots of dead processes without touching each page; allocating
/// makes a full file system fail here with ENOSPC, where a sparse file would
/// raise SIGBUS at the first write through the map into a hole.
fn allocate_zeroed(file: &File, len: u64) -> Result<()> {
    file.set_len(0)?;
    let fd = file.as_raw_fd();
    // SAFETY: posix_fallocate on an open descriptor; no memory is passed.
    let rc = unsafe { libc::posix_fallocate(fd, 0, len as libc::off_t) };
    let rc = match rc {
        // No fallocate on this file system (and a libc without glibc's
        // emulation): write the zeros.
        libc::EOPNOTSUPP => write_zeros(file, len),
        0 => Ok(()),
        e => Err(ErrorKind::Os(e).into()),
    };
    if rc.is_err() {
        // Leave no half-allocated table behind; the error is what matters.
        let _ = file.set_len(0);
    }
    rc
}

/// Write `len` zero bytes at the start of `file`.
fn write_zeros(file: &File, len: u64) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let zeros = [0u8; 1 << 16];
    let mut off = 0;
    while off < len {
        let n = (len - off).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], off)?;
        off += n as u64;
    }
    Ok(())
}

/// Open (or create with `mode`) the lock file at `path`, read-write.
fn open_file(path: &Path, mode: u32) -> Result<File> {
    Ok(std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(mode)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)?)
}

/// What a [`Registry`] entry is: a lock file, or the in-memory table of the
/// NO_LOCK environment with that data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LockKey {
    File(u64, u64),
    Memory(u64, u64),
}

/// The lock tables in use in this process, by device and inode, so that
/// every `Env` on one environment shares one [`LockFile`]. Entries carry the
/// pid: a forked child holds none of the parent's fcntl locks, so it opens
/// the lock file afresh.
pub(crate) struct Registry(Vec<(u32, LockKey, Weak<LockFile>)>);

static REGISTRY: Mutex<Registry> = Mutex::new(Registry(Vec::new()));

/// The registry, locked. Hold it until the new `Env`'s lock has had its
/// [`LockFile::finish_open`], so that no other `Env` uses it before.
pub(crate) fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    fn find(&mut self, key: LockKey) -> Option<Arc<LockFile>> {
        let me = getpid();
        self.0
            .retain(|(pid, _, l)| *pid == me && l.strong_count() > 0);
        self.0
            .iter()
            .find(|(_, k, _)| *k == key)
            .and_then(|(_, _, l)| l.upgrade())
    }

    fn insert(&mut self, key: LockKey, l: LockFile) -> Arc<LockFile> {
        let l = Arc::new(l);
        self.0.push((getpid(), key, Arc::downgrade(&l)));
        l
    }

    /// The lock file at `path`: the one this process has open already, or
    /// opened (and initialised, if no process had it) now.
    pub fn lock_file(&mut self, path: &Path, max_readers: u32, mode: u32) -> Result<Arc<LockFile>> {
        // Look first by path: opening and closing a second descriptor of a
        // lock file we hold would drop our locks on it.
        if let Ok(m) = std::fs::metadata(path) {
            if let Some(l) = self.find(LockKey::File(m.dev(), m.ino())) {
                return Ok(l);
            }
        }
        let file = open_file(path, mode)?;
        let m = file.metadata()?;
        let key = LockKey::File(m.dev(), m.ino());
        if let Some(l) = self.find(key) {
            // The path was switched to a file we hold between the two looks:
            // this descriptor must stay open for our locks to stay.
            std::mem::forget(file);
            return Ok(l);
        }
        Ok(self.insert(key, LockFile::from_file(file, max_readers)?))
    }

    /// The in-memory table of the NO_LOCK environment whose data file is `data`.
    pub fn in_memory(&mut self, data: &File, max_readers: u32) -> Result<Arc<LockFile>> {
        let m = data.metadata()?;
        let key = LockKey::Memory(m.dev(), m.ino());
        if let Some(l) = self.find(key) {
            return Ok(l);
        }
        Ok(self.insert(key, LockFile::in_memory(max_readers)?))
    }
}

/// Holds the reader-table mutex; unlocks on drop.
struct ReaderGuard<'a> {
    lock: &'a LockFile,
}

impl Drop for ReaderGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: this guard exists only while we own the reader mutex.
        unsafe {
            libc::pthread_mutex_unlock(self.lock.rmutex());
        }
    }
}

/// An open lock file: the shared reader table and writer mutex of an environment.
pub(crate) struct LockFile {
    map: Mapping,
    /// The one descriptor of the lock file in this process; closing it drops our fcntl
    /// locks. `None` for the in-memory table of NO_LOCK.
    file: Option<File>,
    max_readers: u32,
    first: bool,
    /// Still holding the exclusive byte-0 lock (first opener before `finish_open`).
    exclusive: AtomicBool,
    /// Pid for which the pid-offset byte lock is held (0 = not yet). A forked child differs.
    pid_locked: AtomicU32,
    /// Pid of this process while one of its threads owns the writer mutex (0 = none).
    writer_pid: AtomicU32,
    /// That thread (`pthread_self`), so that it gets an error, not a deadlock, if it
    /// asks again (through another `Env` of the same environment, or a copy).
    writer_tid: AtomicU64,
    /// Open `Env`s of this process using this table.
    pub(crate) handles: AtomicUsize,
}

// SAFETY: the raw pointer refers to a shared mapping owned by the LockFile; every field
// in it that is accessed concurrently goes through atomics or the process-shared mutexes.
unsafe impl Send for LockFile {}
// SAFETY: see `Send`; `&LockFile` methods only touch the map through atomics/mutexes.
unsafe impl Sync for LockFile {}

impl LockFile {
    /// Open or create the lock file at `path` with `mode` (e.g. 0o664). `max_readers` is used only when
    /// this process initialises the file. Returns the LockFile; `is_first()` tells whether we initialised it
    /// (and still hold the exclusive byte-0 lock until `finish_open`).
    #[cfg(test)]
    pub fn open(path: &Path, max_readers: u32, mode: u32) -> Result<LockFile> {
        LockFile::from_file(open_file(path, mode)?, max_readers)
    }

    /// Take over `file` (just opened, and the only descriptor of it in this process).
    fn from_file(file: File, max_readers: u32) -> Result<LockFile> {
        let fd = file.as_raw_fd();
        let first = take_byte0(&file)?;
        let (len, max_readers) = if first {
            let len = HEADER + SLOT_SIZE * max_readers as usize;
            allocate_zeroed(&file, len as u64)?;
            (len, max_readers)
        } else {
            let flen = file.metadata()?.len();
            if flen < HEADER as u64 || flen > isize::MAX as u64 {
                return Err(ErrorKind::Invalid.into());
            }
            let n = ((flen as usize - HEADER) / SLOT_SIZE).min(u32::MAX as usize);
            (flen as usize, n as u32)
        };
        let map = Mapping::new(fd, len)?;
        if first {
            // The file is all zeros (`allocate_zeroed`): an empty table, txnid 0.
            init_mutex(map.mutex(OFF_RMUTEX))?;
            init_mutex(map.mutex(OFF_WMUTEX))?;
            map.u64_at(OFF_TXNID).store(0, Ordering::Relaxed);
            map.u32_at(OFF_NUMREADERS).store(0, Ordering::Relaxed);
            map.u32_at(OFF_FORMAT).store(FORMAT, Ordering::Relaxed);
            map.u32_at(OFF_MAGIC).store(MAGIC, Ordering::Release);
        } else {
            if map.u32_at(OFF_MAGIC).load(Ordering::Acquire) != MAGIC {
                return Err(ErrorKind::Invalid.into());
            }
            if map.u32_at(OFF_FORMAT).load(Ordering::Acquire) != FORMAT {
                return Err(ErrorKind::VersionMismatch.into());
            }
        }
        Ok(LockFile {
            map,
            file: Some(file),
            max_readers,
            first,
            exclusive: AtomicBool::new(first),
            pid_locked: AtomicU32::new(0),
            writer_pid: AtomicU32::new(0),
            writer_tid: AtomicU64::new(0),
            handles: AtomicUsize::new(0),
        })
    }

    /// The reader table and writer mutex of a NO_LOCK environment, in private memory:
    /// only this process's readers and writers see it.
    pub fn in_memory(max_readers: u32) -> Result<LockFile> {
        let len = HEADER + SLOT_SIZE * max_readers as usize;
        // Fresh anonymous memory is zeroed: an empty table, txnid 0.
        let map = Mapping::anonymous(len)?;
        init_mutex(map.mutex(OFF_RMUTEX))?;
        init_mutex(map.mutex(OFF_WMUTEX))?;
        Ok(LockFile {
            map,
            file: None,
            max_readers,
            first: true,
            exclusive: AtomicBool::new(true),
            pid_locked: AtomicU32::new(0),
            writer_pid: AtomicU32::new(0),
            writer_tid: AtomicU64::new(0),
            handles: AtomicUsize::new(0),
        })
    }

    /// Run `f` if this `Env` is the only user of the environment, in this
    /// process and in every other (none holds the lock file's byte 0),
    /// holding byte 0 exclusively meanwhile so that no process opens it;
    /// `None` otherwise. (LMDB processes hold byte 0 shared while open,
    /// as ours do.)
    pub(crate) fn alone<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        if self.handles.load(Ordering::Acquire) != 1 {
            return None;
        }
        let Some(file) = &self.file else {
            // NO_LOCK: the caller vouched that no other process uses it.
            return Some(f());
        };
        let fd = file.as_raw_fd();
        byte_lock(fd, libc::F_SETLK, libc::F_WRLCK, 0).ok()?;
        let r = f();
        // Back to shared, as held while open (a downgrade cannot wait).
        let _ = byte_lock(fd, libc::F_SETLK, libc::F_RDLCK, 0);
        Some(r)
    }

    /// Whether this process initialised the lock file.
    #[cfg(test)]
    pub fn is_first(&self) -> bool {
        self.first
    }

    /// Whether this process opens the environment alone: it initialised
    /// the lock file and still holds it exclusively (before `finish_open`).
    pub(crate) fn opening_alone(&self) -> bool {
        self.first && self.exclusive.load(Ordering::Acquire)
    }

    /// Called after the data file was read: if we are the first opener, store `txnid` and downgrade byte 0 to shared.
    pub fn finish_open(&self, txnid: u64) -> Result<()> {
        if self.first && self.exclusive.swap(false, Ordering::AcqRel) {
            self.set_txnid(txnid);
            let Some(file) = &self.file else {
                return Ok(());
            };
            if let Err(e) = byte_lock(file.as_raw_fd(), libc::F_SETLK, libc::F_RDLCK, 0) {
                self.exclusive.store(true, Ordering::Release);
                return Err(ErrorKind::Os(e).into());
            }
        }
        Ok(())
    }

    /// Last committed txnid as published in the lock file.
    ///
    /// Loaded with SeqCst (stronger than Acquire) so a reader's "publish slot txnid,
    /// then re-read txnid" check cannot have its re-read moved before the store.
    pub fn txnid(&self) -> u64 {
        self.map.u64_at(OFF_TXNID).load(Ordering::SeqCst)
    }

    /// Publish the last committed txnid.
    pub fn set_txnid(&self, txnid: u64) {
        self.map.u64_at(OFF_TXNID).store(txnid, Ordering::Release)
    }

    fn rmutex(&self) -> *mut libc::pthread_mutex_t {
        self.map.mutex(OFF_RMUTEX)
    }

    fn wmutex(&self) -> *mut libc::pthread_mutex_t {
        self.map.mutex(OFF_WMUTEX)
    }

    /// Lock the writer mutex (blocks). Ok(true) if the previous owner died holding it (caller must
    /// reset txnid from the newest meta).
    pub fn lock_writer(&self) -> Result<bool> {
        let me = getpid();
        let tid = current_tid();
        // Only the owner itself can see both of its own values here.
        if self.writer_pid.load(Ordering::Relaxed) == me
            && self.writer_tid.load(Ordering::Relaxed) == tid
        {
            return Err(ErrorKind::BadTxn.into());
        }
        // SAFETY: the writer mutex was initialised as process-shared and robust by the first opener.
        let rc = unsafe { libc::pthread_mutex_lock(self.wmutex()) };
        match rc {
            0 => {
                self.writer_tid.store(tid, Ordering::Relaxed);
                self.writer_pid.store(me, Ordering::Relaxed);
                Ok(false)
            }
            libc::EOWNERDEAD => {
                // We own the mutex now, in the inconsistent state. A dead owner from our own
                // process means one of our write transactions vanished: the env is unusable.
                let own = self.writer_pid.load(Ordering::Relaxed) == me;
                let _ = self.reader_check();
                // SAFETY: we own the mutex and it is robust and inconsistent.
                let rc2 = unsafe { libc::pthread_mutex_consistent(self.wmutex()) };
                if own || rc2 != 0 {
                    self.writer_pid.store(0, Ordering::Relaxed);
                    // SAFETY: we own the mutex.
                    unsafe { libc::pthread_mutex_unlock(self.wmutex()) };
                    return Err(if own {
                        ErrorKind::Panic
                    } else {
                        ErrorKind::Os(rc2)
                    }
                    .into());
                }
                self.writer_tid.store(tid, Ordering::Relaxed);
                self.writer_pid.store(me, Ordering::Relaxed);
                Ok(true)
            }
            e => Err(ErrorKind::Os(e).into()),
        }
    }

    /// Whether the calling thread holds the writer mutex.
    pub(crate) fn writer_is_this_thread(&self) -> bool {
        self.writer_pid.load(Ordering::Relaxed) == getpid()
            && self.writer_tid.load(Ordering::Relaxed) == current_tid()
    }

    /// Unlock the writer mutex (must be called by the thread that locked it).
    pub fn unlock_writer(&self) {
        self.writer_pid.store(0, Ordering::Relaxed);
        self.writer_tid.store(0, Ordering::Relaxed);
        // SAFETY: the caller owns the writer mutex (pthread rejects anything else with EPERM).
        unsafe {
            libc::pthread_mutex_unlock(self.wmutex());
        }
    }

    /// Lock the reader-table mutex; on a dead previous owner run the stale-reader check
    /// and mark it consistent. Returns the guard and how many stale slots that check cleared.
    fn lock_readers(&self) -> Result<(ReaderGuard<'_>, usize)> {
        // SAFETY: the reader mutex was initialised as process-shared and robust by the first opener.
        let rc = unsafe { libc::pthread_mutex_lock(self.rmutex()) };
        match rc {
            0 => Ok((ReaderGuard { lock: self }, 0)),
            libc::EOWNERDEAD => {
                let guard = ReaderGuard { lock: self };
                let cleared = self.check_locked().unwrap_or(0);
                // SAFETY: we own the mutex and it is robust and inconsistent.
                let rc2 = unsafe { libc::pthread_mutex_consistent(self.rmutex()) };
                if rc2 != 0 {
                    return Err(ErrorKind::Os(rc2).into());
                }
                Ok((guard, cleared))
            }
            e => Err(ErrorKind::Os(e).into()),
        }
    }

    /// Take the byte lock at offset = our pid, once per process, before using any slot.
    fn ensure_pid_lock(&self) -> Result<()> {
        let me = getpid();
        let Some(file) = &self.file else {
            return Ok(());
        };
        if self.pid_locked.load(Ordering::Acquire) == me {
            return Ok(());
        }
        byte_lock(
            file.as_raw_fd(),
            libc::F_SETLK,
            libc::F_WRLCK,
            u64::from(me),
        )
        .map_err(ErrorKind::Os)?;
        self.pid_locked.store(me, Ordering::Release);
        Ok(())
    }

    /// Number of slots that may be in use: numreaders, clamped to the table size.
    fn nr(&self) -> usize {
        let n = self.map.u32_at(OFF_NUMREADERS).load(Ordering::Acquire);
        n.min(self.max_readers) as usize
    }

    fn slot_off(&self, slot: usize) -> usize {
        assert!(slot < self.max_readers as usize, "reader slot out of range");
        HEADER + slot * SLOT_SIZE
    }

    fn slot_txnid(&self, slot: usize) -> &AtomicU64 {
        self.map.u64_at(self.slot_off(slot) + SLOT_TXNID)
    }

    fn slot_pid(&self, slot: usize) -> &AtomicU32 {
        self.map.u32_at(self.slot_off(slot) + SLOT_PID)
    }

    fn slot_tid(&self, slot: usize) -> &AtomicU64 {
        self.map.u64_at(self.slot_off(slot) + SLOT_TID)
    }

    /// Take a free reader slot (first with pid 0 below numreaders, else append and bump numreaders),
    /// writing txnid=u64::MAX, tid (pthread_self), then pid, under the reader mutex. Err(ReadersFull) if none.
    pub fn acquire_slot(&self) -> Result<usize> {
        self.ensure_pid_lock()?;
        let me = getpid();
        let tid = current_tid();
        let (_guard, _) = self.lock_readers()?;
        let nr = self.nr();
        let slot = match (0..nr).find(|&i| self.slot_pid(i).load(Ordering::Acquire) == 0) {
            Some(i) => i,
            None if nr < self.max_readers as usize => nr,
            None => return Err(ErrorKind::ReadersFull.into()),
        };
        // Reset the slot, publish it in numreaders, and claim it by writing the pid last.
        self.slot_pid(slot).store(0, Ordering::SeqCst);
        self.slot_txnid(slot).store(IDLE, Ordering::SeqCst);
        self.slot_tid(slot).store(tid, Ordering::Relaxed);
        if slot == nr {
            self.map
                .u32_at(OFF_NUMREADERS)
                .store(nr as u32 + 1, Ordering::Release);
        }
        self.slot_pid(slot).store(me, Ordering::SeqCst);
        Ok(slot)
    }

    /// Publish the snapshot txnid of a slot (u64::MAX = idle).
    pub fn set_slot_txnid(&self, slot: usize, txnid: u64) {
        self.slot_txnid(slot).store(txnid, Ordering::SeqCst)
    }

    /// Record the thread that owns a slot.
    #[cfg(test)]
    pub fn set_slot_tid(&self, slot: usize, tid: u64) {
        self.slot_tid(slot).store(tid, Ordering::Release)
    }

    /// Give a slot back: txnid=MAX, pid=0.
    pub fn release_slot(&self, slot: usize) {
        self.slot_txnid(slot).store(IDLE, Ordering::SeqCst);
        self.slot_pid(slot).store(0, Ordering::Release);
    }

    /// min(last, txnid of every slot with pid != 0) — idle slots hold u64::MAX.
    pub fn oldest_reader(&self, last: u64) -> u64 {
        let mut oldest = last;
        for i in 0..self.nr() {
            if self.slot_pid(i).load(Ordering::SeqCst) != 0 {
                oldest = oldest.min(self.slot_txnid(i).load(Ordering::SeqCst));
            }
        }
        oldest
    }

    /// Capacity of the reader table.
    pub fn max_readers(&self) -> u32 {
        self.max_readers
    }

    /// High-water mark of used slots (the numreaders field).
    pub fn num_readers(&self) -> u32 {
        self.nr() as u32
    }

    /// Slots with pid != 0 below numreaders, in slot order.
    pub fn readers(&self) -> Vec<ReaderInfo> {
        (0..self.nr())
            .filter_map(|i| {
                let pid = self.slot_pid(i).load(Ordering::Acquire);
                if pid == 0 {
                    return None;
                }
                let t = self.slot_txnid(i).load(Ordering::Acquire);
                Some(ReaderInfo {
                    pid,
                    tid: self.slot_tid(i).load(Ordering::Acquire),
                    txnid: (t != IDLE).then_some(t),
                })
            })
            .collect()
    }

    /// Whether process `pid` holds its pid-offset byte lock (i.e. is alive and uses the env).
    fn pid_alive(&self, pid: u32) -> Result<bool> {
        let Some(file) = &self.file else {
            // In private memory every slot is this process's.
            return Ok(true);
        };
        let fl = byte_lock(
            file.as_raw_fd(),
            libc::F_GETLK,
            libc::F_WRLCK,
            u64::from(pid),
        )
        .map_err(ErrorKind::Os)?;
        Ok(fl.l_type != libc::F_UNLCK as libc::c_short)
    }

    /// The stale-reader check proper; the caller holds the reader mutex.
    fn check_locked(&self) -> Result<usize> {
        let me = getpid();
        let nr = self.nr();
        let mut seen: Vec<u32> = Vec::new();
        let mut cleared = 0;
        for i in 0..nr {
            let pid = self.slot_pid(i).load(Ordering::Acquire);
            if pid == 0 || pid == me || seen.contains(&pid) {
                continue;
            }
            seen.push(pid);
            if self.pid_alive(pid)? {
                continue;
            }
            for j in i..nr {
                if self.slot_pid(j).load(Ordering::Acquire) == pid {
                    self.release_slot(j);
                    cleared += 1;
                }
            }
        }
        Ok(cleared)
    }

    /// Clear slots of dead processes (other than ours); returns how many slots were cleared.
    pub fn reader_check(&self) -> Result<usize> {
        let (_guard, recovered) = self.lock_readers()?;
        Ok(recovered + self.check_locked()?)
    }

    /// Format exactly as mdb_reader_list's lines (c-api.md §10) into a String:
    /// "(no active readers)\n" or header "    pid     thread     txnid\n" + "%10d %zx %zu\n" / "%10d %zx -\n" lines.
    pub fn reader_list_text(&self) -> String {
        let readers = self.readers();
        if readers.is_empty() {
            return "(no active readers)\n".to_string();
        }
        let mut s = String::from("    pid     thread     txnid\n");
        for r in readers {
            match r.txnid {
                Some(t) => s.push_str(&format!("{:10} {:x} {}\n", r.pid as i32, r.tid, t)),
                None => s.push_str(&format!("{:10} {:x} -\n", r.pid as i32, r.tid)),
            }
        }
        s
    }

    /// Raw bytes of the mapping (tests only; not synchronised).
    #[cfg(test)]
    fn raw(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes alive as long as `self`; tests read it
        // while no other thread writes.
        unsafe { std::slice::from_raw_parts(self.map.ptr, self.map.len) }
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        // Release this process's slots; the mapping is unmapped and the descriptor closed
        // (dropping our fcntl locks) by the fields' own drops.
        let me = getpid();
        for i in 0..self.nr() {
            if self.slot_pid(i).load(Ordering::Acquire) == me {
                self.release_slot(i);
            }
        }
    }
}

/// The reader slots owned by the threads of one `Env`. As in LMDB, without
/// NO_TLS a thread takes a slot on its first read transaction and keeps it
/// until it exits or the `Env` closes, whichever comes first.
pub(crate) struct ThreadSlots {
    lock: Arc<LockFile>,
    pub(crate) held: Mutex<Vec<usize>>,
}

impl ThreadSlots {
    pub(crate) fn new(lock: Arc<LockFile>) -> ThreadSlots {
        ThreadSlots {
            lock,
            held: Mutex::new(Vec::new()),
        }
    }

    /// Free `slot` unless the `Env` closed (and freed it) already.
    pub(crate) fn release(&self, slot: usize) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = held.iter().position(|&s| s == slot) {
            held.swap_remove(i);
            self.lock.release_slot(slot);
        }
    }

    /// Free every slot (the `Env` closes).
    pub(crate) fn release_all(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        for s in held.drain(..) {
            self.lock.release_slot(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    fn lock_path(dir: &tempfile::TempDir) -> PathBuf {
        dir.path().join("lock.mdb")
    }

    /// Run `f` in a forked child and return its exit code. The child never returns.
    fn in_child(f: impl FnOnce() -> i32) -> i32 {
        // SAFETY: fork in a test; the child only runs `f` and then `_exit`s without
        // running destructors or atexit handlers.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(101);
            // SAFETY: terminate the child immediately.
            unsafe { libc::_exit(code) };
        }
        wait_child(pid)
    }

    fn wait_child(pid: libc::pid_t) -> i32 {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(rc, pid);
        assert!(libc::WIFEXITED(status), "child did not exit normally");
        libc::WEXITSTATUS(status)
    }

    fn u32_le(b: &[u8], off: usize) -> u32 {
        u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
    }

    fn u64_le(b: &[u8], off: usize) -> u64 {
        u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
    }

    #[test]
    #[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
    fn layout_constants_match_lmdb_x86_64() {
        assert_eq!(MUTEX_SIZE, 40);
        assert_eq!(OFF_TXNID, 48);
        assert_eq!(OFF_NUMREADERS, 56);
        assert_eq!(OFF_WMUTEX, 64);
        assert_eq!(HEADER, 128);
    }

    #[test]
    fn init_layout() {
        let dir = tempfile::tempdir().unwrap();
        let p = lock_path(&dir);
        let l = LockFile::open(&p, 126, 0o664).unwrap();
        assert!(l.is_first());
        assert_eq!(l.max_readers(), 126);
        assert_eq!(l.num_readers(), 0);
        l.finish_open(7).unwrap();
        assert_eq!(l.txnid(), 7);
        {
            let b = l.raw();
            assert_eq!(b.len(), HEADER + 126 * 64);
            assert_eq!(u32_le(b, 0), 0xBEEF_C0DE);
            assert_eq!(u32_le(b, 4), 0x0001_0001);
            assert_eq!(u64_le(b, OFF_TXNID), 7);
            assert_eq!(u32_le(b, OFF_NUMREADERS), 0);
            #[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
            {
                assert_eq!(b.len(), 8192);
                // glibc kind word: robust | pshared.
                assert_eq!(u32_le(b, 8 + 16), 0x90);
                assert_eq!(u32_le(b, 64 + 16), 0x90);
            }
        }
        drop(l);
        // Only now may the file be opened a second time (closing any fd drops our locks).
        let b = std::fs::read(&p).unwrap();
        assert_eq!(b.len(), HEADER + 126 * 64);
        assert_eq!(&b[0..8], &[0xde, 0xc0, 0xef, 0xbe, 0x01, 0x00, 0x01, 0x00]);

        let dir2 = tempfile::tempdir().unwrap();
        let p2 = lock_path(&dir2);
        let l2 = LockFile::open(&p2, 10, 0o600).unwrap();
        l2.finish_open(0).unwrap();
        assert_eq!(std::fs::metadata(&p2).unwrap().len(), HEADER as u64 + 640);
    }

    /// Run `f` in a forked child with a 64 KiB tmpfs mounted on `dir` (in a
    /// mount namespace of its own; a user namespace too when not root) and
    /// return its exit code; 90-95 mean the namespace could not be set up.
    fn on_tiny_fs(dir: &Path, f: impl FnOnce() -> i32) -> i32 {
        use std::ffi::CString;
        let target = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
        in_child(move || {
            // SAFETY: plain syscalls in a single-threaded forked child, with
            // NUL-terminated strings that outlive the calls.
            unsafe {
                let (uid, gid) = (libc::geteuid(), libc::getegid());
                let userns = if uid == 0 { 0 } else { libc::CLONE_NEWUSER };
                if libc::unshare(libc::CLONE_NEWNS | userns) != 0 {
                    return 90;
                }
                if userns != 0 {
                    let maps = [
                        ("/proc/self/setgroups", "deny".to_string()),
                        ("/proc/self/uid_map", format!("0 {uid} 1")),
                        ("/proc/self/gid_map", format!("0 {gid} 1")),
                    ];
                    for (file, text) in maps {
                        if std::fs::write(file, text).is_err() {
                            return 91;
                        }
                    }
                }
                let root = c"/".as_ptr();
                let none = std::ptr::null();
                // Keep the mount out of the parent's namespace.
                if libc::mount(
                    none,
                    root,
                    none,
                    libc::MS_REC | libc::MS_PRIVATE,
                    none.cast(),
                ) != 0
                {
                    return 92;
                }
                let opts = c"size=64k";
                let tmpfs = c"tmpfs".as_ptr();
                if libc::mount(tmpfs, target.as_ptr(), tmpfs, 0, opts.as_ptr().cast()) != 0 {
                    return 93;
                }
            }
            f()
        })
    }

    #[test]
    fn full_file_system_gives_enospc_not_sigbus() {
        let dir = tempfile::tempdir().unwrap();
        let p = lock_path(&dir);
        let code = on_tiny_fs(dir.path(), || {
            // 100000 slots (6.4 MB) do not fit; before the file was
            // allocated, zeroing it through the map raised SIGBUS.
            match LockFile::open(&p, 100_000, 0o664) {
                Err(e) if e == ErrorKind::Os(libc::ENOSPC) => {}
                Err(_) => return 2,
                Ok(_) => return 3,
            }
            // Nothing half-made is left, and a table that fits still opens.
            if std::fs::metadata(&p).map(|m| m.len()).ok() != Some(0) {
                return 4;
            }
            match LockFile::open(&p, 126, 0o664) {
                Ok(l) if l.is_first() && l.max_readers() == 126 => 0,
                _ => 5,
            }
        });
        assert_eq!(
            code, 0,
            "90-93: no mount namespace with a tmpfs could be set up"
        );
    }

    #[test]
    fn first_opener_reinitialises_stale_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = lock_path(&dir);
        {
            let l = LockFile::open(&p, 4, 0o664).unwrap();
            l.finish_open(9).unwrap();
            // A child takes a slot and dies without releasing it.
            let code = in_child(|| match l.acquire_slot() {
                Ok(s) => {
                    l.set_slot_txnid(s, 9);
                    0
                }
                Err(_) => 1,
            });
            assert_eq!(code, 0);
            assert_eq!(l.readers().len(), 1);
        }
        // Nobody holds the file: the next opener is first, re-sizes and wipes the table.
        let l = LockFile::open(&p, 8, 0o664).unwrap();
        assert!(l.is_first());
        assert_eq!(l.max_readers(), 8);
        assert_eq!(l.num_readers(), 0);
        assert_eq!(l.txnid(), 0);
        assert!(l.readers().is_empty());
    }

    /// Whether a process waits for an fcntl lock on the file with inode `ino`.
    fn lock_waiter(ino: u64) -> bool {
        let locks = std::fs::read_to_string("/proc/locks").unwrap();
        let inode = format!(":{ino} ");
        locks
            .lines()
            .any(|l| l.contains("->") && l.contains(&inode))
    }

    #[test]
    fn opener_remakes_a_table_whose_maker_was_killed() {
        // The maker dies after cutting the file, or with the header unwritten.
        for len in [0, HEADER as u64 + SLOT_SIZE as u64] {
            let dir = tempfile::tempdir().unwrap();
            let p = lock_path(&dir);
            let f = open_file(&p, 0o664).unwrap();
            let ino = f.metadata().unwrap().ino();
            let mut pipe = [0; 2];
            // SAFETY: `pipe` has room for the two descriptors.
            assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
            // SAFETY: fork in a test; the child makes only async-signal-safe
            // calls (fcntl, ftruncate, write, pause) until it is killed.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0);
            if pid == 0 {
                let fd = f.as_raw_fd();
                let ok = byte_lock(fd, libc::F_SETLK, libc::F_WRLCK, 0).is_ok()
                    // SAFETY: ftruncate and write on descriptors the child
                    // owns; `pause` waits for the kill, `_exit` ends it.
                    && unsafe { libc::ftruncate(fd, len as libc::off_t) } == 0
                    && unsafe { libc::write(pipe[1], b"x".as_ptr().cast(), 1) } == 1;
                // SAFETY: see above.
                unsafe {
                    if !ok {
                        libc::_exit(1);
                    }
                    loop {
                        libc::pause();
                    }
                }
            }
            let mut b = [0u8; 1];
            // SAFETY: reading one byte into `b`.
            assert_eq!(unsafe { libc::read(pipe[0], b.as_mut_ptr().cast(), 1) }, 1);
            // SAFETY: closing the pipe's descriptors, used no more.
            unsafe {
                libc::close(pipe[0]);
                libc::close(pipe[1]);
            }
            // Our descriptor goes before the opener takes its locks (closing
            // it would drop them).
            drop(f);
            let q = p.clone();
            let opener = std::thread::spawn(move || {
                LockFile::open(&q, 8, 0o664).map(|l| {
                    let made = (l.is_first(), l.max_readers(), l.txnid());
                    l.finish_open(7).unwrap();
                    (made, l.txnid())
                })
            });
            // Kill the maker only once the opener waits for it.
            while !lock_waiter(ino) && !opener.is_finished() {
                std::thread::sleep(Duration::from_millis(1));
            }
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            let got = opener.join().unwrap().map_err(|e| e.kind());
            assert_eq!(got, Ok(((true, 8, 0), 7)), "table cut to {len} bytes");
        }
    }

    #[test]
    fn second_process_waits_and_validates() {
        let dir = tempfile::tempdir().unwrap();
        let p = lock_path(&dir);
        let l = LockFile::open(&p, 20, 0o664).unwrap();
        assert!(l.is_first());
        // SAFETY: fork in a test; the child only opens the lock file and _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let code = match LockFile::open(&p, 999, 0o664) {
                Ok(c) if c.is_first() => 2,
                Ok(c) if c.max_readers() != 20 => 3,
                Ok(c) if c.txnid() != 42 => 4,
                Ok(c) => match c.acquire_slot() {
                    Ok(s) => {
                        c.set_slot_txnid(s, 42);
                        c.release_slot(s);
                        0
                    }
                    Err(_) => 5,
                },
                Err(_) => 6,
            };
            // SAFETY: terminate the child immediately.
            unsafe { libc::_exit(code) };
        }
        // The child blocks on the shared byte-0 lock until we downgrade.
        std::thread::sleep(Duration::from_millis(150));
        l.finish_open(42).unwrap();
        assert_eq!(wait_child(pid), 0);
        assert_eq!(l.num_readers(), 1);
        assert!(l.readers().is_empty());
    }

    #[test]
    fn slots_and_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let l = LockFile::open(&lock_path(&dir), 8, 0o664).unwrap();
        l.finish_open(1).unwrap();
        assert_eq!(l.reader_list_text(), "(no active readers)\n");
        assert_eq!(l.oldest_reader(20), 20);
        let a = l.acquire_slot().unwrap();
        let b = l.acquire_slot().unwrap();
        assert_eq!((a, b), (0, 1));
        assert_eq!(l.num_readers(), 2);
        // Idle slots do not hold anything back.
        assert_eq!(l.oldest_reader(20), 20);
        l.set_slot_txnid(a, 10);
        l.set_slot_txnid(b, 5);
        assert_eq!(l.oldest_reader(20), 5);
        assert_eq!(l.oldest_reader(3), 3);
        let me = getpid();
        let tid = current_tid();
        assert_eq!(
            l.readers(),
            vec![
                ReaderInfo {
                    pid: me,
                    tid,
                    txnid: Some(10)
                },
                ReaderInfo {
                    pid: me,
                    tid,
                    txnid: Some(5)
                },
            ]
        );
        l.set_slot_txnid(a, u64::MAX);
        l.set_slot_tid(a, 0xabc);
        assert_eq!(
            l.reader_list_text(),
            format!("    pid     thread     txnid\n{me:10} abc -\n{me:10} {tid:x} 5\n")
        );
        l.release_slot(b);
        assert_eq!(l.oldest_reader(20), 20);
        assert_eq!(l.num_readers(), 2);
        assert_eq!(l.readers().len(), 1);
        // The freed slot is reused before the table grows.
        assert_eq!(l.acquire_slot().unwrap(), 1);
        assert_eq!(l.num_readers(), 2);
        l.release_slot(a);
        l.release_slot(1);
        assert!(l.readers().is_empty());
    }

    #[test]
    fn readers_full() {
        let dir = tempfile::tempdir().unwrap();
        let l = LockFile::open(&lock_path(&dir), 2, 0o664).unwrap();
        l.finish_open(0).unwrap();
        let a = l.acquire_slot().unwrap();
        let _b = l.acquire_slot().unwrap();
        assert_eq!(
            l.acquire_slot().map_err(|e| e.kind()),
            Err(ErrorKind::ReadersFull)
        );
        l.release_slot(a);
        assert_eq!(l.acquire_slot().unwrap(), a);
        assert_eq!(
            l.acquire_slot().map_err(|e| e.kind()),
            Err(ErrorKind::ReadersFull)
        );
    }

    #[test]
    fn writer_lock_excludes() {
        let dir = tempfile::tempdir().unwrap();
        let l = LockFile::open(&lock_path(&dir), 4, 0o664).unwrap();
        l.finish_open(0).unwrap();
        assert_eq!(l.lock_writer(), Ok(false));
        l.unlock_writer();
        assert_eq!(l.lock_writer(), Ok(false));
        let got = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert_eq!(l.lock_writer(), Ok(false));
                got.store(true, Ordering::SeqCst);
                l.unlock_writer();
            });
            std::thread::sleep(Duration::from_millis(100));
            assert!(!got.load(Ordering::SeqCst));
            l.unlock_writer();
        });
        assert!(got.load(Ordering::SeqCst));
        // Another process is excluded too.
        assert_eq!(l.lock_writer(), Ok(false));
        let code = in_child(|| {
            // SAFETY: test-only probe of the shared writer mutex.
            let rc = unsafe { libc::pthread_mutex_trylock(l.wmutex()) };
            if rc == libc::EBUSY {
                0
            } else {
                1
            }
        });
        assert_eq!(code, 0);
        l.unlock_writer();
    }

    #[test]
    fn writer_owner_death_is_recovered() {
        let dir = tempfile::tempdir().unwrap();
        let l = LockFile::open(&lock_path(&dir), 4, 0o664).unwrap();
        l.finish_open(3).unwrap();
        let code = in_child(|| match l.lock_writer() {
            Ok(false) => {
                l.set_txnid(99);
                0
            }
            _ => 1,
        });
        assert_eq!(code, 0);
        // The child died holding the mutex: we get it, flagged as recovered.
        assert_eq!(l.lock_writer(), Ok(true));
        l.set_txnid(3);
        l.unlock_writer();
        assert_eq!(l.lock_writer(), Ok(false));
        l.unlock_writer();
    }

    #[test]
    fn reader_mutex_owner_death_is_recovered() {
        let dir = tempfile::tempdir().unwrap();
        let l = LockFile::open(&lock_path(&dir), 4, 0o664).unwrap();
        l.finish_open(0).unwrap();
        let code = in_child(|| {
            let s = match l.acquire_slot() {
                Ok(s) => s,
                Err(_) => return 1,
            };
            l.set_slot_txnid(s, 1);
            // SAFETY: test-only: die while holding the shared reader mutex.
            unsafe { libc::pthread_mutex_lock(l.rmutex()) }
        });
        assert_eq!(code, 0);
        assert_eq!(l.readers().len(), 1);
        // Locking the abandoned reader mutex runs the stale check, which frees the child's slot.
        let s = l.acquire_slot().unwrap();
        assert_eq!(s, 0);
        assert_eq!(l.readers().len(), 1);
        assert_eq!(l.readers()[0].pid, getpid());
        assert_eq!(l.reader_check(), Ok(0));
    }

    #[test]
    fn bad_magic_and_format() {
        let dir = tempfile::tempdir().unwrap();
        let p = lock_path(&dir);
        let mut bytes = vec![0u8; HEADER + 64 * 4];
        bytes[0..4].copy_from_slice(&0x1234_5678u32.to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        // Another "process" must hold byte 0 shared, or the opener would simply re-initialise.
        let holder = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        byte_lock(holder.as_raw_fd(), libc::F_SETLK, libc::F_RDLCK, 0).unwrap();
        let probe = |p: &Path| {
            in_child(|| match LockFile::open(p, 4, 0o664).map_err(|e| e.kind()) {
                Err(ErrorKind::Invalid) => 10,
                Err(ErrorKind::VersionMismatch) => 11,
                Err(_) => 12,
                Ok(_) => 13,
            })
        };
        assert_eq!(probe(&p), 10);

        // Right magic, wrong format.
        bytes[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        bytes[4..8].copy_from_slice(&0x0000_0001u32.to_le_bytes());
        let q = dir.path().join("lock2.mdb");
        std::fs::write(&q, &bytes).unwrap();
        let holder2 = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&q)
            .unwrap();
        byte_lock(holder2.as_raw_fd(), libc::F_SETLK, libc::F_RDLCK, 0).unwrap();
        assert_eq!(probe(&q), 11);

        // Too short to hold the header.
        let r = dir.path().join("lock3.mdb");
        std::fs::write(&r, [0u8; 16]).unwrap();
        let holder3 = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&r)
            .unwrap();
        byte_lock(holder3.as_raw_fd(), libc::F_SETLK, libc::F_RDLCK, 0).unwrap();
        assert_eq!(probe(&r), 10);
        drop((holder, holder2, holder3));
    }

    #[test]
    fn reader_check_clears_dead_child() {
        let dir = tempfile::tempdir().unwrap();
        let l = LockFile::open(&lock_path(&dir), 8, 0o664).unwrap();
        l.finish_open(4).unwrap();
        let mine = l.acquire_slot().unwrap();
        l.set_slot_txnid(mine, 4);

        // A live child holding a slot is left alone.
        let mut to_child = [0 as libc::c_int; 2];
        let mut from_child = [0 as libc::c_int; 2];
        // SAFETY: creating two pipes into valid arrays.
        unsafe {
            assert_eq!(libc::pipe(to_child.as_mut_ptr()), 0);
            assert_eq!(libc::pipe(from_child.as_mut_ptr()), 0);
        }
        // SAFETY: fork in a test; the child uses only the lock file, the pipes, and _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let code = match l.acquire_slot() {
                Ok(s) => {
                    l.set_slot_txnid(s, 2);
                    0
                }
                Err(_) => 1,
            };
            let mut b = [code as u8];
            // SAFETY: the pipe fds are valid in the child; 1-byte buffers.
            unsafe {
                libc::write(from_child[1], b.as_ptr().cast(), 1);
                libc::read(to_child[0], b.as_mut_ptr().cast(), 1);
                libc::_exit(code);
            }
        }
        let mut b = [9u8];
        // SAFETY: valid pipe fd and 1-byte buffer.
        unsafe { libc::read(from_child[0], b.as_mut_ptr().cast(), 1) };
        assert_eq!(b[0], 0);
        assert_eq!(l.readers().len(), 2);
        assert_eq!(l.oldest_reader(10), 2);
        assert_eq!(l.reader_check(), Ok(0));
        assert_eq!(l.readers().len(), 2);

        // Once it exits without releasing, its slot is stale and gets cleared.
        // SAFETY: valid pipe fd and 1-byte buffer; then close our pipe ends.
        unsafe {
            libc::write(to_child[1], b.as_ptr().cast(), 1);
        }
        assert_eq!(wait_child(pid), 0);
        for fd in to_child.iter().chain(from_child.iter()) {
            // SAFETY: closing pipe fds we created and no longer use.
            unsafe { libc::close(*fd) };
        }
        assert_eq!(l.readers().len(), 2);
        assert_eq!(l.reader_check(), Ok(1));
        assert_eq!(
            l.readers(),
            vec![ReaderInfo {
                pid: getpid(),
                tid: current_tid(),
                txnid: Some(4)
            }]
        );
        assert_eq!(l.num_readers(), 2);
        assert_eq!(l.oldest_reader(10), 4);

        // A child that exits straight away (the plain case).
        let code = in_child(|| match l.acquire_slot() {
            Ok(s) => {
                l.set_slot_txnid(s, 1);
                0
            }
            Err(_) => 1,
        });
        assert_eq!(code, 0);
        assert_eq!(l.readers().len(), 2);
        assert_eq!(l.reader_check(), Ok(1));
        assert_eq!(l.readers().len(), 1);
    }

    fn run(cmd: &str, args: &[&str], stdin: Option<&str>) -> (i32, String) {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let mut c = Command::new(cmd)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = c.stdin.take().unwrap();
        if let Some(s) = stdin {
            input.write_all(s.as_bytes()).unwrap();
        }
        drop(input);
        let out = c.wait_with_output().unwrap();
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        (out.status.code().unwrap_or(-1), text)
    }

    #[test]
    fn interop_with_lmdb_tools() {
        if !Path::new("/usr/bin/mdb_stat").exists() || !Path::new("/usr/bin/mdb_load").exists() {
            eprintln!("skipping: LMDB tools not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap().to_string();
        let empty = "VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\nDATA=END\n";
        let (rc, out) = run("/usr/bin/mdb_load", &[&d], Some(empty));
        assert_eq!(rc, 0, "mdb_load: {out}");
        let (_, out) = run("/usr/bin/mdb_stat", &["-e", &d], None);
        let last: u64 = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("Last transaction ID: "))
            .expect("mdb_stat -e output")
            .trim()
            .parse()
            .unwrap();

        // From here on LMDB shares our lock file live.
        let l = LockFile::open(&dir.path().join("lock.mdb"), 126, 0o664).unwrap();
        assert!(l.is_first());
        l.finish_open(last).unwrap();
        let s = l.acquire_slot().unwrap();
        l.set_slot_txnid(s, 5);
        let me = getpid();
        let line = format!("{:10} {:x} 5\n", me, current_tid());

        let (_, out) = run("/usr/bin/mdb_stat", &["-r", &d], None);
        assert!(out.contains("    pid     thread     txnid\n"), "{out}");
        assert!(out.contains(&line), "{out}");
        // LMDB's stale-reader check must see our pid lock and leave us alone.
        let (_, out) = run("/usr/bin/mdb_stat", &["-rr", &d], None);
        assert!(out.contains("0 stale readers cleared"), "{out}");
        assert!(out.contains(&line), "{out}");
        assert_eq!(l.readers().len(), 1);

        // An LMDB writer uses our writer mutex and publishes its txnid in our map.
        let one =
            "VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\n 6b6579\n 76616c\nDATA=END\n";
        let (rc, out) = run("/usr/bin/mdb_load", &[&d], Some(one));
        assert_eq!(rc, 0, "mdb_load: {out}");
        assert_eq!(l.txnid(), last + 1);
        assert_eq!(l.lock_writer(), Ok(false));
        l.unlock_writer();

        // A dead child's slot is cleared by LMDB's check too.
        let code = in_child(|| match l.acquire_slot() {
            Ok(s) => {
                l.set_slot_txnid(s, 1);
                0
            }
            Err(_) => 1,
        });
        assert_eq!(code, 0);
        let (_, out) = run("/usr/bin/mdb_stat", &["-rr", &d], None);
        assert!(out.contains("1 stale readers cleared"), "{out}");
        assert_eq!(l.readers().len(), 1);
        assert_eq!(l.num_readers(), 2);
        l.release_slot(s);
        let (_, out) = run("/usr/bin/mdb_stat", &["-r", &d], None);
        assert!(out.contains("(no active readers)"), "{out}");
    }
}
