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
//! Ranges, in increasing offset order, none past the page or over
//! another (a page is at most 64 KiB, so an offset fits; a longer
//! difference takes several ranges):
//! - bytes: `offset u16`, `length u16` (not 0), then `length` bytes;
//! - a move (log record version 6): `offset u16`, `0 u16`, `source u16`,
//!   `length u16` (not 0): the `length` bytes of the prepared base at
//!   `source` (read before any range is applied).
//!
//! A node removed or resized moves every node stored below it by its
//! size: told as bytes, a put that replaces a 600-byte entry with one a
//! byte longer rewrites most of the page. A move tells that stretch in 8
//! bytes, and finding it costs a few compares per node (see [`moves`]).

use crate::format::bytes::get16;
use crate::format::page::{free_gap, HDR};

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
/// Bytes of a move.
const MOVE_LEN: usize = 8;
/// Shortest stretch told as a move: below it its bytes cost about as much.
const MOVE_MIN: usize = 24;
/// Most moves looked for in a page: one per node removed or resized.
const MOVES_MAX: usize = 8;
/// Bytes at a node's start compared before a move is measured.
const PROBE: usize = 16;

/// A stretch of the new page that is the base's bytes at another offset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Move {
    dst: usize,
    src: usize,
    len: usize,
}

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

/// Append to `out` the ranges that make `base` (as [`prepare_base`] would
/// leave it for page `pgno`) into `new` (its free gap zeroed, as
/// [`zero_gap`] leaves it); `false`, with `out` as it was, when they would
/// take more than `limit` bytes. `base` is read as it lies (a committed
/// page in the map): its page number and gap are replaced on the fly.
///
/// A range runs from a differing byte until more equal bytes follow it
/// than a range header would cost (or its length limit). Every page a
/// WAL commit writes goes through here (a commit of 1,000 random puts
/// diffs about a thousand pages), so the scan skips where the two free
/// gaps overlap (zeros in both) and compares blocks and words.
pub(crate) fn diff(new: &[u8], base: &[u8], pgno: u64, out: &mut Vec<u8>, limit: usize) -> bool {
    let p = Pair::new(new, base, pgno);
    let mut found = [Move::default(); MOVES_MAX];
    let k = moves(&p, &mut found);
    diff_around(&p, &found[..k], out, limit)
}

/// [`diff`] with the moves given: bytes between them.
fn diff_around(p: &Pair<'_>, moves: &[Move], out: &mut Vec<u8>, limit: usize) -> bool {
    let start = out.len();
    let mut from = 0;
    for m in moves.iter().copied().chain(std::iter::once(Move {
        dst: p.n,
        src: 0,
        len: 0,
    })) {
        if !literal(&p.until(m.dst), from, out, start, limit) {
            out.truncate(start);
            return false;
        }
        if m.len == 0 {
            break;
        }
        if out.len() - start + MOVE_LEN > limit {
            out.truncate(start);
            return false;
        }
        for v in [m.dst, 0, m.src, m.len] {
            out.extend_from_slice(&(v as u16).to_le_bytes());
        }
        from = m.dst + m.len;
    }
    true
}

/// Append the byte ranges from `from` to the end of `p`; `false` when
/// `out` would pass `limit` bytes past `start`.
fn literal(p: &Pair<'_>, from: usize, out: &mut Vec<u8>, start: usize, limit: usize) -> bool {
    let mut i = p.first_difference(from);
    while i < p.n {
        let (from, end) = (i, p.range_end(i));
        if out.len() - start + RANGE_HDR + (end - from) > limit {
            return false;
        }
        out.extend_from_slice(&(from as u16).to_le_bytes());
        out.extend_from_slice(&((end - from) as u16).to_le_bytes());
        out.extend_from_slice(&p.new[from..end]);
        i = p.first_difference(end);
    }
    true
}

