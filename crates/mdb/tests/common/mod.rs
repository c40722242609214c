//! Helpers shared by the corrupt-file tests: a small data file using every
//! storage form, a bounded walk of everything in it, and a child-process
//! runner so that a signal or a hang fails one test instead of the runner.

#![allow(dead_code)]

use mdb::{Database, DbFlags, Env, EnvFlags, EnvOptions, Txn, WriteFlags};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "MDB_CORRUPT_TEST_CHILD";
/// How long a child may run before it is taken for hung. Only a guard
/// against a hang: the tests take a few seconds.
const GUARD: Duration = Duration::from_secs(300);

/// Run `body` in a child process (this test binary, re-run on test `name`):
/// the test fails if the child dies by a signal, panics, or never finishes.
pub fn in_child(name: &str, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        body();
        return;
    }
    let err = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err.reopen().unwrap())
        .spawn()
        .unwrap();
    let status = wait_guarded(&mut child);
    let log = std::fs::read_to_string(err.path()).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    let tail = lines[lines.len().saturating_sub(30)..].join("\n");
    let status = status.unwrap_or_else(|| panic!("{name}: no end after {GUARD:?} (hang)\n{tail}"));
    use std::os::unix::process::ExitStatusExt;
    if let Some(sig) = status.signal() {
        panic!("{name}: child died by signal {sig}\n{tail}");
    }
    assert!(status.success(), "{name}: child failed\n{log}");
}

/// Wait for `child`; kill it and return None if it outlives [`GUARD`].
pub fn wait_guarded(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        if t0.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Options for a NOSUBDIR environment with room for the test databases.
pub fn opts(flags: EnvFlags) -> EnvOptions {
    let mut o = EnvOptions::new();
    o.max_dbs(8)
        .map_size(32 << 20)
        .flags(EnvFlags::NO_SUB_DIR | flags);
    if flags.contains(EnvFlags::NO_LOCK) {
        // SAFETY: each test's file is private to it, and every Env a test
        // opens NO_LOCK on a file is closed before it opens another one.
        unsafe {
            o.no_lock();
        }
    }
    o
}

/// Build a data file at `path` (NOSUBDIR) with every storage form: MAIN
/// with a branch root and overflow values, a plain named DB, a DUPSORT DB
/// with a single value, a sub-page and a sub-database, and a DUPFIXED DB
/// with a LEAF2 sub-page and a LEAF2 sub-database. Two commits, so the free
/// database is not empty. Returns the page size.
pub fn build_file(path: &Path) -> usize {
    let env = opts(EnvFlags::EMPTY).open(path).unwrap();
    let mut w = env.write_txn().unwrap();
    for i in 0..300u32 {
        let v = if i % 25 == 0 {
            vec![i as u8; 5000]
        } else {
            format!("value-{i}").into_bytes()
        };
        w.put(
            Database::MAIN,
            format!("key{i:04}").as_bytes(),
            &v,
            WriteFlags::EMPTY,
        )
        .unwrap();
    }
    let plain = w.create_db("plain", DbFlags::EMPTY).unwrap();
    for i in 0..50u32 {
        w.put(plain, &i.to_be_bytes(), b"p", WriteFlags::EMPTY)
            .unwrap();
    }
    let dups = w.create_db("dups", DbFlags::DUP_SORT).unwrap();
    w.put(dups, b"one", b"v", WriteFlags::EMPTY).unwrap();
    for i in 0..3u32 {
        w.put(dups, b"few", format!("f{i}").as_bytes(), WriteFlags::EMPTY)
            .unwrap();
    }
    for i in 0..300u32 {
        w.put(
            dups,
            b"many",
            format!("m{i:05}").as_bytes(),
            WriteFlags::EMPTY,
        )
        .unwrap();
    }
    let fixed = w
        .create_db("fixed", DbFlags(DbFlags::DUP_SORT.0 | DbFlags::DUP_FIXED.0))
        .unwrap();
    for i in 0..10u32 {
        w.put(fixed, b"a", &i.to_be_bytes(), WriteFlags::EMPTY)
            .unwrap();
    }
    for i in 0..2000u32 {
        w.put(fixed, b"b", &i.to_be_bytes(), WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    for i in (0..300u32).step_by(7) {
        w.del(Database::MAIN, format!("key{i:04}").as_bytes())
            .unwrap();
    }
    w.commit().unwrap();
    env.page_size()
}

/// Visit everything reachable in `env`'s newest snapshot, forwards,
/// backwards and by key. Returns the number of items read forwards, or the
/// first error. Bounded whatever the file says.
pub fn walk(env: &Env) -> mdb::Result<usize> {
    let r = env.read_txn()?;
    let mut n = walk_db(&r, Database::MAIN)?;
    for name in ["plain", "dups", "fixed"] {
        match r.open_db(name) {
            Ok(db) => n += walk_db(&r, db)?,
            Err(e) if e == mdb::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    n += walk_db(&r, Database::FREE)?;
    Ok(n)
}

const STEPS: usize = 20_000;

/// Walk one database; see [`walk`].
pub fn walk_db<T: Txn>(t: &T, db: Database) -> mdb::Result<usize> {
    let dupsort = t.db_flags(db)?.contains(DbFlags::DUP_SORT);
    let mut keys = Vec::new();
    let mut c = t.cursor(db)?;
    let mut item = c.first()?;
    let mut n = 0;
    while let Some((k, _)) = item {
        if keys.last() != Some(&k) {
            keys.push(k);
        }
        n += 1;
        if n >= STEPS {
            break;
        }
        item = c.next()?;
    }
    let mut c = t.cursor(db)?;
    let mut item = c.last()?;
    let mut m = 0;
    while item.is_some() && m < STEPS {
        m += 1;
        item = c.prev()?;
    }
    for k in keys {
        t.get(db, k)?;
        let mut c = t.cursor(db)?;
        c.set_range(k)?;
        if dupsort {
            c.count()?;
            c.last_dup()?;
            c.get_both_range(k, b"\xff")?;
            let _ = c.get_current();
        }
    }
    Ok(n)
}

/// Panics, saying where, if two models differ (they are too big to print).
pub fn same_model<K: Ord + std::fmt::Debug + Clone, V: PartialEq>(
    a: &std::collections::BTreeMap<K, V>,
    b: &std::collections::BTreeMap<K, V>,
    what: &str,
) {
    if a != b {
        let first = a
            .iter()
            .zip(b.iter())
            .find(|(x, y)| x != y)
            .map(|(x, _)| x.0.clone());
        panic!(
            "{what}: {} vs {} keys, first difference at {first:?}",
            a.len(),
            b.len()
        );
    }
}

/// A small xorshift generator: `rng(seed)(n)` is in `0..n`.
pub fn rng(mut s: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s % n
    }
}

/// A child process killed and reaped if the test ends before it does.
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every record of the main database in `t`, owned: what a model is
/// compared with.
pub fn main_contents<T: Txn>(t: &T) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    t.cursor(Database::MAIN)
        .unwrap()
        .iter()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}
