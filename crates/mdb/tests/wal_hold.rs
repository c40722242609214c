//! The checkpoint hold as writers outside WAL mode see it: a handle in WAL
//! mode keeps a reader slot at its last checkpoint's txnid, so that stock
//! LMDB (or an mdb handle without the log) writing the same environment
//! reuses no page freed since (the log's records read them as bases).

use mdb::{Database, Env, EnvOptions, Txn, WalOptions, WriteFlags};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

const CHILD_DIR: &str = "MDB_WAL_HOLD_CHILD_DIR";

fn open_wal(dir: &Path) -> Env {
    let mut w = WalOptions::default();
    w.segment_size = 64 << 10;
    w.checkpointer = false;
    EnvOptions::new()
        .map_size(64 << 20)
        .wal(w)
        .open(dir)
        .unwrap()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// The free database's records: txnid -> its value (count, page numbers).
fn free_records(env: &Env) -> BTreeMap<u64, Vec<u8>> {
    let r = env.read_txn().unwrap();
    let c = r.cursor(Database::FREE).unwrap();
    c.iter()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (u64::from_ne_bytes(k.try_into().unwrap()), v.to_vec())
        })
        .collect()
}

/// The hold slots of this process.
fn holds(env: &Env) -> Vec<Option<u64>> {
    env.readers()
        .iter()
        .filter(|r| r.pid == std::process::id() && r.is_wal_hold())
        .map(|r| r.txnid)
        .collect()
}

/// Debian's python3-lmdb: opens the environment at argv[1] while the file
/// is plain, says so, waits for a line, then commits 2,000 new keys in one
/// transaction (more pages than anything freed before the checkpoint).
const LMDB_WRITER: &str = r#"
import lmdb, sys
env = lmdb.open(sys.argv[1], map_size=64 << 20)
print("open", flush=True)
sys.stdin.readline()
with env.begin(write=True) as t:
    for i in range(2000):
        t.put(b"new%06d" % i, b"n" * 200)
print("done", flush=True)
"#;

#[test]
fn stock_lmdb_beside_a_wal_handle_reuses_no_page_freed_after_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let env = open_wal(dir.path());
    for chunk in 0..3u32 {
        let mut w = env.write_txn().unwrap();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            w.put(Database::MAIN, &key(i), &[b'v'; 200], WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
    }
    // A checkpoint on demand leaves a plain LMDB file: LMDB may open it.
    let c = env.checkpoint().unwrap();
    assert_eq!(holds(&env), vec![Some(c)]);
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", LMDB_WRITER])
        .arg(dir.path())
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("Debian's python3-lmdb is needed");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "open\n", "python3-lmdb did not open the environment");
    // Commits past the checkpoint free pages that the log's records read.
    for round in 0..4u32 {
        let mut w = env.write_txn().unwrap();
        for i in (0..3000).filter(|i| i % 4 == round) {
            w.del(Database::MAIN, &key(i)).unwrap();
        }
        w.commit().unwrap();
    }
    assert_eq!(env.wal_info().unwrap().checkpoint_txnid, c);
    let held: BTreeMap<u64, Vec<u8>> = free_records(&env)
        .into_iter()
        .filter(|(t, _)| *t > c)
        .collect();
    assert!(!held.is_empty(), "no page was freed after the checkpoint");
    // Stock LMDB commits beside us.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "done\n", "python3-lmdb's commit failed");
    assert!(child.wait().unwrap().success());
    // It took none of the pages freed after the checkpoint.
    let now = free_records(&env);
    for (t, pages) in &held {
        assert_eq!(
            now.get(t),
            Some(pages),
            "LMDB reused pages freed by txn {t}, after the checkpoint at {c}"
        );
    }
    let r = env.read_txn().unwrap();
    assert_eq!(
        r.get(Database::MAIN, b"new001999").unwrap(),
        Some(&[b'n'; 200][..])
    );
    assert_eq!(r.get(Database::MAIN, &key(1)), Ok(None));
    drop(r);
    // The hold follows the next checkpoint, and goes with the handle.
    let c2 = env.checkpoint().unwrap();
    assert!(c2 > c);
    assert_eq!(holds(&env), vec![Some(c2)]);
    drop(env);
    let plain = EnvOptions::new()
        .map_size(64 << 20)
        .open(dir.path())
        .unwrap();
    assert_eq!(holds(&plain), vec![]);
}

/// Our own writers in WAL mode skip hold slots: a second handle whose
/// slot lags (it has not seen the newest checkpoint) holds nothing back
/// beyond what today's hold does.
#[test]
fn a_lagging_hold_slot_does_not_hold_back_wal_writers() {
    let dir = tempfile::tempdir().unwrap();
    let a = open_wal(dir.path());
    let b = open_wal(dir.path());
    let mut w = a.write_txn().unwrap();
    for i in 0..2000 {
        w.put(Database::MAIN, &key(i), &[b'v'; 200], WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    let c = a.checkpoint().unwrap();
    // Frees after c, then a checkpoint past them: reusable by a WAL writer.
    let mut w = a.write_txn().unwrap();
    for i in 0..1000 {
        w.del(Database::MAIN, &key(i)).unwrap();
    }
    w.commit().unwrap();
    let c2 = a.checkpoint().unwrap();
    assert!(c2 > c);
    let slots: Vec<Option<u64>> = a
        .readers()
        .iter()
        .filter(|r| r.is_wal_hold())
        .map(|r| r.txnid)
        .collect();
    assert_eq!(slots.len(), 2, "{slots:?}");
    assert!(slots.contains(&Some(c2)), "{slots:?}");
    let freed = free_records(&a);
    assert!(
        freed.keys().any(|&t| t > c && t <= c2),
        "{:?}",
        freed.keys()
    );
    // Two commits (frees are reusable after the next one): a's writer takes
    // the pages freed before c2, whatever b's slot says.
    for round in 0..2 {
        let mut w = a.write_txn().unwrap();
        for i in 0..1000 {
            let k = format!("again{round}{i:05}");
            w.put(
                Database::MAIN,
                k.as_bytes(),
                &[b'a'; 200],
                WriteFlags::EMPTY,
            )
            .unwrap();
        }
        w.commit().unwrap();
    }
    let left = free_records(&a);
    assert!(
        !left.keys().any(|&t| t > c && t <= c2),
        "pages freed between the checkpoints stayed: {:?}",
        left.keys()
    );
    drop(b);
}

/// A process in WAL mode that dies without closing leaves its hold slot,
/// which the stale-reader check clears like any dead reader's.
#[test]
fn a_dead_wal_process_hold_is_cleared_by_the_reader_check() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        let env = open_wal(Path::new(&dir));
        let mut w = env.write_txn().unwrap();
        w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
        std::process::exit(0);
    }
    let dir = tempfile::tempdir().unwrap();
    // Open first: the last process to leave a lock file resets its table.
    let env = open_wal(dir.path());
    let st = Command::new(std::env::current_exe().unwrap())
        .args([
            "a_dead_wal_process_hold_is_cleared_by_the_reader_check",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "child failed: {st:?}");
    let dead: Vec<_> = env
        .readers()
        .into_iter()
        .filter(|r| r.pid != std::process::id())
        .collect();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(dead[0].is_wal_hold());
    assert_eq!(env.reader_check().unwrap(), 1);
    assert!(env.readers().iter().all(|r| r.pid == std::process::id()));
    let r = env.read_txn().unwrap();
    assert_eq!(r.get(Database::MAIN, b"k").unwrap(), Some(&b"v"[..]));
}
