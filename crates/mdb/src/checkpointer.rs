//! WAL mode at the environment: the log state shared with the background
//! checkpointer thread, and what a checkpoint does.
//!
//! A checkpoint reads the newest meta, syncs the data file (every page of
//! that transaction was written before its meta), then, under the writer
//! lock so that no process changes the log meanwhile, records the
//! checkpoint and recycles the log segments it covers. The thread takes one
//! every `checkpoint_interval`, or sooner once `checkpoint_bytes` of log
//! were written; `Env::checkpoint` takes one on demand and closing the
//! environment takes a last one.

use crate::error::{Error, Result};
use crate::format::meta::{pick_meta, Meta, META_LEN};
use crate::group::Group;
use crate::io::DataFile;
use crate::lock::LockFile;
use crate::wal::mode::Wal;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What an environment in WAL mode shares with its checkpointer thread.
pub(crate) struct WalEnv {
    pub(crate) wal: Wal,
    /// This process's writers (group commit).
    pub(crate) group: Group,
    /// A descriptor of the data file of its own (the thread outlives no
    /// `Env`, but must not borrow one).
    file: DataFile,
    lock: Arc<LockFile>,
    psize: usize,
    wake: Mutex<Wake>,
    cv: Condvar,
}

#[derive(Default)]
struct Wake {
    stop: bool,
    kick: bool,
    /// A commit with relaxed durability waits for the log sync.
    flush: bool,
}

/// The background checkpointer of one environment; stopped and joined on
/// drop.
pub(crate) struct Checkpointer {
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
            wal,
            group: Group::spawn(lock.clone())?,
            file,
            lock,
            psize,
            wake: Mutex::new(Wake::default()),
            cv: Condvar::new(),
        })
    }

    /// The newest meta of the data file as it is now.
    fn newest_meta(&self) -> Result<Meta> {
        let read = |slot: u64| {
            let mut b = [0u8; META_LEN];
            self.file.read_exact_at(&mut b, slot * self.psize as u64)?;
            Meta::decode(&b)
        };
        Ok(pick_meta(read(0), read(1))?.1)
    }

    /// Take a checkpoint; returns the txnid it covers. `plain` (on demand
    /// and at close) also covers commits made meanwhile and makes the data
    /// file a plain LMDB 0.9 file; the background thread leaves it marked,
    /// which costs the next commit nothing. The calling thread must not
    /// hold this environment's write transaction (`BadTxn`).
    pub(crate) fn checkpoint(&self, plain: bool) -> Result<u64> {
        if self.group.is_mine() {
            // Its write transaction holds the lock the checkpoint needs.
            return Err(Error::BadTxn);
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
        let e = self.group.enter()?;
        let r = (|| {
            if e.recovered {
                // A writer died: its uncommitted pages are unreferenced.
                self.lock.set_txnid(m.txnid.max(self.lock.txnid()));
            }
            if e.fresh {
                // Another process may have written the log since: look
                // again, and replay what a writer that died after its log
                // sync left.
                if let Some(t) = self.wal.reconcile(&self.file, self.psize, false)? {
                    self.lock.set_txnid(t);
                }
            }
            if !plain {
                self.wal.checkpoint(&m)?;
                return Ok(m.txnid);
            }
            // Every commit of this process published first.
            self.group.drain(&self.wal, &self.file)?;
            let now = self.newest_meta()?;
            if now.txnid > self.wal.checkpointed() {
                self.file.sync_data()?;
                self.wal.checkpoint(&now)?;
            }
            self.wal.unmark(&self.file, self.psize)?;
            Ok(now.txnid)
        })();
        self.group.leave();
        r
    }

    /// Ask the thread for a checkpoint soon (enough log was written).
    pub(crate) fn kick(&self) {
        let mut w = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        w.kick = true;
        self.cv.notify_all();
    }

    /// A commit with relaxed durability was appended: the flusher syncs the
    /// log within the period.
    pub(crate) fn flush_soon(&self) {
        let mut w = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        if !w.flush {
            w.flush = true;
            self.cv.notify_all();
        }
    }

    /// Make every appended commit durable and published now.
    pub(crate) fn flush(&self) -> Result<()> {
        self.group.drain(&self.wal, &self.file)
    }

    /// The period of relaxed durability for a commit under `flags`, if
    /// relaxed.
    pub(crate) fn relaxed(&self, no_sync: bool) -> Option<Duration> {
        match (self.wal.opts.sync_every, no_sync) {
            (Some(d), _) => Some(d),
            (None, true) => Some(Duration::from_millis(10)),
            (None, false) => None,
        }
    }
}

impl Checkpointer {
    /// Start the thread.
    pub(crate) fn spawn(shared: Arc<WalEnv>) -> Result<Checkpointer> {
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("mdb-checkpointer".into())
            .spawn(move || run(&s))
            .map_err(|e| Error::Os(e.raw_os_error().unwrap_or(libc::EAGAIN)))?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }
}

/// The flusher of relaxed durability: once a relaxed commit is appended,
/// wait for the period, then sync the log for every commit appended.
pub(crate) struct Flusher {
    shared: Arc<WalEnv>,
    thread: Option<JoinHandle<()>>,
}

impl Flusher {
    /// Start the thread.
    pub(crate) fn spawn(shared: Arc<WalEnv>) -> Result<Flusher> {
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("mdb-log-flusher".into())
            .spawn(move || flush_loop(&s))
            .map_err(|e| Error::Os(e.raw_os_error().unwrap_or(libc::EAGAIN)))?;
        Ok(Flusher {
            shared,
            thread: Some(thread),
        })
    }
}

fn flush_loop(s: &WalEnv) {
    loop {
        let mut w = s.wake.lock().unwrap_or_else(|p| p.into_inner());
        while !w.stop && !w.flush {
            w = s.cv.wait(w).unwrap_or_else(|p| p.into_inner());
        }
        if w.stop {
            return;
        }
        // Wait out the period, but not past the close (whose checkpoint
        // makes every commit durable): a sleep would hold up the drop of
        // the environment for the rest of the period.
        let period = s.relaxed(true).unwrap_or_default();
        let until = std::time::Instant::now() + period;
        loop {
            let now = std::time::Instant::now();
            if w.stop {
                return;
            }
            if now >= until {
                break;
            }
            w =
                s.cv.wait_timeout(w, until - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
        }
        w.flush = false;
        drop(w);
        // A failure marks the group failed: the next commit reports it.
        let _ = s.flush();
    }
}

impl Drop for Flusher {
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

fn run(s: &WalEnv) {
    let every = s.wal.opts.checkpoint_interval;
    loop {
        let mut w = s.wake.lock().unwrap_or_else(|p| p.into_inner());
        // The flusher shares the condition variable: wake-ups for it are
        // not a reason to checkpoint.
        let until = std::time::Instant::now() + every;
        while !w.stop && !w.kick {
            let now = std::time::Instant::now();
            if now >= until {
                break;
            }
            w =
                s.cv.wait_timeout(w, until - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
        }
        if w.stop {
            return;
        }
        w.kick = false;
        drop(w);
        // A failure is retried next time; the log keeps every commit
        // durable meanwhile, and `Env::checkpoint` reports errors.
        let _ = s.checkpoint(false);
    }
}

impl Drop for Checkpointer {
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
