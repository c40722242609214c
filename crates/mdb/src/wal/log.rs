//! The log: segment files in one directory, records appended at the tail.
//!
//! Records chain: each carries its txnid, one more than the previous
//! record's, and the previous record's CRC. The log is the longest chain
//! from the first segment that holds records: the first record that does
//! not parse or does not chain ends it (a torn or lost write), and a later
//! segment continues it only if its header's anchor is that end (see
//! `segment.rs`). A record that survived a crash past a lost one is
//! thereby never resurrected once the log has rewritten its place.

use super::record::{self, RecordParts, RecordView};
use super::segment::{self, Anchor, Pool, Seal, SegHeader, SEAL_LEN, SEG_HEADER};
use crate::error::{Error, ErrorKind, Result};
use crate::io::IoOp;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The smallest segment size; smaller settings are raised to it.
pub(crate) const MIN_SEGMENT: u64 = 64 << 10;
/// The largest segment size; larger settings are lowered to it.
pub(crate) const MAX_SEGMENT: u64 = 1 << 40;
/// Segment sizes are multiples of this.
const SEGMENT_ALIGN: u64 = 4096;

/// How a [`Log`] lays out and recycles its segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogOptions {
    /// Bytes of a segment (a record larger than this gets a segment of its
    /// own size).
    pub(crate) segment_size: u64,
    /// Checkpointed segments kept to be renamed into new ones, rather than
    /// zero-filling new files.
    pub(crate) spare_segments: usize,
    /// The log is only read and rolled forward (a read-only open, or one
    /// outside WAL mode): it never makes a segment, so that it works on a
    /// full disk, and it takes no appends.
    pub(crate) replay_only: bool,
    /// Records lost although durable (a missing or damaged segment) end
    /// the log where it is whole, rather than failing the open.
    pub(crate) accept_loss: bool,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            segment_size: 64 << 20,
            spare_segments: 2,
            replay_only: false,
            accept_loss: false,
        }
    }
}

/// The end of the chain: the last record's txnid and CRC, `None` before
/// the log's first record.
pub(crate) type ChainEnd = Option<(u64, u32)>;

/// Where [`Log::append`] put a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogPos {
    /// Segment sequence number.
    pub(crate) seq: u64,
    /// Offset in the segment.
    pub(crate) offset: u64,
    /// Bytes, padding included.
    pub(crate) len: u64,
}

/// A segment holding part of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SegmentInfo {
    pub(crate) seq: u64,
    pub(crate) path: PathBuf,
    /// The file's length.
    pub(crate) size: u64,
    /// Where its records begin to chain from (`Unused` until the first).
    pub(crate) anchor: Anchor,
    pub(crate) first_txnid: Option<u64>,
    pub(crate) last_txnid: Option<u64>,
    /// Offset just past its last record.
    pub(crate) end: u64,
}

impl SegmentInfo {
    /// A segment without records.
    pub(super) fn empty(dir: &Path, seq: u64, size: u64) -> SegmentInfo {
        SegmentInfo {
            seq,
            path: segment::path(dir, seq),
            size,
            anchor: Anchor::Unused,
            first_txnid: None,
            last_txnid: None,
            end: SEG_HEADER as u64,
        }
    }
}

/// The current segment of a replay-only log that holds no records: no
/// file of the log (the directory stands in, and takes no writes).
pub(super) fn placeholder(pool: &Pool) -> Result<(SegmentInfo, File)> {
    let info = SegmentInfo::empty(&pool.dir, pool.next_seq, 0);
    Ok((info, File::open(&pool.dir)?))
}

/// Whether record `r` may follow the chain end `end`.
fn follows(end: ChainEnd, r: &RecordView<'_>) -> bool {
    match end {
        None => r.prev_crc() == 0,
        Some((t, c)) => t.checked_add(1) == Some(r.txnid()) && r.prev_crc() == c,
    }
}

/// Walk the records of segment `seq` (its bytes from offset 0) from `chain`
/// on, while they parse and chain; returns the offset past the last one and
/// the new chain end.
pub(crate) fn walk<'a>(
    bytes: &'a [u8],
    seq: u64,
    mut chain: ChainEnd,
    mut f: impl FnMut(RecordView<'a>) -> Result<()>,
) -> Result<(u64, ChainEnd)> {
    let mut off = SEG_HEADER;
    while let Some((r, len)) = bytes.get(off..).and_then(|b| record::parse(b, seq)) {
        if !follows(chain, &r) {
            break;
        }
        f(r)?;
        chain = Some((r.txnid(), r.crc()));
        off += len;
    }
    if let Some(v) = bytes.get(off..).and_then(|b| record::newer_version(b, seq)) {
        return Err(Error::from(ErrorKind::VersionMismatch).with_detail(format!(
            "log segment {seq} holds a record of format version {v}, newer than this build \
             reads ({}): open the environment with the release that wrote it",
            record::VERSION
        )));
    }
    Ok((off as u64, chain))
}

