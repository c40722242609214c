//! Insertion: copy-on-write of the path, placing large values in overflow
//! runs, and page splits (the split point chosen as the inserts run).

use crate::error::{ErrorKind, Result};
use crate::format::page::{
    self, edit, encode_branch, footprint, node_max, ov_pages, raw_key, rekey_branch, NodeData,
    Page, F_BIGDATA, F_DUPDATA, F_SUBDATA, HDR, P_BRANCH, P_INVALID, P_LEAF, P_LEAF2,
};
use crate::pager::{AppendCache, PageRead, Pager};
use crate::tree::*;
use std::cmp::Ordering;

/// Put into a plain (not DUPSORT) tree, placing large values in overflow pages.
pub(crate) fn put_in_tree(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    key: &[u8],
    val: Value<'_>,
    flags: WriteFlags,
) -> Result<()> {
    let mut path = pager.take_path();
    let r = put_in_tree_at(pager, t, key, val, flags, (&mut path, None));
    pager.give_path(path);
    r
}

/// [`put_in_tree`] for a cursor: `at` is where `key` goes on the leaf of
/// `path` (a valid path of the tree, from the cursor), if known; on return
/// `path` leads to the key's node unless the tree changed shape
/// ([`placed_path`]).
pub(crate) fn put_in_tree_at(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    key: &[u8],
    val: Value<'_>,
    flags: WriteFlags,
    (path, at): (&mut Path, Option<(usize, bool)>),
) -> Result<()> {
    check_key(key)?;
    let len = val.len();
    if len > u32::MAX as usize {
        return Err(ErrorKind::BadValSize.into());
    }
    if t.rec.flags & crate::format::flags::INTEGERKEY != 0 && key.len() != 4 && key.len() != 8 {
        return Err(ErrorKind::BadValSize.into());
    }
    let ps = pager.psize();
    let data = if page::NODE_HDR + key.len() + len > node_max(ps) {
        // Find the insert point first so a KeyExist failure allocates nothing.
        precheck(pager, t, key, flags)?;
        let n = ov_pages(ps, len);
        let pg = alloc(pager, n)?;
        let mut run = vec![0u8; n * ps].into_boxed_slice();
        edit::init_overflow(&mut run, pg, n);
        if let Value::Bytes(v) = val {
            edit::overflow_data_mut(&mut run)[..len].copy_from_slice(v);
        }
        pager.dirty.insert(pg, run);
        t.rec.overflow_pages += n as u64;
        NodeData::Overflow(pg, len)
    } else {
        match val {
            Value::Bytes(v) => NodeData::Inline(v),
            Value::Reserve(n) => NodeData::Reserve(n),
        }
    };
    put_along(pager, t, key, data, flags, path, at)
}

/// Whether `path`, filled by a put of `t` that began when the pager had
/// made `splits` splits, still leads to the key put (at its leaf index).
pub(crate) fn placed_path(pager: &Pager<'_>, t: &Tree, path: &Path, splits: u64) -> bool {
    path.len > 0 && path.len == t.rec.depth as usize && pager.splits == splits
}

/// Fail early with `KeyExist` for NOOVERWRITE/APPEND conflicts.
pub(crate) fn precheck(pager: &Pager<'_>, t: &Tree, key: &[u8], flags: WriteFlags) -> Result<()> {
    let mut path = Path::new();
    let (i, exact) = descend(pager, &t.rec, t.cmp, key, &mut path)?;
    if exact && flags.contains(WriteFlags::NO_OVERWRITE) {
        return Err(ErrorKind::KeyExist.into());
    }
    if flags.contains(WriteFlags::APPEND) && path.len > 0 && !is_append(pager, &path, i, exact)? {
        return Err(ErrorKind::KeyExist.into());
    }
    Ok(())
}

