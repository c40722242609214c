//! Page and node layout (lmdb-format.md §2, §5): read views over page bytes
//! and the in-place edits a write transaction makes to its dirty pages.
//!
//! Everything here works on byte slices; no `unsafe`. Reads of a page that
//! may be corrupt are bounds-checked and fail with [`ErrorKind::Corrupted`].

use crate::error::{ErrorKind, Result};

/// Longest key (and DB name) accepted.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, ErrorKind, MAX_KEY_SIZE, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let long = vec![b'k'; MAX_KEY_SIZE + 1];
/// let r = w.put(Database::MAIN, &long, b"v", WriteFlags::EMPTY);
/// assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::BadValSize)); // store a hash of such keys instead
/// # Ok::<(), mdb::Error>(())
/// ```
pub const MAX_KEY_SIZE: usize = 511;

/// Size of the page header.
pub const HDR: usize = 16;
/// Size of a node header.
pub const NODE_HDR: usize = 8;
/// "No page" marker (empty tree root).
pub const P_INVALID: u64 = u64::MAX;

/// Page flag: branch page.
pub const P_BRANCH: u16 = 0x01;
/// Page flag: leaf page.
pub const P_LEAF: u16 = 0x02;
/// Page flag: first page of an overflow run.
pub const P_OVERFLOW: u16 = 0x04;
/// Page flag: meta page.
pub const P_META: u16 = 0x08;
/// Page flag: dirty (set on the sub-pages of duplicates, as LMDB writes them).
pub const P_DIRTY: u16 = 0x10;
/// Page flag: fixed-size leaf (DUPFIXED).
pub const P_LEAF2: u16 = 0x20;
/// Page flag: sub-page of duplicates inside a leaf node.
pub const P_SUBP: u16 = 0x40;

/// Node flag: value lives in an overflow run.
pub const F_BIGDATA: u16 = 0x01;
/// Node flag: value is a named database record.
pub const F_SUBDATA: u16 = 0x02;
/// Node flag: value holds duplicates.
pub const F_DUPDATA: u16 = 0x04;

#[inline]
pub(crate) fn rd16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}
#[inline]
pub(crate) fn rd32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
#[inline]
pub(crate) fn rd64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}
#[inline]
pub(crate) fn wr16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn wr32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn wr64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Offset of the page number in a page header.
const PGNO_AT: usize = 0;
/// Offset of the page flags in a page header.
const FLAGS_AT: usize = 10;
/// Offset of `lower` in a page header (an overflow page's run length, with
/// `upper`, as a 32-bit count).
const LOWER_AT: usize = 12;
/// Offset of `upper` in a page header.
const UPPER_AT: usize = 14;

/// The flags of the page whose bytes (at least its header) are `b`, read
/// without judging them.
#[inline]
pub fn flags_of(b: &[u8]) -> u16 {
    rd16(b, FLAGS_AT)
}

/// Whether `b` (at least a page header) starts an overflow run.
#[inline]
pub fn is_overflow(b: &[u8]) -> bool {
    flags_of(b) & P_OVERFLOW != 0
}

/// Pages in the run whose first page's header is `b` (a 32-bit count where
/// a node page keeps `lower` and `upper`), read without judging it.
#[inline]
pub fn overflow_pages_of(b: &[u8]) -> usize {
    rd32(b, LOWER_AT) as usize
}

/// The value bytes of an overflow run whose first page (or more) is `b`.
#[inline]
pub fn overflow_data(b: &[u8]) -> &[u8] {
    &b[HDR..]
}

/// Largest node (header + key + inline data) a page may hold: any page fits two.
pub fn node_max(psize: usize) -> usize {
    (((psize - HDR) / 2) & !1) - 2
}

/// Pages needed by an overflow run holding `len` bytes.
pub fn ov_pages(psize: usize, len: usize) -> usize {
    (HDR - 1 + len) / psize + 1
}

/// Bytes a node occupies in the node area (even-aligned).
#[inline]
pub fn footprint(ksize: usize, stored: usize) -> usize {
    (NODE_HDR + ksize + stored + 1) & !1
}

/// A page header read as it is, without judging it: what a checker or a
/// copy reads of a page that may be corrupt (a [`Page`] is only made of a
/// header that makes sense).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Header {
    /// Page number.
    pub pgno: u64,
    /// Key size of a LEAF2 page.
    pub pad: u16,
    /// Page flags.
    pub flags: u16,
    /// End of the pointer array.
    pub lower: u16,
    /// Start of the node area.
    pub upper: u16,
}