/// The syncs that make every record appended so far durable.
pub(crate) struct SyncPlan {
    files: Vec<(u64, Arc<File>)>,
    seam: super::seam::Seam,
    mark: u64,
    /// The last record they cover.
    pub(crate) through: Option<u64>,
}

impl SyncPlan {
    /// fdatasync each segment, oldest first.
    pub(crate) fn run(&self) -> Result<()> {
        for (seq, f) in &self.files {
            self.seam.sync(IoOp::LogSync { seq: *seq }, f)?;
        }
        Ok(())
    }
}

/// A write-ahead log directory (see the module documentation).
pub(crate) struct Log {
    pub(super) pool: Pool,
    /// Segments of the log before the current one, oldest first; never
    /// written again.
    pub(super) done: Vec<SegmentInfo>,
    /// The segment records are appended to.
    pub(super) cur: SegmentInfo,
    /// Shared with a sync running outside the log (group commit).
    pub(super) cur_file: Arc<File>,
    /// The segment the log moves on to, zero-filled and synced.
    pub(super) next: Option<(SegmentInfo, File)>,
    pub(super) chain: ChainEnd,
    /// Earlier segments written since the last sync.
    pub(super) unsynced: Vec<(u64, Arc<File>)>,
    /// Whether the current segment was written since the last sync.
    pub(super) dirty: bool,
    /// The record being written, reused across appends.
    pub(super) buf: Vec<u8>,
    /// Records appended since the log was opened.
    pub(super) appends: u64,
    /// Syncs of the log since it was opened (of one segment or more).
    pub(super) syncs: u64,
    /// Opening it changed the directory (spare, leftover or new segments):
    /// another handle's view of the files may be wrong since.
    pub(super) reshaped: bool,
    /// See [`LogOptions::replay_only`].
    pub(super) replay_only: bool,
    /// The newest record known durable (synced by this handle): what the
    /// durable mark of the next record says (`record/`).
    pub(super) durable: Option<u64>,
}

impl LogOptions {
    /// The options with the segment size raised to a valid one.
    pub(crate) fn normalized(self) -> LogOptions {
        let size = self.segment_size.clamp(MIN_SEGMENT, MAX_SEGMENT);
        LogOptions {
            segment_size: size.div_ceil(SEGMENT_ALIGN) * SEGMENT_ALIGN,
            ..self
        }
    }
}

impl Log {
    /// The txnid the next record must carry, `None` when any will do (the
    /// log has never held a record).
    pub(crate) fn next_txnid(&self) -> Option<u64> {
        self.chain.map(|(t, _)| t.wrapping_add(1))
    }

    /// The txnid of the oldest record retained.
    pub(crate) fn first_txnid(&self) -> Option<u64> {
        self.segments().iter().find_map(|s| s.first_txnid)
    }

    /// The txnid of the newest record (the end of the chain).
    pub(crate) fn last_txnid(&self) -> Option<u64> {
        self.chain.map(|(t, _)| t)
    }

    /// The segments holding the log, oldest first. All but the last are
    /// full and never written again (a backup may copy them).
    pub(crate) fn segments(&self) -> Vec<SegmentInfo> {
        let mut v = self.done.clone();
        if self.cur.anchor != Anchor::Unused {
            v.push(self.cur.clone());
        }
        v
    }

