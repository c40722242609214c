//! B+tree reads: descending to a key, and the cursor stack shared by read
//! and write cursors. No allocation on any of these paths.

use crate::error::{Error, ErrorKind, Result};
use crate::format::cmp::CmpFn;
use crate::format::flags::DUPSORT;
use crate::format::meta::DbRecord;
use crate::format::page::{search, Node, Page, F_BIGDATA, F_DUPDATA, P_INVALID};
use crate::pager::PageRead;

pub(crate) use crate::pager::{Path, MAX_DEPTH};

/// Walk from the root to the leaf that holds (or would hold) `key`.
/// Returns the leaf index and whether the key matched exactly.
pub(crate) fn descend<S: PageRead>(
    s: &S,
    rec: &DbRecord,
    cmp: CmpFn,
    key: &[u8],
    path: &mut Path,
) -> Result<(usize, bool)> {
    descend_to(s, rec, cmp, key, path).map(|(i, exact, _)| (i, exact))
}

/// [`descend`], with the leaf reached (`None` for an empty tree): a
/// caller reading it again would look it up again (a dirty page's lookup
/// is a hash probe). `#[inline]`, not always: inlined into [`descend`]
/// it cost a random put through the C ABI 6 instructions more
/// (`mdb-bench instr`).
#[inline]
pub(crate) fn descend_to<'a, S: PageRead>(
    s: &'a S,
    rec: &DbRecord,
    cmp: CmpFn,
    key: &[u8],
    path: &mut Path,
) -> Result<(usize, bool, Option<Page<'a>>)> {
    path.len = 0;
    if rec.root == P_INVALID {
        return Ok((0, false, None));
    }
    let mut pgno = rec.root;
    loop {
        if path.len >= MAX_DEPTH {
            return Err(ErrorKind::CursorFull.into());
        }
        let p = s.page(pgno)?;
        if path.len + 1 == rec.depth as usize {
            prefetch_nodes(s, &p);
        }
        let (i, exact) = search(&p, key, cmp)?;
        path.pg[path.len] = pgno;
        path.ix[path.len] = i;
        path.len += 1;
        if p.is_leaf() {
            if path.len != rec.depth as usize {
                return Err(ErrorKind::Corrupted.into());
            }
            return Ok((i, exact, Some(p)));
        }
        if p.is_empty() {
            return Err(ErrorKind::Corrupted.into());
        }
        pgno = p.child(i)?;
    }
}

/// A leaf's nodes load at once, not line by line as its binary search
/// probes them: the hint goes out once its header is in (the addresses
/// depend on it), when the page is mapped by the TLB. Not for a dirty
/// page, which its writer has in the cache.
#[inline]
fn prefetch_nodes<S: PageRead>(s: &S, p: &crate::format::page::Page<'_>) {
    if let Some(nodes) = p.bytes().get(p.upper() as usize & !63..) {
        s.prefetch_bytes(nodes);
    }
}

/// The leaf node for `key`, if present.
pub(crate) fn get_node<'a, S: PageRead>(
    s: &'a S,
    rec: &DbRecord,
    cmp: CmpFn,
    key: &[u8],
) -> Result<Option<Node<'a>>> {
    if rec.root == P_INVALID {
        return Ok(None);
    }
    let mut pgno = rec.root;
    for lvl in 0..MAX_DEPTH {
        let p = s.page(pgno)?;
        if lvl + 1 == rec.depth as usize {
            prefetch_nodes(s, &p);
        }
        let (i, exact) = search(&p, key, cmp)?;
        if p.is_leaf() {
            return if exact {
                Ok(Some(p.node(i)?))
            } else {
                Ok(None)
            };
        }
        pgno = p.child(i)?;
    }
    Err(ErrorKind::CursorFull.into())
}

/// Whether `key` is in the tree (works on LEAF2 leaves too).
pub(crate) fn contains<S: PageRead>(s: &S, rec: &DbRecord, cmp: CmpFn, key: &[u8]) -> Result<bool> {
    let mut path = Path::new();
    Ok(descend(s, rec, cmp, key, &mut path)?.1)
}

/// The value of a leaf node of a tree with duplicates (`dups`: DUPSORT)
/// or without, following an overflow reference; for duplicates, the first.
/// Duplicates in a tree without them are `Corrupted` (CVE-2019-16227).
#[inline]
pub(crate) fn node_value<'a, S: PageRead>(s: &'a S, n: Node<'a>, dups: bool) -> Result<&'a [u8]> {
    let f = n.flags();
    if f & F_DUPDATA != 0 {
        if !dups {
            return Err(ErrorKind::Corrupted.into());
        }
        return crate::tree::dups::first_dup(s, n);
    }
    if f & F_BIGDATA != 0 {
        if n.data().len() < 8 {
            return Err(ErrorKind::Corrupted.into());
        }
        s.overflow(n.ov_pgno(), n.dsize())
    } else {
        Ok(n.data())
    }
}

