//! What a copy reports: its progress as it goes, and what it wrote.

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

pub(super) fn no_progress(_: CopyProgress) -> bool {
    true
}
