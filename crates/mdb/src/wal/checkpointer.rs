//! WAL mode at the environment: the log state shared with the background
//! threads (the checkpointer, the flusher), and what a checkpoint does.
//!
//! A checkpoint reads the newest meta, syncs the data file (every page of
//! that transaction was written before its meta), then, under the writer
//! lock so that no process changes the log meanwhile, reads the newest
//! meta again (syncing again if it moved: see [`WalEnv::checkpoint`]),
//! records the checkpoint and recycles the log segments it covers. The thread takes one
//! every `checkpoint_interval`, or sooner once `checkpoint_bytes` of log
//! were written; `Env::checkpoint` takes one on demand and closing the
//! environment takes a last one.

use crate::error::{ErrorKind, Result};
use crate::format::meta::Meta;
use crate::io::DataFile;
use crate::lock::LockFile;
use crate::sink::CommitSink;
use crate::wal::group::Group;
use crate::wal::mode::Wal;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How soon the flusher syncs the log after a NO_SYNC commit (without
/// `sync_every`). A commit's meta reaches the data file, where other
/// processes look for it, only once its record is durable; LMDB's readers
/// and writers elsewhere see a NO_SYNC commit at once, so the wait is kept
/// short rather than left to the next checkpoint (up to its interval, with
/// the writer lock held meanwhile).
const NO_SYNC_PERIOD: Duration = Duration::from_millis(10);

/// What an environment in WAL mode shares with its background threads;
/// also its commit sink (`wal/sink.rs`).
pub(crate) struct WalEnv {
    pub(crate) wal: Wal,
    /// This process's writers (group commit).
    pub(crate) group: Group,
    /// A descriptor of the data file of its own (the thread outlives no
    /// `Env`, but must not borrow one).
    pub(super) file: DataFile,
    pub(super) lock: Arc<LockFile>,
    pub(super) psize: usize,
    wake: Mutex<Wake>,
    cv: Condvar,
}

#[derive(Default)]
struct Wake {
    stop: bool,
    kick: bool,
    /// A commit with relaxed durability waits for the log sync.
    flush: bool,
    /// The log has no spare segment: make one off the commit path.
    spare: bool,
    /// A record was appended ahead of its pages: sync the log now.
    ahead: bool,
    /// The checkpointer thread runs, and has ended this many checkpoints
    /// (successful or not).
    running: bool,
    ended: u64,
}

/// A background thread of an environment in WAL mode (the checkpointer,
/// the flusher); stopped and joined on drop.
pub(crate) struct Worker {
    shared: Arc<WalEnv>,
    thread: Option<JoinHandle<()>>,
}

impl WalEnv {
    pub(crate) fn new(
        wal: Wal,
        file: DataFile,
        lock: Arc<LockFile>,
        psize: usize,
    ) -> Result<WalEnv> {
        Ok(WalEnv {
            group: Group::spawn(lock.clone(), wal.opts.writer_grace)?,
            wal,
            file,
            lock,
            psize,
            wake: Mutex::new(Wake::default()),
            cv: Condvar::new(),
        })
    }

    /// The newest meta of the data file as it is now.
    fn newest_meta(&self) -> Result<Meta> {
        self.file.newest_meta(self.psize)
    }

    /// Take a checkpoint; returns the txnid it covers. `plain` (on demand
    /// and at close) also covers commits made meanwhile and makes the data
    /// file a plain LMDB 0.9 file; the background thread leaves it marked,
    /// which costs the next commit nothing. The calling thread must not
    /// hold this environment's write transaction (`BadTxn`).
    pub(crate) fn checkpoint(&self, plain: bool) -> Result<u64> {
        if self.group.is_mine() {
            // Its write transaction holds the lock the checkpoint needs.
            return Err(ErrorKind::BadTxn.into());
        }
        if self.group.visible(self.lock.txnid()).is_some() {
            // Commits of relaxed durability (NO_SYNC's wait for this):
            // durable and published first, so that the checkpoint covers
            // them and the pages held for them are reused after it.
            self.group.drain(&self.wal, &self.file)?;
        }
        let m = self.newest_meta()?;
        let behind = m.txnid > self.wal.checkpointed();
        if !behind && !plain {
            return Ok(self.wal.checkpointed());
        }
        if behind {
            // The bulk of the sync, before writers are held up.
            self.file.sync_data()?;
        }
        self.locked(|| {
            if !plain {
                // The newest meta now, not `m`: since `m` was read, a
                // writer may have reused young pages (`young.rs`)
                // of its snapshot, freed by a later commit; none of the
                // published snapshot's (a page is reused only once the
                // commit that freed it is published). Its pages were
                // written before it was: one more sync, short after the
                // one above, covers them.
                let now = self.newest_meta()?;
                if now.txnid <= self.wal.checkpointed() {
                    return Ok(self.wal.checkpointed());
                }
                if now.txnid != m.txnid {
                    self.file.sync_data()?;
                }
                self.wal.checkpoint(&now, false)?;
                return Ok(now.txnid);
            }
            // Every commit of this process published first.
            self.group.drain(&self.wal, &self.file)?;
            let now = self.newest_meta()?;
            if now.txnid > self.wal.checkpointed() {
                self.file.sync_data()?;
            }
            // Also cuts the spares down, checkpointed before or not.
            self.wal.checkpoint(&now, true)?;
            self.wal.unmark(&self.file, self.psize)?;
            Ok(now.txnid)
        })
    }

    /// Run `f` holding the writer lock (the group's token), after the look
    /// at the log every new tenure of the lock needs
    /// ([`CommitSink::lock`]).
    fn locked<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.lock()?;
        let r = f();
        self.unlock();
        r
    }

    /// Make a spare log segment, so that no commit zero-fills one.
    fn prepare_spare(&self) -> Result<()> {
        if !self.wal.wants_spare() {
            return Ok(());
        }
        let temp = self.wal.fill_spare()?;
        let r = self.locked(|| self.wal.adopt_spare(&temp));
        if r.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        r
    }

    /// The log ran out of spare segments: the background thread makes one
    /// (when background threads run).
    pub(super) fn spare_soon(&self) {
        if !self.wal.opts.checkpointer {
            return;
        }
        let mut w = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        if !w.spare {
            w.spare = true;
            self.cv.notify_all();
        }
    }

    /// A durable commit appended its record ahead of its pages: the
    /// flusher syncs the log while the committing thread writes them.
    pub(super) fn sync_ahead_soon(&self) {
        let mut w = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        w.ahead = true;
        self.cv.notify_all();
    }

    /// The pages held for the log reached their bound: wait until the
    /// checkpointer thread's checkpoints cover the newest published
    /// commit. The one under way (started for earlier commits, its data
    /// sync well advanced, usually) ends first, then one more if that did
    /// not cover it; two attempts at most, so that a failing checkpoint
    /// does not stop commits. Without that thread, take one here.
    pub(super) fn await_checkpoint(&self) {
        let Ok(target) = self.newest_meta().map(|m| m.txnid) else {
            return;
        };
        let mut w = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        if !w.running {
            drop(w);
            let _ = self.checkpoint(false);
            return;
        }
        let first = w.ended;
        while w.running && !w.stop && w.ended < first + 2 && self.wal.checkpointed() < target {
            w.kick = true;
            self.cv.notify_all();
            w = self.cv.wait(w).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Ask the thread for a checkpoint soon (enough log was written).
    pub(super) fn kick(&self) {
        let mut w = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        w.kick = true;
        self.cv.notify_all();
    }

    /// A commit with relaxed durability was appended: the flusher syncs the
    /// log within the period (`sync_every`, else [`NO_SYNC_PERIOD`]).
    pub(super) fn flush_soon(&self) {
        let mut w = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        if !w.flush {
            w.flush = true;
            self.cv.notify_all();
        }
    }

    /// Whether a commit, under NO_SYNC if `no_sync`, returns without
    /// waiting for the log's sync: with `sync_every`, or under NO_SYNC
    /// (LMDB's meaning: a crash may lose the last commits; their metas go
    /// to the data file only once their records are durable, so the
    /// environment stays consistent).
    pub(super) fn relaxed(&self, no_sync: bool) -> bool {
        no_sync || self.wal.opts.sync_every.is_some()
    }
}

impl Worker {
    fn spawn(shared: Arc<WalEnv>, name: &str, body: fn(&WalEnv)) -> Result<Worker> {
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(&s))?;
        Ok(Worker {
            shared,
            thread: Some(thread),
        })
    }

    /// The checkpointer: a checkpoint every `checkpoint_interval`, or once
    /// `checkpoint_bytes` of log were written.
    pub(crate) fn checkpointer(shared: Arc<WalEnv>) -> Result<Worker> {
        // Commits wait for it from now on (`WalEnv::await_checkpoint`).
        shared
            .wake
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .running = true;
        let w = Worker::spawn(shared.clone(), "mdb-checkpointer", run);
        if w.is_err() {
            shared
                .wake
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .running = false;
        }
        w
    }

    /// The flusher of relaxed durability: once a relaxed commit is
    /// appended under `sync_every`, wait for the period, then sync the log
    /// for every commit appended (NO_SYNC's wait for a checkpoint). It also syncs the log at once for a durable commit that
    /// appended its record ahead of its pages, and makes spare log
    /// segments ahead of need.
    pub(crate) fn flusher(shared: Arc<WalEnv>) -> Result<Worker> {
        Worker::spawn(shared, "mdb-log-flusher", flush_loop)
    }
}

/// Wait on the workers' condition variable until `until` or until `done`
/// (the close included): the workers share it, so a wake-up is only a
/// reason to look again.
fn wait_until<'a>(
    s: &WalEnv,
    mut w: MutexGuard<'a, Wake>,
    until: Instant,
    done: impl Fn(&Wake) -> bool,
) -> MutexGuard<'a, Wake> {
    while !w.stop && !done(&w) {
        let now = Instant::now();
        if now >= until {
            break;
        }
        w =
            s.cv.wait_timeout(w, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
    }
    w
}

