//! Shrinking in place: the free pages at the end of the file go back to
//! the file system (`Env::shrink`, and at close with auto-grow).
//!
//! A write transaction takes every free record no reader can see,
//! removes the run of free pages that ends the used part of the file, and
//! commits a lower `last_pgno`; the pages left over are filed back as
//! usual. Those pages are free in every snapshot a reader holds, so once
//! the commit is in the data file the file may be cut to the new end; that
//! is done only while no other `Env` or process uses the environment
//! (`LockFile::alone`): an LMDB process with WRITE_MAP expects the file to
//! stay as long as its map.

use super::*;
use crate::env::{EnvFlags, DEFAULT_MAPSIZE};
use crate::error::ErrorKind;
use crate::sink::CommitSink;

impl RwTxn<'_> {
    /// One round of shrinking: take every free record old enough, drop the
    /// free pages that end the file from them, and move the pages of the
    /// trees that lie where the file could end down into free pages (they
    /// are freed by this commit: a later round drops them). Returns the
    /// pages dropped and the pages moved.
    fn shrink_round(&mut self) -> Result<(u64, u64)> {
        while tree::alloc::consume_record(&mut self.pg)? {}
        let end = self.pg.next_pgno;
        // `reclaimed` is sorted from the highest page down.
        let r = &mut self.pg.free.reclaimed;
        let n = r
            .iter()
            .enumerate()
            .take_while(|&(i, &p)| p + 1 + i as u64 == end)
            .count();
        r.drain(..n);
        self.pg.next_pgno -= n as u64;
        // Were the live pages packed, the file would end here.
        let limit = self.pg.next_pgno - self.pg.free.reclaimed.len() as u64;
        let mut moved = 0;
        if limit < self.pg.next_pgno {
            let mut main = self.rec(Database::MAIN)?;
            let root = tree::relocate::relocate(&mut self.pg, main.root, limit, &mut moved)?;
            if root != main.root {
                main.root = root;
                self.set_rec(Database::MAIN, main);
            }
            let free = self.pg.free_db.root;
            self.pg.free_db.root = tree::relocate::relocate(&mut self.pg, free, limit, &mut moved)?;
        }
        if self.env.auto_grows() {
            // The recorded size steps up again from the start: the
            // smallest step that holds what is left.
            self.pg.base.mapsize = self.pg.base.mapsize.min(DEFAULT_MAPSIZE as u64);
        }
        Ok((n as u64, moved))
    }

    /// Free pages in the free database, reusable yet or not.
    fn free_total(&self) -> Result<u64> {
        let mut n = 0u64;
        for kv in self.cursor(Database::FREE)?.iter() {
            let (_, v) = kv?;
            let c: [u8; 8] = v.get(..8).ok_or(ErrorKind::Corrupted)?.try_into().unwrap();
            n = n.saturating_add(u64::from_le_bytes(c));
        }
        Ok(n)
    }

    /// Whether the free database holds records no reader holds back but
    /// this transaction could not take yet (freed by the newest commit: a
    /// crash could bring back the snapshot before it).
    fn frees_pending(&self) -> Result<bool> {
        if self.pg.free.oldest < self.pg.base.txnid {
            // A reader holds an older snapshot: committing does not help.
            return Ok(false);
        }
        let mut c = self.cursor(Database::FREE)?;
        let newest = match c.last()? {
            Some((k, _)) => k.try_into().map(u64::from_le_bytes).ok(),
            None => None,
        };
        Ok(newest.is_some_and(|t| t >= self.pg.free.oldest))
    }
}

/// Rounds of [`Env::shrink`] at most: each moves what lies past where the
/// file could end, the next drops it.
const MAX_ROUNDS: usize = 8;

impl Env {
    /// Give the free pages at the end of the data file back to the file
    /// system: commit a lower end of the used pages, then cut the file
    /// there (with WRITE_MAP, at the size it records) if no other `Env` or
    /// process has the environment open; otherwise the file is cut by a
    /// later call (auto-grow environments call this at close). Returns the
    /// file's length. Only pages free in every snapshot a reader holds
    /// are returned, and only those at the end: `mdb copy -c` compacts
    /// the rest.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// for i in 0u32..5000 {
    ///     w.put(Database::MAIN, &i.to_be_bytes(), &[1; 200], WriteFlags::EMPTY)?;
    /// }
    /// w.commit()?;
    /// let big = std::fs::metadata(dir.path().join("data.mdb"))?.len();
    /// let mut w = env.write_txn()?;
    /// for i in 100u32..5000 {
    ///     w.del(Database::MAIN, &i.to_be_bytes())?;
    /// }
    /// w.commit()?;
    /// assert!(env.shrink()? < big / 4);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn shrink(&self) -> Result<u64> {
        self.trim(false)?;
        self.lock.alone(|| self.cut()).transpose()?;
        Ok(self.refresh_file_pages()? * self.psize as u64)
    }

    /// At close, with auto-grow: [`Env::shrink`] if this `Env` is the
    /// environment's only user (never waiting for another writer) and at
    /// least an eighth of the file is free (a shrink reads every page of
    /// every tree).
    pub(crate) fn shrink_at_close(&self) {
        let _ = self
            .lock
            .alone(|| self.trim(true).and_then(|()| self.cut()));
    }

    /// Commit a lower end of the used pages, if the free list ends the
    /// file.
    fn trim(&self, worth_it: bool) -> Result<()> {
        if self.flags().contains(EnvFlags::READ_ONLY) {
            return Err(ErrorKind::Os(libc::EACCES).into());
        }
        // Pages freed by a commit are reusable only after the next one:
        // an empty commit lets a round take what the one before freed.
        let mut idle = 0;
        for round in 0..MAX_ROUNDS {
            // In WAL mode no page freed since the last checkpoint is
            // reused before the next (the log's records may be patches of
            // them): each round starts from a checkpoint.
            self.sink().settle()?;
            let mut w = self.write_txn()?;
            if round == 0 && worth_it && w.free_total()? * 8 < w.pg.next_pgno.max(2048) {
                return Ok(());
            }
            let (dropped, moved) = w.shrink_round()?;
            if dropped + moved > 0 {
                w.commit()?;
                idle = 0;
            } else if idle == 0 && w.frees_pending()? {
                w.force_commit = true;
                w.commit()?;
                idle += 1;
            } else {
                break;
            }
        }
        Ok(())
    }

    /// Cut the data file after the newest snapshot's last page (with
    /// WRITE_MAP, at the size it records). Only while alone.
    fn cut(&self) -> Result<()> {
        // The data file must hold every commit (their pages and the new
        // end) before it is cut.
        self.sink().settle()?;
        let m = self.newest_meta()?;
        let mut len = (m.last_pgno + 1) * self.psize as u64;
        if self.flags().contains(EnvFlags::WRITE_MAP) {
            len = len.max(m.mapsize);
        }
        self.file.truncate_to(len)
    }
}
