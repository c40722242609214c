//! One commit record of the log: the dirty page runs of a transaction and
//! its meta update, checksummed, so that replaying it rewrites exactly what
//! the commit would have written to the data file.
//!
//! Layout (little-endian), padded to 8 bytes:
//!
//! | offset | field |
//! |---|---|
//! | 0 | magic `u32` |
//! | 4 | format version `u16`, then the *durable mark* `u16`: `d` says the records up to txnid `txnid - d` were durable when this one was appended (0: no claim; see `open.rs`) |
//! | 8 | segment sequence number `u64` (a stale record in a recycled segment carries an older one) |
//! | 16 | txnid `u64` |
//! | 24 | page size `u32` |
//! | 28 | number of page runs `u32` |
//! | 32 | body length `u64` |
//! | 40 | CRC32C of the previous record (chains records, see `log.rs`) `u32` |
//! | 44 | CRC32C of this header (this field zeroed) and the body `u32` |
//! | 48 | body: the run table (`pgno: u64`, `len: u32`, `gap_off: u32`, `gap_len: u32` per run), the run bytes, then the patch count, the patch table and the patches' ranges, then the meta update, then the commit time `u64` (nanoseconds since the Unix epoch) |
//!
//! Version 5 writes the patch table and the meta update compactly
//! (`compact.rs`: LEB128 varints): the count; per patch the page number
//! as a zigzag delta from the previous patch's (from 0 for the first),
//! the base as a zigzag delta from the page number, and the length of its
//! ranges; the meta update as `meta_off`, its length, then each of its
//! little-endian 64-bit words (the last zero-padded). Version 4 has the
//! count `u32`, per patch `pgno: u64`, `base: u64`, `len: u32`, and the
//! meta update as `meta_off: u64`, `meta_len: u32` and its bytes; it is
//! still read, so a log written before rolls forward.
//!
//! A *patch* (since version 4) is a one-page run told by the bytes that differ
//! from its base, the committed page it was copied from on write
//! (`wal/patch.rs`): replay reads the base from the data file (as the
//! checkpoint left it, or as an earlier record of the same replay rebuilt
//! it) and applies the ranges. Commits leave the base in place until the
//! next checkpoint: a page freed after the last checkpoint is not reused
//! before the next one (`crate::txn::write`).
//!
//! A run's bytes leave out its gap: `len - gap_len` bytes stored, the
//! `gap_len` bytes at `gap_off` being zeros. A commit leaves out the free
//! gap of each branch and leaf page ([`free_gap`]), which no reader looks
//! at: pages with no base (a split's new page, an overflow run) are logged
//! whole but for that gap. Version 1 records (no gaps: 12-byte run
//! entries), version 2 records (no commit time, which restoring a backup
//! to a point in time reads) and version 3 records (no patches) are still
//! read.
//!
//! [`parse`] never panics and never overflows on arbitrary bytes: anything
//! that is not a whole, valid record is `None`, the end of the log.

use std::borrow::Cow;

use crate::error::{ErrorKind, Result};
use crate::format::bytes::{get16, get32, get64, sub};
use crate::format::page::free_gap;
use crate::format::patch::{self, Patch};
use crate::wal::compact;

/// "MDWR": marks the start of a record.
const MAGIC: u32 = 0x5257_444d;
/// Bumped on any change of the layout; 2 added the gaps, 3 the commit
/// time, 4 the patches, 5 the compact patch table and meta update.
const VERSION: u16 = 5;
/// The last version with fixed-width patch entries and meta update.
const V4: u16 = 4;
/// Bytes of the commit time at the end of a version 3 body.
const TIME_LEN: usize = 8;
/// Bytes before the body.
pub(crate) const HEADER: usize = 48;
/// Bytes of one entry of the run table (version 1: 12).
const RUN_ENTRY: usize = 20;
/// Bytes of the meta update's fixed part (`meta_off`, `meta_len`).
const META_FIXED: usize = 12;
/// Offset of the record's own CRC in the header.
const CRC_OFF: usize = 44;
/// Bytes of one entry of the patch table.
const PATCH_ENTRY: usize = 20;

