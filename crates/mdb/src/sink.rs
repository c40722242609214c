//! The commit path's last step, behind one trait: a [`CommitSink`] holds
//! the writer lock and makes a commit durable and visible. A write
//! transaction takes the lock through it when it begins, hands it the
//! commit's pages and meta ([`Commit`]) and gives the lock back; the
//! transaction code knows no more about where the bytes go.
//!
//! Two sinks: [`LmdbSink`] here, LMDB's own commit (the lock file's writer
//! mutex; pages, a sync, the meta; or the same through the writable map
//! under WRITEMAP), and the write-ahead log's (`wal/sink.rs`: the token of
//! the group of this process's writers; pages, one record appended, a sync
//! shared by a group, then the metas). `env/sink.rs` picks one per call.

use crate::error::Result;
use crate::format::meta::Meta;
use crate::io::DataFile;
pub(crate) use crate::io::{Commit, CommitFailure};
use crate::lock::LockFile;
use crate::mmap::Map;
use crate::young::Young;
use std::sync::Arc;

/// The writer lock and making commits durable and visible (see the module
/// documentation). Between [`CommitSink::lock`] and [`CommitSink::unlock`]
/// the caller is the environment's only writer.
pub(crate) trait CommitSink {
    /// Take the writer lock, waiting for any other writer of this or
    /// another process, and settle what came before: a writer that died
    /// holding it (the published txnid is set from the metas, as LMDB
    /// does), and for a log, what other processes did to it. Returns the
    /// meta to build on when it is newer than the published one (commits
    /// still on their way to being published).
    fn lock(&self) -> Result<Option<Meta>>;
    /// Give the writer lock back.
    fn unlock(&self);
    /// The writer will commit as `txnid` on top of `base` (a log that
    /// cannot chain that txnid starts over).
    fn chain(&self, _base: &Meta, _txnid: u64) -> Result<()> {
        Ok(())
    }
    /// A bound on the writer's `oldest`: pages freed by commits at or
    /// after it are not reused, whatever the readers (a log's records may
    /// need them until its next checkpoint), but for the young ones. A sink with a bound also
    /// keeps hold slots in the reader table for writers outside it, which
    /// its own writers skip.
    fn oldest_bound(&self) -> Option<u64> {
        None
    }
    /// With a bound: the pages past it its writers may reuse all the same
    /// (`young.rs`).
    fn young(&self) -> Option<Arc<Young>> {
        None
    }
    /// Write commit `c` and make it durable and visible, or start to: the
    /// [`Pending`] returned is waited for with [`CommitSink::wait`] once
    /// the writer lock is given back, so that the next writer may begin
    /// meanwhile.
    fn commit(&self, c: &Commit<'_>) -> std::result::Result<Option<Pending>, CommitFailure>;
    /// Wait until the commit is durable and visible. An error means what
    /// the files hold is unknown: the environment must stop writing.
    fn wait(&self, _p: Pending) -> Result<()> {
        Ok(())
    }
    /// Make every commit returned so far durable and visible to other
    /// processes (commits of relaxed durability; [`crate::Env::sync`]).
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    /// The newest commit this process's readers may see beyond the
    /// published one `published` (relaxed durability), if any.
    fn visible(&self, _published: u64) -> Option<Meta> {
        None
    }
    /// [`crate::Env::sync`]: make what was written durable; under `no_sync`
    /// (the environment's NO_SYNC) only when `force`d.
    fn sync(&self, force: bool, no_sync: bool) -> Result<()>;
    /// Make the data file hold every commit by itself, as a plain LMDB
    /// file (a log's checkpoint): before the file is shrunk or cut.
    fn settle(&self) -> Result<()> {
        Ok(())
    }
}

/// What a commit leaves to do once the writer lock is given back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    /// Wait until this commit (its txnid) is durable and visible.
    pub(crate) txnid: Option<u64>,
    /// Then take a checkpoint (a log: the pages held for it would make the
    /// file grow much further).
    pub(crate) checkpoint: bool,
}

/// A writer that took the lock from one that died: the published txnid is
/// the newest meta's (as LMDB sets it), whatever the dead writer left.
pub(crate) fn recover(lock: &LockFile, df: &DataFile, psize: usize) {
    // A damaged meta is settled when the writer reads the metas.
    if let Ok(m) = df.newest_meta(psize) {
        lock.set_txnid(m.txnid);
    }
}

/// LMDB's commit: the lock file's writer mutex; the pages written, synced,
/// then the meta update written (durably), then published. A crash at any
/// instant leaves the old meta or the new one, whose pages are synced.
pub(crate) struct LmdbSink<'a> {
    pub(crate) lock: &'a LockFile,
    pub(crate) file: &'a DataFile,
    pub(crate) psize: usize,
    /// WRITEMAP: the writable map the pages are copied into, and whether
    /// its write-back is only started (MAPASYNC).
    pub(crate) map: Option<(&'a Map, bool)>,
}

impl LmdbSink<'_> {
    fn write_pages(&self, pages: &[(u64, &[u8])]) -> Result<()> {
        match self.map {
            Some((map, _)) => self.file.write_pages_mapped(map, self.psize, pages),
            None => self.file.write_pages(self.psize, pages),
        }
    }

    /// Make the pages written so far durable; `force` overrides MAPASYNC.
    fn sync_pages(&self, force: bool) -> Result<()> {
        match self.map {
            Some((map, map_async)) => self
                .file
                .sync_mapped(map, 0, map.len(), force || !map_async),
            None => self.file.sync_data(),
        }
    }

    /// Write the meta update, durable before it returns when `durable`.
    fn write_meta(&self, offset: u64, bytes: &[u8], durable: bool) -> Result<()> {
        let Some((map, map_async)) = self.map else {
            return self.file.write_meta(offset, bytes, durable);
        };
        self.file.write_meta_mapped(map, offset, bytes)?;
        if durable {
            let page = offset as usize / self.psize * self.psize;
            self.file.sync_mapped(map, page, self.psize, !map_async)?;
        }
        Ok(())
    }
}

impl CommitSink for LmdbSink<'_> {
    fn lock(&self) -> Result<Option<Meta>> {
        if self.lock.lock_writer()? {
            recover(self.lock, self.file, self.psize);
        }
        Ok(None)
    }

    fn unlock(&self) {
        self.lock.unlock_writer()
    }

    fn commit(&self, c: &Commit<'_>) -> std::result::Result<Option<Pending>, CommitFailure> {
        self.write_pages(c.pages).map_err(CommitFailure::Clean)?;
        if c.sync {
            self.sync_pages(false).map_err(CommitFailure::Clean)?;
        }
        self.write_meta(c.meta_off(self.psize), c.update, c.meta_sync)
            .map_err(CommitFailure::Fatal)?;
        // Only now do readers switch to the new snapshot.
        self.lock.set_txnid(c.meta.txnid);
        Ok(None)
    }

    fn sync(&self, force: bool, no_sync: bool) -> Result<()> {
        if no_sync && !force {
            return Ok(());
        }
        self.sync_pages(force)
    }
}