impl Header {
    /// The header of `b`; `None` if `b` is shorter than a header.
    pub fn read(b: &[u8]) -> Option<Header> {
        let h: &[u8; HDR] = b.first_chunk()?;
        Some(Header {
            pgno: rd64(h, PGNO_AT),
            pad: rd16(h, 8),
            flags: rd16(h, FLAGS_AT),
            lower: rd16(h, LOWER_AT),
            upper: rd16(h, UPPER_AT),
        })
    }
    /// Pages in the run an overflow page's header starts (lower and upper
    /// hold them).
    pub fn overflow_pages(&self) -> u32 {
        u32::from(self.lower) | u32::from(self.upper) << 16
    }
    /// Entries counted by `lower`, if it is past the header.
    pub fn entries(&self) -> Option<usize> {
        (self.lower as usize).checked_sub(HDR).map(|n| n / 2)
    }
}

/// Page offset of node `i`, read from the pointer array of `b` (unjudged).
pub fn node_offset(b: &[u8], i: usize) -> Option<usize> {
    let at = i.checked_mul(2)?.checked_add(HDR)?;
    crate::format::bytes::get16(b, at).map(usize::from)
}

/// A node header (the 8 bytes at a node's offset) read as it is, for nodes
/// of a page not made a [`Page`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeHeader {
    /// Low 16 bits of the data size (of the child page in a branch node).
    pub lo: u16,
    /// High 16 bits of the data size (bits 16..32 of the child page).
    pub hi: u16,
    /// Node flags (bits 32..48 of the child page in a branch node).
    pub flags: u16,
    /// Key size.
    pub ksize: u16,
}

impl NodeHeader {
    /// The node header at offset `off` of `b`, if all of it is there.
    pub fn read(b: &[u8], off: usize) -> Option<NodeHeader> {
        let h = crate::format::bytes::sub(b, off, NODE_HDR)?;
        Some(NodeHeader {
            lo: rd16(h, 0),
            hi: rd16(h, 2),
            flags: rd16(h, 4),
            ksize: rd16(h, 6),
        })
    }
    /// Data size of a leaf node.
    pub fn dsize(&self) -> usize {
        self.lo as usize | (self.hi as usize) << 16
    }
    /// Child page of a branch node.
    pub fn child(&self) -> u64 {
        u64::from(self.lo) | u64::from(self.hi) << 16 | u64::from(self.flags) << 32
    }
    /// Bytes stored after the key: none in a branch node, the 8-byte page
    /// number of an overflow value, or the data.
    pub fn stored(&self, leaf: bool) -> usize {
        if !leaf {
            0
        } else if self.flags & F_BIGDATA != 0 {
            8
        } else {
            self.dsize()
        }
    }
}

/// A read-only view of one branch or leaf page.
#[derive(Clone, Copy)]
pub struct Page<'a> {
    b: &'a [u8],
}

/// A node of a branch or leaf page.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    b: &'a [u8],
    branch: bool,
}

