//! The commit pipeline of write-ahead-log mode, as the I/O seam sees it: a
//! batch commit's record goes to the log before its pages go to the data
//! file (the log's sync overlaps their writes), and a page write that fails
//! then takes the record back.

use mdb::io::{FaultInjector, IoAction, IoOp};
use mdb::{Database, Env, EnvFlags, EnvOptions, ErrorKind, Txn, WalOptions, WriteFlags};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Records every I/O step (and the thread taking it); fails page writes
/// with ENOSPC while `fail_pages` is set.
#[derive(Default)]
struct Recorder {
    ops: Mutex<Vec<(IoOp, String)>>,
    fail_pages: AtomicBool,
    /// Log writes to let through before failing every one (EIO) while
    /// `fail_logs` is set.
    fail_logs: AtomicBool,
    logs_to_pass: AtomicUsize,
}

impl FaultInjector for Recorder {
    fn on_io(&self, op: IoOp) -> IoAction {
        let name = std::thread::current().name().unwrap_or("").to_string();
        self.ops.lock().unwrap().push((op, name));
        match op {
            IoOp::WritePages { .. } if self.fail_pages.load(Ordering::SeqCst) => {
                IoAction::Fail(libc::ENOSPC)
            }
            IoOp::LogWrite { .. } if self.fail_logs.load(Ordering::SeqCst) => {
                let pass = self.logs_to_pass.load(Ordering::SeqCst);
                if pass == 0 {
                    return IoAction::Fail(libc::EIO);
                }
                self.logs_to_pass.store(pass - 1, Ordering::SeqCst);
                IoAction::Proceed
            }
            _ => IoAction::Proceed,
        }
    }
}

impl Recorder {
    fn take(&self) -> Vec<(IoOp, String)> {
        std::mem::take(&mut *self.ops.lock().unwrap())
    }
}

fn opts() -> WalOptions {
    let mut o = WalOptions::default();
    // No checkpoint but those the test asks for.
    o.checkpoint_interval = std::time::Duration::from_secs(3600);
    o.checkpoint_bytes = 1 << 40;
    o
}

fn open(dir: &Path, rec: Arc<Recorder>) -> Env {
    open_with(dir, rec, EnvFlags::EMPTY)
}

fn open_with(dir: &Path, rec: Arc<Recorder>, flags: EnvFlags) -> Env {
    EnvOptions::new()
        .map_size(256 << 20)
        .flags(flags)
        .wal(opts())
        .fault_injector(rec)
        .open(dir)
        .unwrap()
}

/// [`open`], with 3,100 keys loaded and checkpointed.
fn loaded(dir: &Path, rec: Arc<Recorder>) -> Env {
    loaded_with(dir, rec, EnvFlags::EMPTY)
}

fn loaded_with(dir: &Path, rec: Arc<Recorder>, flags: EnvFlags) -> Env {
    let env = open_with(dir, rec, flags);
    batch(&env, 0, 3000).unwrap();
    batch(&env, 3000, 3100).unwrap();
    env.checkpoint().unwrap();
    env
}

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

/// One commit of the keys `from..to` (spread over the whole key space, so
/// that a few hundred of them dirty most leaves of a few thousand keys).
fn batch(env: &Env, from: u64, to: u64) -> mdb::Result<()> {
    let mut w = env.write_txn()?;
    for i in from..to {
        w.put(Database::MAIN, &key(i), &[7u8; 100], WriteFlags::EMPTY)?;
    }
    w.commit()
}

fn has(env: &Env, i: u64) -> bool {
    env.read_txn()
        .unwrap()
        .get(Database::MAIN, &key(i))
        .unwrap()
        .is_some()
}

fn first(ops: &[(IoOp, String)], f: fn(&IoOp) -> bool) -> Option<usize> {
    ops.iter().position(|(op, _)| f(op))
}

fn is_log_write(op: &IoOp) -> bool {
    matches!(op, IoOp::LogWrite { .. })
}

