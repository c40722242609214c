//! Opening a log: find the chain of records through the segment files,
//! its tail, and what the other files are (spares, leftovers of a crash).

use super::log::{placeholder, walk, ChainEnd, Log, LogOptions, SegmentInfo};
use super::seam::{sync_dir, Seam};
use super::segment::{self, Anchor, Pool};
use crate::error::{ErrorKind, Result};
use crate::io::FaultInjector;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// A segment file that is not part of the log.
struct Other {
    seq: u64,
    size: u64,
    /// Holds records of a past the log has rewritten: mark it unused
    /// before anything is appended.
    stale: bool,
}

impl Log {
    /// Open the log in `dir`, creating the directory if missing: find the
    /// end of the chain of valid records, append after it.
    pub(crate) fn open(
        dir: &Path,
        opts: LogOptions,
        fault: Option<Arc<dyn FaultInjector>>,
    ) -> Result<Log> {
        open(dir, opts.normalized(), Seam(fault))
    }
}

/// [`Log::open`] with normalized options.
fn open(dir: &Path, opts: LogOptions, seam: Seam) -> Result<Log> {
    if !dir.is_dir() {
        std::fs::create_dir_all(dir)?;
        let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
        sync_dir(parent.unwrap_or(Path::new(".")))?;
    }
    let seqs = segment::list(dir)?;
    let next_seq = seqs.last().map_or(1, |s| s.saturating_add(1));
    let mut segs: Vec<SegmentInfo> = Vec::new();
    let mut others = Vec::new();
    let mut chain: ChainEnd = None;
    let mut buf = Vec::new();
    for seq in seqs {
        let file = segment::open(dir, seq)?;
        let size = file.metadata()?.len();
        let header = segment::read_header(&file, seq)?;
        let anchor = match header.map(|h| h.anchor) {
            Some(Anchor::After(a)) if segs.is_empty() || a == chain => a,
            Some(Anchor::After(Some((t, _))))
                if !segs.is_empty() && chain.is_none_or(|(end, _)| t > end) =>
            {
                // It follows a durable record the chain does not reach: a
                // segment is missing, or damaged short of its end.
                return Err(ErrorKind::Corrupted.into());
            }
            h => {
                let stale = matches!(h, Some(Anchor::After(_)));
                others.push(Other { seq, size, stale });
                continue;
            }
        };
        buf.resize(
            usize::try_from(size).map_err(|_| ErrorKind::Os(libc::EFBIG))?,
            0,
        );
        file.read_exact_at(&mut buf, 0)?;
        let mut info = SegmentInfo {
            anchor: Anchor::After(anchor),
            ..SegmentInfo::empty(dir, seq, size)
        };
        let (end, new_chain) = walk(&buf, seq, anchor, |r| {
            info.first_txnid.get_or_insert(r.txnid());
            info.last_txnid = Some(r.txnid());
            Ok(())
        })?;
        info.end = end;
        chain = new_chain;
        segs.push(info);
    }
    let mut pool = Pool {
        dir: dir.to_path_buf(),
        seam,
        segment_size: opts.segment_size,
        max_spares: opts.spare_segments,
        spares: Vec::new(),
        next_seq,
    };
    // Other handles (processes) may hold these files: whoever opens the
    // log must tell them (`Log::reshaped`).
    let mut reshaped = !others.is_empty();
    for o in others {
        if o.stale {
            pool.retire(o.seq, o.size)?;
        } else {
            pool.discard(o.seq, o.size)?;
        }
    }
    let (cur, cur_file) = match segs.pop() {
        Some(cur) => {
            let file = segment::open(dir, cur.seq)?;
            (cur, file)
        }
        None if opts.replay_only => placeholder(&pool)?,
        // No segment holds records: start in a new one.
        None => {
            reshaped = true;
            let (seq, size, file) = pool.make(opts.segment_size)?;
            (SegmentInfo::empty(dir, seq, size), file)
        }
    };
    let mut log = Log {
        pool,
        done: segs,
        cur,
        cur_file: Arc::new(cur_file),
        next: None,
        chain,
        unsynced: Vec::new(),
        dirty: false,
        buf: Vec::new(),
        appends: 0,
        syncs: 0,
        reshaped,
        replay_only: opts.replay_only,
    };
    if log.cur.end > log.cur.size / 2 && !opts.replay_only {
        log.prepare_next()?;
        log.reshaped = true;
    }
    Ok(log)
}
