//! A writer process that dies holding the writer lock (mid-transaction):
//! the next writer of another process that had the environment open takes
//! the lock over (the robust mutex says its owner died), through either
//! commit sink, LMDB's or the log's, and commits; the dead writer's
//! changes are gone, every commit before it is there.

use mdb::{Database, Env, EnvOptions, Txn, WalOptions, WriteFlags};
use std::path::Path;
use std::process::{Command, Stdio};

mod common;

const CHILD: &str = "MDB_WRITER_DIED_CHILD";

fn open(dir: &Path, wal: bool) -> Env {
    let mut o = EnvOptions::new();
    if wal {
        o.wal(WalOptions::default());
    }
    o.open(dir).unwrap()
}

fn put(env: &Env, k: &[u8]) {
    let mut w = env.write_txn().unwrap();
    w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY).unwrap();
    w.commit().unwrap();
}

/// Run test `name` of this binary as a child that opens the environment in
/// `dir`, begins a write transaction, puts `b`, and exits without ending
/// it: the process dies holding the writer mutex.
fn die_writing(name: &str, dir: &Path, wal: bool) {
    if let Some(d) = std::env::var_os(CHILD) {
        let env = open(Path::new(&d), wal);
        let mut w = env.write_txn().unwrap();
        w.put(Database::MAIN, b"b", b"v", WriteFlags::EMPTY)
            .unwrap();
        // SAFETY: ends the process at once, on purpose without unwinding
        // or running destructors (the transaction keeps the lock).
        unsafe { libc::_exit(0) };
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let status = common::wait_guarded(&mut child).expect("the child hung");
    assert!(status.success(), "child: {status:?}");
}

fn writer_died(name: &str, wal: bool) {
    let dir = tempfile::tempdir().unwrap();
    // Open first and throughout: the lock file, and the dead writer's
    // mutex in it, outlive the child.
    let env = if std::env::var_os(CHILD).is_none() {
        let env = open(dir.path(), wal);
        put(&env, b"a");
        Some(env)
    } else {
        None
    };
    die_writing(name, dir.path(), wal);
    let env = env.unwrap();
    put(&env, b"c");
    let r = env.read_txn().unwrap();
    assert_eq!(r.get(Database::MAIN, b"a").unwrap(), Some(&b"v"[..]));
    assert_eq!(r.get(Database::MAIN, b"b").unwrap(), None);
    assert_eq!(r.get(Database::MAIN, b"c").unwrap(), Some(&b"v"[..]));
    drop(r);
    drop(env);
    // And what a reopen finds.
    let env = open(dir.path(), wal);
    let r = env.read_txn().unwrap();
    assert_eq!(r.get(Database::MAIN, b"b").unwrap(), None);
    assert_eq!(r.get(Database::MAIN, b"c").unwrap(), Some(&b"v"[..]));
    assert_eq!(r.stat(Database::MAIN).unwrap().entries, 2);
}

#[test]
fn a_writer_that_died_holding_the_lock_is_taken_over() {
    writer_died("a_writer_that_died_holding_the_lock_is_taken_over", false);
}

#[test]
fn a_wal_writer_that_died_holding_the_lock_is_taken_over() {
    writer_died(
        "a_wal_writer_that_died_holding_the_lock_is_taken_over",
        true,
    );
}
