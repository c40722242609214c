//! Hot copies of an open environment: LMDB's `mdb_env_copy2` and
//! `mdb_env_copyfd2`, plain and compacting (lmdb-format.md §11).
//!
//! Both kinds read one snapshot through a read transaction, so writers keep
//! committing while the copy runs; the reader slot keeps the snapshot's pages
//! from being reused until the copy ends.
//!
//! * **Plain copy.** The writer lock is held for a moment, only while both
//!   meta pages are copied, so that they describe the snapshot and the one
//!   before it exactly as LMDB's copy does. Then pages `2..=last_pgno` of the
//!   snapshot are written straight from the map, clamped to the file's
//!   length. Free pages are included; the copy is the source file as of the
//!   snapshot.
//! * **Compacting copy.** A fresh file: page 0 is the meta of an empty
//!   environment, page 1 the snapshot's data with txn id 1 and an empty free
//!   database. Live pages are renumbered densely from 2 in post-order: the
//!   overflow runs of a leaf and the trees of its named or duplicate
//!   sub-databases come before the leaf, each branch after all its children,
//!   and the main root last. Sub-pages travel inside their leaf unchanged.
//!   A source whose page accounting does not add up (leaked pages) is refused
//!   with [`ErrorKind::Incompatible`].
//!
//!   The unused middle of a page (between its pointer array and its nodes)
//!   has no meaning. LMDB's copy does not write it: it builds pages in two
//!   1 MiB buffers used in turn, so that gap keeps whatever an earlier page
//!   left at the same place of the buffer. We build pages the same way, with
//!   the same buffer switches, so our compacted copy equals `mdb_copy -c`'s
//!   byte for byte, gaps included.
//!
//! Page numbers, offsets and lengths read from the file are all checked, so
//! a corrupt source gives an error, never a crash or an endless walk.

use crate::env::{Env, EnvFlags};
use crate::error::{Error, ErrorKind, Result};
use crate::format::bytes::get64;
use crate::format::meta::{DbRecord, Meta, META_LEN, VERSION, VERSION_OFF};
use crate::format::page::{
    edit, Header, Page, F_BIGDATA, F_DUPDATA, F_SUBDATA, HDR, P_INVALID, P_LEAF2, P_OVERFLOW,
};
use crate::mmap::Map;
use crate::tree::MAX_DEPTH;
use crate::txn::{RoTxn, Txn};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Sub-database nesting: MAIN, then a named DB, then a duplicate sub-DB.
const MAX_NESTING: usize = 2;
/// Output is written in pieces of this size (LMDB's `MDB_WBUF`).
const CHUNK: usize = 1 << 20;

/// How far a copy has got, passed to the progress callback ([`ProgressFn`]).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{CopyProgress, Env};
/// let env = Env::open(dir.path())?;
/// let mut last = None;
/// env.copy_to_writer_with(&mut std::io::sink(), false, &mut |p: CopyProgress| {
///     last = Some(p);
///     true // go on
/// })?;
/// let p = last.unwrap();
/// assert_eq!(p.pages_done, p.pages_total); // called at the end too
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyProgress {
    /// Pages written so far (meta pages included).
    pub pages_done: u64,
    /// Pages the finished copy will hold.
    pub pages_total: u64,
    /// Page size in bytes.
    pub page_size: usize,
}

/// What a finished copy wrote.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// w.commit()?;
/// let stats = env.copy_to_writer_with(&mut std::io::sink(), true, &mut |_| true)?;
/// assert_eq!(stats.snapshot_txnid, 1);
/// assert_eq!(stats.pages, 3); // two meta pages and one leaf
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyStats {
    /// Transaction id of the snapshot that was copied.
    pub snapshot_txnid: u64,
    /// `last_pgno` of that snapshot in the source.
    pub source_last_pgno: u64,
    /// Pages written, meta pages included.
    pub pages: u64,
    /// Page size in bytes.
    pub page_size: usize,
}

