//! The memory map of the data file: the single-level store readers use.

use crate::error::{Error, ErrorKind, Result};
use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// The generations of an environment's map. A map that must grow (a
/// database grown past it by another process, `Env::set_map_size` through a
/// shared `Env`) is not moved: a new, larger mapping of the same file
/// becomes current, and the older ones stay mapped until the `Env` closes,
/// since values borrowed from transactions that began on them point into
/// them. Every generation maps the same shared file pages, so a write
/// through one is seen through all. With auto-grow the first generation
/// reserves the ceiling, so a second is rare.
pub(crate) struct Maps {
    /// The newest generation: a `Box` in `all`.
    cur: AtomicPtr<Map>,
    /// Boxed: a `&Map` lent out stays put when the vector grows.
    #[allow(clippy::vec_box)]
    all: Mutex<Vec<Box<Map>>>,
    /// `MDB_NORDAHEAD`: every generation is advised random access.
    no_readahead: bool,
}

impl Maps {
    /// The generations, starting with `map`; with `no_readahead` (LMDB's
    /// `MDB_NORDAHEAD`) a page fault reads only its own page, not the
    /// pages around it.
    pub(crate) fn new(map: Map, no_readahead: bool) -> Maps {
        if no_readahead {
            map.advise_random();
        }
        let mut b = Box::new(map);
        Maps {
            cur: AtomicPtr::new(&mut *b),
            all: Mutex::new(vec![b]),
            no_readahead,
        }
    }

    /// The newest generation.
    #[inline]
    pub(crate) fn current(&self) -> &Map {
        // SAFETY: `cur` points at a boxed map in `all`; boxes are never
        // dropped or moved out before `self` is, so the map outlives this
        // borrow of `self`.
        unsafe { &*self.cur.load(Ordering::Acquire) }
    }

    /// A generation of at least `len` bytes: the current one if it is long
    /// enough, else a new mapping of `len` bytes (never moving the others).
    pub(crate) fn covering(&self, file: &File, len: usize, writable: bool) -> Result<&Map> {
        let cur = self.current();
        if cur.len() >= len {
            return Ok(cur);
        }
        let mut all = self.all.lock().unwrap_or_else(|e| e.into_inner());
        let cur = self.current();
        if cur.len() >= len {
            return Ok(cur);
        }
        let p = self.push(&mut all, Map::new(file, len, writable, None)?);
        // SAFETY: as in `current`: the box now lives in `all` until `self` drops.
        Ok(unsafe { &*p })
    }

    /// Make `map` the newest generation (`Env::set_map_size`).
    pub(crate) fn install(&self, map: Map) {
        let mut all = self.all.lock().unwrap_or_else(|e| e.into_inner());
        self.push(&mut all, map);
    }

    /// Box `map` into `all` (the caller holds its lock) and make it the
    /// newest; returns where it lives (boxed: it must not move).
    #[allow(clippy::vec_box)]
    fn push(&self, all: &mut Vec<Box<Map>>, map: Map) -> *mut Map {
        if self.no_readahead {
            map.advise_random();
        }
        let mut b = Box::new(map);
        let p: *mut Map = &mut *b;
        all.push(b);
        self.cur.store(p, Ordering::Release);
        p
    }
}

/// A shared mapping of the data file, read-only unless WRITEMAP.
pub(crate) struct Map {
    ptr: *mut u8,
    len: usize,
    writable: bool,
}

// SAFETY: the mapping is plain shared memory; all access goes through &self
// slices of committed (immutable) pages or the single writer's exclusive path.
unsafe impl Send for Map {}
// SAFETY: as above; concurrent readers only read.
unsafe impl Sync for Map {}

impl Map {
    /// Map `len` bytes of `file`, at exactly address `at` if given (`EBUSY`
    /// if something else is mapped there).
    pub(crate) fn new(file: &File, len: usize, writable: bool, at: Option<usize>) -> Result<Map> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        let (hint, extra) = match at {
            Some(a) => (a as *mut libc::c_void, libc::MAP_FIXED_NOREPLACE),
            None => (std::ptr::null_mut(), 0),
        };
        // SAFETY: mapping a file we hold open; MAP_FIXED_NOREPLACE never
        // replaces an existing mapping, so no memory of ours is clobbered.
        let p = unsafe {
            libc::mmap(
                hint,
                len,
                prot,
                libc::MAP_SHARED | extra,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = Error::last_os();
            return Err(if e == ErrorKind::Os(libc::EEXIST) {
                ErrorKind::Os(libc::EBUSY).into()
            } else {
                e
            });
        }
        if at.is_some_and(|a| a != p as usize) {
            // An old kernel took the address as a hint only.
            // SAFETY: unmapping the region mmap just returned.
            unsafe { libc::munmap(p, len) };
            return Err(ErrorKind::Os(libc::EBUSY).into());
        }
        Ok(Map {
            ptr: p as *mut u8,
            len,
            writable,
        })
    }

    /// Bytes of the mapping.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Base address of the mapping.
    pub(crate) fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// `len` bytes at `off`, or `PageNotFound` if outside the map.
    #[inline]
    pub(crate) fn slice(&self, off: usize, len: usize) -> Result<&[u8]> {
        if off.checked_add(len).is_none_or(|e| e > self.len) {
            return Err(ErrorKind::PageNotFound.into());
        }
        // SAFETY: in bounds of a live mapping; committed pages are never
        // modified while a snapshot that can see them is alive (MVCC rule).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.add(off), len) })
    }

