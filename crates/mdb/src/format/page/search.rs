//! Binary search of a node page and the scan view of a leaf.

use super::*;

/// Binary search for `key` among a page's nodes.
///
/// Returns `(index, exact)`: the first node whose key is >= `key` (leaf), or
/// for branch pages the child to descend into. `cmp` is the tree's comparator.
#[inline]
pub fn search(p: &Page<'_>, key: &[u8], cmp: crate::format::cmp::CmpFn) -> Result<(usize, bool)> {
    // Dispatch once per page, not per probe: the default order inlines.
    if p.is_leaf2() {
        search_leaf2(p, key, cmp)
    } else if cmp.is_lexical() {
        search_lexical(p, key)
    } else if cmp.is_integer() {
        search_integer(p, key)
    } else {
        search_general(p, key, cmp)
    }
}

/// [`search`] of a LEAF2 page (a DUPFIXED key's values): the packed
/// values sliced once, and for values of 4 or 8 bytes in the integer or
/// the default order one word read a probe, not a [`Page::key`] and a
/// comparator call (back-mdb's index ids: a put of an id into a key's
/// sub-database spent 600 instructions here of its 5,300, `mdb-bench`'s
/// put_sub_value probe in docs/benchmarks.md).
#[inline]
fn search_leaf2(p: &Page<'_>, key: &[u8], cmp: crate::format::cmp::CmpFn) -> Result<(usize, bool)> {
    let (ks, n) = (p.pad(), p.len());
    let vals = n
        .checked_mul(ks)
        .and_then(|len| p.b.get(HDR..HDR + len))
        .ok_or(ErrorKind::Corrupted)?;
    let word8 = |i: usize| -> [u8; 8] { vals[i * 8..i * 8 + 8].try_into().unwrap() };
    let word4 = |i: usize| -> [u8; 4] { vals[i * 4..i * 4 + 4].try_into().unwrap() };
    Ok(
        match (ks, <&[u8; 8]>::try_from(key), <&[u8; 4]>::try_from(key)) {
            (8, Ok(k), _) if cmp.is_integer() => {
                let k = u64::from_le_bytes(*k);
                bisect_leaf(n, |i| u64::from_le_bytes(word8(i)).cmp(&k))
            }
            (8, Ok(k), _) if cmp.is_lexical() => {
                let k = u64::from_be_bytes(*k);
                bisect_leaf(n, |i| u64::from_be_bytes(word8(i)).cmp(&k))
            }
            (4, _, Ok(k)) if cmp.is_integer() => {
                let k = u32::from_le_bytes(*k);
                bisect_leaf(n, |i| u32::from_le_bytes(word4(i)).cmp(&k))
            }
            (4, _, Ok(k)) if cmp.is_lexical() => {
                let k = u32::from_be_bytes(*k);
                bisect_leaf(n, |i| u32::from_be_bytes(word4(i)).cmp(&k))
            }
            _ => bisect_leaf(n, |i| cmp.compare(&vals[i * ks..i * ks + ks], key)),
        },
    )
}

/// Binary search of a leaf's `n` entries, `probe(i)` ordering entry `i`
/// against the search key: the first entry >= the key, and whether it
/// is equal.
#[inline(always)]
fn bisect_leaf(n: usize, probe: impl Fn(usize) -> std::cmp::Ordering) -> (usize, bool) {
    use std::cmp::Ordering::*;
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match probe(mid) {
            Less => lo = mid + 1,
            Greater => hi = mid,
            Equal => return (mid, true),
        }
    }
    (lo, false)
}

/// A plain leaf page (not LEAF2) with its pointer array sliced once: the
/// view a scan steps along. A step then bounds-checks only what one item
/// adds (its pointer, its node header, its key and value), with no header
/// re-read.
#[derive(Clone, Copy)]
pub struct Leaf<'a> {
    page: Page<'a>,
    ptrs: &'a [u8],
}

