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
mod pages;

pub use log::LogArchive;
pub use manifest::{BackupEntry, BackupKind, Manifest};

use crate::env::Env;
use crate::error::Error;
use manifest::{sync_dir, write_synced, HASHES};
use pages::{file_crc, hashes_bytes, page_hash, read_hashes, Crc, IncrHeader, HEADER};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A backup, restore or verification failure: the engine's error code and
/// what failed, naming the file.
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
            code,
            path: Some(path.to_path_buf()),
            message: code.to_string(),
        }
    }
    fn bad(path: &Path, msg: impl Into<String>) -> BackupError {
        BackupError {
            code: Error::Corrupted,
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
            code: Error::Os(libc::EINVAL),
            path: None,
            message: msg.into(),
        }
    }
}

impl From<Error> for BackupError {
    fn from(code: Error) -> BackupError {
        BackupError {
            code,
            path: None,
            message: code.to_string(),
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

/// Result of the backup functions.
pub type BackupResult<T> = std::result::Result<T, BackupError>;

/// Progress of a backup or restore: bytes done and the total expected.
pub type BackupProgress<'a> = &'a mut dyn FnMut(u64, u64);

/// Which backup of a chain to restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestorePoint {
    /// The newest backup.
    #[default]
    Newest,
    /// The newest backup of a transaction at or before this id.
    Txn(u64),
    /// The newest backup taken at or before this time (seconds since the
    /// Unix epoch).
    Time(u64),
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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
        let manifest = Manifest::load(dest)?;
        let mut noop = |_: u64, _: u64| {};
        let progress = progress.unwrap_or(&mut noop);
        let ps = self.psize;
        let wal_dir = crate::wal::mode::dir_for(
            &self.path,
            self.flags().contains(crate::EnvFlags::NO_SUB_DIR),
        );
        let wal_mode = wal_dir.is_dir();
        if let Some(w) = &self.wal {
            // Commits of relaxed durability this process sees must be in
            // the log before the snapshot's records are archived.
            w.flush()?;
        }
        let snap = self.copy_snapshot()?;
        let m = snap.meta;
        let pages = m.last_pgno + 1;
        if snap.file_len < pages * ps as u64 {
            return Err(BackupError::bad(
                &self.path,
                "the data file is shorter than its newest snapshot",
            ));
        }
        let map = self.map_for(&m)?;
        let base = manifest.filter(|m| !m.backups.is_empty());
        let seq = base.as_ref().map_or(0, |b| b.backups.len() as u64);
        if let Some(b) = &base {
            if b.page_size as usize != ps {
                return Err(BackupError::usage(format!(
                    "{} holds backups of page size {}, this environment's is {ps}",
                    dest.display(),
                    b.page_size
                )));
            }
        }
        let prev_hashes = match (&base, incremental) {
            (Some(b), true) => Some(read_hashes(&dest.join(HASHES), b.hashes_crc32c)?),
            _ => None,
        };
        let kind = if prev_hashes.is_some() {
            BackupKind::Incremental
        } else {
            BackupKind::Full
        };
        let name = match kind {
            BackupKind::Full => format!("{seq:06}-full.mdb"),
            BackupKind::Incremental => format!("{seq:06}-incr.pages"),
        };
        let path = dest.join(&name);
        let tmp = dest.join(format!(".{name}.tmp"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| BackupError::io(&tmp, e))?;
        let mut out = Crc {
            inner: BufWriter::with_capacity(1 << 20, file),
            crc: 0,
            len: 0,
        };
        let mut hashes = Vec::with_capacity(pages as usize);
        hashes.extend([page_hash(&snap.metas[..ps]), page_hash(&snap.metas[ps..])]);
        let total = pages * ps as u64;
        let wr = |out: &mut Crc<BufWriter<std::fs::File>>, b: &[u8]| {
            out.write_all(b).map_err(|e| BackupError::io(&tmp, e))
        };
        let mut written = 2u64;
        match &prev_hashes {
            None => {
                wr(&mut out, &snap.metas)?;
                for pg in 2..pages {
                    let b = map.slice(pg as usize * ps, ps)?;
                    hashes.push(page_hash(b));
                    wr(&mut out, b)?;
                    if pg % 256 == 0 {
                        progress(pg * ps as u64, total);
                    }
                }
                written = pages;
            }
            Some(prev) => {
                // The header's count is filled in once known.
                wr(&mut out, &[0u8; HEADER])?;
                wr(&mut out, &snap.metas)?;
                for pg in 2..pages {
                    let b = map.slice(pg as usize * ps, ps)?;
                    let h = page_hash(b);
                    hashes.push(h);
                    if prev.get(pg as usize) != Some(&h) {
                        wr(&mut out, &pg.to_le_bytes())?;
                        wr(&mut out, b)?;
                        written += 1;
                    }
                    if pg % 256 == 0 {
                        progress(pg * ps as u64, total);
                    }
                }
            }
        }
        out.flush().map_err(|e| BackupError::io(&tmp, e))?;
        let (mut crc, len) = (out.crc, out.len);
        let file = out
            .inner
            .into_inner()
            .map_err(|e| BackupError::io(&tmp, e.into_error()))?;
        if kind == BackupKind::Incremental {
            // The header's count, and the CRC over the file as it is now.
            let h = IncrHeader {
                page_size: ps as u32,
                txnid: m.txnid,
                pages,
                count: written - 2,
            }
            .encode();
            file.write_all_at(&h, 0)
                .map_err(|e| BackupError::io(&tmp, e))?;
            crc = file_crc_of(&file, &tmp)?;
        }
        file.sync_all().map_err(|e| BackupError::io(&tmp, e))?;
        drop(file);
        std::fs::rename(&tmp, &path).map_err(|e| BackupError::io(&path, e))?;
        let log = match (&base, wal_mode) {
            (Some(b), true) => {
                let prev = b.backups.last().map_or(0, |e| e.txnid);
                log::archive(
                    &wal_dir,
                    prev,
                    m.txnid,
                    dest,
                    &format!("{seq:06}-log.records"),
                    ps,
                )?
            }
            _ => None,
        };
        let hb = hashes_bytes(&hashes);
        write_synced(&dest.join(HASHES), &hb)?;
        let entry = BackupEntry {
            seq,
            kind,
            txnid: m.txnid,
            file: name,
            bytes: len,
            crc32c: crc,
            pages,
            pages_written: written,
            created: now_secs(),
            wal: wal_mode,
            log,
        };
        let mut man = base.unwrap_or(Manifest {
            format: manifest::FORMAT,
            page_size: ps as u32,
            backups: Vec::new(),
            hashes_crc32c: 0,
        });
        man.backups.push(entry.clone());
        man.hashes_crc32c = crc32c::crc32c(&hb);
        man.save(dest)?;
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

/// CRC32C of an open file from its start.
fn file_crc_of(f: &std::fs::File, path: &Path) -> BackupResult<u32> {
    let mut f = f;
    f.seek(SeekFrom::Start(0))
        .map_err(|e| BackupError::io(path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut crc = 0u32;
    loop {
        let n = f.read(&mut buf).map_err(|e| BackupError::io(path, e))?;
        if n == 0 {
            return Ok(crc);
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
    }
}

/// What [`verify`] found: the chain, every file present and matching the
/// manifest.
#[derive(Debug, Clone)]
pub struct VerifyReport {
    /// The manifest read.
    pub manifest: Manifest,
    /// Bytes of backup files read.
    pub bytes: u64,
}

/// Check the backup chain in `dest` end to end without restoring it: the
/// manifest, the chain's order, each file's presence, size and CRC32C, and
/// each incremental file's header. The first problem is an error naming
/// the file.
pub fn verify(dest: &Path) -> BackupResult<VerifyReport> {
    let man = Manifest::load(dest)?.ok_or_else(|| {
        BackupError::bad(&dest.join(manifest::MANIFEST), "no backup manifest here")
    })?;
    let mut bytes = 0;
    for b in &man.backups {
        let path = Manifest::file(dest, b);
        let (crc, len) = file_crc(&path)?;
        if len != b.bytes {
            return Err(BackupError::bad(
                &path,
                format!("{len} bytes, the manifest says {} (truncated?)", b.bytes),
            ));
        }
        if crc != b.crc32c {
            return Err(BackupError::bad(
                &path,
                "CRC32C mismatch: the file is damaged",
            ));
        }
        if b.kind == BackupKind::Incremental {
            let h = read_header(&path)?;
            if h.txnid != b.txnid || h.pages != b.pages || h.page_size != man.page_size {
                return Err(BackupError::bad(
                    &path,
                    "header disagrees with the manifest",
                ));
            }
        }
        bytes += len;
        if let Some(l) = &b.log {
            let path = dest.join(&l.file);
            let (crc, len) = file_crc(&path)?;
            if len != l.bytes {
                return Err(BackupError::bad(
                    &path,
                    format!("{len} bytes, the manifest says {} (truncated?)", l.bytes),
                ));
            }
            if crc != l.crc32c {
                return Err(BackupError::bad(
                    &path,
                    "CRC32C mismatch: the file is damaged",
                ));
            }
            bytes += len;
        }
    }
    let hashes = dest.join(HASHES);
    read_hashes(&hashes, man.hashes_crc32c)?;
    Ok(VerifyReport {
        manifest: man,
        bytes,
    })
}

fn read_header(path: &Path) -> BackupResult<IncrHeader> {
    let mut f = std::fs::File::open(path).map_err(|e| BackupError::io(path, e))?;
    let mut h = [0u8; HEADER];
    f.read_exact(&mut h)
        .map_err(|_| BackupError::bad(path, "shorter than its header"))?;
    IncrHeader::decode(&h, path)
}

/// What [`restore`] rebuilt.
#[derive(Debug, Clone)]
pub struct RestoreReport {
    /// The backup restored (the last one applied).
    pub entry: BackupEntry,
    /// The transaction the environment now holds: the backup's, or past
    /// it through archived log records.
    pub txnid: u64,
    /// Backup files applied, the full one first.
    pub applied: usize,
    /// Bytes of the restored data file.
    pub bytes: u64,
}

/// Rebuild a plain LMDB 0.9 environment in directory `out` (created if
/// needed; `out/data.mdb` must not exist) from the backups in `dest`, at
/// `point`: the backup itself, or with [`RestorePoint::Txn`] in a chain
/// of a write-ahead-log environment, exactly that transaction (the next
/// backup's archived log records replayed onto the one before). Every file used is checked against the manifest first, so a
/// damaged chain gives an error naming the file, never a shorter restore.
pub fn restore(
    dest: &Path,
    out: &Path,
    point: RestorePoint,
    progress: Option<BackupProgress<'_>>,
) -> BackupResult<RestoreReport> {
    let man = Manifest::load(dest)?.ok_or_else(|| {
        BackupError::bad(&dest.join(manifest::MANIFEST), "no backup manifest here")
    })?;
    let last = match point {
        RestorePoint::Newest => man.backups.len().checked_sub(1),
        RestorePoint::Txn(t) => man.backups.iter().rposition(|b| b.txnid <= t),
        RestorePoint::Time(s) => man.backups.iter().rposition(|b| b.created <= s),
    }
    .ok_or_else(|| {
        let have: Vec<String> = man.backups.iter().map(|b| b.txnid.to_string()).collect();
        BackupError::usage(format!(
            "no backup in {} at or before {point:?} (transactions backed up: {})",
            dest.display(),
            have.join(", ")
        ))
    })?;
    let first = man.backups[..=last]
        .iter()
        .rposition(|b| b.kind == BackupKind::Full)
        .ok_or_else(|| BackupError::bad(&dest.join(manifest::MANIFEST), "no full backup"))?;
    let chain = &man.backups[first..=last];
    // Past the backup, up to the transaction asked for: the records the
    // next backup archived (write-ahead-log mode).
    let replay = match point {
        RestorePoint::Txn(t) if t > man.backups[last].txnid => man
            .backups
            .get(last + 1)
            .and_then(|q| q.log.as_ref())
            .filter(|l| l.first_txnid == man.backups[last].txnid + 1 && l.last_txnid >= t)
            .map(|l| (l, t)),
        _ => None,
    };
    if let Some((l, _)) = replay {
        let path = dest.join(&l.file);
        let (crc, len) = file_crc(&path)?;
        if len != l.bytes || crc != l.crc32c {
            return Err(BackupError::bad(
                &path,
                "does not match the manifest (size or CRC32C): damaged or truncated",
            ));
        }
    }
    for b in chain {
        let path = Manifest::file(dest, b);
        let (crc, len) = file_crc(&path)?;
        if len != b.bytes || crc != b.crc32c {
            return Err(BackupError::bad(
                &path,
                "does not match the manifest (size or CRC32C): damaged or truncated",
            ));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| BackupError::io(out, e))?;
    let target = out.join("data.mdb");
    let tmp = out.join(".data.mdb.restoring");
    if target.exists() {
        return Err(BackupError::usage(format!(
            "{} exists: restore into an empty directory",
            target.display()
        )));
    }
    let mut noop = |_: u64, _: u64| {};
    let progress = progress.unwrap_or(&mut noop);
    let total: u64 = chain.iter().map(|b| b.bytes).sum();
    let mut done = 0u64;
    let ps = man.page_size as usize;
    let base = Manifest::file(dest, &chain[0]);
    std::fs::copy(&base, &tmp).map_err(|e| BackupError::io(&base, e))?;
    done += chain[0].bytes;
    progress(done, total);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&tmp)
        .map_err(|e| BackupError::io(&tmp, e))?;
    for b in &chain[1..] {
        let path = Manifest::file(dest, b);
        let mut r = std::io::BufReader::with_capacity(
            1 << 20,
            std::fs::File::open(&path).map_err(|e| BackupError::io(&path, e))?,
        );
        let mut h = [0u8; HEADER];
        r.read_exact(&mut h)
            .map_err(|_| BackupError::bad(&path, "shorter than its header"))?;
        let h = IncrHeader::decode(&h, &path)?;
        if h.page_size as usize != ps || h.txnid != b.txnid || h.pages != b.pages {
            return Err(BackupError::bad(
                &path,
                "header disagrees with the manifest",
            ));
        }
        let short = |_| BackupError::bad(&path, "ends early");
        let mut page = vec![0u8; 2 * ps];
        r.read_exact(&mut page).map_err(short)?;
        f.set_len(h.pages * ps as u64)
            .map_err(|e| BackupError::io(&tmp, e))?;
        f.write_all_at(&page, 0)
            .map_err(|e| BackupError::io(&tmp, e))?;
        page.truncate(ps);
        for _ in 0..h.count {
            let mut n = [0u8; 8];
            r.read_exact(&mut n).map_err(short)?;
            let pg = u64::from_le_bytes(n);
            if pg < 2 || pg >= h.pages {
                return Err(BackupError::bad(&path, format!("page {pg} out of range")));
            }
            r.read_exact(&mut page).map_err(short)?;
            f.write_all_at(&page, pg * ps as u64)
                .map_err(|e| BackupError::io(&tmp, e))?;
        }
        done += b.bytes;
        progress(done, total);
    }
    let mut txnid = chain[chain.len() - 1].txnid;
    if let Some((l, t)) = replay {
        txnid = log::replay(&dest.join(&l.file), l, &f, ps, t)?;
    }
    f.sync_all().map_err(|e| BackupError::io(&tmp, e))?;
    let bytes = f.metadata().map_err(|e| BackupError::io(&tmp, e))?.len();
    drop(f);
    std::fs::rename(&tmp, &target).map_err(|e| BackupError::io(&target, e))?;
    sync_dir(out)?;
    Ok(RestoreReport {
        entry: chain[chain.len() - 1].clone(),
        txnid,
        applied: chain.len() + replay.is_some() as usize,
        bytes,
    })
}
