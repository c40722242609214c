//! Every write and sync of the data file passes the I/O seam, with or
//! without WRITEMAP: a fault injector sees each commit step and `Env::sync`,
//! and a failure it injects loses nothing committed. (WRITEMAP commits used
//! to copy into the map and msync it behind the seam's back.)

use mdb::io::{FaultInjector, IoAction, IoOp};
use mdb::{Database, EnvFlags, EnvOptions, ErrorKind, Txn, WriteFlags};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Recorder {
    ops: Mutex<Vec<IoOp>>,
    fail_meta: AtomicBool,
}

impl FaultInjector for Recorder {
    fn on_io(&self, op: IoOp) -> IoAction {
        self.ops.lock().unwrap().push(op);
        if matches!(op, IoOp::WriteMeta { .. }) && self.fail_meta.load(Ordering::SeqCst) {
            return IoAction::Fail(libc::EIO);
        }
        IoAction::Proceed
    }
}

fn kinds(r: &Recorder) -> Vec<&'static str> {
    let ops = std::mem::take(&mut *r.ops.lock().unwrap());
    ops.iter()
        .map(|op| match op {
            IoOp::WritePages { .. } => "pages",
            IoOp::SyncData => "sync",
            IoOp::WriteMeta { .. } => "meta",
            IoOp::Extend { .. } => "extend",
            _ => "other",
        })
        .collect()
}

#[test]
fn commits_and_syncs_pass_the_seam_with_and_without_writemap() {
    for flags in [EnvFlags::EMPTY, EnvFlags::WRITE_MAP] {
        let dir = tempfile::tempdir().unwrap();
        let rec = Arc::new(Recorder::default());
        let env = EnvOptions::new()
            .map_size(1 << 20)
            .flags(flags)
            .fault_injector(rec.clone())
            .open(dir.path())
            .unwrap();
        kinds(&rec);
        let mut w = env.write_txn().unwrap();
        w.put(Database::MAIN, b"a", b"1", WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
        let steps = kinds(&rec);
        let want_meta_sync = flags.contains(EnvFlags::WRITE_MAP);
        let expected: Vec<&str> = if want_meta_sync {
            // msync of the pages, the meta update, msync of the meta page.
            vec!["pages", "sync", "meta", "sync"]
        } else {
            // The meta goes through an O_DSYNC descriptor.
            vec!["pages", "sync", "meta"]
        };
        assert_eq!(steps, expected, "{flags:?}");
        env.sync(true).unwrap();
        assert_eq!(kinds(&rec), vec!["sync"], "{flags:?}");

        // A failed meta write loses nothing committed.
        rec.fail_meta.store(true, Ordering::SeqCst);
        let mut w = env.write_txn().unwrap();
        w.put(Database::MAIN, b"b", b"2", WriteFlags::EMPTY)
            .unwrap();
        assert_eq!(
            w.commit().map_err(|e| e.kind()),
            Err(ErrorKind::Os(libc::EIO)),
            "{flags:?}"
        );
        drop(env);
        let env = EnvOptions::new()
            .map_size(1 << 20)
            .flags(flags)
            .open(dir.path())
            .unwrap();
        let r = env.read_txn().unwrap();
        assert_eq!(r.get(Database::MAIN, b"a").unwrap(), Some(&b"1"[..]));
        assert_eq!(r.get(Database::MAIN, b"b").unwrap(), None);
    }
}

/// A commit of many consecutive new pages reaches the file in writes of at
/// most 64 pages each (as LMDB writes): after a load written in longer
/// writes, later one-page commits measured twice as slow (`io.rs`).
#[test]
fn long_runs_of_pages_are_written_64_pages_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let env = EnvOptions::new()
        .map_size(64 << 20)
        .fault_injector(rec.clone())
        .open(dir.path())
        .unwrap();
    let ps = env.page_size();
    rec.ops.lock().unwrap().clear();
    let mut w = env.write_txn().unwrap();
    for i in 0u32..20_000 {
        w.put(
            Database::MAIN,
            &i.to_be_bytes(),
            &[7; 100],
            WriteFlags::APPEND,
        )
        .unwrap();
    }
    w.commit().unwrap();
    let writes: Vec<usize> = rec
        .ops
        .lock()
        .unwrap()
        .iter()
        .filter_map(|op| match op {
            IoOp::WritePages { len, .. } => Some(*len / ps),
            _ => None,
        })
        .collect();
    let pages: usize = writes.iter().sum();
    assert!(pages > 500, "{pages} pages written");
    assert!(writes.iter().all(|&n| n <= 64), "{writes:?}");
    assert!(
        writes.iter().filter(|&&n| n == 64).count() >= pages / 64 - 1,
        "{writes:?}"
    );
}
