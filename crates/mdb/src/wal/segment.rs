//! Segment files: `<16 hex digits seq>.wal`, a fixed-size header, then
//! records back to back. Segments are zero-filled and synced before any
//! record goes in, so an append's fdatasync never has file metadata to
//! commit (block allocation, the size, ext4's unwritten extents) and an
//! append never meets a full disk. The zeros are not what recovery reads:
//! a record names its segment's sequence number and chains by CRC, so the
//! stale records of a retired segment renamed into a new one ([`recycle`])
//! end the log as zeros would. A new file is zero-filled only when no
//! retired segment is kept to be renamed (`Log::settle`).
//!
//! The header says whether the segment holds records and, if it does, the
//! *anchor*: the txnid and CRC of the record written just before its first
//! one (or that the log starts there). At open a segment continues the log
//! only if its anchor is the log's end so far, which tells a segment the
//! appender moved on to from one left over from a past the log has since
//! rewritten. When the log moves on, a *seal* after the last record names
//! the next segment ([`Seal`]).

use super::seam::{sync_dir, Seam};
use crate::error::{ErrorKind, Result};
use crate::format::bytes::{get16, get32, get64};
use crate::io::{IoAction, IoOp};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// "MDWS": marks a segment header.
const MAGIC: u32 = 0x5357_444d;
const VERSION: u16 = 1;
/// Bytes of the header; records start here (8-aligned).
pub(crate) const SEG_HEADER: usize = 40;
/// Name of the file a new segment is zero-filled under before its rename.
const TEMP_NAME: &str = "segment.tmp";

/// Where a segment's records chain on from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// Prepared or retired: holds no records of the log.
    Unused,
    /// Holds records; the first follows the record `(txnid, crc)`, or
    /// starts the log when `None`.
    After(Option<(u64, u32)>),
}

/// A segment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegHeader {
    pub(crate) seq: u64,
    /// The file's length.
    pub(crate) size: u64,
    pub(crate) anchor: Anchor,
}

impl SegHeader {
    pub(crate) fn encode(&self) -> [u8; SEG_HEADER] {
        let (state, txnid, crc) = match self.anchor {
            Anchor::Unused => (0u16, 0, 0),
            Anchor::After(None) => (1, 0, 0),
            Anchor::After(Some((t, c))) => (2, t, c),
        };
        let mut b = [0u8; SEG_HEADER];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
        b[6..8].copy_from_slice(&state.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b[24..32].copy_from_slice(&txnid.to_le_bytes());
        b[32..36].copy_from_slice(&crc.to_le_bytes());
        let sum = crc32c::crc32c(&b[..36]);
        b[36..40].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// The header at the start of `b`, `None` unless whole and valid.
    pub(crate) fn parse(b: &[u8]) -> Option<SegHeader> {
        if get32(b, 0)? != MAGIC
            || get16(b, 4)? != VERSION
            || crc32c::crc32c(b.get(..36)?) != get32(b, 36)?
        {
            return None;
        }
        let anchor = match get16(b, 6)? {
            0 => Anchor::Unused,
            1 => Anchor::After(None),
            2 => Anchor::After(Some((get64(b, 24)?, get32(b, 32)?))),
            _ => return None,
        };
        Some(SegHeader {
            seq: get64(b, 8)?,
            size: get64(b, 16)?,
            anchor,
        })
    }
}

/// "MDWE": marks a seal, the end of a segment's records.
const SEAL_MAGIC: u32 = 0x4557_444d;
/// Bytes of a seal; every segment keeps room for one after its records.
pub(crate) const SEAL_LEN: usize = 40;

/// A seal: written after the last record of a segment once it is synced,
/// as the log moves on to segment `next`; durable before any record of
/// `next` is acknowledged. At open it proves that `next` held the log
/// after the record `chain`, so a missing `next` is a loss, not a tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seal {
    pub(crate) seq: u64,
    pub(crate) next: u64,
    /// The last record of the segment: its txnid and CRC.
    pub(crate) chain: (u64, u32),
}

impl Seal {
    pub(crate) fn encode(&self) -> [u8; SEAL_LEN] {
        let mut b = [0u8; SEAL_LEN];
        b[0..4].copy_from_slice(&SEAL_MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.next.to_le_bytes());
        b[24..32].copy_from_slice(&self.chain.0.to_le_bytes());
        b[32..36].copy_from_slice(&self.chain.1.to_le_bytes());
        let sum = crc32c::crc32c(&b[..36]);
        b[36..40].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// The seal of segment `seq` at the start of `b`, if whole and valid.
    pub(crate) fn parse(b: &[u8], seq: u64) -> Option<Seal> {
        if get32(b, 0)? != SEAL_MAGIC
            || get16(b, 4)? != VERSION
            || crc32c::crc32c(b.get(..36)?) != get32(b, 36)?
            || get64(b, 8)? != seq
        {
            return None;
        }
        Some(Seal {
            seq,
            next: get64(b, 16)?,
            chain: (get64(b, 24)?, get32(b, 32)?),
        })
    }
}

/// The path of segment `seq` in `dir`.
pub(crate) fn path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:016x}.wal"))
}

