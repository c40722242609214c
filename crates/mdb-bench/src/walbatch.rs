//! `mdb-bench wal-batch`: where the wall time of durable batch commits in
//! write-ahead-log mode goes, as the process sees it. Loads N keys (16 B,
//! 100 B values, 100,000 per commit), takes a checkpoint, then times C
//! commits of 1,000 random new keys: the puts apart from the commit, the
//! commits' latencies, the process's CPU time (user, system: the page
//! writes are system time) and I/O (`/proc/self/io`), and what the log
//! says it did (`Env::wal_info`). Run it under
//! `strace -f -T -e trace=pwrite64,pwritev,fdatasync` to split the system
//! time by file and thread (see docs/benchmarks.md, tenth session), or
//! under `valgrind --tool=callgrind`: the timed commits are one dump of
//! their own (client requests; eleventh session).

use mdb::{Database, EnvOptions, WalOptions, WriteFlags};
use std::path::Path;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: mdb-bench wal-batch DIR N COMMITS [plain]
  DIR      a directory on the disk to measure (made anew; removed after)
  N        keys loaded first
  COMMITS  durable commits of 1,000 random new keys, timed
  plain    LMDB's commit (no log) instead, for comparison";

/// Keys spread over the whole key space, distinct for distinct `i`.
fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

/// (user, system) CPU seconds from a `stat` line of `/proc` (utime and
/// stime, the 14th and 15th fields, in clock ticks of 100 a second).
fn stat_cpu(s: &str) -> (f64, f64) {
    // Fields after the command's closing parenthesis.
    let rest = s.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (
        f.get(11).copied().unwrap_or(0.0) / 100.0,
        f.get(12).copied().unwrap_or(0.0) / 100.0,
    )
}

/// (user, system) CPU seconds of this process, all threads.
fn cpu() -> (f64, f64) {
    stat_cpu(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default())
}

/// CPU seconds of this process's threads by name (the committing thread
/// is `mdb-bench`; the engine's are `mdb-checkpointer`, `mdb-log-flusher`,
/// `mdb-writer-lock`), so that a commit's system time can be told from
/// the checkpointer's data-file write-back.
fn thread_cpu() -> Vec<(String, (f64, f64))> {
    let mut v: Vec<(String, (f64, f64))> = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return v;
    };
    for t in dir.flatten() {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        let name = stat
            .split_once('(')
            .and_then(|(_, r)| r.rsplit_once(')'))
            .map_or(String::new(), |(n, _)| n.to_string());
        let c = stat_cpu(&stat);
        match v.iter_mut().find(|(n, _)| *n == name) {
            Some((_, t)) => *t = (t.0 + c.0, t.1 + c.1),
            None => v.push((name, c)),
        }
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// What changed between two `thread_cpu` snapshots, in ms per commit.
fn thread_delta(a: &[(String, (f64, f64))], b: &[(String, (f64, f64))], commits: u64) -> String {
    let per = |x: f64| x * 1e3 / commits.max(1) as f64;
    b.iter()
        .map(|(n, (u, s))| {
            let (u0, s0) = a.iter().find(|x| x.0 == *n).map_or((0.0, 0.0), |x| x.1);
            format!("{n} {:.2}+{:.2}", per(u - u0), per(s - s0))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// (bytes passed to write calls, bytes sent to the block device).
fn io() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("wchar:"), field("write_bytes:"))
}

pub fn main(args: &[String]) -> i32 {
    let (dir, n, commits, plain) = match args {
        [d, n, c] => (d, n, c, false),
        [d, n, c, p] if p == "plain" => (d, n, c, true),
        _ => {
            eprintln!("{USAGE}");
            return 2;
        }
    };
    let (Ok(n), Ok(commits)) = (n.parse::<u64>(), commits.parse::<u64>()) else {
        eprintln!("{USAGE}");
        return 2;
    };
    match run(Path::new(dir), n, commits.max(1), plain) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mdb-bench wal-batch: {e}");
            1
        }
    }
}