impl<'a> Page<'a> {
    /// Wrap page bytes, checking that the header is plausible for a tree page.
    #[inline]
    pub fn new(b: &'a [u8]) -> Result<Page<'a>> {
        if b.len() < HDR {
            return Err(ErrorKind::Corrupted.into());
        }
        let p = Page { b };
        let (lower, upper) = (p.lower() as usize, p.upper() as usize);
        if p.flags() & (P_BRANCH | P_LEAF) == 0 || lower < HDR || lower > upper || (lower & 1) != 0
        {
            return Err(ErrorKind::Corrupted.into());
        }
        // LEAF2 pages keep LMDB's virtual lower/upper (1-byte values put
        // both past the end): what must fit is the packed keys, of a size
        // a value can have (zero would make every key empty).
        let fits = if p.is_leaf2() {
            p.pad() != 0 && p.len() * p.pad() <= b.len() - HDR
        } else {
            upper <= b.len()
        };
        if !fits {
            return Err(ErrorKind::Corrupted.into());
        }
        Ok(p)
    }
    /// A view of a page this transaction has just edited (and so knows to
    /// be well-formed) without checking its header again. Sound whatever
    /// the bytes: every accessor still bounds-checks what it reads.
    #[inline]
    pub(crate) fn edited(b: &'a [u8]) -> Page<'a> {
        Page { b }
    }
    /// The raw bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.b
    }
    /// Page number recorded in the header.
    pub fn pgno(&self) -> u64 {
        rd64(self.b, PGNO_AT)
    }
    /// Page flags.
    #[inline]
    pub fn flags(&self) -> u16 {
        rd16(self.b, FLAGS_AT)
    }
    /// End of the pointer array.
    #[inline]
    pub fn lower(&self) -> u16 {
        rd16(self.b, LOWER_AT)
    }
    /// Start of the node area.
    #[inline]
    pub fn upper(&self) -> u16 {
        rd16(self.b, UPPER_AT)
    }
    /// Whether this is a branch page.
    #[inline]
    pub fn is_branch(&self) -> bool {
        self.flags() & P_BRANCH != 0
    }
    /// Whether this is a leaf page.
    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.flags() & P_LEAF != 0
    }
    /// Number of nodes.
    #[inline]
    pub fn len(&self) -> usize {
        (self.lower() as usize - HDR) / 2
    }
    /// Whether the page has no nodes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Free bytes between the pointer array and the node area.
    pub fn free(&self) -> usize {
        (self.upper() - self.lower()) as usize
    }
    /// Node `i` (bounds-checked against corruption).
    #[inline]
    pub fn node(&self, i: usize) -> Result<Node<'a>> {
        // A LEAF2 page has no nodes (and its `lower` may lie past its end).
        if self.is_leaf2() {
            return Err(ErrorKind::Corrupted.into());
        }
        let ptr = self.b.get(HDR + 2 * i..HDR + 2 * i + 2);
        let off = ptr.map_or(0, |p| u16::from_le_bytes([p[0], p[1]]) as usize);
        if off < self.lower() as usize || off + NODE_HDR > self.b.len() {
            return Err(ErrorKind::Corrupted.into());
        }
        let branch = self.is_branch();
        let ks = rd16(self.b, off + 6) as usize;
        let stored = if branch {
            0
        } else {
            let fl = rd16(self.b, off + 4);
            if fl & F_BIGDATA != 0 {
                // Duplicates and database records are never in overflow pages.
                if fl & (F_SUBDATA | F_DUPDATA) != 0 {
                    return Err(ErrorKind::Corrupted.into());
                }
                8
            } else {
                (rd16(self.b, off) as usize) | (rd16(self.b, off + 2) as usize) << 16
            }
        };
        let end = off + NODE_HDR + ks + stored;
        if end > self.b.len() {
            return Err(ErrorKind::Corrupted.into());
        }
        Ok(Node {
            b: &self.b[off..end],
            branch,
        })
    }
    /// Key of node `i` (for LEAF2 pages: the i-th packed fixed-size key).
    #[inline]
    pub fn key(&self, i: usize) -> Result<&'a [u8]> {
        if self.flags() & P_LEAF2 != 0 {
            let ks = rd16(self.b, 8) as usize;
            let off = HDR + i * ks;
            return self.b.get(off..off + ks).ok_or(ErrorKind::Corrupted.into());
        }
        self.node_key(i)
    }
    /// Key of node `i` of a node page (not LEAF2), reading only what the
    /// key needs: the search path.
    #[inline]
    pub(crate) fn node_key(&self, i: usize) -> Result<&'a [u8]> {
        let off = self.node_header(i)?;
        let k = off + NODE_HDR;
        let ks = rd16(self.b, off + 6) as usize;
        self.b.get(k..k + ks).ok_or(ErrorKind::Corrupted.into())
    }
    /// Offset of node `i`'s header: its pointer lies in the pointer array
    /// and the whole header in the node area (what the search path and
    /// a descent read, without judging the rest of the node).
    #[inline]
    fn node_header(&self, i: usize) -> Result<usize> {
        let lower = self.lower() as usize;
        let at = HDR + 2 * i;
        let off = match self.b.get(at..at + 2) {
            Some(p) if at + 2 <= lower => u16::from_le_bytes([p[0], p[1]]) as usize,
            _ => return Err(ErrorKind::Corrupted.into()),
        };
        if off < lower || off + NODE_HDR > self.b.len() {
            return Err(ErrorKind::Corrupted.into());
        }
        Ok(off)
    }
    /// Child page number of node `i` of a branch page: all a descent reads
    /// of a branch node, without building the node (its key is not needed).
    #[inline]
    pub fn child(&self, i: usize) -> Result<u64> {
        debug_assert!(self.is_branch());
        let off = self.node_header(i)?;
        let h = &self.b[off..off + 6];
        Ok(u64::from(u16::from_le_bytes([h[0], h[1]]))
            | u64::from(u16::from_le_bytes([h[2], h[3]])) << 16
            | u64::from(u16::from_le_bytes([h[4], h[5]])) << 32)
    }
    /// The bytes of entry `i` as stored: a node, or a LEAF2 key.
    #[inline]
    pub fn raw_entry(&self, i: usize) -> Result<&'a [u8]> {
        if self.is_leaf2() {
            self.key(i)
        } else {
            Ok(self.node(i)?.raw())
        }
    }
    /// Fixed key size of a LEAF2 page.
    pub fn pad(&self) -> usize {
        rd16(self.b, 8) as usize
    }
    /// Bytes in use by entries (what fill rules measure).
    pub fn used(&self) -> usize {
        if self.is_leaf2() {
            self.len() * self.pad()
        } else {
            self.b.len() - HDR - self.free()
        }
    }
    /// Whether a leaf's nodes point outside the page (an overflow value or
    /// a sub-database), each node's header checked to lie between the
    /// pointer array and the page's end. One pass over the raw headers,
    /// with no node views: what a compacting copy asks of every leaf it
    /// copies as it is (the caller reads a leaf that does refer out node
    /// by node, through [`Page::node`]).
    pub fn refers_out(&self) -> Result<bool> {
        if !self.is_leaf() || self.is_leaf2() {
            return Ok(false);
        }
        let (b, lower) = (self.b, self.lower() as usize);
        let last = b.len() - NODE_HDR;
        if lower > last {
            // No room for a node: only an empty leaf is sane.
            return if lower == HDR {
                Ok(false)
            } else {
                Err(ErrorKind::Corrupted.into())
            };
        }
        // Branch-free: flags of all nodes or-ed, bad offsets noted (one
        // compare: below `lower` wraps past `span`) and clamped so the read
        // stays in the page, both judged once.
        let span = last - lower;
        let (mut flags, mut bad) = (0u16, false);
        for ptr in b[HDR..lower].chunks_exact(2) {
            let off = u16::from_le_bytes([ptr[0], ptr[1]]) as usize;
            bad |= off.wrapping_sub(lower) > span;
            let at = off.min(last) + 4;
            flags |= u16::from_le_bytes([b[at], b[at + 1]]);
        }
        if bad {
            return Err(ErrorKind::Corrupted.into());
        }
        Ok(flags & (F_BIGDATA | F_SUBDATA) != 0)
    }
    /// Whether keys are packed fixed-size values (DUPFIXED).
    #[inline]
    pub fn is_leaf2(&self) -> bool {
        self.flags() & P_LEAF2 != 0
    }
}

