//! The writer's side of a compacting copy: what the walk sends, in output
//! order, written while the walk fills the other buffer.

use super::progress::{CopyProgress, ProgressFn};
use crate::env::Env;
use crate::error::{ErrorKind, Result};
use crate::mmap::Map;
use std::io::Write;
use std::sync::mpsc;

/// Output is written in pieces of this size (LMDB's `MDB_WBUF`).
pub(super) const CHUNK: usize = 1 << 20;

/// What the walker of a compacting copy sends the writer, in output order.
pub(super) enum Chunk {
    /// The copy's page count, once known.
    Total(u64),
    /// A buffer of pages, its filled length, and pages numbered so far.
    Pages { buf: Vec<u8>, len: usize, done: u64 },
    /// Source pages `from..end` (the rest of an overflow run), to write
    /// straight from the map.
    Run { from: u64, end: u64 },
}

impl Env {
    /// The writer's side of a compacting copy: write what the walker sends,
    /// in order, handing each buffer back once written, and report progress.
    pub(super) fn write_chunks<W: Write + ?Sized>(
        &self,
        map: &Map,
        chunks: mpsc::Receiver<Chunk>,
        give_back: mpsc::SyncSender<Vec<u8>>,
        w: &mut W,
        progress: ProgressFn<'_>,
    ) -> Result<()> {
        let ps = self.psize;
        let mut total = 2;
        for chunk in chunks {
            match chunk {
                Chunk::Total(t) => total = t,
                Chunk::Pages { buf, len, done } => {
                    w.write_all(&buf[..len])?;
                    // The walker may have finished and gone: nothing to hand back to.
                    let _ = give_back.send(buf);
                    let p = CopyProgress {
                        pages_done: done,
                        pages_total: total,
                        page_size: ps,
                    };
                    if !progress(p) {
                        return Err(ErrorKind::Os(libc::EINTR).into());
                    }
                }
                Chunk::Run { from, end } => {
                    let mut from = from;
                    while from < end {
                        let k = (end - from).min((CHUNK / ps) as u64);
                        w.write_all(map.slice(from as usize * ps, k as usize * ps)?)?;
                        from += k;
                    }
                }
            }
        }
        Ok(())
    }
}