impl CopyStats {
    /// Bytes written.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// let mut out = Vec::new();
    /// let stats = env.copy_to_writer_with(&mut out, false, &mut |_| true)?;
    /// assert_eq!(stats.bytes(), out.len() as u64);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn bytes(&self) -> u64 {
        self.pages * self.page_size as u64
    }
}

/// A progress callback: return `false` to stop the copy, which then fails
/// with `EINTR`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dst = tempfile::tempdir().unwrap();
/// use mdb::{Env, ErrorKind};
/// let env = Env::open(dir.path())?;
/// let cancel = true; // e.g. the user pressed Ctrl-C
/// let r = env.copy_to_path_with(dst.path(), false, &mut |_| !cancel);
/// assert_eq!(r.err().map(|e| e.kind()), Some(ErrorKind::Os(libc::EINTR)));
/// assert!(!dst.path().join("data.mdb").exists()); // removed
/// # Ok::<(), mdb::Error>(())
/// ```
pub type ProgressFn<'a> = &'a mut dyn FnMut(CopyProgress) -> bool;

fn no_progress(_: CopyProgress) -> bool {
    true
}

impl Env {
    /// Copy the environment into `path`, as `mdb_env_copy2` does: `path` is a
    /// directory that must exist, and the copy is `path/data.mdb`, created
    /// exclusively (`EEXIST` if it is there) with mode 0666 minus the umask.
    /// For an environment opened with [`EnvFlags::NO_SUB_DIR`], `path` is the
    /// copy's file name. No lock file is written. With `compact`, only live
    /// pages are copied, renumbered (`MDB_CP_COMPACT`).
    ///
    /// The copy reads one snapshot; writers may keep committing meanwhile. It
    /// needs a free reader slot, fails with [`ErrorKind::BadRslot`] in a thread
    /// that already holds a read transaction of this environment, and with
    /// [`ErrorKind::BadTxn`] in one holding its write transaction (it takes the
    /// writer lock briefly, and would wait for itself).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let dst = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, ErrorKind, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// env.copy_to_path(dst.path(), true)?;
    /// let copy = Env::open(dst.path())?;
    /// assert_eq!(copy.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn copy_to_path(&self, path: impl AsRef<Path>, compact: bool) -> Result<()> {
        self.copy_to_path_with(path.as_ref(), compact, &mut no_progress)
            .map(|_| ())
    }

    /// [`Env::copy_to_path`] with a progress callback. If the copy fails, the
    /// partly written file is removed.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let dst = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// let stats = env.copy_to_path_with(dst.path(), true, &mut |p| {
    ///     eprintln!("{}/{} pages", p.pages_done, p.pages_total);
    ///     true
    /// })?;
    /// let copied = std::fs::metadata(dst.path().join("data.mdb"))?.len();
    /// assert_eq!(copied, stats.bytes());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn copy_to_path_with(
        &self,
        path: &Path,
        compact: bool,
        progress: ProgressFn<'_>,
    ) -> Result<CopyStats> {
        let target: PathBuf = if self.flags().contains(EnvFlags::NO_SUB_DIR) {
            path.to_path_buf()
        } else {
            path.join("data.mdb")
        };
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .custom_flags(libc::O_CLOEXEC)
            .open(&target)?;
        let r = self
            .copy_to_writer_with(&mut &file, compact, progress)
            .and_then(|s| {
                file.sync_all()?;
                Ok(s)
            });
        if r.is_err() {
            drop(file);
            let _ = std::fs::remove_file(&target);
        }
        r
    }

    /// Write a copy of the environment to `w` (LMDB's `mdb_env_copyfd2`).
    /// The stream is a complete data file, usable as a NOSUBDIR environment
    /// or as `data.mdb` of a directory. See [`Env::copy_to_path`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, EnvFlags, EnvOptions, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let mut bytes = Vec::new();
    /// env.copy_to_writer(&mut bytes, false)?;
    /// let file = dir.path().join("copy.mdb");
    /// std::fs::write(&file, &bytes)?;
    /// let copy = EnvOptions::new().flags(EnvFlags::NO_SUB_DIR).open(&file)?;
    /// assert_eq!(copy.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn copy_to_writer<W: Write + ?Sized>(&self, w: &mut W, compact: bool) -> Result<()> {
        self.copy_to_writer_with(w, compact, &mut no_progress)
            .map(|_| ())
    }

    /// Write a copy to an open descriptor (a file, a pipe, a socket) at its
    /// current position, with plain `write(2)` calls and no buffering of
    /// our own beyond the copy's pieces. A closed pipe gives `EPIPE` (Rust
    /// programs ignore SIGPIPE).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let dst = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let file = std::fs::File::create(dst.path().join("data.mdb"))?;
    /// env.copy_to_fd(&file, true)?;
    /// let copy = Env::open(dst.path())?;
    /// assert_eq!(copy.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn copy_to_fd(&self, fd: impl AsFd, compact: bool) -> Result<()> {
        let mut w = FdWriter(fd.as_fd().as_raw_fd());
        self.copy_to_writer(&mut w, compact)
    }

    /// [`Env::copy_to_writer`] with a progress callback, called after each
    /// piece written (about every MiB) and at the end.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// for i in 0u32..10_000 {
    ///     w.put(Database::MAIN, &i.to_be_bytes(), &[0; 200], WriteFlags::EMPTY)?;
    /// }
    /// w.commit()?;
    /// let mut calls = 0;
    /// let mut out = std::io::sink();
    /// let stats = env.copy_to_writer_with(&mut out, false, &mut |_| {
    ///     calls += 1;
    ///     true
    /// })?;
    /// assert!(stats.bytes() > 2 << 20);
    /// assert!(calls >= 3); // about one per MiB, and one at the end
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn copy_to_writer_with<W: Write + ?Sized>(
        &self,
        w: &mut W,
        compact: bool,
        progress: ProgressFn<'_>,
    ) -> Result<CopyStats> {
        let snap = self.copy_snapshot()?;
        if compact {
            self.copy_compact(&snap, w, progress)
        } else {
            self.copy_plain(&snap, w, progress)
        }
    }

    /// Start the copy's read transaction and take both meta pages as of its
    /// snapshot.
    pub(crate) fn copy_snapshot(&self) -> Result<CopySnapshot<'_>> {
        let ps = self.psize;
        let mut txn = self.read_txn()?;
        let mut metas = vec![0u8; 2 * ps];
        {
            // As LMDB: the reader slot is taken first, then the snapshot is
            // renewed under the writer lock, so that no commit can be
            // half-way while the meta pages are read (under NO_LOCK, no
            // commit of this process).
            let l = &self.lock;
            txn.reset();
            let recovered = l.lock_writer()?;
            struct Unlock<'a>(&'a crate::lock::LockFile);
            impl Drop for Unlock<'_> {
                fn drop(&mut self) {
                    self.0.unlock_writer();
                }
            }
            let _unlock = Unlock(l);
            if recovered {
                // The previous writer died: its uncommitted pages are unreferenced.
                if let Ok((_, m)) = crate::env::pick_meta(self.meta_page(0), self.meta_page(1)) {
                    l.set_txnid(m.txnid);
                }
            }
            txn.renew()?;
            metas.copy_from_slice(self.map().slice(0, 2 * ps)?);
        }
        // A copy is a whole snapshot, with no log to wait for: plain LMDB
        // 0.9 even when the source is in write-ahead-log mode.
        for m in metas.chunks_exact_mut(ps) {
            let v = VERSION_OFF as usize;
            m[v..v + 4].copy_from_slice(&VERSION.to_le_bytes());
        }
        let t = Txn::id(&txn);
        let decode = |i: usize| Meta::decode(&metas[i * ps..i * ps + META_LEN]);
        let meta = [decode((t & 1) as usize), decode((t & 1 ^ 1) as usize)]
            .into_iter()
            .flatten()
            .find(|m| m.txnid == t)
            .ok_or(ErrorKind::Corrupted)?;
        Ok(CopySnapshot {
            _txn: txn,
            metas,
            meta,
            file_len: self.file.len()?,
        })
    }

    fn copy_plain<W: Write + ?Sized>(
        &self,
        snap: &CopySnapshot<'_>,
        w: &mut W,
        progress: ProgressFn<'_>,
    ) -> Result<CopyStats> {
        let ps = self.psize as u64;
        let end = snap.end(ps);
        let total = end.div_ceil(ps);
        let mut report = |done: u64| {
            let p = CopyProgress {
                pages_done: done.div_ceil(ps),
                pages_total: total,
                page_size: ps as usize,
            };
            if progress(p) {
                Ok(())
            } else {
                Err(Error::from(ErrorKind::Os(libc::EINTR)))
            }
        };
        w.write_all(&snap.metas)?;
        let map = self.map_for(&snap.meta)?;
        let mut off = 2 * ps;
        report(off)?;
        while off < end {
            let n = (end - off).min(CHUNK as u64);
            w.write_all(map.slice(off as usize, n as usize)?)?;
            off += n;
            report(off)?;
        }
        w.flush()?;
        Ok(CopyStats {
            snapshot_txnid: snap.meta.txnid,
            source_last_pgno: snap.meta.last_pgno,
            pages: total,
            page_size: ps as usize,
        })
    }

    fn copy_compact<W: Write + ?Sized>(
        &self,
        snap: &CopySnapshot<'_>,
        w: &mut W,
        progress: ProgressFn<'_>,
    ) -> Result<CopyStats> {
        let ps = self.psize;
        let src = snap.meta;
        let file_pages = snap.file_len / ps as u64;
        let map = self.map_for(&src)?;
        // As LMDB's copy: one thread walks the tree and fills a buffer while
        // this one writes the other, so the walk and the writes overlap.
        // The two buffers still alternate strictly, so each page's unused
        // gap keeps what it kept before (byte-identical to `mdb_copy -c`).
        let (to_writer, chunks) = mpsc::sync_channel::<Chunk>(2);
        let (give_back, free) = mpsc::sync_channel::<Vec<u8>>(2);
        give_back
            .send(vec![0u8; CHUNK])
            .expect("room for one buffer");
        let mut c = Compactor {
            map,
            ps,
            last: src.last_pgno.min(file_pages.saturating_sub(1)),
            snap_last: src.last_pgno,
            out: to_writer,
            free,
            buf: vec![0u8; CHUNK],
            wlen: 0,
            next: 2,
            limit: 1,
        };
        let root = self.compact_metas(&mut c, snap)?;
        std::thread::scope(|scope| {
            let walker = scope.spawn(move || {
                if c.walk(src.main.root, true, 0)? != root {
                    // Page leak or corrupt source: the live pages did not add up.
                    return Err(ErrorKind::Incompatible.into());
                }
                c.switch()?;
                Ok(c.next)
            });
            let written = self.write_chunks(map, chunks, give_back, w, progress);
            // The channels are gone with `write_chunks`: a walker still
            // waiting for a buffer stops with an error.
            let walked: Result<u64> = walker.join().map_err(|_| Error::from(ErrorKind::Panic))?;
            // A failed write makes the walker fail too: the write's error
            // is the one that explains it.
            written?;
            let pages = walked?;
            w.flush()?;
            Ok(CopyStats {
                snapshot_txnid: src.txnid,
                source_last_pgno: src.last_pgno,
                pages,
                page_size: ps,
            })
        })
    }

    /// The start of a compacting copy: the two meta pages, in the first
    /// buffer, and the copy's size sent to the writer. Returns the main
    /// root the walk must end on.
    fn compact_metas(&self, c: &mut Compactor<'_>, snap: &CopySnapshot<'_>) -> Result<u64> {
        let (ps, src) = (c.ps, snap.meta);
        // Page 0: an empty environment; page 1: the data, as a new file would
        // have them after its first commit.
        let env_flags = (self.flags().bits() & 0xffff) as u16;
        let mut m0 = Meta::new_env(ps as u32, self.mapsize_for(src.mapsize, 0), env_flags);
        m0.address = snap.metas_address();
        let mut m1 = m0;
        if src.main.root != P_INVALID {
            // Everything in 2..=last_pgno that is not free holds live data,
            // and the main root will be the last of those pages.
            let free = c.count_free(&src.free)?;
            let live_last = src
                .last_pgno
                .checked_sub(free)
                .filter(|&l| l >= 2)
                .ok_or(ErrorKind::Incompatible)?;
            m1.last_pgno = live_last;
            m1.main = src.main;
            m1.main.root = live_last;
            c.limit = live_last;
        } else {
            // An empty main DB: keep only its flags (this also drops pages an
            // old LMDB bug may have leaked).
            m1.main.flags = src.main.flags;
        }
        if src.main.root != P_INVALID || m1.main.flags != 0 {
            m1.txnid = 1;
        }
        c.send(Chunk::Total(m1.last_pgno + 1))?;
        c.buf[..ps].copy_from_slice(&m0.encode_page(0, ps));
        c.buf[ps..2 * ps].copy_from_slice(&m1.encode_page(1, ps));
        c.wlen = 2 * ps;
        Ok(m1.main.root)
    }

    /// The writer's side of a compacting copy: write what the walker sends,
    /// in order, handing each buffer back once written, and report progress.
    fn write_chunks<W: Write + ?Sized>(
        &self,
        map: &Map,
        chunks: mpsc::Receiver<Chunk>,
        give_back: mpsc::SyncSender<Vec<u8>>,
        w: &mut W,
        progress: ProgressFn<'_>,
    ) -> Result<()> {
        let ps = self.psize;
        let mut total = 2;
        for chunk in chunks {
            match chunk {
                Chunk::Total(t) => total = t,
                Chunk::Pages { buf, len, done } => {
                    w.write_all(&buf[..len])?;
                    // The walker may have finished and gone: nothing to hand back to.
                    let _ = give_back.send(buf);
                    let p = CopyProgress {
                        pages_done: done,
                        pages_total: total,
                        page_size: ps,
                    };
                    if !progress(p) {
                        return Err(ErrorKind::Os(libc::EINTR).into());
                    }
                }
                Chunk::Run { from, end } => {
                    let mut from = from;
                    while from < end {
                        let k = (end - from).min((CHUNK / ps) as u64);
                        w.write_all(map.slice(from as usize * ps, k as usize * ps)?)?;
                        from += k;
                    }
                }
            }
        }
        Ok(())
    }
}