/// Whether inserting at leaf index `i` appends past the last key of the tree.
pub(crate) fn is_append(pager: &Pager<'_>, path: &Path, i: usize, exact: bool) -> Result<bool> {
    if exact {
        return Ok(false);
    }
    for l in 0..path.len {
        let p = pager.page(path.pg[l])?;
        let last = if l == path.leaf() {
            p.len()
        } else {
            p.len() - 1
        };
        let at = if l == path.leaf() { i } else { path.ix[l] };
        if at != last {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Insert or replace a leaf node (the value is already placed if it is an overflow run).
pub(crate) fn tree_put(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    key: &[u8],
    data: NodeData<'_>,
    flags: WriteFlags,
) -> Result<()> {
    let mut path = pager.take_path();
    let r = put_along(pager, t, key, data, flags, &mut path, None);
    pager.give_path(path);
    r
}

/// [`tree_put`] with a path to fill: with `at`, `path` is a valid path of
/// the tree and `at` the leaf index and exact match of `key` on its leaf
/// (no descent); without, its old contents are unused. Unless the put
/// split a page or went by the APPEND cache, `path` leads to the key's
/// node afterwards (`path.len` is 0 when it does not).
pub(crate) fn put_along(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    key: &[u8],
    data: NodeData<'_>,
    flags: WriteFlags,
    path: &mut Path,
    at: Option<(usize, bool)>,
) -> Result<()> {
    if t.rec.root == P_INVALID {
        path.len = 0;
        let pg = new_page(pager, P_LEAF)?;
        let buf = pager.dirty.get_mut(&pg).unwrap();
        if t.fixed > 0 {
            edit::init_leaf2(buf, pg, P_LEAF | P_LEAF2, t.fixed);
            if !edit::insert_leaf2(buf, 0, key) {
                return Err(ErrorKind::BadValSize.into());
            }
        } else {
            edit::insert_leaf(buf, 0, key, data);
        }
        t.rec.root = pg;
        t.rec.depth = 1;
        t.rec.leaf_pages = 1;
        t.rec.entries = 1;
        return Ok(());
    }
    let append = flags.contains(WriteFlags::APPEND);
    let at = if append { None } else { at };
    if at.is_none() {
        path.len = 0;
    }
    if append && t.fixed == 0 {
        if let Some(r) = append_in_place(pager, t, key, data)? {
            return r;
        }
    }
    let (i, exact) = if let Some(found) = at {
        found
    } else if append && t.fixed == 0 {
        match descend_last(pager, t, key, path)? {
            Some(found) => found,
            None => {
                free_new_overflow(pager, t, data)?;
                return Err(ErrorKind::KeyExist.into());
            }
        }
    } else {
        descend(&*pager, &t.rec, t.cmp, key, path)?
    };
    if t.fixed > 0 {
        // LEAF2 trees hold keys only (the values of a DUPFIXED key).
        if exact {
            return Err(ErrorKind::KeyExist.into());
        }
        // The record's value size must be the leaf's: the packed keys are
        // moved by it (a forged md_pad, validate-md-pad in py-lmdb).
        let p = pager.page(path.pg[path.leaf()])?;
        if !p.is_leaf2() || p.pad() != t.fixed {
            return Err(ErrorKind::Corrupted.into());
        }
        touch_path(pager, t, path)?;
        let leaf = path.pg[path.leaf()];
        t.rec.entries += 1;
        if edit::insert_leaf2(pager.dirty.get_mut(&leaf).unwrap(), i, key) {
            pager.last_insert = (leaf, i);
            return Ok(());
        }
        let rightmost = append || is_append(pager, path, i, false)?;
        let seq = ascending(pager, leaf, i);
        let hint = Hint {
            rightmost,
            ascending: seq,
        };
        return insert(pager, t, path, path.leaf(), i, key, hint);
    }
    if exact {
        let n = pager.page(path.pg[path.leaf()])?.node(i)?;
        // Duplicates in a tree without them (CVE-2019-16227).
        if n.flags() & F_DUPDATA != 0 && t.dups.is_none() {
            free_new_overflow(pager, t, data)?;
            return Err(ErrorKind::Corrupted.into());
        }
        if flags.contains(WriteFlags::NO_OVERWRITE) || append {
            free_new_overflow(pager, t, data)?;
            return Err(ErrorKind::KeyExist.into());
        }
        if (n.flags() & F_SUBDATA != 0) != matches!(data, NodeData::SubDb(_)) {
            free_new_overflow(pager, t, data)?;
            return Err(ErrorKind::Incompatible.into());
        }
    }
    touch_path(pager, t, path)?;
    let leaf = path.pg[path.leaf()];
    if exact {
        let (old_fp, old_big, old_dsize, old_ov) = {
            let n = pager.page(leaf)?.node(i)?;
            let big = n.flags() & F_BIGDATA != 0;
            (
                n.footprint(),
                big,
                n.dsize(),
                if big { n.ov_pgno() } else { 0 },
            )
        };
        if old_big {
            free_overflow(pager, t, old_ov, old_dsize)?;
        }
        let new_fp = footprint(key.len(), data.stored());
        let same_kind = !old_big && matches!(data, NodeData::Inline(_) | NodeData::Reserve(_));
        if same_kind && new_fp == old_fp && old_dsize == data.stored() {
            let buf = pager.dirty.get_mut(&leaf).unwrap();
            let d = edit::data_mut(buf, i);
            match data {
                NodeData::Inline(v) => d.copy_from_slice(v),
                NodeData::Reserve(_) => d.fill(0),
                _ => unreachable!(),
            }
            return Ok(());
        }
        if let NodeData::SubDb(r) = data {
            let buf = pager.dirty.get_mut(&leaf).unwrap();
            edit::data_mut(buf, i).copy_from_slice(r);
            return Ok(());
        }
        edit::remove(pager.dirty.get_mut(&leaf).unwrap(), i);
    } else {
        t.rec.entries += 1;
    }
    // Common case: the node fits, no encoding or allocation needed.
    let buf = pager.dirty.get_mut(&leaf).unwrap();
    if edit::insert_leaf(buf, i, key, data) {
        pager.last_insert = (leaf, i);
        if append {
            // The path is dirty and still leads to the last leaf.
            pager.append = Some(AppendCache {
                root: path.pg[0],
                depth: path.len,
                leaf,
                moves: pager.moves,
            });
        }
        return Ok(());
    }
    let rightmost = append || (!exact && is_append(pager, path, i, false)?);
    let seq = !exact && ascending(pager, leaf, i);
    let raw = encode_leaf(key, data);
    let hint = Hint {
        rightmost: rightmost || append,
        ascending: seq,
    };
    insert(pager, t, path, path.leaf(), i, &raw, hint)
}

/// APPEND on the path the previous APPEND put left (no page moved since):
/// add the entry at the end of the last leaf if it is past the last key
/// and fits. `None`: take the general path.
fn append_in_place(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    key: &[u8],
    data: NodeData<'_>,
) -> Result<Option<Result<()>>> {
    let leaf = match pager.append {
        Some(c)
            if c.moves == pager.moves
                && c.depth == t.rec.depth as usize
                && c.root == t.rec.root =>
        {
            c.leaf
        }
        _ => return Ok(None),
    };
    let buf = pager.dirty.get_mut(&leaf).ok_or(ErrorKind::Corrupted)?;
    let n = {
        let p = Page::new(buf)?;
        let n = p.len();
        if n == 0 || t.cmp.compare(key, p.key(n - 1)?) != Ordering::Greater {
            // An exact match or an error: the general path tells which.
            return Ok(None);
        }
        n
    };
    if !edit::insert_leaf(buf, n, key, data) {
        return Ok(None);
    }
    t.rec.entries += 1;
    pager.last_insert = (leaf, n);
    Ok(Some(Ok(())))
}

/// APPEND: walk the rightmost path, with no search, to the end of the
/// last leaf. `None` when `key` sorts before the tree's last key; an
/// exact match is reported on that last key.
pub(crate) fn descend_last(
    pager: &Pager<'_>,
    t: &Tree,
    key: &[u8],
    path: &mut Path,
) -> Result<Option<(usize, bool)>> {
    path.len = 0;
    let mut pgno = t.rec.root;
    loop {
        if path.len >= crate::tree::MAX_DEPTH {
            return Err(ErrorKind::CursorFull.into());
        }
        let p = pager.page(pgno)?;
        let n = p.len();
        path.pg[path.len] = pgno;
        path.len += 1;
        if p.is_leaf() {
            if path.len != t.rec.depth as usize {
                return Err(ErrorKind::Corrupted.into());
            }
            path.ix[path.len - 1] = n;
            if n == 0 {
                return Ok(Some((0, false)));
            }
            return Ok(match t.cmp.compare(key, p.key(n - 1)?) {
                Ordering::Greater => Some((n, false)),
                Ordering::Equal => {
                    path.ix[path.len - 1] = n - 1;
                    Some((n - 1, true))
                }
                Ordering::Less => None,
            });
        }
        if n == 0 {
            return Err(ErrorKind::Corrupted.into());
        }
        path.ix[path.len - 1] = n - 1;
        pgno = p.child(n - 1)?;
    }
}

/// Whether an insert at index `i` of `leaf` continues an ascending run
/// (the previous insert went to `i - 1` of the same page); records it.
pub(crate) fn ascending(pager: &mut Pager<'_>, leaf: u64, i: usize) -> bool {
    let seq = pager.last_insert == (leaf, i.wrapping_sub(1));
    pager.last_insert = (leaf, i);
    seq
}

/// Replace leaf node `i` of the (dirty) path with a new node, splitting if needed.
pub(crate) fn replace_node(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    path: &Path,
    i: usize,
    key: &[u8],
    data: NodeData<'_>,
) -> Result<()> {
    let leaf = path.pg[path.leaf()];
    let buf = pager.dirty.get_mut(&leaf).ok_or(ErrorKind::Corrupted)?;
    edit::remove(buf, i);
    if edit::insert_leaf(buf, i, key, data) {
        return Ok(());
    }
    let raw = encode_leaf(key, data);
    insert(pager, t, path, path.leaf(), i, &raw, Hint::NONE)
}

pub(crate) fn free_new_overflow(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    data: NodeData<'_>,
) -> Result<()> {
    if let NodeData::Overflow(pg, len) = data {
        free_overflow(pager, t, pg, len)?;
    }
    Ok(())
}

/// Make every page on `path` dirty (copy-on-write), fixing parent pointers.
pub(crate) fn touch_path(pager: &mut Pager<'_>, t: &mut Tree, path: &mut Path) -> Result<()> {
    // Whatever the caller changes next may move items: cached paths end.
    pager.moves += 1;
    let known = pager.dirty_path.known(&path.pg[..path.len], pager.lost);
    for l in known..path.len {
        let old = path.pg[l];
        if pager.dirty.contains_key(&old) || pager.unspill(old)? {
            continue;
        }
        let new = super::alloc::copy_to_new(pager, old)?;
        path.pg[l] = new;
        if l == 0 {
            t.rec.root = new;
        } else {
            let parent = pager.dirty.get_mut(&path.pg[l - 1]).unwrap();
            edit::set_child(parent, path.ix[l - 1], new);
        }
    }
    pager.dirty_path.set(&path.pg, path.len, pager.lost);
    Ok(())
}

/// Allocate and initialise an empty page.
pub(crate) fn new_page(pager: &mut Pager<'_>, flags: u16) -> Result<u64> {
    let pg = alloc(pager, 1)?;
    let mut buf = pager.take_buf();
    // Only the header needs clearing: the free gap of a recycled buffer
    // holds bytes of an earlier page of this same file, as in LMDB.
    edit::init(&mut buf, pg, flags);
    pager.dirty.insert(pg, buf);
    Ok(pg)
}

/// Insert encoded node `raw` at index `i` of the page at `lvl` of `path`
/// (all dirty), splitting pages up the path as needed.
pub(crate) fn insert(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    path: &Path,
    lvl: usize,
    i: usize,
    raw: &[u8],
    hint: Hint,
) -> Result<()> {
    let pg = path.pg[lvl];
    let buf = pager.dirty.get_mut(&pg).unwrap();
    let fits = if page::flags_of(buf) & P_LEAF2 != 0 {
        edit::insert_leaf2(buf, i, raw)
    } else {
        edit::insert_raw(buf, i, raw)
    };
    if fits {
        return Ok(());
    }
    // Items move to other pages: paths taken before lead elsewhere.
    pager.splits += 1;
    let (n, flags, plain_leaf) = {
        let p = pager.page(pg)?;
        (p.len(), p.flags(), p.is_leaf() && !p.is_leaf2())
    };
    if plain_leaf && i == n && n + 1 >= 8 {
        // The new entry goes alone to a new right page (see `split_at`):
        // the left page stays as it is.
        let right = new_page(pager, flags)?;
        if !edit::insert_raw(pager.dirty.get_mut(&right).unwrap(), 0, raw) {
            return Err(ErrorKind::PageFull.into());
        }
        return file_right(pager, t, path, lvl, right, raw_key(raw), hint, false);
    }
    // Split: the entries, with the new one in place, as slices of a
    // copy of the page (the rebuild overwrites the page itself).
    let mut copy = pager.take_buf();
    copy.copy_from_slice(pager.page(pg)?.bytes());
    let r = split(pager, t, path, lvl, i, raw, hint, &copy);
    pager.spare.push(copy);
    r
}

/// Split page `lvl` of `path` (its bytes as they were in `copy`) with
/// `raw` inserted at `i`, and file the new page in the parent.
#[allow(clippy::too_many_arguments)]
pub(crate) fn split(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    path: &Path,
    lvl: usize,
    i: usize,
    raw: &[u8],
    hint: Hint,
    copy: &[u8],
) -> Result<()> {
    let pg = path.pg[lvl];
    let p = Page::new(copy)?;
    let flags = p.flags();
    let branch = p.is_branch();
    let leaf2 = p.is_leaf2();
    let pad = p.pad();
    let mut nodes: Vec<&[u8]> = Vec::with_capacity(p.len() + 1);
    for j in 0..p.len() {
        if j == i {
            nodes.push(raw);
        }
        nodes.push(p.raw_entry(j)?);
    }
    if i == p.len() {
        nodes.push(raw);
    }
    let cap = pager.psize() - HDR;
    let s = split_at(&nodes, i, branch, leaf2, cap, hint).ok_or(ErrorKind::PageFull)?;
    let sep = if leaf2 {
        nodes[s].to_vec()
    } else {
        raw_key(nodes[s]).to_vec()
    };
    // A branch page's first node carries no key.
    let keyless;
    if branch {
        keyless = rekey_branch(nodes[s], &[]);
        nodes[s] = &keyless;
    }
    let right = new_page(pager, flags)?;
    {
        let (left, rnodes) = nodes.split_at(s);
        let ok = if leaf2 {
            edit::init_leaf2(pager.dirty.get_mut(&right).unwrap(), right, flags, pad);
            edit::rebuild_leaf2(pager.dirty.get_mut(&pg).unwrap(), flags, left)
                && edit::rebuild_leaf2(pager.dirty.get_mut(&right).unwrap(), flags, rnodes)
        } else {
            edit::rebuild(pager.dirty.get_mut(&pg).unwrap(), flags, left)
                && edit::rebuild(pager.dirty.get_mut(&right).unwrap(), flags, rnodes)
        };
        if !ok {
            return Err(ErrorKind::PageFull.into());
        }
    }
    file_right(pager, t, path, lvl, right, &sep, hint, branch)
}

/// File `right`, the new right sibling of page `lvl` of `path`, whose first
/// key is `sep`, in the parent (a new root at the top).
#[allow(clippy::too_many_arguments)]
fn file_right(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    path: &Path,
    lvl: usize,
    right: u64,
    sep: &[u8],
    hint: Hint,
    branch: bool,
) -> Result<()> {
    let pg = path.pg[lvl];
    if branch {
        t.rec.branch_pages += 1;
    } else {
        t.rec.leaf_pages += 1;
    }
    if lvl == 0 {
        let root = new_page(pager, P_BRANCH)?;
        let b = pager.dirty.get_mut(&root).unwrap();
        edit::insert_branch(b, 0, &[], pg);
        edit::insert_branch(b, 1, sep, right);
        t.rec.root = root;
        t.rec.depth += 1;
        t.rec.branch_pages += 1;
        return Ok(());
    }
    let node = encode_branch(sep, right);
    let up = Hint {
        rightmost: hint.rightmost,
        ascending: false,
    };
    insert(pager, t, path, lvl - 1, path.ix[lvl - 1] + 1, &node, up)
}

/// Mutable access to the (dirty) value of `key` in `t`, right after a put.
pub(crate) fn value_mut_t<'p>(
    pager: &'p mut Pager<'_>,
    t: &Tree,
    key: &[u8],
) -> Result<&'p mut [u8]> {
    let mut path = Path::new();
    let (i, exact) = descend(&*pager, &t.rec, t.cmp, key, &mut path)?;
    if !exact {
        return Err(ErrorKind::NotFound.into());
    }
    let leaf = path.pg[path.leaf()];
    let n = pager.page(leaf)?.node(i)?;
    if n.flags() & F_BIGDATA != 0 {
        let (pg, len) = (n.ov_pgno(), n.dsize());
        let run = pager.dirty.get_mut(&pg).ok_or(ErrorKind::Corrupted)?;
        return Ok(&mut edit::overflow_data_mut(run)[..len]);
    }
    let buf = pager.dirty.get_mut(&leaf).ok_or(ErrorKind::Corrupted)?;
    Ok(edit::data_mut(buf, i))
}

/// The value source of a put.
#[derive(Clone, Copy)]
pub(crate) enum Value<'a> {
    Bytes(&'a [u8]),
    Reserve(usize),
}

impl Value<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Value::Bytes(b) => b.len(),
            Value::Reserve(n) => *n,
        }
    }
}

