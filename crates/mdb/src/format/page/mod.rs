//! Page and node layout (lmdb-format.md §2, §5): the header and node
//! constants and accessors, and the read views over page bytes ([`Page`],
//! [`Node`]); the search of a page in `search.rs`, node encodings in
//! `node.rs`, and the in-place edits a write transaction makes to its
//! dirty pages in `edit.rs`.
//!
//! Everything here works on byte slices; no `unsafe`. Reads of a page that
//! may be corrupt are bounds-checked and fail with [`ErrorKind::Corrupted`].

use crate::error::{ErrorKind, Result};

pub mod edit;
mod node;
mod search;
#[cfg(test)]
mod tests;

pub use node::{encode_branch, encode_leaf, raw_key, rekey_branch, NodeData};
pub use search::{dup_value, plain_item, search, Leaf};

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
