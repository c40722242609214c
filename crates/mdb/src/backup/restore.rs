//! Checking a backup chain end to end, and restoring any point of it.

use super::manifest::{self, sync_dir, HASHES};
use super::pages::{file_crc, read_hashes, IncrHeader, HEADER};
use super::{
    log, BackupEntry, BackupError, BackupKind, BackupProgress, BackupResult, Manifest, RestorePoint,
};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// What [`verify`] found: the chain, every file present and matching the
/// manifest.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// let env = mdb::Env::open(dir.path())?;
/// let b = env.backup(dest.path(), false, None)?;
/// let report = mdb::verify(dest.path())?;
/// assert_eq!(report.manifest.backups.len(), 1);
/// assert_eq!(report.bytes, b.bytes);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
///
/// ```
/// use mdb::ErrorKind;
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// use mdb::Error;
/// let env = mdb::Env::open(dir.path())?;
/// let b = env.backup(dest.path(), false, None)?;
/// mdb::verify(dest.path())?;
/// // A damaged backup file is found, and named.
/// let file = dest.path().join(&b.file);
/// let mut bytes = std::fs::read(&file)?;
/// bytes[100] ^= 1;
/// std::fs::write(&file, bytes)?;
/// let e = mdb::verify(dest.path()).unwrap_err();
/// assert_eq!((e.code.kind(), e.path), (ErrorKind::Corrupted, Some(file)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify(dest: &Path) -> BackupResult<VerifyReport> {
    let man = Manifest::load(dest)?.ok_or_else(|| {
        BackupError::bad(&dest.join(manifest::MANIFEST), "no backup manifest here")
    })?;
    let mut bytes = 0;
    for b in &man.backups {
        let path = Manifest::file(dest, b);
        check_file(&path, b.bytes, b.crc32c)?;
        if b.kind == BackupKind::Incremental {
            let h = read_header(&path)?;
            if h.txnid != b.txnid || h.pages != b.pages || h.page_size != man.page_size {
                return Err(BackupError::bad(
                    &path,
                    "header disagrees with the manifest",
                ));
            }
        }
        bytes += b.bytes;
        if let (Some(l), false) = (&b.log, b.kind == BackupKind::Log) {
            check_file(&dest.join(&l.file), l.bytes, l.crc32c)?;
            bytes += l.bytes;
        }
    }
    let hashes = dest.join(HASHES);
    read_hashes(&hashes, man.hashes_crc32c)?;
    Ok(VerifyReport {
        manifest: man,
        bytes,
    })
}

/// The file at `path` has the size and CRC32C the manifest records;
/// otherwise an error naming it.
fn check_file(path: &Path, bytes: u64, crc32c: u32) -> BackupResult<()> {
    let (crc, len) = file_crc(path)?;
    if len != bytes {
        return Err(BackupError::bad(
            path,
            format!("{len} bytes, the manifest says {bytes} (truncated?)"),
        ));
    }
    if crc != crc32c {
        return Err(BackupError::bad(
            path,
            "CRC32C mismatch: the file is damaged",
        ));
    }
    Ok(())
}

fn read_header(path: &Path) -> BackupResult<IncrHeader> {
    let mut f = std::fs::File::open(path).map_err(|e| BackupError::io(path, e))?;
    let mut h = [0u8; HEADER];
    f.read_exact(&mut h)
        .map_err(|_| BackupError::bad(path, "shorter than its header"))?;
    IncrHeader::decode(&h, path)
}

/// What [`restore`] rebuilt.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// # let out = tempfile::tempdir().unwrap();
/// use mdb::RestorePoint;
/// let env = mdb::Env::open(dir.path())?;
/// env.backup(dest.path(), false, None)?;
/// let newest = env.backup(dest.path(), true, None)?;
/// let r = mdb::restore(dest.path(), out.path(), RestorePoint::Newest, None)?;
/// assert_eq!(r.entry, newest);
/// assert_eq!(r.applied, 2); // the full backup, then the incremental one
/// assert_eq!(r.bytes, std::fs::metadata(out.path().join("data.mdb"))?.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, RestorePoint, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// w.commit()?;
/// env.backup(dest.path(), false, None)?;
///
/// let out = tempfile::tempdir()?;
/// let report = mdb::restore(dest.path(), out.path(), RestorePoint::Newest, None)?;
/// assert_eq!(report.txnid, 1);
/// let restored = Env::open(out.path())?; // a plain LMDB environment
/// assert_eq!(restored.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn restore(
    dest: &Path,
    out: &Path,
    point: RestorePoint,
    progress: Option<BackupProgress<'_>>,
) -> BackupResult<RestoreReport> {
    let man = Manifest::load(dest)?.ok_or_else(|| {
        BackupError::bad(&dest.join(manifest::MANIFEST), "no backup manifest here")
    })?;
    let no_backup = || {
        let have: Vec<String> = man.backups.iter().map(|b| b.txnid.to_string()).collect();
        BackupError::usage(format!(
            "no backup in {} at or before {point:?} (transactions backed up: {})",
            dest.display(),
            have.join(", ")
        ))
    };
    // The transaction to reach.
    let target = match point {
        RestorePoint::Newest => man.backups.last().map(|b| b.txnid),
        RestorePoint::Txn(t) => Some(t),
        RestorePoint::Time(s) => man
            .backups
            .iter()
            .rfind(|b| b.created <= s)
            .map(|b| b.txnid),
    }
    .ok_or_else(no_backup)?;
    let is_pages = |b: &BackupEntry| b.kind != BackupKind::Log;
    let last = man
        .backups
        .iter()
        .rposition(|b| is_pages(b) && b.txnid <= target)
        .ok_or_else(no_backup)?;
    let first = man.backups[..=last]
        .iter()
        .rposition(|b| b.kind == BackupKind::Full)
        .ok_or_else(|| BackupError::bad(&dest.join(manifest::MANIFEST), "no full backup"))?;
    let chain: Vec<&BackupEntry> = man.backups[first..=last]
        .iter()
        .filter(|b| is_pages(b))
        .collect();
    // Past that backup, up to the target: the log records the entries
    // after it archived (write-ahead-log mode), as far as they chain.
    let mut replay = Vec::new();
    let mut reach = man.backups[last].txnid;
    for b in &man.backups[last + 1..] {
        match &b.log {
            Some(l) if reach < target && l.first_txnid == reach + 1 => {
                replay.push((l, target));
                reach = l.last_txnid.min(target);
            }
            _ => break,
        }
    }
    for (l, _) in &replay {
        check_file(&dest.join(&l.file), l.bytes, l.crc32c)?;
    }
    for b in &chain {
        check_file(&Manifest::file(dest, b), b.bytes, b.crc32c)?;
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
    let base = Manifest::file(dest, chain[0]);
    std::fs::copy(&base, &tmp).map_err(|e| BackupError::io(&base, e))?;
    done += chain[0].bytes;
    progress(done, total);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&tmp)
        .map_err(|e| BackupError::io(&tmp, e))?;
    for b in chain[1..].iter().copied() {
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
    for (l, t) in &replay {
        txnid = log::replay(&dest.join(&l.file), l, &f, ps, *t)?;
    }
    f.sync_all().map_err(|e| BackupError::io(&tmp, e))?;
    let bytes = f.metadata().map_err(|e| BackupError::io(&tmp, e))?.len();
    drop(f);
    std::fs::rename(&tmp, &target).map_err(|e| BackupError::io(&target, e))?;
    sync_dir(out)?;
    Ok(RestoreReport {
        entry: chain[chain.len() - 1].clone(),
        txnid,
        applied: chain.len() + replay.len(),
        bytes,
    })
}