pub(crate) use crate::format::page::encode_leaf;

/// Index at which to split `nodes` into two pages of capacity `cap`, as
/// balanced by bytes as possible. For branch pages the first node of the
/// right page loses its key.
/// Page bytes an entry costs: a node with its pointer, or a LEAF2 key.
pub(crate) fn entry_cost(raw: &[u8], leaf2: bool) -> usize {
    if leaf2 {
        raw.len()
    } else {
        ((raw.len() + 1) & !1) + 2
    }
}

/// Rebuild a node page or a LEAF2 page from its entries.
pub(crate) fn rebuild_any(b: &mut [u8], flags: u16, leaf2: bool, entries: &[&[u8]]) -> bool {
    if leaf2 {
        edit::rebuild_leaf2(b, flags, entries)
    } else {
        edit::rebuild(b, flags, entries)
    }
}

/// What the insert that splits a page tells about the load pattern.
#[derive(Clone, Copy)]
pub(crate) struct Hint {
    /// The insert is past the last key of the whole tree.
    pub(crate) rightmost: bool,
    /// The insert follows the previous one on the same leaf.
    pub(crate) ascending: bool,
}

impl Hint {
    pub(crate) const NONE: Hint = Hint {
        rightmost: false,
        ascending: false,
    };
}

/// Where to split a full page whose entries, with the new one at index `i`,
/// are `nodes`: index of the first entry of the right page.
///
/// A new leaf entry at either end goes alone to its own page and the old
/// page stays full, so ascending or descending loads pack pages full (as
/// LMDB does at the end; we also do it at the start). In an ascending run
/// through the middle of a page (`ascending`), the new entry ends the left page,
/// so the run goes on at that page's end. Otherwise a leaf of entries of
/// about one size splits by count, as LMDB's do, and other pages balance
/// the two halves by bytes. At the end of the whole tree (`rightmost`), branch
/// pages also keep all but their last entries.
pub(crate) fn split_at(
    nodes: &[&[u8]],
    i: usize,
    branch: bool,
    leaf2: bool,
    cap: usize,
    hint: Hint,
) -> Option<usize> {
    let last = nodes.len() - 1;
    // Past the last key of the whole tree (an ascending load of large
    // values, as slapadd's entries), the old page stays full, as in LMDB.
    if !branch && hint.rightmost && i == last {
        return Some(last);
    }
    // Other pages of a few large nodes (sub-pages that grow in place) split
    // evenly.
    if !branch && nodes.len() >= 8 {
        if i == last {
            return Some(last);
        }
        if i == 0 {
            return Some(1);
        }
        if hint.ascending {
            let left: usize = nodes[..=i].iter().map(|r| entry_cost(r, leaf2)).sum();
            if left <= cap {
                return Some(i + 1);
            }
        }
    }
    if branch && hint.rightmost && i == last && nodes.len() > 3 {
        return Some(last - 1);
    }
    if !branch && !leaf2 {
        if let Some(s) = split_by_count(nodes, cap) {
            return Some(s);
        }
    }
    split_point(nodes, branch, leaf2, cap)
}

