//! Mutable operations on a dirty page buffer.

use super::*;
use std::ops::Range;

/// Initialise an empty branch or leaf page.
pub fn init(b: &mut [u8], pgno: u64, flags: u16) {
    let psize = b.len();
    b[..HDR].fill(0);
    wr64(b, PGNO_AT, pgno);
    wr16(b, FLAGS_AT, flags);
    wr16(b, LOWER_AT, HDR as u16);
    wr16(b, UPPER_AT, psize as u16);
}

/// Write the header of an overflow run of `pages` pages starting at
/// page `pgno` into its first page `b` (the rest of the header zero).
pub fn init_overflow(b: &mut [u8], pgno: u64, pages: usize) {
    b[..HDR].fill(0);
    wr64(b, PGNO_AT, pgno);
    wr16(b, FLAGS_AT, P_OVERFLOW);
    set_overflow_pages(b, pages);
}

/// Write the length in pages of the overflow run whose first page is `b`.
pub fn set_overflow_pages(b: &mut [u8], pages: usize) {
    wr32(b, LOWER_AT, pages as u32);
}

/// The value bytes of the overflow run whose first page (or more) is `b`.
pub fn overflow_data_mut(b: &mut [u8]) -> &mut [u8] {
    &mut b[HDR..]
}

/// Copy page `src` into the buffer `dst` (same size) for a write: the
/// header, node pointers and nodes, not the free gap between them
/// (LEAF2 pages, whose bounds are LMDB's virtual ones, whole).
pub fn copy_page(dst: &mut [u8], src: &[u8]) {
    let (lo, up) = (lower(src), upper(src));
    if flags_of(src) & P_LEAF2 != 0
        || lo < HDR
        || lo > up
        || up > src.len()
        || dst.len() != src.len()
    {
        dst.copy_from_slice(src);
        return;
    }
    dst[..lo].copy_from_slice(&src[..lo]);
    dst[up..].copy_from_slice(&src[up..]);
}

/// A copy of the node page `old` (its bounds checked, as [`Page::new`]
/// checks them) `extra` bytes longer: the header and node pointers at
/// the start, the node area moved to the end, the free gap `extra` bytes
/// wider.
pub fn grown(old: &[u8], extra: usize) -> Vec<u8> {
    let (lo, up) = (lower(old), upper(old));
    let mut b = vec![0u8; old.len() + extra];
    b[..HDR].copy_from_slice(&old[..HDR]);
    for j in 0..(lo - HDR) / 2 {
        let q = HDR + 2 * j;
        wr16(&mut b, q, (rd16(old, q) as usize + extra) as u16);
    }
    b[up + extra..].copy_from_slice(&old[up..]);
    wr16(&mut b, LOWER_AT, lo as u16);
    wr16(&mut b, UPPER_AT, (up + extra) as u16);
    b
}

/// Write a new page number into the header.
pub fn set_pgno(b: &mut [u8], pgno: u64) {
    wr64(b, PGNO_AT, pgno);
}

fn lower(b: &[u8]) -> usize {
    rd16(b, LOWER_AT) as usize
}
fn upper(b: &[u8]) -> usize {
    rd16(b, UPPER_AT) as usize
}

/// Reserve a node slot of `fp` bytes at index `i`; returns its offset, or
/// `None` if the page lacks room.
fn make_room(b: &mut [u8], i: usize, fp: usize) -> Option<usize> {
    let (lo, up) = (lower(b), upper(b));
    if up - lo < fp + 2 {
        return None;
    }
    let n = (lo - HDR) / 2;
    debug_assert!(i <= n);
    let p = HDR + 2 * i;
    b.copy_within(p..lo, p + 2);
    let off = up - fp;
    wr16(b, p, off as u16);
    wr16(b, LOWER_AT, (lo + 2) as u16);
    wr16(b, UPPER_AT, off as u16);
    Some(off)
}

/// Insert a leaf node at index `i`. Returns false when it does not fit.
pub fn insert_leaf(b: &mut [u8], i: usize, key: &[u8], data: NodeData<'_>) -> bool {
    let stored = data.stored();
    let Some(off) = make_room(b, i, footprint(key.len(), stored)) else {
        return false;
    };
    let (dsize, flags) = data.header();
    wr16(b, off, dsize as u16);
    wr16(b, off + 2, (dsize >> 16) as u16);
    wr16(b, off + 4, flags);
    wr16(b, off + 6, key.len() as u16);
    let k = off + NODE_HDR;
    b[k..k + key.len()].copy_from_slice(key);
    let d = k + key.len();
    match data {
        NodeData::Inline(v) => b[d..d + v.len()].copy_from_slice(v),
        NodeData::Reserve(n) => b[d..d + n].fill(0),
        NodeData::Overflow(pg, _) => wr64(b, d, pg),
        NodeData::SubDb(r) | NodeData::DupDb(r) => b[d..d + 48].copy_from_slice(r),
        NodeData::SubPage(p) => b[d..d + p.len()].copy_from_slice(p),
    }
    true
}

