//! Placing a tree's pages at commit: when a write transaction rewrote most
//! of a tree (a bulk load, a rebuild), its dirty branch and leaf pages
//! swap page numbers among themselves so that the leaves lie in the file
//! in key order, followed by the branches.
//!
//! Pages get their numbers when they are allocated, in the order splits
//! happen, so a tree loaded in random key order has its leaves scattered
//! over the file, as LMDB's are: a full scan then jumps between pages at
//! random and runs at half the speed of reading memory (1.5x the time of
//! summing the mapped file, against 0.98x for leaves in key order, see
//! docs/benchmarks.md), and from a cold page cache it reads the disk at
//! random. Nothing else changes: the set of page numbers the transaction
//! uses is the same, so the free list, the file's end and every other
//! page are untouched; only the pages' own headers, their parents'
//! pointers and the root move. Readers never saw these pages (they are
//! this transaction's), and the file format has no notion of order.
//!
//! The walk reads every child pointer of every dirty branch, and moving a
//! page costs about 1,000 instructions, so it runs only when the dirty
//! pages are at least half of the tree's pages and the transaction put at
//! least [`PUTS_PER_PAGE`] items per page of the tree: a bulk load of
//! 100-byte values pays 31 instructions per put (1.1%); a commit of 1000
//! random puts into a large tree, one page each, is left alone (the pages
//! come from the free list, scattered anyway). A transaction that spilled
//! pages to the file keeps its numbering (a spilled page was written at
//! its number already).

use crate::error::Result;
use crate::format::meta::DbRecord;
use crate::format::page::{edit, Page, P_INVALID};
use crate::pager::{Pager, PgnoMap};
use crate::tree::read::MAX_DEPTH;

/// Below this many leaf pages a tree is left as it is: too few pages for
/// their order to matter.
const PLACE_MIN_LEAVES: u64 = 16;

/// Puts per page of the tree a transaction must have made for its tree to
/// be placed.
const PUTS_PER_PAGE: u64 = 8;

/// Renumber the dirty pages of the tree `rec` (not of the trees hanging
/// from its leaves) in key order, if it was mostly rewritten; returns the
/// root's page number now. Page numbers are only exchanged among the
/// tree's dirty pages. Sub-database records in its leaves stay as they
/// are (the trees they point at are not part of the walk).
pub(crate) fn place(pager: &mut Pager<'_>, rec: &DbRecord) -> Result<u64> {
    let root = rec.root;
    if root == P_INVALID
        || rec.leaf_pages < PLACE_MIN_LEAVES
        || pager.spills != 0
        || pager.dirty.in_child()
        || rec.leaf_pages + rec.branch_pages > 2 * pager.dirty.len() as u64
        || rec.leaf_pages + rec.branch_pages > pager.puts / PUTS_PER_PAGE
        || !pager.dirty.contains_key(&root)
    {
        return Ok(root);
    }
    let mut leaves = Vec::with_capacity(rec.leaf_pages.min(pager.dirty.len() as u64) as usize);
    let mut branches = Vec::new();
    if !walk(pager, root, 0, &mut leaves, &mut branches) {
        return Ok(root);
    }
    let mut order = leaves;
    let leaf_count = order.len();
    order.extend_from_slice(&branches);
    let mut nums = order.clone();
    nums.sort_unstable();
    // A page met twice would take two numbers: leave such a tree alone.
    if order == nums || nums.windows(2).any(|w| w[0] == w[1]) {
        return Ok(root);
    }
    let remap: PgnoMap<u64> = order.iter().copied().zip(nums.iter().copied()).collect();
    // Pointers first, under the old numbers: a branch's children are
    // found by the numbers its nodes hold now.
    let mut kids = Vec::new();
    for &pg in &order[leaf_count..] {
        let Some(buf) = pager.dirty.get_mut(&pg) else {
            continue;
        };
        kids.clear();
        let p = Page::new(buf)?;
        for i in 0..p.len() {
            kids.push(p.child(i)?);
        }
        for (i, child) in kids.iter().enumerate() {
            if let Some(&to) = remap.get(child) {
                edit::set_child(buf, i, to);
            }
        }
    }
    let mut moved = Vec::with_capacity(order.len());
    for &pg in &order {
        if let Some(mut buf) = pager.dirty.remove(&pg) {
            let to = remap[&pg];
            edit::set_pgno(&mut buf, to);
            moved.push((to, buf));
        }
    }
    for (to, buf) in moved {
        pager.dirty.insert(to, buf);
    }
    // Caches holding page numbers of this transaction are stale now.
    pager.forget_paths();
    Ok(remap.get(&root).copied().unwrap_or(root))
}