impl<'a> Node<'a> {
    /// Node flags (leaf nodes).
    #[inline]
    pub fn flags(&self) -> u16 {
        if self.branch {
            0
        } else {
            rd16(self.b, 4)
        }
    }
    /// The key bytes.
    #[inline]
    pub fn key(&self) -> &'a [u8] {
        let ks = rd16(self.b, 6) as usize;
        &self.b[NODE_HDR..NODE_HDR + ks]
    }
    /// Child page of a branch node.
    #[inline]
    pub fn child(&self) -> u64 {
        rd16(self.b, 0) as u64 | (rd16(self.b, 2) as u64) << 16 | (rd16(self.b, 4) as u64) << 32
    }
    /// Data size of a leaf node (the real value length, also for overflow values).
    #[inline]
    pub fn dsize(&self) -> usize {
        (rd16(self.b, 0) as usize) | (rd16(self.b, 2) as usize) << 16
    }
    /// Inline data of a leaf node (for F_BIGDATA: the 8-byte overflow page number).
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        let ks = rd16(self.b, 6) as usize;
        &self.b[NODE_HDR + ks..]
    }
    /// First page of the overflow run of an F_BIGDATA node.
    pub fn ov_pgno(&self) -> u64 {
        rd64(self.data(), 0)
    }
    /// The whole node bytes (header, key, stored data), without padding.
    pub fn raw(&self) -> &'a [u8] {
        self.b
    }
    /// Even-aligned size in the node area.
    pub fn footprint(&self) -> usize {
        (self.b.len() + 1) & !1
    }
}

/// The free gap of a branch or leaf page, `(start, len)`: the bytes
/// between its node pointers and its nodes, which no reader looks at. A
/// page image may leave them out (the write-ahead log does). `(0, 0)` for
/// any other page (overflow, LEAF2, meta, or bounds that do not fit).
///
/// ```
/// use mdb::format::page::{free_gap, P_LEAF};
/// let mut p = vec![0u8; 4096];
/// p[10..12].copy_from_slice(&P_LEAF.to_le_bytes());
/// p[12..14].copy_from_slice(&20u16.to_le_bytes()); // lower: two nodes
/// p[14..16].copy_from_slice(&4000u16.to_le_bytes()); // upper
/// assert_eq!(free_gap(&p), (20, 3980));
/// ```
pub fn free_gap(b: &[u8]) -> (usize, usize) {
    let Some(h) = b.first_chunk::<HDR>() else {
        return (0, 0);
    };
    let flags = rd16(h, FLAGS_AT);
    let lower = rd16(h, LOWER_AT) as usize;
    let upper = rd16(h, UPPER_AT) as usize;
    let tree = flags & (P_BRANCH | P_LEAF) != 0;
    let other = flags & (P_OVERFLOW | P_META | P_LEAF2) != 0;
    if !tree || other || lower < HDR || lower > upper || upper > b.len() {
        return (0, 0);
    }
    (lower, upper - lower)
}