fn flush_loop(s: &WalEnv) {
    loop {
        let mut w = s.wake.lock().unwrap_or_else(|p| p.into_inner());
        while !w.stop && !w.flush && !w.spare && !w.ahead {
            w = s.cv.wait(w).unwrap_or_else(|p| p.into_inner());
        }
        if w.stop {
            return;
        }
        if std::mem::take(&mut w.ahead) {
            drop(w);
            // A failure marks the group failed: the commit reports it.
            s.group.sync_ahead(&s.wal, &s.file);
            continue;
        }
        if std::mem::take(&mut w.spare) {
            drop(w);
            // A failure leaves the commit path to make the segment.
            let _ = s.prepare_spare();
            continue;
        }
        // The period, cut short only by the close (which flushes itself).
        let until = Instant::now() + s.wal.opts.sync_every.unwrap_or(NO_SYNC_PERIOD);
        let mut w = wait_until(s, w, until, |_| false);
        if w.stop {
            return;
        }
        w.flush = false;
        drop(w);
        // A failure marks the group failed: the next commit reports it.
        let _ = s.flush();
    }
}

fn run(s: &WalEnv) {
    let every = s.wal.opts.checkpoint_interval;
    loop {
        let w = s.wake.lock().unwrap_or_else(|p| p.into_inner());
        let mut w = wait_until(s, w, Instant::now() + every, |w| w.kick);
        if w.stop {
            w.running = false;
            s.cv.notify_all();
            return;
        }
        w.kick = false;
        drop(w);
        // A failure is retried next time; the log keeps every commit
        // durable meanwhile, and `Env::checkpoint` reports errors.
        let _ = s.checkpoint(false);
        let mut w = s.wake.lock().unwrap_or_else(|p| p.into_inner());
        w.ended += 1;
        s.cv.notify_all();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        {
            let mut w = self.shared.wake.lock().unwrap_or_else(|p| p.into_inner());
            w.stop = true;
            self.shared.cv.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
