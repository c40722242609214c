//! Crash safety: a child process commits in a loop and is killed with
//! SIGKILL at random moments; after each kill the file opens, passes the page
//! check, and holds every transaction the child reported committed.

use mdb::{check, Database, Env, Txn, WriteFlags};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

const ROLE: &str = "MDB_CRASH_CHILD_DIR";
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

/// Child side: commit forever, reporting each committed counter on stdout.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(ROLE) else {
        return;
    };
    let env = mdb::EnvOptions::new().map_size(1 << 28).open(&dir).unwrap();
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
        // Report only after commit returned; flush so the parent sees it at once.
        let mut out = std::io::stdout().lock();
        writeln!(out, "committed {n}").unwrap();
        out.flush().unwrap();
    }
}

fn verify(dir: &std::path::Path, reported: u64) -> u64 {
    let rep = check::check_file(&dir.join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "page check failed: {:?}", rep.problems);
    let env = Env::open(dir).unwrap();
    let r = env.read_txn().unwrap();
    let c = counter(&r);
    assert!(
        c >= reported,
        "lost a committed txn: counter {c} < reported {reported}"
    );
    assert!(
        c <= reported + 1,
        "counter {c} ahead of reported {reported} + 1"
    );
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
    assert_eq!(keys, want);
    c
}

#[test]
fn sigkill_during_commits() {
    let rounds: u64 = std::env::var("MDB_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut reported = 0;
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for round in 0..rounds {
        let mut child = Command::new(&exe)
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env(ROLE, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut last = 0;
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line.strip_prefix("committed ") {
                    last = n.trim().parse().unwrap();
                }
            }
            last
        });
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Let the child start and commit for a random while, then kill it.
        std::thread::sleep(Duration::from_millis(20 + seed % 60));
        child.kill().unwrap();
        child.wait().unwrap();
        let last = reader.join().unwrap();
        reported = reported.max(last);
        let c = verify(dir.path(), reported);
        reported = c;
        if round == rounds - 1 {
            assert!(c > 0, "the child never committed");
        }
    }
}
