//! Hot backups: full and incremental, restore to any backup of the chain,
//! and verification (issue 12).
//!
//! A backup directory holds a chain: a full backup (a plain LMDB data file
//! of one snapshot), then incremental ones (the pages that differ from the
//! previous backup's state, found by page hashes, and the meta pages), and
//! `manifest.json` describing them with their CRC32Cs. Each backup reads
//! one snapshot under a read transaction, so writers keep committing
//! meanwhile; in write-ahead-log mode too (the snapshot is a durable
//! commit, and the copy is a plain LMDB 0.9 file). Restoring rebuilds a
//! plain LMDB 0.9 environment at any backup of the chain.

mod log;
mod manifest;
mod out;
mod pages;
mod restore;

pub use log::LogArchive;
pub use manifest::{BackupEntry, BackupKind, Manifest};
#[cfg(feature = "unstable")]
pub use restore::restore_with_faults;
pub use restore::{restore, verify, RestoreReport, VerifyReport};

use crate::env::Env;
use crate::error::{Error, ErrorKind};
use crate::sink::CommitSink;
use manifest::{sync_dir, HASHES};
use out::{write_synced, DirLock, SeamFile, TmpPath};
use pages::{hashes_bytes, meta_crc32c, page_hash, read_hashes, Crc, IncrHeader, HEADER};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A backup, restore or verification failure: the engine's error code and
/// what failed, naming the file.
///
/// ```
/// use mdb::ErrorKind;
/// # let empty = tempfile::tempdir().unwrap();
/// use mdb::Error;
/// let e = mdb::verify(empty.path()).unwrap_err();
/// assert_eq!(e.code, ErrorKind::Corrupted);
/// assert_eq!(e.path, Some(empty.path().join("manifest.json")));
/// assert!(e.to_string().ends_with("no backup manifest here"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupError {
    /// The LMDB-style code (`Corrupted` for damaged backup files).
    pub code: Error,
    /// The file or directory concerned, if any.
    pub path: Option<PathBuf>,
    /// What went wrong.
    pub message: String,
}

impl BackupError {
    fn io(path: &Path, e: std::io::Error) -> BackupError {
        let code = Error::from(e);
        BackupError {
            message: code.to_string(),
            code,
            path: Some(path.to_path_buf()),
        }
    }
    fn bad(path: &Path, msg: impl Into<String>) -> BackupError {
        BackupError {
            code: ErrorKind::Corrupted.into(),
            path: Some(path.to_path_buf()),
            message: msg.into(),
        }
    }
    fn with_path(mut self, path: &Path) -> BackupError {
        self.path = Some(path.to_path_buf());
        self
    }
    fn usage(msg: impl Into<String>) -> BackupError {
        BackupError {
            code: ErrorKind::Os(libc::EINVAL).into(),
            path: None,
            message: msg.into(),
        }
    }
}

impl From<Error> for BackupError {
    fn from(code: Error) -> BackupError {
        BackupError {
            message: code.to_string(),
            code,
            path: None,
        }
    }
}

impl std::fmt::Display for BackupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{}: {}", p.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for BackupError {}

/// Result of the backup functions: `?` turns an engine [`Error`] into its
/// [`BackupError`].
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// use mdb::{BackupResult, Env};
/// use std::path::Path;
/// fn nightly(env: &Env, dest: &Path) -> BackupResult<u64> {
///     env.sync(true)?; // an mdb::Error
///     Ok(env.backup(dest, true, None)?.bytes)
/// }
/// let env = Env::open(dir.path())?;
/// assert!(nightly(&env, dest.path())? > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type BackupResult<T> = std::result::Result<T, BackupError>;

/// Progress of a backup or restore: bytes done and the total expected.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// let env = mdb::Env::open(dir.path())?;
/// let mut seen = (0, 0);
/// env.backup(dest.path(), false, Some(&mut |done, total| seen = (done, total)))?;
/// assert_eq!(seen.0, seen.1); // the last call: all done
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type BackupProgress<'a> = &'a mut dyn FnMut(u64, u64);

