//! `mdb-bench wal-size`: the data file's size in write-ahead-log mode
//! against the default mode, for the writes of `mdb-bench matrix`'s main
//! sequence (same keys, order, values and commits; no reads, and the
//! mixed workload's writer alone): after the load (and a checkpoint), after
//! the writes and removals, and after a checkpoint then. Pages freed since
//! the last checkpoint that a commit cannot reuse (`young.rs`) grow
//! the file in WAL mode only.

use crate::workloads::{key, shuffled, VAL_LEN};
use mdb::{Database, Env, EnvOptions, WalOptions, WriteFlags};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

const USAGE: &str = "usage: mdb-bench wal-size DIR N
  DIR  a directory for the two environments (made anew; removed after)
  N    keys loaded (as mdb-bench matrix --n N)";

/// As the matrix: 100,000 puts a commit for the load, 100 for the mixed
/// workload's writer, 1,000 for batched writes, overwrites and removals.
const LOAD_BATCH: usize = 100_000;
const MIXED_PER_TXN: usize = 100;
const WRITE_BATCH: usize = 1000;
const SINGLE_N: usize = 1000;

pub fn main(args: &[String]) -> i32 {
    let [dir, n] = args else {
        eprintln!("{USAGE}");
        return 2;
    };
    let Ok(n) = n.parse::<usize>() else {
        eprintln!("{USAGE}");
        return 2;
    };
    let dir = Path::new(dir);
    println!("| mode | step | data.mdb bytes | allocated | log bytes | checkpoint txnid | young pages reused |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for wal in [false, true] {
        let d = dir.join(if wal { "wal" } else { "default" });
        let r = run(&d, n.max(100), wal);
        let _ = std::fs::remove_dir_all(&d);
        if let Err(e) = r {
            eprintln!("mdb-bench wal-size: {e}");
            return 1;
        }
    }
    let _ = std::fs::remove_dir(dir);
    0
}

fn write(env: &Env, ids: &[u64], per_txn: usize, salt: u64) -> mdb::Result<()> {
    let mut v = vec![0u8; VAL_LEN];
    for c in ids.chunks(per_txn) {
        let mut w = env.write_txn()?;
        for &i in c {
            v[..8].copy_from_slice(&(i ^ salt).to_le_bytes());
            w.put(Database::MAIN, &key(i), &v, WriteFlags::EMPTY)?;
        }
        w.commit()?;
    }
    Ok(())
}

fn report(env: &Env, dir: &Path, wal: bool, step: &str) -> mdb::Result<()> {
    let m = std::fs::metadata(dir.join("data.mdb"))?;
    let mut log = 0;
    if let Ok(rd) = std::fs::read_dir(dir.join("wal")) {
        for e in rd.flatten() {
            log += e.metadata().map_or(0, |m| m.blocks() * 512);
        }
    }
    let (ckpt, young) = env.wal_info().map_or((String::new(), String::new()), |i| {
        (i.checkpoint_txnid.to_string(), i.young_reused.to_string())
    });
    println!(
        "| {} | {step} | {} | {} | {log} | {ckpt} | {young} |",
        if wal { "WAL" } else { "default" },
        m.len(),
        m.blocks() * 512,
    );
    Ok(())
}

fn run(dir: &Path, n: usize, wal: bool) -> mdb::Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let mut o = EnvOptions::new();
    if wal {
        o.wal(WalOptions::default());
    }
    let env = o.open(dir)?;
    let ids: Vec<u64> = (0..n as u64).collect();
    let order: Vec<u64> = shuffled(n, 0xfeed).into_iter().map(u64::from).collect();
    write(&env, &ids, LOAD_BATCH, 0)?;
    if wal {
        env.checkpoint()?;
    }
    report(&env, dir, wal, "after the load")?;
    let m = (n / 10).max(1);
    let mixed: Vec<u64> = order.iter().rev().take(n / 10).copied().collect();
    write(&env, &mixed, MIXED_PER_TXN, 7)?;
    let fresh: Vec<u64> = (n as u64..(n + m) as u64).collect();
    write(&env, &fresh, WRITE_BATCH, 0)?;
    let over: Vec<u64> = order.iter().take(m).copied().collect();
    write(&env, &over, WRITE_BATCH, 1)?;
    let single: Vec<u64> = ((n + m) as u64..(n + m + SINGLE_N) as u64).collect();
    write(&env, &single, 1, 0)?;
    for c in order[..n / 2].chunks(WRITE_BATCH) {
        let mut w = env.write_txn()?;
        for &i in c {
            w.del(Database::MAIN, &key(i))?;
        }
        w.commit()?;
    }
    report(&env, dir, wal, "after the writes and removals")?;
    if wal {
        env.checkpoint()?;
        report(&env, dir, wal, "after a checkpoint")?;
    }
    Ok(())
}
