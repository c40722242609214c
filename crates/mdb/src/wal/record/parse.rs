//! A record of the log checked and read in place: [`parse`] never panics
//! and never overflows on arbitrary bytes; anything that is not a whole,
//! valid record is `None`, the end of the log.

use std::borrow::Cow;

use super::layout::*;
use crate::error::Result;
use crate::format::bytes::{get16, get32, get64, sub};
use crate::format::patch::{self, Patch};
use crate::wal::compact;

/// A record checked by [`parse`]: its fields, read in place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordView<'a> {
    /// Header and body, without the padding.
    bytes: &'a [u8],
    nruns: usize,
    /// Bytes of a run table entry (12 in version 1, without gaps).
    entry: usize,
    /// Offset of the patch table (after its count).
    table_at: usize,
    /// Offset of the patches' ranges (after the table).
    ranges_at: usize,
    npatches: usize,
    /// Offset of the meta update (its fixed part before version 5).
    meta_at: usize,
    /// Whether the body ends with the commit time (version 3).
    timed: bool,
    /// Whether the patch table and the meta update are compact (version 5).
    compact: bool,
}

/// Reads a patch table entry by entry: `(pgno, base, ranges length)`.
struct Table<'a> {
    rec: &'a [u8],
    at: usize,
    compact: bool,
    pgno: u64,
}

impl Table<'_> {
    fn next_entry(&mut self) -> Option<(u64, u64, usize)> {
        if !self.compact {
            let e = self.at;
            self.at = e.checked_add(PATCH_ENTRY)?;
            let len = get32(self.rec, e + 16)? as usize;
            return Some((get64(self.rec, e)?, get64(self.rec, e + 8)?, len));
        }
        self.pgno = compact::undelta(self.pgno, compact::get(self.rec, &mut self.at)?);
        let base = compact::undelta(self.pgno, compact::get(self.rec, &mut self.at)?);
        let len = usize::try_from(compact::get(self.rec, &mut self.at)?).ok()?;
        Some((self.pgno, base, len))
    }
}

/// The version of the whole, checksummed record of segment
/// `expected_seg_seq` at the start of `bytes` when it is newer than this
/// build reads: a log written by a later release, which must not be taken
/// for the log's end (the records from there on would be lost).
pub(crate) fn newer_version(bytes: &[u8], expected_seg_seq: u64) -> Option<u16> {
    let version = get16(bytes, 4)?;
    if version <= VERSION || get32(bytes, 0)? != MAGIC || get64(bytes, 8)? != expected_seg_seq {
        return None;
    }
    let body = usize::try_from(get64(bytes, 32)?).ok()?;
    let rec = bytes.get(..HEADER.checked_add(body)?)?;
    let mut crc = crc32c::crc32c(&rec[..CRC_OFF]);
    crc = crc32c::crc32c_append(crc, &[0; 4]);
    crc = crc32c::crc32c_append(crc, &rec[CRC_OFF + 4..]);
    (crc == get32(rec, CRC_OFF)?).then_some(version)
}