fn is_page_write(op: &IoOp) -> bool {
    matches!(op, IoOp::WritePages { .. })
}

/// A durable commit of many pages appends its record before it writes its
/// pages to the data file, so that the log's sync runs meanwhile; it is
/// published only once both are done. Before, the pages went first and
/// the log's sync waited for all of them.
#[test]
fn a_batch_commit_logs_its_record_before_it_writes_its_pages() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let env = loaded(dir.path(), rec.clone());
    for round in 0..5u64 {
        rec.take();
        let from = 10_000 + round * 500;
        batch(&env, from, from + 500).unwrap();
        let ops = rec.take();
        let pages: usize = ops
            .iter()
            .map(|(op, _)| match op {
                IoOp::WritePages { len, .. } => len / 4096,
                _ => 0,
            })
            .sum();
        assert!(pages >= 32, "round {round}: {pages} page writes");
        let log = first(&ops, is_log_write).expect("a log write");
        let page = first(&ops, is_page_write).expect("a page write");
        assert!(log < page, "round {round}: {ops:?}");
        // Durable and visible when the commit returns.
        let sync = ops
            .iter()
            .rposition(|(op, _)| matches!(op, IoOp::LogSync { .. }));
        assert!(sync.is_some_and(|s| s > log), "round {round}: {ops:?}");
        assert!(has(&env, from + 499));
    }
}

/// When the data file refuses the pages of a commit whose record is in
/// the log already (ENOSPC), the record is taken back (zeroed and the log
/// synced): the commit fails cleanly, the next ones work, and after a
/// crash the failed commit is not replayed.
#[test]
fn a_batch_commit_whose_pages_fail_takes_its_record_back() {
    pages_fail_take_the_record_back(EnvFlags::EMPTY);
}

/// The same under WRITE_MAP: WAL mode writes the pages with vectored
/// `pwrite`s there too, not one copy into the map per page (`wal/sink.rs`:
/// after a checkpoint each copy is a write fault, and a full disk would be
/// SIGBUS rather than this ENOSPC).
#[test]
fn under_writemap_a_batch_commit_whose_pages_fail_takes_its_record_back() {
    pages_fail_take_the_record_back(EnvFlags::WRITE_MAP);
}

/// Whether some page write of `ops` covers several pages (a vectored
/// write, where a copy into the map is one page), among at least 32.
fn written_in_runs(ops: &[(IoOp, String)]) -> bool {
    let lens: Vec<usize> = ops
        .iter()
        .filter_map(|(op, _)| match op {
            IoOp::WritePages { len, .. } => Some(*len),
            _ => None,
        })
        .collect();
    lens.iter().map(|l| l / 4096).sum::<usize>() >= 32 && lens.iter().any(|&l| l > 4096)
}

fn pages_fail_take_the_record_back(flags: EnvFlags) {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    {
        let env = loaded_with(dir.path(), rec.clone(), flags);
        rec.take();
        batch(&env, 10_000, 10_500).unwrap();
        let ops = rec.take();
        // A few hundred leaves, most of them next to another in the file.
        assert!(written_in_runs(&ops), "{ops:?}");
        rec.fail_pages.store(true, Ordering::SeqCst);
        let e = batch(&env, 20_000, 20_500).unwrap_err();
        rec.fail_pages.store(false, Ordering::SeqCst);
        assert_eq!(e.kind(), ErrorKind::Os(libc::ENOSPC));
        let ops = rec.take();
        // The record was appended, then zeroed where it was, durably.
        let writes: Vec<_> = ops.iter().filter(|(op, _)| is_log_write(op)).collect();
        assert_eq!(writes.len(), 2, "{ops:?}");
        let (
            IoOp::LogWrite { offset: a, len, .. },
            IoOp::LogWrite {
                offset: b,
                len: zeroed,
                ..
            },
        ) = (writes[0].0, writes[1].0)
        else {
            unreachable!()
        };
        assert_eq!((a, len), (b, zeroed), "{ops:?}");
        assert!(
            matches!(ops.last().map(|o| o.0), Some(IoOp::LogSync { .. })),
            "{ops:?}"
        );
        assert!(!has(&env, 20_000) && has(&env, 10_000));
        // The txnid and the log's tail are reused.
        batch(&env, 30_000, 30_500).unwrap();
        assert!(has(&env, 30_499));
        // A crash: the log is all there is.
        std::mem::forget(env);
    }
    let env = open_with(dir.path(), Arc::new(Recorder::default()), flags);
    let r = env.read_txn().unwrap();
    for i in [10_000, 10_499, 30_000, 30_499] {
        assert!(r.get(Database::MAIN, &key(i)).unwrap().is_some(), "{i}");
    }
    for i in 20_000..20_500 {
        assert!(r.get(Database::MAIN, &key(i)).unwrap().is_none(), "{i}");
    }
}

