//! Nodes and keys: a node's bounds inside its page, how a page's nodes are
//! packed, and key order inside a page, across pages and against the
//! parent's separators, under the tree's comparator.

use std::cmp::Ordering;
use std::rc::Rc;

use super::pages::Checker;
use super::report::show;
use crate::format::cmp::Order;
use crate::format::page::{node_offset, NodeHeader, NODE_HDR};

/// Which kind of tree a walk is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Free,
    Main,
    Named,
    Dup,
}

pub(super) struct TreeSpec {
    pub(super) name: String,
    pub(super) kind: Kind,
    /// The DB's flags; for a dup sub-DB, the flags of the DB owning it.
    pub(super) flags: u16,
    pub(super) key_cmp: Order,
    /// Leaves must be LEAF2 pages (DUPFIXED sub-DB).
    pub(super) leaf2: bool,
    /// Expected LEAF2 key size (0 = unknown).
    pub(super) fixed_size: u32,
    /// Page holding this tree's record.
    pub(super) rec_pgno: u64,
}

pub(super) struct Frame {
    pub(super) pgno: u64,
    pub(super) parent: Option<u64>,
    pub(super) level: u16,
    /// Keys on this page must be >= lo (separator of this page in its parent).
    pub(super) lo: Option<Rc<[u8]>>,
    /// Keys on this page must be < hi (separator of the next page).
    pub(super) hi: Option<Rc<[u8]>>,
}

/// State of one tree walk.
pub(super) struct WalkState {
    pub(super) last_key: Option<Vec<u8>>,
    pub(super) last_key_pgno: u64,
    pub(super) int_size: Option<usize>,
    pub(super) int_size_reported: bool,
    pub(super) leaf_level: Option<u16>,
}

/// A node header bounds-checked against its page.
pub(super) struct Node {
    pub(super) off: usize,
    pub(super) h: NodeHeader,
    pub(super) koff: usize,
    pub(super) ksize: usize,
    /// Leaf only: offset of the stored data (dsize bytes, or 8 for BIGDATA).
    pub(super) doff: usize,
    /// End of the node (exclusive).
    pub(super) end: usize,
}

impl<'a> Checker<'a> {
    /// Decode node `i` of a branch or leaf page and bounds-check it.
    pub(super) fn node_at(
        &mut self,
        name: &str,
        pg: u64,
        page: &[u8],
        i: usize,
        upper: usize,
        leaf: bool,
    ) -> Option<Node> {
        let size = page.len();
        let off = node_offset(page, i)?;
        if off < upper || off + NODE_HDR > size || off & 1 != 0 {
            self.problem(
                Some(pg),
                name,
                format!("node {i} offset {off} is outside the node area {upper}..{size} or odd"),
            );
            return None;
        }
        let h = NodeHeader::read(page, off)?;
        let ksize = h.ksize as usize;
        let stored = h.stored(leaf);
        let koff = off + NODE_HDR;
        let doff = koff + ksize;
        let end = doff.checked_add(stored)?;
        if end > size {
            self.problem(
                Some(pg),
                name,
                format!(
                    "node {i} at offset {off} (key {ksize} bytes, data {stored} bytes) runs past the page end"
                ),
            );
            return None;
        }
        Some(Node {
            off,
            h,
            koff,
            ksize,
            doff,
            end,
        })
    }