    /// Ask the CPU to start loading `len` bytes at `off` into its caches: a
    /// hint, ignored out of range. A descent gives it its leaf's nodes, a
    /// scan the leaves after the one it reads (see `tree::read`).
    #[inline]
    pub(crate) fn prefetch(&self, off: usize, len: usize) {
        if off.checked_add(len).is_none_or(|e| e > self.len) {
            return;
        }
        // SAFETY: `off..off + len` lies within the mapping (checked above).
        unsafe { prefetch_raw(self.ptr, off, len) };
    }

    /// [`Map::prefetch`] of `b` when it lies in the map (else nothing: a
    /// page of a write transaction's own is in the cache already).
    #[inline]
    pub(crate) fn prefetch_slice(&self, b: &[u8]) {
        let at = (b.as_ptr() as usize).wrapping_sub(self.ptr as usize);
        if at < self.len {
            self.prefetch(at, b.len());
        }
    }

    /// Advise the kernel that access is random (`MADV_RANDOM`): a fault
    /// reads its page alone. LMDB does this for `MDB_NORDAHEAD`, for
    /// databases larger than memory, where read-around fills the cache
    /// with pages no one asked for. (On kernels that cache files in large
    /// folios, read-around also makes each later one-page write dirty its
    /// whole folio: docs/benchmarks.md, twelfth session.) A hint: failure
    /// changes nothing.
    pub(crate) fn advise_random(&self) {
        // SAFETY: the whole of our own live mapping; MADV_RANDOM changes
        // only the kernel's read-ahead policy, never the contents.
        unsafe {
            libc::madvise(self.ptr as *mut libc::c_void, self.len, libc::MADV_RANDOM);
        }
    }

    /// Let the kernel unmap the pages of `off..off + len` from this process
    /// (they stay in the page cache and the file): a spilling transaction
    /// keeps its resident set to its budget. A hint: out of range, or on
    /// failure, nothing happens.
    pub(crate) fn evict(&self, off: usize, len: usize) {
        if off.checked_add(len).is_none_or(|e| e > self.len) || len == 0 {
            return;
        }
        // SAFETY: a range of our own shared file mapping. MADV_DONTNEED on
        // it only drops page-table entries: the next access maps the same
        // file contents again, so no byte any reference points at changes.
        unsafe {
            libc::madvise(
                self.ptr.add(off) as *mut libc::c_void,
                len,
                libc::MADV_DONTNEED,
            );
        }
    }

    /// Copy the bytes at `off` out into `buf`, for bytes a writer may be
    /// rewriting meanwhile (the meta pages): no reference to them is made,
    /// and the caller validates the copy.
    pub(crate) fn copy_out(&self, off: usize, buf: &mut [u8]) -> Result<()> {
        if off.checked_add(buf.len()).is_none_or(|e| e > self.len) {
            return Err(ErrorKind::PageNotFound.into());
        }
        // SAFETY: in bounds of a live mapping, read through a raw pointer
        // into a buffer of ours; the bytes may be torn, never out of bounds.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(off), buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Copy `bytes` into the map at `off` (WRITEMAP commits only).
    pub(crate) fn write(&self, off: usize, bytes: &[u8]) -> Result<()> {
        if !self.writable || off + bytes.len() > self.len {
            return Err(ErrorKind::Os(libc::EINVAL).into());
        }
        // SAFETY: in bounds of a writable mapping; the writer only writes pages
        // no live snapshot can see (reuse rule), so no reader observes the copy.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(off), bytes.len()) };
        Ok(())
    }

    /// msync a byte range (WRITEMAP).
    pub(crate) fn sync(&self, off: usize, len: usize, sync: bool) -> Result<()> {
        let flags = if sync { libc::MS_SYNC } else { libc::MS_ASYNC };
        // SAFETY: page-aligned range inside our mapping.
        let r = unsafe { libc::msync(self.ptr.add(off) as *mut libc::c_void, len, flags) };
        if r != 0 {
            return Err(Error::last_os());
        }
        Ok(())
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what mmap returned; no borrows outlive the Env.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

/// Ask the CPU to start loading the cache lines of `b` (a hint).
#[inline(always)]
pub(crate) fn prefetch_lines(b: &[u8]) {
    // SAFETY: the range is the slice's own.
    unsafe { prefetch_raw(b.as_ptr(), 0, b.len()) };
}

/// Prefetch every line of `off..off + len` from `base`. Every line:
/// hardware does not fetch a line's neighbour for us (every other line
/// measured 40% slower). Eight per round, so that a page costs about one
/// instruction per line.
///
/// # Safety
/// `base + off .. base + off + len` lies within one mapping or live
/// allocation (the addresses are formed with `add`).
#[inline(always)]
unsafe fn prefetch_raw(base: *const u8, off: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: `at` < `off + len`, so `add` stays within the range the
        // caller vouches for; a prefetch reads nothing a program can see
        // and never faults, even on a mapped page past the end of the file.
        let line = |at: usize| unsafe { _mm_prefetch::<_MM_HINT_T0>(base.add(at) as *const i8) };
        let mut at = off;
        while at + 512 <= off + len {
            for k in 0..8 {
                line(at + 64 * k);
            }
            at += 512;
        }
        while at < off + len {
            line(at);
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (base, off, len);
}
