//! The checkpoint hold as other writers see it: a reader slot in the lock
//! file at the last checkpoint's txnid.
//!
//! Records past the last checkpoint tell pages by their differences from
//! pages of earlier snapshots, which replay reads from the data file: no
//! page of that checkpoint's snapshot freed since may be reused before the
//! next one. (A page written after it is rebuilt by replay, in commit
//! order, from its own records before any record reads it as a base: our
//! WAL writers reuse those, `young.rs`. That holds because a record
//! is replayed only after every earlier one, each base is read before the
//! record writes a page (`record/parse.rs` `expand`), and a checkpoint
//! states the snapshot published when it is recorded under the writer
//! lock, none of whose pages a writer reused.) Our
//! writers in WAL mode apply that hold themselves (`txn/write.rs`), but a
//! writer outside WAL mode (stock LMDB, or an mdb handle without the log)
//! on the same environment only honours reader slots: it reuses no page
//! freed after the oldest slot's txnid. So every handle in WAL mode keeps
//! one slot at the checkpoint it last saw, moved forward as checkpoints
//! are taken or seen, and given back when the handle closes. Its thread id
//! is [`HOLD_TID`](crate::lock) (0), which is how our WAL writers, whose
//! own hold is exact and never older, skip it; a crashed process's slot is
//! cleared by the stale-reader check like any dead reader's.

use std::sync::Arc;

use crate::error::Result;
use crate::lock::LockFile;

/// A handle's checkpoint hold slot; released on drop.
pub(crate) struct Hold {
    lock: Arc<LockFile>,
    slot: usize,
}

impl Hold {
    /// Take a slot holding the snapshot of checkpoint `txnid`.
    pub(crate) fn take(lock: Arc<LockFile>, txnid: u64) -> Result<Hold> {
        let slot = lock.acquire_hold(txnid)?;
        Ok(Hold { lock, slot })
    }

    /// The checkpoint moved to `txnid`: so does the hold. (Stated as the
    /// snapshot of the checkpoint: LMDB then reuses pages freed up to it,
    /// one transaction short of what the log allows, and `mdb_stat -r`
    /// shows the checkpoint's txnid.)
    pub(crate) fn move_to(&self, txnid: u64) {
        self.lock.set_slot_txnid(self.slot, txnid);
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.lock.release_slot(self.slot);
    }
}
