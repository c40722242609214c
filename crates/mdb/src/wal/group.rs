//! Group commit in write-ahead-log mode: the writer lock of this process's
//! threads, and the pipeline of commits appended to the log but not yet
//! durable.
//!
//! A write transaction holds the *token* (this process's writer lock)
//! while it runs and while its commit appends the record; then it gives
//! the token to the next writer and waits until its record is durable. One
//! waiter at a time syncs the log for every record appended so far (the
//! leader); after the sync it writes each covered commit's meta to the data
//! file and publishes it (`LockFile::set_txnid`), in commit order. So a
//! commit is visible to readers only once durable, and the next writer
//! builds on the newest appended commit (`head`): if that one is lost in a
//! crash, so is every later one (the log is a prefix).
//!
//! Other processes (ours and stock LMDB) are kept out by the lock file's
//! writer mutex, which must stay locked while appended commits are not yet
//! published, across the transactions of several threads. A robust mutex
//! is unlocked only by the thread that locked it, so a *holder* thread
//! locks it for this process when a writer wants the token, and unlocks it
//! once no writer holds or waits for the token and every appended commit
//! is published. A writer that finds the mutex newly taken (`Entry::fresh`)
//! reconciles the log with what other processes did meanwhile.

use crate::error::{Error, ErrorKind, Result};
use crate::format::meta::{Meta, META_WRITE_LEN};
use crate::io::DataFile;
use crate::lock::LockFile;
use crate::wal::mode::{MetaUpdate, Replayed, Wal};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

/// How long a leader waits at most for the writers at work or queued to
/// append their commits before it syncs the log for the group.
const GATHER: Duration = Duration::from_micros(200);

/// How long the first waiter for the token spins before it sleeps. Waking
/// a sleeping thread took 30 µs (median) on a 2-CPU virtual machine, as
/// long as a small transaction: with 8 threads committing, the token sat
/// idle between every two of them. One spinner at most, and only with
/// more than one CPU; the others sleep, and the one that takes the token
/// wakes the next to spin in its place.
const SPIN: Duration = Duration::from_micros(100);

/// This process's writers in WAL mode (see the module documentation).
pub(crate) struct Group {
    shared: Arc<Shared>,
    holder: Option<JoinHandle<()>>,
}

struct Shared {
    lock: Arc<LockFile>,
    /// How long the holder keeps the writer mutex once this process's
    /// writers are done, in case one comes back
    /// (`WalOptions::writer_grace`).
    grace: Duration,
    st: Mutex<State>,
    /// `State::relaxed`'s txnid, 0 without one: readers look here first and
    /// take the mutex only when there is something to see (readers of a
    /// durable-mode environment never do).
    relaxed_txnid: AtomicU64,
    /// The token is free: what the spinning waiter watches (see
    /// [`SPIN`]).
    free: AtomicBool,
    /// Waiters may spin: there is more than one CPU.
    spin: bool,
    /// The token was given back, or the holder took (or failed to take)
    /// the writer mutex.
    token_cv: Condvar,
    /// `want` or `stop` changed: for the holder.
    holder_cv: Condvar,
    /// A sync of the log ended.
    durable_cv: Condvar,
    /// The token was given back: for a leader gathering commits.
    gather_cv: Condvar,
}

#[derive(Default)]
struct State {
    /// The token: a write transaction (or checkpoint) of this process.
    owner: Option<ThreadId>,
    waiting: usize,
    /// One of the waiters spins for the token rather than sleeping.
    spinner: bool,
    /// A writer asks the holder thread to lock the lock file's writer
    /// mutex.
    want: bool,
    /// Times the token was taken (the holder unlocks after a quiet spell).
    entries: u64,
    /// It does.
    held: bool,
    /// Times it locked the mutex; `seen` is the last one a writer saw.
    gen: u64,
    seen: u64,
    /// The previous owner of the mutex died holding it.
    recovered: bool,
    lock_err: Option<Error>,
    stop: bool,
    /// The newest appended commit's meta, while the mutex stays held.
    head: Option<Meta>,
    /// The newest commit made with relaxed durability, not yet published:
    /// this process's readers see it.
    relaxed: Option<Meta>,
    /// Appended, not yet published: txnid, meta offset, meta update.
    pending: VecDeque<MetaUpdate>,
    /// A leader is syncing the log.
    syncing: bool,
    /// The newest txnid a sync of the log covered (records appended ahead
    /// of their pages are synced before they are pending).
    synced_through: u64,
    /// Commits the last sync covered.
    last_group: usize,
    /// Threads waiting on `durable_cv`; the leader waiting on `gather_cv`
    /// for its group (a notification is a system call even with nobody
    /// waiting).
    durable_waiters: usize,
    gatherer: Option<ThreadId>,
    /// The log or data file failed: nothing more can be made durable.
    failed: Option<Error>,
}

