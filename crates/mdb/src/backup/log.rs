//! Log archives: in write-ahead-log mode, each backup after the first
//! also stores the log records committed since the backup before it, so
//! that a restore reaches any transaction in between (point in time).
//!
//! A log archive (`NNNNNN-log.records`): a 40-byte header (magic
//! `MDBLOG01`, page size u32, 0 u32, first and last txnid u64, count u64),
//! then per record: txnid u64, run count u32, meta length u32, meta file
//! offset u64, the runs' (page number u64, length u64), the runs' bytes,
//! the meta bytes. The manifest holds the file's CRC32C.

use super::pages::Crc;
use super::BackupError;
use crate::wal::archive::records_between;
use serde::{Deserialize, Serialize};
use std::io::{BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

const MAGIC: &[u8; 8] = b"MDBLOG01";
const HEADER: usize = 40;

/// The log records a backup archived (write-ahead-log mode:
/// [`BackupEntry::log`](crate::BackupEntry::log)).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// use mdb::{Database, EnvOptions, WalOptions, WriteFlags};
/// let env = EnvOptions::new().wal(WalOptions::default()).open(dir.path())?;
/// env.backup(dest.path(), false, None)?; // txn 0
/// for i in 0u32..3 {
///     let mut w = env.write_txn()?;
///     w.put(Database::MAIN, &i.to_be_bytes(), b"v", WriteFlags::EMPTY)?;
///     w.commit()?;
/// }
/// let log = env.archive_log(dest.path())?.unwrap().log.unwrap();
/// assert_eq!((log.first_txnid, log.last_txnid), (1, 3));
/// assert_eq!(log.bytes, std::fs::metadata(dest.path().join(&log.file))?.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LogArchive {
    /// File name in the backup directory.
    pub file: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// CRC32C of the whole file.
    pub crc32c: u32,
    /// First transaction it holds (the previous backup's plus one).
    pub first_txnid: u64,
    /// Last transaction it holds (this backup's).
    pub last_txnid: u64,
}

/// Archive the records of the log in `wal` with txnids `after + 1..=upto`
/// into `dest/name`; `None` (and no file) if the log no longer holds all
/// of them (segments recycled before the chain held the log).
pub(super) fn archive(
    wal: &Path,
    after: u64,
    upto: u64,
    dest: &Path,
    name: &str,
    psize: usize,
) -> Result<Option<LogArchive>, BackupError> {
    if upto <= after {
        return Ok(None);
    }
    let path = dest.join(name);
    let (mut out, tmp) = Crc::create_tmp(dest, name)?;
    let io = |e: std::io::Error| BackupError::io(&tmp, e);
    let mut header = [0u8; HEADER];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&(psize as u32).to_le_bytes());
    header[16..24].copy_from_slice(&(after + 1).to_le_bytes());
    header[24..32].copy_from_slice(&upto.to_le_bytes());
    header[32..40].copy_from_slice(&(upto - after).to_le_bytes());
    out.write_all(&header).map_err(io)?;
    let mut next = after + 1;
    let mut buf = Vec::new();
    let mut failed = None;
    records_between(wal, after, upto, |r| {
        if r.txnid() != next || r.psize() as usize != psize {
            // A gap: stop collecting.
            next = u64::MAX;
            return Ok(());
        }
        next += 1;
        let runs = r.expand(&mut buf);
        let (meta_off, meta) = r.meta();
        let mut w = |b: &[u8]| {
            if failed.is_none() {
                if let Err(e) = out.write_all(b) {
                    failed = Some(e);
                }
            }
        };
        w(&r.txnid().to_le_bytes());
        w(&(runs.len() as u32).to_le_bytes());
        w(&(meta.len() as u32).to_le_bytes());
        w(&meta_off.to_le_bytes());
        for (pg, b) in &runs {
            w(&pg.to_le_bytes());
            w(&(b.len() as u64).to_le_bytes());
        }
        for (_, b) in &runs {
            w(b);
        }
        w(meta);
        Ok(())
    })
    .map_err(|e| BackupError::from(e).with_path(wal))?;
    if let Some(e) = failed {
        return Err(io(e));
    }
    if next != upto + 1 {
        drop(out);
        let _ = std::fs::remove_file(&tmp);
        return Ok(None);
    }
    out.flush().map_err(io)?;
    let (crc, len) = (out.crc, out.len);
    let f = out.inner.into_inner().map_err(|e| io(e.into_error()))?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(|e| BackupError::io(&path, e))?;
    Ok(Some(LogArchive {
        file: name.to_string(),
        bytes: len,
        crc32c: crc,
        first_txnid: after + 1,
        last_txnid: upto,
    }))
}

/// Apply the archived records with txnids up to `upto` to the data file
/// `out` (page size `psize`); returns the last txnid applied.
pub(super) fn replay(
    path: &Path,
    a: &LogArchive,
    out: &std::fs::File,
    psize: usize,
    upto: u64,
) -> Result<u64, BackupError> {
    let f = std::fs::File::open(path).map_err(|e| BackupError::io(path, e))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let short = |_| BackupError::bad(path, "ends early");
    let mut h = [0u8; HEADER];
    r.read_exact(&mut h).map_err(short)?;
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    if &h[..8] != MAGIC
        || u32_at(&h, 8) as usize != psize
        || u64_at(&h, 16) != a.first_txnid
        || u64_at(&h, 24) != a.last_txnid
    {
        return Err(BackupError::bad(path, "header disagrees with the manifest"));
    }
    let mut applied = a.first_txnid - 1;
    let mut buf = Vec::new();
    while applied < upto.min(a.last_txnid) {
        let mut rh = [0u8; 24];
        r.read_exact(&mut rh).map_err(short)?;
        let (txnid, nruns, meta_len, meta_off) = (
            u64_at(&rh, 0),
            u32_at(&rh, 8) as usize,
            u32_at(&rh, 12) as usize,
            u64_at(&rh, 16),
        );
        if txnid != applied + 1 || nruns > (1 << 24) || meta_len > psize {
            return Err(BackupError::bad(
                path,
                format!("record {txnid} out of order"),
            ));
        }
        let mut table = vec![0u8; nruns * 16];
        r.read_exact(&mut table).map_err(short)?;
        for e in table.chunks_exact(16) {
            let (pg, len) = (u64_at(e, 0), u64_at(e, 8) as usize);
            if len == 0 || len % psize != 0 || len > 1 << 32 {
                return Err(BackupError::bad(path, format!("record {txnid}: bad run")));
            }
            buf.resize(len, 0);
            r.read_exact(&mut buf).map_err(short)?;
            let off = pg
                .checked_mul(psize as u64)
                .ok_or_else(|| BackupError::bad(path, "page out of range"))?;
            out.write_all_at(&buf, off)
                .map_err(|e| BackupError::io(path, e))?;
        }
        buf.resize(meta_len, 0);
        r.read_exact(&mut buf).map_err(short)?;
        out.write_all_at(&buf, meta_off)
            .map_err(|e| BackupError::io(path, e))?;
        applied = txnid;
    }
    Ok(applied)
}
