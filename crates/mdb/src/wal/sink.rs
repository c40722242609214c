//! The write-ahead log as the environment's commit sink: the writer lock
//! is the group's token (`group.rs`), a commit writes its pages to the
//! data file unsynced and appends its record (`Wal::append_commit`; a
//! durable commit of many pages appends it first and writes the pages
//! while the flusher thread syncs the log), and the group makes it durable
//! (one log sync for every commit appended meanwhile) and publishes its
//! meta once the token is given back. A commit under NO_SYNC (or MAPASYNC with WRITEMAP) does not
//! wait for that sync (`WalEnv::relaxed`).
//!
//! Under WRITEMAP the pages are written with `pwrite` all the same, not
//! copied into the writable map as `LmdbSink` does: each checkpoint's
//! data-file sync write-protects the map's pages again, so a copy costs a
//! write fault per page rewritten since, and a full disk would be SIGBUS
//! on a page of the sparse file rather than ENOSPC for `wal/retract.rs`.
//! Measured (`slapadd -q` of 50,000 entries, NO_SYNC and WRITEMAP, three
//! rounds, `docs/openldap.md`): copies into the map took 98,000-103,000
//! minor faults against 27,000-29,000 with `pwrite`, and 3-35% more CPU
//! time, although 85,000 page-write system calls went away.

use super::checkpointer::WalEnv;
use super::group::publish_replayed;
use super::mode::Due;
use crate::error::Result;
use crate::format::meta::Meta;
use crate::sink::{recover, Commit, CommitFailure, CommitSink, Pending};

/// Dirty pages from which a durable commit appends its record before it
/// writes them, so that the log's sync overlaps their writes
/// ([`super::mode::Wal::append_commit`]).
pub(super) const EARLY_PAGES: usize = 32;

impl CommitSink for WalEnv {
    /// The token, and with it (through the holder thread) the lock file's
    /// writer mutex; a writer that finds the mutex newly taken replays
    /// what a writer that died after its log sync left, and sees what
    /// other processes did to the log. Returns the newest appended commit
    /// while commits of this process are in the pipeline.
    fn lock(&self) -> Result<Option<Meta>> {
        let e = self.group.enter()?;
        let r = (|| {
            if e.recovered {
                recover(&self.lock, &self.file, self.psize);
            }
            if e.fresh {
                if let Some(r) = self.wal.reconcile(&self.file, self.psize, false)? {
                    publish_replayed(&self.file, &self.lock, &r)?;
                }
            }
            Ok(e.head)
        })();
        if r.is_err() {
            self.group.leave();
        }
        r
    }

    fn unlock(&self) {
        self.group.leave()
    }

    fn chain(&self, base: &Meta, txnid: u64) -> Result<()> {
        self.wal.expect(&self.file, base, txnid)
    }

    /// The last checkpoint holds its snapshot as a reader would: records
    /// past it tell pages by their differences from pages of earlier
    /// snapshots, which replay reads from the data file, so no page freed
    /// after it is reused before the next one, but the young ones
    /// ([`CommitSink::young`]). Any writer of the log sees
    /// that checkpoint (an older one only holds more), and a crash replays
    /// and checkpoints at open before anything is reused.
    fn oldest_bound(&self) -> Option<u64> {
        Some(self.wal.checkpointed() + 1)
    }

    /// Pages past the bound that replay rebuilds before it reads them.
    fn young(&self) -> Option<std::sync::Arc<crate::young::Young>> {
        Some(self.wal.young())
    }

    /// [`WalEnv::commit_via`], durability as `c` says.
    fn commit(&self, c: &Commit<'_>) -> std::result::Result<Option<Pending>, CommitFailure> {
        self.commit_via(c, false)
    }

    fn wait(&self, p: Pending) -> Result<()> {
        if let Some(t) = p.txnid {
            self.group.wait_durable(t, &self.wal, &self.file)?;
        }
        if p.checkpoint {
            // The commit is durable already; a failure is the background
            // checkpointer's to retry.
            self.await_checkpoint();
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        self.group.drain(&self.wal, &self.file)
    }

    fn visible(&self, published: u64) -> Option<Meta> {
        self.group.visible(published)
    }

    /// Every commit is durable in the log once published; `force` also
    /// syncs the data file.
    fn sync(&self, force: bool, _no_sync: bool) -> Result<()> {
        self.flush()?;
        if force {
            self.file.sync_data()?;
        }
        Ok(())
    }

    fn settle(&self) -> Result<()> {
        self.checkpoint(true).map(|_| ())
    }
}

impl WalEnv {
    /// Appends: the pages go to the data file and the record to the log,
    /// unsynced; [`CommitSink::wait`] makes it durable and publishes it,
    /// unless durability is relaxed (by `c`, or `map_async`: MAPASYNC under
    /// WRITEMAP; the flusher, `Env::sync`, a checkpoint or the close make
    /// it durable), and takes a checkpoint when the pages held for the log
    /// call for it.
    pub(crate) fn commit_via(
        &self,
        c: &Commit<'_>,
        map_async: bool,
    ) -> std::result::Result<Option<Pending>, CommitFailure> {
        let relaxed = self.relaxed(!c.sync || map_async);
        // A durable commit of many pages: its record first, synced by the
        // flusher thread while this one writes the pages (publishing waits
        // for both). A few pages cost less than waking that thread.
        let early = !relaxed && c.pages.len() >= EARLY_PAGES;
        if let Some(a) = self.wal.append_commit(&self.file, self.psize, c, early)? {
            self.sync_ahead_soon();
            if let Err(e) = self.file.write_pages(self.psize, c.pages) {
                // Its record must never be replayed: taken back, or the
                // environment stops.
                let r = self.group.retract(c.meta.txnid, || self.wal.retract(a));
                return Err(match r {
                    Ok(()) => CommitFailure::Clean(e),
                    Err(_) => CommitFailure::Fatal(e),
                });
            }
        }
        self.group
            .appended(c.meta, c.meta_off(self.psize), *c.update, relaxed);
        let due = self.wal.wants_checkpoint(c.freed, c.meta.last_pgno);
        if due == Due::Soon {
            self.kick();
        }
        if self.wal.wants_spare() {
            self.spare_soon();
        }
        if relaxed {
            self.flush_soon();
        }
        let p = Pending {
            txnid: (!relaxed).then_some(c.meta.txnid),
            checkpoint: due == Due::Now,
        };
        Ok((p.txnid.is_some() || p.checkpoint).then_some(p))
    }
}
