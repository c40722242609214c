//! Overflow runs: a large value's pages after its leaf node.

use super::pages::{Checker, What};
use crate::format::page::{ov_pages, Header, HDR, P_OVERFLOW};

impl<'a> Checker<'a> {
    /// Check the overflow run referenced by leaf node `i` of page `pg`.
    /// Returns the run length to count and the value bytes if readable.
    pub(super) fn overflow(
        &mut self,
        name: &str,
        owner: u32,
        pg: u64,
        i: usize,
        first: u64,
        dsize: usize,
    ) -> (u64, Option<&'a [u8]>) {
        if first < 2 || first > self.last_pgno {
            self.problem(
                Some(pg),
                name,
                format!(
                    "node {i} references overflow page {first}, outside 2..={}",
                    self.last_pgno
                ),
            );
            return (0, None);
        }
        if !self.claim(first, owner, What::Overflow, name, pg) {
            return (0, None);
        }
        let page = match self.page(first) {
            Some(p) => p,
            None => {
                self.problem(
                    Some(first),
                    name,
                    format!("overflow page referenced from page {pg} is past the end of the file"),
                );
                return (0, None);
            }
        };
        let h = Header::read(page).unwrap_or_default();
        let hdr_pgno = h.pgno;
        if hdr_pgno != first {
            self.problem(
                Some(first),
                name,
                format!("overflow page header says pgno {hdr_pgno}"),
            );
        }
        let flags = h.flags;
        if flags != P_OVERFLOW {
            self.problem(
                Some(first),
                name,
                format!(
                    "expected an overflow page (flags 0x0004) for node {i} of page {pg}, found flags 0x{flags:04x}"
                ),
            );
            return (0, None);
        }
        let ov = u64::from(h.overflow_pages());
        if ov == 0 {
            self.problem(Some(first), name, "overflow run of 0 pages".to_string());
            return (0, None);
        }
        let need = ov_pages(self.psize, dsize) as u64;
        let mut value_ok = true;
        if ov < need {
            self.problem(
                Some(first),
                name,
                format!("overflow run of {ov} pages is too short for a value of {dsize} bytes ({need} pages)"),
            );
            value_ok = false;
        }
        let end = first.saturating_add(ov - 1);
        if end > self.last_pgno {
            self.problem(
                Some(first),
                name,
                format!(
                    "overflow run {first}..={end} extends past last_pgno {}",
                    self.last_pgno
                ),
            );
        }
        if end >= self.file_pages {
            self.problem(
                Some(first),
                name,
                format!(
                    "overflow run {first}..={end} extends past the end of the file ({} pages)",
                    self.file_pages
                ),
            );
        }
        // Bounded by the file size, so a huge ov_pages cannot blow up memory.
        let claim_end = end
            .min(self.last_pgno)
            .min(self.file_pages.saturating_sub(1));
        let mut p = first + 1;
        while p <= claim_end {
            self.claim(p, owner, What::Overflow, name, first);
            p += 1;
        }
        let val = if value_ok {
            usize::try_from(first)
                .ok()
                .and_then(|f| f.checked_mul(self.psize))
                .and_then(|off| self.src.at(off.checked_add(HDR)?, dsize))
        } else {
            None
        };
        (ov, val)
    }
}
