//! Moving a tree's pages down the file (`Env::shrink`): every page at or
//! past a limit, branch, leaf or overflow run, of the tree and of the trees
//! hanging from it (named databases, duplicate sub-databases), is copied
//! into a page allocated now (the lowest free ones come first) and its
//! parent pointed at the copy, so that the end of the file can be freed.

use super::alloc::alloc;
use crate::error::{ErrorKind, Result};
use crate::format::meta::DbRecord;
use crate::format::page::{edit, Header, F_BIGDATA, F_SUBDATA, HDR, P_INVALID, P_OVERFLOW};
use crate::pager::{PageRead, Pager};
use crate::tree::read::MAX_DEPTH;

/// What a page needs after its children moved.
enum Fix {
    /// Branch node `i` points at a new child.
    Child(usize, u64),
    /// Leaf node `i`'s overflow run starts at a new page.
    Overflow(usize, u64),
    /// Leaf node `i`'s sub-database record changed.
    Record(usize, [u8; 48]),
}

/// Move the pages of the tree at `root` that lie at `limit` or past it;
/// returns the root's page number now (`P_INVALID` stays). Counts the
/// pages moved in `moved`.
pub(crate) fn relocate(
    pager: &mut Pager<'_>,
    root: u64,
    limit: u64,
    moved: &mut u64,
) -> Result<u64> {
    if root == P_INVALID {
        return Ok(root);
    }
    relocate_page(pager, root, limit, moved, 0)
}

fn relocate_page(
    pager: &mut Pager<'_>,
    pg: u64,
    limit: u64,
    moved: &mut u64,
    depth: usize,
) -> Result<u64> {
    if depth >= MAX_DEPTH {
        return Err(ErrorKind::Corrupted.into());
    }
    // What the page refers to, read before anything changes.
    let (branch, refs) = {
        let p = pager.page(pg)?;
        let mut refs = Vec::new();
        if p.is_branch() {
            for i in 0..p.len() {
                refs.push((i, 0, p.child(i)?));
            }
        } else if !p.is_leaf2() {
            for i in 0..p.len() {
                let n = p.node(i)?;
                if n.flags() & F_BIGDATA != 0 {
                    refs.push((i, F_BIGDATA, n.ov_pgno()));
                } else if n.flags() & F_SUBDATA != 0 {
                    let rec = DbRecord::decode(n.data().get(..48).ok_or(ErrorKind::Corrupted)?);
                    refs.push((i, F_SUBDATA, rec.root));
                }
            }
        }
        (p.is_branch(), refs)
    };
    let mut fixes = Vec::new();
    for (i, kind, child) in refs {
        if branch {
            let new = relocate_page(pager, child, limit, moved, depth + 1)?;
            if new != child {
                fixes.push(Fix::Child(i, new));
            }
        } else if kind == F_BIGDATA {
            if child >= limit && !pager.dirty.contains_key(&child) {
                fixes.push(Fix::Overflow(i, move_run(pager, child)?));
                *moved += 1;
            }
        } else if child != P_INVALID {
            let new = relocate_page(pager, child, limit, moved, depth + 1)?;
            if new != child {
                let p = pager.page(pg)?;
                let mut rec = DbRecord::decode(&p.node(i)?.data()[..48]);
                rec.root = new;
                fixes.push(Fix::Record(i, rec.encode()));
            }
        }
    }
    if fixes.is_empty() && (pg < limit || pager.dirty.contains_key(&pg)) {
        return Ok(pg);
    }
    let new = own(pager, pg, limit, moved)?;
    let buf = pager.dirty.get_mut(&new).ok_or(ErrorKind::Corrupted)?;
    for f in fixes {
        match f {
            Fix::Child(i, c) => edit::set_child(buf, i, c),
            Fix::Overflow(i, o) => edit::data_mut(buf, i)[..8].copy_from_slice(&o.to_le_bytes()),
            Fix::Record(i, r) => edit::data_mut(buf, i)[..48].copy_from_slice(&r),
        }
    }
    Ok(new)
}

/// Page `pg` made writable: itself if dirty already, else a copy in a page
/// allocated now (when `pg` is past `limit` or the copy is needed anyway).
fn own(pager: &mut Pager<'_>, pg: u64, limit: u64, moved: &mut u64) -> Result<u64> {
    if pager.dirty.contains_key(&pg) {
        return Ok(pg);
    }
    let new = super::alloc::copy_to_new(pager, pg)?;
    if pg >= limit {
        *moved += 1;
    }
    Ok(new)
}

/// Copy the overflow run at `pg` into pages allocated now; returns where.
fn move_run(pager: &mut Pager<'_>, pg: u64) -> Result<u64> {
    let ps = pager.psize();
    let head = pager.committed(pg, HDR)?;
    let h = Header::read(head).ok_or(ErrorKind::Corrupted)?;
    if h.flags & P_OVERFLOW == 0 {
        return Err(ErrorKind::Corrupted.into());
    }
    let n = h.overflow_pages() as usize;
    if n == 0 {
        return Err(ErrorKind::Corrupted.into());
    }
    let bytes = pager.committed(pg, n * ps)?.to_vec();
    let new = alloc(pager, n)?;
    let mut buf = bytes.into_boxed_slice();
    edit::set_pgno(&mut buf, new);
    pager.dirty.insert(new, buf);
    pager.free_pages(pg, n);
    Ok(new)
}
