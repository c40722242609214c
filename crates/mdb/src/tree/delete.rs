//! Deletion: removing items, rebalancing and merging pages, freeing overflow
//! runs, and dropping whole trees.

use crate::error::{ErrorKind, Result};
use crate::format::meta::DbRecord;
use crate::format::page::{
    self, edit, encode_branch, raw_key, rekey_branch, Page, F_BIGDATA, F_DUPDATA, F_SUBDATA, HDR,
    P_INVALID,
};
use crate::pager::{PageRead, Pager};
use crate::tree::*;
/// Below this many used bytes (per mille of the page) a page is rebalanced.
pub(crate) const FILL_THRESHOLD: usize = 250;

/// Free the overflow run at `pg` holding a `len`-byte value, adjusting the
/// count of `db`.
pub(crate) fn free_overflow(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    pg: u64,
    len: usize,
) -> Result<()> {
    let n = run_len(pager, pg, len)?;
    t.rec.overflow_pages = t
        .rec
        .overflow_pages
        .checked_sub(n as u64)
        .ok_or(ErrorKind::Corrupted)?;
    pager.free_pages(pg, n);
    Ok(())
}

pub(crate) fn tree_del(pager: &mut Pager<'_>, t: &mut Tree, key: &[u8]) -> Result<bool> {
    let mut path = pager.take_path();
    let r = del_along(pager, t, key, &mut path);
    pager.give_path(path);
    r
}

fn del_along(pager: &mut Pager<'_>, t: &mut Tree, key: &[u8], path: &mut Path) -> Result<bool> {
    let (i, exact) = descend(&*pager, &t.rec, t.cmp, key, path)?;
    if !exact {
        return Ok(false);
    }
    remove_at(pager, t, path, i, None)?;
    Ok(true)
}

/// Remove the item at leaf index `i` of `path` (a position in `t` as it
/// is now), then rebalance. When the tree kept its shape,
/// `path` (made dirty) still leads to the leaf, now with the following item
/// at `i`: returns the leaf's new length then, else `None`. With `cur`,
/// also when a rebalance left the path and that item where they were.
///
/// A cursor deleting at its position passes `cur`: its key buffer then
/// holds the key of the item that follows on the leaf, if the path still
/// leads to it, else the deleted key (to search from); `NotFound`
/// for a position past the leaf's end and `Incompatible` for a named
/// database's record (with `no_subdb`) leave the buffer and the items as
/// they were.
pub(crate) fn remove_at(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    path: &mut Path,
    i: usize,
    mut cur: Option<AtCursor<'_>>,
) -> Result<Option<usize>> {
    touch_path(pager, t, path)?;
    let lvl = path.leaf();
    let leaf = path.pg[lvl];
    let cap = pager.psize() - HDR;
    let mut buf = pager.dirty.get_mut(&leaf).ok_or(ErrorKind::Corrupted)?;
    let p = Page::new(buf)?;
    if i >= p.len() {
        return Err(ErrorKind::NotFound.into());
    }
    let leaf2 = p.is_leaf2();
    let mut big = None;
    if leaf2 {
        if let Some(c) = &mut cur {
            c.key.clear();
            c.key.extend_from_slice(p.key(i)?);
        }
    } else {
        let n = p.node(i)?;
        if let Some(c) = &mut cur {
            if c.no_subdb && n.flags() & F_SUBDATA != 0 {
                return Err(ErrorKind::Incompatible.into());
            }
            c.key.clear();
            c.key.extend_from_slice(n.key());
        }
        // Duplicates in a tree without them (CVE-2019-16227).
        if n.flags() & F_DUPDATA != 0 && t.dups.is_none() {
            return Err(ErrorKind::Corrupted.into());
        }
        if n.flags() & F_BIGDATA != 0 {
            big = Some((n.ov_pgno(), n.dsize()));
        }
    }
    if let Some((pg, len)) = big {
        free_overflow(pager, t, pg, len)?;
        buf = pager.dirty.get_mut(&leaf).ok_or(ErrorKind::Corrupted)?;
    }
    if leaf2 {
        edit::remove_leaf2(buf, i);
    } else {
        edit::remove(buf, i);
    }
    t.rec.entries -= 1;
    // The fill rules `rebalance` restores, checked on the buffer at hand.
    let p = Page::edited(buf);
    let (len, used) = (p.len(), p.used());
    let low = if lvl == 0 {
        len == 0
    } else {
        used * 1000 < FILL_THRESHOLD * cap || len < 1
    };
    if !low {
        if let Some(c) = cur.filter(|_| i < len) {
            c.key.clear();
            c.key.extend_from_slice(p.key(i)?);
        }
        return Ok(Some(len));
    }
    // The item that now follows on the leaf, if any: a cursor keeps its
    // place when the rebalance left it there (a delete walk from the front
    // of a leaf moves its right sibling's nodes in behind it, and merges
    // into it: searching again from the root cost 1,400 instructions).
    // (Kept in the cursor's buffer: the deleted key, which it needs if
    // not, is copied back after.)
    let Some(c) = cur.filter(|_| i < len) else {
        rebalance(pager, t, path, lvl)?;
        return Ok(None);
    };
    let klen = c.key.len();
    c.key.extend_from_slice(p.key(i)?);
    let at =
        rebalance(pager, t, path, lvl).and_then(|()| still_at(pager, t, path, i, &c.key[klen..]));
    if let Ok(Some(len)) = at {
        c.key.drain(..klen);
        return Ok(Some(len));
    }
    c.key.truncate(klen);
    at.map(|_| None)
}

