//! A page of a commit record told as the byte ranges that differ from its
//! *base*: the committed page it was copied from on write. A put rewrites
//! a leaf's header, the tail of its pointer array and one node: a few
//! hundred bytes of a 4 KiB page.
//!
//! Both images are compared as replay sees them: the free gap of each
//! (between `lower` and `upper`, [`free_gap`]) zeroed, since no reader
//! looks there and the data file may hold anything in it (a page rebuilt
//! by replay has zeros, one written by a commit whatever its buffer
//! held); and the base's page number (its first 8 bytes) replaced by the
//! page's own. Replay reads the base, does the same, and applies the
//! ranges: the result is the committed page with its gap zeroed.
//!
//! Ranges: `offset u16`, `length u16`, then `length` bytes, in increasing
//! offset order, none past the page (a page is at most 64 KiB, so an
//! offset fits; a longer difference takes several ranges).

use crate::format::bytes::get16;
use crate::format::page::free_gap;

/// A page told by its differences from its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Patch<'a> {
    /// The page.
    pub(crate) pgno: u64,
    /// The committed page it was copied from.
    pub(crate) base: u64,
    /// Its ranges (see the module documentation).
    pub(crate) ranges: &'a [u8],
}

/// Bytes of a range's header.
const RANGE_HDR: usize = 4;
/// Longest range.
const RANGE_MAX: usize = u16::MAX as usize;

/// Make `page`, the image of a base, what replay starts from for page
/// `pgno`: free gap zeroed, page number replaced.
pub(crate) fn prepare_base(page: &mut [u8], pgno: u64) {
    zero_gap(page);
    if let Some(h) = page.get_mut(..8) {
        h.copy_from_slice(&pgno.to_le_bytes());
    }
}

/// Zero the free gap of a branch or leaf page.
pub(crate) fn zero_gap(page: &mut [u8]) {
    let (off, len) = free_gap(page);
    page[off..off + len].fill(0);
}

/// Append to `out` the ranges that make `base` (as [`prepare_base`] left
/// it) into `new` (its gap zeroed); `false`, with `out` as it was, when
/// they would take more than `limit` bytes.
///
/// A range runs from a differing byte until more equal bytes follow it
/// than a range header would cost (or its length limit). Every page a
/// WAL commit writes goes through here, so the scan skips where the two
/// free gaps overlap (zeros in both) and compares blocks and words where
/// it can (a commit of 1,000 random puts diffs about a thousand pages).
pub(crate) fn diff(new: &[u8], base: &[u8], out: &mut Vec<u8>, limit: usize) -> bool {
    let start = out.len();
    let n = new.len().min(base.len());
    let (new, base) = (&new[..n], &base[..n]);
    let (gn, ln) = free_gap(new);
    let (gb, lb) = free_gap(base);
    let skip = (gn.max(gb), (gn + ln).min(gb + lb));
    // The first difference at or past `i`, over the overlap of the gaps.
    let next = |i: usize| {
        if skip.0 < skip.1 && i < skip.1 {
            if i < skip.0 {
                let d = first_difference(new, base, i, skip.0);
                if d < skip.0 {
                    return d;
                }
            }
            return first_difference(new, base, skip.1, n);
        }
        first_difference(new, base, i, n)
    };
    let mut i = next(0);
    while i < n {
        let (from, end) = (i, range_end(new, base, i));
        if out.len() - start + RANGE_HDR + (end - from) > limit {
            out.truncate(start);
            return false;
        }
        out.extend_from_slice(&(from as u16).to_le_bytes());
        out.extend_from_slice(&((end - from) as u16).to_le_bytes());
        out.extend_from_slice(&new[from..end]);
        i = next(end);
    }
    true
}

/// 8 bytes at `i`, the first the lowest.
fn word(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(w)
}

/// 64 bytes at `i`, compared as a whole (vector instructions, no call).
fn block(b: &[u8], i: usize) -> &[u8; 64] {
    b[i..i + 64].try_into().expect("64 bytes")
}