/// 20,000 keys of 900-byte values `round`, in two commits.
fn fill(env: &Env, round: u8) {
    for half in 0..2u64 {
        let mut w = env.write_txn().unwrap();
        for i in half * 10_000..(half + 1) * 10_000 {
            w.put(Database::MAIN, &key(i), &[round; 900], WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
    }
}

/// Whether `op` is a step of a checkpoint: the data file's sync, the
/// checkpoint file's write or sync.
fn is_checkpoint_step(op: &IoOp) -> bool {
    matches!(
        op,
        IoOp::SyncData | IoOp::CheckpointWrite { .. } | IoOp::CheckpointSync
    )
}

/// Commits that each free more pages than the bound on pages held for the
/// log: the committing thread waits for the checkpointer thread's
/// checkpoint, and takes none itself (no data-file sync, no checkpoint
/// write on its thread). Before, it synced the data file itself, a second
/// sync beside the one the checkpointer had under way.
#[test]
fn the_committing_thread_leaves_checkpoints_to_the_checkpointer() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let env = open(dir.path(), rec.clone());
    fill(&env, 0);
    env.checkpoint().unwrap();
    // The file is marked for the log again (a data-file sync of this
    // thread, once after a plain checkpoint).
    batch(&env, 100_000, 100_001).unwrap();
    let before = env.wal_info().unwrap().checkpoint_txnid;
    rec.take();
    let me = std::thread::current().name().unwrap().to_string();
    for round in 1..4u8 {
        // About 5,000 leaves rewritten a commit: past the bound at once.
        fill(&env, round);
    }
    let ops = rec.take();
    let own: Vec<_> = ops
        .iter()
        .filter(|(op, t)| *t == me && is_checkpoint_step(op))
        .collect();
    assert!(own.is_empty(), "{own:?}");
    assert!(ops
        .iter()
        .any(|(op, t)| *t == "mdb-checkpointer" && matches!(op, IoOp::CheckpointWrite { .. })));
    assert!(env.wal_info().unwrap().checkpoint_txnid > before);
    let r = env.read_txn().unwrap();
    assert_eq!(
        r.get(Database::MAIN, &key(19_999)).unwrap(),
        Some(&[3u8; 900][..])
    );
}

/// Under NO_SYNC the log is synced 10 ms after a commit, so the commits
/// past the bound on pages held for the log may not be published yet when
/// the checkpoint they wait for runs: it makes them durable and published
/// first, so that it covers them and their freed pages are reused (else
/// it covers nothing new, and the file grows on). Without that step in
/// `WalEnv::checkpoint` the checkpoint stays where `env.checkpoint()` left
/// it.
#[test]
fn under_no_sync_the_checkpoints_commits_wait_for_cover_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    // The committing thread takes the checkpoints itself.
    o.checkpointer = false;
    let env = EnvOptions::new()
        .map_size(256 << 20)
        .flags(EnvFlags::NO_SYNC)
        .wal(o)
        .open(dir.path())
        .unwrap();
    fill(&env, 0);
    env.checkpoint().unwrap();
    let before = env.wal_info().unwrap();
    for round in 1..4u8 {
        // About 5,000 leaves rewritten a commit: past the bound at once.
        fill(&env, round);
    }
    let info = env.wal_info().unwrap();
    assert!(info.checkpoint_waits > before.checkpoint_waits, "{info:?}");
    // Counted, with what called for them: the pages the commits held.
    assert_eq!(before.checkpoints, 1, "{before:?}");
    let held = info.checkpoints_for_held - before.checkpoints_for_held;
    assert!(held >= 3 && info.checkpoints > held, "{info:?}");
    assert_eq!(info.checkpoints_for_bytes, 0, "{info:?}");
    assert!(
        info.checkpoint_txnid >= before.checkpoint_txnid + 4,
        "{before:?} -> {info:?}"
    );
    let r = env.read_txn().unwrap();
    assert_eq!(
        r.get(Database::MAIN, &key(19_999)).unwrap(),
        Some(&[3u8; 900][..])
    );
}

