//! Readers in two threads and in a second process keep seeing consistent
//! snapshots (a constant sum across accounts) while a writer commits 10,000
//! transactions.

mod common;

use common::Reaped;
use mdb::{Database, Env, EnvFlags, EnvOptions, Txn, WriteFlags};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const ACCOUNTS: u64 = 200;
const START: u64 = 1000;
const ROLE: &str = "MDB_CONC_READER_DIR";

fn acct(i: u64) -> Vec<u8> {
    format!("acct{i:05}").into_bytes()
}

fn open(dir: &std::path::Path) -> Env {
    EnvOptions::new()
        .map_size(1 << 28)
        .flags(EnvFlags::NO_TLS)
        .open(dir)
        .unwrap()
}

/// Sum the balances in one snapshot; returns (sum, txn id).
fn snapshot_sum(env: &Env) -> (u64, u64) {
    let r = env.read_txn().unwrap();
    let mut sum = 0;
    let mut n = 0;
    for kv in r.cursor(Database::MAIN).unwrap() {
        let (k, v) = kv.unwrap();
        if k.starts_with(b"acct") {
            sum += u64::from_le_bytes(v[..8].try_into().unwrap());
            n += 1;
        }
    }
    assert_eq!(n, ACCOUNTS);
    (sum, r.id())
}

/// The second process (this test binary, re-run with `ROLE` set): check
/// snapshots until the stop file appears. It reports in files of its own, not
/// on stdout, which it shares with the test harness.
fn reader_process(dir: &Path) {
    let env = open(dir);
    let mut checks = 0u64;
    let mut last = 0;
    loop {
        // Look before the check, so the last check starts after the last commit.
        let stopping = dir.join("stop").exists();
        let (sum, id) = snapshot_sum(&env);
        assert_eq!(sum, ACCOUNTS * START, "inconsistent snapshot {id}");
        assert!(id >= last);
        last = id;
        checks += 1;
        if checks == 1 {
            std::fs::write(dir.join("reader-ready"), b"").unwrap();
        }
        if stopping {
            break;
        }
    }
    std::fs::write(dir.join("reader-report"), format!("{checks} {last}")).unwrap();
}

#[test]
fn readers_see_consistent_snapshots() {
    if let Some(dir) = std::env::var_os(ROLE) {
        return reader_process(dir.as_ref());
    }
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let dir = base.path();
    let env = open(dir);
    {
        let mut w = env.write_txn().unwrap();
        for i in 0..ACCOUNTS {
            let mut v = START.to_le_bytes().to_vec();
            v.extend_from_slice(&[0u8; 56]);
            w.put(Database::MAIN, &acct(i), &v, WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
    }
    // The harness prints a failing test's output on stdout.
    let output = dir.join("reader-output");
    let out = std::fs::File::create(&output).unwrap();
    let mut child = Reaped(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "readers_see_consistent_snapshots",
                "--test-threads=1",
            ])
            .env(ROLE, dir)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap(),
    );
    let child_failed = |status| {
        let err = std::fs::read_to_string(&output).unwrap();
        panic!("reader process failed ({status}):\n{err}")
    };
    // Commit only once the reader is reading, so the two overlap.
    while !dir.join("reader-ready").exists() {
        if let Some(status) = child.0.try_wait().unwrap() {
            child_failed(status);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let done = AtomicBool::new(false);
    let commits = 10_000u64;
    std::thread::scope(|s| {
        let mut readers = Vec::new();
        for _ in 0..2 {
            readers.push(s.spawn(|| {
                let mut checks = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let (sum, _) = snapshot_sum(&env);
                    assert_eq!(sum, ACCOUNTS * START);
                    checks += 1;
                }
                checks
            }));
        }
        let mut x: u64 = 88172645463325252;
        for t in 0..commits {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (a, b) = (x % ACCOUNTS, (x / ACCOUNTS) % ACCOUNTS);
            let mut w = env.write_txn().unwrap();
            let get = |w: &mdb::RwTxn, i| {
                u64::from_le_bytes(
                    w.get(Database::MAIN, &acct(i)).unwrap().unwrap()[..8]
                        .try_into()
                        .unwrap(),
                )
            };
            let (va, vb) = (get(&w, a), get(&w, b));
            let amt = if va == 0 { 0 } else { (x >> 32) % va };
            if a != b {
                let mut v = (va - amt).to_le_bytes().to_vec();
                v.extend_from_slice(&[t as u8; 56]);
                w.put(Database::MAIN, &acct(a), &v, WriteFlags::EMPTY)
                    .unwrap();
                let mut v = (vb + amt).to_le_bytes().to_vec();
                v.extend_from_slice(&[t as u8; 56]);
                w.put(Database::MAIN, &acct(b), &v, WriteFlags::EMPTY)
                    .unwrap();
            }
            // Some churn so pages are freed and reused under the readers.
            let k = format!("junk{}", x % 3000);
            if t % 3 == 0 {
                w.del(Database::MAIN, k.as_bytes()).unwrap();
            } else {
                w.put(Database::MAIN, k.as_bytes(), &[1u8; 300], WriteFlags::EMPTY)
                    .unwrap();
            }
            w.commit().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
    });
    std::fs::write(dir.join("stop"), b"").unwrap();
    let status = child.0.wait().unwrap();
    if !status.success() {
        child_failed(status);
    }
    let (sum, id) = snapshot_sum(&env);
    assert_eq!(sum, ACCOUNTS * START);
    // The reader saw the last commit, and at least one snapshot before it.
    let report = std::fs::read_to_string(dir.join("reader-report")).unwrap();
    let (checks, last) = report.split_once(' ').unwrap();
    assert!(checks.parse::<u64>().unwrap() > 1, "{report}");
    assert_eq!(last.parse::<u64>().unwrap(), id, "{report}");
    // A few transactions changed nothing (a self-transfer and a delete of a
    // missing key) and committed as no-ops without a new txn id.
    assert!(
        id > commits * 9 / 10 && id <= commits + 1,
        "last txn id {id}"
    );
    drop(env);
    let rep = mdb::check::check_file(&dir.join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
}
