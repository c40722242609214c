//! Checking a backup chain end to end, and restoring any point of it.

use super::log::{self, Until};
use super::manifest::{self, sync_dir, HASHES};
use super::out::{DirLock, SeamFile, TmpPath, RESTORING};
use super::pages::{file_crc, read_hashes, IncrHeader, HEADER};
use super::{
    BackupEntry, BackupError, BackupKind, BackupProgress, BackupResult, Manifest, RestorePoint,
};
use crate::format::meta::{pick_meta, Meta};
use crate::format::page::{Header, HDR, P_BRANCH, P_INVALID, P_LEAF};
use crate::io::FaultInjector;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

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
        match b.kind {
            BackupKind::Incremental => {
                let h = read_header(&path)?;
                if h.txnid != b.txnid || h.pages != b.pages || h.page_size != man.page_size {
                    return Err(BackupError::bad(
                        &path,
                        "header disagrees with the manifest",
                    ));
                }
            }
            BackupKind::Full => {
                let mut metas = vec![0u8; 2 * man.page_size as usize];
                std::fs::File::open(&path)
                    .and_then(|f| f.read_exact_at(&mut metas, 0))
                    .map_err(|_| BackupError::bad(&path, "shorter than its meta pages"))?;
                check_meta(&path, &metas, man.page_size as usize, b.txnid)?;
            }
            BackupKind::Log => {}
        }
        bytes += b.bytes;
        if let Some(l) = &b.log {
            let lp = dest.join(&l.file);
            if b.kind != BackupKind::Log {
                check_file(&lp, l.bytes, l.crc32c)?;
                bytes += l.bytes;
            }
            log::check_header(&lp, l, man.page_size)?;
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
/// backup's archived log records replayed onto the one before). Every
/// file used is checked against the manifest first, so a damaged chain
/// gives an error naming the file, never a shorter restore; and the
/// result is checked against what the manifest claims (its transaction, a
/// valid LMDB file) before it is renamed into place. A failed restore
/// leaves nothing behind.
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
    restore_inner(dest, out, point, progress, None)
}

/// [`restore`], with every write and sync of the restored file through
/// `fault` ([`IoOp::BackupWrite`](crate::io::IoOp::BackupWrite),
/// [`IoOp::BackupSync`](crate::io::IoOp::BackupSync)): tests inject
/// ENOSPC or EIO with it (with the `unstable` feature only).
///
/// ```
/// use mdb::io::{FaultInjector, IoAction, IoOp};
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// struct Full;
/// impl FaultInjector for Full {
///     fn on_io(&self, op: IoOp) -> IoAction {
///         match op {
///             IoOp::BackupWrite { .. } => IoAction::Fail(libc::ENOSPC),
///             _ => IoAction::Proceed,
///         }
///     }
/// }
/// mdb::Env::open(dir.path())?.backup(dest.path(), false, None)?;
/// let out = tempfile::tempdir()?;
/// let p = mdb::RestorePoint::Newest;
/// let e = mdb::restore_with_faults(dest.path(), out.path(), p, None, Some(std::sync::Arc::new(Full)))
///     .unwrap_err();
/// assert_eq!(e.code, mdb::ErrorKind::Os(libc::ENOSPC));
/// assert_eq!(e.path, Some(out.path().join("data.mdb"))); // the file it could not write
/// assert_eq!(std::fs::read_dir(out.path())?.count(), 0); // nothing left behind
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "unstable")]
pub fn restore_with_faults(
    dest: &Path,
    out: &Path,
    point: RestorePoint,
    progress: Option<BackupProgress<'_>>,
    fault: Option<Arc<dyn FaultInjector>>,
) -> BackupResult<RestoreReport> {
    restore_inner(dest, out, point, progress, fault)
}

