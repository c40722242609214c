//! The tree walk: every page of a tree from its root, with an explicit stack
//! (never deeper than LMDB's cursor), page headers and types, depths, branch
//! pages and their children, leaf pages and what each leaf node holds (a
//! value, an overflow run, a named DB's record, a sub-page or a duplicate
//! sub-DB, walked in turn).

use std::rc::Rc;

use super::node::{Frame, Kind, TreeSpec, WalkState};
use super::pages::{Checker, What};
use super::report::{hex, Counts};
use crate::format::bytes::{get64, sub};
use crate::format::cmp::Order;
use crate::format::flags::{DUPFIXED, DUPSORT, INTEGERDUP, INTEGERKEY};
use crate::format::meta::{DbRecord, DB_RECORD_LEN};
use crate::format::page::{
    Header, F_BIGDATA, F_DUPDATA, F_SUBDATA, HDR, P_BRANCH, P_INVALID, P_LEAF, P_LEAF2,
};

/// Deepest tree followed (LMDB's cursor stack).
pub(super) const MAX_DEPTH: u16 = crate::format::meta::MAX_DEPTH as u16;
/// Flags of a LEAF2 file page.
const P_LEAF2_PAGE: u16 = P_LEAF | P_LEAF2;

impl<'a> Checker<'a> {
    /// Walk one tree, checking it, and return its recounted figures.
    pub(super) fn walk_tree(&mut self, spec: &TreeSpec, rec: &DbRecord) -> Counts {
        let mut c = Counts::default();
        let owner = self.add_owner(&spec.name);
        if rec.root == P_INVALID {
            self.compare_counts(spec, rec, &c);
            return c;
        }
        if rec.root < 2 || rec.root > self.last_pgno {
            self.problem(
                Some(spec.rec_pgno),
                &spec.name,
                format!("root page {} is outside 2..={}", rec.root, self.last_pgno),
            );
            return c;
        }
        let mut ws = WalkState {
            last_key: None,
            last_key_pgno: 0,
            int_size: if spec.kind == Kind::Free {
                Some(8)
            } else {
                None
            },
            int_size_reported: false,
            leaf_level: None,
        };
        let mut stack = vec![Frame {
            pgno: rec.root,
            parent: None,
            level: 1,
            lo: None,
            hi: None,
        }];
        while let Some(f) = stack.pop() {
            self.visit(spec, rec, owner, &mut ws, &mut c, &mut stack, f);
        }
        self.compare_counts(spec, rec, &c);
        c
    }