/// LMDB's split of a leaf whose entries are about the same size (within
/// 1.5x): halves by count. Bytes would balance them as well, but where a
/// page holds older, shorter keys among newer ones (`key1`, `key10`,
/// `key100`, ... put in numeric order, one commit each) a count split
/// leaves the left page, which that order leaves behind, a little fuller:
/// balanced by bytes such loads took up to 9% more leaves than LMDB.
/// `None` when sizes differ more, or a half would not fit.
fn split_by_count(nodes: &[&[u8]], cap: usize) -> Option<usize> {
    let sizes = nodes.iter().map(|r| entry_cost(r, false));
    let (lo, hi) = sizes
        .clone()
        .fold((usize::MAX, 0), |(lo, hi), c| (lo.min(c), hi.max(c)));
    if 2 * hi > 3 * lo {
        return None;
    }
    let s = nodes.len() / 2;
    let left: usize = sizes.clone().take(s).sum();
    let right: usize = sizes.skip(s).sum();
    (s > 0 && left <= cap && right <= cap).then_some(s)
}

pub(crate) fn split_point(nodes: &[&[u8]], branch: bool, leaf2: bool, cap: usize) -> Option<usize> {
    let sizes: Vec<usize> = nodes.iter().map(|r| entry_cost(r, leaf2)).collect();
    let total: usize = sizes.iter().sum();
    let mut best: Option<(usize, usize)> = None;
    let mut left = 0;
    for s in 1..nodes.len() {
        left += sizes[s - 1];
        let mut right = total - left;
        if branch {
            right -= ((nodes[s].len() + 1) & !1) - ((page::NODE_HDR + 1) & !1);
        }
        if left <= cap && right <= cap {
            let worst = left.max(right);
            if best.is_none_or(|(_, w)| worst < w) {
                best = Some((s, worst));
            }
        }
    }
    best.map(|(s, _)| s)
}