/// A durable commit of one put costs one log write and one log sync on
/// the committing thread: no data-file sync, no checkpoint step, no other
/// log write (the group's gathering does not wait with a single writer,
/// and no segment moves on). The checkpointer's checkpoints (by the pages
/// held for the log, every hundred or so of these commits) run on its own
/// thread.
#[test]
fn a_single_put_commit_is_one_log_write_and_one_log_sync() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let env = loaded(dir.path(), rec.clone());
    // Marks the file for the log again (after the plain checkpoint).
    batch(&env, 100_000, 100_001).unwrap();
    let me = std::thread::current().name().unwrap().to_string();
    for i in 0..300 {
        rec.take();
        batch(&env, 200_000 + i, 200_001 + i).unwrap();
        let ops: Vec<IoOp> = rec
            .take()
            .into_iter()
            .filter(|(_, t)| *t == me)
            .map(|(op, _)| op)
            .collect();
        let count = |f: fn(&IoOp) -> bool| ops.iter().filter(|op| f(op)).count();
        assert_eq!(count(is_log_write), 1, "commit {i}: {ops:?}");
        assert_eq!(
            count(|op| matches!(op, IoOp::LogSync { .. })),
            1,
            "commit {i}: {ops:?}"
        );
        assert_eq!(count(is_checkpoint_step), 0, "commit {i}: {ops:?}");
        assert_eq!(
            count(|op| matches!(op, IoOp::WriteMeta { .. })),
            1,
            "commit {i}: {ops:?}"
        );
    }
}

/// When the record of a commit whose pages failed cannot be taken back
/// either (the log refuses the zeroing write), nobody can tell whether a
/// crash would replay it: the commit fails, and the handle takes no more
/// transactions; it must be reopened. Every commit acknowledged before is
/// there after a crash.
#[test]
fn a_record_that_cannot_be_taken_back_stops_the_writers() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    {
        let env = loaded(dir.path(), rec.clone());
        batch(&env, 10_000, 10_500).unwrap();
        // The record goes through; its zeroing does not.
        rec.logs_to_pass.store(1, Ordering::SeqCst);
        rec.fail_logs.store(true, Ordering::SeqCst);
        rec.fail_pages.store(true, Ordering::SeqCst);
        let e = batch(&env, 20_000, 20_500).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Os(libc::ENOSPC));
        rec.fail_pages.store(false, Ordering::SeqCst);
        rec.fail_logs.store(false, Ordering::SeqCst);
        // Neither writers nor readers go on (`Panic`) until a reopen.
        let e = batch(&env, 30_000, 30_001).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Panic);
        std::mem::forget(env);
    }
    let env = open(dir.path(), Arc::new(Recorder::default()));
    assert!(has(&env, 10_000) && has(&env, 10_499) && !has(&env, 30_000));
    let rep = mdb::check::check_env(&env, &mut |_| {}).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
}
