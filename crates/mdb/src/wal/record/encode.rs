//! A commit's parts as a record: its length, and its bytes appended to the
//! log's buffer (version 5, or 4 for tests of logs written before).

use super::layout::*;
use crate::error::{ErrorKind, Result};
use crate::format::page::free_gap;
use crate::format::patch::{self, Patch};
use crate::wal::compact;

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

/// Bytes the record of `parts` takes in the log, padding included; an
/// `EINVAL` error when the parts cannot be encoded (a run that is empty,
/// not whole pages or longer than `u32`, a zero page size, too many runs).
pub(crate) fn encoded_len(parts: &RecordParts<'_>) -> Result<u64> {
    sizes(parts, VERSION).map(|(_, padded)| padded)
}

/// The body length and the padded record length of `parts` in `version`
/// (4 or 5).
pub(super) fn sizes(parts: &RecordParts<'_>, version: u16) -> Result<(u64, u64)> {
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

/// [`encode_into`] as a record of an earlier `version` (4 or 5: what
/// logs written before hold).
#[cfg(test)]
pub(crate) fn encode_as(
    buf: &mut Vec<u8>,
    seg_seq: u64,
    prev_crc: u32,
    parts: &RecordParts<'_>,
    version: u16,
) -> Result<(usize, u32)> {
    encode_version(buf, (seg_seq, prev_crc, 0), parts, version)
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