/// Look up `key` and return its value.
#[inline]
pub(crate) fn get<'a, S: PageRead>(
    s: &'a S,
    rec: &DbRecord,
    cmp: CmpFn,
    key: &[u8],
) -> Result<Option<&'a [u8]>> {
    match get_node(s, rec, cmp, key)? {
        Some(n) => node_value(s, n, rec.flags & DUPSORT != 0).map(Some),
        None => Ok(None),
    }
}

/// A cursor position: a path whose leaf index may equal the leaf's length
/// ("past the end", after a failed range search or deleting the last item).
#[derive(Clone, Copy)]
pub(crate) struct CursorPos {
    pub(crate) path: Path,
    /// No position yet (fresh cursor, or the database became empty).
    pub(crate) unset: bool,
}

/// A key/value pair borrowed from a transaction: what cursors and
/// iterators yield.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Item, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// let first: Option<Item<'_>> = w.cursor(Database::MAIN)?.first()?;
/// assert_eq!(first, Some((&b"k"[..], &b"v"[..])));
/// # Ok::<(), mdb::Error>(())
/// ```
pub type Item<'a> = (&'a [u8], &'a [u8]);

impl CursorPos {
    pub(crate) const fn new() -> CursorPos {
        CursorPos {
            path: Path::new(),
            unset: true,
        }
    }

    /// Become unset, as [`CursorPos::new`] is, in place.
    pub(crate) fn clear(&mut self) {
        self.path.clear();
        self.unset = true;
    }