/// Insert a branch node at index `i`. Returns false when it does not fit.
pub fn insert_branch(b: &mut [u8], i: usize, key: &[u8], child: u64) -> bool {
    let Some(off) = make_room(b, i, footprint(key.len(), 0)) else {
        return false;
    };
    wr16(b, off, child as u16);
    wr16(b, off + 2, (child >> 16) as u16);
    wr16(b, off + 4, (child >> 32) as u16);
    wr16(b, off + 6, key.len() as u16);
    b[off + NODE_HDR..off + NODE_HDR + key.len()].copy_from_slice(key);
    true
}

/// Insert an already-encoded node (as returned by [`Node::raw`]).
pub fn insert_raw(b: &mut [u8], i: usize, raw: &[u8]) -> bool {
    let Some(off) = make_room(b, i, (raw.len() + 1) & !1) else {
        return false;
    };
    b[off..off + raw.len()].copy_from_slice(raw);
    true
}

/// Append nodes `range` of the node page `src` to the end of `b`, in
/// order, in one pass (no per-node pointer shifting). Returns false, with
/// `b`'s nodes unchanged (only its free gap written), when they do not
/// fit: the header is updated last.
pub fn append_nodes(b: &mut [u8], src: &Page<'_>, range: Range<usize>) -> Result<bool> {
    let mut ends = (lower(b), upper(b));
    for j in range {
        if !push_node(b, &mut ends, src.node(j)?.raw()) {
            return Ok(false);
        }
    }
    wr16(b, LOWER_AT, ends.0 as u16);
    wr16(b, UPPER_AT, ends.1 as u16);
    Ok(true)
}

/// Store `raw` below the node area and its pointer after the others,
/// moving `(lower, upper)`; false if it does not fit.
#[inline]
fn push_node(b: &mut [u8], (lo, up): &mut (usize, usize), raw: &[u8]) -> bool {
    let fp = (raw.len() + 1) & !1;
    if *up - *lo < fp + 2 {
        return false;
    }
    *up -= fp;
    b[*up..*up + raw.len()].copy_from_slice(raw);
    wr16(b, *lo, *up as u16);
    *lo += 2;
    true
}

/// When the lowest node of the node area (at `up`) is as big as the
/// node removed at `off`, move it into the hole: one node's bytes
/// instead of every node stored below the hole (fixed-size items).
fn fill_hole(
    b: &mut [u8],
    (lo, up): (usize, usize),
    (off, fp): (usize, usize),
    leaf: bool,
) -> bool {
    let same =
        NodeHeader::read(b, up).is_some_and(|h| footprint(h.ksize as usize, h.stored(leaf)) == fp);
    if !same {
        return false;
    }
    // From the end: the lowest node is most often the last one put
    // (appended, or the last to fill a hole).
    let up16 = up as u16;
    let Some(j) = b[HDR..lo]
        .chunks_exact(2)
        .rposition(|c| u16::from_le_bytes([c[0], c[1]]) == up16)
    else {
        return false;
    };
    let at = HDR + 2 * j;
    b.copy_within(up..up + fp, off);
    wr16(b, at, off as u16);
    true
}

/// Remove node `i`, closing the gap in the node area.
pub fn remove(b: &mut [u8], i: usize) {
    let (lo, up) = (lower(b), upper(b));
    let p = HDR + 2 * i;
    let off = rd16(b, p) as usize;
    // A dirty page is one this process wrote: its node is well-formed.
    let h = NodeHeader::read(b, off).expect("dirty page is well-formed");
    let leaf = rd16(b, FLAGS_AT) & P_LEAF != 0;
    let fp = footprint(h.ksize as usize, h.stored(leaf));
    if off - up > fp && fill_hole(b, (lo, up), (off, fp), leaf) {
        b.copy_within(p + 2..lo, p);
        wr16(b, LOWER_AT, (lo - 2) as u16);
        wr16(b, UPPER_AT, (up + fp) as u16);
        return;
    }
    // Shift the nodes stored below this one up by its footprint.
    b.copy_within(up..off, up + fp);
    // Four pointers at a time, branch-free: each lane below `off` gains
    // `fp` (lanes stay below 2^16, so no carry crosses into the next).
    let (off16, fp16) = (off as u16, fp as u16);
    let ptrs = &mut b[HDR..lo];
    let mut words = ptrs.chunks_exact_mut(8);
    for w in &mut words {
        let mut lanes = [0u16; 4];
        for (l, c) in lanes.iter_mut().zip(w.chunks_exact(2)) {
            let o = u16::from_le_bytes([c[0], c[1]]);
            *l = o.wrapping_add(fp16 & 0u16.wrapping_sub((o < off16) as u16));
        }
        for (l, c) in lanes.iter().zip(w.chunks_exact_mut(2)) {
            c.copy_from_slice(&l.to_le_bytes());
        }
    }
    for c in words.into_remainder().chunks_exact_mut(2) {
        let o = u16::from_le_bytes([c[0], c[1]]);
        let moved = o.wrapping_add(fp16 & 0u16.wrapping_sub((o < off16) as u16));
        c.copy_from_slice(&moved.to_le_bytes());
    }
    b.copy_within(p + 2..lo, p);
    wr16(b, LOWER_AT, (lo - 2) as u16);
    wr16(b, UPPER_AT, (up + fp) as u16);
}