impl<'a> Leaf<'a> {
    /// `p` as a plain leaf; `None` for a branch or LEAF2 page.
    #[inline]
    pub fn of(p: Page<'a>) -> Option<Leaf<'a>> {
        Leaf::of_bytes(p.b)
    }
    /// Raw page bytes as a plain leaf, checking only what a step relies
    /// on: the header's flags, and a pointer array within the bytes.
    #[inline(always)]
    fn of_bytes(b: &'a [u8]) -> Option<Leaf<'a>> {
        let h = b.first_chunk::<HDR>()?;
        let flags = u16::from_le_bytes([h[10], h[11]]);
        if flags & (P_LEAF | P_LEAF2) != P_LEAF {
            return None;
        }
        let ptrs = b.get(HDR..u16::from_le_bytes([h[12], h[13]]) as usize)?;
        Some(Leaf {
            page: Page { b },
            ptrs,
        })
    }
    /// The page.
    #[inline]
    pub fn page(&self) -> Page<'a> {
        self.page
    }
    /// Number of nodes.
    #[inline]
    pub fn len(&self) -> usize {
        self.ptrs.len() / 2
    }
    /// Whether the leaf has no nodes.
    pub fn is_empty(&self) -> bool {
        self.ptrs.is_empty()
    }
    /// Key and inline value of node `i` when it is a plain item lying
    /// within the page, as [`plain_item`]; `None` past the last node and
    /// for anything else ([`Page::node`] then says why).
    #[inline(always)]
    pub fn item(&self, i: usize) -> Option<(&'a [u8], &'a [u8])> {
        let ptr = self.ptrs.get(2 * i..)?.first_chunk::<2>()?;
        let off = u16::from_le_bytes(*ptr) as usize;
        let b = self.page.b;
        if off < HDR + self.ptrs.len() || off + NODE_HDR > b.len() {
            return None;
        }
        let n = &b[off..off + NODE_HDR];
        if u16::from_le_bytes([n[4], n[5]]) & (F_BIGDATA | F_SUBDATA | F_DUPDATA) != 0 {
            return None;
        }
        let ds = u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize;
        let ks = u16::from_le_bytes([n[6], n[7]]) as usize;
        let k = off + NODE_HDR;
        let kv = b.get(k..k + ks + ds)?;
        Some(kv.split_at(ks))
    }
}

/// Key and inline value of node `i` of the leaf page `b` (raw bytes, not
/// validated), when it is a plain item (no overflow, duplicates or database
/// record) that lies within the page: the scan step, with no [`Page::new`].
/// `None` for anything else (a branch or LEAF2 page, a bad offset...);
/// [`Page::node`] then says why.
#[inline(always)]
pub fn plain_item(b: &[u8], i: usize) -> Option<(&[u8], &[u8])> {
    Leaf::of_bytes(b)?.item(i)
}

/// Value `i` of a page of a key's values (its sub-page, or a leaf of its
/// sub-database; LEAF2 or not), read from the raw bytes when it lies
/// within them: the `MDB_NEXT_DUP` step, with no [`Page::new`]. `None`
/// past the last value and for anything else ([`Page::key`] then says why).
#[inline(always)]
pub fn dup_value(b: &[u8], i: usize) -> Option<&[u8]> {
    let h = b.first_chunk::<HDR>()?;
    let flags = u16::from_le_bytes([h[10], h[11]]);
    let lower = u16::from_le_bytes([h[12], h[13]]) as usize;
    if i >= lower.checked_sub(HDR)? / 2 {
        return None;
    }
    if flags & P_LEAF2 != 0 {
        let ks = u16::from_le_bytes([h[8], h[9]]) as usize;
        let off = HDR + i * ks;
        return b.get(off..off + ks);
    }
    if flags & (P_LEAF | P_BRANCH) != P_LEAF {
        return None;
    }
    let at = HDR + 2 * i;
    let off = u16::from_le_bytes(*b.get(at..)?.first_chunk::<2>()?) as usize;
    if off < lower {
        return None;
    }
    let n = b.get(off..)?.first_chunk::<NODE_HDR>()?;
    let k = off + NODE_HDR;
    b.get(k..k + u16::from_le_bytes([n[6], n[7]]) as usize)
}

/// [`search`] of a node page in the default order: the hottest loop of
/// the engine. The pointer array is sliced once (`Page::new` checked that
/// it lies within the page), so a probe costs one bounds check for its
/// pointer and one for its node header with the key's first eight bytes;
/// most probes then end on those bytes, compared as big-endian words (the
/// search key's converted once), and only the others check and compare
/// the whole key ([`probe_whole`]). A search key shorter than a word
/// takes a loop of its own, so the long-key loop tests nothing per probe
/// about the search key. It runs its own loop rather than a generic binary search's:
/// the same probe as a closure returning an `Ordering` cost a get 1541
/// instructions against 1476 through the C ABI, a random put 3578 against
/// 3519 (`mdb-bench instr`).
///
/// The two loops are functions of their own, chosen here (inlined into
/// the caller): one holding both cost a get through the C ABI 5
/// instructions more, and one calling the other cost `slapadd -q` of 20k
/// entries 60 M more (`mdb-bench instr`, callgrind).
#[inline(always)]
fn search_lexical(p: &Page<'_>, key: &[u8]) -> Result<(usize, bool)> {
    match key.first_chunk::<8>() {
        Some(w) => long_key_loop(p, key, u64::from_be_bytes(*w)),
        None => short_key_loop(p, key),
    }
}

/// [`lexical_loop`] for a search key of a word or more.
#[inline(never)]
fn long_key_loop(p: &Page<'_>, key: &[u8], kw: u64) -> Result<(usize, bool)> {
    lexical_loop::<true>(p, key, kw)
}

/// [`lexical_loop`] for a search key shorter than a word (back-mdb's
/// 4-byte index keys).
#[inline(never)]
fn short_key_loop(p: &Page<'_>, key: &[u8]) -> Result<(usize, bool)> {
    lexical_loop::<false>(p, key, padded_word(key))
}

/// The big-endian word of `key`'s bytes (fewer than eight), zero-padded.
#[inline(always)]
fn padded_word(key: &[u8]) -> u64 {
    // back-mdb's 4-byte keys with no `memcpy` call (a search's only one).
    if let Ok(k) = <[u8; 4]>::try_from(key) {
        return u64::from(u32::from_be_bytes(k)) << 32;
    }
    let mut w = [0u8; 8];
    w[..key.len()].copy_from_slice(key);
    u64::from_be_bytes(w)
}

/// Order of a node key against a search key shorter than a word, from the
/// node key's first word `w` as read (bytes past its `ks` may be anything)
/// and the search key's zero-padded word `kw` and length `kl` (< 8). The
/// first eight bytes of each, zero-padded, differ where the keys first
/// differ, or where the shorter ends (its pad 0 against a byte that is not
/// 0); when they are equal, the search key ended within them, so the
/// shorter key is the prefix of the other: the lengths decide.
#[inline(always)]
fn short_key_order(w: u64, ks: usize, kw: u64, kl: usize) -> std::cmp::Ordering {
    let w = if ks >= 8 {
        w
    } else {
        w & !(u64::MAX >> (8 * ks))
    };
    (w, ks).cmp(&(kw, kl))
}

/// The loop of [`search_lexical`]; `WORD`: `key` has at least eight
/// bytes, whose big-endian word is `kw`; otherwise `kw` is `key`
/// zero-padded ([`padded_word`]), and a probe needs no `memcmp`.
#[inline(always)]
fn lexical_loop<const WORD: bool>(p: &Page<'_>, key: &[u8], kw: u64) -> Result<(usize, bool)> {
    use std::cmp::Ordering::*;
    let b = p.b;
    let lower = p.lower() as usize;
    let ptrs = b.get(HDR..lower).ok_or(ErrorKind::Corrupted)?;
    let ptrs = ptrs.as_chunks::<2>().0;
    let branch = p.is_branch();
    // Branch node 0 has the "minus infinity" key; search among 1..n.
    let (mut lo, mut hi) = (usize::from(branch), ptrs.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        let off = match ptrs.get(mid) {
            Some(&pair) => u16::from_le_bytes(pair) as usize,
            None => return Err(ErrorKind::Corrupted.into()),
        };
        // A node header and a first key word within the page; a node too
        // near the page's end for that goes the whole way.
        if let Some(&[.., k0, k1, w0, w1, w2, w3, w4, w5, w6, w7]) = b.get(off..off + 16) {
            let ks = u16::from_le_bytes([k0, k1]) as usize;
            let w = u64::from_be_bytes([w0, w1, w2, w3, w4, w5, w6, w7]);
            if WORD {
                if off >= lower && ks >= 8 {
                    if w < kw {
                        lo = mid + 1;
                        continue;
                    }
                    if w > kw {
                        hi = mid;
                        continue;
                    }
                }
            } else if off >= lower {
                // The node key's first bytes, zero-padded to a word: a
                // search key shorter than a word compares as its padded
                // word, then its length (see `short_key_order`).
                match short_key_order(w, ks, kw, key.len()) {
                    Less => lo = mid + 1,
                    Greater => hi = mid,
                    Equal => return Ok((mid, true)),
                }
                continue;
            }
        }
        match probe_whole(b, lower, off, key)? {
            Less => lo = mid + 1,
            Greater => hi = mid,
            Equal => return Ok((mid, true)),
        }
    }
    // Branch: the last child whose separator <= key.
    Ok((if branch { lo - 1 } else { lo }, false))
}

/// [`search`] of a node page in INTEGERKEY order, for a search key of 4
/// or 8 bytes (any other goes the general way): a probe whose node key
/// has the search key's size compares the two as native integers read in
/// place, with no comparator call. (back-mdb's id2entry: a subtree search
/// of 100 entries made 300 searches of its pages, at 4 times LMDB's
/// instructions through the comparator; `slapd_instr.py`.)
#[inline(never)]
fn search_integer(p: &Page<'_>, key: &[u8]) -> Result<(usize, bool)> {
    match *key {
        [a, b, c, d] => integer_loop::<4>(p, key, u64::from(u32::from_le_bytes([a, b, c, d]))),
        [a, b, c, d, e, f, g, h] => {
            integer_loop::<8>(p, key, u64::from_le_bytes([a, b, c, d, e, f, g, h]))
        }
        _ => search_general(p, key, crate::format::cmp::Order::Integer.cmp_fn()),
    }
}

/// The loop of [`search_integer`]: `N`-byte keys, the search key's value
/// `kv`.
#[inline(always)]
fn integer_loop<const N: usize>(p: &Page<'_>, key: &[u8], kv: u64) -> Result<(usize, bool)> {
    let b = p.b;
    node_bisect(p, |off, lower, mid| {
        let at = off + NODE_HDR;
        Ok(match b.get(off..at + N) {
            Some(n) if off >= lower && u16::from_le_bytes([n[6], n[7]]) as usize == N => {
                let k = &n[NODE_HDR..];
                let v = if N == 4 {
                    u64::from(u32::from_le_bytes([k[0], k[1], k[2], k[3]]))
                } else {
                    u64::from_le_bytes([k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]])
                };
                v.cmp(&kv)
            }
            // Another size, or a node the quick check cannot vouch for:
            // the page's own checks and the comparator decide.
            _ => crate::format::cmp::integer(p.node_key(mid)?, key),
        })
    })
}

