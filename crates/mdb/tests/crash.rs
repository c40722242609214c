//! Crash safety: a child process commits in a loop and is killed with
//! SIGKILL at random moments; after each kill the file opens, passes the page
//! check, and holds every transaction the child reported committed. A second
//! child reads throughout (in WAL mode, its checkpointer thread checkpoints
//! too) and checks every snapshot it sees; it is killed with the writer.
//!
//! The child is this test binary re-run on the one test below with
//! `CHILD_DIR` set. It reports to a file of its own, not to stdout, which it
//! shares with the test harness (the harness's "test ... " prefix once hid a
//! report and made the test fail on a busy machine).

use mdb::{check, Database, Env, Txn, WriteFlags};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const CHILD_DIR: &str = "MDB_CRASH_CHILD_DIR";
const CHILD_REPORT: &str = "MDB_CRASH_CHILD_REPORT";
const CHILD_WAL: &str = "MDB_CRASH_CHILD_WAL";
const CHILD_READER: &str = "MDB_CRASH_CHILD_READER";
const KEEP: u64 = 50;

fn value_for(n: u64) -> Vec<u8> {
    let len = ((n * 7919) % 6000) as usize;
    (0..len).map(|i| (n as usize + i) as u8).collect()
}

fn counter(t: &impl Txn) -> u64 {
    t.get(Database::MAIN, b"counter")
        .unwrap()
        .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()))
}

fn report_line(n: u64) -> String {
    format!("committed {n}\n")
}

/// The child's options; in WAL mode with checkpoints every 256 KiB of log,
/// so that kills also land in checkpoints and segment recycling.
fn options(wal: bool) -> mdb::EnvOptions {
    let mut o = mdb::EnvOptions::new();
    o.map_size(1 << 28);
    if wal {
        let mut w = mdb::WalOptions::default();
        w.segment_size = 256 << 10;
        w.checkpoint_bytes = 256 << 10;
        o.wal(w);
    }
    o
}

/// Child side: commit forever, appending each committed counter to `report`.
fn commit_forever(dir: &Path, report: &Path) -> ! {
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(report)
        .unwrap();
    // A failure goes into the report at once, where the parent reads it,
    // before the kill that would hide it lands.
    let hook_out = out.try_clone().unwrap();
    std::panic::set_hook(Box::new(move |info| {
        let _ = (&hook_out).write_all(format!("child failed: {info}\n").as_bytes());
    }));
    let env = options(std::env::var_os(CHILD_WAL).is_some())
        .open(dir)
        .unwrap();
    loop {
        let mut w = env.write_txn().unwrap();
        let n = counter(&w) + 1;
        w.put(
            Database::MAIN,
            b"counter",
            &n.to_le_bytes(),
            WriteFlags::EMPTY,
        )
        .unwrap();
        w.put(
            Database::MAIN,
            format!("k{n:010}").as_bytes(),
            &value_for(n),
            WriteFlags::EMPTY,
        )
        .unwrap();
        if n > KEEP {
            w.del(Database::MAIN, format!("k{:010}", n - KEEP).as_bytes())
                .unwrap();
        }
        w.commit().unwrap();
        // Report only after commit returned, in one unbuffered write: a
        // SIGKILL leaves the line whole, cut short, or not written.
        out.write_all(report_line(n).as_bytes()).unwrap();
    }
}

/// The keys of a snapshot whose counter is `c`, each value checked.
fn check_snapshot(r: &impl Txn, c: u64) {
    let keys: Vec<u64> = r
        .cursor(Database::MAIN)
        .unwrap()
        .iter()
        .map(|kv| kv.unwrap())
        .filter(|(k, _)| k[0] == b'k')
        .map(|(k, v)| {
            let n: u64 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            assert_eq!(v, &value_for(n)[..], "value of k{n}");
            n
        })
        .collect();
    let want: Vec<u64> = (c.saturating_sub(KEEP - 1).max(1)..=c).collect();
    assert_eq!(keys, want, "snapshot at counter {c}");
}

/// Reader child: check snapshots forever; the counter never goes back.
/// Failures go to `report`.
fn read_forever(dir: &Path, report: &Path) -> ! {
    let out = std::fs::File::create(report).unwrap();
    std::panic::set_hook(Box::new(move |info| {
        let _ = (&out).write_all(format!("reader failed: {info}\n").as_bytes());
    }));
    let env = options(std::env::var_os(CHILD_WAL).is_some())
        .open(dir)
        .unwrap();
    let mut last = 0;
    loop {
        let r = env.read_txn().unwrap();
        let c = counter(&r);
        assert!(c >= last, "counter went back from {last} to {c}");
        check_snapshot(&r, c);
        last = c;
    }
}