    /// Append the record of `parts` at the tail, moving to a new segment if
    /// it does not fit. Not durable until [`Log::sync`]. On error nothing
    /// is appended (a torn write is overwritten by the next append).
    pub(crate) fn append(&mut self, parts: &RecordParts<'_>) -> Result<LogPos> {
        if self.replay_only || self.next_txnid().is_some_and(|t| t != parts.txnid) {
            return Err(ErrorKind::Os(libc::EINVAL).into());
        }
        let len = record::encoded_len(parts)?;
        // Room is kept for the seal after the last record.
        if self
            .cur
            .end
            .checked_add(len + SEAL_LEN as u64)
            .is_none_or(|e| e > self.cur.size)
        {
            self.switch(len)?;
        }
        self.buf.clear();
        // The first record of a segment goes with the header naming its
        // anchor, in one write covered by the same sync.
        let at = self.cur.end;
        let fresh = at == SEG_HEADER as u64;
        let anchor = Anchor::After(self.chain);
        if fresh {
            let h = SegHeader {
                seq: self.cur.seq,
                size: self.cur.size,
                anchor,
            };
            self.buf.extend_from_slice(&h.encode());
        }
        let prev_crc = self.chain.map_or(0, |(_, c)| c);
        // Saturated, the mark claims less than is true: still true.
        let mark = self
            .durable
            .and_then(|d| parts.txnid.checked_sub(d))
            .map_or(0, |d| u16::try_from(d).unwrap_or(u16::MAX));
        let (rlen, crc) = record::encode_into(&mut self.buf, self.cur.seq, prev_crc, mark, parts)?;
        let offset = if fresh { 0 } else { at };
        let op = IoOp::LogWrite {
            seq: self.cur.seq,
            offset,
            len: self.buf.len(),
        };
        self.dirty = true;
        self.appends += 1;
        self.pool
            .seam
            .write_at(op, &self.cur_file, &self.buf, offset)?;
        let seg = &mut self.cur;
        if fresh {
            seg.anchor = anchor;
        }
        seg.end = at + rlen as u64;
        seg.first_txnid.get_or_insert(parts.txnid);
        seg.last_txnid = Some(parts.txnid);
        self.chain = Some((parts.txnid, crc));
        let pos = LogPos {
            seq: seg.seq,
            offset: at,
            len: rlen as u64,
        };
        if self.next.is_none() && seg.end > seg.size / 2 {
            // Ahead of need, off the next commits' path; a failure here is
            // retried, and reported, when the segment is really needed.
            let _ = self.prepare_next();
        }
        Ok(pos)
    }

    /// Make every record appended so far durable: fdatasync the segments
    /// written since the last sync, oldest first. After an error the log's
    /// durability is unknown (the kernel may have dropped the failed
    /// pages): the caller must stop committing.
    pub(crate) fn sync(&mut self) -> Result<()> {
        if self.dirty || !self.unsynced.is_empty() {
            self.syncs += 1;
        }
        while let Some((seq, file)) = self.unsynced.first() {
            self.pool.seam.sync(IoOp::LogSync { seq: *seq }, file)?;
            self.unsynced.remove(0);
        }
        if self.dirty {
            let op = IoOp::LogSync { seq: self.cur.seq };
            self.pool.seam.sync(op, &self.cur_file)?;
            self.dirty = false;
        }
        if self.last_txnid().is_some() {
            self.durable = self.last_txnid();
        }
        Ok(())
    }

    /// What [`Log::sync`] would sync, to be run without holding the log
    /// (group commit: appends go on meanwhile), then passed to
    /// [`Log::synced`].
    pub(crate) fn sync_plan(&self) -> Result<SyncPlan> {
        let mut files = Vec::with_capacity(self.unsynced.len() + 1);
        for (seq, f) in &self.unsynced {
            files.push((*seq, f.clone()));
        }
        if self.dirty {
            files.push((self.cur.seq, self.cur_file.clone()));
        }
        Ok(SyncPlan {
            files,
            seam: self.pool.seam.clone(),
            mark: self.appends,
            through: self.last_txnid(),
        })
    }

    /// Note that `plan` ran: if nothing was appended since it was made,
    /// everything is durable (else the next sync covers the rest again).
    pub(crate) fn synced(&mut self, plan: &SyncPlan) {
        if !plan.files.is_empty() {
            self.syncs += 1;
        }
        if plan.through.is_some() {
            self.durable = plan.through;
        }
        if plan.mark == self.appends {
            self.unsynced.clear();
            self.dirty = false;
        }
    }

    /// Whether the next segment would have to be zero-filled on the commit
    /// path: no segment prepared and no spare.
    pub(crate) fn wants_spare(&self) -> bool {
        self.next.is_none() && self.pool.spares.is_empty()
    }

    /// Bytes of a regular segment.
    pub(crate) fn segment_size(&self) -> u64 {
        self.pool.segment_size
    }

    /// Directory of the log.
    pub(crate) fn dir(&self) -> &Path {
        &self.pool.dir
    }

    /// Take `temp` (see [`super::segment::fill_spare`]) as a spare.
    pub(crate) fn adopt_spare(&mut self, temp: &Path) -> Result<()> {
        self.pool.adopt(temp)
    }

