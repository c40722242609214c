//! The checker's state and its page accounting: each page of `2..=last_pgno`
//! must be used exactly once, by a tree page, an overflow page or a
//! free-list entry. A page claimed twice is a cycle or a shared page; a page
//! nobody claims is an orphan.

use std::collections::HashMap;

use super::report::{CheckProgress, Problem, MAX_PROBLEMS};
use super::source::Source;
use crate::format::meta::DbRecord;

/// Claims between two calls of the progress callback.
const PROGRESS_EVERY: u64 = 4096;

/// What uses a page.
#[derive(Clone, Copy, Debug)]
pub(super) enum What {
    Tree,
    Overflow,
    /// Listed in the free record of this txnid.
    Free(u64),
}

/// A page's user: which tree (an index into `Checker::owners`) and how.
#[derive(Clone, Copy, Debug)]
pub(super) struct Use {
    owner: u32,
    what: What,
}

/// Who uses each page: a slot per page the image holds (24 bytes a page, so
/// a check's memory is a small fraction of the file's size), and a map for
/// the pages a corrupt file references past its end.
#[derive(Default)]
struct Uses {
    held: Vec<Option<Use>>,
    past_end: HashMap<u64, Use>,
}

impl Uses {
    fn new(pages: u64) -> Uses {
        Uses {
            held: vec![None; usize::try_from(pages).unwrap_or(0)],
            past_end: HashMap::new(),
        }
    }

    fn get(&self, pgno: u64) -> Option<Use> {
        match usize::try_from(pgno).ok().and_then(|p| self.held.get(p)) {
            Some(u) => *u,
            None => self.past_end.get(&pgno).copied(),
        }
    }

    fn insert(&mut self, pgno: u64, u: Use) {
        match usize::try_from(pgno)
            .ok()
            .and_then(|p| self.held.get_mut(p))
        {
            Some(slot) => *slot = Some(u),
            None => {
                self.past_end.insert(pgno, u);
            }
        }
    }

    /// The used pages in ascending order.
    fn used(&self) -> impl Iterator<Item = u64> + '_ {
        let mut past: Vec<u64> = self.past_end.keys().copied().collect();
        past.sort_unstable();
        let held = self.held.iter().enumerate();
        held.filter(|(_, u)| u.is_some())
            .map(|(p, _)| p as u64)
            .chain(past)
    }
}

pub(super) struct Checker<'a> {
    pub(super) src: Source<'a>,
    pub(super) psize: usize,
    pub(super) last_pgno: u64,
    pub(super) file_pages: u64,
    pub(super) txnid: u64,
    pub(super) nodemax: usize,
    uses: Uses,
    owners: Vec<String>,
    pub(super) problems: Vec<Problem>,
    pub(super) dropped: u64,
    pub(super) warnings: Vec<Problem>,
    /// (pgno, record txnid, leaf page holding the record)
    pub(super) free_entries: Vec<(u64, u64, u64)>,
    pub(super) free_pages: u64,
    /// Named-DB records found in MAIN: (name, record, MAIN leaf page).
    pub(super) named: Vec<(Vec<u8>, DbRecord, u64)>,
    /// Told how far the check has got.
    progress: Option<&'a mut dyn FnMut(CheckProgress)>,
    /// Pages claimed so far.
    claimed: u64,
    /// Pages last told done (never less than before: the free-list entries
    /// already counted are claimed last).
    done: u64,
}