/// The stretches of `p`'s new page that are its base's nodes moved, in
/// offset order, into `found`; how many. Each node of the new page that
/// is not where the base had the node of its index (or of the index
/// before or after: one node added or removed before it) is looked for
/// there, and a match is followed past it: the nodes stored below a
/// removed or resized one move together.
fn moves(p: &Pair<'_>, found: &mut [Move; MOVES_MAX]) -> usize {
    let (Some((nl, nu)), Some((bl, bu))) = (node_area(p.new, p.n), node_area(p.base, p.n)) else {
        return 0;
    };
    let ptr =
        |b: &[u8], j: usize| u16::from_le_bytes([b[HDR + 2 * j], b[HDR + 2 * j + 1]]) as usize;
    let (kn, kb) = ((nl - HDR) / 2, (bl - HDR) / 2);
    // Nodes whose pointers are the base's, from the first or from the
    // last (one added or removed between), are where the base had them:
    // only those between can have moved. Mostly none (a branch's child
    // rewritten) or the one node put.
    let (np, bp) = (&p.new[HDR..nl], &p.base[HDR..bl]);
    let head = first_difference(np, bp, 0, np.len().min(bp.len())) / 2;
    let tail = common_suffix(&np[2 * head..], &bp[2 * head.min(kb)..]) / 2;
    let mut k = 0;
    for j in head..kn - tail {
        let o = ptr(p.new, j);
        if o < nu || o + PROBE > p.n || found[..k].iter().any(|m| o >= m.dst && o < m.dst + m.len) {
            continue;
        }
        let cands = [j, j.wrapping_sub(1), j + 1].map(|i| if i < kb { ptr(p.base, i) } else { 0 });
        if cands.contains(&o) {
            continue;
        }
        for c in cands {
            if c < bu || c + PROBE > p.n || p.new[o..o + PROBE] != p.base[c..c + PROBE] {
                continue;
            }
            let len = (p.n - o).min(p.n - c).min(RANGE_MAX);
            let len = first_difference(&p.new[o..o + len], &p.base[c..c + len], PROBE, len);
            if len >= MOVE_MIN {
                found[k] = Move {
                    dst: o,
                    src: c,
                    len,
                };
                k += 1;
            }
            break;
        }
        if k == MOVES_MAX {
            break;
        }
    }
    // In offset order, none over another: a move found from a node in
    // the middle of a stretch is inside the one found from its start.
    let found = &mut found[..k];
    found.sort_unstable_by_key(|m| m.dst);
    let mut kept = 0;
    for i in 0..k {
        let mut m = found[i];
        if kept > 0 {
            let past = found[kept - 1].dst + found[kept - 1].len;
            if m.dst + m.len <= past {
                continue;
            }
            if m.dst < past {
                let cut = past - m.dst;
                m = Move {
                    dst: past,
                    src: m.src + cut,
                    len: m.len - cut,
                };
            }
        }
        if m.len >= MOVE_MIN {
            found[kept] = m;
            kept += 1;
        }
    }
    kept
}

/// Bytes at the end of `a` equal to those at the end of `b`, in whole
/// pairs (pointers).
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len()) & !1;
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut i = n;
    while i >= 8 && word(a, i - 8) == word(b, i - 8) {
        i -= 8;
    }
    while i >= 2 && a[i - 2..i] == b[i - 2..i] {
        i -= 2;
    }
    n - i
}

/// `(lower, upper)` of a branch or leaf page with nodes, the first `n`
/// bytes of `b` holding it all.
fn node_area(b: &[u8], n: usize) -> Option<(usize, usize)> {
    let (lower, len) = free_gap(b);
    let upper = lower + len;
    (lower >= HDR && upper <= n && (lower - HDR).is_multiple_of(2)).then_some((lower, upper))
}