/// What the walker of a compacting copy sends the writer, in output order.
enum Chunk {
    /// The copy's page count, once known.
    Total(u64),
    /// A buffer of pages, its filled length, and pages numbered so far.
    Pages { buf: Vec<u8>, len: usize, done: u64 },
    /// Source pages `from..end` (the rest of an overflow run), to write
    /// straight from the map.
    Run { from: u64, end: u64 },
}

/// The copy's snapshot: the read transaction that pins it, and its metas.
pub(crate) struct CopySnapshot<'e> {
    _txn: RoTxn<'e>,
    /// Pages 0 and 1 as they were when the snapshot was taken.
    pub(crate) metas: Vec<u8>,
    /// The snapshot's own meta.
    pub(crate) meta: Meta,
    /// Length of the data file when the snapshot was taken: every page of
    /// the snapshot lies within it.
    pub(crate) file_len: u64,
}

impl CopySnapshot<'_> {
    /// Where the snapshot ends in the file, in bytes: its pages
    /// (`last_pgno + 1` of `ps` bytes), clamped to the file's length, and
    /// at least the two meta pages.
    pub(crate) fn end(&self, ps: u64) -> u64 {
        self.meta
            .last_pgno
            .saturating_add(1)
            .saturating_mul(ps)
            .min(self.file_len.max(2 * ps))
    }

    /// The fixed-map address recorded in meta page 0.
    fn metas_address(&self) -> u64 {
        self.metas
            .first_chunk::<META_LEN>()
            .map_or(0, |m| Meta::fields(m).address)
    }
}