/// Whether `path` still leads from the root to a leaf whose item `i` has
/// key `key`: then it is that item's position (keys are unique here).
/// Returns the leaf's length. Only pages reachable from the root are read.
fn still_at(
    pager: &Pager<'_>,
    t: &Tree,
    path: &Path,
    i: usize,
    key: &[u8],
) -> Result<Option<usize>> {
    if path.len == 0 || t.rec.root != path.pg[0] || t.rec.depth as usize != path.len {
        return Ok(None);
    }
    let lvl = path.leaf();
    for j in 0..lvl {
        let p = pager.page(path.pg[j])?;
        if !p.is_branch() || path.ix[j] >= p.len() || p.child(path.ix[j])? != path.pg[j + 1] {
            return Ok(None);
        }
    }
    let leaf = pager.page(path.pg[lvl])?;
    if !leaf.is_leaf() || leaf.is_leaf2() || i >= leaf.len() || leaf.key(i)? != key {
        return Ok(None);
    }
    Ok(Some(leaf.len()))
}

/// What [`remove_at`] needs of a cursor deleting at its position.
pub(crate) struct AtCursor<'a> {
    /// The cursor's key buffer.
    pub(crate) key: &'a mut Vec<u8>,
    /// Refuse to remove a named database's record (the main database).
    pub(crate) no_subdb: bool,
}

/// Restore fill rules after a removal at level `lvl` of `path`.
pub(crate) fn rebalance(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    path: &Path,
    lvl: usize,
) -> Result<()> {
    let pg = path.pg[lvl];
    let (len, used, branch) = {
        let p = pager.page(pg)?;
        (p.len(), p.used(), p.is_branch())
    };
    if lvl == 0 {
        if !branch && len == 0 {
            pager.free_pages(pg, 1);
            t.rec.root = P_INVALID;
            t.rec.depth = 0;
            t.rec.leaf_pages = 0;
        } else if branch && len == 1 {
            let child = pager.page(pg)?.child(0)?;
            pager.free_pages(pg, 1);
            t.rec.root = child;
            t.rec.depth -= 1;
            t.rec.branch_pages -= 1;
        }
        return Ok(());
    }
    let min_keys = if branch { 2 } else { 1 };
    if used * 1000 >= FILL_THRESHOLD * (pager.psize() - HDR) && len >= min_keys {
        return Ok(());
    }
    let parent = path.pg[lvl - 1];
    let pi = path.ix[lvl - 1];
    // Pair the page with a sibling: (left index, right index) in the
    // parent, read from one lookup of it; the separator goes to a spare
    // buffer (no allocation).
    let (li, ri) = if pi > 0 { (pi - 1, pi) } else { (0, 1) };
    let (mut copy, mut sep) = (pager.take_buf(), pager.take_buf());
    let r = (|| {
        let p = pager.page(parent)?;
        if p.len() < 2 {
            // A lone child under a non-root branch: the parent level's case.
            return Ok(None);
        }
        let (mut lpg, mut rpg) = (p.child(li)?, p.child(ri)?);
        let key = p.key(ri)?;
        let slen = key.len();
        sep.get_mut(..slen)
            .ok_or(ErrorKind::Corrupted)?
            .copy_from_slice(key);
        if pi > 0 {
            lpg = touch_child(pager, parent, li, lpg)?;
        } else {
            rpg = touch_child(pager, parent, ri, rpg)?;
        }
        let sep = &sep[..slen];
        if let Some(r) = leaves_in_place(pager, t, path, lvl, (lpg, rpg, ri), sep, &mut copy)? {
            return r.map(Some);
        }
        // Both pages' nodes as slices of copies (the rebuild overwrites them).
        let mut rcopy = pager.take_buf();
        copy.copy_from_slice(pager.page(lpg)?.bytes());
        rcopy.copy_from_slice(pager.page(rpg)?.bytes());
        let r = merge_or_share(pager, t, path, lvl, (li, ri), sep, (&copy, &rcopy));
        pager.spare.push(rcopy);
        r.map(Some)
    })();
    pager.spare.push(copy);
    pager.spare.push(sep);
    match r? {
        Some(()) => Ok(()),
        None => rebalance(pager, t, path, lvl - 1),
    }
}

