//! The reader table: taking and giving back slots, the oldest snapshot
//! any reader holds, the stale-reader check (a slot whose process holds no
//! lock on its pid's byte is a dead process's), and the slots an `Env`'s
//! threads hold.

use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::file::{byte_lock, current_tid, getpid, LockFile};
use super::layout::{
    HEADER, IDLE, OFF_NUMREADERS, OFF_RMUTEX, SLOT_PID, SLOT_SIZE, SLOT_TID, SLOT_TXNID,
};
use crate::error::{ErrorKind, Result};

/// One reader slot as [`Env::readers`](crate::Env::readers) lists it.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let env = mdb::Env::open(dir.path())?;
/// let r = env.read_txn()?;
/// let me = env.readers()[0];
/// assert_eq!(me.pid, std::process::id());
/// assert_eq!(me.txnid, Some(0)); // reading the empty snapshot
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderInfo {
    /// Process id of the slot's owner.
    pub pid: u32,
    /// Thread id (`pthread_t`) of the owner.
    pub tid: u64,
    /// Snapshot txnid being read; `None` when the slot is idle.
    pub txnid: Option<u64>,
}

impl ReaderInfo {
    /// Whether this slot is a write-ahead-log handle's checkpoint hold
    /// (thread 0, the snapshot of the log's last checkpoint): it keeps
    /// writers outside WAL mode from reusing pages the log's records
    /// still read (see `wal/hold.rs`).
    pub fn is_wal_hold(&self) -> bool {
        self.tid == HOLD_TID
    }
}

/// The thread id a checkpoint hold's slot carries: no thread has it
/// (`pthread_self` is never 0), and LMDB's tools print it as `0`.
pub(crate) const HOLD_TID: u64 = 0;

/// Holds the reader-table mutex; unlocks on drop.
struct ReaderGuard<'a> {
    lock: &'a LockFile,
}

impl Drop for ReaderGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: this guard exists only while we own the reader mutex.
        unsafe {
            libc::pthread_mutex_unlock(self.lock.rmutex());
        }
    }
}

impl LockFile {
    pub(super) fn rmutex(&self) -> *mut libc::pthread_mutex_t {
        self.map.mutex(OFF_RMUTEX)
    }

    /// Lock the reader-table mutex; on a dead previous owner run the stale-reader check
    /// and mark it consistent. Returns the guard and how many stale slots that check cleared.
    fn lock_readers(&self) -> Result<(ReaderGuard<'_>, usize)> {
        // SAFETY: the reader mutex was initialised as process-shared and robust by the first opener.
        let rc = unsafe { libc::pthread_mutex_lock(self.rmutex()) };
        match rc {
            0 => Ok((ReaderGuard { lock: self }, 0)),
            libc::EOWNERDEAD => {
                let guard = ReaderGuard { lock: self };
                let cleared = self.check_locked().unwrap_or(0);
                // SAFETY: we own the mutex and it is robust and inconsistent.
                let rc2 = unsafe { libc::pthread_mutex_consistent(self.rmutex()) };
                if rc2 != 0 {
                    return Err(ErrorKind::Os(rc2).into());
                }
                Ok((guard, cleared))
            }
            e => Err(ErrorKind::Os(e).into()),
        }
    }

    /// Take the byte lock at offset = our pid, once per process, before using any slot.
    fn ensure_pid_lock(&self) -> Result<()> {
        let me = getpid();
        let Some(file) = &self.file else {
            return Ok(());
        };
        if self.pid_locked.load(Ordering::Acquire) == me {
            return Ok(());
        }
        byte_lock(
            file.as_raw_fd(),
            libc::F_SETLK,
            libc::F_WRLCK,
            u64::from(me),
        )
        .map_err(ErrorKind::Os)?;
        self.pid_locked.store(me, Ordering::Release);
        Ok(())
    }

    /// Number of slots that may be in use: numreaders, clamped to the table size.
    fn nr(&self) -> usize {
        let n = self.map.u32_at(OFF_NUMREADERS).load(Ordering::Acquire);
        n.min(self.max_readers) as usize
    }

    fn slot_off(&self, slot: usize) -> usize {
        assert!(slot < self.max_readers as usize, "reader slot out of range");
        HEADER + slot * SLOT_SIZE
    }

