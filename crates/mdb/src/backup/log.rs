//! Log archives: in write-ahead-log mode, each backup after the first
//! also stores the log records committed since the backup before it, so
//! that a restore reaches any transaction in between (point in time).
//!
//! A log archive (`NNNNNN-log.records`): a 40-byte header (magic
//! `MDBLOG03`, page size u32, 0 u32, first and last txnid u64, count u64),
//! then per record: txnid u64, commit time u64 (nanoseconds since the Unix
//! epoch, 0 if the log record had none), length u64, then the log record
//! itself, as the log holds it (padding included, `wal/record/`), so
//! that the archive is as small as the log: pages told by their
//! differences from a page of the snapshot before. Replay applies the
//! records in order onto the restored file, which holds those bases: the
//! previous backup's snapshot, or pages an earlier record rebuilt. The
//! manifest holds the file's CRC32C. `MDBLOG02` archives (per record:
//! txnid u64, commit time u64, run count u32, meta length u32, meta file
//! offset u64, the runs' (page number u64, length u64), the runs' bytes,
//! the meta bytes: whole pages) and `MDBLOG01` ones (the same without the
//! commit time) are still read.

use super::out::{Fault, SeamFile};
use super::pages::Crc;
use super::BackupError;
use crate::wal::archive::records_between;
use serde::{Deserialize, Serialize};
use std::io::{BufReader, Read, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"MDBLOG03";
/// Archives of whole pages.
const MAGIC_V2: &[u8; 8] = b"MDBLOG02";
/// Archives of whole pages, before commit times.
const MAGIC_V1: &[u8; 8] = b"MDBLOG01";
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
    fault: &Fault,
) -> Result<Option<LogArchive>, BackupError> {
    if upto <= after {
        return Ok(None);
    }
    let path = dest.join(name);
    let (mut out, tmp) = Crc::create_tmp(dest, name, fault)?;
    let io = |e: std::io::Error| BackupError::io(&path, e);
    let mut header = [0u8; HEADER];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&(psize as u32).to_le_bytes());
    header[16..24].copy_from_slice(&(after + 1).to_le_bytes());
    header[24..32].copy_from_slice(&upto.to_le_bytes());
    header[32..40].copy_from_slice(&(upto - after).to_le_bytes());
    out.write_all(&header).map_err(io)?;
    let mut next = after + 1;
    let mut failed = None;
    records_between(wal, after, upto, |r| {
        if r.txnid() != next || r.psize() as usize != psize {
            // A gap: stop collecting.
            next = u64::MAX;
            return Ok(());
        }
        next += 1;
        let raw = r.raw();
        let padded = crate::wal::record::pad8(raw.len() as u64).unwrap_or(0);
        let mut w = |b: &[u8]| {
            if failed.is_none() {
                if let Err(e) = out.write_all(b) {
                    failed = Some(e);
                }
            }
        };
        w(&r.txnid().to_le_bytes());
        w(&r.commit_time().unwrap_or(0).to_le_bytes());
        w(&padded.to_le_bytes());
        w(raw);
        w(&[0u8; 8][..(padded as usize - raw.len())]);
        Ok(())
    })
    .map_err(|e| BackupError::from(e).with_path(wal))?;
    if let Some(e) = failed {
        return Err(io(e));
    }
    if next != upto + 1 {
        return Ok(None);
    }
    out.flush().map_err(io)?;
    let (crc, len) = (out.crc, out.len);
    let f = out.inner.into_inner().map_err(|e| io(e.into_error()))?;
    f.sync().map_err(io)?;
    std::fs::rename(tmp.path(), &path).map_err(|e| BackupError::io(&path, e))?;
    tmp.keep();
    Ok(Some(LogArchive {
        file: name.to_string(),
        bytes: len,
        crc32c: crc,
        first_txnid: after + 1,
        last_txnid: upto,
    }))
}

/// Where a replay stops: after transaction `txnid`, and before the first
/// record committed after `time_ns` (or of unknown time) if set.
#[derive(Debug, Clone, Copy)]
pub(super) struct Until {
    pub(super) txnid: u64,
    pub(super) time_ns: Option<u64>,
}