/// Remove nodes `0..k` in place when they fill the top of the node area,
/// as in a page built in key order (appended, or rebuilt): one move of
/// the nodes stored below them, not a copy and rebuild of the page.
/// False, with `b` unchanged, when they do not (or `k` is out of range).
pub fn remove_first(b: &mut [u8], k: usize) -> bool {
    let (lo, up) = (lower(b), upper(b));
    let n = lo.saturating_sub(HDR) / 2;
    if k == 0 || k > n || up > b.len() {
        return false;
    }
    let leaf = rd16(b, FLAGS_AT) & P_LEAF != 0;
    let (mut gone, mut low) = (0, b.len());
    for j in 0..k {
        let off = rd16(b, HDR + 2 * j) as usize;
        let Some(h) = NodeHeader::read(b, off) else {
            return false;
        };
        gone += footprint(h.ksize as usize, h.stored(leaf));
        low = low.min(off);
    }
    // Disjoint nodes of `gone` bytes, none starting below `top`, are
    // exactly the bytes from `top` to the end; the others lie below.
    let Some(top) = b.len().checked_sub(gone) else {
        return false;
    };
    if low < top || up > top {
        return false;
    }
    b.copy_within(up..top, up + gone);
    for j in k..n {
        let at = HDR + 2 * j;
        wr16(b, at, rd16(b, at) + gone as u16);
    }
    b.copy_within(HDR + 2 * k..lo, HDR);
    wr16(b, LOWER_AT, (lo - 2 * k) as u16);
    wr16(b, UPPER_AT, (up + gone) as u16);
    true
}

/// Initialise an empty LEAF2 page for keys of `size` bytes.
pub fn init_leaf2(b: &mut [u8], pgno: u64, flags: u16, size: usize) {
    init(b, pgno, flags);
    wr16(b, 8, size as u16);
}

/// Insert a fixed-size key at index `i` of a LEAF2 page (or a DUPFIXED
/// sub-page). Returns false when it does not fit.
pub fn insert_leaf2(b: &mut [u8], i: usize, key: &[u8]) -> bool {
    let size = rd16(b, 8) as usize;
    let lo = lower(b);
    let n = (lo - HDR) / 2;
    if key.len() != size || HDR + (n + 1) * size > b.len() {
        return false;
    }
    let at = HDR + i * size;
    // Appended (slapd's ids go in ascending order): nothing to move.
    if i < n {
        b.copy_within(at..HDR + n * size, at + size);
    }
    // The usual sizes as one store each, not a `memcpy` call.
    if let Ok(k) = <&[u8; 8]>::try_from(key) {
        b[at..at + 8].copy_from_slice(k);
    } else if let Ok(k) = <&[u8; 4]>::try_from(key) {
        b[at..at + 4].copy_from_slice(k);
    } else {
        b[at..at + size].copy_from_slice(key);
    }
    // LMDB's accounting: lower grows by 2, upper shrinks by size - 2.
    wr16(b, LOWER_AT, (lo + 2) as u16);
    let up = rd16(b, UPPER_AT) as usize;
    wr16(b, UPPER_AT, (up + 2 - size) as u16);
    true
}

/// Remove key `i` of a LEAF2 page.
pub fn remove_leaf2(b: &mut [u8], i: usize) {
    let size = rd16(b, 8) as usize;
    let lo = lower(b);
    let n = (lo - HDR) / 2;
    let at = HDR + i * size;
    b.copy_within(at + size..HDR + n * size, at);
    wr16(b, LOWER_AT, (lo - 2) as u16);
    let up = rd16(b, UPPER_AT) as usize;
    wr16(b, UPPER_AT, (up + size - 2) as u16);
}

