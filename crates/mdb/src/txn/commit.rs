//! Commit: write back database records, save the free list, write the
//! dirty pages, sync, then flip the meta page (lmdb-format.md §9).

use crate::db::Database;
use crate::env::EnvFlags;
use crate::error::{ErrorKind, Result};
use crate::format::meta::{DbRecord, Meta};
use crate::format::page::NodeData;
use crate::format::patch::{self, Patch};
use crate::pager::Committed;
use crate::sink::{Commit, CommitFailure, CommitSink, Pending};
use crate::tree;
use crate::tree::WriteFlags;
use crate::txn::RwTxn;

/// A page's kind (branch, leaf, overflow, LEAF2) from its flags.
fn page_kind(page: &[u8]) -> u16 {
    use crate::format::page::{flags_of, P_BRANCH, P_LEAF, P_LEAF2, P_OVERFLOW};
    flags_of(page) & (P_BRANCH | P_LEAF | P_LEAF2 | P_OVERFLOW)
}

/// Pages freed by a commit up to which each page it makes anew is
/// compared with them all, for the one it differs least from.
const OTHER_BASES: usize = 32;

impl RwTxn<'_> {
    /// Make every change durable (per the environment's sync flags) and
    /// visible to new readers. On error nothing of this transaction is
    /// visible and everything committed before it is intact.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// drop(env);
    /// let env = Env::open(dir.path())?; // durable across a reopen
    /// assert_eq!(env.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn commit(mut self) -> Result<()> {
        let during = |e: crate::error::Error| e.during_op("commit");
        if self.broken.get() {
            return Err(during(ErrorKind::BadTxn.into()));
        }
        let r = self.commit_inner();
        self.committed = r.is_ok();
        self.finish();
        // A commit the sink still makes durable and publishes (a log's
        // group commit): the next writer may begin meanwhile.
        let r = match r {
            Ok(Some(p)) => self.env.sink().wait(p).inspect_err(|_| {
                // Only a reopen can tell what the files hold now.
                self.env
                    .panicked
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }),
            r => r.map(|_| ()),
        };
        r.map_err(during)
    }

    /// [`tree::place::place`] of `db`'s tree, whose record `rec` follows
    /// (and is replaced) when the root moves.
    fn place(&mut self, db: Database, rec: &mut DbRecord) -> Result<()> {
        let root = tree::place::place(&mut self.pg, rec)?;
        if root != rec.root {
            rec.root = root;
            self.set_rec(db, *rec);
        }
        Ok(())
    }

    /// WAL mode: the one-page runs of `runs` (page numbers, sorted) told
    /// by their differences from a page of the base snapshot, where that
    /// is smaller than the page: `(pgno, base, range bytes in ranges)`.
    /// The base of a page copied on write is the page it was copied from;
    /// a page made anew (a split, a free-list record put back) is compared
    /// with the pages this commit freed, when there are few: a small
    /// commit often rewrites what it freed.
    fn diffs(
        &self,
        runs: &[(u64, &[u8])],
        ranges: &mut Vec<u8>,
    ) -> Result<Vec<(u64, u64, usize, usize)>> {
        let Some(bases) = &self.pg.bases else {
            return Ok(Vec::new());
        };
        let ps = self.env.psize;
        let last = self.pg.base.last_pgno;
        // A base is a page of the base snapshot, never one this commit
        // writes (checked: a stale entry must not name one).
        let usable = |base: u64| base >= 2 && base <= last && !self.pg.dirty.contains_key(&base);
        let freed = &self.pg.free.freed;
        let others: &[u64] = if freed.len() <= OTHER_BASES {
            freed
        } else {
            &[]
        };
        // The ranges of the best base so far when there are several.
        let mut best = Vec::new();
        let mut out = Vec::with_capacity(runs.len());
        for &(pgno, new) in runs {
            if new.len() != ps {
                continue;
            }
            let candidates = match bases.get(&pgno).filter(|&&p| usable(p)) {
                Some(p) => std::slice::from_ref(p),
                None => others,
            };
            // Worth it only when smaller than the page without its gap.
            let mut limit = ps - crate::format::page::free_gap(new).1;
            let (from, mut found) = (ranges.len(), None);
            let kind = page_kind(new);
            for &base in candidates {
                if !usable(base) {
                    continue;
                }
                let old = self.pg.committed(base, ps)?;
                // A page freed of another kind (a leaf for an overflow
                // page) differs nearly everywhere: told byte for byte up
                // to the limit, hundreds of ranges, then refused.
                if candidates.len() > 1 && page_kind(old) != kind {
                    continue;
                }
                if found.is_none() {
                    // Straight into `ranges` (left as it was on failure).
                    if patch::diff(new, old, pgno, ranges, limit) {
                        limit = (ranges.len() - from).saturating_sub(1);
                        found = Some(base);
                    }
                    continue;
                }
                best.clear();
                if patch::diff(new, old, pgno, &mut best, limit) {
                    limit = best.len().saturating_sub(1);
                    found = Some(base);
                    ranges.truncate(from);
                    ranges.extend_from_slice(&best);
                }
            }
            if let Some(base) = found {
                out.push((pgno, base, from, ranges.len()));
            }
        }
        Ok(out)
    }

    /// Returns the commit the sink has still to make durable and visible.
    fn commit_inner(&mut self) -> Result<Option<Pending>> {
        let mut named: Vec<(Database, DbRecord)> = self
            .dbs
            .borrow()
            .iter()
            .enumerate()
            .skip(2)
            .filter_map(|(i, d)| {
                d.filter(|d| d.dirty)
                    .map(|d| (Database(i as u32, 0), d.rec))
            })
            .collect();
        let any_db = self.dbs.borrow().iter().flatten().any(|d| d.dirty);
        let trimmed = self.pg.next_pgno <= self.pg.base.last_pgno;
        let forced = trimmed || self.force_commit;
        if self.pg.dirty.is_empty() && !any_db && self.pg.free.freed.is_empty() && !forced {
            return Ok(None);
        }
        // Trees mostly rewritten get their leaves in key order in the file
        // (`tree::place`); named trees before their records are written.
        for (db, rec) in &mut named {
            self.place(*db, rec)?;
        }
        for (db, rec) in named {
            let name = self.env.dbi_info(db)?.name.ok_or(ErrorKind::BadDbi)?;
            let mut m = self.tree(Database::MAIN)?;
            let r = tree::tree_put(
                &mut self.pg,
                &mut m,
                &name,
                NodeData::SubDb(&rec.encode()),
                WriteFlags::EMPTY,
            );
            self.set_rec(Database::MAIN, m.rec);
            r?;
        }
        self.place(Database::MAIN, &mut self.rec(Database::MAIN)?)?;
        tree::save_freelist(&mut self.pg)?;

        let env = self.env;
        let ps = env.psize;
        let meta = Meta {
            address: self.pg.base.address,
            mapsize: env.mapsize_for(self.pg.base.mapsize, self.pg.next_pgno * ps as u64),
            free: self.rec(Database::FREE)?,
            main: self.rec(Database::MAIN)?,
            last_pgno: self.pg.next_pgno - 1,
            txnid: self.pg.txnid,
        };
        let flags = env.flags();
        if flags.contains(EnvFlags::WRITE_MAP) && meta.mapsize > self.pg.base.mapsize {
            env.writemap_room(meta.mapsize, (meta.last_pgno + 1) * ps as u64)?;
        }
        // WAL mode (the pager keeps the pages' bases): pages are told by
        // their differences, free gaps zeroed on both sides, as replay
        // rebuilds them; zeroed here in place (no reader looks there, and
        // the log's whole pages leave their gaps out too).
        if self.pg.bases.is_some() {
            self.pg.dirty.values_mut().for_each(patch::zero_gap);
        }
        // (page number, bytes) in file order.
        let mut runs: Vec<(u64, &[u8])> = self.pg.dirty.iter().map(|(&pg, b)| (pg, b)).collect();
        crate::pager::sort_by_pgno(&mut runs, |r| r.0, false);
        let mut ranges = Vec::with_capacity(if self.pg.bases.is_some() {
            runs.len() * 512
        } else {
            0
        });
        let diffs = self.diffs(&runs, &mut ranges)?;
        let patches: Vec<Patch<'_>> = diffs
            .iter()
            .map(|&(pgno, base, from, to)| Patch {
                pgno,
                base,
                ranges: &ranges[from..to],
            })
            .collect();
        let upd = meta.encode_update();
        let no_sync = flags.contains(EnvFlags::NO_SYNC);
        let f = &self.pg.free;
        // Pages held until the next checkpoint: young ones are not.
        let freed = match &f.young {
            Some((y, _)) => y.held_count(&f.freed),
            None => f.freed.len() + f.loose_filed.len(),
        };
        let c = Commit {
            meta,
            update: &upd,
            pages: &runs,
            patches: &patches,
            freed,
            sync: !no_sync,
            meta_sync: !no_sync && !flags.contains(EnvFlags::NO_META_SYNC),
        };
        let r = env.sink().commit(&c).map_err(|f| match f {
            CommitFailure::Clean(e) => e,
            CommitFailure::Fatal(e) => {
                // Only a reopen can tell what the file holds now.
                env.panicked
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                e
            }
        })?;
        if let Some((y, _)) = &f.young {
            // Still under the writer lock: no checkpoint in between.
            let written: Vec<(u64, u64)> = runs
                .iter()
                .map(|&(pg, b)| (pg, (b.len() / ps) as u64))
                .collect();
            let unwritten = [&f.loose_filed[..], &f.filed_loose[..]].concat();
            let own = [&f.freed[..], &f.loose_filed[..]].concat();
            let refiled: Vec<(u64, bool)> = f.held.iter().map(|h| (h.key, h.young)).collect();
            y.committed(Committed {
                txnid: meta.txnid,
                written: &written,
                unwritten: &unwritten,
                own: &own,
                refiled: &refiled,
                reused: f.young_used,
            });
        }
        Ok(r)
    }
}