    pub(super) fn compare_counts(&mut self, spec: &TreeSpec, rec: &DbRecord, c: &Counts) {
        let pairs = [
            ("depth", u64::from(rec.depth), u64::from(c.depth)),
            ("branch_pages", rec.branch_pages, c.branch),
            ("leaf_pages", rec.leaf_pages, c.leaf),
            ("overflow_pages", rec.overflow_pages, c.overflow),
            ("entries", rec.entries, c.entries),
        ];
        for (what, stored, counted) in pairs {
            if stored != counted {
                self.problem(
                    Some(spec.rec_pgno),
                    &spec.name,
                    format!("record says {what} = {stored}, recounted {counted}"),
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn visit(
        &mut self,
        spec: &TreeSpec,
        rec: &DbRecord,
        owner: u32,
        ws: &mut WalkState,
        c: &mut Counts,
        stack: &mut Vec<Frame>,
        f: Frame,
    ) {
        let pg = f.pgno;
        let from = f.parent.unwrap_or(spec.rec_pgno);
        let name = spec.name.as_str();
        if pg < 2 || pg > self.last_pgno {
            self.problem(
                Some(from),
                name,
                format!("reference to page {pg}, outside 2..={}", self.last_pgno),
            );
            return;
        }
        if !self.claim(pg, owner, What::Tree, name, from) {
            return;
        }
        let page = match self.page(pg) {
            Some(p) => p,
            None => {
                self.problem(
                    Some(pg),
                    name,
                    format!(
                        "page is past the end of the file ({} pages), referenced from page {from}",
                        self.file_pages
                    ),
                );
                return;
            }
        };
        let h = Header::read(page).unwrap_or_default();
        if h.pgno != pg {
            let hdr_pgno = h.pgno;
            self.problem(Some(pg), name, format!("page header says pgno {hdr_pgno}"));
        }
        let flags = h.flags;
        let (lower, upper) = (h.lower as usize, h.upper as usize);
        let is_branch = match flags {
            P_BRANCH => true,
            P_LEAF | P_LEAF2_PAGE => false,
            _ => {
                self.problem(
                    Some(pg),
                    name,
                    format!(
                        "unexpected page flags 0x{flags:04x} for a tree page (referenced from page {from})"
                    ),
                );
                return;
            }
        };
        c.depth = c.depth.max(f.level);
        if is_branch {
            c.branch += 1;
        } else {
            c.leaf += 1;
        }
        let exp_depth = if (1..=MAX_DEPTH).contains(&rec.depth) {
            Some(rec.depth)
        } else {
            None
        };
        match (exp_depth, is_branch) {
            (Some(d), true) if f.level >= d => self.problem(
                Some(pg),
                name,
                format!(
                    "branch page at level {}, but the tree depth is {d}",
                    f.level
                ),
            ),
            (Some(d), false) if f.level != d => self.problem(
                Some(pg),
                name,
                format!("leaf page at level {}, but the tree depth is {d}", f.level),
            ),
            (None, false) => match ws.leaf_level {
                None => ws.leaf_level = Some(f.level),
                Some(l) if l != f.level => self.problem(
                    Some(pg),
                    name,
                    format!("leaf page at level {}, other leaves at level {l}", f.level),
                ),
                _ => {}
            },
            _ => {}
        }
        if !is_branch {
            let is_leaf2 = flags & P_LEAF2 != 0;
            if is_leaf2 != spec.leaf2 {
                let msg = if is_leaf2 {
                    "LEAF2 page in a tree that is not a DUPFIXED duplicate tree"
                } else {
                    "plain leaf page in a DUPFIXED duplicate tree (LEAF2 expected)"
                };
                self.problem(Some(pg), name, msg.to_string());
                return;
            }
        }
        if lower < HDR || lower & 1 != 0 || lower > upper || upper > self.psize {
            self.problem(
                Some(pg),
                name,
                format!(
                    "bad lower/upper {lower}/{upper} (need 16 <= lower <= upper <= {}, lower even)",
                    self.psize
                ),
            );
            return;
        }
        let n = (lower - HDR) / 2;
        if is_branch {
            self.visit_branch(spec, ws, stack, &f, page, n, upper);
        } else if flags & P_LEAF2 != 0 {
            self.visit_leaf2(spec, ws, c, &f, page, n);
        } else {
            self.visit_leaf(spec, owner, ws, c, &f, page, n, upper);
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn visit_branch(
        &mut self,
        spec: &TreeSpec,
        ws: &mut WalkState,
        stack: &mut Vec<Frame>,
        f: &Frame,
        page: &[u8],
        n: usize,
        upper: usize,
    ) {
        let pg = f.pgno;
        let name = spec.name.as_str();
        if n == 0 {
            self.problem(Some(pg), name, "branch page has no nodes".to_string());
            return;
        }
        let mut children: Vec<(u64, Option<Rc<[u8]>>)> = Vec::with_capacity(n);
        let mut extents = Vec::with_capacity(n);
        let mut order_ok = true;
        let mut prev: Option<Rc<[u8]>> = None;
        for i in 0..n {
            let nd = match self.node_at(name, pg, page, i, upper, false) {
                Some(nd) => nd,
                None => continue,
            };
            extents.push((nd.off, nd.end, i));
            let child = nd.h.child();
            if i == 0 {
                // Node 0's key means "minus infinity"; LMDB leaves it empty.
                children.push((child, None));
                continue;
            }
            let key = match sub(page, nd.koff, nd.ksize) {
                Some(k) => k,
                None => continue,
            };
            if order_ok {
                order_ok = self.check_key(spec, ws, f, i, key, prev.as_deref(), "separator");
            } else if spec.key_cmp == Order::Integer {
                self.check_int_size(name, pg, ws, key);
            }
            let k: Rc<[u8]> = Rc::from(key);
            prev = Some(k.clone());
            children.push((child, Some(k)));
        }
        self.check_packing(name, pg, "", &mut extents, n, (upper, page.len()));
        if f.level >= MAX_DEPTH {
            self.problem(
                Some(pg),
                name,
                format!("tree is deeper than {MAX_DEPTH} levels; children not followed"),
            );
            return;
        }
        for j in (0..children.len()).rev() {
            let lo = children[j].1.clone().or_else(|| f.lo.clone());
            let hi = children
                .get(j + 1)
                .and_then(|c| c.1.clone())
                .or_else(|| f.hi.clone());
            stack.push(Frame {
                pgno: children[j].0,
                parent: Some(pg),
                level: f.level + 1,
                lo,
                hi,
            });
        }
    }

    pub(super) fn visit_leaf2(
        &mut self,
        spec: &TreeSpec,
        ws: &mut WalkState,
        c: &mut Counts,
        f: &Frame,
        page: &[u8],
        n: usize,
    ) {
        let pg = f.pgno;
        let name = spec.name.as_str();
        let pad = Header::read(page).unwrap_or_default().pad as usize;
        if pad == 0 {
            self.problem(Some(pg), name, "LEAF2 page with key size 0".to_string());
            return;
        }
        if spec.fixed_size != 0 && pad != spec.fixed_size as usize {
            self.problem(
                Some(pg),
                name,
                format!(
                    "LEAF2 key size {pad} differs from the record's value size {}",
                    spec.fixed_size
                ),
            );
        }
        let max_n = (self.psize - HDR) / pad;
        let mut n = n;
        if n > max_n {
            self.problem(
                Some(pg),
                name,
                format!("LEAF2 page claims {n} keys of {pad} bytes; at most {max_n} fit"),
            );
            n = max_n;
        }
        if n == 0 {
            self.problem(Some(pg), name, "leaf page has no keys".to_string());
            return;
        }
        let mut order_ok = true;
        for i in 0..n {
            let key = match sub(page, HDR + i * pad, pad) {
                Some(k) => k,
                None => break,
            };
            let prev = if i > 0 {
                sub(page, HDR + (i - 1) * pad, pad)
            } else {
                None
            };
            if order_ok {
                order_ok = self.check_key(spec, ws, f, i, key, prev, "key");
            }
            if i == 0 {
                self.check_across(spec, ws, pg, key);
            }
            c.entries += 1;
        }
        if let Some(last) = sub(page, HDR + (n - 1) * pad, pad) {
            ws.last_key = Some(last.to_vec());
            ws.last_key_pgno = pg;
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn visit_leaf(
        &mut self,
        spec: &TreeSpec,
        owner: u32,
        ws: &mut WalkState,
        c: &mut Counts,
        f: &Frame,
        page: &'a [u8],
        n: usize,
        upper: usize,
    ) {
        let pg = f.pgno;
        let name = spec.name.as_str();
        if n == 0 {
            self.problem(Some(pg), name, "leaf page has no nodes".to_string());
            return;
        }
        let mut extents = Vec::with_capacity(n);
        let mut order_ok = true;
        let mut prev: Option<&[u8]> = None;
        let mut first = true;
        for i in 0..n {
            let nd = match self.node_at(name, pg, page, i, upper, true) {
                Some(nd) => nd,
                None => continue,
            };
            extents.push((nd.off, nd.end, i));
            let key = match sub(page, nd.koff, nd.ksize) {
                Some(k) => k,
                None => continue,
            };
            if key.is_empty() && spec.kind != Kind::Dup {
                self.problem(Some(pg), name, format!("key {i} is empty"));
            }
            if order_ok {
                order_ok = self.check_key(spec, ws, f, i, key, prev, "key");
            } else if spec.key_cmp == Order::Integer {
                self.check_int_size(name, pg, ws, key);
            }
            if first {
                self.check_across(spec, ws, pg, key);
                first = false;
            }
            prev = Some(key);
            let stored = nd.end - nd.doff;
            let data = sub(page, nd.doff, stored).unwrap_or(&[]);
            self.leaf_data(spec, owner, c, pg, i, key, nd.h.flags, nd.h.dsize(), data);
        }
        self.check_packing(name, pg, "", &mut extents, n, (upper, page.len()));
        if let Some(k) = prev {
            ws.last_key = Some(k.to_vec());
            ws.last_key_pgno = pg;
        }
    }

    /// Check the data part of leaf node `i` and count its entries.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn leaf_data(
        &mut self,
        spec: &TreeSpec,
        owner: u32,
        c: &mut Counts,
        pg: u64,
        i: usize,
        key: &[u8],
        nflags: u16,
        dsize: usize,
        data: &'a [u8],
    ) {
        let name = spec.name.as_str();
        let dupsort = spec.flags & DUPSORT != 0 && matches!(spec.kind, Kind::Main | Kind::Named);
        if nflags & !(F_BIGDATA | F_SUBDATA | F_DUPDATA) != 0 {
            self.problem(
                Some(pg),
                name,
                format!("node {i} has unknown flags 0x{nflags:04x}"),
            );
            c.entries += 1;
            return;
        }
        if nflags & F_BIGDATA != 0 {
            if nflags != F_BIGDATA {
                self.problem(
                    Some(pg),
                    name,
                    format!("node {i} combines BIGDATA with other flags (0x{nflags:04x})"),
                );
            }
            if dupsort || spec.kind == Kind::Dup {
                self.problem(
                    Some(pg),
                    name,
                    format!("node {i}: overflow value in a DUPSORT database"),
                );
            }
            let first = get64(data, 0).unwrap_or(0);
            let (pages, val) = self.overflow(name, owner, pg, i, first, dsize);
            c.overflow += pages;
            if spec.kind == Kind::Free {
                if let Some(v) = val {
                    self.free_record(pg, key, v);
                }
            }
            c.entries += 1;
            return;
        }
        if 8 + key.len() + dsize > self.nodemax {
            self.problem(
                Some(pg),
                name,
                format!(
                    "node {i} holds {} bytes inline, more than the node limit {}",
                    8 + key.len() + dsize,
                    self.nodemax
                ),
            );
        }
        match spec.kind {
            Kind::Free => {
                if nflags != 0 {
                    self.problem(
                        Some(pg),
                        name,
                        format!("free-DB node {i} has flags 0x{nflags:04x}"),
                    );
                } else {
                    self.free_record(pg, key, data);
                }
                c.entries += 1;
            }
            Kind::Dup => {
                if nflags != 0 || dsize != 0 {
                    self.problem(
                        Some(pg),
                        name,
                        format!(
                            "duplicate-tree node {i} has flags 0x{nflags:04x} and data size {dsize}, expected 0 and 0"
                        ),
                    );
                }
                c.entries += 1;
            }
            Kind::Main | Kind::Named => match nflags {
                0 => c.entries += 1,
                F_SUBDATA => {
                    c.entries += 1;
                    if spec.kind != Kind::Main || dupsort {
                        self.problem(
                            Some(pg),
                            name,
                            format!(
                                "node {i} is a named-DB record (F_SUBDATA) outside a non-DUPSORT main DB"
                            ),
                        );
                    } else if dsize != DB_RECORD_LEN {
                        self.problem(
                            Some(pg),
                            name,
                            format!("named-DB node {i} has data size {dsize}, expected 48"),
                        );
                    } else if let Ok(r) = DbRecord::read(data) {
                        self.named.push((key.to_vec(), r, pg));
                    }
                }
                F_DUPDATA => {
                    if !dupsort {
                        self.problem(
                            Some(pg),
                            name,
                            format!("node {i} has F_DUPDATA in a DB without DUPSORT"),
                        );
                        c.entries += 1;
                    } else {
                        c.entries += self.check_subpage(spec, pg, key, data);
                    }
                }
                _ => {
                    // F_SUBDATA | F_DUPDATA: a duplicate sub-DB.
                    if !dupsort {
                        self.problem(
                            Some(pg),
                            name,
                            format!("node {i} has a dup sub-DB in a DB without DUPSORT"),
                        );
                        c.entries += 1;
                    } else if dsize != DB_RECORD_LEN {
                        self.problem(
                            Some(pg),
                            name,
                            format!("dup sub-DB node {i} has data size {dsize}, expected 48"),
                        );
                        c.entries += 1;
                    } else if let Ok(r) = DbRecord::read(data) {
                        c.entries += self.walk_dup_tree(spec, pg, key, &r);
                    }
                }
            },
        }
    }

    /// Walk a key's duplicate sub-DB; returns its recounted entries.
    pub(super) fn walk_dup_tree(
        &mut self,
        parent: &TreeSpec,
        pg: u64,
        key: &[u8],
        r: &DbRecord,
    ) -> u64 {
        let sub_name = format!("{}/dup:{}", parent.name, hex(key));
        let fixed = parent.flags & DUPFIXED != 0;
        let expect = if fixed {
            DUPFIXED
                | if parent.flags & INTEGERDUP != 0 {
                    INTEGERKEY
                } else {
                    0
                }
        } else {
            0
        };
        if r.flags != expect {
            self.problem(
                Some(pg),
                &sub_name,
                format!(
                    "dup sub-DB record has flags 0x{:04x}, expected 0x{expect:04x}",
                    r.flags
                ),
            );
        }
        if fixed && r.pad == 0 {
            // LMDB takes a DUPFIXED sub-DB's value size from this field, not
            // from its pages: it would read every value as empty.
            self.problem(
                Some(pg),
                &sub_name,
                "DUPFIXED dup sub-DB record has value size (md_pad) 0: LMDB reads every value of this key as empty".to_string(),
            );
        }
        let spec = TreeSpec {
            name: sub_name,
            kind: Kind::Dup,
            flags: parent.flags,
            key_cmp: Order::of_dups(parent.flags),
            leaf2: fixed,
            fixed_size: if fixed { r.pad } else { 0 },
            rec_pgno: pg,
        };
        let sc = self.walk_tree(&spec, r);
        if sc.entries == 0 {
            self.problem(
                Some(pg),
                &spec.name,
                "dup sub-DB holds no values".to_string(),
            );
        }
        sc.entries
    }
}
