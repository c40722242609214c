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
