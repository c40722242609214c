//! RocksDB contenders of the disk workloads (cargo feature `rocksdb`,
//! linked against the system librocksdb: see docs/benchmarks.md).
//!
//! A fresh database per run with RocksDB's default options but
//! `create_if_missing`: a write-ahead log, synced with `fdatasync`
//! (`use_fsync` off) when a write asks for it, and a 64 MiB memtable, so
//! none of these workloads flushes or compacts while it is timed. Every
//! write is `WriteOptions::set_sync(true)`: it returns once its WAL record
//! is on disk. Concurrent writers are grouped by RocksDB itself (a leader
//! writes and syncs the records of the writers queued behind it).

use crate::workloads::{self, key, Data, Res};
use std::path::Path;
use std::time::{Duration, Instant};

pub use rocksdb::DB;

/// A fresh RocksDB database in `dir`.
pub fn open(dir: &Path) -> Res<DB> {
    let mut o = rocksdb::Options::default();
    o.create_if_missing(true);
    Ok(DB::open(&o, dir)?)
}

/// Writes that return once durable: one WAL `fdatasync` per write (or per
/// group of concurrent writes).
fn synced() -> rocksdb::WriteOptions {
    let mut w = rocksdb::WriteOptions::default();
    w.set_sync(true);
    w
}

/// `sync_put`: `n` synced writes of one put each, as [`workloads::sync_put`].
pub fn sync_put(db: &DB, n: usize) -> Res<Duration> {
    let wo = synced();
    let mut v = workloads::value_template();
    let t = Instant::now();
    for i in 0..n as u64 {
        workloads::fill_value(i, &mut v);
        db.put_opt(key(i), v, &wo)?;
    }
    Ok(t.elapsed())
}

/// `sync_threads`: [`sync_put`] from `threads` threads at once, `n` writes
/// in all, as [`workloads::sync_put_threads`].
pub fn sync_put_threads(db: &DB, n: usize, threads: usize) -> Res<Duration> {
    let wo = synced();
    workloads::on_threads(n, threads, |i, v| Ok(db.put_opt(key(i), v, &wo)?))
}

/// `batch_put`: all keys in index (= random key) order, `BATCH` puts per
/// synced `WriteBatch`, as [`workloads::load`].
pub fn load(db: &DB, data: &Data) -> Res<Duration> {
    let wo = synced();
    let mut v = workloads::value_template();
    let t = Instant::now();
    for (c, chunk) in data.keys.chunks(workloads::BATCH).enumerate() {
        let mut b = rocksdb::WriteBatch::default();
        for (j, k) in chunk.iter().enumerate() {
            workloads::fill_value((c * workloads::BATCH + j) as u64, &mut v);
            b.put(k, v);
        }
        db.write_opt(b, &wo)?;
    }
    Ok(t.elapsed())
}

/// `disk_get`: every key once, in the shuffled order, as [`workloads::get`].
pub fn get(db: &DB, data: &Data) -> Res<Duration> {
    let mut total = 0usize;
    let t = Instant::now();
    for &i in &data.get_order {
        let v = db.get_pinned(data.keys[i as usize])?;
        total += workloads::check_value(i, v.as_deref())?;
    }
    let el = t.elapsed();
    if total != data.n * workloads::VAL_LEN {
        return Err(format!(
            "get: value bytes {total}, expected {}",
            data.n * workloads::VAL_LEN
        )
        .into());
    }
    Ok(el)
}