/// What a commit hands the log: everything but the segment it lands in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordParts<'a> {
    /// The committed transaction.
    pub(crate) txnid: u64,
    /// Page size of the data file; every run is a whole number of pages.
    pub(crate) psize: u32,
    /// Page runs `(first pgno, bytes)`; an overflow value is one run.
    pub(crate) runs: &'a [(u64, &'a [u8])],
    /// Pages told by their differences from their bases.
    pub(crate) patches: &'a [Patch<'a>],
    /// File offset of the meta update.
    pub(crate) meta_off: u64,
    /// The meta update's bytes.
    pub(crate) meta: &'a [u8],
    /// Leave out the free gap of one-page runs that are branch or leaf
    /// pages (replay writes zeros there).
    pub(crate) trim: bool,
    /// When the commit was made: nanoseconds since the Unix epoch.
    pub(crate) time_ns: u64,
}

impl RecordParts<'_> {
    /// The gap of run `b` left out of the record, `(offset, length)`.
    fn gap(&self, b: &[u8]) -> (usize, usize) {
        if self.trim && b.len() == self.psize as usize {
            free_gap(b)
        } else {
            (0, 0)
        }
    }
}

/// Round `n` up to a multiple of 8, `None` on overflow.
pub(crate) fn pad8(n: u64) -> Option<u64> {
    n.checked_add(7).map(|v| v & !7)
}

/// Bytes the record of `parts` takes in the log, padding included; an
/// `EINVAL` error when the parts cannot be encoded (a run that is empty,
/// not whole pages or longer than `u32`, a zero page size, too many runs).
pub(crate) fn encoded_len(parts: &RecordParts<'_>) -> Result<u64> {
    sizes(parts, VERSION).map(|(_, padded)| padded)
}

/// The body length and the padded record length of `parts` in `version`
/// (4 or 5).
fn sizes(parts: &RecordParts<'_>, version: u16) -> Result<(u64, u64)> {
    let bad = ErrorKind::Os(libc::EINVAL);
    let psize = parts.psize as usize;
    if psize == 0
        || u32::try_from(parts.runs.len()).is_err()
        || u32::try_from(parts.patches.len()).is_err()
        || u32::try_from(parts.meta.len()).is_err()
    {
        return Err(bad.into());
    }
    for (_, b) in parts.runs {
        if b.is_empty() || !b.len().is_multiple_of(psize) || u32::try_from(b.len()).is_err() {
            return Err(bad.into());
        }
    }
    let mut body = (parts.runs.len() as u64) * RUN_ENTRY as u64;
    for (_, b) in parts.runs {
        let stored = b.len() - parts.gap(b).1;
        body = body.checked_add(stored as u64).ok_or(bad)?;
    }
    let table = if version == V4 {
        4 + parts.patches.len() * PATCH_ENTRY
    } else {
        let mut prev = 0;
        let mut n = compact::len(parts.patches.len() as u64);
        for p in parts.patches {
            n += compact::len(compact::delta(prev, p.pgno))
                + compact::len(compact::delta(p.pgno, p.base))
                + compact::len(p.ranges.len() as u64);
            prev = p.pgno;
        }
        n
    };
    body = body.checked_add(table as u64).ok_or(bad)?;
    for p in parts.patches {
        if u32::try_from(p.ranges.len()).is_err() || !patch::check(p.ranges, psize) {
            return Err(bad.into());
        }
        body = body.checked_add(p.ranges.len() as u64).ok_or(bad)?;
    }
    let meta = if version == V4 {
        META_FIXED + parts.meta.len()
    } else {
        compact::len(parts.meta_off) + compact::meta_len(parts.meta)
    };
    body = body.checked_add((meta + TIME_LEN) as u64).ok_or(bad)?;
    let padded = pad8(body.checked_add(HEADER as u64).ok_or(bad)?).ok_or(bad)?;
    Ok((body, padded))
}

