//! Page allocation and the free-page database (lmdb-format.md §8).

use crate::db::Database;
use crate::error::{Error, Result};
use crate::format::page::{rd64, wr64};
use crate::tree::CursorPos;
use crate::txn::RwTxn;
use crate::write::Value;
use crate::WriteFlags;

/// Largest number of page ids in one free record we reserve at once, beyond need.
const SLACK: usize = 8;

impl RwTxn<'_> {
    /// Allocate `n` consecutive pages.
    pub(crate) fn alloc(&mut self, n: usize) -> Result<u64> {
        if !self.pg.free.saving {
            self.keep_commit_room(n)?;
        }
        if n == 1 {
            if let Some(p) = self.pg.free.loose.pop() {
                return Ok(p);
            }
        }
        loop {
            if let Some(p) = self.pg.free.take_run(n) {
                return Ok(p);
            }
            if self.pg.free.saving || !self.consume_record()? {
                break;
            }
        }
        // As LMDB: the map's last page is never used, so files we write
        // always fit a map of the same size in LMDB.
        if self.pg.next_pgno + n as u64 >= self.pg.max_pgno {
            return Err(Error::MapFull);
        }
        let p = self.pg.next_pgno;
        self.pg.next_pgno += n as u64;
        Ok(p)
    }

    /// Refuse (MAP_FULL) an allocation that would leave too few pages for
    /// this transaction's commit to save the free list: the put fails, and
    /// the transaction can still commit what it holds. Free records are
    /// consumed first when the pages at hand and at the end of the map do
    /// not cover both.
    fn keep_commit_room(&mut self, n: usize) -> Result<()> {
        // Pages left before the map's last page (never used, as in LMDB).
        let eof = self.pg.max_pgno.saturating_sub(self.pg.next_pgno + 1) as usize;
        loop {
            let have = eof + self.pg.free.reclaimed.len() + self.pg.free.loose.len();
            if have >= n + self.commit_need()? {
                return Ok(());
            }
            if !self.consume_record()? {
                return Err(Error::MapFull);
            }
        }
    }

    /// Pages the commit may need to save the free list: a copy of the free
    /// database's path (none once its root is ours), one split, and the
    /// records themselves when they no longer fit in a node. A deeper
    /// cascade of splits fails the commit with MAP_FULL, as in LMDB.
    fn commit_need(&self) -> Result<usize> {
        let f = &self.pg.free;
        if f.freed.is_empty() && f.loose.is_empty() && f.consumed == 0 {
            return Ok(0);
        }
        let rec = self.rec(Database::FREE)?;
        let copies = if self.pg.dirty.contains_key(&rec.root) {
            0
        } else {
            rec.depth as usize
        };
        let ps = self.env.psize;
        let rec_pages = |ids: usize| {
            let len = 8 * (ids + ids / 8 + SLACK + 1);
            if len + 16 > crate::format::page::node_max(ps) {
                crate::format::page::ov_pages(ps, len)
            } else {
                0
            }
        };
        let nf = f.freed.len() + f.loose.len();
        Ok(copies + 1 + rec_pages(nf) + rec_pages(f.reclaimed.len() + f.loose.len()))
    }

    /// Move the next free record old enough into the reclaimed list.
    fn consume_record(&mut self) -> Result<bool> {
        if self.pg.free.exhausted {
            return Ok(false);
        }
        let rec = self.rec(Database::FREE)?;
        let mut pos = CursorPos::new();
        let cmp = crate::format::cmp::for_flags(rec.flags);
        pos.seek(
            &*self,
            &rec,
            cmp,
            &(self.pg.free.consumed + 1).to_le_bytes(),
        )?;
        let (key, pages) = match pos.current(&*self)? {
            None => {
                self.pg.free.exhausted = true;
                return Ok(false);
            }
            Some((k, v)) => {
                if k.len() != 8 || v.len() < 8 {
                    return Err(Error::Corrupted);
                }
                let key = rd64(k, 0);
                if key >= self.pg.free.oldest {
                    self.pg.free.exhausted = true;
                    return Ok(false);
                }
                let n = rd64(v, 0) as usize;
                if n > (v.len() - 8) / 8 {
                    return Err(Error::Corrupted);
                }
                let pages: Vec<u64> = (0..n).map(|i| rd64(v, 8 + 8 * i)).collect();
                (key, pages)
            }
        };
        if pages.iter().any(|&p| p < 2 || p >= self.pg.next_pgno) {
            return Err(Error::Corrupted);
        }
        self.pg.free.reclaimed.extend_from_slice(&pages);
        self.pg.free.reclaimed.sort_unstable_by(|a, b| b.cmp(a));
        self.pg.free.consumed = key;
        Ok(true)
    }

    /// Capacity in page ids of the free record `key`, if it exists.
    fn record_cap(&self, key: u64) -> Result<Option<usize>> {
        let rec = self.rec(Database::FREE)?;
        let cmp = crate::format::cmp::for_flags(rec.flags);
        Ok(crate::tree::get_node(self, &rec, cmp, &key.to_le_bytes())?
            .map(|n| (n.dsize() / 8).saturating_sub(1)))
    }

    fn reserve_record(&mut self, key: u64, ids: usize) -> Result<()> {
        let mut t = self.tree(Database::FREE)?;
        let r = self.put_in_tree(
            &mut t,
            &key.to_le_bytes(),
            Value::Reserve(8 * (ids + 1)),
            WriteFlags::EMPTY,
        );
        self.pg.free_db = t.rec;
        r
    }

    fn fill_record(&mut self, key: u64, ids: &[u64]) -> Result<()> {
        let v = self.value_mut(Database::FREE, &key.to_le_bytes())?;
        if v.len() < 8 * (ids.len() + 1) {
            return Err(Error::PageFull);
        }
        wr64(v, 0, ids.len() as u64);
        for (i, &p) in ids.iter().enumerate() {
            wr64(v, 8 + 8 * i, p);
        }
        Ok(())
    }

    /// Consume free records (while any is old enough) until `need` pages
    /// are at hand for the free database's own updates. Called between
    /// updates of the free database, never during one: consuming reads it.
    fn top_up(&mut self, need: usize) -> Result<()> {
        while self.pg.free.reclaimed.len() + self.pg.free.loose.len() < need {
            if !self.consume_record()? {
                break;
            }
        }
        Ok(())
    }

    /// Pages one update of the free database may allocate: a copy of each
    /// page of its path and a split at every level.
    fn save_need(&self) -> Result<usize> {
        Ok(2 * (self.rec(Database::FREE)?.depth as usize + 1))
    }

    /// Write the free list into the free database (commit step). Writing it
    /// allocates and frees pages itself, so space is reserved until the
    /// sizes stop changing and only then filled in place.
    ///
    /// Pages for those updates come from free records too (consumed before
    /// each update, since consuming reads the tree being updated): taking
    /// them from the end of the file instead would grow it by a few pages
    /// at every commit, and small transactions would never catch up.
    pub(crate) fn save_freelist(&mut self) -> Result<()> {
        self.pg.free.saving = true;
        let txnid = self.pg.txnid;
        // Key of the record reserved for unused reclaimed pages, once reserved.
        let mut left_key: Option<u64> = None;
        for _ in 0..10_000 {
            let need = self.save_need()?;
            self.top_up(need)?;
            let consumed = self.pg.free.consumed;
            // Records consumed by this transaction go away (all but our own
            // leftover record, filed under the newest consumed key).
            if consumed > 0 {
                let rec = self.rec(Database::FREE)?;
                let mut pos = CursorPos::new();
                let mut stale = None;
                let mut item = pos.first(&*self, &rec)?;
                while let Some((k, _)) = item {
                    if k.len() != 8 {
                        return Err(Error::Corrupted);
                    }
                    let key = rd64(k, 0);
                    if key > consumed {
                        break;
                    }
                    if left_key != Some(key) {
                        stale = Some(key);
                        break;
                    }
                    item = if pos.move_next(&*self, &rec)? {
                        pos.current(&*self)?
                    } else {
                        None
                    };
                }
                if let Some(key) = stale {
                    let mut t = self.tree(Database::FREE)?;
                    let r = self.tree_del(&mut t, &key.to_le_bytes());
                    self.pg.free_db = t.rec;
                    r?;
                    if left_key == Some(key) {
                        left_key = None;
                    }
                    continue;
                }
            }
            if consumed == 0 && !self.pg.free.loose.is_empty() {
                // No consumed key to re-file under: loose pages join this txn's record.
                let l = std::mem::take(&mut self.pg.free.loose);
                self.pg.free.freed.extend(l);
            }
            let nf = self.pg.free.freed.len();
            if nf > 0 && self.record_cap(txnid)?.is_none_or(|c| c < nf) {
                self.reserve_record(txnid, nf + nf / 8 + SLACK)?;
                continue;
            }
            let nl = self.pg.free.reclaimed.len() + self.pg.free.loose.len();
            if nl > 0
                && (left_key != Some(consumed) || self.record_cap(consumed)?.is_none_or(|c| c < nl))
            {
                self.reserve_record(consumed, nl + nl / 8 + SLACK)?;
                left_key = Some(consumed);
                continue;
            }
            if consumed == 0 && !self.pg.free.loose.is_empty() {
                continue;
            }
            // Stable: fill in place (no allocation from here on).
            let mut freed = std::mem::take(&mut self.pg.free.freed);
            if !freed.is_empty() {
                freed.sort_unstable_by(|a, b| b.cmp(a));
                freed.dedup();
                self.fill_record(txnid, &freed)?;
            }
            let mut left = std::mem::take(&mut self.pg.free.reclaimed);
            left.append(&mut self.pg.free.loose);
            if !left.is_empty() || left_key == Some(consumed) {
                // A record reserved and emptied since keeps a count of zero.
                left.sort_unstable_by(|a, b| b.cmp(a));
                self.fill_record(consumed, &left)?;
            }
            return Ok(());
        }
        Err(Error::PageFull)
    }
}
