//! An environment's write-ahead log: what a commit, an open and a
//! checkpoint do with the log, the checkpoint file and the data file.
//!
//! A commit writes its pages to the data file, unsynced, and appends one
//! record (those pages and its meta update); a sync of the log, shared by the
//! commits appended meanwhile (group commit, `super::group`), makes them
//! durable, after which their metas go to the data file, unsynced, and are
//! published in order. A checkpoint syncs the data file, records the txnid
//! it covers in the checkpoint file, and recycles the segments it covers.
//!
//! The data file and the log are reconciled (`Wal::reconcile`) at open and
//! whenever this process takes the writer lock anew (every commit it
//! appended is published by then): records the data file lacks are replayed onto
//! it (a crash after the log sync), and commits the log lacks (a writer
//! outside WAL mode, such as LMDB itself) end the log with a checkpoint.
//! This layer knows files and bytes; the caller holds the writer lock.

use super::checkpoint::Checkpoint;
use super::hold::Hold;
use super::log::{Log, LogOptions};
use super::record::RecordParts;
use super::retract::Tail;
use crate::error::{ErrorKind, Result};
use crate::format::meta::{Meta, META_WRITE_LEN, VERSION, VERSION_OFF, VERSION_WAL};
use crate::io::{Commit, CommitFailure, DataFile, FaultInjector};
use crate::lock::LockFile;
use crate::young::Young;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Settings of write-ahead-log mode ([`crate::EnvOptions::wal`]).
///
/// ```
/// use std::time::Duration;
/// let mut w = mdb::WalOptions::default();
/// w.checkpoint_interval = Duration::from_secs(10);
/// assert_eq!(w.segment_size, 16 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WalOptions {
    /// Bytes of one log segment (preallocated, recycled after checkpoints:
    /// while the log is written, up to `checkpoint_bytes / segment_size + 1`
    /// retired segments, 2 to 8, are kept to be renamed into new ones; a
    /// checkpoint on demand or at the close keeps a 32nd of the data file).
    pub segment_size: u64,
    /// The background checkpointer syncs the data file this often.
    pub checkpoint_interval: Duration,
    /// ... and as soon as this many log bytes were written since the last
    /// checkpoint.
    pub checkpoint_bytes: u64,
    /// Run the background checkpointer thread (checkpoints still happen on
    /// [`crate::Env::checkpoint`] and when the environment closes).
    pub checkpointer: bool,
    /// Relaxed durability: `Some(period)` makes a commit return once its
    /// record is in the log, unsynced; a background thread syncs the log
    /// within `period`, as do [`crate::Env::sync`], checkpoints and the
    /// close. Such a commit is visible at once to this process's readers,
    /// to other processes once durable. A crash of the machine loses at
    /// most the commits of the last period, and never corrupts the file:
    /// the data file gets a commit's meta only once it is durable, and no
    /// page a durable snapshot uses is reused before. `None` (the default):
    /// every commit is durable when it returns. The environment flag
    /// NO_SYNC (and MAP_ASYNC with WRITE_MAP) asks for relaxed durability
    /// too; when `None`, the period is 10 ms: other processes see a commit
    /// only once it is durable (and wait for the writer lock meanwhile),
    /// where LMDB's see a NO_SYNC commit at once.
    pub sync_every: Option<Duration>,
    /// How long this process keeps the lock file's writer mutex once its
    /// writers are idle (default 1 ms), in case one comes back: taking it
    /// again costs a hand-off to the thread that holds it for the process
    /// and a look at what other processes did to the log. A process that
    /// is the only writer of the environment and writes in bursts apart
    /// (a Raft node's log, every few milliseconds) may keep it longer. A
    /// writer of another process waits until this process's writers have
    /// paused that long: under a steady stream of commits, indefinitely.
    /// Keep it short for an environment other processes write (or copy
    /// and back up, which take the writer mutex too).
    pub writer_grace: Duration,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            segment_size: 16 << 20,
            checkpoint_interval: Duration::from_secs(30),
            checkpoint_bytes: 64 << 20,
            checkpointer: true,
            sync_every: None,
            writer_grace: Duration::from_millis(1),
        }
    }
}

