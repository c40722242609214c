//! Sub-pages: the duplicates of a key kept inside its leaf node.

use std::cmp::Ordering;

use super::node::TreeSpec;
use super::pages::Checker;
use super::report::show;
use crate::format::bytes::sub;
use crate::format::cmp::Order;
use crate::format::flags::DUPFIXED;
use crate::format::page::{
    node_offset, Header, NodeHeader, HDR, NODE_HDR, P_DIRTY, P_LEAF, P_LEAF2, P_SUBP,
};

impl<'a> Checker<'a> {
    /// Check a sub-page of duplicates; returns the number of values.
    pub(super) fn check_subpage(&mut self, spec: &TreeSpec, pg: u64, key: &[u8], sp: &[u8]) -> u64 {
        let name = spec.name.as_str();
        let fixed = spec.flags & DUPFIXED != 0;
        let cmp = Order::of_dups(spec.flags);
        let ctx = format!("sub-page of key {}", show(key));
        if sp.len() < HDR {
            self.problem(
                Some(pg),
                name,
                format!("{ctx} is {} bytes, shorter than a page header", sp.len()),
            );
            return 0;
        }
        if !sp.len().is_multiple_of(2) {
            // LMDB resizes sub-pages in place assuming an even size; an odd
            // one leaves the leaf's nodes at odd offsets after its next edit.
            self.problem(
                Some(pg),
                name,
                format!("{ctx} has an odd size of {} bytes", sp.len()),
            );
        }
        let h = Header::read(sp).unwrap_or_default();
        let flags = h.flags;
        let expect = P_LEAF | P_DIRTY | P_SUBP | if fixed { P_LEAF2 } else { 0 };
        if flags != expect {
            self.problem(
                Some(pg),
                name,
                format!("{ctx} has flags 0x{flags:04x}, expected 0x{expect:04x}"),
            );
            if flags & P_LEAF == 0 || (flags & P_LEAF2 != 0) != fixed {
                return 0;
            }
        }
        let (lower, upper) = (h.lower as usize, h.upper as usize);
        let size = sp.len();
        if lower < HDR || lower & 1 != 0 || lower > upper || upper > size {
            self.problem(
                Some(pg),
                name,
                format!("{ctx} has bad lower/upper {lower}/{upper} (size {size})"),
            );
            return 0;
        }
        let n = (lower - HDR) / 2;
        if n == 0 {
            self.problem(Some(pg), name, format!("{ctx} holds no values"));
            return 0;
        }
        let mut values: Vec<&[u8]> = Vec::with_capacity(n);
        if fixed {
            let pad = h.pad as usize;
            if pad == 0 || HDR + n * pad > size {
                self.problem(
                    Some(pg),
                    name,
                    format!("{ctx}: {n} values of {pad} bytes do not fit in {size} bytes"),
                );
                return 0;
            }
            for i in 0..n {
                if let Some(v) = sub(sp, HDR + i * pad, pad) {
                    values.push(v);
                }
            }
        } else {
            let mut extents = Vec::with_capacity(n);
            for i in 0..n {
                let off = node_offset(sp, i).unwrap_or(0);
                let nh = match NodeHeader::read(sp, off) {
                    Some(nh) if off >= upper => nh,
                    _ => {
                        self.problem(
                            Some(pg),
                            name,
                            format!("{ctx}: node {i} offset {off} outside {upper}..{size}"),
                        );
                        continue;
                    }
                };
                let ksize = nh.ksize as usize;
                let v = match sub(sp, off + NODE_HDR, ksize) {
                    Some(v) => v,
                    None => {
                        self.problem(
                            Some(pg),
                            name,
                            format!(
                                "{ctx}: node {i} value of {ksize} bytes runs past the sub-page end"
                            ),
                        );
                        continue;
                    }
                };
                if nh.lo != 0 || nh.hi != 0 || nh.flags != 0 {
                    self.problem(
                        Some(pg),
                        name,
                        format!("{ctx}: node {i} has data size/flags set"),
                    );
                }
                extents.push((off, off + NODE_HDR + ksize, i));
                values.push(v);
            }
            self.check_packing(
                name,
                pg,
                &format!("{ctx}: "),
                &mut extents,
                n,
                (upper, size),
            );
        }
        let mut size_seen: Option<usize> = None;
        for (i, v) in values.iter().enumerate() {
            if cmp == Order::Integer {
                let ok = match size_seen {
                    Some(s) => v.len() == s,
                    None => v.len() == 4 || v.len() == 8,
                };
                size_seen.get_or_insert(v.len());
                if !ok {
                    self.problem(
                        Some(pg),
                        name,
                        format!("{ctx}: integer value {i} has size {}", v.len()),
                    );
                    break;
                }
            }
            if i > 0 && cmp.compare(values[i - 1], v) != Ordering::Less {
                self.problem(
                    Some(pg),
                    name,
                    format!(
                        "{ctx}: value {i} {} is not greater than value {} {}",
                        show(v),
                        i - 1,
                        show(values[i - 1])
                    ),
                );
                break;
            }
        }
        n as u64
    }
}