    /// Make the next segment ready (renaming a spare, or creating one), so
    /// that moving to it costs the commit path nothing. Called by
    /// [`Log::append`] once the current segment is half full; a
    /// checkpointer may call it earlier.
    pub(crate) fn prepare_next(&mut self) -> Result<()> {
        if self.next.is_none() && !self.replay_only {
            self.next = Some(self.make_segment(self.pool.segment_size)?);
        }
        Ok(())
    }

    /// Retire the segments, oldest first, whose records all have txnids up
    /// to `txnid` (checkpointed: the data file holds them), keeping up to
    /// `spare_segments` of them for reuse. The current segment stays.
    pub(crate) fn release_through(&mut self, txnid: u64) -> Result<()> {
        while let Some(seg) = self.done.first() {
            if seg.last_txnid.is_some_and(|l| l > txnid) {
                break;
            }
            let (seq, size) = (seg.seq, seg.size);
            self.pool.retire(seq, size)?;
            self.unsynced.retain(|(s, _)| *s != seq);
            self.done.remove(0);
        }
        Ok(())
    }

    /// After a checkpoint through `txnid` (segments released), of a data
    /// file of `data_bytes`. A current segment made oversized for one
    /// large record and wholly checkpointed is left for the regular next
    /// one (and removed), and the next segment is made ready. Spares: while
    /// the log is written (`at_rest` false: the background checkpoints and
    /// those commits wait for), every retired segment is kept, up to
    /// [`LogOptions::spare_segments`], so that the log moves on by renames,
    /// not zero-filled files, however small the data file. At rest (a
    /// checkpoint on demand, the close) they are cut to a 32nd of the data
    /// file, so that a small file's log is not mostly spares.
    pub(crate) fn settle(&mut self, txnid: u64, data_bytes: u64, at_rest: bool) -> Result<()> {
        if self.replay_only {
            return Ok(());
        }
        let regular = self.pool.segment_size;
        if self.cur.size != regular
            && self.done.is_empty()
            && self.cur.last_txnid.is_some_and(|l| l <= txnid)
        {
            self.switch(0)?;
            self.release_through(txnid)?;
        }
        self.prepare_next()?;
        if at_rest {
            self.rest(data_bytes)
        } else {
            self.pool.trim(self.pool.max_spares)
        }
    }

    /// Cut the spares down to a 32nd of a data file of `data_bytes` (see
    /// [`Log::settle`]).
    pub(crate) fn rest(&mut self, data_bytes: u64) -> Result<()> {
        let per = self.pool.segment_size.saturating_mul(32);
        self.pool
            .trim(usize::try_from(data_bytes / per).unwrap_or(usize::MAX))
    }

    /// Start the log over: retire every segment (a checkpoint covers all
    /// their records: the data file moved past them without the log, as
    /// when a writer outside WAL mode committed), then continue in a new
    /// segment whose first record may carry any txnid.
    pub(crate) fn restart(&mut self) -> Result<()> {
        self.release_through(u64::MAX)?;
        if self.replay_only {
            // Nothing is appended after: no new segment to move to.
            if self.cur.anchor != Anchor::Unused {
                let old = std::mem::replace(&mut self.cur, placeholder(&self.pool)?.0);
                self.unsynced.retain(|(s, _)| *s != old.seq);
                self.pool.retire(old.seq, old.size)?;
            }
        } else if self.cur.anchor != Anchor::Unused {
            let (info, file) = match self.next.take() {
                Some(n) => n,
                None => self.make_segment(self.pool.segment_size)?,
            };
            let old = std::mem::replace(&mut self.cur, info);
            self.cur_file = Arc::new(file);
            self.dirty = false;
            self.unsynced.retain(|(s, _)| *s != old.seq);
            self.pool.retire(old.seq, old.size)?;
        }
        self.chain = None;
        self.durable = None;
        Ok(())
    }