/// What an environment's write-ahead log holds, as one handle sees it
/// ([`crate::Env::wal_info`]).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, EnvOptions, WalOptions, WriteFlags};
/// let env = EnvOptions::new().wal(WalOptions::default()).open(dir.path())?;
/// for i in 0u32..3 {
///     let mut w = env.write_txn()?;
///     w.put(Database::MAIN, &i.to_be_bytes(), b"v", WriteFlags::EMPTY)?;
///     w.commit()?;
/// }
/// let info = env.wal_info().unwrap();
/// assert_eq!(info.records, 3);
/// assert!(info.syncs >= 1 && info.syncs <= 3); // one sync per group of commits
/// assert!(info.segments >= 1);
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WalInfo {
    /// The newest transaction a checkpoint covers: the data file holds it
    /// and every earlier commit durably, the log only what came after.
    pub checkpoint_txnid: u64,
    /// Log bytes this handle appended since its last checkpoint (records
    /// and their padding): what a crash would roll forward, and what the
    /// checkpointer's byte threshold counts.
    pub bytes_since_checkpoint: u64,
    /// Segment files holding the log's records (the current one included).
    pub segments: usize,
    /// Unused segment files ready for the log to move into (zero-filled,
    /// or retired by a checkpoint and kept: `WalOptions::segment_size`).
    pub spare_segments: usize,
    /// Commit records this handle appended since it opened the log.
    pub records: u64,
    /// Syncs of the log this handle made since then: `records / syncs` is
    /// how many commits shared a sync (group commit).
    pub syncs: u64,
    /// Pages those records told by their differences from a page of an
    /// earlier snapshot (patches), not whole.
    pub patched_pages: u64,
    /// Commits of this handle that passed the bound on pages held for the
    /// log, and so waited for a checkpoint before they returned (the
    /// background checkpointer had not kept up).
    pub checkpoint_waits: u64,
    /// Pages freed since the last checkpoint that this handle's commits
    /// reused before the next one, since it opened: pages written (or
    /// free) since that checkpoint, which replay rebuilds before reading
    /// them (the others are held, see [`crate::WalOptions`]).
    pub young_reused: u64,
    /// Checkpoints this handle recorded since it opened the log.
    pub checkpoints: u64,
    /// ... of which were called for by the pages freed since the previous
    /// one (held for the log: a 32nd of the file, or `HELD_MIN` pages) ...
    pub checkpoints_for_held: u64,
    /// ... or by the log bytes written since
    /// ([`WalOptions::checkpoint_bytes`]); the others came from the
    /// interval, on demand or at the close.
    pub checkpoints_for_bytes: u64,
}

/// Where the log of the environment at `data` (its data file) lives:
/// `wal/` beside the data file, or `<file>-wal/` for NO_SUB_DIR.
pub(crate) fn dir_for(env_path: &Path, no_subdir: bool) -> PathBuf {
    if no_subdir {
        let mut p = env_path.as_os_str().to_owned();
        p.push("-wal");
        PathBuf::from(p)
    } else {
        env_path.join("wal")
    }
}

/// The log state of one environment handle.
pub(crate) struct Wal {
    inner: Mutex<Inner>,
    pub(crate) opts: WalOptions,
    dir: PathBuf,
    fault: Option<Arc<dyn FaultInjector>>,
}

