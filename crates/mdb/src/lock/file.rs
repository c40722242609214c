//! Opening the lock file: the fcntl byte-0 protocol (the first opener
//! makes the table alone, the others wait for it and share byte 0 while
//! open), allocating and initialising the table, and the [`LockFile`] that
//! owns the mapping and the process's one descriptor of it.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::layout::{
    init_mutex, Mapping, FORMAT, HEADER, MAGIC, OFF_FORMAT, OFF_MAGIC, OFF_NUMREADERS, OFF_RMUTEX,
    OFF_TXNID, OFF_WMUTEX, SLOT_SIZE,
};
use crate::error::{ErrorKind, Result};

/// Apply an fcntl record lock command on `len = 1` byte at `offset`.
/// Returns the (possibly updated, for F_GETLK) lock description, or the errno.
pub(super) fn byte_lock(
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
pub(super) fn take_byte0(file: &File) -> Result<bool> {
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
pub(super) fn initialised(file: &File) -> Result<bool> {
    use std::os::unix::fs::FileExt;
    if file.metadata()?.len() < HEADER as u64 {
        return Ok(false);
    }
    let mut b = [0u8; 4];
    file.read_exact_at(&mut b, OFF_MAGIC as u64)?;
    Ok(u32::from_ne_bytes(b) == MAGIC)
}

pub(super) fn getpid() -> u32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() as u32 }
}

pub(super) fn current_tid() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
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
pub(super) fn open_file(path: &Path, mode: u32) -> Result<File> {
    Ok(std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(mode)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)?)
}

/// An open lock file: the shared reader table and writer mutex of an environment.
pub(crate) struct LockFile {
    pub(super) map: Mapping,
    /// The one descriptor of the lock file in this process; closing it drops our fcntl
    /// locks. `None` for the in-memory table of NO_LOCK.
    pub(super) file: Option<File>,
    pub(super) max_readers: u32,
    pub(super) first: bool,
    /// Still holding the exclusive byte-0 lock (first opener before `finish_open`).
    pub(super) exclusive: AtomicBool,
    /// Pid for which the pid-offset byte lock is held (0 = not yet). A forked child differs.
    pub(super) pid_locked: AtomicU32,
    /// Pid of this process while one of its threads owns the writer mutex (0 = none).
    pub(super) writer_pid: AtomicU32,
    /// That thread (`pthread_self`), so that it gets an error, not a deadlock, if it
    /// asks again (through another `Env` of the same environment, or a copy).
    pub(super) writer_tid: AtomicU64,
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
    pub(super) fn from_file(file: File, max_readers: u32) -> Result<LockFile> {
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

    /// Raw bytes of the mapping (tests only; not synchronised).
    #[cfg(test)]
    pub(super) fn raw(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes alive as long as `self`; tests read it
        // while no other thread writes.
        unsafe { std::slice::from_raw_parts(self.map.ptr, self.map.len) }
    }
}