/// Which backup of a chain to restore.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, RestorePoint, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// for v in [&b"one"[..], b"two"] {
///     let mut w = env.write_txn()?;
///     w.put(Database::MAIN, b"k", v, WriteFlags::EMPTY)?;
///     w.commit()?;
///     env.backup(dest.path(), true, None)?;
/// }
/// for (point, want) in [(RestorePoint::Txn(1), &b"one"[..]), (RestorePoint::Newest, b"two")] {
///     let out = tempfile::tempdir()?;
///     mdb::restore(dest.path(), out.path(), point, None)?;
///     assert_eq!(Env::open(out.path())?.read_txn()?.get(Database::MAIN, b"k")?, Some(want));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestorePoint {
    /// The newest backup.
    #[default]
    Newest,
    /// The newest backup of a transaction at or before this id.
    Txn(u64),
    /// The newest commit made at or before this time: in write-ahead-log
    /// mode the newest archived commit record stamped at or before it,
    /// else the newest backup whose snapshot was taken at or before it.
    /// Never a commit made after it.
    Time(std::time::SystemTime),
}

impl std::fmt::Display for RestorePoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RestorePoint::Newest => f.write_str("the newest backup"),
            RestorePoint::Txn(t) => write!(f, "transaction {t}"),
            RestorePoint::Time(t) => {
                let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                write!(f, "time {}.{:09}", d.as_secs(), d.subsec_nanos())
            }
        }
    }
}

/// Seconds since the Unix epoch, by the injector's clock if it has one.
fn now_secs(fault: &out::Fault) -> u64 {
    crate::io::now_ns(fault.as_ref()) / 1_000_000_000
}

