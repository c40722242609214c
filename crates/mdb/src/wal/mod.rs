//! Write-ahead-log mode, all of it: a commit appends one record (its
//! dirty pages and meta update) to the log and syncs it; the pages reach
//! the data file later, unsynced, until a checkpoint syncs the data file
//! and records how far it got; opening replays the records past the
//! checkpoint.
//!
//! The log itself, beside `io` (it knows bytes and files, not pages or
//! transactions):
//! - `record/`: one commit record, encoded and parsed (never trusting the
//!   bytes); `compact.rs` the varints of its version 5 tables. Its pages
//!   may be patches, told by their differences from a base page
//!   (`format/patch.rs`: page bytes, below the I/O seam that carries them).
//! - `segment.rs`: the segment files and their headers, the pool of spares.
//! - `log.rs`, `open.rs`: the log, appends and syncs at its tail, recycling
//!   checkpointed segments, and finding the tail at open; `retract.rs`
//!   takes back the last record of a commit that failed after appending.
//! - `checkpoint.rs`: the two-slot checkpoint file.
//! - `hold.rs`: the reader slot that holds the last checkpoint's snapshot
//!   for writers outside WAL mode.
//! - `tie.rs`: the identity that ties a log to its data file.
//! - `archive.rs`: records copied out for backups.
//! - `mode.rs`: what commits, opens and checkpoints of an environment in
//!   WAL mode do with the log and the data file (`Wal`: appending a
//!   commit, `Wal::reconcile`).
//!
//! The environment's side, above the lock file:
//! - `group.rs`: group commit, the writer token of this process's threads
//!   and the pipeline of appended commits, made durable by one log sync
//!   and published in order.
//! - `checkpointer.rs`: `WalEnv`, what an environment in WAL mode shares
//!   with its background threads (the checkpointer, the flusher).
//! - `sink.rs`: `WalEnv` as the environment's commit sink
//!   (`crate::sink::CommitSink`): the one commit path of WAL mode.
//!
//! Every write and sync goes through the I/O seam (`IoOp::Log*`,
//! `IoOp::Checkpoint*`). The log itself (records, segments, the
//! checkpoint file, the tie) knows bytes and files, and `mode.rs` the
//! environment's commits, opens and checkpoints.

pub(crate) mod archive;
pub(crate) mod checkpoint;
pub(crate) mod checkpointer;
mod compact;
pub(crate) mod group;
mod hold;
pub(crate) mod log;
pub(crate) mod mode;
mod open;
pub(crate) mod record;
mod retract;
mod seam;
pub(crate) mod segment;
mod sink;
pub(crate) mod tie;

#[cfg(test)]
mod testutil;

#[cfg(test)]
mod log_tests;
#[cfg(test)]
mod powercut;