struct Inner {
    log: Log,
    ckpt: Checkpoint,
    /// The checkpoint as last read or written: (seq, txnid).
    seen: (u64, u64),
    /// Log bytes appended since the last checkpoint.
    since_ckpt: u64,
    /// Pages appended as patches since the log was opened.
    patched: u64,
    /// Pages this handle's commits freed since the last checkpoint.
    held: u64,
    /// See [`WalInfo::checkpoint_waits`].
    waits: u64,
    /// Why a checkpoint was last called for, until it is taken.
    asked: Option<Cause>,
    /// See [`WalInfo::checkpoints`]: all, for held pages, for log bytes.
    counts: [u64; 3],
    /// This handle saw the data file carry [`VERSION_WAL`] since it last
    /// took the writer lock (only a holder of that lock changes it).
    marked: bool,
    /// The reader slot at `seen.1` (see `wal/hold.rs`); none until
    /// [`Wal::hold_in`], and in a replay-only log.
    hold: Option<Hold>,
    /// Pages this handle's writers may reuse before the next checkpoint
    /// (`young.rs`): emptied whenever the checkpoint is seen anew.
    young: Arc<Young>,
}

/// Pages freed since the last checkpoint that make the checkpointer run
/// in a small data file (see [`Wal::wants_checkpoint`]).
const HELD_MIN: u64 = 1024;

/// ... and that make the committing thread wait for one (take one itself
/// without a checkpointer thread).
const HELD_NOW_MIN: u64 = 4 * HELD_MIN;

/// What called for a checkpoint ([`WalInfo::checkpoints_for_held`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    Held,
    Bytes,
}

/// Whether a commit calls for a checkpoint ([`Wal::wants_checkpoint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    No,
    /// The background checkpointer should take one.
    Soon,
    /// The committing thread waits for one before it returns.
    Now,
}

/// The data file's page size, from its first meta page (when the caller
/// has no environment yet).
pub(crate) fn page_size(df: &DataFile) -> Result<usize> {
    Ok(df.read_meta(0, 0)?.psize() as usize)
}

/// Whether the data file says a log may hold commits it lacks (its first
/// meta page carries [`VERSION_WAL`]; the second follows it, see
/// [`set_version`]).
pub(crate) fn marked(df: &DataFile) -> Result<bool> {
    let mut b = [0u8; 4];
    df.read_exact_at(&mut b, VERSION_OFF)?;
    Ok(u32::from_le_bytes(b) == VERSION_WAL)
}

/// Make `version` the version of both meta pages, durably. Before a log
/// holds a commit the data file lacks, the file carries [`VERSION_WAL`],
/// which LMDB 0.9 refuses to open; [`VERSION`] is written back only once
/// the data file holds every commit of the log (a checkpoint on demand, a
/// clean close, a roll-forward). Commits never write this field.
pub(crate) fn set_version(df: &DataFile, psize: usize, version: u32) -> Result<()> {
    let mut changed = false;
    for slot in 0..2u64 {
        let off = slot * psize as u64 + VERSION_OFF;
        let mut b = [0u8; 4];
        df.read_exact_at(&mut b, off)?;
        if u32::from_le_bytes(b) != version {
            df.write_meta(off, &version.to_le_bytes(), false)?;
            changed = true;
        }
    }
    if changed {
        df.sync_data()?;
    }
    Ok(())
}

/// A record appended ahead of its commit's pages ([`Wal::append_commit`]),
/// which [`Wal::retract`] takes back.
#[derive(Debug)]
pub(crate) struct Appended {
    tail: Tail,
    len: u64,
    patched: u64,
}

/// A commit's meta as it goes to the data file: its txnid, the offset of
/// the part commits rewrite, and those bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MetaUpdate {
    pub(crate) txnid: u64,
    pub(crate) off: u64,
    pub(crate) bytes: [u8; META_WRITE_LEN],
}

/// What [`Wal::reconcile`] replayed: the metas to write, the newest and
/// the newest of the other slot before it.
#[derive(Debug)]
pub(crate) struct Replayed {
    pub(crate) last: MetaUpdate,
    pub(crate) other: Option<MetaUpdate>,
}

impl Replayed {
    /// Write the metas, older first, when no reader can be copying one
    /// (the environment is opened alone).
    pub(crate) fn write_alone(&self, df: &DataFile) -> Result<()> {
        if let Some(o) = &self.other {
            df.write_meta(o.off, &o.bytes, false)?;
        }
        df.write_meta(self.last.off, &self.last.bytes, false)
    }
}

