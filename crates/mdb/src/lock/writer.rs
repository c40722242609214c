//! The writer mutex: process-shared and robust, so that a writer that died
//! holding it is noticed by the next one (which then settles the txnid from
//! the metas), and one thread asking for it twice gets an error, not a
//! deadlock.

use std::sync::atomic::Ordering;

use super::file::{current_tid, getpid, LockFile};
use super::layout::OFF_WMUTEX;
use crate::error::{ErrorKind, Result};

impl LockFile {
    pub(super) fn wmutex(&self) -> *mut libc::pthread_mutex_t {
        self.map.mutex(OFF_WMUTEX)
    }

    /// Lock the writer mutex (blocks). Ok(true) if the previous owner died holding it (caller must
    /// reset txnid from the newest meta).
    pub fn lock_writer(&self) -> Result<bool> {
        let me = getpid();
        let tid = current_tid();
        // Only the owner itself can see both of its own values here.
        if self.writer_pid.load(Ordering::Relaxed) == me
            && self.writer_tid.load(Ordering::Relaxed) == tid
        {
            return Err(ErrorKind::BadTxn.into());
        }
        // SAFETY: the writer mutex was initialised as process-shared and robust by the first opener.
        let rc = unsafe { libc::pthread_mutex_lock(self.wmutex()) };
        match rc {
            0 => {
                self.writer_tid.store(tid, Ordering::Relaxed);
                self.writer_pid.store(me, Ordering::Relaxed);
                Ok(false)
            }
            libc::EOWNERDEAD => {
                // We own the mutex now, in the inconsistent state. A dead owner from our own
                // process means one of our write transactions vanished: the env is unusable.
                let own = self.writer_pid.load(Ordering::Relaxed) == me;
                let _ = self.reader_check();
                // SAFETY: we own the mutex and it is robust and inconsistent.
                let rc2 = unsafe { libc::pthread_mutex_consistent(self.wmutex()) };
                if own || rc2 != 0 {
                    self.writer_pid.store(0, Ordering::Relaxed);
                    // SAFETY: we own the mutex.
                    unsafe { libc::pthread_mutex_unlock(self.wmutex()) };
                    return Err(if own {
                        ErrorKind::Panic
                    } else {
                        ErrorKind::Os(rc2)
                    }
                    .into());
                }
                self.writer_tid.store(tid, Ordering::Relaxed);
                self.writer_pid.store(me, Ordering::Relaxed);
                Ok(true)
            }
            e => Err(ErrorKind::Os(e).into()),
        }
    }

    /// Whether the calling thread holds the writer mutex.
    pub(crate) fn writer_is_this_thread(&self) -> bool {
        self.writer_pid.load(Ordering::Relaxed) == getpid()
            && self.writer_tid.load(Ordering::Relaxed) == current_tid()
    }

    /// Unlock the writer mutex (must be called by the thread that locked it).
    pub fn unlock_writer(&self) {
        self.writer_pid.store(0, Ordering::Relaxed);
        self.writer_tid.store(0, Ordering::Relaxed);
        // SAFETY: the caller owns the writer mutex (pthread rejects anything else with EPERM).
        unsafe {
            libc::pthread_mutex_unlock(self.wmutex());
        }
    }
}
