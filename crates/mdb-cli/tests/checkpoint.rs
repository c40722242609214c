//! `mdb checkpoint` on an environment another process writes in WAL mode,
//! and on one that never had a log.

use std::process::Command;

#[path = "../../mdb/tests/debian/mod.rs"]
mod debian;

const OURS: &str = env!("CARGO_BIN_EXE_mdb");

fn checkpoint(dir: &std::path::Path) -> String {
    let o = Command::new(OURS)
        .arg("checkpoint")
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn log_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("wal")).unwrap().count()
}

#[test]
fn checkpoints_a_log_another_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = mdb::WalOptions::default();
    w.segment_size = 64 << 10;
    w.checkpointer = false;
    let env = mdb::EnvOptions::new().wal(w).open(dir.path()).unwrap();
    for i in 0..200u32 {
        let mut t = env.write_txn().unwrap();
        let k = format!("key{i:04}");
        t.put(
            mdb::Database::MAIN,
            k.as_bytes(),
            &[7u8; 1500],
            mdb::WriteFlags::EMPTY,
        )
        .unwrap();
        t.commit().unwrap();
    }
    let last = env.info().unwrap().last_txnid;
    let before = log_files(dir.path());
    assert!(before > 5, "{before} log files");
    // The log holds commits the data file may lack: LMDB refuses it.
    debian::need("/usr/bin/mdb_dump", "lmdb-utils");
    let refused = Command::new("/usr/bin/mdb_dump")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("MDB_VERSION_MISMATCH"));
    // While this process keeps the environment open.
    let out = checkpoint(dir.path());
    assert_eq!(out, format!("checkpoint at transaction {last}\n"));
    assert!(log_files(dir.path()) < before, "segments recycled");
    // The data file alone holds every commit: Debian's mdb_dump reads it.
    let d = Command::new("/usr/bin/mdb_dump")
        .args(["-p"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(d.status.success());
    assert_eq!(
        String::from_utf8_lossy(&d.stdout).matches(" key").count(),
        200
    );
    drop(env);
}

#[test]
fn starts_a_log_for_an_environment_without_one() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = mdb::Env::open(dir.path()).unwrap();
        let mut t = env.write_txn().unwrap();
        t.put(mdb::Database::MAIN, b"k", b"v", mdb::WriteFlags::EMPTY)
            .unwrap();
        t.commit().unwrap();
    }
    assert_eq!(checkpoint(dir.path()), "checkpoint at transaction 1\n");
    assert!(dir.path().join("wal/checkpoint").exists());
}

const CHILD_DIR: &str = "MDB_CLI_WAL_CHILD_DIR";

/// Child side: 50 commits in WAL mode, then exit without closing (no last
/// checkpoint: the data file is marked and the log holds the commits).
fn crashing_writer(dir: &std::path::Path) -> ! {
    let mut w = mdb::WalOptions::default();
    w.segment_size = 64 << 10;
    w.checkpointer = false;
    let env = mdb::EnvOptions::new().wal(w).open(dir).unwrap();
    for i in 0..50u32 {
        let mut t = env.write_txn().unwrap();
        let k = format!("key{i:04}");
        t.put(
            mdb::Database::MAIN,
            k.as_bytes(),
            &[9u8; 700],
            mdb::WriteFlags::EMPTY,
        )
        .unwrap();
        t.commit().unwrap();
    }
    std::process::exit(0);
}

fn run(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    Command::new(OURS).args(args).arg(dir).output().unwrap()
}

#[test]
fn check_dump_and_copy_roll_a_crashed_log_forward() {
    if let Some(d) = std::env::var_os(CHILD_DIR) {
        crashing_writer(std::path::Path::new(&d));
    }
    let base = tempfile::tempdir().unwrap();
    for (i, tool) in ["check", "dump", "copy"].iter().enumerate() {
        let dir = base.path().join(format!("env{i}"));
        std::fs::create_dir(&dir).unwrap();
        let st = Command::new(std::env::current_exe().unwrap())
            .args([
                "check_dump_and_copy_roll_a_crashed_log_forward",
                "--exact",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, &dir)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        // Debian's tools refuse the file while the log holds its commits.
        debian::need("/usr/bin/mdb_dump", "lmdb-utils");
        let d = Command::new("/usr/bin/mdb_dump")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            !d.status.success(),
            "{tool}: LMDB opened a file with pending log records"
        );
        let out = match *tool {
            "check" => run(&["check"], &dir),
            "dump" => run(&["dump", "-p"], &dir),
            _ => {
                let to = base.path().join("copy");
                std::fs::create_dir(&to).unwrap();
                let o = Command::new(OURS)
                    .arg("copy")
                    .arg(&dir)
                    .arg(&to)
                    .output()
                    .unwrap();
                // The copy is a plain LMDB file with every commit.
                let d = Command::new("/usr/bin/mdb_dump")
                    .args(["-p"])
                    .arg(&to)
                    .output()
                    .unwrap();
                assert!(d.status.success());
                assert_eq!(
                    String::from_utf8_lossy(&d.stdout).matches(" key").count(),
                    50
                );
                o
            }
        };
        assert!(
            out.status.success(),
            "mdb {tool}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if *tool == "dump" {
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).matches(" key").count(),
                50
            );
        }
        // Rolled forward and plain again: Debian's mdb_dump reads it all.
        let d = Command::new("/usr/bin/mdb_dump")
            .args(["-p"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            d.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&d.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&d.stdout).matches(" key").count(),
            50
        );
    }
}

#[test]
fn accept_log_loss_takes_a_data_file_whose_log_was_emptied() {
    if let Some(d) = std::env::var_os(CHILD_DIR) {
        crashing_writer(std::path::Path::new(&d));
    }
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new(std::env::current_exe().unwrap())
        .args([
            "accept_log_loss_takes_a_data_file_whose_log_was_emptied",
            "--exact",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir.path())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    for e in std::fs::read_dir(dir.path().join("wal")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    // Refused, saying what is missing ...
    let o = run(&["checkpoint"], dir.path());
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("MDB_CORRUPTED"), "{err}");
    assert!(err.contains("holds none"), "{err}");
    // ... until the loss is accepted: the data file as it is.
    let o = run(&["checkpoint", "--accept-log-loss"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(run(&["check"], dir.path()).status.success());
    assert!(checkpoint(dir.path()).starts_with("checkpoint at transaction"));
}