/// What a writer that took the token must know.
pub(crate) struct Entry {
    /// The writer mutex was taken anew: other processes may have written.
    pub(crate) fresh: bool,
    /// Its previous owner died holding it.
    pub(crate) recovered: bool,
    /// The meta to build on when commits are still in the pipeline.
    pub(crate) head: Option<Meta>,
}

impl State {
    /// The group a leader gathers is complete: no writer of this process
    /// is at work or queued, and it is as large as the last one.
    fn gathered(&self) -> bool {
        self.owner.is_none() && self.waiting == 0 && self.pending.len() >= self.last_group
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Spin until the token looks free, for [`SPIN`] at most.
    fn spin_for_token(&self) {
        let start = Instant::now();
        while !self.free.load(Ordering::Acquire) && start.elapsed() < SPIN {
            for _ in 0..32 {
                std::hint::spin_loop();
            }
        }
    }

    fn wait<'a>(&self, cv: &Condvar, g: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        cv.wait(g).unwrap_or_else(|p| p.into_inner())
    }
}

impl Group {
    /// Start the holder thread of the environment whose lock file is `lock`.
    pub(crate) fn spawn(lock: Arc<LockFile>, grace: Duration) -> Result<Group> {
        let shared = Arc::new(Shared {
            lock,
            grace,
            st: Mutex::new(State::default()),
            relaxed_txnid: AtomicU64::new(0),
            free: AtomicBool::new(true),
            spin: std::thread::available_parallelism().is_ok_and(|n| n.get() > 1),
            token_cv: Condvar::new(),
            holder_cv: Condvar::new(),
            durable_cv: Condvar::new(),
            gather_cv: Condvar::new(),
        });
        let s = shared.clone();
        let holder = std::thread::Builder::new()
            .name("mdb-writer-lock".into())
            .spawn(move || hold(&s))?;
        Ok(Group {
            shared,
            holder: Some(holder),
        })
    }

    /// Whether the calling thread holds the token.
    pub(crate) fn is_mine(&self) -> bool {
        self.shared.state().owner == Some(std::thread::current().id())
    }

    /// Take the token (and, through the holder, the writer mutex).
    pub(crate) fn enter(&self) -> Result<Entry> {
        let me = std::thread::current().id();
        let sh = &*self.shared;
        let mut g = sh.state();
        if g.owner == Some(me) {
            return Err(ErrorKind::BadTxn.into());
        }
        g.waiting += 1;
        let mut spun = false;
        while g.owner.is_some() {
            if sh.spin && !spun && !g.spinner {
                spun = true;
                g.spinner = true;
                drop(g);
                sh.spin_for_token();
                g = sh.state();
                g.spinner = false;
                continue;
            }
            g = sh.wait(&sh.token_cv, g);
            spun = false;
        }
        g.waiting -= 1;
        if let Some(e) = &g.failed {
            sh.token_cv.notify_one();
            return Err(e.clone());
        }
        sh.free.store(false, Ordering::Relaxed);
        if sh.spin && g.waiting > 0 && !g.spinner {
            // The next in line wakes now and spins while this one works.
            sh.token_cv.notify_one();
        }
        g.owner = Some(me);
        g.entries += 1;
        if !g.held {
            g.want = true;
            sh.holder_cv.notify_one();
        }
        while !g.held {
            if let Some(e) = g.lock_err.take() {
                g.owner = None;
                sh.free.store(true, Ordering::Release);
                sh.token_cv.notify_one();
                return Err(e);
            }
            g = sh.wait(&sh.token_cv, g);
        }
        let fresh = g.gen != g.seen;
        g.seen = g.gen;
        if fresh {
            g.head = None;
        }
        Ok(Entry {
            fresh,
            recovered: std::mem::take(&mut g.recovered),
            head: g.head,
        })
    }