/// Rebuild a LEAF2 page from packed keys, keeping its header. Returns
/// false when they do not fit (or one is of another size).
pub fn rebuild_leaf2(b: &mut [u8], flags: u16, keys: &[&[u8]]) -> bool {
    let (pgno, size) = (rd64(b, 0), rd16(b, 8) as usize);
    init_leaf2(b, pgno, flags, size);
    // Each key stored in its place, the counts written once: a split
    // rebuilds two pages of a key's ids, and an `insert_leaf2` a key made
    // it 470 instructions of a random id's put (docs/benchmarks.md).
    let n = keys.len();
    let Some(area) = n
        .checked_mul(size)
        .and_then(|len| b.get_mut(HDR..HDR + len))
    else {
        return false;
    };
    let fits = match size {
        8 => area.chunks_exact_mut(8).zip(keys).all(|(slot, k)| {
            <&[u8; 8]>::try_from(*k)
                .map(|k| slot.copy_from_slice(k))
                .is_ok()
        }),
        4 => area.chunks_exact_mut(4).zip(keys).all(|(slot, k)| {
            <&[u8; 4]>::try_from(*k)
                .map(|k| slot.copy_from_slice(k))
                .is_ok()
        }),
        0 => n == 0,
        _ => area.chunks_exact_mut(size).zip(keys).all(|(slot, k)| {
            let fits = k.len() == size;
            if fits {
                slot.copy_from_slice(k);
            }
            fits
        }),
    };
    if !fits {
        return false;
    }
    // LMDB's accounting, as `insert_leaf2` keeps it key by key.
    let up = rd16(b, UPPER_AT)
        .wrapping_add((2 * n) as u16)
        .wrapping_sub((n * size) as u16);
    wr16(b, LOWER_AT, (HDR + 2 * n) as u16);
    wr16(b, UPPER_AT, up);
    true
}

/// Set the child pointer of branch node `i`.
pub fn set_child(b: &mut [u8], i: usize, child: u64) {
    let off = rd16(b, HDR + 2 * i) as usize;
    wr16(b, off, child as u16);
    wr16(b, off + 2, (child >> 16) as u16);
    wr16(b, off + 4, (child >> 32) as u16);
}

/// Overwrite the key of branch node `i` with `key` when it has the same
/// length (the node keeps its place); false, page unchanged, otherwise.
pub fn set_branch_key(b: &mut [u8], i: usize, key: &[u8]) -> bool {
    let off = rd16(b, HDR + 2 * i) as usize;
    if rd16(b, off + 6) as usize != key.len() {
        return false;
    }
    match b.get_mut(off + NODE_HDR..off + NODE_HDR + key.len()) {
        Some(k) => {
            k.copy_from_slice(key);
            true
        }
        None => false,
    }
}

/// Set the value size of leaf node `i` whose value lives in an
/// overflow run (the node itself keeps its 8-byte page number).
pub(crate) fn set_big_dsize(b: &mut [u8], i: usize, dsize: usize) {
    let off = rd16(b, HDR + 2 * i) as usize;
    wr16(b, off, dsize as u16);
    wr16(b, off + 2, (dsize >> 16) as u16);
}

/// Mutable key of entry `i` of a leaf or branch page (a LEAF2 page's
/// packed key too), for an overwrite of the same length; `None` if it (or
/// its pointer or node header) lies outside `b`.
pub fn key_mut(b: &mut [u8], i: usize) -> Option<&mut [u8]> {
    let at =
        |b: &[u8], off: usize| Some(u16::from_le_bytes(*b.get(off..)?.first_chunk()?) as usize);
    if at(b, FLAGS_AT)? as u16 & P_LEAF2 != 0 {
        let ks = at(b, 8)?;
        return b.get_mut(HDR + i * ks..HDR + (i + 1) * ks);
    }
    let off = at(b, HDR + 2 * i)?;
    let ks = at(b, off + 6)?;
    b.get_mut(off + NODE_HDR..off + NODE_HDR + ks)
}

/// Mutable inline data of leaf node `i`.
pub fn data_mut(b: &mut [u8], i: usize) -> &mut [u8] {
    let off = rd16(b, HDR + 2 * i) as usize;
    let ks = rd16(b, off + 6) as usize;
    let fl = rd16(b, off + 4);
    let len = if fl & F_BIGDATA != 0 {
        8
    } else {
        rd16(b, off) as usize | (rd16(b, off + 2) as usize) << 16
    };
    let d = off + NODE_HDR + ks;
    &mut b[d..d + len]
}

/// Rebuild the page from encoded nodes (in order), keeping its header.
/// Returns false if they do not fit.
pub fn rebuild(b: &mut [u8], flags: u16, nodes: &[&[u8]]) -> bool {
    let pgno = rd64(b, 0);
    init(b, pgno, flags);
    let mut ends = (HDR, b.len());
    for raw in nodes {
        if !push_node(b, &mut ends, raw) {
            return false;
        }
        wr16(b, LOWER_AT, ends.0 as u16);
        wr16(b, UPPER_AT, ends.1 as u16);
    }
    true
}