/// Parse the record at the start of `bytes`, written into segment
/// `expected_seg_seq`. `None` (the end of the log) for zeroed space, another
/// magic or version, another segment's record, a bad CRC, or any length
/// that does not fit; otherwise the record and its padded length.
pub(crate) fn parse(bytes: &[u8], expected_seg_seq: u64) -> Option<(RecordView<'_>, usize)> {
    let version = get16(bytes, 4)?;
    let (entry, time_len, patched) = match version {
        1 => (12, 0, false),
        2 => (RUN_ENTRY, 0, false),
        3 => (RUN_ENTRY, TIME_LEN, false),
        V4 | V5 | VERSION => (RUN_ENTRY, TIME_LEN, true),
        _ => return None,
    };
    let compact = version >= V5;
    if get32(bytes, 0)? != MAGIC || get64(bytes, 8)? != expected_seg_seq {
        return None;
    }
    let psize = get32(bytes, 24)? as usize;
    let nruns = get32(bytes, 28)? as usize;
    let body = usize::try_from(get64(bytes, 32)?).ok()?;
    let end = HEADER.checked_add(body)?;
    let padded = usize::try_from(pad8(end as u64)?).ok()?;
    if padded > bytes.len() || psize == 0 || bytes[end..padded].iter().any(|&b| b != 0) {
        return None;
    }
    let rec = &bytes[..end];
    let stored = get32(rec, CRC_OFF)?;
    let mut crc = crc32c::crc32c(&rec[..CRC_OFF]);
    crc = crc32c::crc32c_append(crc, &[0; 4]);
    crc = crc32c::crc32c_append(crc, &rec[CRC_OFF + 4..]);
    if crc != stored {
        return None;
    }
    // The CRC matched; still check the shape, so that a writer's bug (or a
    // forged record) cannot make the accessors read out of bounds.
    let mut at = HEADER.checked_add(nruns.checked_mul(entry)?)?;
    if at > end {
        return None;
    }
    for i in 0..nruns {
        let run = Run::entry(rec, HEADER + i * entry, entry)?;
        if run.len == 0 || !run.len.is_multiple_of(psize) {
            return None;
        }
        at = at.checked_add(run.stored()?)?;
    }
    let (mut table_at, mut ranges_at, mut npatches) = (at, at, 0);
    if patched {
        if compact {
            npatches = usize::try_from(compact::get(rec, &mut at)?).ok()?;
        } else {
            npatches = get32(rec, at)? as usize;
            at = at.checked_add(4)?;
        }
        // Every entry takes 3 bytes at least: a forged count cannot loop
        // for long.
        if npatches > end.saturating_sub(at) / 3 {
            return None;
        }
        table_at = at;
        let mut t = Table {
            rec,
            at,
            compact,
            pgno: 0,
        };
        for _ in 0..npatches {
            t.next_entry()?;
        }
        ranges_at = t.at;
        at = t.at;
        let mut t = Table {
            rec,
            at: table_at,
            compact,
            pgno: 0,
        };
        for _ in 0..npatches {
            let (_, base, len) = t.next_entry()?;
            let ranges = sub(rec, at, len)?;
            if base < 2 || !patch::check(ranges, psize) {
                return None;
            }
            at += len;
        }
    }
    let meta_end = if compact {
        let mut m = at;
        compact::get(rec, &mut m)?;
        compact::get_meta(rec, &mut m, &mut Vec::new())?;
        m
    } else {
        let meta_len = get32(rec, at.checked_add(8)?)? as usize;
        at.checked_add(META_FIXED)?.checked_add(meta_len)?
    };
    if meta_end.checked_add(time_len)? != end {
        return None;
    }
    let view = RecordView {
        bytes: rec,
        nruns,
        entry,
        table_at,
        ranges_at,
        npatches,
        meta_at: at,
        timed: time_len != 0,
        compact,
    };
    Some((view, padded))
}

impl<'a> RecordView<'a> {
    /// The committed transaction.
    pub(crate) fn txnid(&self) -> u64 {
        get64(self.bytes, 16).unwrap_or(0)
    }

    /// The data file's page size.
    pub(crate) fn psize(&self) -> u32 {
        get32(self.bytes, 24).unwrap_or(0)
    }

    /// The newest txnid this record says was durable when it was
    /// appended (its durable mark), if it says.
    pub(crate) fn durable_through(&self) -> Option<u64> {
        match get16(self.bytes, 6).unwrap_or(0) {
            0 => None,
            d => self.txnid().checked_sub(u64::from(d)),
        }
    }

    /// CRC of the record written before this one.
    pub(crate) fn prev_crc(&self) -> u32 {
        get32(self.bytes, 40).unwrap_or(0)
    }

    /// This record's CRC.
    pub(crate) fn crc(&self) -> u32 {
        get32(self.bytes, CRC_OFF).unwrap_or(0)
    }

    /// When the commit was made (nanoseconds since the Unix epoch); `None`
    /// for records written before the log carried it.
    pub(crate) fn commit_time(&self) -> Option<u64> {
        let at = self.bytes.len().checked_sub(TIME_LEN)?;
        self.timed.then(|| get64(self.bytes, at)).flatten()
    }

    /// The page runs, in the order written.
    pub(crate) fn runs(&self) -> impl Iterator<Item = Run<'a>> + 'a {
        let (bytes, entry) = (self.bytes, self.entry);
        let mut at = HEADER + self.nruns * entry;
        (0..self.nruns).map_while(move |i| {
            let mut run = Run::entry(bytes, HEADER + i * entry, entry)?;
            let stored = run.stored()?;
            run.stored = sub(bytes, at, stored)?;
            at += stored;
            Some(run)
        })
    }