/// [`search`] of a node page with any other comparator (REVERSEKEY, a
/// Rust or C function: back-mdb's dn2id): each probe's key taken with the
/// checks of [`Page::node_key`], then the comparator. Through
/// `Page::node_key` and a generic binary search a probe cost about 84 instructions
/// besides the comparator, against LMDB's 13 (`slapd_instr.py`, a subtree
/// search: 1,424 comparator calls).
#[inline(never)]
fn search_general(
    p: &Page<'_>,
    key: &[u8],
    cmp: crate::format::cmp::CmpFn,
) -> Result<(usize, bool)> {
    let b = p.b;
    node_bisect(p, |off, lower, _| {
        let nk = match b.get(off..off + NODE_HDR) {
            Some(h) if off >= lower => {
                let k = off + NODE_HDR;
                b.get(k..k + u16::from_le_bytes([h[6], h[7]]) as usize)
                    .ok_or(ErrorKind::Corrupted)?
            }
            _ => return Err(ErrorKind::Corrupted.into()),
        };
        Ok(cmp.compare(nk, key))
    })
}

/// Binary search of a node page (not LEAF2) with the pointer array
/// sliced once: `probe(off, lower, i)` compares node `i`, whose header is
/// at `off` (not yet checked against `lower`, the pointer array's end),
/// with the search key. [`lexical_loop`] keeps a loop of its own (see
/// [`search_lexical`]).
#[inline(always)]
fn node_bisect(
    p: &Page<'_>,
    mut probe: impl FnMut(usize, usize, usize) -> Result<std::cmp::Ordering>,
) -> Result<(usize, bool)> {
    use std::cmp::Ordering::*;
    let lower = p.lower() as usize;
    let ptrs = p.b.get(HDR..lower).ok_or(ErrorKind::Corrupted)?;
    let ptrs = ptrs.as_chunks::<2>().0;
    let branch = p.is_branch();
    // Branch node 0 has the "minus infinity" key; search among 1..n.
    let (mut lo, mut hi) = (usize::from(branch), ptrs.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        let off = match ptrs.get(mid) {
            Some(&pair) => u16::from_le_bytes(pair) as usize,
            None => return Err(ErrorKind::Corrupted.into()),
        };
        match probe(off, lower, mid)? {
            Less => lo = mid + 1,
            Greater => hi = mid,
            Equal => return Ok((mid, true)),
        }
    }
    // Branch: the last child whose separator <= key.
    Ok((if branch { lo - 1 } else { lo }, false))
}