fn restore_inner(
    dest: &Path,
    out: &Path,
    point: RestorePoint,
    progress: Option<BackupProgress<'_>>,
    fault: Option<Arc<dyn FaultInjector>>,
) -> BackupResult<RestoreReport> {
    let man = Manifest::load(dest)?.ok_or_else(|| {
        BackupError::bad(&dest.join(manifest::MANIFEST), "no backup manifest here")
    })?;
    let no_backup = || {
        let have: Vec<String> = man.backups.iter().map(|b| b.txnid.to_string()).collect();
        BackupError::usage(format!(
            "no backup in {} at or before {point} (transactions backed up: {})",
            dest.display(),
            have.join(", ")
        ))
    };
    let is_pages = |b: &BackupEntry| b.kind != BackupKind::Log;
    // The newest backup to start from, and where replaying archived log
    // records past it stops.
    let (last, until) = match point {
        RestorePoint::Newest | RestorePoint::Txn(_) => {
            let t = match point {
                RestorePoint::Txn(t) => t,
                _ => man.backups.last().ok_or_else(no_backup)?.txnid,
            };
            let last = man
                .backups
                .iter()
                .rposition(|b| is_pages(b) && b.txnid <= t);
            (
                last,
                Until {
                    txnid: t,
                    time_ns: None,
                },
            )
        }
        RestorePoint::Time(at) => {
            let t = at
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            let last = man
                .backups
                .iter()
                .rposition(|b| is_pages(b) && snapshot_bound(b) <= t);
            let until = Until {
                txnid: u64::MAX,
                time_ns: Some(t),
            };
            (last, until)
        }
    };
    let last = last.ok_or_else(no_backup)?;
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
            Some(l) if reach < until.txnid && l.first_txnid == reach + 1 => {
                replay.push(l);
                reach = l.last_txnid.min(until.txnid);
            }
            _ => break,
        }
    }
    for l in &replay {
        check_file(&dest.join(&l.file), l.bytes, l.crc32c)?;
    }
    for b in &chain {
        check_file(&Manifest::file(dest, b), b.bytes, b.crc32c)?;
    }
    std::fs::create_dir_all(out).map_err(|e| BackupError::io(out, e))?;
    let _lock = DirLock::take(out)?;
    let target = out.join("data.mdb");
    if target.exists() {
        return Err(BackupError::usage(format!(
            "{} exists: restore into an empty directory",
            target.display()
        )));
    }
    let tmp = TmpPath::new(out.join(RESTORING));
    // Errors writing name the file being made, not its temporary name.
    let wio = |e: std::io::Error| BackupError::io(&target, e);
    let f = SeamFile::open(tmp.path(), true, fault).map_err(wio)?;
    let mut noop = |_: u64, _: u64| {};
    let progress = progress.unwrap_or(&mut noop);
    let total: u64 = chain.iter().map(|b| b.bytes).sum();
    let ps = man.page_size as usize;
    copy_into(&Manifest::file(dest, chain[0]), &f, &target)?;
    let mut done = chain[0].bytes;
    progress(done, total);
    for b in chain[1..].iter().copied() {
        apply_incremental(&Manifest::file(dest, b), b, ps, (&f, &target))?;
        done += b.bytes;
        progress(done, total);
    }
    let mut txnid = chain[chain.len() - 1].txnid;
    let mut applied = chain.len();
    for l in &replay {
        let (t, stopped) = log::replay(&dest.join(&l.file), l, (&f, &target), ps, until)?;
        if t > txnid {
            txnid = t;
            applied += 1;
        }
        if stopped {
            break;
        }
    }
    check_restored(&f.file, &target, ps, txnid)?;
    f.sync().map_err(wio)?;
    let bytes = f.file.metadata().map_err(wio)?.len();
    drop(f);
    std::fs::rename(tmp.path(), &target).map_err(wio)?;
    tmp.keep();
    sync_dir(out)?;
    Ok(RestoreReport {
        entry: chain[chain.len() - 1].clone(),
        txnid,
        applied,
        bytes,
    })
}

/// A time no earlier than backup `b`'s snapshot, in nanoseconds since the
/// Unix epoch: when it was taken; for entries of earlier versions, which
/// carry only the whole second the backup ended in, the next second.
fn snapshot_bound(b: &BackupEntry) -> u64 {
    b.snapshot_ns
        .unwrap_or_else(|| b.created.saturating_add(1).saturating_mul(1_000_000_000))
}