fn run(dir: &Path, n: u64, commits: u64, plain: bool) -> mdb::Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let mut o = EnvOptions::new();
    o.map_size(16 << 30);
    if !plain {
        o.wal(WalOptions::default());
    }
    let env = o.open(dir)?;
    let t = Instant::now();
    for c in 0..n.div_ceil(100_000) {
        let mut w = env.write_txn()?;
        for i in c * 100_000..((c + 1) * 100_000).min(n) {
            w.put(Database::MAIN, &key(i), &[7u8; 100], WriteFlags::EMPTY)?;
        }
        w.commit()?;
    }
    if !plain {
        env.checkpoint()?;
    }
    let file = || std::fs::metadata(dir.join("data.mdb")).map_or(0, |m| m.len() >> 20);
    println!(
        "load: {:.2} us/key, data file {} MiB",
        t.elapsed().as_secs_f64() * 1e6 / n.max(1) as f64,
        file()
    );
    let (w0, c0, io0) = (env.wal_info(), cpu(), io());
    // The same by quarter of the commits: the first ones reuse the load's
    // free pages (long runs), later ones the pages earlier commits freed.
    let quarter = (commits / 4).max(1);
    let mut marks = vec![(0u64, Instant::now(), thread_cpu(), io())];
    let (mut puts, mut commit, mut worst) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    // Commit latencies: under 2, 4, 8, ... 128 ms, and more.
    let mut hist = [0u32; 8];
    let mut s = 99u64;
    // Under callgrind, one dump holds the timed commits (puts and commits)
    // and nothing of the load: `valgrind --tool=callgrind` this command.
    crate::phases::cg_zero();
    let t = Instant::now();
    for c in 0..commits {
        let a = Instant::now();
        let mut w = env.write_txn()?;
        for _ in 0..1000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            w.put(
                Database::MAIN,
                &key(n + s % 100_000_000),
                &[8u8; 100],
                WriteFlags::EMPTY,
            )?;
        }
        let b = Instant::now();
        w.commit()?;
        let d = b.elapsed();
        puts += b - a;
        commit += d;
        worst = worst.max(d);
        let ms = d.as_millis().max(1) as u64;
        hist[(63 - ms.leading_zeros() as usize).min(7)] += 1;
        let done = marks.len() as u64 * quarter;
        if commits >= 4 && marks.len() < 5 && (done == c + 1 || c + 1 == commits) {
            marks.push((c + 1, Instant::now(), thread_cpu(), io()));
        }
    }
    let (all, c1, io1) = (t.elapsed(), cpu(), io());
    crate::phases::cg_dump("batch");
    let keys = (commits * 1000) as f64;
    let us = |d: Duration| d.as_secs_f64() * 1e6 / keys;
    println!(
        "batch: {:.2} us/key (puts {:.2}, commit {:.2}); worst commit {:.1} ms",
        us(all),
        us(puts),
        us(commit),
        worst.as_secs_f64() * 1e3
    );
    println!("commit latency, commits under 2/4/8/16/32/64/128 ms and more: {hist:?}");
    println!(
        "CPU per commit: user {:.2} ms, system {:.2} ms; per commit written {:.2} MB, to the device {:.2} MB",
        (c1.0 - c0.0) * 1e3 / commits as f64,
        (c1.1 - c0.1) * 1e3 / commits as f64,
        (io1.0 - io0.0) as f64 / 1e6 / commits as f64,
        (io1.1 - io0.1) as f64 / 1e6 / commits as f64
    );
    for w in marks.windows(2) {
        let ((c0, t0, cpu0, io0), (c1, t1, cpu1, io1)) = (&w[0], &w[1]);
        let n = c1 - c0;
        println!(
            "commits {}..{}: {:.2} us/key; CPU ms/commit (user+system) {}; to the device {:.2} MB/commit",
            c0 + 1,
            c1,
            (*t1 - *t0).as_secs_f64() * 1e6 / (n * 1000) as f64,
            thread_delta(cpu0, cpu1, n),
            (io1.1 - io0.1) as f64 / 1e6 / n as f64
        );
    }
    if let (Some(a), Some(b)) = (w0, env.wal_info()) {
        println!(
            "log: {} records, {} syncs, {} patched pages a commit, {} commits waited for a checkpoint; {} checkpoints, {} young pages reused; checkpoint txnid {} -> {}",
            b.records - a.records,
            b.syncs - a.syncs,
            (b.patched_pages - a.patched_pages) / commits,
            b.checkpoint_waits - a.checkpoint_waits,
            b.checkpoints - a.checkpoints,
            b.young_reused - a.young_reused,
            a.checkpoint_txnid,
            b.checkpoint_txnid
        );
    }
    println!("data file {} MiB", file());
    drop(env);
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