impl Wal {
    /// Open the log in `dir` (created if missing), whose identity is
    /// `ident` (the caller checked it is the data file's, `wal/tie.rs`).
    /// `accept_loss`: see [`LogOptions::accept_loss`].
    pub(crate) fn open(
        dir: &Path,
        opts: WalOptions,
        (ident, accept_loss): (u64, bool),
        fault: Option<Arc<dyn FaultInjector>>,
    ) -> Result<Wal> {
        let lo = LogOptions {
            accept_loss,
            ..log_options(&opts)
        };
        Wal::open_with(dir, opts, lo, ident, fault)
    }

    /// Open the log in `dir` only to roll it forward (read-only, or
    /// outside WAL mode): no segment is made, so a full disk does not
    /// stop it.
    pub(crate) fn open_replay(
        dir: &Path,
        (ident, accept_loss): (u64, bool),
        fault: Option<Arc<dyn FaultInjector>>,
    ) -> Result<Wal> {
        let opts = WalOptions {
            segment_size: super::log::MIN_SEGMENT,
            ..WalOptions::default()
        };
        let lo = LogOptions {
            replay_only: true,
            accept_loss,
            ..log_options(&opts)
        };
        Wal::open_with(dir, opts, lo, ident, fault)
    }

    fn open_with(
        dir: &Path,
        opts: WalOptions,
        lo: LogOptions,
        ident: u64,
        fault: Option<Arc<dyn FaultInjector>>,
    ) -> Result<Wal> {
        let log = Log::open(dir, lo, fault.clone())?;
        let ckpt = Checkpoint::open(dir, ident, fault.clone())?;
        let seen = ckpt.read()?.map_or((0, 0), |s| (s.seq, s.txnid));
        let mut inner = Inner {
            log,
            ckpt,
            seen,
            since_ckpt: 0,
            patched: 0,
            held: 0,
            waits: 0,
            asked: None,
            counts: [0; 3],
            marked: false,
            hold: None,
            young: Arc::default(),
        };
        inner.tell_others()?;
        Ok(Wal {
            inner: Mutex::new(inner),
            opts,
            dir: dir.to_path_buf(),
            fault,
        })
    }

    /// Hold the last checkpoint's snapshot in the reader table of `lock`
    /// until this handle closes, for writers outside WAL mode (see
    /// `wal/hold.rs`).
    pub(crate) fn hold_in(&self, lock: Arc<LockFile>) -> Result<()> {
        let mut g = self.inner();
        let txnid = g.seen.1;
        g.hold = Some(Hold::take(lock, txnid)?);
        Ok(())
    }

    /// The txnid of the newest record of the log.
    pub(crate) fn last_txnid(&self) -> Option<u64> {
        self.inner().log.last_txnid()
    }

    /// The identity the log records (see `wal/tie.rs`).
    pub(crate) fn ident(&self) -> u64 {
        self.inner().ckpt.ident()
    }

