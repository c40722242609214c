//! Tests of the log: appends across segments, torn and failed writes,
//! recycling, scans, oversize records.

use super::log::{Log, LogOptions};
use super::record;
use super::segment::{self, SEG_HEADER};
use super::testutil::{Rec, Script};
use crate::error::ErrorKind;
use crate::io::{IoAction, IoOp};
use std::path::Path;

const SMALL: LogOptions = LogOptions {
    segment_size: 64 << 10,
    spare_segments: 2,
    replay_only: false,
    accept_loss: false,
};

fn open(dir: &Path) -> Log {
    Log::open(dir, SMALL, None).unwrap()
}

fn append(log: &mut Log, rec: &Rec) {
    rec.with(|p| log.append(p)).unwrap();
}

/// Records `first..first + n`, of 1 to 8 pages of 512 bytes.
fn records(first: u64, n: u64, seed: u64) -> Vec<Rec> {
    let mut rnd = crate::format::xorshift(seed);
    (first..first + n)
        .map(|t| {
            let pages = 1 + (rnd() % 8) as usize;
            Rec::random(t, 512, pages, &mut rnd)
        })
        .collect()
}

fn scan(log: &Log, after: u64) -> Vec<Rec> {
    let mut out = Vec::new();
    log.scan(after, |v| {
        out.push(Rec::of(&v));
        Ok(())
    })
    .unwrap();
    out
}

fn wal_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("wal".as_ref()))
        .count()
}

#[test]
fn appends_across_segments_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(10, 120, 1);
    let mut log = open(dir.path());
    assert_eq!((log.first_txnid(), log.last_txnid()), (None, None));
    for r in &recs {
        append(&mut log, r);
    }
    log.sync().unwrap();
    assert!(log.segments().len() >= 4, "{:?}", log.segments());
    assert_eq!(scan(&log, 0), recs);
    drop(log);
    let log = open(dir.path());
    assert_eq!((log.first_txnid(), log.last_txnid()), (Some(10), Some(129)));
    assert_eq!(log.next_txnid(), Some(130));
    assert_eq!(scan(&log, 0), recs);
    assert_eq!(scan(&log, 99), recs[90..]);
    assert_eq!(scan(&log, 129), []);
}

#[test]
fn a_txnid_out_of_order_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path());
    let recs = records(5, 3, 2);
    append(&mut log, &recs[0]);
    let err = recs[2].with(|p| log.append(p));
    assert_eq!(err.map_err(|e| e.kind()), Err(ErrorKind::Os(libc::EINVAL)));
    append(&mut log, &recs[1]);
    assert_eq!(scan(&log, 0), recs[..2]);
}

#[test]
fn a_torn_record_ends_the_log_and_is_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(1, 6, 3);
    let script = Script::new(|_| IoAction::Proceed);
    let mut log = Log::open(dir.path(), SMALL, Some(script.clone())).unwrap();
    for r in &recs[..5] {
        append(&mut log, r);
    }
    log.sync().unwrap();
    script.set(|op| match op {
        IoOp::LogWrite { len, .. } => IoAction::Tear(len / 2),
        _ => IoAction::Proceed,
    });
    let torn = recs[5].with(|p| log.append(p));
    assert_eq!(torn.map_err(|e| e.kind()), Err(ErrorKind::Os(libc::EIO)));
    assert_eq!(log.last_txnid(), Some(5));
    drop(log);
    let mut log = open(dir.path());
    assert_eq!(scan(&log, 0), recs[..5]);
    // A shorter record in its place, then one more.
    let again = records(6, 2, 4);
    for r in &again {
        append(&mut log, r);
    }
    log.sync().unwrap();
    drop(log);
    let log = open(dir.path());
    assert_eq!(scan(&log, 5), again);
}

#[test]
fn a_record_past_a_lost_one_is_not_resurrected() {
    // 6 and 7 were written unsynced; the crash kept 7 and lost 6. The log
    // ends at 5; a new 6 of the same length goes where the old one was,
    // right before the old 7, which must not chain on to it.
    let dir = tempfile::tempdir().unwrap();
    let recs = records(1, 7, 5);
    let mut log = open(dir.path());
    let mut pos = Vec::new();
    for r in &recs {
        pos.push(r.with(|p| log.append(p)).unwrap());
    }
    log.sync().unwrap();
    drop(log);
    let file = segment::open(dir.path(), pos[5].seq).unwrap();
    use std::os::unix::fs::FileExt;
    file.write_all_at(&vec![0; pos[5].len as usize], pos[5].offset)
        .unwrap();
    let mut log = open(dir.path());
    assert_eq!(log.last_txnid(), Some(5));
    let mut six = recs[5].clone();
    six.meta_off ^= 1;
    let at = six.with(|p| log.append(p)).unwrap();
    assert_eq!(at, pos[5]);
    log.sync().unwrap();
    drop(log);
    let log = open(dir.path());
    let mut want = recs[..5].to_vec();
    want.push(six);
    assert_eq!(scan(&log, 0), want);
}