/// Binary search for `key` among a page's nodes.
///
/// Returns `(index, exact)`: the first node whose key is >= `key` (leaf), or
/// for branch pages the child to descend into. `cmp` is the tree's comparator.
#[inline]
pub fn search(p: &Page<'_>, key: &[u8], cmp: crate::format::cmp::CmpFn) -> Result<(usize, bool)> {
    // Dispatch once per page, not per probe: the default order inlines.
    if p.is_leaf2() {
        bisect(p, |i| Ok(cmp.compare(p.key(i)?, key)))
    } else if cmp.is_lexical() {
        search_lexical(p, key)
    } else {
        bisect(p, |i| Ok(cmp.compare(p.node_key(i)?, key)))
    }
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

/// [`search`] of a node page in the default order: the hottest loop of
/// the engine. The pointer array is sliced once (`Page::new` checked that
/// it lies within the page), so a probe costs one bounds check for its
/// pointer and one for its node header; most probes then end on the first
/// eight bytes of the keys, compared as big-endian words (the search key's
/// converted once), and only the others check and compare the whole key.
/// It runs its own loop rather than [`bisect`]'s: the same probe as a
/// closure returning an `Ordering` cost a get 1541 instructions against
/// 1476 through the C ABI, a random put 3578 against 3519 (`mdb-bench
/// instr`).
fn search_lexical(p: &Page<'_>, key: &[u8]) -> Result<(usize, bool)> {
    use std::cmp::Ordering::*;
    let b = p.b;
    let lower = p.lower() as usize;
    let ptrs = b.get(HDR..lower).ok_or(ErrorKind::Corrupted)?;
    let kw = key.first_chunk::<8>().map(|w| u64::from_be_bytes(*w));
    let branch = p.is_branch();
    // Branch node 0 has the "minus infinity" key; search among 1..n.
    let (mut lo, mut hi) = (usize::from(branch), ptrs.len() / 2);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let off = match ptrs.get(2 * mid..2 * mid + 2) {
            Some(&[a, b]) => u16::from_le_bytes([a, b]) as usize,
            _ => return Err(ErrorKind::Corrupted.into()),
        };
        let ks = match b.get(off..off + NODE_HDR) {
            Some(h) if off >= lower => u16::from_le_bytes([h[6], h[7]]) as usize,
            _ => return Err(ErrorKind::Corrupted.into()),
        };
        let k = off + NODE_HDR;
        if let (Some(kw), true) = (kw, ks >= 8) {
            if let Some(w) = b.get(k..k + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
                let w = u64::from_be_bytes(w);
                if w < kw {
                    lo = mid + 1;
                    continue;
                }
                if w > kw {
                    hi = mid;
                    continue;
                }
            }
        }
        match crate::format::cmp::lexical(b.get(k..k + ks).ok_or(ErrorKind::Corrupted)?, key) {
            Less => lo = mid + 1,
            Greater => hi = mid,
            Equal => return Ok((mid, true)),
        }
    }
    // Branch: the last child whose separator <= key.
    Ok((if branch { lo - 1 } else { lo }, false))
}

/// Binary search of `p` with `probe(i)` = entry `i` compared to the key.
#[inline(always)]
fn bisect(
    p: &Page<'_>,
    mut probe: impl FnMut(usize) -> Result<std::cmp::Ordering>,
) -> Result<(usize, bool)> {
    use std::cmp::Ordering::*;
    let n = p.len();
    let branch = p.is_branch();
    // Branch node 0 has the "minus infinity" key; search among 1..n.
    let mut lo = usize::from(branch);
    let mut hi = n;
    while lo < hi {
        let mid = (lo + hi) / 2;
        match probe(mid)? {
            Less => lo = mid + 1,
            Greater => hi = mid,
            Equal => return Ok((mid, true)),
        }
    }
    // Branch: the last child whose separator <= key.
    Ok((if branch { lo - 1 } else { lo }, false))
}

