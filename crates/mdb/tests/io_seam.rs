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

/// (offset, pages) of the page writes recorded since the last call.
fn page_writes(r: &Recorder, ps: usize) -> Vec<(u64, usize)> {
    std::mem::take(&mut *r.ops.lock().unwrap())
        .iter()
        .filter_map(|op| match op {
            IoOp::WritePages { offset, len } => Some((*offset, *len / ps)),
            _ => None,
        })
        .collect()
}

fn put_all(env: &mdb::Env, n: u32) {
    let mut w = env.write_txn().unwrap();
    for i in 0..n {
        w.put(
            Database::MAIN,
            &i.to_be_bytes(),
            &[7; 100],
            WriteFlags::EMPTY,
        )
        .unwrap();
    }
    // An overflow value of 25 pages, past the end too.
    w.put(Database::MAIN, &[0xff; 8], &[9; 100_000], WriteFlags::EMPTY)
        .unwrap();
    w.commit().unwrap();
}

/// Pages that grow the file reach it in writes of at most 4 pages (an
/// overflow value's run in pieces), so that the page cache keeps them in
/// small folios: a later one-page write into a large folio dirties and
/// writes back all of it (`io.rs`, `TAIL_PAGES`). Runs of pages inside the
/// file are written 64 pages at a time (as LMDB writes): their folios are
/// made already.
#[test]
fn new_pages_are_written_4_pages_at_a_time_and_runs_inside_the_file_64() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let env = EnvOptions::new()
        .map_size(64 << 20)
        .fault_injector(rec.clone())
        .open(dir.path())
        .unwrap();
    let ps = env.page_size();
    rec.ops.lock().unwrap().clear();
    put_all(&env, 20_000);
    let grown = page_writes(&rec, ps);
    let pages: usize = grown.iter().map(|w| w.1).sum();
    assert!(pages > 500, "{pages} pages written");
    assert!(grown.iter().all(|w| w.1 <= 4), "{grown:?}");
    assert!(grown.iter().filter(|w| w.1 == 4).count() >= pages / 4 - 10);

    // Freed, then written again into the same (cached) pages.
    let len = std::fs::metadata(dir.path().join("data.mdb"))
        .unwrap()
        .len();
    let mut w = env.write_txn().unwrap();
    w.clear_db(Database::MAIN).unwrap();
    w.commit().unwrap();
    // A commit between: its pages are reusable from the one after it.
    let mut w = env.write_txn().unwrap();
    w.put(Database::MAIN, b"a", b"1", WriteFlags::EMPTY)
        .unwrap();
    w.commit().unwrap();
    page_writes(&rec, ps);
    put_all(&env, 20_000);
    let inside: Vec<_> = page_writes(&rec, ps)
        .into_iter()
        .filter(|w| w.0 < len)
        .collect();
    assert!(inside.iter().all(|w| w.1 <= 64), "{inside:?}");
    assert!(
        inside.iter().filter(|w| w.1 == 64).count() >= 5,
        "{inside:?}"
    );
}