    /// Tie the log to identity `ident` (the data file now carries it): the
    /// checkpoint is stated again with it. The caller holds the writer
    /// lock, or opens the environment alone.
    pub(crate) fn retie(&self, ident: u64) -> Result<()> {
        let mut g = self.inner();
        g.ckpt.set_ident(ident);
        g.reshaped_anew()
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bring the data file and the log into agreement (the caller holds the
    /// writer lock, or opens the environment alone). At open (`at_open`),
    /// after a possible crash of the machine, the metas are not trusted:
    /// every record past the checkpoint is written again. When records were
    /// replayed, their pages are in the data file and the metas to publish
    /// are returned, not written: readers may be copying the published
    /// one (`crate::wal::group::publish_metas` writes them in a safe order).
    pub(crate) fn reconcile(
        &self,
        df: &DataFile,
        psize: usize,
        at_open: bool,
    ) -> Result<Option<Replayed>> {
        let mut g = self.inner();
        let inner = &mut *g;
        // Another process may have made the file plain meanwhile.
        inner.marked = false;
        let meta = df.newest_meta(psize).ok();
        let cp = inner.ckpt.refresh()?;
        let cp_seen = cp.as_ref().map_or((0, 0), |s| (s.seq, s.txnid));
        let fresh = cp_seen == inner.seen
            && meta.is_some_and(|m| inner.log.last_txnid().is_none_or(|l| l == m.txnid))
            && (at_open || inner.log.intact());
        if fresh && !at_open {
            // This handle wrote the last commit and saw the last checkpoint.
            return Ok(None);
        }
        if !fresh && !at_open {
            // Another process wrote the log or checkpointed since this
            // handle last looked: read the directory again.
            let lo = LogOptions {
                replay_only: inner.log.replay_only,
                ..log_options(&self.opts)
            };
            inner.log = Log::open(&self.dir, lo, self.fault.clone())?;
        }
        inner.saw(cp_seen);
        inner.tell_others()?;
        let meta_txnid = meta.map(|m| m.txnid);
        let Some(last) = inner.log.last_txnid() else {
            // An empty log: the data file is all there is.
            return match meta {
                Some(_) => Ok(None),
                None => Err(ErrorKind::Invalid.into()),
            };
        };
        if meta_txnid.is_some_and(|m| m > last) || !meta_agrees(inner, df, meta)? {
            // The data file moved on without the log: it holds commits of
            // a writer outside WAL mode (synced by it). Start over from it.
            let m = meta.ok_or(ErrorKind::Invalid)?;
            df.sync_data()?;
            inner.checkpoint_at(&m)?;
            inner.log.restart()?;
            return Ok(None);
        }
        let after = if at_open {
            cp_seen.1
        } else {
            meta_txnid.unwrap_or(cp_seen.1)
        };
        if last <= after {
            return Ok(None);
        }
        if inner.log.first_txnid().is_some_and(|f| f > after + 1) {
            // Records the data file needs are gone.
            return Err(ErrorKind::Corrupted.into());
        }
        let mut buf = Vec::new();
        let mut metas: [Option<MetaUpdate>; 2] = [None, None];
        inner.log.scan(after, |r| {
            if r.psize() as usize != psize {
                return Err(ErrorKind::Corrupted.into());
            }
            // Bases come from the data file: as the checkpoint left them
            // (no page freed since is reused before the next one), or as
            // an earlier record of this replay rebuilt them.
            let runs = r.expand(&mut buf, |pg, page| {
                let off = pg.checked_mul(psize as u64).ok_or(ErrorKind::Corrupted)?;
                // (A base past the end: the file lost pages it held.)
                df.read_exact_at(page, off).map_err(|e| match e.kind() {
                    ErrorKind::Invalid => ErrorKind::Corrupted.into(),
                    _ => e,
                })
            })?;
            df.write_pages(psize, &runs)?;
            // The newest meta of each slot: the ones in between would be
            // overwritten at once.
            let (off, m) = r.meta();
            let slot = &mut metas[usize::from(metas[0].is_some_and(|u| u.off != off))];
            *slot = Some(MetaUpdate {
                txnid: r.txnid(),
                off,
                bytes: (*m).try_into().map_err(|_| ErrorKind::Corrupted)?,
            });
            Ok(())
        })?;
        let [a, b] = metas;
        let (newest, other) = match (a, b) {
            (Some(a), Some(b)) if a.txnid > b.txnid => (a, Some(b)),
            (Some(a), Some(b)) => (b, Some(a)),
            (Some(a), None) => (a, None),
            // `last > after`: the scan visited a record.
            (None, _) => return Err(ErrorKind::Corrupted.into()),
        };
        if newest.txnid != last {
            return Err(ErrorKind::Corrupted.into());
        }
        Ok(Some(Replayed {
            last: newest,
            other,
        }))
    }

    /// Before a writer commits as `txnid` on top of `base`: a txnid the log
    /// cannot chain (a damaged file skips one) starts the log over.
    pub(crate) fn expect(&self, df: &DataFile, base: &Meta, txnid: u64) -> Result<()> {
        let mut inner = self.inner();
        if inner.log.next_txnid().is_none_or(|t| t == txnid) {
            return Ok(());
        }
        df.sync_data()?;
        inner.checkpoint_at(base)?;
        inner.log.restart()
    }

    /// Write the pages of commit `c` to the data file and append its
    /// record to the log, without a sync and without its meta: the commit
    /// is neither durable nor visible yet. The group (`super::group`) makes
    /// it durable with one log sync for every commit appended meanwhile,
    /// then writes the metas and publishes them in order. The pages may go
    /// to the data file before the record is durable because a writer
    /// reuses only pages that no durable snapshot can need. A commit under
    /// NO_SYNC waits for no sync, but its meta still goes to the data file
    /// only once a sync made its record durable: a crash loses it and
    /// every later commit, never more (the log stays a prefix).
    ///
    /// `early`: the record is appended first when it can be taken back
    /// ([`Appended`] is returned), and the caller writes the pages while
    /// the log is synced; a data file that cannot take them (ENOSPC) then
    /// fails the commit through [`Wal::retract`]. Else (and always without
    /// `early`) the pages go first, so that such a failure fails the commit
    /// cleanly before anything is in the log: a record there would be
    /// replayed at the next open, bringing back a commit reported as
    /// failed.
    pub(super) fn append_commit(
        &self,
        df: &DataFile,
        psize: usize,
        c: &Commit<'_>,
        early: bool,
    ) -> std::result::Result<Option<Appended>, CommitFailure> {
        let clean = CommitFailure::Clean;
        // Pages told by a patch are not logged whole (both lists are in
        // page order).
        let mut patched = c.patches.iter().map(|p| p.pgno).peekable();
        let pages: Vec<(u64, &[u8])> = c
            .pages
            .iter()
            .copied()
            .filter(|&(pg, _)| {
                while patched.next_if(|&p| p < pg).is_some() {}
                patched.next_if_eq(&pg).is_none()
            })
            .collect();
        let parts = RecordParts {
            txnid: c.meta.txnid,
            psize: psize as u32,
            runs: &pages,
            patches: c.patches,
            meta_off: c.meta_off(psize),
            meta: c.update,
            trim: true,
            time_ns: crate::io::now_ns(self.fault.as_ref()),
        };
        let tail = if early {
            self.inner().log.retractable_tail(&parts).map_err(clean)?
        } else {
            None
        };
        if tail.is_none() {
            // Free pages of every durable snapshot: harmless if the commit
            // fails here or later.
            df.write_pages(psize, c.pages).map_err(clean)?;
        }
        let mut inner = self.inner();
        // Stock LMDB must not open the file while the log alone holds this
        // commit. One data sync after each plain checkpoint; a no-op after.
        if !inner.marked {
            set_version(df, psize, VERSION_WAL).map_err(clean)?;
            inner.marked = true;
        }
        let pos = inner.log.append(&parts).map_err(clean)?;
        inner.since_ckpt += pos.len;
        inner.patched += c.patches.len() as u64;
        Ok(tail.map(|tail| Appended {
            tail,
            len: pos.len,
            patched: c.patches.len() as u64,
        }))
    }

    /// Take back the record [`Wal::append_commit`] appended early, durably
    /// (the caller sees that no sync of the log runs meanwhile).
    pub(super) fn retract(&self, a: Appended) -> Result<()> {
        let mut inner = self.inner();
        inner.log.retract(a.tail)?;
        inner.since_ckpt = inner.since_ckpt.saturating_sub(a.len);
        inner.patched = inner.patched.saturating_sub(a.patched);
        Ok(())
    }

    /// Make every record appended so far durable: one sync of the log,
    /// run without holding it so that the next commits append meanwhile.
    /// Returns the last txnid it covers.
    pub(crate) fn sync_appended(&self) -> Result<Option<u64>> {
        let plan = self.inner().log.sync_plan()?;
        plan.run()?;
        self.inner().log.synced(&plan);
        Ok(plan.through)
    }

    /// Whether a spare segment should be made off the commit path.
    pub(crate) fn wants_spare(&self) -> bool {
        self.inner().log.wants_spare()
    }

    /// Make a spare segment: zero-filled without holding the log, then
    /// adopted (the caller holds the writer lock for that step: `adopt`).
    pub(crate) fn fill_spare(&self) -> Result<PathBuf> {
        let (dir, size) = {
            let g = self.inner();
            (g.log.dir().to_path_buf(), g.log.segment_size())
        };
        super::segment::fill_spare(&dir, size)
    }

    /// See [`Wal::fill_spare`].
    pub(crate) fn adopt_spare(&self, temp: &Path) -> Result<()> {
        let mut g = self.inner();
        if !g.log.wants_spare() || g.log.segment_size() != std::fs::metadata(temp)?.len() {
            let _ = std::fs::remove_file(temp);
            return Ok(());
        }
        g.log.adopt_spare(temp)
    }

    /// Make the data file a plain LMDB 0.9 file again (the caller holds
    /// the writer lock and checkpointed the newest meta).
    pub(crate) fn unmark(&self, df: &DataFile, psize: usize) -> Result<()> {
        let mut g = self.inner();
        g.marked = false;
        set_version(df, psize, VERSION)
    }

    /// After a commit that freed `freed` pages, of a data file of
    /// `last_pgno + 1` pages: whether to take a checkpoint, because enough
    /// log was written since the last one, or because of the pages freed
    /// since, which no writer reuses before the next one (their records'
    /// patches may need them). Past a 32nd of the file the background
    /// checkpointer is asked, early enough that its data-file sync (which
    /// commits do not wait for) is done before the next bound; past a
    /// tenth, when it has not kept up, the committing thread waits for a
    /// checkpoint before it returns, so that the file grows by about a
    /// tenth at most for the log's sake.
    pub(crate) fn wants_checkpoint(&self, freed: usize, last_pgno: u64) -> Due {
        let mut g = self.inner();
        g.held += freed as u64;
        let due = if g.held >= (last_pgno / 10).max(HELD_NOW_MIN) {
            g.waits += 1;
            Due::Now
        } else if g.since_ckpt >= self.opts.checkpoint_bytes
            || g.held >= (last_pgno / 32).max(HELD_MIN)
        {
            Due::Soon
        } else {
            Due::No
        };
        if due != Due::No && g.asked.is_none() {
            let held = g.held >= (last_pgno / 32).max(HELD_MIN);
            g.asked = Some(if held { Cause::Held } else { Cause::Bytes });
        }
        due
    }

    /// See `young.rs`.
    pub(crate) fn young(&self) -> Arc<Young> {
        self.inner().young.clone()
    }

    /// The txnid the last checkpoint covers.
    pub(crate) fn checkpointed(&self) -> u64 {
        self.inner().seen.1
    }

    /// See [`WalInfo`].
    pub(crate) fn info(&self) -> WalInfo {
        let g = self.inner();
        WalInfo {
            checkpoint_txnid: g.seen.1,
            bytes_since_checkpoint: g.since_ckpt,
            patched_pages: g.patched,
            segments: g.log.done.len() + 1,
            spare_segments: g.log.pool.spares.len() + usize::from(g.log.next.is_some()),
            records: g.log.appends,
            syncs: g.log.syncs,
            checkpoint_waits: g.waits,
            young_reused: g.young.reused(),
            checkpoints: g.counts[0],
            checkpoints_for_held: g.counts[1],
            checkpoints_for_bytes: g.counts[2],
        }
    }

    /// Record a checkpoint at `meta` (the caller synced the data file after
    /// every page of that transaction was written, and holds the writer
    /// lock), and recycle the segments it covers. `at_rest`: on demand or
    /// at the close, not while the log is being written (see
    /// `Log::settle`: spares are then cut down).
    pub(crate) fn checkpoint(&self, meta: &Meta, at_rest: bool) -> Result<()> {
        let mut inner = self.inner();
        if inner.ckpt.refresh()?.is_some_and(|s| s.txnid >= meta.txnid) {
            return match at_rest {
                true => inner.log.rest(data_bytes(meta)),
                false => Ok(()),
            };
        }
        inner.checkpoint_at(meta)?;
        // A backup chain may hold the log: its records past the newest
        // backup stay until the next one archives them.
        let keep = super::archive::hold(&self.dir).map_or(meta.txnid, |h| h.min(meta.txnid));
        inner.log.release_through(keep)?;
        // The next segment is made ready here, off the commit path.
        inner.log.settle(keep, data_bytes(meta), at_rest)
    }
}

impl Inner {
    /// The checkpoint as read or written now: the hold follows it.
    fn saw(&mut self, seen: (u64, u64)) {
        self.seen = seen;
        // Young for the checkpoint before, perhaps in this one's snapshot.
        self.young.clear();
        if let Some(h) = &self.hold {
            h.move_to(seen.1);
        }
    }

    /// After this handle changed the log's directory (under the writer
    /// lock, or alone), other handles must read it again before they
    /// write: state the checkpoint again, which moves its seq (what
    /// `Wal::reconcile` watches). Else another process could switch to a
    /// prepared segment this open retired.
    fn tell_others(&mut self) -> Result<()> {
        if !self.log.take_reshaped() {
            return Ok(());
        }
        self.reshaped_anew()
    }

    /// State the checkpoint again (see [`Inner::tell_others`]).
    fn reshaped_anew(&mut self) -> Result<()> {
        let ident = self.ckpt.ident();
        let cp = self.ckpt.refresh()?;
        self.ckpt.set_ident(ident);
        let (txnid, meta) = cp.map_or((0, Vec::new()), |s| (s.txnid, s.meta));
        self.ckpt.write(txnid, &meta)?;
        self.saw((self.ckpt.last_seq(), txnid));
        Ok(())
    }

    /// Write the checkpoint record for `meta` (the data file is synced).
    fn checkpoint_at(&mut self, meta: &Meta) -> Result<()> {
        self.ckpt.write(meta.txnid, &meta.encode_update())?;
        self.saw((self.ckpt.last_seq(), meta.txnid));
        self.since_ckpt = 0;
        self.held = 0;
        self.counts[0] += 1;
        match self.asked.take() {
            Some(Cause::Held) => self.counts[1] += 1,
            Some(Cause::Bytes) => self.counts[2] += 1,
            None => {}
        }
        Ok(())
    }
}

/// Bytes of the data file as `meta` sees it.
fn data_bytes(meta: &Meta) -> u64 {
    meta.last_pgno
        .saturating_add(1)
        .saturating_mul(u64::from(meta.psize()))
}

fn log_options(o: &WalOptions) -> LogOptions {
    // Enough spares for the segments a checkpoint frees, so that a
    // segment is renamed into place, not zero-filled, on the commit path.
    let per_checkpoint = o.checkpoint_bytes.div_ceil(o.segment_size.max(1));
    LogOptions {
        segment_size: o.segment_size,
        spare_segments: usize::try_from(per_checkpoint.saturating_add(1))
            .unwrap_or(usize::MAX)
            .clamp(2, 8),
        replay_only: false,
        accept_loss: false,
    }
}

/// Whether the data file's meta `meta` is the log's own record of that
/// txnid, where the log holds it (else another writer reused the txnid).
fn meta_agrees(inner: &Inner, df: &DataFile, meta: Option<Meta>) -> Result<bool> {
    let Some(m) = meta else {
        return Ok(true);
    };
    if inner.log.first_txnid().is_none_or(|f| f > m.txnid) {
        return Ok(true);
    }
    let mut agrees = true;
    inner.log.scan(m.txnid.saturating_sub(1), |r| {
        if r.txnid() == m.txnid {
            let (off, bytes) = r.meta();
            let mut b = vec![0u8; bytes.len()];
            df.read_exact_at(&mut b, off)?;
            agrees = *b == *bytes;
        }
        Ok(())
    })?;
    Ok(agrees)
}