/// What a new leaf node carries as data.
#[derive(Clone, Copy)]
pub enum NodeData<'a> {
    /// Inline value bytes.
    Inline(&'a [u8]),
    /// Inline space of this length, left zeroed (MDB_RESERVE).
    Reserve(usize),
    /// An overflow reference: first page, real value length.
    Overflow(u64, usize),
    /// A named database record (48 bytes), flagged F_SUBDATA.
    SubDb(&'a [u8; 48]),
    /// A sub-page of sorted duplicates, flagged F_DUPDATA.
    SubPage(&'a [u8]),
    /// The record of a duplicates sub-database, flagged F_SUBDATA|F_DUPDATA.
    DupDb(&'a [u8; 48]),
}

impl NodeData<'_> {
    /// Bytes stored inline in the node.
    pub fn stored(&self) -> usize {
        match *self {
            NodeData::Inline(v) => v.len(),
            NodeData::Reserve(n) => n,
            NodeData::Overflow(..) => 8,
            NodeData::SubDb(_) | NodeData::DupDb(_) => 48,
            NodeData::SubPage(p) => p.len(),
        }
    }

    /// The node header's data size and flags.
    fn header(&self) -> (usize, u16) {
        match *self {
            NodeData::Inline(v) => (v.len(), 0),
            NodeData::Reserve(n) => (n, 0),
            NodeData::Overflow(_, len) => (len, F_BIGDATA),
            NodeData::SubDb(_) => (48, F_SUBDATA),
            NodeData::SubPage(p) => (p.len(), F_DUPDATA),
            NodeData::DupDb(_) => (48, F_SUBDATA | F_DUPDATA),
        }
    }
}

/// A leaf node's bytes (header, key, stored data; no padding), built
/// without a page around it.
pub fn encode_leaf(key: &[u8], data: NodeData<'_>) -> Vec<u8> {
    let (dsize, flags) = data.header();
    let mut v = Vec::with_capacity(NODE_HDR + key.len() + data.stored());
    v.extend_from_slice(&(dsize as u16).to_le_bytes());
    v.extend_from_slice(&((dsize >> 16) as u16).to_le_bytes());
    v.extend_from_slice(&flags.to_le_bytes());
    v.extend_from_slice(&(key.len() as u16).to_le_bytes());
    v.extend_from_slice(key);
    match data {
        NodeData::Inline(d) | NodeData::SubPage(d) => v.extend_from_slice(d),
        NodeData::Reserve(n) => v.resize(v.len() + n, 0),
        NodeData::Overflow(pg, _) => v.extend_from_slice(&pg.to_le_bytes()),
        NodeData::SubDb(r) | NodeData::DupDb(r) => v.extend_from_slice(r),
    }
    v
}

/// Mutable operations on a dirty page buffer.
pub mod edit {
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
        let same = NodeHeader::read(b, up)
            .is_some_and(|h| footprint(h.ksize as usize, h.stored(leaf)) == fp);
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
        b.copy_within(at..HDR + n * size, at + size);
        b[at..at + size].copy_from_slice(key);
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

    /// Rebuild a LEAF2 page from packed keys, keeping its header.
    pub fn rebuild_leaf2(b: &mut [u8], flags: u16, keys: &[&[u8]]) -> bool {
        let (pgno, size) = (rd64(b, 0), rd16(b, 8) as usize);
        init_leaf2(b, pgno, flags, size);
        keys.iter().enumerate().all(|(i, k)| insert_leaf2(b, i, k))
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
}

/// Bytes a page would need to hold these encoded nodes.
pub fn nodes_size<'a>(nodes: impl IntoIterator<Item = &'a [u8]>) -> usize {
    nodes.into_iter().map(|r| ((r.len() + 1) & !1) + 2).sum()
}

/// Encode a branch node with the given key and child.
pub fn encode_branch(key: &[u8], child: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(NODE_HDR + key.len());
    v.extend_from_slice(&(child as u16).to_le_bytes());
    v.extend_from_slice(&((child >> 16) as u16).to_le_bytes());
    v.extend_from_slice(&((child >> 32) as u16).to_le_bytes());
    v.extend_from_slice(&(key.len() as u16).to_le_bytes());
    v.extend_from_slice(key);
    v
}

/// Re-encode a branch node with a different key.
pub fn rekey_branch(raw: &[u8], key: &[u8]) -> Vec<u8> {
    let child = Node {
        b: raw,
        branch: true,
    }
    .child();
    encode_branch(key, child)
}

/// Key of an encoded node.
pub fn raw_key(raw: &[u8]) -> &[u8] {
    let ks = rd16(raw, 6) as usize;
    &raw[NODE_HDR..NODE_HDR + ks]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refers_out_sees_overflow_and_sub_databases_and_bad_pointers() {
        let rec = [7u8; 48];
        let leaf = |data: NodeData<'_>| {
            let mut b = vec![0u8; 256];
            edit::init(&mut b, 3, P_LEAF);
            assert!(edit::insert_leaf(&mut b, 0, b"a", NodeData::Inline(b"x")));
            assert!(edit::insert_leaf(&mut b, 1, b"b", data));
            b
        };
        let plain = leaf(NodeData::Inline(b"value"));
        assert!(!Page::new(&plain).unwrap().refers_out().unwrap());
        assert!(!Page::new(&leaf(NodeData::SubPage(b"subpage!")))
            .unwrap()
            .refers_out()
            .unwrap());
        for data in [
            NodeData::Overflow(9, 70_000),
            NodeData::SubDb(&rec),
            NodeData::DupDb(&rec),
        ] {
            assert!(Page::new(&leaf(data)).unwrap().refers_out().unwrap());
        }
        let mut b = vec![0u8; 256];
        edit::init(&mut b, 3, P_BRANCH);
        assert!(edit::insert_branch(&mut b, 0, b"", 0x0002_0000_0001));
        assert!(!Page::new(&b).unwrap().refers_out().unwrap());
        // A node pointer into the pointer array, or too near the end.
        for bad in [HDR as u16, 250] {
            let mut b = plain.clone();
            wr16(&mut b, HDR + 2, bad);
            let r = Page::new(&b).unwrap().refers_out();
            assert_eq!(r.err().map(|e| e.kind()), Some(ErrorKind::Corrupted));
        }
    }

    #[test]
    fn encode_leaf_matches_the_node_insert_leaf_writes() {
        let rec = [7u8; 48];
        for data in [
            NodeData::Inline(b"value"),
            NodeData::Inline(b""),
            NodeData::Reserve(5),
            NodeData::Overflow(0x1234_5678_9abc, 70_000),
            NodeData::SubDb(&rec),
            NodeData::SubPage(b"subpage!"),
            NodeData::DupDb(&rec),
        ] {
            let mut b = vec![0u8; 256];
            edit::init(&mut b, 3, P_LEAF);
            assert!(edit::insert_leaf(&mut b, 0, b"key", data));
            let p = Page::new(&b).unwrap();
            assert_eq!(encode_leaf(b"key", data), p.node(0).unwrap().raw());
        }
        let mut b = vec![0u8; 256];
        edit::init(&mut b, 3, P_BRANCH);
        assert!(edit::insert_branch(&mut b, 0, b"sep", 0x0102_0304_0506));
        let p = Page::new(&b).unwrap();
        assert_eq!(
            encode_branch(b"sep", 0x0102_0304_0506),
            p.node(0).unwrap().raw()
        );
    }

    fn cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }

    #[test]
    fn limits() {
        assert_eq!(node_max(4096), 2038);
        assert_eq!(node_max(8192), 4086);
        assert_eq!(ov_pages(4096, 4080), 1);
        assert_eq!(ov_pages(4096, 4081), 2);
    }

    #[test]
    fn insert_remove_search() {
        let mut b = vec![0u8; 4096];
        edit::init(&mut b, 2, P_LEAF);
        assert!(edit::insert_leaf(
            &mut b,
            0,
            b"banana",
            NodeData::Inline(b"yellow!")
        ));
        assert!(edit::insert_leaf(
            &mut b,
            0,
            b"apple",
            NodeData::Inline(b"red")
        ));
        assert!(edit::insert_leaf(
            &mut b,
            2,
            b"cherry",
            NodeData::Inline(b"dark-red")
        ));
        let p = Page::new(&b).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p.lower(), 22);
        assert_eq!(p.node(1).unwrap().data(), b"yellow!");
        assert_eq!(
            search(&p, b"banana", crate::format::cmp::CmpFn::rust(cmp)).unwrap(),
            (1, true)
        );
        assert_eq!(
            search(&p, b"b", crate::format::cmp::CmpFn::rust(cmp)).unwrap(),
            (1, false)
        );
        assert_eq!(
            search(&p, b"z", crate::format::cmp::CmpFn::rust(cmp)).unwrap(),
            (3, false)
        );
        edit::remove(&mut b, 0);
        let p = Page::new(&b).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p.key(0).unwrap(), b"banana");
        assert_eq!(p.node(1).unwrap().data(), b"dark-red");
        assert_eq!(p.upper() as usize, 4096 - 22 - 22);
    }

    #[test]
    fn fills_up() {
        let mut b = vec![0u8; 4096];
        edit::init(&mut b, 2, P_LEAF);
        let v = [7u8; 100];
        let mut n = 0;
        while edit::insert_leaf(&mut b, n, &(n as u32).to_be_bytes(), NodeData::Inline(&v)) {
            n += 1;
        }
        // 4080 / (2 + 112) = 35
        assert_eq!(n, 35);
    }

    /// Moving a run of nodes to the end of another page keeps them in order;
    /// a run that does not fit leaves the target's nodes as they were.
    #[test]
    fn append_nodes_moves_runs_in_order() {
        let mut src = vec![0u8; 512];
        edit::init(&mut src, 1, P_LEAF);
        let mut model = Vec::new();
        for i in 0..12usize {
            let (k, v) = (
                format!("key{i:02}").into_bytes(),
                vec![b'a' + i as u8; i * 3],
            );
            assert!(edit::insert_leaf(&mut src, i, &k, NodeData::Inline(&v)));
            model.push((k, v));
        }
        let mut dst = vec![0u8; 512];
        edit::init(&mut dst, 2, P_LEAF);
        let s = Page::new(&src).unwrap();
        assert!(edit::append_nodes(&mut dst, &s, 0..5).unwrap());
        assert!(edit::append_nodes(&mut dst, &s, 5..9).unwrap());
        let before = dst.clone();
        let mut small = vec![0u8; 256];
        edit::init(&mut small, 3, P_LEAF);
        assert!(!edit::append_nodes(&mut small, &s, 0..12).unwrap());
        assert_eq!(Page::new(&small).unwrap().len(), 0);
        let d = Page::new(&dst).unwrap();
        assert_eq!(d.len(), 9);
        for (j, (k, v)) in model[..9].iter().enumerate() {
            let n = d.node(j).unwrap();
            assert_eq!((n.key(), n.data()), (&k[..], &v[..]));
        }
        assert_eq!(
            d.used(),
            (0..9)
                .map(|j| s.node(j).unwrap().footprint() + 2)
                .sum::<usize>()
        );
        assert_eq!(before, dst);
    }

    /// Random inserts and removes on a leaf page against a sorted model,
    /// then every single-byte corruption of the result: views fail with
    /// `Corrupted`, never panic (small enough for Miri).
    #[test]
    fn edits_match_a_model_and_corruption_never_panics() {
        let mut next = crate::format::xorshift(0x2545_f491_4f6c_dd1d);
        let mut b = vec![0u8; 512];
        edit::init(&mut b, 3, P_LEAF);
        let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for _ in 0..200 {
            // Short keys, keys sharing their first eight bytes, and keys
            // of eight and more that differ there (the lexical search
            // compares first words).
            let key = match next() % 3 {
                0 => format!("k{:03}", next() % 60),
                1 => format!("shared__{:0w$}", next() % 30, w = (next() % 3) as usize),
                _ => format!("{:010}", (next() % 30) * 7_919_113),
            }
            .into_bytes();
            let val = vec![b'v'; (next() % 24) as usize];
            let p = Page::new(&b).unwrap();
            let (i, exact) = search(&p, &key, crate::format::cmp::CmpFn::rust(cmp)).unwrap();
            assert_eq!(exact, model.binary_search_by(|(k, _)| k.cmp(&key)).is_ok());
            // The default order's own search agrees.
            let lexical = crate::format::cmp::Order::Lexical.cmp_fn();
            assert_eq!(search(&p, &key, lexical).unwrap(), (i, exact));
            if exact {
                edit::remove(&mut b, i);
                model.remove(i);
            } else if edit::insert_leaf(&mut b, i, &key, NodeData::Inline(&val)) {
                model.insert(i, (key, val));
            }
            let p = Page::new(&b).unwrap();
            assert_eq!(p.len(), model.len());
            for (j, (k, v)) in model.iter().enumerate() {
                let n = p.node(j).unwrap();
                assert_eq!((n.key(), n.data()), (&k[..], &v[..]));
                assert_eq!(plain_item(&b, j), Some((&k[..], &v[..])));
                assert_eq!(Leaf::of(p).unwrap().item(j), Some((&k[..], &v[..])));
            }
            assert_eq!(plain_item(&b, model.len()), None);
            assert_eq!(Leaf::of(p).unwrap().item(model.len()), None);
            assert_eq!(Leaf::of(p).unwrap().len(), model.len());
        }
        for at in 0..HDR + 2 * model.len().max(1) + 16 {
            let mut c = b.clone();
            c[at] ^= 0xa5;
            if let Ok(p) = Page::new(&c) {
                for j in 0..p.len().min(64) {
                    if let Ok(n) = p.node(j) {
                        let _ = (n.key(), n.data(), n.flags());
                    }
                    let _ = p.node_key(j);
                }
                let _ = search(&p, b"k030", crate::format::cmp::CmpFn::rust(cmp));
                let _ = search(&p, b"k030", crate::format::cmp::Order::Lexical.cmp_fn());
                let _ = search(
                    &p,
                    b"shared__12",
                    crate::format::cmp::Order::Lexical.cmp_fn(),
                );
            }
            for j in 0..model.len() + 2 {
                let item = plain_item(&c, j);
                // What the scan step reads is what the checked node view
                // reads, whenever the header passes `Page::new`.
                if let (Some((k, v)), Ok(p)) = (item, Page::new(&c)) {
                    let n = p.node(j).unwrap();
                    assert_eq!((n.key(), n.data()), (k, v));
                }
            }
        }
    }
}
