//! Taking back the last record of the log: a commit appends its record
//! before its pages reach the data file, so that the log's sync runs while
//! they are written (`wal/sink.rs`); when the data file then refuses a page
//! (ENOSPC), the commit fails, and its record must never be replayed.
//!
//! Only a record appended after another one in the same segment is taken
//! back this way (no segment switch, no segment header to undo): its bytes
//! are zeroed where they were, which ends the chain there as a torn write
//! would, and the log is synced, so that no open after a crash finds the
//! record, synced or not. The next commit reuses the txnid and the place.

use super::log::{ChainEnd, Log};
use super::record::{self, RecordParts};
use super::segment::{SEAL_LEN, SEG_HEADER};
use crate::error::{ErrorKind, Result};
use crate::io::IoOp;

/// The tail of the log before a record was appended: what
/// [`Log::retract`] puts back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tail {
    seq: u64,
    end: u64,
    first: Option<u64>,
    last: Option<u64>,
    chain: ChainEnd,
    appends: u64,
}

impl Log {
    /// The tail before the record of `parts` is appended, when that record
    /// can be taken back: it goes into the current segment, after another
    /// record.
    pub(crate) fn retractable_tail(&self, parts: &RecordParts<'_>) -> Result<Option<Tail>> {
        let len = record::encoded_len(parts)?;
        let fits = self.cur.end > SEG_HEADER as u64
            && self
                .cur
                .end
                .checked_add(len + SEAL_LEN as u64)
                .is_some_and(|e| e <= self.cur.size);
        Ok(fits.then_some(Tail {
            seq: self.cur.seq,
            end: self.cur.end,
            first: self.cur.first_txnid,
            last: self.cur.last_txnid,
            chain: self.chain,
            appends: self.appends,
        }))
    }

    /// Take back every record appended after `tail` (one: the caller's),
    /// durably. No sync of the log may run meanwhile (its plan would count
    /// the record as durable); the caller holds the writer lock, so none
    /// is appended either. An error leaves the record's fate unknown.
    pub(crate) fn retract(&mut self, tail: Tail) -> Result<()> {
        if tail.seq != self.cur.seq || tail.end > self.cur.end {
            return Err(ErrorKind::Os(libc::EINVAL).into());
        }
        let zeros = vec![0u8; (self.cur.end - tail.end) as usize];
        let op = IoOp::LogWrite {
            seq: self.cur.seq,
            offset: tail.end,
            len: zeros.len(),
        };
        self.dirty = true;
        self.pool
            .seam
            .write_at(op, &self.cur_file, &zeros, tail.end)?;
        self.cur.end = tail.end;
        self.cur.first_txnid = tail.first;
        self.cur.last_txnid = tail.last;
        self.chain = tail.chain;
        self.appends = tail.appends;
        // Also makes `durable` what the log holds now.
        self.sync()
    }
}