    /// The patches, in the order written.
    pub(crate) fn patches(&self) -> impl Iterator<Item = Patch<'a>> + 'a {
        let bytes = self.bytes;
        let mut t = Table {
            rec: bytes,
            at: self.table_at,
            compact: self.compact,
            pgno: 0,
        };
        let mut at = self.ranges_at;
        (0..self.npatches).map_while(move |_| {
            let (pgno, base, len) = t.next_entry()?;
            let p = Patch {
                pgno,
                base,
                ranges: sub(bytes, at, len)?,
            };
            at += len;
            Some(p)
        })
    }

    /// The record's pages into `buf` (cleared first): the runs, gaps
    /// filled with zeros, then the patched pages, each rebuilt from its
    /// base as `read_base(pgno, page)` reads it (every base is read before
    /// the caller writes a page). `(first pgno, bytes)` of each run.
    pub(crate) fn expand<'b>(
        &self,
        buf: &'b mut Vec<u8>,
        mut read_base: impl FnMut(u64, &mut [u8]) -> Result<()>,
    ) -> Result<Vec<(u64, &'b [u8])>> {
        buf.clear();
        let psize = self.psize() as usize;
        let mut spans = Vec::with_capacity(self.nruns + self.npatches);
        for run in self.runs() {
            let at = buf.len();
            buf.extend_from_slice(&run.stored[..run.gap_off]);
            buf.resize(buf.len() + run.gap_len, 0);
            buf.extend_from_slice(&run.stored[run.gap_off..]);
            spans.push((run.pgno, at, run.len));
        }
        for p in self.patches() {
            let at = buf.len();
            buf.resize(at + psize, 0);
            let page = &mut buf[at..];
            read_base(p.base, page)?;
            patch::prepare_base(page, p.pgno);
            patch::apply(page, p.ranges);
            spans.push((p.pgno, at, psize));
        }
        Ok(spans
            .into_iter()
            .map(|(pgno, at, len)| (pgno, &buf[at..at + len]))
            .collect())
    }

    /// The record as it lies in the log (header and body, no padding).
    pub(crate) fn raw(&self) -> &'a [u8] {
        self.bytes
    }

    /// The meta update: its file offset and bytes.
    pub(crate) fn meta(&self) -> (u64, Cow<'a, [u8]>) {
        if self.compact {
            let mut at = self.meta_at;
            let mut bytes = Vec::new();
            // Checked by `parse`.
            let off = compact::get(self.bytes, &mut at).unwrap_or(0);
            let _ = compact::get_meta(self.bytes, &mut at, &mut bytes);
            return (off, Cow::Owned(bytes));
        }
        let off = get64(self.bytes, self.meta_at).unwrap_or(0);
        let len = get32(self.bytes, self.meta_at + 8).unwrap_or(0) as usize;
        let bytes = sub(self.bytes, self.meta_at + META_FIXED, len).unwrap_or(&[]);
        (off, Cow::Borrowed(bytes))
    }
}

/// A page run of a record: `len` bytes, of which `gap_len` zeros at
/// `gap_off` are not stored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run<'a> {
    pub(crate) pgno: u64,
    pub(crate) len: usize,
    gap_off: usize,
    gap_len: usize,
    /// The bytes before the gap, then those after it.
    stored: &'a [u8],
}

impl Run<'_> {
    /// The run table entry at `at` (`entry` bytes long), its bytes not yet
    /// located.
    fn entry<'b>(rec: &[u8], at: usize, entry: usize) -> Option<Run<'b>> {
        let (gap_off, gap_len) = if entry == RUN_ENTRY {
            (get32(rec, at + 12)? as usize, get32(rec, at + 16)? as usize)
        } else {
            (0, 0)
        };
        Some(Run {
            pgno: get64(rec, at)?,
            len: get32(rec, at + 8)? as usize,
            gap_off,
            gap_len,
            stored: &[],
        })
    }

    /// Bytes stored; `None` when the gap does not lie within the run.
    fn stored(&self) -> Option<usize> {
        if self.gap_off.checked_add(self.gap_len)? > self.len {
            return None;
        }
        Some(self.len - self.gap_len)
    }
}