    /// Give the token back.
    pub(crate) fn leave(&self) {
        let sh = &*self.shared;
        let mut g = sh.state();
        g.owner = None;
        sh.free.store(true, Ordering::Release);
        // A spinning waiter sees `free` without a wake-up.
        if g.waiting > 0 && !g.spinner {
            sh.token_cv.notify_one();
        }
        // A gathering leader waits for the queue to drain.
        if g.gatherer.is_some() && g.waiting == 0 {
            sh.gather_cv.notify_one();
        }
    }

    /// The token holder appended the commit of `meta` (its update at
    /// `meta_off`): the next writer builds on it.
    /// `relaxed`: its thread does not wait for it to be durable; readers
    /// of this process see it at once.
    pub(crate) fn appended(
        &self,
        meta: Meta,
        meta_off: u64,
        upd: [u8; META_WRITE_LEN],
        relaxed: bool,
    ) {
        let mut g = self.shared.state();
        g.head = Some(meta);
        if relaxed {
            // A later durable commit does not hide it again.
            g.relaxed = Some(meta);
            self.shared
                .relaxed_txnid
                .store(meta.txnid, Ordering::Release);
        }
        g.pending.push_back(MetaUpdate {
            txnid: meta.txnid,
            off: meta_off,
            bytes: upd,
        });
    }

    /// The newest commit this process's readers may see beyond the
    /// published one, if newer than `published`.
    pub(crate) fn visible(&self, published: u64) -> Option<Meta> {
        if self.shared.relaxed_txnid.load(Ordering::Acquire) <= published {
            return None;
        }
        self.shared.state().relaxed.filter(|m| m.txnid > published)
    }