    /// Whether the directory still holds this handle's files: the current
    /// and the prepared segment under their names, and its spares. Another
    /// handle that opened the log may have taken the prepared segment or a
    /// spare (renamed or removed it) and failed, or died, before telling
    /// others (`Inner::tell_others`): a writer that moved on to such a
    /// segment would seal its current one naming a file that is gone.
    pub(crate) fn intact(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        if self.replay_only {
            return true;
        }
        let dir = &self.pool.dir;
        let same =
            |seq: u64, f: &File| match (std::fs::metadata(segment::path(dir, seq)), f.metadata()) {
                (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
                _ => false,
            };
        same(self.cur.seq, &self.cur_file)
            && self.next.as_ref().is_none_or(|(n, f)| same(n.seq, f))
            && self
                .pool
                .spares
                .iter()
                .all(|&s| segment::path(dir, s).exists())
    }

    /// Whether opening the log changed the directory (reset by the call).
    pub(crate) fn take_reshaped(&mut self) -> bool {
        std::mem::take(&mut self.reshaped)
    }

    /// Visit, oldest first, every record with a txnid above `after`.
    /// A record found invalid short of where the log was known to end is
    /// `Corrupted` (the files changed since the log was opened).
    pub(crate) fn scan(
        &self,
        after: u64,
        mut f: impl FnMut(RecordView<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut buf = Vec::new();
        for seg in self.segments() {
            if seg.last_txnid.is_none_or(|l| l <= after) {
                continue;
            }
            let opened;
            let file = if seg.seq == self.cur.seq {
                &self.cur_file
            } else {
                opened = segment::open(&self.pool.dir, seg.seq)?;
                &opened
            };
            buf.resize(
                usize::try_from(seg.end).map_err(|_| ErrorKind::Corrupted)?,
                0,
            );
            file.read_exact_at(&mut buf, 0)?;
            let chain = match SegHeader::parse(&buf) {
                Some(h) if h.seq == seg.seq && h.anchor == seg.anchor => match h.anchor {
                    Anchor::After(chain) => chain,
                    Anchor::Unused => return Err(ErrorKind::Corrupted.into()),
                },
                _ => return Err(ErrorKind::Corrupted.into()),
            };
            let visit = |r: RecordView<'_>| if r.txnid() > after { f(r) } else { Ok(()) };
            let (end, _) = walk(&buf, seg.seq, chain, visit)?;
            if end != seg.end {
                return Err(ErrorKind::Corrupted.into());
            }
        }
        Ok(())
    }

    /// A new empty segment of `size` bytes.
    pub(super) fn make_segment(&mut self, size: u64) -> Result<(SegmentInfo, File)> {
        let (seq, size, file) = self.pool.make(size)?;
        Ok((SegmentInfo::empty(&self.pool.dir, seq, size), file))
    }

    /// Move to a new segment with room for a record of `len` bytes.
    fn switch(&mut self, len: u64) -> Result<()> {
        // A segment's header names the record it follows only once that
        // record is durable: at open, a header past the end of the chain
        // then means lost records (a missing or damaged segment), never
        // the unsynced tail of a crash.
        self.sync()?;
        let need = (SEG_HEADER as u64)
            .saturating_add(len)
            .saturating_add(SEAL_LEN as u64);
        let regular = self.pool.segment_size;
        let (info, file) = if need > regular {
            // A segment of its own; the prepared one would now come before
            // it in sequence order, so it goes back to the spares.
            if let Some((n, _)) = self.next.take() {
                self.pool.discard(n.seq, n.size)?;
            }
            self.make_segment(need.div_ceil(SEGMENT_ALIGN) * SEGMENT_ALIGN)?
        } else {
            match self.next.take() {
                Some(n) => n,
                None => self.make_segment(regular)?,
            }
        };
        let room = self.cur.end + SEAL_LEN as u64 <= self.cur.size;
        if let Some(chain) = self
            .chain
            .filter(|_| room && self.cur.anchor != Anchor::Unused)
        {
            // The seal goes with the next sync, before any record of the
            // new segment is acknowledged (`open.rs`).
            let seal = Seal {
                seq: self.cur.seq,
                next: info.seq,
                chain,
            };
            let op = IoOp::LogWrite {
                seq: self.cur.seq,
                offset: self.cur.end,
                len: SEAL_LEN,
            };
            let sealed = self
                .pool
                .seam
                .write_at(op, &self.cur_file, &seal.encode(), self.cur.end);
            if let Err(e) = sealed {
                // Still ready for the next attempt.
                if info.size == regular && self.next.is_none() {
                    self.next = Some((info, file));
                } else {
                    self.pool.discard(info.seq, info.size)?;
                }
                return Err(e);
            }
            self.dirty = true;
        }
        let old_file = std::mem::replace(&mut self.cur_file, Arc::new(file));
        let old = std::mem::replace(&mut self.cur, info);
        if std::mem::take(&mut self.dirty) {
            self.unsynced.push((old.seq, old_file));
        }
        if old.anchor == Anchor::Unused {
            self.pool.discard(old.seq, old.size)
        } else {
            self.done.push(old);
            Ok(())
        }
    }
}