    fn slot_txnid(&self, slot: usize) -> &AtomicU64 {
        self.map.u64_at(self.slot_off(slot) + SLOT_TXNID)
    }

    fn slot_pid(&self, slot: usize) -> &AtomicU32 {
        self.map.u32_at(self.slot_off(slot) + SLOT_PID)
    }

    fn slot_tid(&self, slot: usize) -> &AtomicU64 {
        self.map.u64_at(self.slot_off(slot) + SLOT_TID)
    }

    /// Take a free reader slot (first with pid 0 below numreaders, else append and bump numreaders),
    /// writing txnid=u64::MAX, tid (pthread_self), then pid, under the reader mutex. Err(ReadersFull) if none.
    pub fn acquire_slot(&self) -> Result<usize> {
        self.acquire_slot_as(current_tid(), IDLE)
    }

    /// Take a slot as a checkpoint hold at `txnid` ([`HOLD_TID`]): it
    /// holds that snapshot from its first moment.
    pub(crate) fn acquire_hold(&self, txnid: u64) -> Result<usize> {
        self.acquire_slot_as(HOLD_TID, txnid)
    }

    fn acquire_slot_as(&self, tid: u64, txnid: u64) -> Result<usize> {
        self.ensure_pid_lock()?;
        let me = getpid();
        let (_guard, _) = self.lock_readers()?;
        let nr = self.nr();
        let slot = match (0..nr).find(|&i| self.slot_pid(i).load(Ordering::Acquire) == 0) {
            Some(i) => i,
            None if nr < self.max_readers as usize => nr,
            None => return Err(ErrorKind::ReadersFull.into()),
        };
        // Reset the slot, publish it in numreaders, and claim it by writing the pid last.
        self.slot_pid(slot).store(0, Ordering::SeqCst);
        self.slot_txnid(slot).store(txnid, Ordering::SeqCst);
        self.slot_tid(slot).store(tid, Ordering::Relaxed);
        if slot == nr {
            self.map
                .u32_at(OFF_NUMREADERS)
                .store(nr as u32 + 1, Ordering::Release);
        }
        self.slot_pid(slot).store(me, Ordering::SeqCst);
        Ok(slot)
    }

    /// Publish the snapshot txnid of a slot (u64::MAX = idle).
    pub fn set_slot_txnid(&self, slot: usize, txnid: u64) {
        self.slot_txnid(slot).store(txnid, Ordering::SeqCst)
    }

    /// Record the thread that owns a slot.
    #[cfg(test)]
    pub fn set_slot_tid(&self, slot: usize, tid: u64) {
        self.slot_tid(slot).store(tid, Ordering::Release)
    }

    /// Give a slot back: txnid=MAX, pid=0.
    pub fn release_slot(&self, slot: usize) {
        self.slot_txnid(slot).store(IDLE, Ordering::SeqCst);
        self.slot_pid(slot).store(0, Ordering::Release);
    }

    /// min(last, txnid of every slot with pid != 0) — idle slots hold u64::MAX.
    pub fn oldest_reader(&self, last: u64) -> u64 {
        self.oldest(last, true)
    }

    /// [`LockFile::oldest_reader`] without the checkpoint holds: a writer
    /// in WAL mode applies the hold of the checkpoint it just read itself,
    /// which is never older than a hold slot's (an idle handle's may lag).
    pub(crate) fn oldest_reader_but_holds(&self, last: u64) -> u64 {
        self.oldest(last, false)
    }

    fn oldest(&self, last: u64, holds: bool) -> u64 {
        let mut oldest = last;
        for i in 0..self.nr() {
            if self.slot_pid(i).load(Ordering::SeqCst) != 0
                && (holds || self.slot_tid(i).load(Ordering::SeqCst) != HOLD_TID)
            {
                oldest = oldest.min(self.slot_txnid(i).load(Ordering::SeqCst));
            }
        }
        oldest
    }

    /// Capacity of the reader table.
    pub fn max_readers(&self) -> u32 {
        self.max_readers
    }

    /// High-water mark of used slots (the numreaders field).
    pub fn num_readers(&self) -> u32 {
        self.nr() as u32
    }

