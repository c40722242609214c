//! Spilling: a write transaction whose dirty pages exceed its budget
//! writes half of them to the data file before commit (as LMDB spills), so
//! that its memory stays bounded however much it writes.
//!
//! A spilled page sits at its own page number in the file, which no
//! snapshot can see (it was allocated by this transaction), and is read
//! back through the map like a committed page. Changed again, it becomes
//! dirty in place (`unspill`: no copy-on-write, no new number); freed, it
//! is the transaction's own (loose). The commit's sync of the data file
//! makes the spilled pages durable with the rest. Spilling happens only
//! between operations (no page an operation holds goes away under it),
//! never while a nested transaction is open (its abort restores dirty
//! pages, not spilled ones), and not in WAL mode (a commit's record holds
//! all its pages) or under WRITE_MAP.

use super::{DirtyPath, Pager};
use crate::error::Result;
use crate::format::page::{flags_of, is_overflow, overflow_pages_of, HDR, P_BRANCH, P_OVERFLOW};

/// Operations between two evictions of what reads mapped in.
const EVICT_EVERY: u32 = 4096;

/// Page buffers kept for reuse after a spill, at most.
const SPARE_AFTER_SPILL: usize = 1024;

impl Pager<'_> {
    /// Before an operation: spill if the dirty pages exceed the budget.
    #[inline]
    pub(crate) fn maybe_spill(&mut self) -> Result<()> {
        if self.spill_at != 0 {
            if self.dirty.bytes() > self.spill_at {
                self.spill()?;
            } else if !self.spilled.is_empty() {
                self.since_evict += 1;
                if self.since_evict >= EVICT_EVERY {
                    self.evict_own();
                }
            }
        }
        Ok(())
    }

    /// Let go of this transaction's pages past the base snapshot's end that
    /// reads mapped into this process (the kernel maps a fault's whole
    /// folio, up to megabytes of freshly written file): the resident set
    /// keeps to the budget. Only pages no snapshot can see; their contents
    /// stay in the file.
    fn evict_own(&mut self) {
        self.since_evict = 0;
        let ps = self.env.psize;
        let from = (self.base.last_pgno as usize + 1) * ps;
        let to = self.next_pgno as usize * ps;
        self.map.evict(from, to.saturating_sub(from));
    }

    /// Write half of the dirty bytes to the data file and drop their
    /// buffers: leaves and overflow runs (branches are on every path), not
    /// the path last changed.
    #[cold]
    #[inline(never)]
    fn spill(&mut self) -> Result<()> {
        if self.dirty.in_child() {
            return Ok(());
        }
        let keep = if self.dirty_path.lost == self.lost {
            &self.dirty_path.pg[..self.dirty_path.len]
        } else {
            &[]
        };
        // Overflow runs first (a value is rarely read again in the same
        // transaction; a leaf is, at every put below it), then leaves.
        let mut want = self.dirty.bytes() / 2;
        let mut pgs = Vec::new();
        for runs in [true, false] {
            for (pg, b) in self.dirty.iter() {
                if want == 0 {
                    break;
                }
                let flags = flags_of(b);
                if (flags & P_OVERFLOW != 0) == runs && flags & P_BRANCH == 0 && !keep.contains(pg)
                {
                    pgs.push(*pg);
                    want = want.saturating_sub(b.len());
                }
            }
        }
        super::sort_pgnos(&mut pgs, false);
        let ps = self.env.psize;
        {
            let runs: Vec<(u64, &[u8])> = pgs.iter().map(|pg| (*pg, &self.dirty[pg][..])).collect();
            self.env.file.write_pages(ps, &runs)?;
        }
        for pg in pgs {
            if let Some(b) = self.dirty.remove(&pg) {
                if b.len() == ps && self.spare.len() < SPARE_AFTER_SPILL {
                    self.spare.push(b);
                }
            }
            self.spilled.insert(pg, ());
        }
        self.evict_own();
        // Cached paths assumed their pages dirty.
        self.lost += 1;
        self.moves += 1;
        self.append = None;
        self.dirty_path = DirtyPath::NONE;
        self.spills += 1;
        Ok(())
    }

    /// Make spilled page (or overflow run) `pg` dirty again in place;
    /// `false` if it is not a spilled page that is clean now.
    pub(crate) fn unspill(&mut self, pg: u64) -> Result<bool> {
        if self.spilled.is_empty()
            || !self.spilled.contains_key(&pg)
            || self.dirty.contains_key(&pg)
        {
            return Ok(false);
        }
        let ps = self.env.psize;
        let head = self.committed(pg, HDR)?;
        let n = if is_overflow(head) {
            overflow_pages_of(head).max(1)
        } else {
            1
        };
        let mut buf = if n == 1 {
            self.take_buf()
        } else {
            vec![0u8; n * ps].into_boxed_slice()
        };
        buf.copy_from_slice(self.committed(pg, n * ps)?);
        // Read back from the file: checked as `copy_to_new` checks a page.
        if n == 1 && !is_overflow(&buf) {
            crate::format::page::Page::new(&buf)?;
        }
        self.dirty.insert(pg, buf);
        Ok(true)
    }
}