/// The last counter a round's report names. The child started from `start`,
/// so its reports must be `start + 1`, `start + 2`, ... in order; a last
/// line without its newline was cut short by the kill and does not count.
fn last_reported(report: &str, start: u64) -> u64 {
    let mut last = start;
    let mut rest = report;
    while let Some(i) = rest.find('\n') {
        assert_eq!(
            &rest[..=i],
            report_line(last + 1),
            "report out of sequence after {last}:\n{report}"
        );
        last += 1;
        rest = &rest[i + 1..];
    }
    assert!(
        report_line(last + 1).starts_with(rest),
        "garbage at the end of the report: {rest:?}"
    );
    last
}

/// Checks the file after a kill; returns the counter it holds.
fn verify(dir: &Path, reported: u64, wal: bool) -> u64 {
    // In WAL mode the data file may lack what the log holds until an open
    // rolls it forward.
    let env: Env = options(wal).open(dir).unwrap();
    let rep = check::check_file(&dir.join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "page check failed: {:?}", rep.problems);
    let r = env.read_txn().unwrap();
    let c = counter(&r);
    assert!(
        c >= reported,
        "lost a committed txn: counter {c} < reported {reported}"
    );
    // The kill may fall between a commit and its report: one, no more.
    assert!(
        c <= reported + 1,
        "counter {c} ahead of reported {reported} + 1"
    );
    check_snapshot(&r, c);
    c
}

#[test]
fn sigkill_during_commits() {
    kill_rounds("sigkill_during_commits", false, 100);
}

#[test]
fn sigkill_during_wal_commits_and_checkpoints() {
    kill_rounds("sigkill_during_wal_commits_and_checkpoints", true, 100);
}

/// `rounds` (or `MDB_CRASH_ROUNDS`) times: run test `name` as a child that
/// commits until it is killed, then check what it left.
fn kill_rounds(name: &str, wal: bool, rounds: u64) {
    if let (Some(dir), Some(report)) = (std::env::var_os(CHILD_DIR), std::env::var_os(CHILD_REPORT))
    {
        if std::env::var_os(CHILD_READER).is_some() {
            read_forever(dir.as_ref(), report.as_ref());
        }
        commit_forever(dir.as_ref(), report.as_ref());
    }
    let rounds: u64 = std::env::var("MDB_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(rounds);
    let dir = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut committed = 0;
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for round in 0..rounds {
        let report = scratch.path().join(format!("report{round}"));
        let stderr = scratch.path().join(format!("stderr{round}"));
        let reader_report = scratch.path().join(format!("reader{round}"));
        let spawn = |report: &Path, reader: bool| {
            let mut c = Command::new(&exe);
            c.args(["--exact", name, "--test-threads=1"])
                .env(CHILD_DIR, dir.path())
                .env(CHILD_REPORT, report)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&stderr).unwrap());
            if wal {
                c.env(CHILD_WAL, "1");
            }
            if reader {
                c.env(CHILD_READER, "1");
            }
            c.spawn().unwrap()
        };
        let mut child = spawn(&report, false);
        let mut reader = spawn(&reader_report, true);
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Let the children start and work for a random while, then kill
        // them (the reader a little later or earlier).
        std::thread::sleep(Duration::from_millis(20 + seed % 60));
        if seed & 1 == 0 {
            reader.kill().unwrap();
        }
        child.kill().unwrap();
        let status = child.wait().unwrap();
        let _ = reader.kill();
        let rstatus = reader.wait().unwrap();
        let rtext = std::fs::read_to_string(&reader_report).unwrap_or_default();
        assert!(
            rstatus.signal() == Some(libc::SIGKILL) && rtext.is_empty(),
            "round {round}: the reader failed ({rstatus}):\n{rtext}"
        );
        // The child may have been killed before it created the report.
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        // The child commits until killed: having ended on its own, it failed.
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "round {round}: the child ended by itself ({status}):\n{text}\n{}",
            std::fs::read_to_string(&stderr).unwrap()
        );
        let reported = last_reported(&text, committed);
        committed = verify(dir.path(), reported, wal);
    }
    assert!(committed > 0, "the child never committed");
}
