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

/// (user, system) CPU seconds of this process, all threads.
fn cpu() -> (f64, f64) {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are
    // the 14th and 15th of the line, in clock ticks (100 a second).
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
    let (mut puts, mut commit, mut worst) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    // Commit latencies: under 2, 4, 8, ... 128 ms, and more.
    let mut hist = [0u32; 8];
    let mut s = 99u64;
    // Under callgrind, one dump holds the timed commits (puts and commits)
    // and nothing of the load: `valgrind --tool=callgrind` this command.
    crate::phases::cg_zero();
    let t = Instant::now();
    for _ in 0..commits {
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
    if let (Some(a), Some(b)) = (w0, env.wal_info()) {
        println!(
            "log: {} records, {} syncs, {} patched pages a commit, {} commits waited for a checkpoint; checkpoint txnid {} -> {}",
            b.records - a.records,
            b.syncs - a.syncs,
            (b.patched_pages - a.patched_pages) / commits,
            b.checkpoint_waits - a.checkpoint_waits,
            a.checkpoint_txnid,
            b.checkpoint_txnid
        );
    }
    println!("data file {} MiB", file());
    drop(env);
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
