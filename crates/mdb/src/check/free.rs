//! The free list: the records of the free database (txnid, then a count and
//! the page numbers, strictly descending), and the pages they list claimed
//! once every tree has been walked.

use super::pages::{Checker, What};
use crate::format::bytes::get64;

impl<'a> Checker<'a> {
    /// Check one free-DB record (`key` = txnid, `val` = ID list).
    pub(super) fn free_record(&mut self, pg: u64, key: &[u8], val: &[u8]) {
        let txn = match get64(key, 0) {
            Some(t) if key.len() == 8 => t,
            _ => return, // key size already reported
        };
        if txn > self.txnid {
            self.problem(
                Some(pg),
                "FREE",
                format!(
                    "free record {txn} is newer than the snapshot's txnid {}",
                    self.txnid
                ),
            );
        }
        let count = match get64(val, 0) {
            Some(c) => c,
            None => {
                self.problem(
                    Some(pg),
                    "FREE",
                    format!(
                        "free record {txn} is {} bytes, too short for a count",
                        val.len()
                    ),
                );
                return;
            }
        };
        let room = crate::format::freelist::capacity(val.len()) as u64;
        if count > room {
            self.problem(
                Some(pg),
                "FREE",
                format!("free record {txn} claims {count} pages but has room for {room}"),
            );
            return;
        }
        self.free_pages += count;
        let mut prev: Option<u64> = None;
        let mut order_reported = false;
        for j in 0..count as usize {
            let p = match get64(val, 8 + 8 * j) {
                Some(p) => p,
                None => break,
            };
            if let Some(q) = prev {
                if p >= q && !order_reported {
                    order_reported = true;
                    self.problem(
                        Some(pg),
                        "FREE",
                        format!("free record {txn} is not strictly descending: {p} follows {q}"),
                    );
                }
            }
            prev = Some(p);
            if p < 2 || p > self.last_pgno {
                self.problem(
                    Some(pg),
                    "FREE",
                    format!(
                        "free record {txn} lists page {p}, outside 2..={}",
                        self.last_pgno
                    ),
                );
                continue;
            }
            self.free_entries.push((p, txn, pg));
        }
    }

    /// Register every free-list entry, reporting pages also used elsewhere.
    pub(super) fn claim_free_entries(&mut self) {
        let owner = self.add_owner("FREE");
        let entries = std::mem::take(&mut self.free_entries);
        for (p, txn, pg) in entries {
            self.claim(p, owner, What::Free(txn), "FREE", pg);
        }
    }
}
