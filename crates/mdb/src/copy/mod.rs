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
//!
//! The rooms: this file the entry points and the plain copy;
//! `snapshot.rs` the snapshot a copy reads (also what `check` and backups
//! read); `compact.rs` the compacting walk; `writer.rs` the thread that
//! writes what the walk sends; `progress.rs` what a copy reports.

mod compact;
mod progress;
mod snapshot;
mod writer;

pub use progress::{CopyProgress, CopyStats, ProgressFn};
pub(crate) use snapshot::CopySnapshot;

use crate::env::{Env, EnvFlags};
use crate::error::{Error, ErrorKind, Result};
use progress::no_progress;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use writer::CHUNK;

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