    /// Wait until commit `txnid` is durable and published, syncing the log
    /// for the group when no other waiter does. An error means the log or
    /// the data file failed: nothing can be trusted until a reopen.
    pub(crate) fn wait_durable(&self, txnid: u64, wal: &Wal, df: &DataFile) -> Result<()> {
        let sh = &*self.shared;
        let mut g = sh.state();
        loop {
            if g.pending.front().is_none_or(|p| p.txnid > txnid) {
                // Published (a failure leaves the commits it lost pending).
                return Ok(());
            }
            if let Some(e) = &g.failed {
                return Err(e.clone());
            }
            if g.synced_through >= txnid {
                // Its record was synced ahead of its pages (`sync_ahead`).
                let through = g.synced_through;
                if let Err(e) = publish(&mut g.pending, through, df, &sh.lock) {
                    g.failed = Some(e);
                    sh.durable_cv.notify_all();
                    sh.token_cv.notify_all();
                }
                continue;
            }
            let gathered = g.gathered();
            if g.syncing || (g.gatherer.is_some() && !gathered) {
                g.durable_waiters += 1;
                g = sh.wait(&sh.durable_cv, g);
                g.durable_waiters -= 1;
                continue;
            }
            if g.gatherer.take().is_some() {
                // The group is complete while its leader sleeps: sync it
                // now rather than after the leader's wake-up (as long as
                // a small transaction here); the leader steps back.
                sh.gather_cv.notify_one();
            } else if !gathered {
                // Writers of this process are at work or queued, or the
                // last group was larger: their commits can share this sync
                // if it waits for them, a little.
                let me = std::thread::current().id();
                let start = Instant::now();
                g.gatherer = Some(me);
                while g.gatherer == Some(me) && !g.gathered() {
                    let waited = start.elapsed();
                    if waited >= GATHER {
                        break;
                    }
                    g = sh
                        .gather_cv
                        .wait_timeout(g, GATHER - waited)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                if g.gatherer != Some(me) {
                    // Another waiter took the group over.
                    continue;
                }
                g.gatherer = None;
                if g.syncing {
                    // The flusher began one meanwhile (`sync_ahead`): one
                    // sync at a time, so that `retract` can wait them out.
                    continue;
                }
            }
            g.last_group = g.pending.len();
            g = self.sync_round(g, wal, df);
        }
    }

    /// Sync the log for every record appended so far, then publish the
    /// pending commits it covers (the caller checked no sync runs).
    fn sync_round<'a>(
        &'a self,
        mut g: MutexGuard<'a, State>,
        wal: &Wal,
        df: &DataFile,
    ) -> MutexGuard<'a, State> {
        let sh = &*self.shared;
        g.syncing = true;
        drop(g);
        let r = wal.sync_appended();
        g = sh.state();
        g.syncing = false;
        match r {
            Ok(through) => {
                g.synced_through = g.synced_through.max(through.unwrap_or(0));
                let through = g.synced_through;
                if let Err(e) = publish(&mut g.pending, through, df, &sh.lock) {
                    g.failed = Some(e);
                }
            }
            Err(e) => g.failed = Some(e),
        }
        if g.durable_waiters > 0 {
            sh.durable_cv.notify_all();
        }
        if g.failed.is_some() {
            sh.token_cv.notify_all();
        }
        g
    }

    /// Sync the log now, off the committing thread, for a record appended
    /// ahead of its pages: the sync runs while they are written. Nothing
    /// to do when a sync runs already (the committing thread then leads
    /// the next one if it must).
    pub(crate) fn sync_ahead(&self, wal: &Wal, df: &DataFile) {
        let g = self.shared.state();
        if g.syncing || g.failed.is_some() {
            return;
        }
        drop(self.sync_round(g, wal, df));
    }

    /// Run `take_back`, which retracts the record of commit `txnid` that
    /// the token holder appended ahead of its pages, once no sync of the
    /// log runs, and with none starting meanwhile. A failure leaves the
    /// log's content unknown: nothing more is made durable.
    pub(crate) fn retract(&self, txnid: u64, take_back: impl FnOnce() -> Result<()>) -> Result<()> {
        let sh = &*self.shared;
        let mut g = sh.state();
        while g.syncing {
            g.durable_waiters += 1;
            g = sh.wait(&sh.durable_cv, g);
            g.durable_waiters -= 1;
        }
        let r = take_back();
        g.synced_through = g.synced_through.min(txnid.saturating_sub(1));
        if let Err(e) = &r {
            g.failed = Some(e.clone());
            sh.durable_cv.notify_all();
            sh.token_cv.notify_all();
        }
        r
    }

    /// Wait until every appended commit is published (the caller holds
    /// the token, so none is appended meanwhile).
    pub(crate) fn drain(&self, wal: &Wal, df: &DataFile) -> Result<()> {
        let last = self.shared.state().pending.back().map(|p| p.txnid);
        match last {
            Some(t) => self.wait_durable(t, wal, df),
            None => Ok(()),
        }
    }
}

/// Publish the commits of `pending` up to `through` (now durable), in
/// one step: the newest of them and the newest before it in the other meta
/// slot are written (`publish_metas`), and readers are told the newest
/// txnid. The metas in between would be overwritten at once; no reader
/// could pick them.
fn publish(
    pending: &mut VecDeque<MetaUpdate>,
    through: u64,
    df: &DataFile,
    lock: &LockFile,
) -> Result<()> {
    let n = pending.iter().take_while(|p| p.txnid <= through).count();
    let Some(last) = n.checked_sub(1).and_then(|i| pending.get(i)) else {
        return Ok(());
    };
    let other = pending.range(..n).rev().find(|p| p.off != last.off);
    publish_metas(df, lock, other, last)?;
    pending.drain(..n);
    Ok(())
}

/// Publish what [`Wal::reconcile`] replayed (the caller holds the writer
/// lock; readers may be at work).
pub(crate) fn publish_replayed(df: &DataFile, lock: &LockFile, r: &Replayed) -> Result<()> {
    publish_metas(df, lock, r.other.as_ref(), &r.last)
}