/// The first index in `i..end` where `a` and `b` differ; `end` if none.
fn first_difference(a: &[u8], b: &[u8], mut i: usize, end: usize) -> usize {
    while i + 512 <= end && a[i..i + 512] == b[i..i + 512] {
        i += 512;
    }
    while i + 64 <= end && block(a, i) == block(b, i) {
        i += 64;
    }
    while i + 8 <= end {
        let x = word(a, i) ^ word(b, i);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < end && a[i] == b[i] {
        i += 1;
    }
    i
}

/// The end of the range that starts at `from`, a differing byte: past its
/// last differing byte before a run of more than [`RANGE_HDR`] equal
/// bytes, the end of the page, or [`RANGE_MAX`] bytes.
fn range_end(a: &[u8], b: &[u8], from: usize) -> usize {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let n = a.len().min(from + RANGE_MAX);
    let mut end = from + 1;
    let mut j = end;
    while j < n {
        if j + 8 <= n {
            let x = word(a, j) ^ word(b, j);
            if x == 0 {
                // Eight equal bytes: the run of equal bytes from `end`
                // passes a header's length within them.
                return end;
            }
            if x.wrapping_sub(LOW) & !x & HIGH == 0 {
                // No equal byte among the eight.
                j += 8;
                end = j;
                continue;
            }
        }
        if a[j] != b[j] {
            end = j + 1;
        } else if j - end >= RANGE_HDR {
            return end;
        }
        j += 1;
    }
    end
}

/// Whether `ranges` are well formed for a page of `psize` bytes.
pub(crate) fn check(ranges: &[u8], psize: usize) -> bool {
    let mut at = 0;
    let mut past = 0;
    while at < ranges.len() {
        let (Some(off), Some(len)) = (get16(ranges, at), get16(ranges, at + 2)) else {
            return false;
        };
        let (off, len) = (off as usize, len as usize);
        at += RANGE_HDR;
        if len == 0 || off < past || off + len > psize || at + len > ranges.len() {
            return false;
        }
        past = off + len;
        at += len;
    }
    true
}

/// Apply `ranges` (checked by [`check`] for this page size) to `page`.
pub(crate) fn apply(page: &mut [u8], ranges: &[u8]) {
    let mut at = 0;
    while at + RANGE_HDR <= ranges.len() {
        let off = get16(ranges, at).unwrap_or(0) as usize;
        let len = get16(ranges, at + 2).unwrap_or(0) as usize;
        at += RANGE_HDR;
        if let (Some(dst), Some(src)) = (page.get_mut(off..off + len), ranges.get(at..at + len)) {
            dst.copy_from_slice(src);
        }
        at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The byte-at-a-time form [`diff`] must agree with, range for range.
    fn diff_bytewise(new: &[u8], base: &[u8], out: &mut Vec<u8>) {
        let n = new.len().min(base.len());
        let mut i = 0;
        while i < n {
            while i < n && new[i] == base[i] {
                i += 1;
            }
            if i == n {
                break;
            }
            let from = i;
            let mut end = i + 1;
            let mut j = end;
            while j < n && j - from < RANGE_MAX {
                if new[j] != base[j] {
                    end = j + 1;
                } else if j - end >= RANGE_HDR {
                    break;
                }
                j += 1;
            }
            out.extend_from_slice(&(from as u16).to_le_bytes());
            out.extend_from_slice(&((end - from) as u16).to_le_bytes());
            out.extend_from_slice(&new[from..end]);
            i = end;
        }
    }

    proptest! {
        // CI runs Miri on `format::`: it has no file system for failure
        // files and runs a thousand times slower, so a few cases there.
        #![proptest_config(if cfg!(miri) {
            ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() }
        } else {
            ProptestConfig::default()
        })]

        #[test]
        fn diff_agrees_with_the_bytewise_form(
            base in prop::collection::vec(0u8..3, 16..1200),
            flips in prop::collection::vec((0usize..1200, 1u8..3), 0..60),
            gaps in prop::collection::vec((16usize..1200, 0usize..1200), 2),
            leaf in any::<bool>(),
        ) {
            // Few distinct byte values: equal and differing bytes interleave.
            let mut new = base.clone();
            for (at, x) in flips {
                if let Some(b) = new.get_mut(at) {
                    *b ^= x;
                }
            }
            // Leaf pages with free gaps somewhere in each (or not pages).
            let mut base = base;
            if leaf {
                for (p, &(lower, len)) in [&mut new, &mut base].into_iter().zip(&gaps) {
                    let lower = lower.min(p.len());
                    let upper = (lower + len).min(p.len());
                    p[10..12].copy_from_slice(&2u16.to_le_bytes());
                    p[12..14].copy_from_slice(&(lower as u16).to_le_bytes());
                    p[14..16].copy_from_slice(&(upper as u16).to_le_bytes());
                }
            }
            // (As commits and replay do: both gaps zeroed.)
            let (mut new, mut base) = (new, base);
            zero_gap(&mut new);
            zero_gap(&mut base);
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            prop_assert!(diff(&new, &base, &mut fast, usize::MAX));
            diff_bytewise(&new, &base, &mut slow);
            prop_assert_eq!(fast, slow);
        }

        #[test]
        fn diff_then_apply_gives_the_new_page(
            base in prop::collection::vec(any::<u8>(), 256),
            edits in prop::collection::vec((0usize..256, 1usize..40, any::<u8>()), 0..8),
        ) {
            let mut new = base.clone();
            for (off, len, x) in edits {
                let end = (off + len).min(256);
                new[off..end].iter_mut().for_each(|b| *b ^= x | 1);
            }
            let (mut new, mut base) = (new, base);
            zero_gap(&mut new);
            zero_gap(&mut base);
            let mut out = vec![9u8; 3];
            prop_assert!(diff(&new, &base, &mut out, usize::MAX));
            let ranges = &out[3..];
            prop_assert!(check(ranges, 256));
            let mut got = base.clone();
            apply(&mut got, ranges);
            prop_assert_eq!(&got, &new);
            let mut refused = vec![1u8];
            if !ranges.is_empty() {
                prop_assert!(!diff(&new, &base, &mut refused, ranges.len() - 1));
                prop_assert_eq!(refused, vec![1u8]);
            }
        }

        #[test]
        fn check_never_panics(r in prop::collection::vec(any::<u8>(), 0..64)) {
            if check(&r, 128) {
                let mut p = vec![0u8; 128];
                apply(&mut p, &r);
            }
        }
    }

    #[test]
    fn ranges_past_the_page_or_out_of_order_are_refused() {
        let r = |off: u16, len: u16| {
            let mut v = off.to_le_bytes().to_vec();
            v.extend_from_slice(&len.to_le_bytes());
            v.resize(4 + len as usize, 7);
            v
        };
        assert!(check(&r(120, 8), 128));
        assert!(!check(&r(121, 8), 128));
        assert!(!check(&r(0, 0), 128));
        assert!(!check(&[r(40, 8), r(10, 8)].concat(), 128));
        assert!(!check(&[r(10, 8), r(17, 8)].concat(), 128));
        assert!(check(&[r(10, 8), r(18, 8)].concat(), 128));
        assert!(!check(&r(0, 8)[..11], 128));
    }

    #[test]
    fn a_long_difference_takes_several_ranges() {
        let base = vec![0u8; 70_000];
        let new = vec![1u8; 70_000];
        let mut out = Vec::new();
        assert!(diff(&new, &base, &mut out, usize::MAX));
        assert_eq!(out.len(), 70_000 + 2 * RANGE_HDR);
        // (A page is at most 64 KiB: this is only about the range limit.)
        let mut got = base.clone();
        apply(&mut got, &out);
        assert_eq!(got, new);
    }
}