/// Collect the dirty pages under `pg`: leaves in key order, branches in
/// the order met. A clean page is passed over (nothing under it is dirty:
/// copy-on-write dirties a page's parents first). False when a page is not
/// what a tree page should be: then nothing is placed (the commit goes on;
/// checking trees is not this walk's work).
fn walk(
    pager: &Pager<'_>,
    pg: u64,
    depth: usize,
    leaves: &mut Vec<u64>,
    branches: &mut Vec<u64>,
) -> bool {
    if depth >= MAX_DEPTH {
        return false;
    }
    let Some(b) = pager.dirty.get(&pg) else {
        return true;
    };
    let Ok(p) = Page::new(b) else {
        return false;
    };
    if p.is_branch() {
        branches.push(pg);
        (0..p.len()).all(|i| match p.child(i) {
            Ok(c) => walk(pager, c, depth + 1, leaves, branches),
            Err(_) => false,
        })
    } else if p.is_leaf() {
        leaves.push(pg);
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, Env, WriteFlags};

    /// A transaction's dirty tree, bulk-loaded in random order: placed, its
    /// leaves come out in key order; with one branch pointing twice at the
    /// same child (a tree no writer makes), nothing is renumbered.
    #[test]
    fn places_a_bulk_load_and_leaves_a_malformed_tree_alone() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::open(dir.path()).unwrap();
        let load = |w: &mut crate::RwTxn<'_>| {
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..5000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.put(
                    Database::MAIN,
                    &x.to_be_bytes(),
                    &[7u8; 100],
                    WriteFlags::EMPTY,
                )
                .unwrap();
            }
        };
        let leaves_of = |w: &crate::RwTxn<'_>, root: u64| {
            let p = Page::new(w.pg.dirty.get(&root).unwrap()).unwrap();
            (0..p.len())
                .map(|i| p.child(i).unwrap())
                .collect::<Vec<u64>>()
        };

        let mut w = env.write_txn().unwrap();
        load(&mut w);
        let rec = w.rec(Database::MAIN).unwrap();
        assert_eq!(rec.depth, 2, "one branch above the leaves");
        let before = leaves_of(&w, rec.root);
        assert!(
            !before.windows(2).all(|p| p[0] < p[1]),
            "split order is not key order"
        );
        let root = place(&mut w.pg, &rec).unwrap();
        let after = leaves_of(&w, root);
        assert!(after.windows(2).all(|p| p[0] < p[1]), "{after:?}");
        // The branch takes part: leaves first, then it.
        assert!(after.iter().all(|&l| l < root));
        let (mut a, mut b) = (before.clone(), after.clone());
        a.push(rec.root);
        b.push(root);
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "the same page numbers, exchanged");
        drop(w);

        let mut w = env.write_txn().unwrap();
        load(&mut w);
        let rec = w.rec(Database::MAIN).unwrap();
        let first = leaves_of(&w, rec.root)[0];
        edit::set_child(w.pg.dirty.get_mut(&rec.root).unwrap(), 1, first);
        let before = leaves_of(&w, rec.root);
        assert_eq!(place(&mut w.pg, &rec).unwrap(), rec.root);
        assert_eq!(leaves_of(&w, rec.root), before);
    }
}