/// The key of the node at `off` (its header checked to lie between the
/// pointer array's end `lower` and the page's end, its key within the
/// page) compared with `key`. Out of line: the loop's registers then
/// stay its own, and a search key that passes the first words reaches it
/// at most once (its exact match) in most trees.
#[cold]
#[inline(never)]
fn probe_whole(b: &[u8], lower: usize, off: usize, key: &[u8]) -> Result<std::cmp::Ordering> {
    let ks = match b.get(off..off + NODE_HDR) {
        Some(h) if off >= lower => u16::from_le_bytes([h[6], h[7]]) as usize,
        _ => return Err(ErrorKind::Corrupted.into()),
    };
    let k = off + NODE_HDR;
    let nk = b.get(k..k + ks).ok_or(ErrorKind::Corrupted)?;
    Ok(words_then_bytes(nk, key))
}

/// Byte-wise lexicographic order (as `cmp::lexical`) for keys that mostly
/// share their first word here: up to four words compared inline, then
/// the rest, so a short key's exact match calls no `memcmp`.
#[inline(always)]
fn words_then_bytes(mut a: &[u8], mut b: &[u8]) -> std::cmp::Ordering {
    for _ in 0..4 {
        match (a.split_first_chunk::<8>(), b.split_first_chunk::<8>()) {
            (Some((u, ar)), Some((v, br))) => {
                if u != v {
                    return u64::from_be_bytes(*u).cmp(&u64::from_be_bytes(*v));
                }
                (a, b) = (ar, br);
            }
            _ => break,
        }
    }
    if a.is_empty() || b.is_empty() {
        return a.len().cmp(&b.len());
    }
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::{padded_word, short_key_order, words_then_bytes};

    /// The short-key probe agrees with byte order: search keys of 0 to 7
    /// bytes against node keys of 0 to 11 bytes sharing prefixes of every
    /// length, with whatever bytes follow a short node key in its word.
    #[test]
    fn short_key_order_is_byte_order() {
        let mut next = crate::format::xorshift(0x2545_f491_4f6c_dd1d);
        let rounds = if cfg!(miri) { 200 } else { 20_000 };
        for _ in 0..rounds {
            let kl = (next() % 8) as usize;
            let nl = (next() % 12) as usize;
            // Bytes 0 and 1 often: a pad 0 against a real 0 byte.
            let key: Vec<u8> = (0..kl).map(|_| (next() % 3) as u8).collect();
            let shared = (next() as usize) % (nl.min(kl) + 1);
            let mut node: Vec<u8> = key.iter().copied().take(shared).collect();
            while node.len() < nl {
                node.push((next() % 3) as u8);
            }
            let mut word = [0u8; 8];
            for (i, x) in word.iter_mut().enumerate() {
                *x = node.get(i).copied().unwrap_or(next() as u8);
            }
            let got = short_key_order(u64::from_be_bytes(word), nl, padded_word(&key), kl);
            assert_eq!(got, node.as_slice().cmp(key.as_slice()), "{node:?} {key:?}");
        }
    }

    /// The word-wise compare of the probe agrees with byte order on keys
    /// of every length up to past its four words, sharing prefixes of
    /// every length (differing in the first, a middle or the last byte).
    #[test]
    fn words_then_bytes_is_byte_order() {
        let mut next = crate::format::xorshift(0x9e37_79b9_7f4a_7c15);
        // Miri runs this module in CI, a thousand times slower.
        let rounds = if cfg!(miri) { 200 } else { 20_000 };
        for _ in 0..rounds {
            let la = (next() % 48) as usize;
            let lb = (next() % 48) as usize;
            let a: Vec<u8> = (0..la).map(|_| (next() % 3) as u8 + b'a').collect();
            // A shared prefix of any length, then bytes of their own
            // (several differing bytes in one word).
            let shared = (next() as usize) % (lb + 1);
            let mut b: Vec<u8> = a.iter().copied().take(shared).collect();
            while b.len() < lb {
                b.push((next() % 3) as u8 + b'a');
            }
            if !b.is_empty() && next().is_multiple_of(2) {
                let i = (next() as usize) % b.len();
                b[i] = (next() % 256) as u8;
            }
            assert_eq!(words_then_bytes(&a, &b), a.cmp(&b), "{a:?} {b:?}");
            assert_eq!(words_then_bytes(&b, &a), b.cmp(&a), "{b:?} {a:?}");
        }
    }
}
