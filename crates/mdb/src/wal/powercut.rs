//! Simulated power cuts. A workload appends records, syncing now and then
//! and checkpointing (releasing segments), while a recording injector notes
//! every write and sync. A crash image is then made from the files: the
//! writes a sync covered stay; each write since its segment's last sync is
//! kept, lost (zeros or garbage), or kept only in some 512-byte sectors.
//! Reopened, the log must hold a consecutive run of the appended records
//! that covers everything from the checkpoint to the last acknowledged
//! sync, and must go on from there.

use super::log::{Log, LogOptions};
use super::segment;
use super::testutil::{Rec, Script};
use crate::io::{IoAction, IoOp};
use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::Path;

const OPTS: LogOptions = LogOptions {
    segment_size: 64 << 10,
    spare_segments: 1,
    replay_only: false,
    accept_loss: false,
};
const SECTOR: u64 = 512;

/// What a workload did: the records appended, how many a successful sync
/// acknowledged, the checkpointed txnid, and the I/O it issued.
struct Run {
    recs: Vec<Rec>,
    acked: u64,
    released: u64,
    ops: Vec<IoOp>,
}

fn workload(dir: &Path, seed: u64) -> Run {
    let mut rnd = crate::format::xorshift(seed);
    let script = Script::new(|_| IoAction::Proceed);
    let mut log = Log::open(dir, OPTS, Some(script.clone())).unwrap();
    let (mut recs, mut acked, mut released) = (Vec::new(), 0, 0);
    let n = 20 + rnd() % 40;
    // A stretch at the end is never synced.
    let unsynced_from = n - rnd() % 12;
    for t in 1..=n {
        // Now and then a record larger than a segment.
        let pages = if rnd().is_multiple_of(25) {
            140
        } else {
            1 + rnd() % 12
        };
        let rec = Rec::random(t, 512, pages as usize, &mut rnd);
        rec.with(|p| log.append(p)).unwrap();
        recs.push(rec);
        if rnd().is_multiple_of(5) && t < unsynced_from {
            log.sync().unwrap();
            acked = t;
        }
        if rnd().is_multiple_of(8) && acked > 0 {
            released = released.max(acked - rnd() % acked.min(4));
            log.release_through(released).unwrap();
        }
    }
    Run {
        recs,
        acked,
        released,
        ops: script.ops(),
    }
}

/// Copy `src`'s files into `dst`, undoing unsynced writes as `rnd` picks.
fn crash_image(src: &Path, dst: &Path, ops: &[IoOp], rnd: &mut impl FnMut() -> u64) {
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    let mut pending: BTreeMap<u64, Vec<(u64, usize)>> = BTreeMap::new();
    for op in ops {
        match *op {
            IoOp::LogWrite { seq, offset, len } => {
                pending.entry(seq).or_default().push((offset, len))
            }
            // Each of these syncs the segment it names.
            IoOp::LogSync { seq } | IoOp::LogRetire { seq } | IoOp::LogPrepare { seq, .. } => {
                pending.remove(&seq);
            }
            _ => {}
        }
    }
    for (seq, writes) in pending {
        let Ok(file) = segment::open(dst, seq) else {
            continue; // renamed since
        };
        for (offset, len) in writes {
            let end = offset + len as u64;
            let fate = rnd() % 4;
            let mut at = offset;
            while at < end {
                let next = ((at / SECTOR + 1) * SECTOR).min(end);
                let sector_fate = if fate == 3 { rnd() % 3 } else { fate };
                let bytes: Vec<u8> = match sector_fate {
                    0 => Vec::new(),
                    1 => vec![0; (next - at) as usize],
                    _ => (at..next).map(|_| rnd() as u8).collect(),
                };
                file.write_all_at(&bytes, at).unwrap();
                at = next;
            }
        }
    }
}

fn scan(log: &Log) -> Vec<Rec> {
    let mut out = Vec::new();
    log.scan(0, |v| {
        out.push(Rec::of(&v));
        Ok(())
    })
    .unwrap();
    out
}

/// The records must be consecutive appended ones covering
/// `released + 1..=acked`.
/// Returns whether the image lost records, and whether it kept some that
/// were never acknowledged.
fn check(got: &[Rec], run: &Run, image: u64) -> (bool, bool) {
    for (i, r) in got.iter().enumerate() {
        let want = &run.recs[(got[0].txnid - 1) as usize + i];
        assert_eq!(r, want, "image {image}: record {i} of {}", got.len());
    }
    let first = got.first().map_or(u64::MAX, |r| r.txnid);
    let last = got.last().map_or(0, |r| r.txnid);
    if run.acked > run.released {
        assert!(
            first <= run.released + 1,
            "image {image}: starts at {first}"
        );
        assert!(
            last >= run.acked,
            "image {image}: {last} < acked {}",
            run.acked
        );
    }
    (last < run.recs.len() as u64, last > run.acked)
}

#[test]
fn power_cuts_keep_every_acknowledged_record() {
    let (mut images, mut lost, mut kept) = (0, 0, 0);
    for seed in 1..=12u64 {
        let src = tempfile::tempdir().unwrap();
        let run = workload(src.path(), seed * 0x9e37_79b9);
        let mut rnd = crate::format::xorshift(seed ^ 0x5555_0000_1234);
        for _ in 0..5 {
            images += 1;
            let dst = tempfile::tempdir().unwrap();
            crash_image(src.path(), dst.path(), &run.ops, &mut rnd);
            let mut log = Log::open(dst.path(), OPTS, None).unwrap();
            let got = scan(&log);
            let (l, k) = check(&got, &run, images);
            lost += u32::from(l);
            kept += u32::from(k);
            // Go on from the tail, then reopen: old records beyond the
            // tail must not come back.
            let next = log.next_txnid().unwrap_or(1);
            let more: Vec<Rec> = (next..next + 4)
                .map(|t| Rec::random(t, 512, 1 + (t % 5) as usize, &mut rnd))
                .collect();
            for r in &more {
                r.with(|p| log.append(p)).unwrap();
            }
            log.sync().unwrap();
            drop(log);
            let log = Log::open(dst.path(), OPTS, None).unwrap();
            let mut want = got;
            want.extend(more);
            assert_eq!(scan(&log), want, "image {images} after more appends");
        }
    }
    // Both ways of ending were seen.
    assert!(lost > 5 && kept > 5, "lost {lost}, kept {kept} of {images}");
}