/// Append the record of `parts` for segment `seg_seq` to `buf` (reused
/// across commits, so no allocation once it is large enough); returns the
/// record's length and CRC (the next record's `prev_crc`).
pub(crate) fn encode_into(
    buf: &mut Vec<u8>,
    seg_seq: u64,
    prev_crc: u32,
    durable_mark: u16,
    parts: &RecordParts<'_>,
) -> Result<(usize, u32)> {
    encode_version(buf, (seg_seq, prev_crc, durable_mark), parts, VERSION)
}

/// [`encode_into`] as a version 4 record (what logs written before hold).
#[cfg(test)]
pub(crate) fn encode_v4(
    buf: &mut Vec<u8>,
    seg_seq: u64,
    prev_crc: u32,
    parts: &RecordParts<'_>,
) -> Result<(usize, u32)> {
    encode_version(buf, (seg_seq, prev_crc, 0), parts, V4)
}

fn encode_version(
    buf: &mut Vec<u8>,
    (seg_seq, prev_crc, durable_mark): (u64, u32, u16),
    parts: &RecordParts<'_>,
    version: u16,
) -> Result<(usize, u32)> {
    let (body, len) = sizes(parts, version)?;
    let len = usize::try_from(len).map_err(|_| ErrorKind::Os(libc::EINVAL))?;
    let start = buf.len();
    buf.reserve(len);
    buf.extend_from_slice(&MAGIC.to_le_bytes());
    buf.extend_from_slice(&version.to_le_bytes());
    buf.extend_from_slice(&durable_mark.to_le_bytes());
    buf.extend_from_slice(&seg_seq.to_le_bytes());
    buf.extend_from_slice(&parts.txnid.to_le_bytes());
    buf.extend_from_slice(&parts.psize.to_le_bytes());
    buf.extend_from_slice(&(parts.runs.len() as u32).to_le_bytes());
    buf.extend_from_slice(&body.to_le_bytes());
    buf.extend_from_slice(&prev_crc.to_le_bytes());
    buf.extend_from_slice(&0u32.to_le_bytes());
    for (pgno, b) in parts.runs {
        let (off, len) = parts.gap(b);
        buf.extend_from_slice(&pgno.to_le_bytes());
        buf.extend_from_slice(&(b.len() as u32).to_le_bytes());
        buf.extend_from_slice(&(off as u32).to_le_bytes());
        buf.extend_from_slice(&(len as u32).to_le_bytes());
    }
    for (_, b) in parts.runs {
        let (off, len) = parts.gap(b);
        buf.extend_from_slice(&b[..off]);
        buf.extend_from_slice(&b[off + len..]);
    }
    if version == V4 {
        buf.extend_from_slice(&(parts.patches.len() as u32).to_le_bytes());
        for p in parts.patches {
            buf.extend_from_slice(&p.pgno.to_le_bytes());
            buf.extend_from_slice(&p.base.to_le_bytes());
            buf.extend_from_slice(&(p.ranges.len() as u32).to_le_bytes());
        }
    } else {
        compact::put(buf, parts.patches.len() as u64);
        let mut prev = 0;
        for p in parts.patches {
            compact::put(buf, compact::delta(prev, p.pgno));
            compact::put(buf, compact::delta(p.pgno, p.base));
            compact::put(buf, p.ranges.len() as u64);
            prev = p.pgno;
        }
    }
    for p in parts.patches {
        buf.extend_from_slice(p.ranges);
    }
    if version == V4 {
        buf.extend_from_slice(&parts.meta_off.to_le_bytes());
        buf.extend_from_slice(&(parts.meta.len() as u32).to_le_bytes());
        buf.extend_from_slice(parts.meta);
    } else {
        compact::put(buf, parts.meta_off);
        compact::put_meta(buf, parts.meta);
    }
    buf.extend_from_slice(&parts.time_ns.to_le_bytes());
    debug_assert_eq!(buf.len() - start, HEADER + body as usize);
    let crc = crc32c::crc32c(&buf[start..]);
    buf[start + CRC_OFF..start + CRC_OFF + 4].copy_from_slice(&crc.to_le_bytes());
    buf.resize(start + len, 0);
    Ok((len, crc))
}

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
        V4 | VERSION => (RUN_ENTRY, TIME_LEN, true),
        _ => return None,
    };
    let compact = version == VERSION;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::testutil::Rec;
    use proptest::prelude::*;

    fn encode(rec: &Rec, seq: u64, prev: u32) -> Vec<u8> {
        let mut buf = vec![0xee; 3]; // encoding appends
        let (len, crc) = rec
            .with(|p| encode_into(&mut buf, seq, prev, 0, p))
            .unwrap();
        assert_eq!(buf.len(), 3 + len);
        assert_eq!(len % 8, 0);
        assert_eq!(len as u64, rec.with(encoded_len).unwrap());
        let out = buf.split_off(3);
        let (v, n) = parse(&out, seq).unwrap();
        assert_eq!((n, v.crc(), v.prev_crc()), (len, crc, prev));
        out
    }

    fn small(rnd: &mut impl FnMut() -> u64) -> Rec {
        let mut r = Rec::random(7, 16, 3, rnd);
        r.meta.truncate(20);
        r
    }

    #[test]
    fn round_trip_with_trailing_bytes() {
        let mut rnd = crate::format::xorshift(0x1234_5678_9abc_def1);
        for i in 0..200 {
            let rec = Rec::random(i, 64 << (i % 3), (i % 5) as usize, &mut rnd);
            let mut b = encode(&rec, i * 3, i as u32);
            let len = b.len();
            b.extend_from_slice(&[0xff; 40]);
            let (v, n) = parse(&b, i * 3).unwrap();
            assert_eq!((Rec::of(&v), n), (rec, len));
            assert!(parse(&b, i * 3 + 1).is_none(), "another segment's record");
        }
    }

    #[test]
    fn every_byte_corruption_and_truncation_is_rejected() {
        let mut rnd = crate::format::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..4 {
            let b = encode(&small(&mut rnd), 5, 9);
            for i in 0..b.len() {
                for x in 1..=255u8 {
                    let mut c = b.clone();
                    c[i] ^= x;
                    assert!(parse(&c, 5).is_none(), "byte {i} ^ {x:#x}");
                }
            }
            for k in 0..b.len() {
                assert!(parse(&b[..k], 5).is_none(), "cut at {k}");
            }
        }
    }

    #[test]
    fn bad_parts_are_refused() {
        fn len(psize: u32, run: &[u8]) -> Result<u64> {
            let runs = [(1, run)];
            let n = usize::from(!run.is_empty() || psize != 0);
            let parts = RecordParts {
                txnid: 1,
                psize,
                runs: &runs[..n],
                meta_off: 0,
                meta: &[],
                trim: false,
                patches: &[],
                time_ns: 0,
            };
            let mut buf = Vec::new();
            let encoded = encode_into(&mut buf, 1, 0, 0, &parts);
            assert_eq!(encoded.is_ok(), !buf.is_empty());
            encoded_len(&parts)
        }
        let run = [0u8; 24];
        let bad = Err(ErrorKind::Os(libc::EINVAL).into());
        assert_eq!(len(16, &run), bad);
        assert_eq!(len(0, &[]), bad);
        assert_eq!(len(8, &[]), bad);
        // The run, its entry, no patches (a varint), the meta update (offset 0,
        // length 0: two varints), the time.
        assert_eq!(len(8, &run), Ok(pad8(48 + 20 + 24 + 1 + 2 + 8).unwrap()));
    }

    /// A record whose CRC matches but whose shape lies: as a forger (or a
    /// writer's bug) would make it (version 2: no commit time).
    fn forge(nruns: u32, run_len: u32, meta_len: u32, body: usize) -> Vec<u8> {
        let mut b = vec![0u8; HEADER + body];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&2u16.to_le_bytes());
        b[24..28].copy_from_slice(&8u32.to_le_bytes());
        b[28..32].copy_from_slice(&nruns.to_le_bytes());
        b[32..40].copy_from_slice(&(body as u64).to_le_bytes());
        let mut at = HEADER + 8;
        if nruns > 0 && body >= RUN_ENTRY {
            b[HEADER + 8..HEADER + 12].copy_from_slice(&run_len.to_le_bytes());
            at += RUN_ENTRY + run_len as usize;
        }
        if at + 4 <= b.len() {
            b[at..at + 4].copy_from_slice(&meta_len.to_le_bytes());
        }
        b.resize(pad8(b.len() as u64).unwrap() as usize, 0);
        let crc = crc32c::crc32c(&b[..HEADER + body]);
        b[CRC_OFF..CRC_OFF + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    #[test]
    fn forged_shapes_with_good_crc_are_rejected() {
        assert!(
            parse(&forge(1, 8, 0, RUN_ENTRY + 8 + 12), 0).is_some(),
            "the honest one"
        );
        assert!(
            parse(&forge(1, 8, 1, RUN_ENTRY + 8 + 12), 0).is_none(),
            "meta past the end"
        );
        assert!(
            parse(&forge(1, 8, 0, RUN_ENTRY + 8 + 13), 0).is_none(),
            "bytes left over"
        );
        assert!(
            parse(&forge(1, 7, 0, RUN_ENTRY + 7 + 12), 0).is_none(),
            "part of a page"
        );
        assert!(
            parse(&forge(1, 0, 0, RUN_ENTRY + 12), 0).is_none(),
            "empty run"
        );
        assert!(
            parse(&forge(u32::MAX, 8, 0, 64), 0).is_none(),
            "run table too long"
        );
        assert!(
            parse(&forge(1, u32::MAX, 0, 64), 0).is_none(),
            "run too long"
        );
        assert!(parse(&forge(0, 0, 0, 12), 0).is_some(), "no runs");
        assert!(
            parse(&forge(0, 0, u32::MAX, 12), 0).is_none(),
            "meta too long"
        );
    }

    #[test]
    fn the_commit_time_round_trips_and_version_2_records_have_none() {
        let page = [7u8; 64];
        let runs: Vec<(u64, &[u8])> = vec![(3, &page)];
        let parts = RecordParts {
            txnid: 9,
            psize: 64,
            runs: &runs,
            meta_off: 8,
            meta: &[1, 2],
            trim: false,
            patches: &[],
            time_ns: 1_700_000_000_123_456_789,
        };
        let mut b = Vec::new();
        encode_into(&mut b, 2, 0, 0, &parts).unwrap();
        let v = parse(&b, 2).unwrap().0;
        assert_eq!(v.commit_time(), Some(1_700_000_000_123_456_789));
        assert_eq!(v.meta(), (8, Cow::Borrowed(&[1u8, 2][..])));
        let v2 = forge(1, 8, 0, RUN_ENTRY + 8 + 12);
        assert_eq!(parse(&v2, 0).unwrap().0.commit_time(), None);
    }

    /// A leaf page of `psize` bytes with `n` 100-byte nodes, its free gap
    /// full of 0xab.
    fn leaf(psize: usize, n: usize) -> Vec<u8> {
        use crate::format::page::{HDR, P_LEAF};
        let mut p = vec![0xab; psize];
        p[..HDR].fill(0);
        p[10..12].copy_from_slice(&P_LEAF.to_le_bytes());
        let (lower, upper) = (HDR + 2 * n, psize - 100 * n);
        p[12..14].copy_from_slice(&(lower as u16).to_le_bytes());
        p[14..16].copy_from_slice(&(upper as u16).to_le_bytes());
        for i in 0..n {
            let off = (upper + 100 * i) as u16;
            p[HDR + 2 * i..HDR + 2 * i + 2].copy_from_slice(&off.to_le_bytes());
            p[upper + 100 * i..upper + 100 * (i + 1)].fill(i as u8 + 1);
        }
        p
    }

    #[test]
    fn free_gaps_of_tree_pages_are_left_out_and_read_back_as_zeros() {
        let psize = 4096;
        let page = leaf(psize, 5);
        let mut ov = page.clone(); // overflow flags: kept whole
        ov[10..12].copy_from_slice(&crate::format::page::P_OVERFLOW.to_le_bytes());
        let two = [page.clone(), page.clone()].concat(); // a run of two pages: whole
        let runs: Vec<(u64, &[u8])> = vec![(3, &page), (4, &ov), (9, &two)];
        let mut parts = RecordParts {
            txnid: 7,
            psize: psize as u32,
            runs: &runs,
            meta_off: 24,
            meta: &[1, 2, 3],
            trim: false,
            patches: &[],
            time_ns: 0,
        };
        let (whole, _) = sizes(&parts, VERSION).unwrap();
        parts.trim = true;
        let gap = (psize - 500) - (16 + 10);
        let trimmed = pad8(HEADER as u64 + whole - gap as u64).unwrap();
        assert_eq!(encoded_len(&parts).unwrap(), trimmed);
        let mut b = Vec::new();
        encode_into(&mut b, 1, 0, 0, &parts).unwrap();
        assert_eq!(b.len() as u64, trimmed);
        let (v, _) = parse(&b, 1).unwrap();
        let mut zeroed = page.clone();
        zeroed[26..psize - 500].fill(0);
        let mut buf = Vec::new();
        let got = v.expand(&mut buf, |_, _| unreachable!()).unwrap();
        let want: Vec<(u64, &[u8])> = vec![(3, &zeroed), (4, &ov), (9, &two)];
        assert_eq!(got, want);
    }

    #[test]
    fn version_1_records_are_read() {
        // Version 1: 12-byte run entries, no gaps.
        let (page, meta) = (vec![0x5a; 64], [9u8; 10]);
        let body = 12 + page.len() + 12 + meta.len();
        let mut b = vec![0u8; HEADER];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&1u16.to_le_bytes());
        b[8..16].copy_from_slice(&3u64.to_le_bytes());
        b[16..24].copy_from_slice(&11u64.to_le_bytes());
        b[24..28].copy_from_slice(&32u32.to_le_bytes());
        b[28..32].copy_from_slice(&1u32.to_le_bytes());
        b[32..40].copy_from_slice(&(body as u64).to_le_bytes());
        b.extend_from_slice(&5u64.to_le_bytes());
        b.extend_from_slice(&64u32.to_le_bytes());
        b.extend_from_slice(&page);
        b.extend_from_slice(&40u64.to_le_bytes());
        b.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        b.extend_from_slice(&meta);
        let crc = crc32c::crc32c(&b);
        b[CRC_OFF..CRC_OFF + 4].copy_from_slice(&crc.to_le_bytes());
        b.resize(pad8(b.len() as u64).unwrap() as usize, 0);
        let (v, n) = parse(&b, 3).unwrap();
        assert_eq!(n, b.len());
        let rec = Rec::of(&v);
        assert_eq!(
            (rec.txnid, rec.runs, rec.meta_off),
            (11, vec![(5, page)], 40)
        );
        assert_eq!(rec.meta, meta);
    }

    #[test]
    fn a_gap_outside_its_run_is_rejected() {
        let page = leaf(4096, 3);
        let runs: Vec<(u64, &[u8])> = vec![(2, &page)];
        let parts = RecordParts {
            txnid: 1,
            psize: 4096,
            runs: &runs,
            meta_off: 0,
            meta: &[],
            trim: true,
            patches: &[],
            time_ns: 0,
        };
        let mut good = Vec::new();
        encode_into(&mut good, 0, 0, 0, &parts).unwrap();
        let gap_len = get32(&good, HEADER + 16).unwrap();
        for (off, ok) in [
            (26, true),
            (0, true),
            (4096 - gap_len, true),
            (4097 - gap_len, false),
            (u32::MAX, false),
        ] {
            let mut b = good.clone();
            b[HEADER + 12..HEADER + 16].copy_from_slice(&off.to_le_bytes());
            let end = HEADER + get64(&b, 32).unwrap() as usize;
            b[CRC_OFF..CRC_OFF + 4].fill(0);
            let crc = crc32c::crc32c(&b[..end]);
            b[CRC_OFF..CRC_OFF + 4].copy_from_slice(&crc.to_le_bytes());
            assert_eq!(parse(&b, 0).is_some(), ok, "gap at {off}");
        }
    }

    proptest! {
        #[test]
        fn random_parts_round_trip(
            seq in any::<u64>(),
            prev in any::<u32>(),
            txnid in any::<u64>(),
            runs in prop::collection::vec((any::<u64>(), 1usize..4, any::<u8>()), 0..5),
            meta_off in any::<u64>(),
            meta in prop::collection::vec(any::<u8>(), 0..200),
        ) {
            let rec = Rec {
                txnid,
                psize: 32,
                runs: runs.iter().map(|&(p, n, fill)| (p, vec![fill; n * 32])).collect(),
                meta_off,
                meta,
            };
            let b = encode(&rec, seq, prev);
            prop_assert_eq!(Rec::of(&parse(&b, seq).unwrap().0), rec);
        }

        /// Version 5 and version 4 records of the same parts (patches
        /// included, page numbers anywhere) read back alike: a log written
        /// before still rolls forward.
        #[test]
        fn patched_records_read_back_in_versions_4_and_5(
            pgnos in prop::collection::vec((any::<u64>(), 2u64..u64::MAX), 0..6),
            meta_off in any::<u64>(),
            meta in prop::collection::vec(any::<u8>(), 0..130),
            time_ns in any::<u64>(),
        ) {
            let ranges = [4u8, 0, 2, 0, 0xaa, 0xbb];
            let patches: Vec<Patch<'_>> = pgnos
                .iter()
                .map(|&(pgno, base)| Patch { pgno, base, ranges: &ranges })
                .collect();
            let parts = RecordParts {
                txnid: 9,
                psize: 64,
                runs: &[],
                patches: &patches,
                meta_off,
                meta: &meta,
                trim: false,
                time_ns,
            };
            let (mut v5, mut v4) = (Vec::new(), Vec::new());
            encode_into(&mut v5, 3, 7, 0, &parts).unwrap();
            encode_v4(&mut v4, 3, 7, &parts).unwrap();
            prop_assert_eq!(v5.len() as u64, encoded_len(&parts).unwrap());
            for b in [&v5, &v4] {
                let (v, n) = parse(b, 3).unwrap();
                prop_assert_eq!(n, b.len());
                prop_assert_eq!(v.patches().collect::<Vec<_>>(), patches.clone());
                let (off, m) = v.meta();
                prop_assert_eq!((off, &*m), (meta_off, &meta[..]));
                prop_assert_eq!(v.commit_time(), Some(time_ns));
            }
        }

        #[test]
        fn garbage_never_panics(b in prop::collection::vec(any::<u8>(), 0..300), seq in 0u64..2) {
            let _ = parse(&b, seq);
        }

        #[test]
        fn garbage_behind_a_good_prefix_never_panics(
            mut b in prop::collection::vec(any::<u8>(), 48..300),
            body in any::<u64>(),
        ) {
            b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
            b[4..6].copy_from_slice(&VERSION.to_le_bytes());
            b[8..16].copy_from_slice(&0u64.to_le_bytes());
            b[32..40].copy_from_slice(&(body % 512).to_le_bytes());
            let _ = parse(&b, 0);
        }
    }
}