/// Rebalance two sibling leaves (not LEAF2) by moving the right one's first
/// nodes to the end of the left one, in place: all of them (a merge), or
/// enough to even them out when the left one is the smaller. `None` when
/// that does not apply (the general `merge_or_share` does the rest).
#[allow(clippy::too_many_arguments)]
fn leaves_in_place(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    path: &Path,
    lvl: usize,
    (lpg, rpg, ri): (u64, u64, usize),
    sep: &[u8],
    copy: &mut [u8],
) -> Result<Option<Result<()>>> {
    let cap = pager.psize() - HDR;
    let [Some(lb), Some(rb)] = pager.dirty.get_disjoint_mut([&lpg, &rpg]) else {
        return Ok(None);
    };
    let (lu, r) = {
        let (l, r) = (Page::new(lb)?, Page::new(rb)?);
        let plain = |p: &Page<'_>| p.is_leaf() && !p.is_leaf2();
        if !plain(&l) || !plain(&r) {
            return Ok(None);
        }
        (l.used(), r)
    };
    let rflags = r.flags();
    let ru = r.used();
    let merge = lu + ru <= cap;
    // Entries of the right page that move: all, or while the left one is
    // the smaller.
    let mut k = 0;
    if merge {
        k = r.len();
    } else {
        let mut moved = 0;
        while k + 1 < r.len() {
            let c = entry_cost(r.raw_entry(k)?, false);
            if lu + moved + c > cap || lu + moved >= ru - moved {
                break;
            }
            moved += c;
            k += 1;
        }
        if k == 0 {
            return Ok(None);
        }
    }
    if !edit::append_nodes(lb, &r, 0..k)? {
        return Err(ErrorKind::PageFull.into());
    }
    let parent = path.pg[lvl - 1];
    if merge {
        pager.free_pages(rpg, 1);
        t.rec.leaf_pages -= 1;
        edit::remove(pager.dirty.get_mut(&parent).unwrap(), ri);
        return Ok(Some(rebalance(pager, t, path, lvl - 1)));
    }
    // The right page keeps its other entries: moved up in place when the
    // moved ones were the top of its node area (a page in key order, as
    // a walk from the front finds them), else rebuilt from a copy.
    let in_place = edit::remove_first(rb, k);
    let mut klen = 0;
    if in_place {
        let key = Page::new(rb)?.key(0)?;
        copy[..key.len()].copy_from_slice(key);
        klen = key.len();
    } else {
        edit::copy_page(copy, rb);
        let c = Page::new(copy)?;
        edit::init(rb, rpg, rflags);
        if !edit::append_nodes(rb, &c, k..c.len())? {
            return Err(ErrorKind::PageFull.into());
        }
    }
    let c;
    let new_sep = if in_place {
        &copy[..klen]
    } else {
        c = Page::new(copy)?;
        raw_key(c.raw_entry(k)?)
    };
    if new_sep != sep {
        let pb = pager.dirty.get_mut(&parent).ok_or(ErrorKind::Corrupted)?;
        // Same length (fixed-size keys): rewrite it in place; otherwise
        // replace the node, which may split the parent.
        if !edit::set_branch_key(pb, ri, new_sep) {
            edit::remove(pb, ri);
            let node = encode_branch(new_sep, rpg);
            insert(pager, t, path, lvl - 1, ri, &node, Hint::NONE)?;
        }
    }
    Ok(Some(Ok(())))
}

