//! `mdb backup` and `mdb restore` from the command line: a full then an
//! incremental backup of an environment Debian's python3-lmdb writes, the
//! chain verified (also as JSON), restored at each backup and read by
//! Debian's `mdb_dump`; a damaged file named in the error.

use std::path::Path;
use std::process::Command;

const OURS: &str = env!("CARGO_BIN_EXE_mdb");

fn run(prog: &str, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(prog).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn python(dir: &Path, code: &str) {
    assert!(
        Path::new("/usr/bin/python3").exists(),
        "needs Debian's python3-lmdb (apt-get install python3-lmdb)"
    );
    let script = format!(
        "import lmdb\nenv = lmdb.open({:?}, map_size=1 << 30)\nwith env.begin(write=True) as t:\n{code}\n",
        dir.to_str().unwrap()
    );
    let o = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn dump_count(dir: &Path, needle: &str) -> usize {
    let (code, out, err) = run("/usr/bin/mdb_dump", &["-p", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    out.lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn backup_verify_restore_from_the_command_line() {
    let t = tempfile::tempdir().unwrap();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    std::fs::create_dir(&src).unwrap();
    python(
        &src,
        "    for i in range(20000): t.put(b'k%08d' % i, b'a' * 100)",
    );
    let (s, d) = (src.to_str().unwrap(), dest.to_str().unwrap());
    let (code, out, err) = run(OURS, &["backup", s, d]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("full backup 0 of transaction 1"), "{out}");
    python(
        &src,
        "    for i in range(0, 20000, 100): t.put(b'k%08d' % i, b'b' * 100)",
    );
    let (code, out, err) = run(OURS, &["backup", "--incremental", "--json", s, d]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("\"kind\":\"incremental\"") && out.contains("\"txnid\":2"),
        "{out}"
    );
    let (code, out, _) = run(OURS, &["backup", "--verify", "--json", d]);
    assert_eq!(
        (code, out.trim()),
        (0, "{\"ok\":true,\"backups\":2,\"bytes\":3360400}")
    );

    let (o1, o2) = (t.path().join("at1"), t.path().join("at2"));
    let (code, out, err) = run(OURS, &["restore", "--to-txn", "1", d, o1.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("restored transaction 1"), "{out}");
    let (code, _, err) = run(OURS, &["restore", d, o2.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(dump_count(&o1, "bbbbbbbbbb"), 0);
    assert_eq!(dump_count(&o2, "bbbbbbbbbb"), 200);
    assert_eq!(dump_count(&o2, " k0"), 20000);
    // Into an environment that exists: refused.
    let (code, _, err) = run(OURS, &["restore", d, o2.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("exists"), "{err}");

    // A damaged file is named.
    let incr = dest.join("000001-incr.pages");
    let mut b = std::fs::read(&incr).unwrap();
    b[5000] ^= 1;
    std::fs::write(&incr, b).unwrap();
    let (code, _, err) = run(OURS, &["backup", "--verify", d]);
    assert_eq!(code, 1);
    assert!(
        err.contains("000001-incr.pages") && err.contains("CRC32C"),
        "{err}"
    );
    let (code, _, err) = run(OURS, &["restore", d, t.path().join("x").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("000001-incr.pages"), "{err}");
    // Usage errors.
    assert_eq!(run(OURS, &["backup", s]).0, 1);
    assert_eq!(run(OURS, &["restore", "--to-txn", "x", d, "y"]).0, 1);
}

/// `--continuous` on an environment in write-ahead-log mode that this
/// process keeps committing to: a full backup, then log archives; the
/// newest restore holds every commit up to the last archived one.
#[test]
fn continuous_archiving_follows_the_log() {
    use mdb::{Database, EnvOptions, Txn, WalOptions, WriteFlags};
    let t = tempfile::tempdir().unwrap();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    std::fs::create_dir(&src).unwrap();
    let env = std::sync::Arc::new(
        EnvOptions::new()
            .wal(WalOptions::default())
            .open(&src)
            .unwrap(),
    );
    let put = |env: &mdb::Env| {
        let mut w = env.write_txn().unwrap();
        let id = w.id();
        w.put(Database::MAIN, &id.to_be_bytes(), b"v", WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
    };
    put(&env);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = std::thread::spawn({
        let (env, stop) = (env.clone(), stop.clone());
        move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                put(&env);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    });
    let (s, d) = (src.to_str().unwrap(), dest.to_str().unwrap());
    let (code, out, err) = run(
        OURS,
        &[
            "backup",
            "--continuous",
            "--interval",
            "200",
            "--for",
            "2",
            s,
            d,
        ],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("full backup 0"), "{out}");
    assert!(
        lines.len() >= 4 && lines[1..].iter().all(|l| l.starts_with("log archive")),
        "{out}"
    );
    assert_eq!(run(OURS, &["backup", "--verify", d]).0, 0);
    let o = t.path().join("out");
    let (code, out, err) = run(OURS, &["restore", d, o.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let last: u64 = lines
        .last()
        .unwrap()
        .split_whitespace()
        .nth(5)
        .unwrap()
        .trim_end_matches(':')
        .parse()
        .unwrap();
    assert!(
        out.starts_with(&format!("restored transaction {last} ")),
        "{out}"
    );
    let r = EnvOptions::new().open(&o).unwrap();
    let r = r.read_txn().unwrap();
    assert_eq!(r.id(), last);
    let keys: Vec<u64> = r
        .cursor(Database::MAIN)
        .unwrap()
        .iter()
        .map(|kv| u64::from_be_bytes(kv.unwrap().0.try_into().unwrap()))
        .collect();
    // One key per commit, from the first write transaction on.
    assert_eq!(keys, (keys[0]..=last).collect::<Vec<_>>());
}

/// `--continuous` on an environment not in write-ahead-log mode is
/// refused before anything is written.
#[test]
fn continuous_without_a_log_is_refused_first() {
    let t = tempfile::tempdir().unwrap();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    std::fs::create_dir(&src).unwrap();
    python(&src, "    t.put(b'k', b'v')");
    let (s, d) = (src.to_str().unwrap(), dest.to_str().unwrap());
    let (code, out, err) = run(OURS, &["backup", "--continuous", "--for", "1", s, d]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("write-ahead-log"), "{err}");
    assert!(
        !dest.exists() || std::fs::read_dir(&dest).unwrap().count() == 0,
        "written: {:?}",
        std::fs::read_dir(&dest).unwrap().collect::<Vec<_>>()
    );
}

/// An incremental backup of another environment (at an older transaction)
/// into a chain is refused with a message, and the chain stays readable.
#[test]
fn a_backup_of_another_environment_into_a_chain_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let (src, other, dest) = (t.path().join("src"), t.path().join("o"), t.path().join("d"));
    std::fs::create_dir(&src).unwrap();
    std::fs::create_dir(&other).unwrap();
    for i in 0..5 {
        python(&src, &format!("    t.put(b'k{i}', b'v')"));
    }
    python(&other, "    t.put(b'k', b'v')");
    let d = dest.to_str().unwrap();
    assert_eq!(run(OURS, &["backup", src.to_str().unwrap(), d]).0, 0);
    let manifest = std::fs::read(dest.join("manifest.json")).unwrap();
    let (code, _, err) = run(
        OURS,
        &["backup", "--incremental", other.to_str().unwrap(), d],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("transaction 5") && err.contains("new directory"),
        "{err}"
    );
    assert_eq!(std::fs::read(dest.join("manifest.json")).unwrap(), manifest);
    assert_eq!(run(OURS, &["backup", "--verify", d]).0, 0);
}

/// A clock that is the system's, recording each time it gives (one per
/// commit of the log, here).
#[derive(Default)]
struct Recording(std::sync::Mutex<Vec<std::time::SystemTime>>);

impl mdb::io::FaultInjector for Recording {
    fn on_io(&self, _: mdb::io::IoOp) -> mdb::io::IoAction {
        mdb::io::IoAction::Proceed
    }
    fn now(&self) -> Option<std::time::SystemTime> {
        let t = std::time::SystemTime::now();
        self.0.lock().unwrap().push(t);
        Some(t)
    }
}

/// `mdb restore --to-time T` (to the nanosecond) in write-ahead-log mode
/// restores the newest commit stamped at or before T: exactly the commits
/// made by then, whatever the backups' own times.
#[test]
fn restore_to_a_time_reaches_the_commit_made_by_then() {
    use mdb::{Database, EnvOptions, Txn, WalOptions, WriteFlags};
    let t = tempfile::tempdir().unwrap();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    std::fs::create_dir(&src).unwrap();
    let clock = std::sync::Arc::new(Recording::default());
    let env = EnvOptions::new()
        .wal(WalOptions::default())
        .fault_injector(clock.clone())
        .open(&src)
        .unwrap();
    let put = |k: u64| {
        let mut w = env.write_txn().unwrap();
        assert_eq!(w.id(), k);
        w.put(Database::MAIN, &k.to_be_bytes(), b"v", WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
    };
    (1..=3).for_each(put);
    let (s, d) = (src.to_str().unwrap(), dest.to_str().unwrap());
    assert_eq!(run(OURS, &["backup", s, d]).0, 0);
    (4..=30).for_each(put);
    let (code, _, err) = run(OURS, &["backup", "--incremental", s, d]);
    assert_eq!(code, 0, "{err}");
    let times = clock.0.lock().unwrap().clone();
    assert_eq!(times.len(), 30, "one time per commit");
    for k in [4u64, 11, 17, 29] {
        let at = times[k as usize - 1];
        let ns = at.duration_since(std::time::UNIX_EPOCH).unwrap();
        let arg = format!("{}.{:09}", ns.as_secs(), ns.subsec_nanos());
        // The newest commit by then: every one up to it stamped by then.
        let want = (4..=30u64)
            .take_while(|&j| times[j as usize - 1] <= at)
            .last()
            .unwrap();
        let o = t.path().join(format!("at{k}"));
        let (code, out, err) = run(
            OURS,
            &["restore", "--to-time", &arg, d, o.to_str().unwrap()],
        );
        assert_eq!(code, 0, "{err}");
        assert!(
            out.starts_with(&format!("restored transaction {want} ")),
            "{out}"
        );
        let r = EnvOptions::new().open(&o).unwrap();
        let n = r
            .read_txn()
            .unwrap()
            .cursor(Database::MAIN)
            .unwrap()
            .iter()
            .count();
        assert_eq!(n as u64, want);
    }
    let (code, _, err) = run(OURS, &["restore", "--to-time", "12.x", d, "y"]);
    assert_eq!(code, 1);
    assert!(err.contains("--to-time"), "{err}");
}