    fn leaf<'a, S: PageRead>(&self, s: &'a S) -> Result<Page<'a>> {
        s.page(self.path.pg[self.path.leaf()])
    }

    /// The item at the position, or None if past the end / unset.
    pub(crate) fn current<'a, S: PageRead>(&self, s: &'a S) -> Result<Option<Item<'a>>> {
        if self.unset || self.path.len == 0 {
            return Ok(None);
        }
        let p = self.leaf(s)?;
        let i = self.path.ix[self.path.leaf()];
        if i >= p.len() {
            return Ok(None);
        }
        let n = p.node(i)?;
        // Only the free database is read through a bare position.
        Ok(Some((n.key(), node_value(s, n, false)?)))
    }

    /// The key at the position (works on LEAF2 pages too).
    pub(crate) fn current_key<'a, S: PageRead>(&self, s: &'a S) -> Result<Option<&'a [u8]>> {
        if self.unset || self.path.len == 0 {
            return Ok(None);
        }
        let p = self.leaf(s)?;
        let i = self.path.ix[self.path.leaf()];
        if i >= p.len() {
            return Ok(None);
        }
        p.key(i).map(Some)
    }

    /// The leaf page and index at the position, if on an item.
    pub(crate) fn leaf_node<'a, S: PageRead>(&self, s: &'a S) -> Result<Option<(Page<'a>, usize)>> {
        if self.unset || self.path.len == 0 {
            return Ok(None);
        }
        let p = self.leaf(s)?;
        let i = self.path.ix[self.path.leaf()];
        if i >= p.len() {
            return Ok(None);
        }
        Ok(Some((p, i)))
    }

    /// Descend from `level`'s current child to the leftmost (or rightmost) leaf.
    fn descend_edge<S: PageRead>(&mut self, s: &S, rec: &DbRecord, right: bool) -> Result<()> {
        let top = s.page(self.path.pg[self.path.len - 1])?;
        self.descend_edge_from(s, rec, top, right).map(|_| ())
    }

    /// [`descend_edge`](Self::descend_edge) from `p`, the page at the end
    /// of the path, already in hand: each page is looked up once (a dirty
    /// page's lookup is a hash probe).
    fn descend_edge_from<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        mut p: Page<'a>,
        right: bool,
    ) -> Result<Page<'a>> {
        loop {
            if p.is_leaf() {
                if self.path.len != rec.depth as usize {
                    return Err(ErrorKind::Corrupted.into());
                }
                return Ok(p);
            }
            let lvl = self.path.len - 1;
            let child = p.child(self.path.ix[lvl])?;
            if self.path.len >= MAX_DEPTH {
                return Err(ErrorKind::CursorFull.into());
            }
            let c = s.page(child)?;
            self.path.pg[self.path.len] = child;
            self.path.ix[self.path.len] = if right { c.len().saturating_sub(1) } else { 0 };
            self.path.len += 1;
            p = c;
        }
    }

    /// Forget the position: after an error midway the path is partial.
    fn unposition<T>(&mut self, e: Error) -> Result<T> {
        self.unset = true;
        self.path.len = 0;
        Err(e)
    }

    /// Move to the first (or last) item; false if the tree is empty. On an
    /// error the cursor is left unpositioned.
    pub(crate) fn move_edge<S: PageRead>(
        &mut self,
        s: &S,
        rec: &DbRecord,
        right: bool,
    ) -> Result<bool> {
        self.move_edge_leaf(s, rec, right).map(|p| p.is_some())
    }

    /// [`move_edge`](Self::move_edge) giving the leaf it moved to.
    pub(crate) fn move_edge_leaf<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        right: bool,
    ) -> Result<Option<Page<'a>>> {
        match self.try_move_edge(s, rec, right) {
            Err(e) => self.unposition(e),
            ok => ok,
        }
    }

    fn try_move_edge<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        right: bool,
    ) -> Result<Option<Page<'a>>> {
        if rec.root == P_INVALID {
            self.unset = true;
            self.path.len = 0;
            return Ok(None);
        }
        let root = s.page(rec.root)?;
        self.path.pg[0] = rec.root;
        self.path.ix[0] = if right {
            root.len().saturating_sub(1)
        } else {
            0
        };
        self.path.len = 1;
        let leaf = self.descend_edge_from(s, rec, root, right)?;
        self.unset = false;
        Ok(Some(leaf))
    }

    pub(crate) fn first<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        self.move_edge(s, rec, false)?;
        self.current(s)
    }

    /// Move to the next leaf's first item (the previous leaf's last);
    /// false (position kept) at the end. On an error the position is kept
    /// too.
    fn step_leaf<S: PageRead>(&mut self, s: &S, rec: &DbRecord, fwd: bool) -> Result<bool> {
        Ok(self.step_to_leaf(s, rec, fwd, 3)?.is_some())
    }

    /// [`step_leaf`](Self::step_leaf) giving the leaf it moved to and its
    /// parent, and prefetching the leaves after it that are fewer than
    /// `far` steps away (`far` = 3: the next two).
    #[inline]
    pub(crate) fn step_to_leaf<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        fwd: bool,
        far: usize,
    ) -> Result<Option<Crossed<'a>>> {
        // The deepest branch with a child beyond the path's, found without
        // moving.
        let leaf = self.path.leaf();
        let mut lvl = leaf;
        let (up, p, j) = loop {
            if lvl == 0 {
                return Ok(None);
            }
            lvl -= 1;
            let p = s.page(self.path.pg[lvl])?;
            let i = self.path.ix[lvl];
            if fwd && i + 1 < p.len() {
                break (lvl, p, i + 1);
            }
            if !fwd && i > 0 {
                break (lvl, p, i - 1);
            }
        };
        if up + 1 == leaf {
            // A sibling under the same parent (all but one crossing in a
            // branch's fan-out): read it, then move.
            let child = p.child(j)?;
            let c = s.page(child)?;
            if !c.is_leaf() {
                return Err(ErrorKind::Corrupted.into());
            }
            self.path.ix[up] = j;
            self.path.pg[leaf] = child;
            self.path.ix[leaf] = if fwd { 0 } else { c.len().saturating_sub(1) };
            prefetch_ahead(s, &p, j, fwd, far);
            return Ok(Some(Crossed {
                leaf: c,
                parent: Some(p),
            }));
        }
        let save = self.path;
        self.path.ix[up] = j;
        self.path.len = up + 1;
        if let Err(e) = self.descend_edge(s, rec, !fwd) {
            self.path = save;
            return Err(e);
        }
        let up = self.path.len - 2;
        let parent = s.page(self.path.pg[up]).ok();
        if let Some(p) = &parent {
            prefetch_ahead(s, p, self.path.ix[up], fwd, far);
        }
        Ok(Some(Crossed {
            leaf: s.page(self.path.pg[leaf])?,
            parent,
        }))
    }

    /// Move to the next item (the first if unset); false, position kept, at the end.
    pub(crate) fn move_next<S: PageRead>(&mut self, s: &S, rec: &DbRecord) -> Result<bool> {
        if self.unset {
            return self.move_edge(s, rec, false);
        }
        let l = self.path.leaf();
        let p = self.leaf(s)?;
        let i = self.path.ix[l];
        if i + 1 < p.len() {
            self.path.ix[l] = i + 1;
            return Ok(true);
        }
        if i >= p.len() {
            // Past the end stays past the end.
            return Ok(false);
        }
        self.step_leaf(s, rec, true)
    }

    /// Move to the previous item (the last if unset); false at the start.
    pub(crate) fn move_prev<S: PageRead>(&mut self, s: &S, rec: &DbRecord) -> Result<bool> {
        if self.unset {
            return self.move_edge(s, rec, true);
        }
        let l = self.path.leaf();
        let i = self.path.ix[l];
        if i > 0 {
            let p = self.leaf(s)?;
            self.path.ix[l] = (i - 1).min(p.len().saturating_sub(1));
            return Ok(true);
        }
        self.step_leaf(s, rec, false)
    }

    /// Position at the first key >= `key`; returns whether it matched exactly.
    /// Past the end when every key is smaller. On an error the cursor is
    /// left unpositioned.
    pub(crate) fn seek<S: PageRead>(
        &mut self,
        s: &S,
        rec: &DbRecord,
        cmp: CmpFn,
        key: &[u8],
    ) -> Result<bool> {
        self.seek_at(s, rec, cmp, key).map(|(exact, _)| exact)
    }

    /// [`seek`](Self::seek), with the leaf node it stands on (`None` past
    /// the end, and when it stepped to the next leaf).
    pub(crate) fn seek_at<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        cmp: CmpFn,
        key: &[u8],
    ) -> Result<Seek<'a>> {
        match self.try_seek(s, rec, cmp, key) {
            Err(e) => self.unposition(e),
            ok => ok,
        }
    }

    #[inline(always)]
    fn try_seek<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        cmp: CmpFn,
        key: &[u8],
    ) -> Result<Seek<'a>> {
        // (The path must be of this tree: a key's sub-database position
        // is reused in place for the next key's, whose values may fall
        // between the first and last of the other tree's leaf.)
        if s.frozen() && !self.unset && self.path.len > 0 && self.path.pg[0] == rec.root {
            if let Some(hit) = self.seek_in_leaf(s, cmp, key)? {
                return Ok(hit);
            }
        }
        let (i, exact, leaf) = descend_to(s, rec, cmp, key, &mut self.path)?;
        let Some(p) = leaf else {
            self.unset = true;
            return Ok((false, None));
        };
        self.unset = false;
        if i < p.len() {
            return Ok((exact, Some((p, i))));
        }
        if !p.is_empty() {
            // The successor, if any, starts the next leaf.
            self.path.ix[self.path.leaf()] = p.len() - 1;
            if !self.step_leaf(s, rec, true)? {
                self.path.ix[self.path.leaf()] = p.len();
            }
        }
        Ok((exact, None))
    }
}

