//! `mdb-bench wal-batch` keeps working: at a tiny size it loads, commits
//! and reports what the log did, in WAL mode and in LMDB's mode. No
//! assertion on times: those are what it measures.

use std::process::Command;

/// A directory of this test's own (wal-batch makes it anew and removes it).
fn scratch(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("wal-batch-{}-{name}", std::process::id()))
}

fn wal_batch(dir: &std::path::Path, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mdb-bench"))
        .arg("wal-batch")
        .arg(dir)
        .args(["2000", "3"])
        .args(extra)
        .output()
        .expect("cannot run mdb-bench");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "wal-batch failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.exists(), "wal-batch left its directory behind");
    text
}

#[test]
fn wal_batch_reports_the_log() {
    let text = wal_batch(&scratch("w"), &[]);
    assert!(text.contains("batch: "), "{text}");
    // Three durable commits: three records, each made durable by a sync.
    assert!(text.contains("log: 3 records, 3 syncs"), "{text}");
}

#[test]
fn wal_batch_plain_has_no_log() {
    let text = wal_batch(&scratch("p"), &["plain"]);
    assert!(text.contains("batch: "), "{text}");
    assert!(!text.contains("log: "), "{text}");
}