    /// Slots with pid != 0 below numreaders, in slot order.
    pub fn readers(&self) -> Vec<ReaderInfo> {
        (0..self.nr())
            .filter_map(|i| {
                let pid = self.slot_pid(i).load(Ordering::Acquire);
                if pid == 0 {
                    return None;
                }
                let t = self.slot_txnid(i).load(Ordering::Acquire);
                Some(ReaderInfo {
                    pid,
                    tid: self.slot_tid(i).load(Ordering::Acquire),
                    txnid: (t != IDLE).then_some(t),
                })
            })
            .collect()
    }

    /// Whether process `pid` holds its pid-offset byte lock (i.e. is alive and uses the env).
    fn pid_alive(&self, pid: u32) -> Result<bool> {
        let Some(file) = &self.file else {
            // In private memory every slot is this process's.
            return Ok(true);
        };
        let fl = byte_lock(
            file.as_raw_fd(),
            libc::F_GETLK,
            libc::F_WRLCK,
            u64::from(pid),
        )
        .map_err(ErrorKind::Os)?;
        Ok(fl.l_type != libc::F_UNLCK as libc::c_short)
    }

    /// The stale-reader check proper; the caller holds the reader mutex.
    fn check_locked(&self) -> Result<usize> {
        let me = getpid();
        let nr = self.nr();
        let mut seen: Vec<u32> = Vec::new();
        let mut cleared = 0;
        for i in 0..nr {
            let pid = self.slot_pid(i).load(Ordering::Acquire);
            if pid == 0 || pid == me || seen.contains(&pid) {
                continue;
            }
            seen.push(pid);
            if self.pid_alive(pid)? {
                continue;
            }
            for j in i..nr {
                if self.slot_pid(j).load(Ordering::Acquire) == pid {
                    self.release_slot(j);
                    cleared += 1;
                }
            }
        }
        Ok(cleared)
    }

    /// Clear slots of dead processes (other than ours); returns how many slots were cleared.
    pub fn reader_check(&self) -> Result<usize> {
        let (_guard, recovered) = self.lock_readers()?;
        Ok(recovered + self.check_locked()?)
    }

    /// Format exactly as mdb_reader_list's lines (c-api.md §10) into a String:
    /// "(no active readers)\n" or header "    pid     thread     txnid\n" + "%10d %zx %zu\n" / "%10d %zx -\n" lines.
    pub fn reader_list_text(&self) -> String {
        let readers = self.readers();
        if readers.is_empty() {
            return "(no active readers)\n".to_string();
        }
        let mut s = String::from("    pid     thread     txnid\n");
        for r in readers {
            match r.txnid {
                Some(t) => s.push_str(&format!("{:10} {:x} {}\n", r.pid as i32, r.tid, t)),
                None => s.push_str(&format!("{:10} {:x} -\n", r.pid as i32, r.tid)),
            }
        }
        s
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        // Release this process's slots; the mapping is unmapped and the descriptor closed
        // (dropping our fcntl locks) by the fields' own drops.
        let me = getpid();
        for i in 0..self.nr() {
            if self.slot_pid(i).load(Ordering::Acquire) == me {
                self.release_slot(i);
            }
        }
    }
}

/// The reader slots owned by the threads of one `Env`. As in LMDB, without
/// NO_TLS a thread takes a slot on its first read transaction and keeps it
/// until it exits or the `Env` closes, whichever comes first.
pub(crate) struct ThreadSlots {
    lock: Arc<LockFile>,
    pub(crate) held: Mutex<Vec<usize>>,
}

impl ThreadSlots {
    pub(crate) fn new(lock: Arc<LockFile>) -> ThreadSlots {
        ThreadSlots {
            lock,
            held: Mutex::new(Vec::new()),
        }
    }

    /// Free `slot` unless the `Env` closed (and freed it) already.
    pub(crate) fn release(&self, slot: usize) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = held.iter().position(|&s| s == slot) {
            held.swap_remove(i);
            self.lock.release_slot(slot);
        }
    }

    /// Free every slot (the `Env` closes).
    pub(crate) fn release_all(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        for s in held.drain(..) {
            self.lock.release_slot(s);
        }
    }
}