    /// `extents` are the (start, end, index) of the `n` nodes of a page (or
    /// sub-page) whose node area is `upper..size`. Overlapping nodes are a
    /// problem. LMDB keeps nodes packed (each rounded up to an even size), so
    /// unused bytes between them are a warning: space lost, data intact.
    pub(super) fn check_packing(
        &mut self,
        name: &str,
        pg: u64,
        what: &str,
        extents: &mut [(usize, usize, usize)],
        n: usize,
        (upper, size): (usize, usize),
    ) {
        extents.sort_unstable();
        for w in extents.windows(2) {
            if w[1].0 < w[0].1 {
                self.problem(
                    Some(pg),
                    name,
                    format!(
                        "{what}nodes {} (offset {}) and {} (offset {}) overlap",
                        w[0].2, w[0].0, w[1].2, w[1].0
                    ),
                );
                return;
            }
        }
        if extents.len() != n {
            return; // a node was unreadable (reported): gaps would be noise
        }
        let mut at = upper;
        let mut lost = 0;
        let mut first_gap = None;
        for &(start, end, i) in extents.iter() {
            if start > at {
                lost += start - at;
                first_gap.get_or_insert((at, start, i));
            }
            at = end + (end & 1);
        }
        if size > at {
            lost += size - at;
            first_gap.get_or_insert((at, size, n));
        }
        if let Some((from, to, i)) = first_gap {
            let before = if i == n {
                "the end".to_string()
            } else {
                format!("node {i}")
            };
            self.warning(
                pg,
                name,
                format!(
                    "{what}{lost} bytes of the node area {upper}..{size} belong to no node (first gap {from}..{to}, before {before}); LMDB packs nodes, so this space is lost"
                ),
            );
        }
    }

    /// Size checks for keys compared as integers.
    pub(super) fn check_int_size(&mut self, name: &str, pg: u64, ws: &mut WalkState, key: &[u8]) {
        if ws.int_size_reported {
            return;
        }
        let bad = match ws.int_size {
            Some(s) => key.len() != s,
            None => {
                if key.len() == 4 || key.len() == 8 {
                    ws.int_size = Some(key.len());
                    false
                } else {
                    true
                }
            }
        };
        if bad {
            ws.int_size_reported = true;
            let want = match ws.int_size {
                Some(s) => format!("{s}"),
                None => "4 or 8".to_string(),
            };
            self.problem(
                Some(pg),
                name,
                format!(
                    "integer key {} has size {}, expected {want}",
                    show(key),
                    key.len()
                ),
            );
        }
    }

    /// Check a key against its page neighbour and the parent's separators.
    /// Returns false if an order problem was reported.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_key(
        &mut self,
        spec: &TreeSpec,
        ws: &mut WalkState,
        f: &Frame,
        i: usize,
        key: &[u8],
        prev: Option<&[u8]>,
        what: &str,
    ) -> bool {
        let cmp = spec.key_cmp;
        let name = spec.name.as_str();
        let pg = f.pgno;
        if cmp == Order::Integer {
            self.check_int_size(name, pg, ws, key);
        }
        if let Some(p) = prev {
            if cmp.compare(p, key) != Ordering::Less {
                self.problem(
                    Some(pg),
                    name,
                    format!(
                        "{what} {i} {} is not greater than {what} {} {}",
                        show(key),
                        i.saturating_sub(1),
                        show(p)
                    ),
                );
                return false;
            }
        }
        let parent = f.parent.unwrap_or(spec.rec_pgno);
        if let Some(lo) = &f.lo {
            if cmp.compare(key, lo) == Ordering::Less {
                self.problem(
                    Some(pg),
                    name,
                    format!(
                        "{what} {i} {} is below this page's separator {} in parent page {parent}",
                        show(key),
                        show(lo)
                    ),
                );
                return false;
            }
        }
        if let Some(hi) = &f.hi {
            if cmp.compare(key, hi) != Ordering::Less {
                self.problem(
                    Some(pg),
                    name,
                    format!(
                        "{what} {i} {} is not below the next page's separator {} in parent page {parent}",
                        show(key),
                        show(hi)
                    ),
                );
                return false;
            }
        }
        true
    }

    /// The first key of a leaf must follow the last key of the previous leaf.
    pub(super) fn check_across(&mut self, spec: &TreeSpec, ws: &WalkState, pg: u64, key: &[u8]) {
        if let Some(last) = &ws.last_key {
            if spec.key_cmp.compare(last, key) != Ordering::Less {
                self.problem(
                    Some(pg),
                    &spec.name,
                    format!(
                        "first key {} is not greater than the last key {} of the previous leaf page {}",
                        show(key),
                        show(last),
                        ws.last_key_pgno
                    ),
                );
            }
        }
    }
}
