//! One environment opened twice in a process: both `Env`s share one lock
//! file descriptor, so neither the second open nor the first close takes
//! away the other's locks (fcntl locks belong to the process, and closing
//! any descriptor of the file drops them all).
//!
//! Debian's `mdb_stat` is the other process that looks at the locks.

use mdb::{Database, Env, EnvFlags, EnvOptions, Txn, WriteFlags};
use std::path::Path;
use std::process::Command;

/// `mdb_stat -rr`: LMDB's stale-reader check, then the reader table.
fn lmdb_reader_check(dir: &Path) -> String {
    assert!(
        Path::new("/usr/bin/mdb_stat").exists(),
        "Debian's lmdb-utils is needed (scripts/setup.sh installs it)"
    );
    let out = Command::new("/usr/bin/mdb_stat")
        .arg("-rr")
        .arg(dir)
        .output()
        .unwrap();
    // mdb_stat exits 1 after -r whatever it finds: judge by the output.
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("Reader Table Status"), "{out:?}");
    text
}

fn put(env: &Env, k: &[u8], v: &[u8]) {
    let mut w = env.write_txn().unwrap();
    w.put(Database::MAIN, k, v, WriteFlags::EMPTY).unwrap();
    w.commit().unwrap();
}

#[test]
fn second_env_shares_the_lock_and_its_close_keeps_ours() {
    let dir = tempfile::tempdir().unwrap();
    let a = EnvOptions::new()
        .flags(EnvFlags::NO_TLS)
        .open(dir.path())
        .unwrap();
    put(&a, b"k", b"1");
    let r = a.read_txn().unwrap();
    let line = format!(
        "{:>10} {:x} {}\n",
        std::process::id(),
        a.readers()[0].tid,
        r.id()
    );

    // The second open must not re-initialise the table under `a`'s reader.
    let b = Env::open(dir.path()).unwrap();
    assert_eq!(b.readers(), a.readers());
    put(&b, b"k", b"2");
    let rb = b.read_txn().unwrap();
    assert_eq!(rb.get(Database::MAIN, b"k").unwrap(), Some(&b"2"[..]));
    assert_eq!(r.get(Database::MAIN, b"k").unwrap(), Some(&b"1"[..]));
    drop(rb);
    drop(b);

    // `a` still holds its pid lock: LMDB's stale check leaves its slot.
    let out = lmdb_reader_check(dir.path());
    assert!(out.contains("0 stale readers cleared"), "{out}");
    assert!(out.contains(&line), "want {line:?} in:\n{out}");
    assert_eq!(a.readers().len(), 1);

    // And the shared byte-0 lock: a new Env is not the first opener, so it
    // keeps the table (and its writer sees `a`'s reader).
    let c = Env::open(dir.path()).unwrap();
    assert_eq!(c.readers(), a.readers());
    for i in 0..20u32 {
        put(&c, b"k", &i.to_le_bytes());
    }
    assert_eq!(r.get(Database::MAIN, b"k").unwrap(), Some(&b"1"[..]));
}

#[test]
fn same_env_by_another_path_is_recognised() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("env");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let a = Env::open(&real).unwrap();
    put(&a, b"k", b"1");
    let r = a.read_txn().unwrap();
    drop(Env::open(&link).unwrap());
    let out = lmdb_reader_check(&real);
    assert!(out.contains("0 stale readers cleared"), "{out}");
    assert_eq!(a.readers().len(), 1);
    assert_eq!(a.readers()[0].txnid, Some(r.id()));
}

#[test]
fn second_writer_in_the_same_thread_is_refused_not_deadlocked() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        Env::open(dir.path()).unwrap(),
        Env::open(dir.path()).unwrap(),
    );
    let w = a.write_txn().unwrap();
    assert_eq!(
        b.write_txn().err().map(|e| e.kind()),
        Some(mdb::ErrorKind::BadTxn)
    );
    let out = tempfile::tempdir().unwrap();
    assert_eq!(
        a.copy_to_path(out.path(), false).map_err(|e| e.kind()),
        Err(mdb::ErrorKind::BadTxn)
    );
    drop(w);
    let mut w = b.write_txn().unwrap();
    w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)
        .unwrap();
    w.commit().unwrap();
    a.copy_to_path(out.path(), false).unwrap();
}