#[test]
fn failed_writes_and_syncs_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(1, 3, 6);
    let script = Script::new(|op| match op {
        IoOp::LogSync { .. } => IoAction::Fail(libc::EIO),
        IoOp::LogWrite { .. } => IoAction::Fail(libc::ENOSPC),
        _ => IoAction::Proceed,
    });
    let mut log = Log::open(dir.path(), SMALL, Some(script.clone())).unwrap();
    let err = recs[0].with(|p| log.append(p));
    assert_eq!(err.map_err(|e| e.kind()), Err(ErrorKind::Os(libc::ENOSPC)));
    assert_eq!(log.last_txnid(), None);
    script.set(|op| match op {
        IoOp::LogSync { .. } => IoAction::Fail(libc::EIO),
        _ => IoAction::Proceed,
    });
    append(&mut log, &recs[0]);
    assert_eq!(
        log.sync().map_err(|e| e.kind()),
        Err(ErrorKind::Os(libc::EIO))
    );
    script.set(|_| IoAction::Proceed);
    log.sync().unwrap();
    let syncs = script
        .ops()
        .iter()
        .filter(|o| matches!(o, IoOp::LogSync { .. }))
        .count();
    assert_eq!(syncs, 2);
    let ops = script.ops().len();
    log.sync().unwrap(); // nothing new to sync
    assert_eq!(script.ops().len(), ops);
}

#[test]
fn checkpointed_segments_are_recycled() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path());
    let recs = records(1, 400, 7);
    let mut seqs = Vec::new();
    for chunk in recs.chunks(40) {
        for r in chunk {
            seqs.push(r.with(|p| log.append(p)).unwrap().seq);
        }
        log.sync().unwrap();
        let keep_from = chunk[0].txnid;
        log.release_through(keep_from - 1).unwrap();
        assert!(log.first_txnid().unwrap() <= keep_from);
        // The log, a prepared segment, spares, nothing more.
        assert!(wal_files(dir.path()) <= log.segments().len() + 1 + SMALL.spare_segments);
    }
    assert!(log.segments().len() <= 4, "{}", log.segments().len());
    // Files were renamed into new segments rather than created: the seqs
    // went far beyond the files ever present at once.
    assert!(seqs.last().unwrap() > &10);
    let first = log.first_txnid().unwrap();
    assert_eq!(scan(&log, 0), recs[first as usize - 1..]);
    drop(log);
    let log = open(dir.path());
    assert_eq!(scan(&log, 0), recs[first as usize - 1..]);
}

#[test]
fn stale_records_of_a_recycled_segment_do_not_parse() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open(
        dir.path(),
        LogOptions {
            spare_segments: 1,
            ..SMALL
        },
        None,
    )
    .unwrap();
    let recs = records(1, 60, 8);
    let mut pos = Vec::new();
    for r in &recs {
        pos.push(r.with(|p| log.append(p)).unwrap());
    }
    let old = log.segments()[0].clone();
    log.release_through(old.last_txnid.unwrap()).unwrap();
    // Fill on until the spare is renamed into a new segment.
    let mut t = 61;
    let recycled = loop {
        let r = records(t, 1, t)[0].clone();
        let at = r.with(|p| log.append(p)).unwrap();
        t += 1;
        if let Some((n, _)) = &log.next {
            if !old.path.exists() {
                break n.seq;
            }
        }
        assert!(t < 400, "{at:?}");
    };
    let bytes = std::fs::read(segment::path(dir.path(), recycled)).unwrap();
    let stale = &bytes[SEG_HEADER..];
    let (v, _) = record::parse(stale, old.seq).expect("the old record is still there");
    assert_eq!(v.txnid(), 1);
    assert!(record::parse(stale, recycled).is_none());
    log.sync().unwrap();
    let last = log.last_txnid();
    drop(log);
    let log = open(dir.path());
    assert_eq!(log.last_txnid(), last);
    let got = scan(&log, 0);
    assert!(got.windows(2).all(|w| w[0].txnid + 1 == w[1].txnid));
}

#[test]
fn a_record_larger_than_a_segment_gets_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path());
    let mut rnd = crate::format::xorshift(9);
    let recs = vec![
        Rec::random(1, 512, 3, &mut rnd),
        Rec::random(2, 4096, 40, &mut rnd), // 160 KiB
        Rec::random(3, 512, 3, &mut rnd),
    ];
    for r in &recs {
        append(&mut log, r);
    }
    log.sync().unwrap();
    let segs = log.segments();
    assert_eq!(segs.len(), 2, "the third fits behind the second");
    assert!(segs[1].size > SMALL.segment_size);
    assert_eq!(segs[1].size % 4096, 0);
    drop(log);
    let log = open(dir.path());
    assert_eq!(scan(&log, 0), recs);
    assert_eq!(scan(&log, 2), recs[2..]);
}

#[test]
fn failed_preparations_are_retried() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::new(|_| IoAction::Proceed);
    let mut log = Log::open(dir.path(), SMALL, Some(script.clone())).unwrap();
    script.set(|op| match op {
        IoOp::LogPrepare { .. } => IoAction::Tear(1000),
        _ => IoAction::Proceed,
    });
    let recs = records(1, 80, 10);
    let mut failed = 0;
    for r in &recs {
        while r.with(|p| log.append(p)).is_err() {
            failed += 1;
            script.set(|_| IoAction::Proceed);
        }
    }
    assert_eq!(failed, 1, "the switch reported the failure once");
    log.sync().unwrap();
    drop(log);
    let log = open(dir.path());
    assert_eq!(scan(&log, 0), recs);
    assert!(!dir.path().join("segment.tmp").exists());
}