impl Env {
    /// Back the environment up into directory `dest` (created if needed)
    /// while writers keep committing: a full backup when `dest` holds no
    /// chain yet or `incremental` is false, else only the pages changed
    /// since the newest backup in `dest`. Returns the manifest entry.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let dest = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, RestorePoint, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// for i in 0u32..5000 {
    ///     w.put(Database::MAIN, &i.to_be_bytes(), &[1; 100], WriteFlags::EMPTY)?;
    /// }
    /// w.put(Database::MAIN, b"k", b"one", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let full = env.backup(dest.path(), false, None).unwrap();
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"two", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let incr = env.backup(dest.path(), true, None).unwrap();
    /// assert!(incr.bytes < full.bytes / 10); // the pages that changed
    ///
    /// let out = tempfile::tempdir().unwrap();
    /// mdb::restore(dest.path(), out.path(), RestorePoint::Txn(full.txnid), None).unwrap();
    /// let old = Env::open(out.path())?;
    /// assert_eq!(old.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"one"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn backup(
        &self,
        dest: &Path,
        incremental: bool,
        progress: Option<BackupProgress<'_>>,
    ) -> BackupResult<BackupEntry> {
        std::fs::create_dir_all(dest).map_err(|e| BackupError::io(dest, e))?;
        let _lock = DirLock::take(dest)?;
        let fault = self.file.fault().cloned();
        let base = Manifest::load(dest)?.filter(|m| !m.backups.is_empty());
        let ps = self.psize;
        if let Some(b) = &base {
            if b.page_size as usize != ps {
                return Err(BackupError::usage(format!(
                    "{} holds backups of page size {}, this environment's is {ps}",
                    dest.display(),
                    b.page_size
                )));
            }
            // Before anything is written, the log's hold included.
            same_env(dest, b, &self.newest_meta()?)?;
        }
        let mut noop = |_: u64, _: u64| {};
        let progress = progress.unwrap_or(&mut noop);
        let wal_dir = self.wal_dir();
        let wal_mode = self.wal_mode();
        // Commits of relaxed durability this process sees must be in the
        // log before the snapshot's records are archived.
        self.sink().flush()?;
        if wal_mode && crate::wal::archive::hold(&wal_dir).is_none() {
            // Hold the log from before the snapshot on, so that no record
            // the next backup needs is recycled meanwhile.
            let now = self.newest_meta()?.txnid;
            crate::wal::archive::set_hold(&wal_dir, now)
                .map_err(|e| BackupError::from(e).with_path(&wal_dir))?;
        }
        let snap = self.copy_snapshot()?;
        // Read after the snapshot: every commit it holds was made before.
        let snapshot_ns = crate::io::now_ns(fault.as_ref());
        let m = snap.meta;
        if let Some(b) = &base {
            same_env(dest, b, &m)?;
        }
        let pages = m.last_pgno + 1;
        if snap.file_len < pages * ps as u64 {
            return Err(BackupError::bad(
                &self.path,
                "the data file is shorter than its newest snapshot",
            ));
        }
        let map = self.map_for(&m)?;
        let seq = base.as_ref().map_or(0, |b| b.backups.len() as u64);
        let prev_hashes = match (&base, incremental) {
            (Some(b), true) => Some(read_hashes(&dest.join(HASHES), b.hashes_crc32c)?),
            _ => None,
        };
        let kind = if prev_hashes.is_some() {
            BackupKind::Incremental
        } else {
            BackupKind::Full
        };
        let name = if prev_hashes.is_some() {
            format!("{seq:06}-incr.pages")
        } else {
            format!("{seq:06}-full.mdb")
        };
        let path = dest.join(&name);
        let (mut out, tmp) = Crc::create_tmp(dest, &name, &fault)?;
        let mut hashes = Vec::with_capacity(pages as usize);
        hashes.extend([page_hash(&snap.metas[..ps]), page_hash(&snap.metas[ps..])]);
        let total = pages * ps as u64;
        // Errors name the file being made, not its temporary name.
        let io = |e: std::io::Error| BackupError::io(&path, e);
        let wr = |out: &mut Crc<BufWriter<SeamFile>>, b: &[u8]| out.write_all(b).map_err(io);
        let mut written = 2u64;
        // Each page is copied out of the map first: a page free in this
        // snapshot may be reused by a writer meanwhile, and its hash, CRC
        // and stored bytes must be of one and the same copy.
        let mut page = vec![0u8; ps];
        match &prev_hashes {
            None => {
                wr(&mut out, &snap.metas)?;
                for pg in 2..pages {
                    map.copy_out(pg as usize * ps, &mut page)?;
                    hashes.push(page_hash(&page));
                    wr(&mut out, &page)?;
                    if pg % 256 == 0 {
                        progress(pg * ps as u64, total);
                    }
                }
                written = pages;
            }
            Some(prev) => {
                // The header's count is filled in once known; the CRC
                // runs over what follows, the header's joined at the end.
                out.inner.write_all(&[0u8; HEADER]).map_err(io)?;
                wr(&mut out, &snap.metas)?;
                for pg in 2..pages {
                    map.copy_out(pg as usize * ps, &mut page)?;
                    let h = page_hash(&page);
                    hashes.push(h);
                    if prev.get(pg as usize) != Some(&h) {
                        wr(&mut out, &pg.to_le_bytes())?;
                        wr(&mut out, &page)?;
                        written += 1;
                    }
                    if pg % 256 == 0 {
                        progress(pg * ps as u64, total);
                    }
                }
            }
        }
        out.flush().map_err(io)?;
        let (mut crc, mut len) = (out.crc, out.len);
        let file = out.inner.into_inner().map_err(|e| io(e.into_error()))?;
        if kind == BackupKind::Incremental {
            // The header's count, and the CRC over the file as it is now.
            let h = IncrHeader {
                page_size: ps as u32,
                txnid: m.txnid,
                pages,
                count: written - 2,
            }
            .encode();
            file.write_at(&h, 0).map_err(io)?;
            crc = crc32c::crc32c_combine(crc32c::crc32c(&h), crc, len as usize);
            len += HEADER as u64;
        }
        file.sync().map_err(io)?;
        drop(file);
        std::fs::rename(tmp.path(), &path).map_err(io)?;
        tmp.keep();
        // Until the manifest lists it, a failure removes it again.
        let placed = TmpPath::new(path.clone());
        let log = match (&base, wal_mode) {
            (Some(b), true) => {
                let prev = b.backups.last().map_or(0, |e| e.txnid);
                let name = format!("{seq:06}-log.records");
                log::archive(&wal_dir, prev, m.txnid, dest, &name, ps, &fault)?
            }
            _ => None,
        };
        let placed_log = log.as_ref().map(|l| TmpPath::new(dest.join(&l.file)));
        let entry = BackupEntry {
            seq,
            kind,
            txnid: m.txnid,
            file: name,
            bytes: len,
            crc32c: crc,
            pages,
            pages_written: written,
            created: now_secs(&fault),
            snapshot_ns: Some(snapshot_ns),
            meta_crc32c: Some(meta_crc32c(&m)),
            wal: wal_mode,
            log,
        };
        let hb = hashes_bytes(&hashes);
        let mut man = base.unwrap_or(Manifest {
            format: manifest::FORMAT,
            page_size: ps as u32,
            backups: Vec::new(),
            hashes_crc32c: 0,
        });
        man.backups.push(entry.clone());
        man.hashes_crc32c = crc32c::crc32c(&hb);
        // The hashes wait beside the manifest until it is in place: a
        // failure in between leaves the old pair, which agree.
        let hashes_tmp = TmpPath::new(dest.join(format!(".{HASHES}.tmp")));
        write_synced(hashes_tmp.path(), &hb, &fault)
            .map_err(|e| e.with_path(&dest.join(HASHES)))?;
        man.save(dest, &fault)?;
        placed.keep();
        if let Some(p) = placed_log {
            p.keep();
        }
        std::fs::rename(hashes_tmp.path(), dest.join(HASHES))
            .map_err(|e| BackupError::io(&dest.join(HASHES), e))?;
        hashes_tmp.keep();
        sync_dir(dest)?;
        if wal_mode {
            // Keep the log's records past this backup for the next one.
            crate::wal::archive::set_hold(&wal_dir, m.txnid)
                .map_err(|e| BackupError::from(e).with_path(&wal_dir))?;
        }
        progress(total, total);
        Ok(entry)
    }
}

