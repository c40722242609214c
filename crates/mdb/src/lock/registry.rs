//! The lock tables open in this process, one per environment: POSIX
//! record locks belong to the process, and closing any descriptor of the
//! lock file drops them all, so every `Env` on an environment shares one.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::file::{getpid, open_file, LockFile};
use crate::error::Result;

/// What a [`Registry`] entry is: a lock file, or the in-memory table of the
/// NO_LOCK environment with that data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LockKey {
    File(u64, u64),
    Memory(u64, u64),
}

/// The lock tables in use in this process, by device and inode, so that
/// every `Env` on one environment shares one [`LockFile`]. Entries carry the
/// pid: a forked child holds none of the parent's fcntl locks, so it opens
/// the lock file afresh.
pub(crate) struct Registry(Vec<(u32, LockKey, Weak<LockFile>)>);

static REGISTRY: Mutex<Registry> = Mutex::new(Registry(Vec::new()));

/// The registry, locked. Hold it until the new `Env`'s lock has had its
/// [`LockFile::finish_open`], so that no other `Env` uses it before.
pub(crate) fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    fn find(&mut self, key: LockKey) -> Option<Arc<LockFile>> {
        let me = getpid();
        self.0
            .retain(|(pid, _, l)| *pid == me && l.strong_count() > 0);
        self.0
            .iter()
            .find(|(_, k, _)| *k == key)
            .and_then(|(_, _, l)| l.upgrade())
    }

    fn insert(&mut self, key: LockKey, l: LockFile) -> Arc<LockFile> {
        let l = Arc::new(l);
        self.0.push((getpid(), key, Arc::downgrade(&l)));
        l
    }

    /// The lock file at `path`: the one this process has open already, or
    /// opened (and initialised, if no process had it) now.
    pub fn lock_file(&mut self, path: &Path, max_readers: u32, mode: u32) -> Result<Arc<LockFile>> {
        // Look first by path: opening and closing a second descriptor of a
        // lock file we hold would drop our locks on it.
        if let Ok(m) = std::fs::metadata(path) {
            if let Some(l) = self.find(LockKey::File(m.dev(), m.ino())) {
                return Ok(l);
            }
        }
        let file = open_file(path, mode)?;
        let m = file.metadata()?;
        let key = LockKey::File(m.dev(), m.ino());
        if let Some(l) = self.find(key) {
            // The path was switched to a file we hold between the two looks:
            // this descriptor must stay open for our locks to stay.
            std::mem::forget(file);
            return Ok(l);
        }
        Ok(self.insert(key, LockFile::from_file(file, max_readers)?))
    }

    /// The in-memory table of the NO_LOCK environment whose data file is `data`.
    pub fn in_memory(&mut self, data: &File, max_readers: u32) -> Result<Arc<LockFile>> {
        let m = data.metadata()?;
        let key = LockKey::Memory(m.dev(), m.ino());
        if let Some(l) = self.find(key) {
            return Ok(l);
        }
        Ok(self.insert(key, LockFile::in_memory(max_readers)?))
    }
}