/// Copy the full backup `src` into the restore's file `f` (`target` names
/// it in errors).
fn copy_into(src: &Path, f: &SeamFile, target: &Path) -> BackupResult<()> {
    let mut r = std::fs::File::open(src).map_err(|e| BackupError::io(src, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    loop {
        let n = r.read(&mut buf).map_err(|e| BackupError::io(src, e))?;
        if n == 0 {
            return Ok(());
        }
        f.write_at(&buf[..n], at)
            .map_err(|e| BackupError::io(target, e))?;
        at += n as u64;
    }
}

/// Apply the incremental backup file `path` (entry `b`) to the restore's
/// file.
fn apply_incremental(
    path: &Path,
    b: &BackupEntry,
    ps: usize,
    (f, target): (&SeamFile, &Path),
) -> BackupResult<()> {
    let wio = |e: std::io::Error| BackupError::io(target, e);
    let mut r = std::io::BufReader::with_capacity(
        1 << 20,
        std::fs::File::open(path).map_err(|e| BackupError::io(path, e))?,
    );
    let mut h = [0u8; HEADER];
    r.read_exact(&mut h)
        .map_err(|_| BackupError::bad(path, "shorter than its header"))?;
    let h = IncrHeader::decode(&h, path)?;
    if h.page_size as usize != ps || h.txnid != b.txnid || h.pages != b.pages {
        return Err(BackupError::bad(path, "header disagrees with the manifest"));
    }
    let short = |_| BackupError::bad(path, "ends early");
    let mut page = vec![0u8; 2 * ps];
    r.read_exact(&mut page).map_err(short)?;
    f.file.set_len(h.pages * ps as u64).map_err(wio)?;
    f.write_at(&page, 0).map_err(wio)?;
    page.truncate(ps);
    for _ in 0..h.count {
        let mut n = [0u8; 8];
        r.read_exact(&mut n).map_err(short)?;
        let pg = u64::from_le_bytes(n);
        if pg < 2 || pg >= h.pages {
            return Err(BackupError::bad(path, format!("page {pg} out of range")));
        }
        r.read_exact(&mut page).map_err(short)?;
        f.write_at(&page, pg * ps as u64).map_err(wio)?;
    }
    Ok(())
}

/// The restored file is what the manifest claims: an LMDB file of page
/// size `ps` whose newest meta is of transaction `txnid`, as long as its
/// last page, with trees rooted in branch or leaf pages.
fn check_restored(f: &std::fs::File, target: &Path, ps: usize, txnid: u64) -> BackupResult<()> {
    let mut metas = vec![0u8; 2 * ps];
    f.read_exact_at(&mut metas, 0)
        .map_err(|_| BackupError::bad(target, "restored file shorter than its meta pages"))?;
    let m = check_meta(target, &metas, ps, txnid)?;
    let len = f.metadata().map_err(|e| BackupError::io(target, e))?.len();
    let bad = |what: String| {
        BackupError::bad(
            target,
            format!("the restored file {what}: a backup file or the manifest is wrong"),
        )
    };
    if len < (m.last_pgno + 1) * ps as u64 {
        return Err(bad(format!(
            "is shorter than its last page {}",
            m.last_pgno
        )));
    }
    for root in [m.main.root, m.free.root] {
        if root == P_INVALID {
            continue;
        }
        let mut h = [0u8; HDR];
        let ok = root <= m.last_pgno
            && f.read_exact_at(&mut h, root * ps as u64).is_ok()
            && Header::read(&h)
                .is_some_and(|h| h.pgno == root && h.flags & (P_BRANCH | P_LEAF) != 0);
        if !ok {
            return Err(bad(format!("has no tree page at its root {root}")));
        }
    }
    Ok(())
}

/// The meta pages `metas` (of the file `path`) are valid, of page size
/// `ps`, the newest of transaction `txnid`; returns that meta.
fn check_meta(path: &Path, metas: &[u8], ps: usize, txnid: u64) -> BackupResult<Meta> {
    let (_, m) = pick_meta(Meta::decode(&metas[..ps]), Meta::decode(&metas[ps..]))
        .map_err(|_| BackupError::bad(path, "no valid meta page: not an LMDB data file"))?;
    if m.psize() as usize != ps {
        return Err(BackupError::bad(
            path,
            format!("page size {}, the manifest says {ps}", m.psize()),
        ));
    }
    if m.txnid != txnid {
        return Err(BackupError::bad(
            path,
            format!(
                "holds transaction {}, the manifest says {txnid}: a backup file or the manifest is wrong",
                m.txnid
            ),
        ));
    }
    Ok(m)
}
