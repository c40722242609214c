//! All writes and syncs of the data file, in one place.
//!
//! Commits write pages, sync, and write the meta update through `DataFile`:
//! with `pwrite` to the file, or under WRITEMAP by copying into the writable
//! map and `msync`ing it; growing the file and `Env::sync` go through it
//! too. Nothing else writes to the data file. A test can install a
//! `FaultInjector` to fail or tear any of these steps (ENOSPC, EIO, torn
//! writes), whichever way they reach the file. The write-ahead log's files
//! go through the same seam (`wal/seam.rs`, `IoOp::Log*`), as do backups'
//! syncs (`IoOp::BackupSync`). Pages come as page numbers; this is the one
//! place they become file offsets. The commit sinks (`sink.rs`,
//! `wal/sink.rs`) decide what is written when.

use crate::error::{Error, ErrorKind, Result};
use crate::format::meta::{pick_meta, Meta, META_LEN, META_WRITE_LEN, META_WRITE_OFF};
use crate::format::patch::Patch;
use crate::mmap::Map;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One I/O step the engine is about to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoOp {
    /// Writing dirty pages at a file offset.
    WritePages {
        /// File offset.
        offset: u64,
        /// Bytes.
        len: usize,
    },
    /// Flushing data pages to stable storage.
    SyncData,
    /// Writing the meta-page update at a file offset.
    WriteMeta {
        /// File offset.
        offset: u64,
        /// Bytes.
        len: usize,
    },
    /// Growing the file to `len` bytes (WRITEMAP maps need the whole map
    /// backed by the file).
    Extend {
        /// New length.
        len: u64,
    },
    /// Cutting the file to `len` bytes: its tail holds only pages free
    /// in every snapshot (`Env::shrink`).
    Truncate {
        /// New length.
        len: u64,
    },
    /// Writing bytes (records, a segment header) into write-ahead-log
    /// segment `seq`.
    LogWrite {
        /// Segment sequence number.
        seq: u64,
        /// Offset in the segment.
        offset: u64,
        /// Bytes.
        len: usize,
    },
    /// Flushing log segment `seq` to stable storage.
    LogSync {
        /// Segment sequence number.
        seq: u64,
    },
    /// Making segment `seq` ready for records: creating and zero-filling
    /// it, or renaming a spare segment into it (a tear leaves the step half
    /// done).
    LogPrepare {
        /// Segment sequence number.
        seq: u64,
        /// A new file zero-filled (else a retired segment renamed).
        fill: bool,
    },
    /// Retiring segment `seq` once checkpointed: invalidating its header,
    /// and deleting it unless it is kept as a spare.
    LogRetire {
        /// Segment sequence number.
        seq: u64,
    },
    /// Writing a slot of the log's checkpoint file.
    CheckpointWrite {
        /// Offset in the checkpoint file.
        offset: u64,
        /// Bytes.
        len: usize,
    },
    /// Flushing the checkpoint file.
    CheckpointSync,
    /// Writing bytes of a file a backup writes into its directory, or of
    /// the data file a restore rebuilds.
    BackupWrite {
        /// Offset in the file.
        offset: u64,
        /// Bytes.
        len: usize,
    },
    /// Flushing a backup's or a restore's file to stable storage.
    BackupSync,
}

/// What a [`FaultInjector`] wants done with an [`IoOp`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoAction {
    /// Perform the operation normally.
    Proceed,
    /// Fail it with this errno, writing nothing.
    Fail(i32),
    /// Write only the first `n` bytes, then fail with EIO (a torn write).
    Tear(usize),
}

impl IoAction {
    /// Go ahead with a step that cannot be torn (a sync, a resize): `Ok`,
    /// or the failure's errno; a tear fails it with EIO.
    pub(crate) fn untorn(self) -> Result<()> {
        match self {
            IoAction::Proceed => Ok(()),
            IoAction::Fail(e) => Err(ErrorKind::Os(e).into()),
            IoAction::Tear(_) => Err(ErrorKind::Os(libc::EIO).into()),
        }
    }

