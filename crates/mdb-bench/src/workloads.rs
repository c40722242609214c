//! The workloads, each implemented once per engine on identical data.
//!
//! Keys are 16 bytes derived from a hash of the index (big-endian), so
//! inserting indices 0, 1, 2... is a random order in key space; values are
//! 100 bytes whose first 8 bytes are the index (checked by `get`).

use crate::lmdb;
use mdb::Txn as _;
use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

pub type Res<T> = Result<T, Box<dyn Error>>;

/// Keys per write transaction in `load`.
pub const BATCH: usize = 1000;
/// Value length.
pub const VAL_LEN: usize = 100;
/// Map size for both engines.
pub const MAP_SIZE: usize = 4 << 30;

/// The two engines under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Mdb,
    Lmdb,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Mdb => "mdb",
            Engine::Lmdb => "LMDB",
        }
    }
}

/// SplitMix64: a fast, well-mixed hash of a 64-bit integer.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The key of index `i`.
pub fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&mix(i).to_be_bytes());
    k[8..].copy_from_slice(&mix(i ^ 0x5555_5555_5555_5555).to_be_bytes());
    k
}

/// Write the value of index `i` into `buf`.
fn fill_value(i: u64, buf: &mut [u8; VAL_LEN]) {
    buf[..8].copy_from_slice(&i.to_le_bytes());
}

/// A value template: deterministic filler bytes after the 8-byte index.
fn value_template() -> [u8; VAL_LEN] {
    let mut v = [0u8; VAL_LEN];
    for (j, b) in v.iter_mut().enumerate() {
        *b = (mix(j as u64 + 1000) & 0xff) as u8;
    }
    v
}

/// The precomputed inputs shared by both engines.
pub struct Data {
    pub n: usize,
    /// `keys[i] = key(i)`; loaded in index order (random key order).
    pub keys: Vec<[u8; 16]>,
    /// A permutation of 0..n: the order of point gets.
    pub get_order: Vec<u32>,
}

impl Data {
    pub fn new(n: usize) -> Data {
        let keys = (0..n as u64).map(key).collect();
        let mut get_order: Vec<u32> = (0..n as u32).collect();
        // Fisher-Yates with a fixed seed.
        let mut s = 0x1234_5678_9abc_def0u64;
        for i in (1..n).rev() {
            s = mix(s);
            let j = (s % (i as u64 + 1)) as usize;
            get_order.swap(i, j);
        }
        Data { n, keys, get_order }
    }
}

/// An open environment of either engine.
pub enum Db {
    Mdb(Box<mdb::Env>),
    Lmdb(lmdb::Env),
}

impl Db {
    pub fn open(engine: Engine, dir: &Path) -> Res<Db> {
        std::fs::create_dir_all(dir)?;
        Ok(match engine {
            Engine::Mdb => Db::Mdb(Box::new(
                mdb::EnvOptions::new().map_size(MAP_SIZE).open(dir)?,
            )),
            Engine::Lmdb => Db::Lmdb(lmdb::Env::open(dir, MAP_SIZE)?),
        })
    }
}

/// `load`: all keys in index (= random key) order, `BATCH` puts per commit.
pub fn load(db: &Db, data: &Data) -> Res<Duration> {
    let mut v = value_template();
    let t = Instant::now();
    match db {
        Db::Mdb(env) => {
            for (c, chunk) in data.keys.chunks(BATCH).enumerate() {
                let mut w = env.write_txn()?;
                for (j, k) in chunk.iter().enumerate() {
                    fill_value((c * BATCH + j) as u64, &mut v);
                    w.put(mdb::Database::MAIN, k, &v, mdb::WriteFlags::EMPTY)?;
                }
                w.commit()?;
            }
        }
        Db::Lmdb(env) => {
            for (c, chunk) in data.keys.chunks(BATCH).enumerate() {
                let mut w = env.write_txn()?;
                for (j, k) in chunk.iter().enumerate() {
                    fill_value((c * BATCH + j) as u64, &mut v);
                    w.put(k, &v)?;
                }
                w.commit()?;
            }
        }
    }
    Ok(t.elapsed())
}

fn check_value(i: u32, v: Option<&[u8]>) -> Res<usize> {
    match v {
        Some(v) if v.len() == VAL_LEN && v[..8] == (i as u64).to_le_bytes() => Ok(v.len()),
        Some(_) => Err(format!("wrong value for index {i}").into()),
        None => Err(format!("key of index {i} not found").into()),
    }
}

/// `get`: every key once, in a shuffled order, in one read transaction.
pub fn get(db: &Db, data: &Data) -> Res<Duration> {
    let mut total = 0usize;
    let t = Instant::now();
    match db {
        Db::Mdb(env) => {
            let r = env.read_txn()?;
            for &i in &data.get_order {
                total += check_value(i, r.get(mdb::Database::MAIN, &data.keys[i as usize])?)?;
            }
        }
        Db::Lmdb(env) => {
            let r = env.read_txn()?;
            for &i in &data.get_order {
                total += check_value(i, r.get(&data.keys[i as usize])?)?;
            }
        }
    }
    let el = t.elapsed();
    if total != data.n * VAL_LEN {
        return Err(format!("get: value bytes {total}, expected {}", data.n * VAL_LEN).into());
    }
    Ok(el)
}

/// `scan`: one forward cursor pass over everything, summing value lengths.
pub fn scan(db: &Db, data: &Data) -> Res<Duration> {
    let (mut count, mut total) = (0usize, 0usize);
    let t = Instant::now();
    match db {
        Db::Mdb(env) => {
            let r = env.read_txn()?;
            let mut c = r.cursor(mdb::Database::MAIN)?;
            while let Some((_k, v)) = c.next()? {
                count += 1;
                total += v.len();
            }
        }
        Db::Lmdb(env) => {
            let r = env.read_txn()?;
            let mut c = r.cursor()?;
            while let Some((_k, v)) = c.next()? {
                count += 1;
                total += v.len();
            }
        }
    }
    let el = t.elapsed();
    if count != data.n || total != data.n * VAL_LEN {
        return Err(format!("scan: {count} items / {total} bytes, expected {}", data.n).into());
    }
    Ok(el)
}

/// `sync_put`: `n` transactions of one put each, every commit durable.
pub fn sync_put(db: &Db, n: usize) -> Res<Duration> {
    let mut v = value_template();
    let t = Instant::now();
    match db {
        Db::Mdb(env) => {
            for i in 0..n as u64 {
                fill_value(i, &mut v);
                let mut w = env.write_txn()?;
                w.put(mdb::Database::MAIN, &key(i), &v, mdb::WriteFlags::EMPTY)?;
                w.commit()?;
            }
        }
        Db::Lmdb(env) => {
            for i in 0..n as u64 {
                fill_value(i, &mut v);
                let mut w = env.write_txn()?;
                w.put(&key(i), &v)?;
                w.commit()?;
            }
        }
    }
    Ok(t.elapsed())
}