impl CursorPos {
    /// A seek that ends on the leaf the cursor stands on, found without
    /// a descent: when `key` lies between that leaf's first and last keys,
    /// no other leaf can hold it or its successor. Only in a frozen
    /// snapshot, where the cursor's path is still true. `None` when the
    /// key lies outside (or the leaf is empty): the caller descends.
    /// back-mdb walks ids in order (a subtree search reads 100 entries,
    /// mostly of one leaf), as LMDB's `MDB_SET` on an initialised cursor
    /// does.
    #[inline(never)]
    fn seek_in_leaf<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        cmp: CmpFn,
        key: &[u8],
    ) -> Result<Option<Seek<'a>>> {
        use std::cmp::Ordering::*;
        let l = self.path.leaf();
        let p = s.page(self.path.pg[l])?;
        let n = p.len();
        if !p.is_leaf() || n == 0 {
            return Ok(None);
        }
        if cmp.compare(p.key(0)?, key) == Greater || cmp.compare(p.key(n - 1)?, key) == Less {
            return Ok(None);
        }
        let (i, exact) = search(&p, key, cmp)?;
        self.path.ix[l] = i;
        Ok(Some((exact, Some((p, i)))))
    }
}

/// What a seek found: whether the key matched exactly, and the leaf node
/// the cursor stands on (see [`CursorPos::seek_at`]).
pub(crate) type Seek<'a> = (bool, Option<(Page<'a>, usize)>);

/// The leaf a cursor crossed to, and its parent (`None` if it could not
/// be read again), for a caller that looks further along the parent.
pub(crate) struct Crossed<'a> {
    pub(crate) leaf: Page<'a>,
    pub(crate) parent: Option<Page<'a>>,
}

/// A scan reads leaves in key order, rarely file order: have the leaves
/// after child `j` of branch `p`, fewer than `far` away, start loading
/// while the cursor reads that one. With `far` = 3 each leaf is asked for
/// at two steps: asking once (one leaf or two ahead) measured no faster
/// than not at all, as if most of a burst of prefetches into a page not yet
/// in the TLB were dropped. The Rust cursor asks for the next leaf only and
/// spreads the one three ahead over its steps (`cursor::Kept`).
fn prefetch_ahead<S: PageRead>(s: &S, p: &Page<'_>, j: usize, fwd: bool, far: usize) {
    for d in 1..far {
        let k = if fwd { j + d } else { j.wrapping_sub(d) };
        if k < p.len() {
            if let Ok(c) = p.child(k) {
                s.prefetch(c);
            }
        }
    }
}