    /// Carry out a write of `len` bytes as decided: `write(n)` writes the
    /// first `n` of them, all of them to proceed; a failure writes nothing
    /// and returns its errno; a tear writes a prefix and fails with EIO.
    pub(crate) fn write(self, len: usize, write: impl FnOnce(usize) -> Result<()>) -> Result<()> {
        match self {
            IoAction::Proceed => write(len),
            IoAction::Fail(e) => Err(ErrorKind::Os(e).into()),
            IoAction::Tear(n) => {
                write(n.min(len))?;
                Err(ErrorKind::Os(libc::EIO).into())
            }
        }
    }
}

/// Hook through which tests inject I/O failures, and a clock.
pub trait FaultInjector: Send + Sync {
    /// Decide the fate of `op`.
    fn on_io(&self, op: IoOp) -> IoAction;
    /// The time to stamp on a commit record of the write-ahead log or on a
    /// backup's snapshot, so that tests need no wall-clock luck; `None`
    /// (the default): the system clock.
    fn now(&self) -> Option<std::time::SystemTime> {
        None
    }
}

/// The time from `fault`'s clock if it has one, else the system clock, as
/// nanoseconds since the Unix epoch (0 before it).
pub(crate) fn now_ns(fault: Option<&Arc<dyn FaultInjector>>) -> u64 {
    let t = fault
        .and_then(|f| f.now())
        .unwrap_or_else(std::time::SystemTime::now);
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The data file with its two descriptors: one for pages, one (O_DSYNC when
/// durable) for meta updates.
pub(crate) struct DataFile {
    pub(crate) file: File,
    meta_sync: Option<File>,
    fault: Option<Arc<dyn FaultInjector>>,
    /// The file's length as this handle last knew it, in bytes (0: not
    /// looked at yet): pages written past it enter the page cache anew.
    known_len: AtomicU64,
}

/// Pages per vectored write (LMDB writes 64 too). Longer writes cost
/// later commits dearly: after a load written 1,024 pages (4 MiB) per
/// write, commits of 200 scattered pages each took 8-9 ms against 4.4-5.0
/// ms after a load written 64 pages per write (same binary and data, on
/// this machine's ext4; the page cache keeps a long write in large folios,
/// the likely reason one-page writes into them then cost more).
const IOV_MAX: usize = 64;

/// Pages per write past the file's end. A write that brings pages into the
/// page cache makes folios as large as it is (ext4, Linux 6.x), and the
/// kernel dirties and writes back a folio whole: once a commit writes
/// scattered single pages into a file cached in 64-page folios, each page
/// sent 31-46 KiB to the device, against 11 KiB with 4-page folios, and
/// the committing thread's and the checkpointer's system time fell by a
/// fifth to a third (docs/benchmarks.md, thirteenth session). A write into
/// pages already cached keeps their folios: runs there stay long.
const TAIL_PAGES: usize = 4;

impl DataFile {
    pub(crate) fn new(
        file: File,
        meta_sync: Option<File>,
        fault: Option<Arc<dyn FaultInjector>>,
    ) -> DataFile {
        DataFile {
            file,
            meta_sync,
            fault,
            known_len: AtomicU64::new(0),
        }
    }

    /// The fault injector, if any (backups ask it too).
    pub(crate) fn fault(&self) -> Option<&Arc<dyn FaultInjector>> {
        self.fault.as_ref()
    }

    fn ask(&self, op: IoOp) -> IoAction {
        match &self.fault {
            Some(f) => f.on_io(op),
            None => IoAction::Proceed,
        }
    }

    /// Read exactly `buf.len()` bytes at `offset`; a short read is `Invalid`.
    pub(crate) fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => return Err(ErrorKind::Invalid.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Current file length.
    pub(crate) fn len(&self) -> Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    /// Meta page `slot` as read back from the file (an error when invalid).
    pub(crate) fn read_meta(&self, psize: usize, slot: u64) -> Result<Meta> {
        let mut b = [0u8; META_LEN];
        self.read_exact_at(&mut b, slot * psize as u64)?;
        Meta::decode(&b)
    }

    /// The newest meta of the file as it is now, as a reader would pick it.
    pub(crate) fn newest_meta(&self, psize: usize) -> Result<Meta> {
        pick_meta(self.read_meta(psize, 0), self.read_meta(psize, 1)).map(|(_, m)| m)
    }

    /// Write whole pages: `pages` are (page number, bytes), sorted by page
    /// number, of pages of `psize` bytes (a run of several pages is one
    /// entry). Adjacent ones are merged into vectored writes, of at most
    /// [`TAIL_PAGES`] pages past the file's end as this handle knows it.
    /// A page number past any file offset is `Corrupted` (it came from a
    /// record).
    pub(crate) fn write_pages(&self, psize: usize, pages: &[(u64, &[u8])]) -> Result<()> {
        // Page sizes are powers of two: a shift, not a division, per page.
        debug_assert!(psize.is_power_of_two());
        let shift = psize.trailing_zeros();
        let mut known = self.known_len.load(Ordering::Relaxed);
        if known == 0 {
            known = self.len()?;
        }
        let tail_bytes = TAIL_PAGES << shift;
        let mut i = 0;
        while i < pages.len() {
            let (pgno, bytes) = pages[i];
            let start = offset_of(pgno, psize)?;
            let tail = start >= known;
            if tail && bytes.len() > tail_bytes {
                // A long run (an overflow value) past the end: in pieces.
                for (k, piece) in bytes.chunks(tail_bytes).enumerate() {
                    let at = (k * TAIL_PAGES) as u64;
                    self.write_group(start + (at << shift), &[(pgno + at, piece)])?;
                }
                known = known.max(start + bytes.len() as u64);
                i += 1;
                continue;
            }
            let (max_entries, max_pages) = if tail {
                (TAIL_PAGES, TAIL_PAGES as u64)
            } else {
                (IOV_MAX, u64::MAX)
            };
            // The page after the group; a page number this close to the
            // start's cannot overflow.
            let mut end = pgno + (bytes.len() >> shift) as u64;
            let mut j = i + 1;
            while j < pages.len()
                && j - i < max_entries
                && pages[j].0 == end
                && end - pgno + (pages[j].1.len() >> shift) as u64 <= max_pages
            {
                end += (pages[j].1.len() >> shift) as u64;
                j += 1;
            }
            self.write_group(start, &pages[i..j])?;
            known = known.max(end << shift);
            i = j;
        }
        self.known_len.fetch_max(known, Ordering::Relaxed);
        Ok(())
    }

    fn write_group(&self, offset: u64, group: &[(u64, &[u8])]) -> Result<()> {
        let total: usize = group.iter().map(|r| r.1.len()).sum();
        let act = self.ask(IoOp::WritePages { offset, len: total });
        if act != IoAction::Proceed {
            // Failed, or torn: the first bytes of the group, piece by piece.
            return act.write(total, |n| {
                let mut left = n;
                let mut off = offset;
                for (_, b) in group {
                    let k = left.min(b.len());
                    self.file.write_all_at(&b[..k], off)?;
                    off += k as u64;
                    left -= k;
                }
                Ok(())
            });
        }
        if group.len() == 1 {
            return Ok(self.file.write_all_at(group[0].1, offset)?);
        }
        let iov: Vec<libc::iovec> = group
            .iter()
            .map(|(_, b)| libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: every iovec points into a live borrowed slice for the call's duration.
        let n = unsafe {
            libc::pwritev(
                self.file.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as i32,
                offset as libc::off_t,
            )
        };
        if n < 0 {
            return Err(Error::last_os());
        }
        if (n as usize) < total {
            // Finish a short vectored write piece by piece.
            let mut skip = n as usize;
            let mut off = offset + skip as u64;
            for (_, b) in group {
                if skip >= b.len() {
                    skip -= b.len();
                    continue;
                }
                self.file.write_all_at(&b[skip..], off)?;
                off += (b.len() - skip) as u64;
                skip = 0;
            }
        }
        Ok(())
    }

    /// fdatasync the data file.
    pub(crate) fn sync_data(&self) -> Result<()> {
        self.ask(IoOp::SyncData).untorn()?;
        Ok(self.file.sync_data()?)
    }

    /// Write the meta update; durable (O_DSYNC descriptor) when `durable`.
    pub(crate) fn write_meta(&self, offset: u64, bytes: &[u8], durable: bool) -> Result<()> {
        let f = match (&self.meta_sync, durable) {
            (Some(f), true) => f,
            _ => &self.file,
        };
        let len = bytes.len();
        self.ask(IoOp::WriteMeta { offset, len })
            .write(len, |n| Ok(f.write_all_at(&bytes[..n], offset)?))
    }

    /// Cut the file to `len` bytes (nothing if it is not longer).
    pub(crate) fn truncate_to(&self, len: u64) -> Result<()> {
        if self.len()? <= len {
            return Ok(());
        }
        self.ask(IoOp::Truncate { len }).untorn()?;
        self.known_len.fetch_min(len, Ordering::Relaxed);
        Ok(self.file.set_len(len)?)
    }

    /// Extend the file to `len` bytes (WRITEMAP).
    pub(crate) fn extend_to(&self, len: u64) -> Result<()> {
        if self.len()? >= len {
            return Ok(());
        }
        self.ask(IoOp::Extend { len }).untorn()?;
        Ok(self.file.set_len(len)?)
    }

    /// WRITEMAP: copy whole pages into the writable map (the same seam and
    /// faults as [`DataFile::write_pages`]).
    pub(crate) fn write_pages_mapped(
        &self,
        map: &Map,
        psize: usize,
        pages: &[(u64, &[u8])],
    ) -> Result<()> {
        for &(pgno, b) in pages {
            let offset = offset_of(pgno, psize)?;
            let op = IoOp::WritePages {
                offset,
                len: b.len(),
            };
            map_write(self.ask(op), map, offset, b)?;
        }
        Ok(())
    }

    /// WRITEMAP: write the meta update into the map.
    pub(crate) fn write_meta_mapped(&self, map: &Map, offset: u64, bytes: &[u8]) -> Result<()> {
        let op = IoOp::WriteMeta {
            offset,
            len: bytes.len(),
        };
        map_write(self.ask(op), map, offset, bytes)
    }

    /// WRITEMAP: `msync` a byte range of the map (`sync`: wait for it).
    pub(crate) fn sync_mapped(&self, map: &Map, off: usize, len: usize, sync: bool) -> Result<()> {
        self.ask(IoOp::SyncData).untorn()?;
        map.sync(off, len, sync)
    }
}

/// The file offset of page `pgno`.
fn offset_of(pgno: u64, psize: usize) -> Result<u64> {
    Ok(pgno.checked_mul(psize as u64).ok_or(ErrorKind::Corrupted)?)
}

/// Carry out a map write as the fault injector decided.
fn map_write(act: IoAction, map: &Map, offset: u64, b: &[u8]) -> Result<()> {
    let off = usize::try_from(offset).map_err(|_| ErrorKind::Os(libc::EINVAL))?;
    act.write(b.len(), |n| map.write(off, &b[..n]))
}

/// The bytes of one commit and how durable they must be: what the
/// environment's commit sink (`crate::sink`) is handed.
pub(crate) struct Commit<'a> {
    /// The new meta (its txnid is the transaction's).
    pub(crate) meta: Meta,
    /// Its update as written into meta page `meta.txnid & 1`.
    pub(crate) update: &'a [u8; META_WRITE_LEN],
    /// Dirty pages `(page number, bytes)`, sorted by page number; an
    /// overflow run is one entry.
    pub(crate) pages: &'a [(u64, &'a [u8])],
    /// Pages of `pages` a log tells by their differences from the
    /// committed pages they were copied from, sorted by page number (none
    /// outside WAL mode).
    pub(crate) patches: &'a [Patch<'a>],
    /// Pages the transaction freed.
    pub(crate) freed: usize,
    /// Sync the pages before the meta (not under NO_SYNC).
    pub(crate) sync: bool,
    /// Write the meta durably (not under NO_SYNC or NO_META_SYNC).
    pub(crate) meta_sync: bool,
}

impl Commit<'_> {
    /// The file offset of the meta update.
    pub(crate) fn meta_off(&self, psize: usize) -> u64 {
        (self.meta.txnid & 1) * psize as u64 + META_WRITE_OFF as u64
    }
}

/// How a failed commit left the environment.
#[derive(Debug)]
pub(crate) enum CommitFailure {
    /// Nothing of it is visible, and the file is as before.
    Clean(Error),
    /// The meta page, or what the data file holds, is unknown: the
    /// environment must stop writing (a reopen settles it).
    Fatal(Error),
}

/// fsync a directory, so that the names created, renamed or removed in it
/// survive a crash.
pub(crate) fn sync_dir(dir: &std::path::Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}