/// Write the metas of `last`, the newest commit to publish, and of
/// `other`, the newest before it whose meta goes to the other slot, and
/// publish `last`. A reader copies the meta
/// of the txnid `lock` shows and then checks that txnid again: the slot of
/// the published commit must not change before that txnid moves on (as
/// LMDB's writer of `t + 2` rewrites the slot of `t` only once `t + 1` is
/// published). So the meta that goes to that slot is written only after
/// the other one is published; writing both before one `set_txnid` let a
/// reader take a torn copy (a root of one commit with the last page of
/// another: `PageNotFound` in a reader of an 8-thread group commit test).
fn publish_metas(
    df: &DataFile,
    lock: &LockFile,
    other: Option<&MetaUpdate>,
    last: &MetaUpdate,
) -> Result<()> {
    let cur = lock.txnid();
    match other {
        Some(o) if (last.txnid ^ cur) & 1 == 0 => {
            // `last` goes to the slot of `cur`: move readers off it first.
            df.write_meta(o.off, &o.bytes, false)?;
            lock.set_txnid(o.txnid);
            df.write_meta(last.off, &last.bytes, false)?;
            lock.set_txnid(last.txnid);
        }
        _ => {
            df.write_meta(last.off, &last.bytes, false)?;
            lock.set_txnid(last.txnid);
            if let Some(o) = other {
                // The slot of `cur`, which no new reader copies now.
                df.write_meta(o.off, &o.bytes, false)?;
            }
        }
    }
    Ok(())
}

/// The holder thread: lock the writer mutex when a writer wants it; unlock
/// it once this process's writers were idle for a grace period (no
/// token holder or waiter, no commit in the pipeline, no new entry).
fn hold(sh: &Shared) {
    let mut g = sh.state();
    loop {
        if g.stop {
            if g.held {
                g.held = false;
                drop(g);
                sh.lock.unlock_writer();
            }
            return;
        }
        if !g.held {
            if !g.want {
                g = sh.wait(&sh.holder_cv, g);
                continue;
            }
            drop(g);
            let r = sh.lock.lock_writer();
            g = sh.state();
            g.want = false;
            match r {
                Ok(recovered) => {
                    g.held = true;
                    g.gen += 1;
                    g.recovered |= recovered;
                }
                Err(e) => g.lock_err = Some(e),
            }
            sh.token_cv.notify_all();
            continue;
        }
        // A writer of this process usually comes back at once: keeping the
        // mutex a little longer spares it a handoff to this thread and a
        // look at the log.
        let entries = g.entries;
        g = sh
            .holder_cv
            .wait_timeout(g, sh.grace)
            .unwrap_or_else(|p| p.into_inner())
            .0;
        let idle = g.owner.is_none() && g.waiting == 0 && g.pending.is_empty();
        if idle && g.entries == entries && !g.stop {
            // Not held for this process from here on, even while unlocking.
            g.held = false;
            g.head = None;
            g.relaxed = None;
            sh.relaxed_txnid.store(0, Ordering::Release);
            drop(g);
            sh.lock.unlock_writer();
            g = sh.state();
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        {
            let mut g = self.shared.state();
            g.stop = true;
            self.shared.holder_cv.notify_one();
        }
        if let Some(t) = self.holder.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(dir: &std::path::Path, grace: Duration) -> Group {
        let lock = LockFile::open(&dir.join("lock.mdb"), 126, 0o644).unwrap();
        Group::spawn(Arc::new(lock), grace).unwrap()
    }

    /// With a long grace, a writer that comes back after an idle spell
    /// finds the writer mutex still held for the process (not `fresh`):
    /// no hand-off to the holder, no look at the log.
    #[test]
    fn a_long_writer_grace_keeps_the_writer_mutex_between_bursts() {
        let dir = tempfile::tempdir().unwrap();
        let g = group(dir.path(), Duration::from_secs(3600));
        assert!(g.enter().unwrap().fresh);
        g.leave();
        std::thread::sleep(Duration::from_millis(50));
        assert!(!g.enter().unwrap().fresh);
        g.leave();
    }
}