/// Refuse to add a backup of the environment whose newest meta is `m` to
/// the chain `man` in `dest` when it cannot continue it: the environment
/// is at an older transaction than the chain's newest (compacted with
/// `mdb copy -c`, restored, or another environment), or at the same one
/// with other contents. (A chain of another environment that is further
/// along cannot be told from this one: LMDB files carry no identity.)
fn same_env(dest: &Path, man: &Manifest, m: &crate::format::meta::Meta) -> BackupResult<()> {
    let Some(newest) = man.backups.last() else {
        return Ok(());
    };
    let other = if m.txnid < newest.txnid {
        format!("this environment is at transaction {}", m.txnid)
    } else if m.txnid == newest.txnid && newest.meta_crc32c.is_some_and(|c| c != meta_crc32c(m)) {
        "this environment is at that transaction with other contents".to_string()
    } else {
        return Ok(());
    };
    Err(BackupError::usage(format!(
        "{} holds backups up to transaction {}, and {other}: it is not the \
         environment backed up there, or was compacted (mdb copy -c) or \
         restored since; back it up into a new directory",
        dest.display(),
        newest.txnid
    )))
}

impl Env {
    /// Write-ahead-log mode: archive into the backup chain in `dest` the
    /// log records committed since its newest entry, as an entry of its
    /// own ([`BackupKind::Log`]): restores reach those transactions too.
    /// `Ok(None)` when nothing was committed since. An error if `dest`
    /// holds no chain yet, or if the log no longer holds every record
    /// since (take a backup then). `mdb backup --continuous` calls this in
    /// a loop.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let dest = tempfile::tempdir().unwrap();
    /// use mdb::{BackupKind, Database, Env, EnvOptions, RestorePoint, Txn, WalOptions, WriteFlags};
    /// let env = EnvOptions::new().wal(WalOptions::default()).open(dir.path())?;
    /// let put = |v: &[u8]| -> mdb::Result<()> {
    ///     let mut w = env.write_txn()?;
    ///     w.put(Database::MAIN, b"k", v, WriteFlags::EMPTY)?;
    ///     w.commit()
    /// };
    /// put(b"1")?; // txn 1
    /// env.backup(dest.path(), false, None)?;
    /// put(b"2")?; // txn 2
    /// put(b"3")?; // txn 3
    /// let entry = env.archive_log(dest.path())?.unwrap();
    /// assert_eq!((entry.kind, entry.txnid), (BackupKind::Log, 3));
    /// assert_eq!(env.archive_log(dest.path())?, None); // nothing new
    ///
    /// let out = tempfile::tempdir()?;
    /// mdb::restore(dest.path(), out.path(), RestorePoint::Txn(2), None)?;
    /// let at2 = Env::open(out.path())?;
    /// assert_eq!(at2.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"2"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn archive_log(&self, dest: &Path) -> BackupResult<Option<BackupEntry>> {
        let wal_dir = self.wal_dir();
        if !self.wal_mode() {
            return Err(BackupError::usage(
                "the environment is not in write-ahead-log mode: no log to archive",
            ));
        }
        let no_chain =
            || BackupError::usage(format!("{}: no backup to archive after", dest.display()));
        if !dest.is_dir() {
            return Err(no_chain());
        }
        let _lock = DirLock::take(dest)?;
        let fault = self.file.fault().cloned();
        let man = Manifest::load(dest)?
            .filter(|m| !m.backups.is_empty())
            .ok_or_else(no_chain)?;
        self.sink().flush()?;
        let meta = self.newest_meta()?;
        same_env(dest, &man, &meta)?;
        let after = man.backups.last().map_or(0, |b| b.txnid);
        let upto = meta.txnid;
        if upto <= after {
            return Ok(None);
        }
        let seq = man.backups.len() as u64;
        let name = format!("{seq:06}-log.records");
        let l = log::archive(&wal_dir, after, upto, dest, &name, self.psize, &fault)?.ok_or_else(
            || {
                BackupError::bad(
                    &wal_dir,
                    format!(
                        "the log no longer holds every record after transaction {after}: \
                         take a backup"
                    ),
                )
            },
        )?;
        let placed = TmpPath::new(dest.join(&l.file));
        let entry = BackupEntry {
            seq,
            kind: BackupKind::Log,
            txnid: upto,
            file: l.file.clone(),
            bytes: l.bytes,
            crc32c: l.crc32c,
            pages: 0,
            pages_written: 0,
            created: now_secs(&fault),
            snapshot_ns: None,
            meta_crc32c: Some(meta_crc32c(&meta)),
            wal: true,
            log: Some(l),
        };
        let mut man = man;
        man.backups.push(entry.clone());
        man.save(dest, &fault)?;
        placed.keep();
        crate::wal::archive::set_hold(&wal_dir, upto)
            .map_err(|e| BackupError::from(e).with_path(&wal_dir))?;
        Ok(Some(entry))
    }

    /// Whether the environment is in write-ahead-log mode (it has a log
    /// directory), whichever way this handle opened it: read-only too.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{EnvFlags, EnvOptions, WalOptions};
    /// EnvOptions::new().wal(WalOptions::default()).open(dir.path())?;
    /// let ro = EnvOptions::new().flags(EnvFlags::READ_ONLY).open(dir.path())?;
    /// assert!(ro.wal_mode() && ro.wal_info().is_none());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn wal_mode(&self) -> bool {
        self.wal_dir().is_dir()
    }
}