fn inodes(dir: &Path) -> Vec<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension() == Some("wal".as_ref()))
        .map(|p| std::fs::metadata(p).unwrap().ino())
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn spares_survive_reopen_and_are_renamed() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path());
    let recs = records(1, 180, 11);
    for r in &recs[..150] {
        append(&mut log, r);
    }
    log.sync().unwrap();
    log.release_through(100).unwrap();
    drop(log);
    let mut log = open(dir.path());
    let files = inodes(dir.path());
    let seq = log.segments().last().unwrap().seq;
    for r in &recs[150..] {
        append(&mut log, r);
    }
    log.sync().unwrap();
    assert!(log.segments().last().unwrap().seq > seq, "moved on");
    let now = inodes(dir.path());
    assert!(now.iter().all(|i| files.contains(i)), "{files:?} {now:?}");
    let first = log.first_txnid().unwrap();
    assert!(first <= 101);
    assert_eq!(scan(&log, 0), recs[first as usize - 1..]);
}

#[test]
fn a_full_disk_leaves_no_half_made_segment() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::new(|_| IoAction::Proceed);
    let mut log = Log::open(dir.path(), SMALL, Some(script.clone())).unwrap();
    // Every new segment's zero-fill fails, as on a full disk.
    script.set(|op| match op {
        IoOp::LogPrepare { .. } => IoAction::Fail(libc::ENOSPC),
        _ => IoAction::Proceed,
    });
    let recs = records(1, 80, 12);
    let mut appended = 0;
    for r in &recs {
        match r.with(|p| log.append(p)) {
            Ok(_) => appended += 1,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Os(libc::ENOSPC));
                break;
            }
        }
        // The preparation ahead of need failed too, quietly.
        assert!(!dir.path().join("segment.tmp").exists());
    }
    assert!(appended < recs.len(), "the log had to move on");
    assert!(!dir.path().join("segment.tmp").exists());
    // Room again: the same append goes through.
    script.set(|_| IoAction::Proceed);
    for r in &recs[appended..] {
        append(&mut log, r);
    }
    log.sync().unwrap();
    drop(log);
    assert_eq!(scan(&open(dir.path()), 0), recs);
}

#[test]
fn a_temporary_segment_left_by_a_crash_is_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    std::fs::write(dir.path().join("segment.tmp"), [0u8; 5000]).unwrap();
    let log = open(dir.path());
    assert!(!dir.path().join("segment.tmp").exists());
    assert_eq!(scan(&log, 0), Vec::new());
}

/// Segments made ready by zero-filling new files, and by renaming retired
/// ones, in `ops`.
fn prepares(ops: &[IoOp]) -> (usize, usize) {
    let n = |f: bool| {
        ops.iter()
            .filter(|o| matches!(o, IoOp::LogPrepare { fill, .. } if *fill == f))
            .count()
    };
    (n(true), n(false))
}

/// Append records from `*t` on until the log moved on `n` segments; sync.
fn fill_segments(log: &mut Log, t: &mut u64, n: u64) {
    let start = log.cur.seq;
    while log.cur.seq < start + n {
        append(log, &records(*t, 1, *t)[0]);
        *t += 1;
    }
    log.sync().unwrap();
}

#[test]
fn checkpoints_of_a_small_growing_file_recycle_segments() {
    // A bulk load into a file smaller than 32 segments: each checkpoint
    // retires about two segments. They become the spares the log moves
    // into, however small the file; only the first ones are zero-filled.
    let dir = tempfile::tempdir().unwrap();
    let script = Script::new(|_| IoAction::Proceed);
    let mut log = Log::open(dir.path(), SMALL, Some(script.clone())).unwrap();
    let mut t = 1;
    let data_bytes = 1 << 20;
    for _ in 0..20 {
        fill_segments(&mut log, &mut t, 2);
        let last = log.last_txnid().unwrap();
        log.release_through(last).unwrap();
        log.settle(last, data_bytes, false).unwrap();
        // The log, a prepared segment, spares, nothing more.
        assert!(wal_files(dir.path()) <= log.segments().len() + 1 + SMALL.spare_segments);
    }
    let (filled, renamed) = prepares(&script.ops());
    assert!(renamed >= 30, "{filled} zero-filled, {renamed} renamed");
    assert!(filled <= 4, "{filled} zero-filled, {renamed} renamed");
    // At rest the spares go (a 32nd of 1 MiB is no segment of 64 KiB).
    log.rest(data_bytes).unwrap();
    assert_eq!(wal_files(dir.path()), log.segments().len() + 1);
    let first = log.first_txnid().unwrap();
    drop(log);
    let log = open(dir.path());
    assert_eq!(log.first_txnid(), Some(first));
    assert_eq!(log.last_txnid(), Some(t - 1));
}
