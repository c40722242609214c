//! The workloads of the matrix, the same calls for every engine, and the
//! check that each one read back what was written (a benchmark of a store
//! that loses or invents items measures nothing).

use super::store::{disk_usage, Batch, Store};
use super::{Config, Metric, Samples};
use crate::workloads::{shuffled, Res};
use std::path::Path;
use std::time::Instant;

/// Items per transaction of the bulk loads.
pub const LOAD_BATCH: usize = 100_000;
/// Items per transaction of batched writes, overwrites and removals.
pub const WRITE_BATCH: usize = 1000;
/// Gets (or ranges) per read snapshot.
pub const READS_PER_SNAPSHOT: usize = 1000;
/// Items per range read.
pub const RANGE_LEN: usize = 10;
/// Puts per durable commit of the mixed workload's writer.
pub const MIXED_WRITES_PER_TXN: usize = 100;
/// Large values per durable commit.
pub const LARGE_PER_TXN: usize = 10;

fn ns_per(t: Instant, ops: usize) -> f64 {
    t.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

fn check(what: &str, got: u64, want: u64) -> Res<()> {
    if got != want {
        return Err(format!("{what}: read back {got}, expected {want}").into());
    }
    Ok(())
}

fn write_all(s: &dyn Store, ids: &[u64], per_txn: usize, val_len: usize, salt: u64) -> Res<()> {
    let mut h = s.handle()?;
    for c in ids.chunks(per_txn) {
        h.write(&Batch {
            ids: c,
            val_len,
            salt,
        })?;
    }
    Ok(())
}

/// The main sequence on one fresh store: random load, reads of every kind,
/// writes of every kind, removals and compaction.
pub fn main_sequence(
    cfg: &Config,
    s: &mut dyn Store,
    dir: &Path,
    scratch: &Path,
    out: &mut Samples,
) -> Res<()> {
    let n = cfg.n;
    let val = cfg.val_len;
    let ids: Vec<u64> = (0..n as u64).collect();
    let order: Vec<u64> = shuffled(n, 0xfeed).into_iter().map(u64::from).collect();

    let t = Instant::now();
    write_all(s, &ids, LOAD_BATCH, val, 0)?;
    out.add(Metric::LoadRandom, ns_per(t, n));
    s.settle()?;
    out.add(Metric::SizeLoaded, disk_usage(dir)? as f64);

    let mut h = s.handle()?;
    let t = Instant::now();
    let mut bytes = 0;
    for c in order.chunks(READS_PER_SNAPSHOT) {
        bytes += h.get(c)?;
    }
    out.add(Metric::Get, ns_per(t, n));
    check("random gets", bytes, (n * val) as u64)?;

    let starts = &order[..n / 10];
    let t = Instant::now();
    let mut items = 0;
    for c in starts.chunks(READS_PER_SNAPSHOT / RANGE_LEN) {
        items += h.ranges(c, RANGE_LEN)?;
    }
    out.add(Metric::Range10, ns_per(t, starts.len()));
    if items < ((starts.len() * RANGE_LEN) as u64).saturating_sub(RANGE_LEN as u64 * 10) {
        return Err(format!("range reads: only {items} items").into());
    }

    let t = Instant::now();
    let (count, bytes) = h.scan()?;
    out.add(Metric::Scan, ns_per(t, n));
    check("scan", count, n as u64)?;
    check("scan bytes", bytes, (n * (16 + val)) as u64)?;
    drop(h);

    // Two threads of random gets, each over the whole key set from its own
    // point of the permutation: the aggregate time per get.
    let t = Instant::now();
    std::thread::scope(|sc| -> Res<()> {
        let store: &dyn Store = s;
        let hs: Vec<_> = (0..2)
            .map(|th| {
                let order = &order;
                sc.spawn(move || -> Result<u64, String> {
                    let mut h = store.handle().map_err(|e| e.to_string())?;
                    let mut bytes = 0;
                    let (a, b) = order.split_at(th * n / 2);
                    for c in b
                        .chunks(READS_PER_SNAPSHOT)
                        .chain(a.chunks(READS_PER_SNAPSHOT))
                    {
                        bytes += h.get(c).map_err(|e| e.to_string())?;
                    }
                    Ok(bytes)
                })
            })
            .collect();
        for j in hs {
            let bytes = j.join().map_err(|_| "reader thread panicked")??;
            check("gets from 2 threads", bytes, (n * val) as u64)?;
        }
        Ok(())
    })?;
    out.add(Metric::Get2Threads, ns_per(t, 2 * n));

    // 90% reads, 10% writes: a reader thread does its gets while a writer
    // thread overwrites keys in durable commits; time per operation of both.
    let writes: Vec<u64> = order.iter().rev().take(n / 10).copied().collect();
    let reads = &order[..n - n / 10];
    let t = Instant::now();
    std::thread::scope(|sc| -> Res<()> {
        let store: &dyn Store = s;
        let w = sc.spawn(|| -> Result<(), String> {
            write_all(store, &writes, MIXED_WRITES_PER_TXN, val, 7).map_err(|e| e.to_string())
        });
        let r = sc.spawn(|| -> Result<u64, String> {
            let mut h = store.handle().map_err(|e| e.to_string())?;
            let mut bytes = 0;
            for c in reads.chunks(100) {
                bytes += h.get(c).map_err(|e| e.to_string())?;
            }
            Ok(bytes)
        });
        w.join().map_err(|_| "writer thread panicked")??;
        let bytes = r.join().map_err(|_| "reader thread panicked")??;
        check("mixed gets", bytes, (reads.len() * val) as u64)?;
        Ok(())
    })?;
    out.add(Metric::Mixed, ns_per(t, n));

    // New keys, 1000 per durable commit.
    let m = cfg.batch_n;
    let fresh: Vec<u64> = (n as u64..(n + m) as u64).collect();
    let t = Instant::now();
    write_all(s, &fresh, WRITE_BATCH, val, 0)?;
    out.add(Metric::BatchWrite, ns_per(t, m));

    // Existing keys in random order, 1000 per durable commit.
    let over: Vec<u64> = order.iter().take(m).copied().collect();
    let t = Instant::now();
    write_all(s, &over, WRITE_BATCH, val, 1)?;
    out.add(Metric::Overwrite, ns_per(t, m));

    // One put per durable commit.
    let k = cfg.single_n;
    let single: Vec<u64> = ((n + m) as u64..(n + m + k) as u64).collect();
    let t = Instant::now();
    write_all(s, &single, 1, val, 0)?;
    out.add(Metric::SinglePut, ns_per(t, k));

    // Half the keys removed, 1000 per durable commit.
    let gone = &order[..n / 2];
    let t = Instant::now();
    let mut h = s.handle()?;
    for c in gone.chunks(WRITE_BATCH) {
        h.remove(c)?;
    }
    drop(h);
    out.add(Metric::Remove, ns_per(t, gone.len()));
    let left = n + m + k - gone.len();
    let (count, _) = s.handle()?.scan()?;
    check("items after the removals", count, left as u64)?;
    s.settle()?;
    out.add(Metric::SizeRemoved, disk_usage(dir)? as f64);

    let t = Instant::now();
    if let Some(d) = s.compact(scratch)? {
        out.add(Metric::Compact, t.elapsed().as_nanos() as f64);
        out.add(Metric::SizeCompacted, disk_usage(&d)? as f64);
    }
    let (count, _) = s.handle()?.scan()?;
    check("items after compaction", count, left as u64)?;
    Ok(())
}

/// A fresh store loaded in ascending key order.
pub fn sorted_load(cfg: &Config, s: &dyn Store, out: &mut Samples) -> Res<()> {
    let mut ids: Vec<u64> = (0..cfg.n as u64).collect();
    ids.sort_unstable_by_key(|&i| crate::workloads::key(i));
    let t = Instant::now();
    write_all(s, &ids, LOAD_BATCH, cfg.val_len, 0)?;
    out.add(Metric::LoadSorted, ns_per(t, cfg.n));
    let (count, _) = s.handle()?.scan()?;
    check("sorted load", count, cfg.n as u64)
}

/// Large values: written `LARGE_PER_TXN` per durable commit, then read back
/// in random order.
pub fn large_values(cfg: &Config, s: &dyn Store, out: &mut Samples) -> Res<()> {
    let l = cfg.large_n;
    let ids: Vec<u64> = (0..l as u64).collect();
    let t = Instant::now();
    write_all(s, &ids, LARGE_PER_TXN, cfg.large_len, 0)?;
    out.add(Metric::LargePut, ns_per(t, l));
    let order: Vec<u64> = shuffled(l, 3).into_iter().map(u64::from).collect();
    let mut h = s.handle()?;
    let t = Instant::now();
    let mut bytes = 0;
    for c in order.chunks(LARGE_PER_TXN) {
        bytes += h.get(c)?;
    }
    out.add(Metric::LargeGet, ns_per(t, l));
    check("large values", bytes, (l * cfg.large_len) as u64)
}

/// A random load of `n` keys into a fresh store: ns per key.
pub fn scale_load(cfg: &Config, s: &dyn Store, n: usize) -> Res<f64> {
    let ids: Vec<u64> = (0..n as u64).collect();
    let t = Instant::now();
    write_all(s, &ids, LOAD_BATCH, cfg.val_len, 0)?;
    Ok(ns_per(t, n))
}
