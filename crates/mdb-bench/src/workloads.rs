//! The workloads, each implemented once per engine on identical data.
//!
//! Keys are 16 bytes derived from a hash of the index (big-endian), so
//! inserting indices 0, 1, 2... is a random order in key space; values are
//! 100 bytes whose first 8 bytes are the index (checked by `get`).
//!
//! The `index_*` workloads model a directory server's attribute index: a
//! named DUPSORT + DUPFIXED + INTEGERDUP database mapping 16-byte keys to
//! about `IDS_PER_KEY` 8-byte entry ids each (see [`IndexData`]).

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
pub const MAP_SIZE: usize = 64 << 30;

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
pub fn mix(mut x: u64) -> u64 {
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
pub(crate) fn fill_value(i: u64, buf: &mut [u8; VAL_LEN]) {
    buf[..8].copy_from_slice(&i.to_le_bytes());
}

/// A value template: deterministic filler bytes after the 8-byte index.
pub(crate) fn value_template() -> [u8; VAL_LEN] {
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
    /// The keys in ascending order (`append_load`).
    pub sorted: Vec<[u8; 16]>,
}

impl Data {
    pub fn new(n: usize) -> Data {
        let keys = (0..n as u64).map(key).collect();
        let get_order = shuffled(n, 0x1234_5678_9abc_def0);
        let mut sorted: Vec<[u8; 16]> = (0..n as u64).map(key).collect();
        sorted.sort_unstable();
        Data {
            n,
            keys,
            get_order,
            sorted,
        }
    }
}

/// A permutation of 0..n: Fisher-Yates driven by SplitMix64 from `seed`.
pub fn shuffled(n: usize, seed: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    let mut s = seed;
    for i in (1..n).rev() {
        s = mix(s);
        let j = (s % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

/// About this many ids per key in the index workloads.
pub const IDS_PER_KEY: usize = 100;
/// Passes of `index_scan` over all keys: a single pass over the 10,000 keys
/// of the default N takes only a few ms, too short to time reliably on a
/// shared machine; `SCAN_PASSES` passes visit about N keys in all.
pub const SCAN_PASSES: usize = IDS_PER_KEY;
/// Name of the index database (both engines).
const INDEX_DB: &str = "idx";

/// One (key, id) pair of the index workloads: an index into
/// [`IndexData::keys`] and the id.
#[derive(Clone, Copy)]
pub struct Pair {
    pub id: u64,
    pub key: u32,
}

/// The inputs of the index workloads: `n` (key, id) pairs over
/// `keys.len() = ceil(n / IDS_PER_KEY)` keys. Pair `p` is
/// (`keys[p % keys.len()]`, SplitMix64 of `p`): random-looking u64 ids, all
/// distinct (the hash is a bijection), stored as 8 bytes in native byte
/// order in an INTEGERDUP database (as a directory server stores entry
/// ids), so both engines sort them as integers. The pairs are laid out in
/// the order each workload visits them, so the harness reads its inputs
/// sequentially instead of adding a cache miss per operation.
pub struct IndexData {
    pub n: usize,
    pub keys: Vec<[u8; 16]>,
    /// The pairs in `index_load` order: a random permutation.
    pub load: Vec<Pair>,
    /// The pairs in `index_get_both` order: another permutation.
    pub get: Vec<Pair>,
    /// Wrapping sum of all ids: what one `index_scan` pass must find.
    pub id_sum: u64,
}

impl IndexData {
    pub fn new(n: usize) -> IndexData {
        let nkeys = n.div_ceil(IDS_PER_KEY);
        let keys = (0..nkeys as u64).map(|i| key(i ^ 0x1D1D_1D1D)).collect();
        let pair = |p: u32| Pair {
            id: mix(p as u64 ^ 0x0123_4567_89AB_CDEF),
            key: (p as usize % nkeys) as u32,
        };
        let in_order = |seed| shuffled(n, seed).into_iter().map(pair).collect();
        let load: Vec<Pair> = in_order(0x0F1E_2D3C_4B5A_6978);
        let id_sum = load.iter().fold(0u64, |a, p| a.wrapping_add(p.id));
        IndexData {
            n,
            keys,
            load,
            get: in_order(0x8796_A5B4_C3D2_E1F0),
            id_sum,
        }
    }

    /// The key of `p`.
    fn key(&self, p: Pair) -> &[u8; 16] {
        &self.keys[p.key as usize]
    }
}

/// An open environment of either engine.
pub enum Db {
    Mdb(Box<mdb::Env>),
    Lmdb(lmdb::Env),
}

/// `--wal`: open mdb in write-ahead-log mode (set once by `main`).
pub static MDB_WAL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
pub use crate::lmdb::NOSYNC;

/// mdb's options for a benchmark environment (WAL mode with `--wal`).
fn mdb_options() -> mdb::EnvOptions {
    mdb_options_mode(MDB_WAL.load(std::sync::atomic::Ordering::Relaxed))
}

/// mdb's options for a benchmark environment, in WAL mode if `wal`.
fn mdb_options_mode(wal: bool) -> mdb::EnvOptions {
    let mut o = mdb::EnvOptions::new();
    o.map_size(MAP_SIZE);
    if NOSYNC.load(std::sync::atomic::Ordering::Relaxed) {
        o.flags(mdb::EnvFlags::NO_SYNC);
    }
    if wal {
        o.wal(mdb::WalOptions::default());
    }
    o
}

impl Db {
    pub fn open(engine: Engine, dir: &Path) -> Res<Db> {
        Db::open_mode(
            engine,
            dir,
            MDB_WAL.load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Open `engine` in `dir`; mdb in WAL mode if `wal` (whatever `--wal`).
    pub fn open_mode(engine: Engine, dir: &Path, wal: bool) -> Res<Db> {
        std::fs::create_dir_all(dir)?;
        Ok(match engine {
            Engine::Mdb => Db::Mdb(Box::new(mdb_options_mode(wal).open(dir)?)),
            Engine::Lmdb => Db::Lmdb(lmdb::Env::open(dir, MAP_SIZE, 1)?),
        })
    }

    /// Write a compacted copy into the existing directory `dir`, with the
    /// engine's own copy (`mdb_copy -c`): live pages only, renumbered in
    /// tree order, so the leaves lie in the file in key order.
    pub fn copy_compact(&self, dir: &Path) -> Res<()> {
        match self {
            Db::Mdb(env) => env.copy_to_path(dir, true)?,
            Db::Lmdb(env) => env.copy_compact(dir)?,
        }
        Ok(())
    }
}

/// An open environment of either engine with an empty index database.
pub enum Index {
    Mdb(Box<mdb::Env>, mdb::Database),
    Lmdb(lmdb::Env, lmdb::Dbi),
}

impl Index {
    /// Open a fresh environment (room for 2 named databases) and create the
    /// index database in a committed transaction of its own.
    pub fn open(engine: Engine, dir: &Path) -> Res<Index> {
        std::fs::create_dir_all(dir)?;
        Ok(match engine {
            Engine::Mdb => {
                let env = Box::new(mdb_options().max_dbs(2).open(dir)?);
                let mut w = env.write_txn()?;
                let flags =
                    mdb::DbFlags::DUP_SORT | mdb::DbFlags::DUP_FIXED | mdb::DbFlags::INTEGER_DUP;
                let db = w.create_db(INDEX_DB, flags)?;
                w.commit()?;
                Index::Mdb(env, db)
            }
            Engine::Lmdb => {
                let env = lmdb::Env::open(dir, MAP_SIZE, 2)?;
                let dbi =
                    env.create_db(INDEX_DB, lmdb::DUPSORT | lmdb::DUPFIXED | lmdb::INTEGERDUP)?;
                Index::Lmdb(env, dbi)
            }
        })
    }
}

/// `index_load`: every pair in `load_order`, `BATCH` puts per commit.
pub fn index_load(ix: &Index, data: &IndexData) -> Res<Duration> {
    let t = Instant::now();
    match ix {
        Index::Mdb(env, db) => {
            for chunk in data.load.chunks(BATCH) {
                let mut w = env.write_txn()?;
                for &p in chunk {
                    let id = p.id.to_ne_bytes();
                    w.put(*db, data.key(p), &id, mdb::WriteFlags::EMPTY)?;
                }
                w.commit()?;
            }
        }
        Index::Lmdb(env, dbi) => {
            for chunk in data.load.chunks(BATCH) {
                let mut w = env.write_txn()?;
                for &p in chunk {
                    let id = p.id.to_ne_bytes();
                    w.put_in(*dbi, data.key(p), &id)?;
                }
                w.commit()?;
            }
        }
    }
    Ok(t.elapsed())
}

/// `index_get_both`: every pair once, in `get_order`, with `GET_BOTH` on
/// one cursor in one read transaction.
pub fn index_get_both(ix: &Index, data: &IndexData) -> Res<Duration> {
    let mut hits = 0usize;
    let t = Instant::now();
    match ix {
        Index::Mdb(env, _) => {
            let r = env.read_txn()?;
            let db = mdb::Txn::open_db(&r, INDEX_DB)?;
            let mut c = mdb::Txn::cursor(&r, db)?;
            for &p in &data.get {
                let id = p.id.to_ne_bytes();
                hits += c.get_both(data.key(p), &id)?.is_some() as usize;
            }
        }
        Index::Lmdb(env, dbi) => {
            let r = env.read_txn()?;
            let mut c = r.cursor_in(*dbi)?;
            for &p in &data.get {
                let id = p.id.to_ne_bytes();
                hits += c.get_both(data.key(p), &id)? as usize;
            }
        }
    }
    let el = t.elapsed();
    if hits != data.n {
        return Err(format!("index_get_both: {hits} pairs found, expected {}", data.n).into());
    }
    Ok(el)
}

/// Add the ids packed in `buf` (a `GET_MULTIPLE` result) to `sum`/`count`.
fn add_ids(buf: &[u8], count: &mut u64, sum: &mut u64) -> Res<()> {
    if !buf.len().is_multiple_of(8) {
        return Err(format!("index_scan: multiple-value buffer of {} bytes", buf.len()).into());
    }
    for id in buf.chunks_exact(8) {
        *sum = sum.wrapping_add(u64::from_ne_bytes(id.try_into().unwrap()));
    }
    *count += (buf.len() / 8) as u64;
    Ok(())
}

/// What `index_scan` read: the number of ids and their wrapping sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanSum {
    pub ids: u64,
    pub sum: u64,
}

/// `index_scan`: for every key (in `keys` order, random in key space):
/// `SET_KEY`, then `GET_MULTIPLE` and `NEXT_MULTIPLE` until not found,
/// summing the ids; `SCAN_PASSES` such passes, on one cursor in one read
/// transaction.
pub fn index_scan(ix: &Index, data: &IndexData) -> Res<(Duration, ScanSum)> {
    let (mut count, mut sum) = (0u64, 0u64);
    let missing = || -> Box<dyn Error> { "index_scan: a key is missing".into() };
    let t = Instant::now();
    match ix {
        Index::Mdb(env, _) => {
            let r = env.read_txn()?;
            let db = mdb::Txn::open_db(&r, INDEX_DB)?;
            let mut c = mdb::Txn::cursor(&r, db)?;
            for k in (0..SCAN_PASSES).flat_map(|_| &data.keys) {
                c.set_key(k)?.ok_or_else(missing)?;
                let mut page = c.get_multiple()?;
                while let Some(buf) = page {
                    add_ids(buf, &mut count, &mut sum)?;
                    page = c.next_multiple()?;
                }
            }
        }
        Index::Lmdb(env, dbi) => {
            let r = env.read_txn()?;
            let mut c = r.cursor_in(*dbi)?;
            for k in (0..SCAN_PASSES).flat_map(|_| &data.keys) {
                c.set_key(k)?.ok_or_else(missing)?;
                let mut page = c.get_multiple()?;
                while let Some(buf) = page {
                    add_ids(buf, &mut count, &mut sum)?;
                    page = c.next_multiple()?;
                }
            }
        }
    }
    let el = t.elapsed();
    let got = ScanSum { ids: count, sum };
    let (want_count, want_sum) = (
        (data.n * SCAN_PASSES) as u64,
        data.id_sum.wrapping_mul(SCAN_PASSES as u64),
    );
    if count != want_count || sum != want_sum {
        return Err(format!(
            "index_scan: {count} ids summing to {sum:#x}, expected {want_count} summing to {want_sum:#x}"
        )
        .into());
    }
    Ok((el, got))
}

/// `load`: all keys in index (= random key) order, `BATCH` puts per commit.
pub fn load(db: &Db, data: &Data) -> Res<Duration> {
    put_keys(db, &data.keys, false, BATCH)
}

/// `bulk_load`: all keys in index (= random key) order in one write
/// transaction, as an import or `mdb load` writes them.
pub fn bulk_load(db: &Db, data: &Data) -> Res<Duration> {
    put_keys(db, &data.keys, false, data.n.max(1))
}

/// `append_load`: the keys in ascending order with APPEND, `BATCH` puts
/// per commit, into an empty database.
pub fn append_load(db: &Db, data: &Data) -> Res<Duration> {
    put_keys(db, &data.sorted, true, BATCH)
}

/// Put `keys` (value `i` for the `i`-th), `batch` per commit; with
/// `append`, as `MDB_APPEND` puts.
fn put_keys(db: &Db, keys: &[[u8; 16]], append: bool, batch: usize) -> Res<Duration> {
    let mut v = value_template();
    let flags = match append {
        true => mdb::WriteFlags::APPEND,
        false => mdb::WriteFlags::EMPTY,
    };
    let t = Instant::now();
    match db {
        Db::Mdb(env) => {
            for (c, chunk) in keys.chunks(batch).enumerate() {
                let mut w = env.write_txn()?;
                for (j, k) in chunk.iter().enumerate() {
                    fill_value((c * batch + j) as u64, &mut v);
                    w.put(mdb::Database::MAIN, k, &v, flags)?;
                }
                w.commit()?;
            }
        }
        Db::Lmdb(env) => {
            for (c, chunk) in keys.chunks(batch).enumerate() {
                let mut w = env.write_txn()?;
                for (j, k) in chunk.iter().enumerate() {
                    fill_value((c * batch + j) as u64, &mut v);
                    if append {
                        w.append(k, &v)?;
                    } else {
                        w.put(k, &v)?;
                    }
                }
                w.commit()?;
            }
        }
    }
    Ok(t.elapsed())
}

/// `cursor_delete`: from the first item, delete at the cursor and step to
/// the next one until the database is empty, `BATCH` deletes per commit.
pub fn cursor_delete(db: &Db, n: usize) -> Res<Duration> {
    let mut count = 0usize;
    let t = Instant::now();
    match db {
        Db::Mdb(env) => loop {
            let mut w = env.write_txn()?;
            let mut c = w.write_cursor(mdb::Database::MAIN)?;
            let mut more = c.first()?.is_some();
            for _ in 0..BATCH {
                if !more {
                    break;
                }
                c.del(false)?;
                count += 1;
                more = c.next()?.is_some();
            }
            drop(c);
            w.commit()?;
            if !more {
                break;
            }
        },
        Db::Lmdb(env) => loop {
            let w = env.write_txn()?;
            let mut c = w.cursor()?;
            let mut more = c.next()?.is_some();
            for _ in 0..BATCH {
                if !more {
                    break;
                }
                c.del()?;
                count += 1;
                more = c.next()?.is_some();
            }
            drop(c);
            w.commit()?;
            if !more {
                break;
            }
        },
    }
    let el = t.elapsed();
    if count != n {
        return Err(format!("cursor_delete: {count} deleted, expected {n}").into());
    }
    Ok(el)
}

/// A read-only shared mapping of a whole file, unmapped on drop.
struct Mapping {
    ptr: *mut std::ffi::c_void,
    len: usize,
}

mod sys {
    use std::ffi::{c_int, c_void};
    pub const PROT_READ: c_int = 1;
    pub const MAP_SHARED: c_int = 1;
    extern "C" {
        pub fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            off: i64,
        ) -> *mut c_void;
        pub fn munmap(addr: *mut c_void, len: usize) -> c_int;
        pub fn mincore(addr: *mut c_void, len: usize, vec: *mut u8) -> c_int;
        pub fn posix_fadvise(fd: c_int, off: i64, len: i64, advice: c_int) -> c_int;
        pub fn sync();
    }
    pub const POSIX_FADV_DONTNEED: c_int = 4;
}

/// Drop the file's pages from the page cache (they must be clean and
/// mapped by no one: close the environment first); returns the fraction
/// of its pages still resident afterwards.
pub fn evict(path: &Path) -> Res<f64> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path)?;
    f.sync_all()?;
    // The whole file system too: writeback still going on from the load
    // (the journal, other files) would be timed with the scan.
    // SAFETY: plain system call, no arguments.
    unsafe { sys::sync() };
    // SAFETY: plain system call on an open descriptor.
    let rc = unsafe { sys::posix_fadvise(f.as_raw_fd(), 0, 0, sys::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc).into());
    }
    let map = Mapping::new(path)?;
    let pages = map.len.div_ceil(4096);
    let mut vec = vec![0u8; pages];
    // SAFETY: `map` is a live mapping of `map.len` bytes; `vec` has one
    // byte per 4 KiB page of it.
    let rc = unsafe { sys::mincore(map.ptr, map.len, vec.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(vec.iter().filter(|&&b| b & 1 != 0).count() as f64 / pages as f64)
}

impl Mapping {
    fn new(path: &Path) -> Res<Mapping> {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::open(path)?;
        let len = usize::try_from(f.metadata()?.len())?;
        if len == 0 {
            return Err(format!("{} is empty", path.display()).into());
        }
        // SAFETY: a fresh read-only mapping of an open file; the mapping
        // keeps the file after `f` closes.
        let ptr = unsafe {
            sys::mmap(
                std::ptr::null_mut(),
                len,
                sys::PROT_READ,
                sys::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if ptr as isize == -1 {
            return Err(std::io::Error::last_os_error().into());
        }
        Ok(Mapping { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` readable bytes mapped at `ptr` until drop; nothing in
        // this process writes the file while the mapping is read.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped in `new`; no slice of it outlives `self`.
        unsafe { sys::munmap(self.ptr, self.len) };
    }
}

/// Wrapping sum of the file's 8-byte words: reads every byte once.
fn sum_words(b: &[u8]) -> u64 {
    b.chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
        .fold(0u64, u64::wrapping_add)
}

/// `file_read`: the baseline of a full scan. Map the data file read-only
/// (as both engines map it) and sum all its 8-byte words once untimed,
/// which brings every page into the page cache and the mapping; then time
/// a second sum: every byte of the file once, in file order, with no copy,
/// system call or page fault (a `read(2)` pass, the former baseline, copies
/// every byte and cost twice a scan). A scan reads fewer bytes (headers,
/// keys, values) but in key order, which is not file order.
pub fn file_read(dir: &Path) -> Res<Duration> {
    let path = dir.join("data.mdb");
    let map = Mapping::new(&path)?;
    let warm = std::hint::black_box(sum_words(map.bytes()));
    let t = Instant::now();
    let sum = std::hint::black_box(sum_words(std::hint::black_box(map.bytes())));
    let el = t.elapsed();
    if sum != warm {
        return Err(format!("file_read: {} changed while read", path.display()).into());
    }
    Ok(el)
}

/// `file_pread`: the literal baseline of issue 9, reading the data file
/// from the page cache: `read(2)` of the whole file into one reused 1 MiB
/// buffer, timed on a second pass (the first brings the file into the
/// page cache). It copies every byte, which summing the mapped file
/// (`file_read`) does not.
pub fn file_pread(dir: &Path) -> Res<Duration> {
    use std::io::Read;
    let path = dir.join("data.mdb");
    let mut buf = vec![0u8; 1 << 20];
    let mut pass = || -> Res<u64> {
        let mut f = std::fs::File::open(&path)?;
        let mut n = 0u64;
        loop {
            match f.read(&mut buf)? {
                0 => return Ok(n),
                k => n += k as u64,
            }
        }
    };
    let warm = pass()?;
    let t = Instant::now();
    let n = pass()?;
    let el = t.elapsed();
    if n != warm {
        return Err(format!("file_pread: {} changed while read", path.display()).into());
    }
    Ok(el)
}

pub(crate) fn check_value(i: u32, v: Option<&[u8]>) -> Res<usize> {
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

/// `scan` of an environment whose pages are not mapped yet (a fresh copy,
/// or a load its commit wrote with `pwrite`): an untimed pass maps them,
/// as `file_read` maps its file before timing, then the timed one.
pub fn scan_mapped(db: &Db, data: &Data) -> Res<Duration> {
    scan(db, data)?;
    scan(db, data)
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

/// [`sync_put`] from `threads` threads at once, `n` commits in all (each
/// thread its own keys).
pub fn sync_put_threads(db: &Db, n: usize, threads: usize) -> Res<Duration> {
    on_threads(n, threads, |i, v| {
        match db {
            Db::Mdb(env) => {
                let mut w = env.write_txn()?;
                w.put(mdb::Database::MAIN, &key(i), v, mdb::WriteFlags::EMPTY)?;
                w.commit()?;
            }
            Db::Lmdb(env) => {
                let mut w = env.write_txn()?;
                w.put(&key(i), v)?;
                w.commit()?;
            }
        }
        Ok(())
    })
}

/// Run `commit(i, value of i)` for `i` in `0..n` (rounded down to a
/// multiple of `threads`) from `threads` threads at once, thread `th`
/// taking the `th`-th contiguous slice of indices; the time until all
/// are done.
pub fn on_threads<F>(n: usize, threads: usize, commit: F) -> Res<Duration>
where
    F: Fn(u64, &[u8]) -> Res<()> + Sync,
{
    let per = (n / threads.max(1)) as u64;
    let commit = &commit;
    let t = Instant::now();
    std::thread::scope(|s| -> Res<()> {
        let hs: Vec<_> = (0..threads as u64)
            .map(|th| {
                s.spawn(move || -> Result<(), String> {
                    let mut v = value_template();
                    for i in th * per..(th + 1) * per {
                        fill_value(i, &mut v);
                        commit(i, &v).map_err(|e| e.to_string())?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in hs {
            h.join().map_err(|_| "a committing thread panicked")??;
        }
        Ok(())
    })?;
    Ok(t.elapsed())
}

/// Default bytes written per iteration of [`sync_limit`].
pub const LIMIT_WRITE: usize = 8192;

/// `sync_put`'s physical limit: `n` iterations of a `len`-byte `pwrite`
/// (8 KiB by default) into the next slot of a file preallocated with zeros
/// and synced (untimed), each followed by `fdatasync`: what one durable
/// log append per commit can cost at best on this disk, with no engine
/// around it.
pub fn sync_limit(dir: &Path, n: usize, len: usize) -> Res<Duration> {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    let path = dir.join("limit.dat");
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)?;
    let zeros = vec![0u8; 1 << 20];
    let mut left = n * len;
    while left > 0 {
        let k = left.min(zeros.len());
        f.write_all(&zeros[..k])?;
        left -= k;
    }
    f.sync_all()?;
    let mut buf = vec![0u8; len.max(8)];
    for (j, b) in buf.iter_mut().enumerate() {
        *b = (mix(j as u64) & 0xff) as u8;
    }
    let t = Instant::now();
    for i in 0..n {
        buf[..8].copy_from_slice(&(i as u64).to_le_bytes());
        f.write_all_at(&buf[..len], (i * len) as u64)?;
        f.sync_data()?;
    }
    Ok(t.elapsed())
}