/// The sequence number a segment file name stands for.
pub(crate) fn parse_name(name: &str) -> Option<u64> {
    let hex = name.strip_suffix(".wal")?;
    if hex.len() != 16 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// The sequence numbers of the segment files in `dir`, ascending; removes
/// a segment left half-made by a crash.
pub(crate) fn list(dir: &Path) -> Result<Vec<u64>> {
    let mut seqs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if name == TEMP_NAME {
            std::fs::remove_file(dir.join(TEMP_NAME))?;
        } else if name.starts_with(SPARE_PREFIX) && name.ends_with(".tmp") {
            // A spare being filled off the commit path by a process that
            // died (or that will find it gone and make another).
            let _ = std::fs::remove_file(dir.join(&*name));
        } else if let Some(seq) = parse_name(&name) {
            seqs.push(seq);
        }
    }
    seqs.sort_unstable();
    Ok(seqs)
}

/// Open segment `seq` for reading and writing.
pub(crate) fn open(dir: &Path, seq: u64) -> Result<File> {
    Ok(OpenOptions::new()
        .read(true)
        .write(true)
        .open(path(dir, seq))?)
}

/// Read segment `seq`'s header; `None` when it is not a valid header of
/// that segment with the file's length.
pub(crate) fn read_header(file: &File, seq: u64) -> Result<Option<SegHeader>> {
    let mut b = [0u8; SEG_HEADER];
    let len = file.metadata()?.len();
    if len < SEG_HEADER as u64 {
        return Ok(None);
    }
    file.read_exact_at(&mut b, 0)?;
    Ok(SegHeader::parse(&b).filter(|h| h.seq == seq && h.size == len))
}

/// Write the header of an unused segment (unsynced).
fn write_unused(file: &File, seq: u64, size: u64) -> Result<()> {
    let header = SegHeader {
        seq,
        size,
        anchor: Anchor::Unused,
    };
    Ok(file.write_all_at(&header.encode(), 0)?)
}

/// Write `len` zero bytes from the start of `file` (really written: on
/// ext4 a first write into fallocated space still commits metadata).
fn write_zeros(file: &File, len: u64) -> Result<()> {
    let zeros = vec![0u8; (1 << 20).min(len as usize)];
    let mut off = 0u64;
    while off < len {
        let n = (len - off).min(zeros.len() as u64);
        file.write_all_at(&zeros[..n as usize], off)?;
        off += n;
    }
    Ok(())
}

/// Name prefix of the files [`fill_spare`] makes.
const SPARE_PREFIX: &str = "spare-";

