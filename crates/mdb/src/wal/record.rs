//! One commit record of the log: the dirty page runs of a transaction and
//! its meta update, checksummed, so that replaying it rewrites exactly what
//! the commit would have written to the data file.
//!
//! Layout (little-endian), padded to 8 bytes:
//!
//! | offset | field |
//! |---|---|
//! | 0 | magic `u32` |
//! | 4 | format version `u16`, then a zero `u16` |
//! | 8 | segment sequence number `u64` (a stale record in a recycled segment carries an older one) |
//! | 16 | txnid `u64` |
//! | 24 | page size `u32` |
//! | 28 | number of page runs `u32` |
//! | 32 | body length `u64` |
//! | 40 | CRC32C of the previous record (chains records, see `log.rs`) `u32` |
//! | 44 | CRC32C of this header (this field zeroed) and the body `u32` |
//! | 48 | body: the run table (`pgno: u64`, `len: u32` per run), the run bytes, then `meta_off: u64`, `meta_len: u32` and the meta bytes |
//!
//! [`parse`] never panics and never overflows on arbitrary bytes: anything
//! that is not a whole, valid record is `None`, the end of the log.

use crate::error::{Error, Result};
use crate::format::bytes::{get16, get32, get64, sub};

/// "MDWR": marks the start of a record.
const MAGIC: u32 = 0x5257_444d;
/// Bumped on any change of the layout.
const VERSION: u16 = 1;
/// Bytes before the body.
pub(crate) const HEADER: usize = 48;
/// Bytes of one entry of the run table.
const RUN_ENTRY: usize = 12;
/// Bytes of the meta update's fixed part (`meta_off`, `meta_len`).
const META_FIXED: usize = 12;
/// Offset of the record's own CRC in the header.
const CRC_OFF: usize = 44;

/// What a commit hands the log: everything but the segment it lands in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordParts<'a> {
    /// The committed transaction.
    pub(crate) txnid: u64,
    /// Page size of the data file; every run is a whole number of pages.
    pub(crate) psize: u32,
    /// Page runs `(first pgno, bytes)`; an overflow value is one run.
    pub(crate) runs: &'a [(u64, &'a [u8])],
    /// File offset of the meta update.
    pub(crate) meta_off: u64,
    /// The meta update's bytes.
    pub(crate) meta: &'a [u8],
}

/// Round `n` up to a multiple of 8, `None` on overflow.
pub(crate) fn pad8(n: u64) -> Option<u64> {
    n.checked_add(7).map(|v| v & !7)
}

/// Bytes the record of `parts` takes in the log, padding included; an
/// `EINVAL` error when the parts cannot be encoded (a run that is empty,
/// not whole pages or longer than `u32`, a zero page size, too many runs).
pub(crate) fn encoded_len(parts: &RecordParts<'_>) -> Result<u64> {
    sizes(parts).map(|(_, padded)| padded)
}

/// The body length and the padded record length of `parts`.
fn sizes(parts: &RecordParts<'_>) -> Result<(u64, u64)> {
    let bad = Error::Os(libc::EINVAL);
    let psize = parts.psize as usize;
    if psize == 0
        || u32::try_from(parts.runs.len()).is_err()
        || u32::try_from(parts.meta.len()).is_err()
    {
        return Err(bad);
    }
    for (_, b) in parts.runs {
        if b.is_empty() || !b.len().is_multiple_of(psize) || u32::try_from(b.len()).is_err() {
            return Err(bad);
        }
    }
    let mut body = (parts.runs.len() as u64) * RUN_ENTRY as u64;
    for (_, b) in parts.runs {
        body = body.checked_add(b.len() as u64).ok_or(bad)?;
    }
    body = body
        .checked_add((META_FIXED + parts.meta.len()) as u64)
        .ok_or(bad)?;
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
    parts: &RecordParts<'_>,
) -> Result<(usize, u32)> {
    let (body, len) = sizes(parts)?;
    let len = usize::try_from(len).map_err(|_| Error::Os(libc::EINVAL))?;
    let start = buf.len();
    buf.reserve(len);
    buf.extend_from_slice(&MAGIC.to_le_bytes());
    buf.extend_from_slice(&VERSION.to_le_bytes());
    buf.extend_from_slice(&0u16.to_le_bytes());
    buf.extend_from_slice(&seg_seq.to_le_bytes());
    buf.extend_from_slice(&parts.txnid.to_le_bytes());
    buf.extend_from_slice(&parts.psize.to_le_bytes());
    buf.extend_from_slice(&(parts.runs.len() as u32).to_le_bytes());
    buf.extend_from_slice(&body.to_le_bytes());
    buf.extend_from_slice(&prev_crc.to_le_bytes());
    buf.extend_from_slice(&0u32.to_le_bytes());
    for (pgno, b) in parts.runs {
        buf.extend_from_slice(&pgno.to_le_bytes());
        buf.extend_from_slice(&(b.len() as u32).to_le_bytes());
    }
    for (_, b) in parts.runs {
        buf.extend_from_slice(b);
    }
    buf.extend_from_slice(&parts.meta_off.to_le_bytes());
    buf.extend_from_slice(&(parts.meta.len() as u32).to_le_bytes());
    buf.extend_from_slice(parts.meta);
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
    /// Offset of the meta update's fixed part.
    meta_at: usize,
}