impl<'a> Checker<'a> {
    /// A checker of the snapshot `last_pgno`/`txnid` in `src`, carrying on
    /// with the problems and warnings found so far (the meta pages').
    pub(super) fn new(
        src: Source<'a>,
        psize: usize,
        (last_pgno, txnid): (u64, u64),
        (problems, warnings): (Vec<Problem>, Vec<Problem>),
        progress: Option<&'a mut dyn FnMut(CheckProgress)>,
    ) -> Checker<'a> {
        let file_pages = (src.len() / psize) as u64;
        Checker {
            src,
            psize,
            last_pgno,
            file_pages,
            txnid,
            nodemax: crate::format::page::node_max(psize),
            uses: Uses::new(file_pages.min(last_pgno.saturating_add(1))),
            owners: Vec::new(),
            problems,
            dropped: 0,
            warnings,
            free_entries: Vec::new(),
            free_pages: 0,
            named: Vec::new(),
            progress,
            claimed: 0,
            done: 0,
        }
    }

    pub(super) fn problem(&mut self, pgno: Option<u64>, db: &str, message: String) {
        if self.problems.len() >= MAX_PROBLEMS {
            self.dropped += 1;
            return;
        }
        self.problems.push(Problem {
            pgno,
            db: db.to_string(),
            message,
        });
    }

    pub(super) fn warning(&mut self, pgno: u64, db: &str, message: String) {
        if self.warnings.len() < MAX_PROBLEMS {
            self.warnings.push(Problem {
                pgno: Some(pgno),
                db: db.to_string(),
                message,
            });
        }
    }

    pub(super) fn page(&self, pgno: u64) -> Option<&'a [u8]> {
        let off = usize::try_from(pgno).ok()?.checked_mul(self.psize)?;
        self.src.at(off, self.psize)
    }

    fn describe(&self, u: Use) -> String {
        let owner = self
            .owners
            .get(u.owner as usize)
            .map(String::as_str)
            .unwrap_or("?");
        match u.what {
            What::Tree => format!("a tree page of {owner}"),
            What::Overflow => format!("an overflow page of {owner}"),
            What::Free(t) => format!("listed in free record {t}"),
        }
    }

    /// Record that `pgno` is used; report and return false if it already was.
    pub(super) fn claim(&mut self, pgno: u64, owner: u32, what: What, db: &str, from: u64) -> bool {
        if let Some(prev) = self.uses.get(pgno) {
            let now = Use { owner, what };
            let msg = format!(
                "page {pgno} is used twice: {} and {} (reached from page {from}); cycle or shared page",
                self.describe(prev),
                self.describe(now)
            );
            self.problem(Some(pgno), db, msg);
            return false;
        }
        self.uses.insert(pgno, Use { owner, what });
        self.claimed += 1;
        if self.claimed.is_multiple_of(PROGRESS_EVERY) {
            self.tell_progress(false);
        }
        true
    }

    pub(super) fn add_owner(&mut self, name: &str) -> u32 {
        self.owners.push(name.to_string());
        (self.owners.len() - 1) as u32
    }

    /// Call the progress callback: pages accounted for (the meta pages, the
    /// pages claimed, the free-list entries read) of the snapshot's pages;
    /// all of them once the check is `over`.
    pub(super) fn tell_progress(&mut self, over: bool) {
        let total = self.file_pages.min(self.last_pgno.saturating_add(1)).max(2);
        let seen = 2 + self.claimed + self.free_entries.len() as u64;
        self.done = if over { total } else { seen.min(total) }.max(self.done);
        if let Some(f) = self.progress.as_mut() {
            f(CheckProgress {
                pages_done: self.done,
                pages_total: total,
            });
        }
    }

    /// Report pages of 2..=last_pgno that nobody uses, as ranges.
    pub(super) fn find_orphans(&mut self) {
        let uses = std::mem::take(&mut self.uses);
        let mut next = 2u64;
        for p in uses.used() {
            if p > next {
                self.orphans(next, p - 1);
            }
            next = next.max(p.saturating_add(1));
        }
        if self.last_pgno >= next {
            self.orphans(next, self.last_pgno);
        }
        self.uses = uses;
    }

    fn orphans(&mut self, a: u64, b: u64) {
        let eof = if a >= self.file_pages {
            " (past the end of the file)"
        } else {
            ""
        };
        let msg = if a == b {
            format!("page {a} is neither in a tree nor in the free list{eof}")
        } else {
            format!(
                "pages {a}..={b} ({} pages) are neither in a tree nor in the free list{eof}",
                b - a + 1
            )
        };
        self.problem(Some(a), "", msg);
    }
}