/// Rebalance step for siblings `li`, `ri` of the parent at `lvl - 1`
/// (copies of their bytes in `copies`, `sep` the right one's separator):
/// merge them if they fit in one page, else share their nodes evenly.
pub(crate) fn merge_or_share(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    path: &Path,
    lvl: usize,
    (li, ri): (usize, usize),
    sep: &[u8],
    copies: (&[u8], &[u8]),
) -> Result<()> {
    let parent = path.pg[lvl - 1];
    let lpg = pager.page(parent)?.child(li)?;
    let rpg = pager.page(parent)?.child(ri)?;
    let (l, r) = (Page::new(copies.0)?, Page::new(copies.1)?);
    let (flags, branch, leaf2) = (l.flags(), l.is_branch(), l.is_leaf2());
    let mut nodes: Vec<&[u8]> = Vec::with_capacity(l.len() + r.len());
    for j in 0..l.len() {
        nodes.push(l.raw_entry(j)?);
    }
    // The right page's keyless first branch node takes the separator.
    let rekeyed = match branch && !r.is_empty() {
        true => Some(rekey_branch(r.raw_entry(0)?, sep)),
        false => None,
    };
    for j in 0..r.len() {
        match &rekeyed {
            Some(k) if j == 0 => nodes.push(k),
            _ => nodes.push(r.raw_entry(j)?),
        }
    }
    let cap = pager.psize() - HDR;
    let total: usize = nodes.iter().map(|v| entry_cost(v, leaf2)).sum();
    if total <= cap {
        // Merge right into left and drop the right page.
        if !rebuild_any(pager.dirty.get_mut(&lpg).unwrap(), flags, leaf2, &nodes) {
            return Err(ErrorKind::PageFull.into());
        }
        pager.free_pages(rpg, 1);
        if branch {
            t.rec.branch_pages -= 1;
        } else {
            t.rec.leaf_pages -= 1;
        }
        edit::remove(pager.dirty.get_mut(&parent).unwrap(), ri);
        return rebalance(pager, t, path, lvl - 1);
    }
    // Redistribute the nodes evenly between the two pages.
    let s = split_point(&nodes, branch, leaf2, cap).ok_or(ErrorKind::PageFull)?;
    let new_sep = if leaf2 {
        nodes[s].to_vec()
    } else {
        raw_key(nodes[s]).to_vec()
    };
    let keyless;
    if branch {
        keyless = rekey_branch(nodes[s], &[]);
        nodes[s] = &keyless;
    }
    let (left, right) = nodes.split_at(s);
    if !rebuild_any(pager.dirty.get_mut(&lpg).unwrap(), flags, leaf2, left)
        || !rebuild_any(pager.dirty.get_mut(&rpg).unwrap(), flags, leaf2, right)
    {
        return Err(ErrorKind::PageFull.into());
    }
    if new_sep != sep {
        // Replace the separator; a longer key may split the parent.
        edit::remove(pager.dirty.get_mut(&parent).unwrap(), ri);
        let node = encode_branch(&new_sep, rpg);
        insert(pager, t, path, lvl - 1, ri, &node, Hint::NONE)?;
    }
    Ok(())
}

/// Copy-on-write the child `i` (page `old`) of dirty branch `parent`.
fn touch_child(pager: &mut Pager<'_>, parent: u64, i: usize, old: u64) -> Result<u64> {
    if pager.dirty.contains_key(&old) || pager.unspill(old)? {
        return Ok(old);
    }
    let new = super::alloc::copy_to_new(pager, old)?;
    edit::set_child(pager.dirty.get_mut(&parent).unwrap(), i, new);
    Ok(new)
}

/// Free every page of `db`'s tree (and of named trees it holds) and reset its record.
pub(crate) fn drop_tree(pager: &mut Pager<'_>, t: &mut Tree) -> Result<()> {
    let mut trees = vec![(t.rec.root, t.rec.depth)];
    while let Some((root, depth)) = trees.pop() {
        if root == P_INVALID {
            continue;
        }
        let mut stack = vec![(root, 1u16)];
        while let Some((pg, d)) = stack.pop() {
            if d > depth || stack.len() > 1 << 24 {
                return Err(ErrorKind::Corrupted.into());
            }
            let p = pager.page(pg)?;
            let mut runs = Vec::new();
            for j in 0..if p.is_leaf2() { 0 } else { p.len() } {
                let n = p.node(j)?;
                if p.is_branch() {
                    stack.push((n.child(), d + 1));
                } else if n.flags() & F_BIGDATA != 0 {
                    runs.push((n.ov_pgno(), n.dsize()));
                } else if n.flags() & F_SUBDATA != 0 && n.dsize() == 48 {
                    let r = DbRecord::read(n.data())?;
                    trees.push((r.root, r.depth));
                }
            }
            for (r, len) in runs {
                let n = run_len(pager, r, len)?;
                pager.free_pages(r, n);
            }
            pager.free_pages(pg, 1);
        }
    }
    let mut empty = DbRecord::empty(t.rec.flags);
    empty.pad = t.rec.pad;
    t.rec = empty;
    Ok(())
}

/// Length in pages of the overflow run starting at `pg`, which holds a
/// `len`-byte value: `Corrupted` unless its header says it is an overflow
/// page of at least the pages the value needs (a larger run is a value
/// overwritten in place by a smaller one; a shorter or empty one would
/// free too little, or pages of something else).
pub(crate) fn run_len(pager: &Pager<'_>, pg: u64, len: usize) -> Result<usize> {
    let b = match pager.dirty.get(&pg) {
        Some(b) => &b[..HDR],
        None => pager.committed(pg, HDR)?,
    };
    let n = page::overflow_pages_of(b);
    if !page::is_overflow(b) || n < page::ov_pages(pager.psize(), len) {
        return Err(ErrorKind::Corrupted.into());
    }
    Ok(n)
}