/// Writes raw to a descriptor, as `mdb_env_copyfd` does.
struct FdWriter(std::os::fd::RawFd);

impl Write for FdWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        // SAFETY: `b` is a valid readable buffer of b.len() bytes; the
        // descriptor is borrowed from the caller for the whole copy.
        let n = unsafe { libc::write(self.0, b.as_ptr().cast(), b.len()) };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A branch page being copied (its header checked when it was read; only
/// its children's numbers change), its node count, and the child to visit
/// next.
struct Frame {
    img: Vec<u8>,
    len: usize,
    next: usize,
}

impl Frame {
    /// Child page of node `i`.
    fn child(&self, i: usize) -> Result<u64> {
        Page::edited(&self.img).child(i)
    }

    /// Point node `i` at `pgno`.
    fn set_child(&mut self, i: usize, pgno: u64) -> Result<()> {
        Page::edited(&self.img).child(i)?;
        edit::set_child(&mut self.img, i, pgno);
        Ok(())
    }
}

/// Copy page `src` into `dst` as LMDB's page copy does: the header and
/// pointer array up to `lower` rounded up to 8 bytes, and the nodes from
/// `upper` rounded down to 8; the bytes between keep what `dst` held. A
/// LEAF2 page, or one whose gap is under 8 bytes, is copied up to `psize`
/// minus the gap rounded down to 8.
fn page_copy(dst: &mut [u8], src: &[u8]) {
    let ps = src.len();
    let h = Header::read(src).unwrap_or_default();
    let (lower, upper) = (h.lower as usize, h.upper as usize);
    if lower > upper || upper > ps {
        // Not a sane page: keep it whole.
        dst.copy_from_slice(src);
        return;
    }
    let gap = (upper - lower) & !7;
    if gap != 0 && h.flags & P_LEAF2 == 0 {
        let head = ((lower + 7) & !7).min(ps);
        let tail = upper & !7;
        dst[..head].copy_from_slice(&src[..head]);
        dst[tail..].copy_from_slice(&src[tail..]);
    } else {
        let n = ps - gap;
        dst[..n].copy_from_slice(&src[..n]);
    }
}

/// The compacting walk: emits pages in post-order with new numbers.
struct Compactor<'a> {
    /// A map generation holding the snapshot.
    map: &'a Map,
    ps: usize,
    /// Highest source page that may be read (snapshot's last_pgno, within the file).
    last: u64,
    /// The snapshot's last_pgno: pages up to it but past `last` are missing
    /// from a truncated file.
    snap_last: u64,
    /// To the writer, and the buffers it hands back.
    out: mpsc::SyncSender<Chunk>,
    free: mpsc::Receiver<Vec<u8>>,
    /// The buffer being filled, and how much of it is.
    buf: Vec<u8>,
    wlen: usize,
    /// Next page number of the copy.
    next: u64,
    /// Highest page number the copy may use: the new main root.
    limit: u64,
}