/// A new page and its base as [`diff`] compares them.
#[derive(Clone, Copy)]
struct Pair<'a> {
    new: &'a [u8],
    base: &'a [u8],
    /// What the base's first 8 bytes read as.
    pgno: [u8; 8],
    /// The base's free gap `gb..ge`, read as zeros (`n..n`: none).
    gb: usize,
    ge: usize,
    /// The new page's free gap (zeros): within the base's, no difference.
    gn: usize,
    gne: usize,
    /// Bytes compared.
    n: usize,
}

/// 0x80 in each byte.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// 0x80 in each byte of `x` that is not zero, 0 in the others.
fn nonzero_bytes(x: u64) -> u64 {
    // No carry crosses a byte: 0x7f + 0x7f < 0x100.
    (((x & !HIGH) + !HIGH) | x) & HIGH
}

impl<'a> Pair<'a> {
    fn new(new: &'a [u8], base: &'a [u8], pgno: u64) -> Pair<'a> {
        let n = new.len().min(base.len());
        let (new, base) = (&new[..n], &base[..n]);
        let (gb, lb) = free_gap(base);
        let (gn, ln) = free_gap(new);
        // A gap starts past the page header (16 bytes), so past the number.
        let (gb, ge) = if lb == 0 { (n, n) } else { (gb, gb + lb) };
        Pair {
            new,
            base,
            pgno: pgno.to_le_bytes(),
            gb,
            ge,
            gn,
            gne: gn + ln,
            n,
        }
    }

    /// The pair compared up to `stop` only.
    fn until(&self, stop: usize) -> Pair<'a> {
        let stop = stop.min(self.n);
        Pair {
            gb: self.gb.min(stop),
            ge: self.ge.min(stop),
            gn: self.gn.min(stop),
            gne: self.gne.min(stop),
            n: stop,
            ..*self
        }
    }

    /// The base's byte `k` as replay sees it.
    fn base_byte(&self, k: usize) -> u8 {
        if k < 8 {
            self.pgno[k]
        } else if k >= self.gb && k < self.ge {
            0
        } else {
            self.base[k]
        }
    }

    /// The 8 bytes at `j` of both pages xor-ed.
    fn xor_word(&self, j: usize) -> u64 {
        let b = if j >= self.ge || (j >= 8 && j + 8 <= self.gb) {
            word(self.base, j)
        } else if j >= self.gb && j + 8 <= self.ge {
            0
        } else {
            u64::from_le_bytes(std::array::from_fn(|k| self.base_byte(j + k)))
        };
        word(self.new, j) ^ b
    }

    /// The first index at or past `i` where the pages differ; `n` if none.
    fn first_difference(&self, mut i: usize) -> usize {
        while i < 8.min(self.n) {
            if self.new[i] != self.pgno[i] {
                return i;
            }
            i += 1;
        }
        if i < self.gb {
            let d = first_difference(self.new, self.base, i, self.gb);
            if d < self.gb {
                return d;
            }
            i = self.gb;
        }
        if i < self.ge {
            // Zeros in the base: a difference is a byte of the new page
            // that is not zero, none in its own gap.
            let d = first_nonzero(self.new, i, self.gn.clamp(i, self.ge));
            if d < self.gn.clamp(i, self.ge) {
                return d;
            }
            let d = first_nonzero(self.new, self.gne.clamp(i, self.ge), self.ge);
            if d < self.ge {
                return d;
            }
            i = self.ge;
        }
        first_difference(self.new, self.base, i, self.n)
    }

    /// The end of the range that starts at `from`, a differing byte: past
    /// its last differing byte before a run of more than [`RANGE_HDR`]
    /// equal bytes, the end of the page, or [`RANGE_MAX`] bytes.
    fn range_end(&self, from: usize) -> usize {
        let n = self.n.min(from + RANGE_MAX);
        // Past the last differing byte; equal bytes lie from it to `j`.
        let mut end = from + 1;
        let mut j = end;
        while j + 8 <= n {
            let x = self.xor_word(j);
            if x == 0 {
                // Eight equal bytes: more than a range header's worth.
                return end;
            }
            let d = nonzero_bytes(x);
            if d == HIGH {
                // Eight differing bytes.
                j += 8;
                end = j;
                continue;
            }
            // Equal bytes at the word's start, added to those before it.
            let lead = d.trailing_zeros() as usize / 8;
            if j - end + lead > RANGE_HDR {
                return end;
            }
            // A run of RANGE_HDR + 1 equal bytes inside the word (bit 7 of
            // byte k: bytes k..k+5 equal). The first starts after a
            // differing byte of the word, since the leading run is short.
            let eq = !d & HIGH;
            let run = eq & (eq >> 8) & (eq >> 16) & (eq >> 24) & (eq >> 32);
            if run != 0 {
                return j + run.trailing_zeros() as usize / 8;
            }
            end = j + 8 - d.leading_zeros() as usize / 8;
            j += 8;
        }
        while j < n {
            if self.new[j] != self.base_byte(j) {
                end = j + 1;
            } else if j - end >= RANGE_HDR {
                return end;
            }
            j += 1;
        }
        end
    }
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
    // Differences close together (a node compared with other bytes): the
    // next word tells, without a call.
    if i + 8 <= end {
        let x = word(a, i) ^ word(b, i);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    // Most scans run past a page's last change to its end: one compare
    // (the C library's, the widest vectors) tells them.
    if i >= end || a[i..end] == b[i..end] {
        return end.max(i);
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

/// The first index in `i..end` where `a` is not zero; `end` if none.
fn first_nonzero(a: &[u8], mut i: usize, end: usize) -> usize {
    while i + 8 <= end {
        let x = word(a, i);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < end && a[i] == 0 {
        i += 1;
    }
    i
}

/// One range of a patch: `(offset, length, bytes or move source)`.
enum Range<'a> {
    Bytes(usize, &'a [u8]),
    Move(usize, usize, usize),
}

/// The range at `at` of `ranges` and the offset past it; `None` when it
/// does not fit or has no length.
fn range_at(ranges: &[u8], at: usize) -> Option<(Range<'_>, usize)> {
    let off = get16(ranges, at)? as usize;
    let len = get16(ranges, at + 2)? as usize;
    if len > 0 {
        let bytes = ranges.get(at + RANGE_HDR..at + RANGE_HDR + len)?;
        return Some((Range::Bytes(off, bytes), at + RANGE_HDR + len));
    }
    let src = get16(ranges, at + 4)? as usize;
    let len = get16(ranges, at + 6)? as usize;
    (len > 0).then_some((Range::Move(off, src, len), at + MOVE_LEN))
}

/// Whether `ranges` are well formed for a page of `psize` bytes.
pub(crate) fn check(ranges: &[u8], psize: usize) -> bool {
    let (mut at, mut past) = (0, 0);
    while at < ranges.len() {
        let Some((r, next)) = range_at(ranges, at) else {
            return false;
        };
        let (off, len) = match r {
            Range::Bytes(off, b) => (off, b.len()),
            Range::Move(off, src, len) if src + len <= psize => (off, len),
            Range::Move(..) => return false,
        };
        if off < past || off + len > psize {
            return false;
        }
        past = off + len;
        at = next;
    }
    true
}

/// Apply `ranges` (checked by [`check`] for this page size) to `page`,
/// the prepared base; moves read the base as it was before any range.
pub(crate) fn apply(page: &mut [u8], ranges: &[u8]) {
    let moved = std::iter::successors(range_at(ranges, 0), |(_, next)| range_at(ranges, *next))
        .any(|(r, _)| matches!(r, Range::Move(..)));
    let base = moved.then(|| page.to_vec());
    let mut at = 0;
    while let Some((r, next)) = range_at(ranges, at) {
        match r {
            Range::Bytes(off, bytes) => {
                if let Some(dst) = page.get_mut(off..off + bytes.len()) {
                    dst.copy_from_slice(bytes);
                }
            }
            Range::Move(off, src, len) => {
                let src = base.as_deref().and_then(|b| b.get(src..src + len));
                if let (Some(dst), Some(src)) = (page.get_mut(off..off + len), src) {
                    dst.copy_from_slice(src);
                }
            }
        }
        at = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::page::{edit, NodeData, P_LEAF};
    use proptest::prelude::*;

    /// [`diff`] without moves: what the byte-at-a-time form tells.
    fn diff_bytes(new: &[u8], base: &[u8], pgno: u64, out: &mut Vec<u8>) -> bool {
        diff_around(&Pair::new(new, base, pgno), &[], out, usize::MAX)
    }

    /// A leaf page of `psize` bytes holding `nodes` (key, value length),
    /// as many as fit.
    fn leaf(psize: usize, nodes: &[(u32, usize)]) -> Vec<u8> {
        let mut b = vec![0xa5; psize];
        edit::init(&mut b, 7, P_LEAF);
        for (i, &(k, len)) in nodes.iter().enumerate() {
            let value: Vec<u8> = (0..len).map(|j| (k as usize * 31 + j) as u8).collect();
            if !edit::insert_leaf(&mut b, i, &k.to_be_bytes(), NodeData::Inline(&value)) {
                break;
            }
        }
        b
    }

    /// Replay's result for `ranges` on `base`.
    fn replayed(base: &[u8], pgno: u64, ranges: &[u8]) -> Vec<u8> {
        let mut got = base.to_vec();
        prepare_base(&mut got, pgno);
        apply(&mut got, ranges);
        got
    }

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
            pgno in prop_oneof![Just(0u64), 0u64..3, any::<u64>()],
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
            // The new page as commits leave it (its gap zeroed); the base
            // as it lies, with bytes in its gap: the diff reads it as
            // replay prepares it.
            zero_gap(&mut new);
            let mut prepared = base.clone();
            prepare_base(&mut prepared, pgno);
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            prop_assert!(diff_bytes(&new, &base, pgno, &mut fast));
            diff_bytewise(&new, &prepared, &mut slow);
            prop_assert_eq!(fast, slow);
            // With moves (these pages' pointers point anywhere): replay
            // still gives the new page.
            let mut moved = Vec::new();
            prop_assert!(diff(&new, &base, pgno, &mut moved, usize::MAX));
            prop_assert!(check(&moved, new.len()));
            prop_assert_eq!(replayed(&base, pgno, &moved), new);
        }

        #[test]
        fn diff_then_apply_gives_the_new_page(
            base in prop::collection::vec(any::<u8>(), 256),
            edits in prop::collection::vec((0usize..256, 1usize..40, any::<u8>()), 0..8),
            pgno in any::<u64>(),
        ) {
            let mut new = base.clone();
            for (off, len, x) in edits {
                let end = (off + len).min(256);
                new[off..end].iter_mut().for_each(|b| *b ^= x | 1);
            }
            zero_gap(&mut new);
            let mut out = vec![9u8; 3];
            prop_assert!(diff(&new, &base, pgno, &mut out, usize::MAX));
            let ranges = &out[3..];
            prop_assert!(check(ranges, 256));
            let mut got = base.clone();
            prepare_base(&mut got, pgno);
            apply(&mut got, ranges);
            prop_assert_eq!(&got, &new);
            let mut refused = vec![1u8];
            if !ranges.is_empty() {
                prop_assert!(!diff(&new, &base, pgno, &mut refused, ranges.len() - 1));
                prop_assert_eq!(refused, vec![1u8]);
            }
        }

        #[test]
        fn edits_of_a_leaf_replay_exactly_and_moves_keep_them_small(
            sizes in prop::collection::vec(0usize..300, 1..24),
            edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, 0usize..300), 1..4),
            pgno in any::<u64>(),
        ) {
            // A leaf of nodes of assorted sizes, then a few removals,
            // resizes and additions, as the tree makes them.
            let nodes: Vec<(u32, usize)> =
                sizes.iter().enumerate().map(|(i, &l)| (i as u32 * 2, l)).collect();
            let base = leaf(4096, &nodes);
            let mut new = base.clone();
            edit::set_pgno(&mut new, pgno);
            for (at, what, len) in edits {
                let n = (new.len(), (free_gap(&new).0 - HDR) / 2).1;
                let i = at.index(n.max(1));
                let value = vec![0x3c; len];
                match what {
                    0 if n > 0 => edit::remove(&mut new, i),
                    1 if n > 0 => {
                        edit::remove(&mut new, i);
                        let key = (i as u32 * 2 + 1).to_be_bytes();
                        let _ = edit::insert_leaf(&mut new, i, &key, NodeData::Inline(&value));
                    }
                    _ => {
                        let key = (9999 + i as u32).to_be_bytes();
                        let _ = edit::insert_leaf(&mut new, i.min(n), &key, NodeData::Inline(&value));
                    }
                }
            }
            zero_gap(&mut new);
            let (mut moved, mut bytes) = (Vec::new(), Vec::new());
            prop_assert!(diff(&new, &base, pgno, &mut moved, usize::MAX));
            prop_assert!(diff_bytes(&new, &base, pgno, &mut bytes));
            prop_assert!(check(&moved, 4096));
            prop_assert_eq!(replayed(&base, pgno, &moved), new);
            // A move replaces at least MOVE_MIN bytes (and a header) by 8.
            prop_assert!(moved.len() <= bytes.len() + MOVE_LEN, "{} > {}", moved.len(), bytes.len());
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
    fn every_pattern_of_differences_in_sixteen_bytes_agrees_with_the_bytewise_form() {
        // Each set of differing bytes among 16, at two alignments to the
        // words `range_end` reads: the runs of equal bytes that end a
        // range fall at every place within and across words.
        let step = if cfg!(miri) { 4099 } else { 1 };
        let base = vec![0u8; 48];
        for mask in (0..1u32 << 16).step_by(step) {
            for shift in [0, 3] {
                let mut new = base.clone();
                for k in (0..16).filter(|k| mask >> k & 1 == 1) {
                    new[16 + shift + k] = 1;
                }
                let (mut fast, mut slow) = (Vec::new(), Vec::new());
                assert!(diff_bytes(&new, &base, 0, &mut fast));
                diff_bytewise(&new, &base, &mut slow);
                assert_eq!(fast, slow, "mask {mask:#x} shift {shift}");
            }
        }
    }

    #[test]
    fn gaps_at_every_place_agree_with_the_bytewise_form() {
        // The base's gap (read as zeros) and the new page's (skipped where
        // they overlap) at every place in a small page, so that the words
        // `range_end` reads straddle each of their ends.
        let page = |fill: &dyn Fn(usize) -> u8, lower: usize, upper: usize| {
            let mut p: Vec<u8> = (0..56).map(fill).collect();
            p[10..12].copy_from_slice(&2u16.to_le_bytes());
            p[12..14].copy_from_slice(&(lower as u16).to_le_bytes());
            p[14..16].copy_from_slice(&(upper as u16).to_le_bytes());
            p
        };
        // (Miri runs a thousand times slower: a sample there.)
        let (step, some) = if cfg!(miri) { (13, 2) } else { (1, 5) };
        for lower in (16..=56).step_by(step) {
            for upper in (lower..=56).step_by(step) {
                let base = page(&|i| (i * 7 % 5) as u8, lower, upper);
                let gaps = [(20, 33), (29, 40), (16, 16), (16, 56), (41, 49)];
                for &(nl, nu) in &gaps[..some] {
                    for &every in &[1, 3, 2, 6][..some.min(4)] {
                        let mut new =
                            page(&|i| (i * 7 % 5) as u8 ^ u8::from(i % every == 0), nl, nu);
                        zero_gap(&mut new);
                        let mut prepared = base.clone();
                        prepare_base(&mut prepared, 3);
                        let (mut fast, mut slow) = (Vec::new(), Vec::new());
                        assert!(diff_bytes(&new, &base, 3, &mut fast));
                        diff_bytewise(&new, &prepared, &mut slow);
                        assert_eq!(fast, slow, "base gap {lower}..{upper}, new {nl}..{nu}");
                    }
                }
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
    fn a_resized_node_is_told_as_its_bytes_and_a_move() {
        // Ten values of about 300 bytes; the fourth grows by a byte: the
        // nodes stored below it (added after it) move by its size.
        let nodes: Vec<(u32, usize)> = (0..10).map(|k| (k, 300 + 2 * k as usize)).collect();
        let base = leaf(4096, &nodes);
        let mut new = base.clone();
        edit::remove(&mut new, 3);
        assert!(edit::insert_leaf(
            &mut new,
            3,
            &3u32.to_be_bytes(),
            NodeData::Inline(&[1; 301])
        ));
        zero_gap(&mut new);
        let (mut moved, mut bytes) = (Vec::new(), Vec::new());
        assert!(diff(&new, &base, 7, &mut moved, usize::MAX));
        assert!(diff_bytes(&new, &base, 7, &mut bytes));
        assert_eq!(replayed(&base, 7, &moved), new);
        // The header, the pointers, the new node, one move.
        assert!(bytes.len() > 1800, "as bytes: {}", bytes.len());
        assert!(moved.len() < 400, "with a move: {}", moved.len());
        let mut refused = Vec::new();
        assert!(!diff(&new, &base, 7, &mut refused, moved.len() - 1));
        assert!(refused.is_empty());
    }

    #[test]
    fn a_move_reads_the_base_before_any_range() {
        // Bytes written at 0..8 first; a move from 0..8 then reads the
        // base's bytes there, not the ones just written.
        let mut ranges = Vec::new();
        for v in [0u16, 8] {
            ranges.extend_from_slice(&v.to_le_bytes());
        }
        ranges.extend_from_slice(&[9; 8]);
        for v in [16u16, 0, 0, 8] {
            ranges.extend_from_slice(&v.to_le_bytes());
        }
        assert!(check(&ranges, 32));
        let mut page: Vec<u8> = (0..32).collect();
        apply(&mut page, &ranges);
        let want: Vec<u8> = [
            vec![9; 8],
            (8..16).collect(),
            (0..8).collect(),
            (24..32).collect(),
        ]
        .concat();
        assert_eq!(page, want);
    }

    #[test]
    fn moves_past_the_page_or_of_nothing_are_refused() {
        let m = |off: u16, src: u16, len: u16| -> Vec<u8> {
            [off, 0, src, len]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect()
        };
        assert!(check(&m(0, 64, 64), 128));
        assert!(!check(&m(0, 65, 64), 128));
        assert!(!check(&m(65, 0, 64), 128));
        assert!(!check(&m(0, 0, 0), 128));
        assert!(!check(&m(0, 0, 8)[..7], 128));
        assert!(!check(&[m(16, 0, 8), m(20, 0, 8)].concat(), 128));
    }

    #[test]
    fn a_long_difference_takes_several_ranges() {
        let base = vec![0u8; 70_000];
        let new = vec![1u8; 70_000];
        let mut out = Vec::new();
        assert!(diff(&new, &base, 0, &mut out, usize::MAX));
        assert_eq!(out.len(), 70_000 + 2 * RANGE_HDR);
        // (A page is at most 64 KiB: this is only about the range limit.)
        let mut got = base.clone();
        prepare_base(&mut got, 0);
        apply(&mut got, &out);
        assert!(got == new);
    }
}
