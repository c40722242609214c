//! The lock file's layout (LMDB 0.9's, lock format `0x00010001`): the
//! header fields and reader slots at their offsets, and the shared mapping
//! they are read and written through (atomics and process-shared mutexes).

use std::sync::atomic::{AtomicU32, AtomicU64};

use crate::error::{Error, ErrorKind, Result};

/// Lock file magic number.
pub(super) const MAGIC: u32 = 0xBEEF_C0DE;
/// Lock format: version 1 plus bit 16 ("pid locks in use").
pub(super) const FORMAT: u32 = 0x0001_0001;
/// The most reader slots a lock file is created with (Linux's
/// `PID_MAX_LIMIT`: no more threads can exist at once), a 256 MiB table.
/// LMDB has no bound: `maxreaders=4294967295` asks for a 256 GiB file.
/// Lock files made larger by other programs are still opened as they are.
pub const MAX_READERS: u32 = 1 << 22;
/// Reader slots are cache-line sized.
pub(super) const CACHELINE: usize = 64;
/// Size of glibc's `pthread_mutex_t` on this target (40 on x86-64).
pub(super) const MUTEX_SIZE: usize = std::mem::size_of::<libc::pthread_mutex_t>();

const fn align_up(n: usize, a: usize) -> usize {
    (n + a - 1) & !(a - 1)
}

pub(super) const OFF_MAGIC: usize = 0;
pub(super) const OFF_FORMAT: usize = 4;
pub(super) const OFF_RMUTEX: usize = 8;
pub(super) const OFF_TXNID: usize = align_up(OFF_RMUTEX + MUTEX_SIZE, 8);
pub(super) const OFF_NUMREADERS: usize = OFF_TXNID + 8;
pub(super) const OFF_WMUTEX: usize = align_up(OFF_NUMREADERS + 4, CACHELINE);
/// Start of the reader table.
pub(super) const HEADER: usize = OFF_WMUTEX + align_up(MUTEX_SIZE, CACHELINE);
pub(super) const SLOT_SIZE: usize = CACHELINE;
pub(super) const SLOT_TXNID: usize = 0;
pub(super) const SLOT_PID: usize = 8;
pub(super) const SLOT_TID: usize = 16;

/// Slot txnid meaning "owned but no snapshot".
pub(super) const IDLE: u64 = u64::MAX;

/// A `MAP_SHARED` mapping of the lock file, unmapped on drop.
pub(super) struct Mapping {
    pub(super) ptr: *mut u8,
    pub(super) len: usize,
}

impl Mapping {
    pub(super) fn new(fd: libc::c_int, len: usize) -> Result<Mapping> {
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
    pub(super) fn anonymous(len: usize) -> Result<Mapping> {
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

    pub(super) fn u32_at(&self, off: usize) -> &AtomicU32 {
        assert!(off & 3 == 0 && off + 4 <= self.len);
        // SAFETY: in bounds, 4-aligned (the map is page-aligned), lives as long as `self`;
        // AtomicU32 has the layout of u32 and other processes access it as an aligned word.
        unsafe { &*self.ptr.add(off).cast::<AtomicU32>() }
    }

    pub(super) fn u64_at(&self, off: usize) -> &AtomicU64 {
        assert!(off & 7 == 0 && off + 8 <= self.len);
        // SAFETY: as for `u32_at`, with 8-byte alignment.
        unsafe { &*self.ptr.add(off).cast::<AtomicU64>() }
    }

    pub(super) fn mutex(&self, off: usize) -> *mut libc::pthread_mutex_t {
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

/// Initialise a process-shared robust mutex in place (the bytes are zeroed first).
pub(super) fn init_mutex(m: *mut libc::pthread_mutex_t) -> Result<()> {
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
