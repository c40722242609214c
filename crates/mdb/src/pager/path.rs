//! A root-to-leaf walk: the page numbers and node indices a descent took.
//! Plain data the tree layer fills; it lives here so that a write
//! transaction's pager can keep one for every put instead of zeroing a new
//! one (520 bytes) each time.

pub use crate::format::meta::MAX_DEPTH;

/// Pages and node indices from the root (level 0) down to a leaf.
#[derive(Clone, Copy)]
pub(crate) struct Path {
    pub(crate) pg: [u64; MAX_DEPTH],
    pub(crate) ix: [usize; MAX_DEPTH],
    pub(crate) len: usize,
}

impl Path {
    pub(crate) const fn new() -> Path {
        Path {
            pg: [0; MAX_DEPTH],
            ix: [0; MAX_DEPTH],
            len: 0,
        }
    }
    /// Level of the leaf (0 for an empty path, whose page 0 reads as
    /// `PageNotFound`, never a panic).
    pub(crate) fn leaf(&self) -> usize {
        self.len.saturating_sub(1)
    }

    /// Become empty, as [`Path::new`] is, writing only level 0 (what an
    /// empty path's [`leaf`](Self::leaf) reads) rather than 520 bytes.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.pg[0] = 0;
        self.ix[0] = 0;
        self.len = 0;
    }

    /// Become a copy of `other`, copying only the levels it uses (a whole
    /// path is 520 bytes; a cursor's is 2-4 levels). At least level 0, so
    /// an empty path's [`leaf`](Self::leaf) reads what `other`'s would.
    #[inline]
    pub(crate) fn assign(&mut self, other: &Path) {
        let n = other.len.clamp(1, MAX_DEPTH);
        // The usual depths as fixed-size copies, not `memcpy` calls (the
        // levels past `len` copied too mean nothing); deeper levels after.
        self.pg[..4].copy_from_slice(&other.pg[..4]);
        self.ix[..4].copy_from_slice(&other.ix[..4]);
        if n > 4 {
            self.pg[4..n].copy_from_slice(&other.pg[4..n]);
            self.ix[4..n].copy_from_slice(&other.ix[4..n]);
        }
        self.len = other.len;
    }
}
