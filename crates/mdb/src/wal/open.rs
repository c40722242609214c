//! Opening a log: find the chain of records through the segment files,
//! its tail, and what the other files are (spares, leftovers of a crash).

use super::log::{placeholder, walk, ChainEnd, Log, LogOptions, SegmentInfo};
use super::record;
use super::seam::{sync_dir, Seam};
use super::segment::{self, Anchor, Pool, Seal, SEAL_LEN, SEG_HEADER};
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
    // The segment a seal says the log went on in: (its seq, the sealed one).
    let mut sealed: Option<(u64, u64)> = None;
    // That segment, prepared but without a durable record: the log resumes
    // in it.
    let mut resume: Option<(u64, u64)> = None;
    // A loss was found and accepted: every later segment is stale.
    let mut lost = false;
    for seq in seqs {
        let file = segment::open(dir, seq)?;
        let size = file.metadata()?.len();
        if lost {
            others.push(Other {
                seq,
                size,
                stale: true,
            });
            continue;
        }
        let loss = match sealed {
            Some((next, from)) if seq > next => Some(Loss::Missing { next, from }),
            _ => None,
        };
        let named = sealed.is_some_and(|(next, _)| next == seq);
        let header = segment::read_header(&file, seq)?;
        let loss = loss.or(match header.map(|h| h.anchor) {
            Some(Anchor::After(a)) if segs.is_empty() || a == chain => None,
            Some(Anchor::After(Some((t, _))))
                if !segs.is_empty() && chain.is_none_or(|(end, _)| t > end) =>
            {
                // It follows a durable record the chain does not reach: a
                // segment is missing, or damaged short of its end.
                Some(Loss::Gap { seq, after: t })
            }
            _ => None,
        });
        if let Some(loss) = loss {
            let last = segs.last().map(|s| (s.seq, s.end));
            loss.settle(&opts, (dir, &seam), chain, last)?;
            lost = true;
            resume = None;
            others.push(Other {
                seq,
                size,
                stale: true,
            });
            continue;
        }
        let anchor = match header.map(|h| h.anchor) {
            Some(Anchor::After(a)) if segs.is_empty() || a == chain => a,
            _ if named => {
                // The log moved on to it, and its first record (which
                // writes its header) is not whole: a torn tail, unless a
                // later record of it says that one was durable.
                sealed = None;
                read_all(&file, size, &mut buf)?;
                let start = SEG_HEADER as u64 - 8;
                if let Some(durable) = durable_past(&buf, seq, start, chain) {
                    let last = segs.last().map(|s| (s.seq, s.end));
                    Loss::Damaged { seq, durable }.settle(&opts, (dir, &seam), chain, last)?;
                    lost = true;
                    others.push(Other {
                        seq,
                        size,
                        stale: true,
                    });
                } else {
                    resume = Some((seq, size));
                }
                continue;
            }
            h => {
                let stale = matches!(h, Some(Anchor::After(_)));
                others.push(Other { seq, size, stale });
                continue;
            }
        };
        if named {
            sealed = None;
        }
        read_all(&file, size, &mut buf)?;
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
        let tail = buf.get(end as usize..).unwrap_or_default();
        match Seal::parse(tail, seq) {
            Some(seal) if Some(seal.chain) == chain => sealed = Some((seal.next, seq)),
            _ => {
                if let Some(durable) = durable_past(&buf, seq, end, chain) {
                    let last = Some((seq, end));
                    Loss::Damaged { seq, durable }.settle(&opts, (dir, &seam), chain, last)?;
                    lost = true;
                }
            }
        }
        segs.push(info);
    }
    if let Some((next, from)) = sealed.filter(|_| !lost) {
        let last = segs.last().map(|s| (s.seq, s.end));
        Loss::Missing { next, from }.settle(&opts, (dir, &seam), chain, last)?;
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
    let (cur, cur_file) = match (resume, segs.pop()) {
        (Some((seq, size)), last) => {
            segs.extend(last);
            (SegmentInfo::empty(dir, seq, size), segment::open(dir, seq)?)
        }
        (None, Some(cur)) => {
            let file = segment::open(dir, cur.seq)?;
            (cur, file)
        }
        (None, None) if opts.replay_only => placeholder(&pool)?,
        // No segment holds records: start in a new one.
        (None, None) => {
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
        durable: None,
    };
    if log.cur.end > log.cur.size / 2 && !opts.replay_only {
        log.prepare_next()?;
        log.reshaped = true;
    }
    Ok(log)
}

/// Records the log lacks, although it held them durably.
enum Loss {
    /// A seal of segment `from` names segment `next`, which is gone.
    Missing { next: u64, from: u64 },
    /// Segment `seq` follows record `after`, which the chain lacks.
    Gap { seq: u64, after: u64 },
    /// In segment `seq`, past the first record that is not whole, a later
    /// record or a seal says that record `durable` was durable.
    Damaged { seq: u64, durable: u64 },
}

impl Loss {
    /// Fail the open (see [`Loss::error`]), unless the loss is accepted:
    /// then the log ends where it is whole, in segment `last` at its
    /// offset, and nothing past that end may speak for it again.
    fn settle(
        &self,
        opts: &LogOptions,
        (dir, seam): (&Path, &Seam),
        chain: ChainEnd,
        last: Option<(u64, u64)>,
    ) -> Result<()> {
        if !opts.accept_loss {
            return Err(self.error(dir, chain, last));
        }
        match last {
            Some((seq, end)) => forget_after(dir, seam, seq, end),
            None => Ok(()),
        }
    }

    /// `Corrupted`, saying where: `chain` is the log's end as found, in
    /// segment `last` at offset (`seq`, `end`).
    fn error(&self, dir: &Path, chain: ChainEnd, last: Option<(u64, u64)>) -> crate::error::Error {
        let name = |seq: u64| format!("{seq:016x}.wal");
        let end = match (chain, last) {
            (Some((t, _)), Some((seq, off))) => format!(
                "the log is whole through transaction {t} ({} up to offset {off})",
                name(seq)
            ),
            _ => "the log is whole through no transaction".to_string(),
        };
        let what = match *self {
            Loss::Missing { next, from } => format!(
                "segment {} is missing: {} says the log went on in it",
                name(next),
                name(from)
            ),
            Loss::Gap { seq, after } => format!(
                "{} follows transaction {after}, which no segment holds: a segment \
                 before it is missing or damaged",
                name(seq)
            ),
            Loss::Damaged { seq, durable } => format!(
                "{} is damaged: the record after the end below is not whole, yet \
                 transactions through {durable} were durable",
                name(seq)
            ),
        };
        crate::error::Error::from(ErrorKind::Corrupted).with_detail(format!(
            "write-ahead log {}: {what}; {end}. Acknowledged commits are lost \
             unless the segment is put back (`mdb checkpoint --accept-log-loss` \
             keeps what is whole)",
            dir.display()
        ))
    }
}

/// Past the end `end` of segment `seq`'s chain (`chain`), the newest
/// record that a later record's durable mark, or a seal, proves was
/// durable, if that is past the chain: then the chain broke short of
/// acknowledged records, which no crash does (a crash tears only records
/// not yet synced, and a record claims only synced ones).
fn durable_past(bytes: &[u8], seq: u64, end: u64, chain: ChainEnd) -> Option<u64> {
    let (last, _) = chain?;
    let mut proof = None;
    let mut off = usize::try_from(end).ok()?.checked_add(8)?;
    while off + SEAL_LEN <= bytes.len() {
        let b = &bytes[off..];
        let claim = match record::parse(b, seq) {
            Some((r, _)) => r.durable_through(),
            None => Seal::parse(b, seq).map(|s| s.chain.0),
        };
        if claim.is_some_and(|d| d > last) {
            proof = proof.max(claim);
        }
        off += 8;
    }
    proof
}

/// Read segment file `file` (`size` bytes) into `buf`.
fn read_all(file: &std::fs::File, size: u64, buf: &mut Vec<u8>) -> Result<()> {
    buf.resize(
        usize::try_from(size).map_err(|_| ErrorKind::Os(libc::EFBIG))?,
        0,
    );
    Ok(file.read_exact_at(buf, 0)?)
}

/// Zero segment `seq` from `end` (an accepted loss): records and a seal
/// past the end found must not be read as the log again.
fn forget_after(dir: &Path, seam: &Seam, seq: u64, end: u64) -> Result<()> {
    let file = segment::open(dir, seq)?;
    let len = file.metadata()?.len().saturating_sub(end);
    let zeros = vec![0u8; usize::try_from(len).map_err(|_| ErrorKind::Os(libc::EFBIG))?];
    let op = crate::io::IoOp::LogWrite {
        seq,
        offset: end,
        len: zeros.len(),
    };
    seam.write_at(op, &file, &zeros, end)?;
    seam.sync(crate::io::IoOp::LogSync { seq }, &file)
}
