//! `mdb dump`, `mdb stat` and `mdb check` on damaged files finish, with no
//! signal: meta pages whose txnids do not fit their slots (where LMDB's
//! `mdb_dump` reads the same tree, ours must print the same dump), and
//! files cut short. A child that outlives a guard timeout is killed and
//! fails the test as a hang; the timeout is a guard, not a measurement.

use mdb::{Database, EnvFlags, EnvOptions, WriteFlags};
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const OURS: &str = env!("CARGO_BIN_EXE_mdb");
const GUARD: Duration = Duration::from_secs(120);

/// Run `prog args`; its exit code, stdout and stderr. Panics if it dies by a
/// signal or outlives [`GUARD`].
fn run(prog: &str, args: &[&str], dir: &Path) -> (i32, Vec<u8>, String) {
    let out = dir.join("out");
    let err = dir.join("err");
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{prog} {args:?}: no end after {GUARD:?} (hang)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = std::fs::read_to_string(&err).unwrap_or_default();
    if let Some(sig) = status.signal() {
        panic!("{prog} {args:?}: died by signal {sig}\n{err}");
    }
    (status.code().unwrap(), std::fs::read(&out).unwrap(), err)
}

fn remove_lock(path: &Path) {
    let mut l = path.as_os_str().to_owned();
    l.push("-lock");
    let _ = std::fs::remove_file(l);
}

fn set_meta_txnid(path: &Path, ps: usize, slot: usize, txnid: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&txnid.to_le_bytes(), (slot * ps + 144) as u64)
        .unwrap();
}

fn open(path: &Path) -> mdb::Env {
    EnvOptions::new()
        .map_size(16 << 20)
        .flags(EnvFlags::NO_SUB_DIR)
        .open(path)
        .unwrap()
}

#[test]
fn mismatched_meta_txnids() {
    assert!(
        Path::new("/usr/bin/mdb_dump").exists(),
        "Debian's lmdb-utils are needed (scripts/setup.sh installs them)"
    );
    // (meta 0 txnid, meta 1 txnid, LMDB reads the same tree as we do)
    let cases: &[(u64, u64, bool)] = &[
        (4, 6, true),
        (5, 3, true),
        (4, 4, true),
        (5, 5, true),
        (0, 0, true),
        (u64::MAX, 3, true),
        (3, 2, false),
        (1, 4, false),
    ];
    for &(t0, t1, same) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let ps = {
            let env = open(&path);
            for t in 1..=4u32 {
                let mut w = env.write_txn().unwrap();
                let k = format!("k{t}");
                w.put(Database::MAIN, k.as_bytes(), b"v", WriteFlags::EMPTY)
                    .unwrap();
                w.commit().unwrap();
            }
            env.page_size()
        };
        set_meta_txnid(&path, ps, 0, t0);
        set_meta_txnid(&path, ps, 1, t1);
        let p = path.to_str().unwrap();
        let ctx = format!("metas {t0} {t1}");
        remove_lock(&path);
        let (code, ours, err) = run(OURS, &["dump", "-n", p], dir.path());
        assert_eq!(code, 0, "{ctx}: {err}");
        remove_lock(&path);
        let (code, _, err) = run(OURS, &["stat", "-n", "-e", p], dir.path());
        assert_eq!(code, 0, "{ctx}: {err}");
        remove_lock(&path);
        let (code, _, err) = run(OURS, &["check", "-n", p], dir.path());
        // The checker reports the meta out of its slot, or finds nothing wrong.
        assert!(code == 0 || code == 1, "{ctx}: {err}");
        remove_lock(&path);
        let (code, theirs, err) = run("/usr/bin/mdb_dump", &["-n", p], dir.path());
        assert_eq!(code, 0, "{ctx}: LMDB: {err}");
        if same {
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs),
                "{ctx}"
            );
        }
    }
}

#[test]
fn truncated_files() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    let ps = {
        let env = EnvOptions::new()
            .map_size(16 << 20)
            .max_dbs(2)
            .flags(EnvFlags::NO_SUB_DIR)
            .open(&full)
            .unwrap();
        let mut w = env.write_txn().unwrap();
        let named = w.create_db("named", mdb::DbFlags::DUP_SORT).unwrap();
        for i in 0..400u32 {
            let v = vec![i as u8; if i % 40 == 0 { 6000 } else { 30 }];
            let k = format!("key{i:05}");
            w.put(Database::MAIN, k.as_bytes(), &v, WriteFlags::EMPTY)
                .unwrap();
            w.put(
                named,
                &(i % 7).to_be_bytes(),
                k.as_bytes(),
                WriteFlags::EMPTY,
            )
            .unwrap();
        }
        w.commit().unwrap();
        env.page_size()
    };
    let bytes = std::fs::read(&full).unwrap();
    let path = dir.path().join("cut");
    let p = path.to_str().unwrap();
    let mut failed = 0;
    let mut cuts = 0;
    for page in 0..bytes.len() / ps {
        for cut in [page * ps, page * ps + ps / 2] {
            cuts += 1;
            std::fs::write(&path, &bytes[..cut]).unwrap();
            remove_lock(&path);
            let (code, _, _) = run(OURS, &["dump", "-n", "-a", p], dir.path());
            failed += usize::from(code != 0);
            remove_lock(&path);
            run(OURS, &["stat", "-n", "-a", "-e", "-f", p], dir.path());
            remove_lock(&path);
            let (code, _, err) = run(OURS, &["check", "-n", p], dir.path());
            assert!(
                code == 1 || code == 2,
                "cut at {cut}: check found nothing\n{err}"
            );
        }
    }
    // Only cuts that lose nothing but free pages dump the whole file.
    assert!(failed * 10 >= cuts * 9, "{failed} of {cuts} dumps failed");
}