/// A zero-filled, synced file of `size` bytes under a temporary name in
/// `dir`, made without holding the log: [`Pool::adopt`] makes it a spare.
pub(crate) fn fill_spare(dir: &Path, size: u64) -> Result<PathBuf> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!("{SPARE_PREFIX}{}-{n}.tmp", std::process::id()));
    let r = (|| -> Result<()> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        write_zeros(&file, size)?;
        Ok(file.sync_all()?)
    })();
    match r {
        Ok(()) => Ok(temp),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Create segment `seq` of `size` bytes: zero-filled (really written, since
/// on ext4 a first write into fallocated space still commits metadata)
/// under a temporary name, synced, renamed, and the directory synced. On
/// failure (a full disk) the temporary file is removed; one a crash left
/// is removed at the next open ([`list`]).
pub(crate) fn create(dir: &Path, seam: &Seam, seq: u64, size: u64) -> Result<File> {
    // A failure is the zero-fill's (ENOSPC); a tear zero-fills a prefix
    // and stops as a crash would: the file keeps its temporary name.
    let (fill, fail) = match seam.ask(IoOp::LogPrepare { seq, fill: true }) {
        IoAction::Proceed => (size, None),
        IoAction::Fail(e) => (0, Some(e)),
        IoAction::Tear(n) => ((n as u64).min(size), None),
    };
    let temp = dir.join(TEMP_NAME);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp)?;
    let filled = match fail {
        Some(e) => Err(ErrorKind::Os(e).into()),
        None => write_zeros(&file, fill),
    };
    if let Err(e) = filled {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    if fill < size {
        return Err(ErrorKind::Os(libc::EIO).into());
    }
    let done = write_unused(&file, seq, size).and_then(|()| Ok(file.sync_all()?));
    if let Err(e) = done {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    std::fs::rename(&temp, path(dir, seq))?;
    sync_dir(dir)?;
    Ok(file)
}

/// Turn spare segment `*from` into the empty segment `to` (its stale
/// records carry the old sequence number, so they no longer parse): rename,
/// rewrite the header, sync both. `*from` follows the file's name, so a
/// failure leaves the spare usable for another attempt.
pub(crate) fn recycle(dir: &Path, seam: &Seam, from: &mut u64, to: u64, size: u64) -> Result<File> {
    // A tear renames and stops: the header still names the old segment.
    let torn = match seam.ask(IoOp::LogPrepare {
        seq: to,
        fill: false,
    }) {
        IoAction::Proceed => false,
        IoAction::Fail(e) => return Err(ErrorKind::Os(e).into()),
        IoAction::Tear(_) => true,
    };
    std::fs::rename(path(dir, *from), path(dir, to))?;
    *from = to;
    if torn {
        return Err(ErrorKind::Os(libc::EIO).into());
    }
    let file = open(dir, to)?;
    write_unused(&file, to, size)?;
    file.sync_data()?;
    sync_dir(dir)?;
    Ok(file)
}

/// Retire checkpointed segment `seq`: mark it unused (synced, so retiring
/// segments oldest first never leaves a gap in the log), then delete it
/// unless it is to be kept as a spare.
pub(crate) fn retire(dir: &Path, seam: &Seam, seq: u64, size: u64, keep: bool) -> Result<()> {
    seam.check(IoOp::LogRetire { seq })?;
    let file = open(dir, seq)?;
    write_unused(&file, seq, size)?;
    file.sync_data()?;
    if !keep {
        // Not synced: should the name come back after a crash, the file is
        // an unused segment, a spare.
        std::fs::remove_file(path(dir, seq))?;
    }
    Ok(())
}

/// The segment files not in the log: spares to rename into new segments,
/// and the sequence numbers still free.
pub(crate) struct Pool {
    pub(crate) dir: PathBuf,
    pub(crate) seam: Seam,
    /// Size of a regular segment.
    pub(crate) segment_size: u64,
    /// How many spares to keep.
    pub(crate) max_spares: usize,
    /// Unused files of `segment_size` bytes, by their name's sequence number.
    pub(crate) spares: Vec<u64>,
    /// Above every sequence number ever used in the directory.
    pub(crate) next_seq: u64,
}

impl Pool {
    /// A new empty segment `(seq, size, file)` of `size` bytes: a spare
    /// renamed when one has that size, else a new zero-filled file.
    pub(crate) fn make(&mut self, size: u64) -> Result<(u64, u64, File)> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let file = match self.spares.last_mut() {
            Some(from) if size == self.segment_size => {
                let file = recycle(&self.dir, &self.seam, from, seq, size)?;
                self.spares.pop();
                file
            }
            _ => create(&self.dir, &self.seam, seq, size)?,
        };
        Ok((seq, size, file))
    }

    /// Make `temp` (from [`fill_spare`], `segment_size` bytes) a spare
    /// segment with the next sequence number.
    pub(crate) fn adopt(&mut self, temp: &Path) -> Result<()> {
        let seq = self.next_seq;
        self.seam.check(IoOp::LogPrepare { seq, fill: true })?;
        self.next_seq += 1;
        let file = OpenOptions::new().write(true).open(temp)?;
        write_unused(&file, seq, self.segment_size)?;
        file.sync_data()?;
        std::fs::rename(temp, path(&self.dir, seq))?;
        sync_dir(&self.dir)?;
        self.spares.push(seq);
        Ok(())
    }

    /// Keep an unused segment file as a spare, or delete it.
    pub(crate) fn discard(&mut self, seq: u64, size: u64) -> Result<()> {
        if size == self.segment_size && self.spares.len() < self.max_spares {
            self.spares.push(seq);
            Ok(())
        } else {
            Ok(std::fs::remove_file(path(&self.dir, seq))?)
        }
    }

    /// Delete the spares beyond the first `keep` (the oldest go first).
    pub(crate) fn trim(&mut self, keep: usize) -> Result<()> {
        while self.spares.len() > keep {
            let seq = self.spares.remove(0);
            std::fs::remove_file(path(&self.dir, seq))?;
        }
        Ok(())
    }

    /// Retire a segment that held records (see [`retire`]) into the spares
    /// or out of the directory.
    pub(crate) fn retire(&mut self, seq: u64, size: u64) -> Result<()> {
        let keep = size == self.segment_size && self.spares.len() < self.max_spares;
        retire(&self.dir, &self.seam, seq, size, keep)?;
        if keep {
            self.spares.push(seq);
        }
        Ok(())
    }
}