impl<'a> Compactor<'a> {
    /// Source page `pgno` from the map.
    fn src(&self, pgno: u64, pages: u64) -> Result<&'a [u8]> {
        if pgno < 2 || pages == 0 || pgno > self.last || pages - 1 > self.last - pgno {
            let in_snapshot = pgno >= 2
                && pages > 0
                && pgno <= self.snap_last
                && pages - 1 <= self.snap_last - pgno;
            return Err(if in_snapshot {
                ErrorKind::Corrupted
            } else {
                ErrorKind::PageNotFound
            }
            .into());
        }
        self.map
            .slice(pgno as usize * self.ps, pages as usize * self.ps)
    }

    /// Reserve `n` page numbers of the copy.
    fn alloc(&mut self, n: u64) -> Result<u64> {
        let pg = self.next;
        if n == 0 || pg > self.limit || n - 1 > self.limit - pg {
            // More live pages than the free list leaves room for.
            return Err(ErrorKind::Incompatible.into());
        }
        self.next += n;
        Ok(pg)
    }

    /// Pass a chunk to the writer; it is gone (a write failed) if it has
    /// hung up, and the copy stops.
    fn send(&self, c: Chunk) -> Result<()> {
        self.out
            .send(c)
            .map_err(|_| Error::from(ErrorKind::Os(libc::EIO)))
    }

    /// Hand the current buffer to the writer and take the other one back
    /// (which it has written by then).
    fn switch(&mut self) -> Result<()> {
        let next = self
            .free
            .recv()
            .map_err(|_| Error::from(ErrorKind::Os(libc::EIO)))?;
        let buf = std::mem::replace(&mut self.buf, next);
        let (len, done) = (self.wlen, self.next);
        self.wlen = 0;
        self.send(Chunk::Pages { buf, len, done })
    }

    /// Make room for one page in the current buffer; returns its offset there.
    fn room(&mut self) -> Result<usize> {
        if self.wlen >= CHUNK {
            self.switch()?;
        }
        Ok(self.wlen)
    }

    /// Pages in the free list plus the free DB's own pages, as LMDB counts them.
    fn count_free(&self, free: &crate::format::meta::DbRecord) -> Result<u64> {
        let mut n = free
            .branch_pages
            .saturating_add(free.leaf_pages)
            .saturating_add(free.overflow_pages);
        if free.root == P_INVALID {
            return Ok(n);
        }
        let mut stack = vec![(free.root, 1usize)];
        let mut visited = 0u64;
        while let Some((pg, depth)) = stack.pop() {
            visited += 1;
            if depth > MAX_DEPTH || visited > self.last {
                return Err(ErrorKind::Corrupted.into());
            }
            let p = Page::new(self.src(pg, 1)?)?;
            if p.is_branch() {
                for i in (0..p.len()).rev() {
                    stack.push((p.child(i)?, depth + 1));
                }
            } else {
                for i in 0..p.len() {
                    let nd = p.node(i)?;
                    let ids = if nd.flags() & F_BIGDATA != 0 {
                        &self.src(nd.ov_pgno(), 1)?[HDR..]
                    } else {
                        nd.data()
                    };
                    n = n.saturating_add(get64(ids, 0).ok_or(ErrorKind::Corrupted)?);
                }
            }
        }
        Ok(n)
    }

    /// Copy the tree at `root`; returns its root in the copy. `scan` says
    /// whether leaf nodes may carry overflow runs and sub-databases (not in
    /// a duplicate sub-DB, whose values are its keys).
    fn walk(&mut self, root: u64, scan: bool, nesting: usize) -> Result<u64> {
        if root == P_INVALID {
            return Ok(P_INVALID);
        }
        let mut stack: Vec<Frame> = Vec::new();
        let mut pg = root;
        loop {
            // Go down to the leftmost leaf below `pg`.
            let raw = self.src(pg, 1)?;
            let p = Page::new(raw)?;
            let mut done = if p.is_branch() {
                if stack.len() >= MAX_DEPTH || p.is_empty() {
                    return Err(ErrorKind::Corrupted.into());
                }
                pg = p.child(0)?;
                stack.push(Frame {
                    img: raw.to_vec(),
                    len: p.len(),
                    next: 0,
                });
                continue;
            } else if scan && p.refers_out()? {
                let mut img = raw.to_vec();
                self.leaf_children(&mut img, nesting)?;
                self.emit(&img)?
            } else {
                // Most leaves go out as they are, straight from the map.
                self.emit(raw)?
            };
            // Climb while the parents are finished, emitting them.
            loop {
                let Some(f) = stack.last_mut() else {
                    return Ok(done);
                };
                f.set_child(f.next, done)?;
                f.next += 1;
                if f.next < f.len {
                    pg = f.child(f.next)?;
                    break;
                }
                let f = stack.pop().expect("frame");
                done = self.emit(&f.img)?;
            }
        }
    }

    /// Copy what the nodes of a leaf point to, updating the leaf image.
    fn leaf_children(&mut self, img: &mut [u8], nesting: usize) -> Result<()> {
        let n = Page::new(img)?.len();
        for i in 0..n {
            let nd = Page::new(img)?.node(i)?;
            let nf = nd.flags();
            let data = if nf & F_BIGDATA != 0 {
                let new = self.copy_overflow(nd.ov_pgno())?;
                new.to_le_bytes().to_vec()
            } else if nf & F_SUBDATA != 0 {
                let mut r = DbRecord::read(nd.data())?;
                if nesting >= MAX_NESTING {
                    return Err(ErrorKind::Corrupted.into());
                }
                r.root = self.walk(r.root, nf & F_DUPDATA == 0, nesting + 1)?;
                r.encode().to_vec()
            } else {
                continue;
            };
            edit::data_mut(img, i).copy_from_slice(&data);
        }
        Ok(())
    }

    /// Add a branch or leaf page under the next page number.
    fn emit(&mut self, img: &[u8]) -> Result<u64> {
        let off = self.room()?;
        let pg = self.alloc(1)?;
        let ps = self.ps;
        let dst = &mut self.buf[off..off + ps];
        page_copy(dst, img);
        edit::set_pgno(dst, pg);
        self.wlen += ps;
        Ok(pg)
    }

    /// Copy the overflow run starting at source page `ov`; returns its new number.
    fn copy_overflow(&mut self, ov: u64) -> Result<u64> {
        let first = self.src(ov, 1)?;
        let h = Header::read(first).ok_or(ErrorKind::Corrupted)?;
        let n = u64::from(h.overflow_pages());
        if h.flags & P_OVERFLOW == 0 || n == 0 {
            return Err(ErrorKind::Corrupted.into());
        }
        // Check the whole run before writing any of it.
        self.src(ov, n)?;
        let off = self.room()?;
        let pg = self.alloc(n)?;
        let ps = self.ps;
        let dst = &mut self.buf[off..off + ps];
        dst.copy_from_slice(first);
        edit::set_pgno(dst, pg);
        self.wlen += ps;
        if n > 1 {
            // The rest of the run goes out straight from the map, and the
            // next pages go to the other buffer (as in LMDB).
            self.switch()?;
            self.send(Chunk::Run {
                from: ov + 1,
                end: ov + n,
            })?;
        }
        Ok(pg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::page::P_LEAF;

    #[test]
    fn page_copy_keeps_the_gap_like_lmdb() {
        let mut img = vec![0xAAu8; 4096];
        img[10..12].copy_from_slice(&P_LEAF.to_le_bytes());
        img[12..14].copy_from_slice(&22u16.to_le_bytes());
        img[14..16].copy_from_slice(&4000u16.to_le_bytes());
        let mut out = vec![0x55u8; 4096];
        page_copy(&mut out, &img);
        assert!(out[..24].iter().skip(16).all(|&b| b == 0xAA));
        assert!(out[24..4000].iter().all(|&b| b == 0x55));
        assert!(out[4000..].iter().all(|&b| b == 0xAA));
        // A gap under 8 bytes: the whole page.
        img[14..16].copy_from_slice(&28u16.to_le_bytes());
        page_copy(&mut out, &img);
        assert_eq!(out, img);
        // LEAF2: everything but the rounded gap at the end.
        let mut out = vec![0x55u8; 4096];
        img[10..12].copy_from_slice(&(P_LEAF | P_LEAF2).to_le_bytes());
        img[14..16].copy_from_slice(&(22u16 + 100).to_le_bytes());
        page_copy(&mut out, &img);
        assert!(out[..4096 - 96].iter().skip(16).all(|&b| b == 0xAA));
        assert!(out[4096 - 96..].iter().all(|&b| b == 0x55));
    }
}