/// Apply the archived records up to `until` to the data file `out` (page
/// size `psize`; `out_path` names it in errors); returns the last txnid
/// applied, and whether the time limit stopped it.
pub(super) fn replay(
    path: &Path,
    a: &LogArchive,
    (out, out_path): (&SeamFile, &Path),
    psize: usize,
    until: Until,
) -> Result<(u64, bool), BackupError> {
    let f = std::fs::File::open(path).map_err(|e| BackupError::io(path, e))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let short = |_| BackupError::bad(path, "ends early");
    let mut h = [0u8; HEADER];
    r.read_exact(&mut h).map_err(short)?;
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let records = &h[..8] == MAGIC;
    let timed = &h[..8] == MAGIC_V2;
    if !(records || timed || &h[..8] == MAGIC_V1)
        || u32_at(&h, 8) as usize != psize
        || u64_at(&h, 16) != a.first_txnid
        || u64_at(&h, 24) != a.last_txnid
    {
        return Err(BackupError::bad(path, "header disagrees with the manifest"));
    }
    let write = |b: &[u8], off: u64| {
        out.write_at(b, off)
            .map_err(|e| BackupError::io(out_path, e))
    };
    if records {
        return replay_records(path, a, &mut r, (out, out_path), psize, until);
    }
    let mut applied = a.first_txnid - 1;
    let mut buf = Vec::new();
    while applied < until.txnid.min(a.last_txnid) {
        // (A record header is 8 bytes shorter without the time.)
        let k = if timed { 8 } else { 0 };
        let mut rh = [0u8; 32];
        r.read_exact(&mut rh[..24 + k]).map_err(short)?;
        let time = if timed { u64_at(&rh, 8) } else { 0 };
        let (txnid, nruns, meta_len, meta_off) = (
            u64_at(&rh, 0),
            u32_at(&rh, 8 + k) as usize,
            u32_at(&rh, 12 + k) as usize,
            u64_at(&rh, 16 + k),
        );
        if txnid != applied + 1 || nruns > (1 << 24) || meta_len > psize {
            return Err(BackupError::bad(
                path,
                format!("record {txnid} out of order"),
            ));
        }
        if until.time_ns.is_some_and(|t| time == 0 || time > t) {
            return Ok((applied, true));
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
            write(&buf, off)?;
        }
        buf.resize(meta_len, 0);
        r.read_exact(&mut buf).map_err(short)?;
        write(&buf, meta_off)?;
        applied = txnid;
    }
    Ok((applied, false))
}

/// [`replay`] of an `MDBLOG03` archive, read by `r` past its header.
fn replay_records(
    path: &Path,
    a: &LogArchive,
    r: &mut impl Read,
    (out, out_path): (&SeamFile, &Path),
    psize: usize,
    until: Until,
) -> Result<(u64, bool), BackupError> {
    let short = |_| BackupError::bad(path, "ends early");
    let out_err = |e: std::io::Error| BackupError::io(out_path, e);
    let mut applied = a.first_txnid - 1;
    let (mut rec, mut pages) = (Vec::new(), Vec::new());
    while applied < until.txnid.min(a.last_txnid) {
        let mut rh = [0u8; 24];
        r.read_exact(&mut rh).map_err(short)?;
        let at = |i: usize| u64::from_le_bytes(rh[i..i + 8].try_into().unwrap());
        let (txnid, time, len) = (at(0), at(8), at(16));
        let bad = |what: &str| BackupError::bad(path, format!("record {txnid}: {what}"));
        if txnid != applied + 1 {
            return Err(BackupError::bad(
                path,
                format!("record {txnid} out of order"),
            ));
        }
        if until.time_ns.is_some_and(|t| time == 0 || time > t) {
            return Ok((applied, true));
        }
        // A record holds at most its pages whole and its meta.
        if len > (1 << 32) {
            return Err(bad("too long"));
        }
        rec.resize(len as usize, 0);
        r.read_exact(&mut rec).map_err(short)?;
        let seq = rec
            .get(8..16)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
        let v = match crate::wal::record::parse(&rec, seq) {
            Some((v, n)) if n == rec.len() && v.txnid() == txnid => v,
            _ => return Err(bad("damaged")),
        };
        if v.psize() as usize != psize {
            return Err(bad("another page size"));
        }
        // Bases are read from the file being restored: the snapshot it
        // started from, or pages an earlier record rebuilt.
        let runs = v
            .expand(&mut pages, |pg, page| {
                let off = pg
                    .checked_mul(psize as u64)
                    .ok_or(crate::error::ErrorKind::Corrupted)?;
                std::os::unix::fs::FileExt::read_exact_at(&out.file, page, off)
                    .map_err(|_| crate::error::ErrorKind::Corrupted.into())
            })
            .map_err(|_| bad("a page it changes is missing from the restored file"))?;
        for (pg, b) in runs {
            let off = pg
                .checked_mul(psize as u64)
                .ok_or_else(|| bad("page out of range"))?;
            out.write_at(b, off).map_err(out_err)?;
        }
        let (meta_off, meta) = v.meta();
        out.write_at(&meta, meta_off).map_err(out_err)?;
        applied = txnid;
    }
    Ok((applied, false))
}

/// Check the header of the archive at `path` against the manifest's `a`.
pub(super) fn check_header(path: &Path, a: &LogArchive, psize: u32) -> Result<(), BackupError> {
    let mut h = [0u8; HEADER];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut h))
        .map_err(|_| BackupError::bad(path, "shorter than its header"))?;
    let ok = (&h[..8] == MAGIC || &h[..8] == MAGIC_V2 || &h[..8] == MAGIC_V1)
        && h[8..12] == psize.to_le_bytes()
        && h[16..24] == a.first_txnid.to_le_bytes()
        && h[24..32] == a.last_txnid.to_le_bytes();
    if !ok {
        return Err(BackupError::bad(path, "header disagrees with the manifest"));
    }
    Ok(())
}