/// Parse the record at the start of `bytes`, written into segment
/// `expected_seg_seq`. `None` (the end of the log) for zeroed space, another
/// magic or version, another segment's record, a bad CRC, or any length
/// that does not fit; otherwise the record and its padded length.
pub(crate) fn parse(bytes: &[u8], expected_seg_seq: u64) -> Option<(RecordView<'_>, usize)> {
    if get32(bytes, 0)? != MAGIC
        || get16(bytes, 4)? != VERSION
        || get64(bytes, 8)? != expected_seg_seq
    {
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
    let mut at = HEADER.checked_add(nruns.checked_mul(RUN_ENTRY)?)?;
    if at > end {
        return None;
    }
    for i in 0..nruns {
        let len = get32(rec, HEADER + i * RUN_ENTRY + 8)? as usize;
        if len == 0 || !len.is_multiple_of(psize) {
            return None;
        }
        at = at.checked_add(len)?;
    }
    let meta_len = get32(rec, at.checked_add(8)?)? as usize;
    if at.checked_add(META_FIXED)?.checked_add(meta_len)? != end {
        return None;
    }
    let view = RecordView {
        bytes: rec,
        nruns,
        meta_at: at,
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

    /// CRC of the record written before this one.
    pub(crate) fn prev_crc(&self) -> u32 {
        get32(self.bytes, 40).unwrap_or(0)
    }

    /// This record's CRC.
    pub(crate) fn crc(&self) -> u32 {
        get32(self.bytes, CRC_OFF).unwrap_or(0)
    }

    /// The page runs `(first pgno, bytes)`, in the order written.
    pub(crate) fn runs(&self) -> impl Iterator<Item = (u64, &'a [u8])> + 'a {
        let bytes = self.bytes;
        let mut at = HEADER + self.nruns * RUN_ENTRY;
        (0..self.nruns).map_while(move |i| {
            let entry = HEADER + i * RUN_ENTRY;
            let pgno = get64(bytes, entry)?;
            let len = get32(bytes, entry + 8)? as usize;
            let run = sub(bytes, at, len)?;
            at += len;
            Some((pgno, run))
        })
    }

    /// The meta update: its file offset and bytes.
    pub(crate) fn meta(&self) -> (u64, &'a [u8]) {
        let off = get64(self.bytes, self.meta_at).unwrap_or(0);
        let len = get32(self.bytes, self.meta_at + 8).unwrap_or(0) as usize;
        let bytes = sub(self.bytes, self.meta_at + META_FIXED, len).unwrap_or(&[]);
        (off, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::testutil::Rec;
    use proptest::prelude::*;

    fn encode(rec: &Rec, seq: u64, prev: u32) -> Vec<u8> {
        let mut buf = vec![0xee; 3]; // encoding appends
        let (len, crc) = rec.with(|p| encode_into(&mut buf, seq, prev, p)).unwrap();
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
            };
            let mut buf = Vec::new();
            let encoded = encode_into(&mut buf, 1, 0, &parts);
            assert_eq!(encoded.is_ok(), !buf.is_empty());
            encoded_len(&parts)
        }
        let run = [0u8; 24];
        let bad = Err(Error::Os(libc::EINVAL));
        assert_eq!(len(16, &run), bad);
        assert_eq!(len(0, &[]), bad);
        assert_eq!(len(8, &[]), bad);
        assert_eq!(len(8, &run), Ok(48 + 12 + 24 + 12));
    }

    /// A record whose CRC matches but whose shape lies: as a forger (or a
    /// writer's bug) would make it.
    fn forge(nruns: u32, run_len: u32, meta_len: u32, body: usize) -> Vec<u8> {
        let mut b = vec![0u8; HEADER + body];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
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
            parse(&forge(1, 8, 0, 12 + 8 + 12), 0).is_some(),
            "the honest one"
        );
        assert!(
            parse(&forge(1, 8, 1, 12 + 8 + 12), 0).is_none(),
            "meta past the end"
        );
        assert!(
            parse(&forge(1, 8, 0, 12 + 8 + 13), 0).is_none(),
            "bytes left over"
        );
        assert!(
            parse(&forge(1, 7, 0, 12 + 7 + 12), 0).is_none(),
            "part of a page"
        );
        assert!(parse(&forge(1, 0, 0, 12 + 12), 0).is_none(), "empty run");
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
