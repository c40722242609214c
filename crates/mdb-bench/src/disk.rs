//! The on-disk comparisons of write-ahead-log mode: more than two
//! contenders per workload (LMDB, mdb by default, mdb in WAL mode, and a
//! physical limit or python3-lmdb on each library), interleaved in one run.
//!
//! - `sync_put`: single-put durable commits on LMDB, mdb, mdb WAL, and the
//!   limit ([`workloads::sync_limit`]: 8 KiB `pwrite` + `fdatasync`).
//! - `batch_put` and `disk_get`: random puts, `BATCH` per durable commit,
//!   into a fresh environment of each of LMDB, mdb, mdb WAL; then random
//!   gets of every key on that environment.
//! - `py_sync`: `scripts/py_sync_put.py` under Debian's python3-lmdb, on
//!   Debian's liblmdb, on ours, and on ours with `MDB_WAL=1`.
//!
//! With the cargo feature `rocksdb`, RocksDB with synced writes (one put
//! per write, one `WriteBatch` of `BATCH` puts in `batch_put`) is one more
//! contender of `sync_put`, `sync_threads`, `batch_put` and `disk_get`
//! (see `rocks.rs`), last in each table.
//!
//! Each repetition runs every contender once, the order rotating by one
//! place per repetition (and reversed on odd ones), so that no contender
//! always follows the same one.

use crate::common::{fmt_time, median, range, time_range, TempDir};
#[cfg(feature = "rocksdb")]
use crate::rocks;
use crate::workloads::{self, Data, Db, Engine, Res};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Per-op seconds of every repetition, per contender.
pub struct Multi {
    pub name: &'static str,
    pub what: String,
    /// What one op is ("commit", "put", "get").
    pub unit: &'static str,
    pub ops: usize,
    pub labels: Vec<&'static str>,
    pub samples: Vec<Vec<f64>>,
    /// Rate ratios to report: (a, b) is a's ops/s over b's, per repetition.
    pub ratios: Vec<(usize, usize)>,
}

impl Multi {
    pub fn new(
        name: &'static str,
        what: String,
        unit: &'static str,
        ops: usize,
        labels: &[&'static str],
    ) -> Multi {
        Multi {
            name,
            what,
            unit,
            ops,
            labels: labels.to_vec(),
            samples: vec![Vec::new(); labels.len()],
            ratios: Vec::new(),
        }
    }

    pub fn push(&mut self, who: usize, d: Duration) {
        let per_op = d.as_secs_f64() / self.ops as f64;
        eprintln!(
            "  {:<10} {:<14} total {:>9.3} s  {:>10}/{}",
            self.name,
            self.labels[who],
            d.as_secs_f64(),
            fmt_time(per_op),
            self.unit
        );
        self.samples[who].push(per_op);
    }

    /// a's rate over b's (b's time over a's) in each repetition.
    fn rate_ratios(&self, a: usize, b: usize) -> Vec<f64> {
        self.samples[a]
            .iter()
            .zip(&self.samples[b])
            .map(|(ta, tb)| tb / ta)
            .collect()
    }

    /// The table and the ratios, as markdown or plain text.
    pub fn print(&self, markdown: bool) {
        let rate = |v: &[f64]| match (median(v), range(v)) {
            (Some(m), Some((lo, hi))) => {
                format!("{:.0} ({:.0}-{:.0})", 1.0 / m, 1.0 / hi, 1.0 / lo)
            }
            _ => "-".into(),
        };
        println!();
        if markdown {
            println!(
                "`{}`: {}, {} {}s per run",
                self.name, self.what, self.ops, self.unit
            );
            println!();
            println!(
                "| contender | per {} (range) | {}s/s (range) |",
                self.unit, self.unit
            );
            println!("|---|---:|---:|");
            for (l, s) in self.labels.iter().zip(&self.samples) {
                println!("| {l} | {} | {} |", time_range(s), rate(s));
            }
        } else {
            println!(
                "{}: {}, {} {}s per run",
                self.name, self.what, self.ops, self.unit
            );
            for (l, s) in self.labels.iter().zip(&self.samples) {
                println!(
                    "  {l:<16} {:>32}/{}  {:>24} {}s/s",
                    time_range(s),
                    self.unit,
                    rate(s),
                    self.unit
                );
            }
        }
        if !self.ratios.is_empty() {
            println!();
            if markdown {
                println!("| rate ratio | median of runs | each run |");
                println!("|---|---:|---|");
            }
            for &(a, b) in &self.ratios {
                let r = self.rate_ratios(a, b);
                let each: Vec<String> = r.iter().map(|x| format!("{x:.2}")).collect();
                let m = median(&r).map_or("-".into(), |m| format!("{m:.2}"));
                let name = format!("{} / {}", self.labels[a], self.labels[b]);
                if markdown {
                    println!("| {name} | {m} | {} |", each.join(" "));
                } else {
                    println!("  {name:<24} {m:>6}   {}", each.join(" "));
                }
            }
        }
    }
}

/// The order of the contenders `0..k` in repetition `rep`.
pub fn order(k: usize, rep: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..k).map(|i| (i + rep) % k).collect();
    if rep % 2 == 1 {
        v.reverse();
    }
    v
}

/// mdb, mdb in WAL mode, LMDB, in the order of [`Multi`] labels below.
const ENGINES: [(&str, Engine, bool); 3] = [
    ("LMDB", Engine::Lmdb, false),
    ("mdb", Engine::Mdb, false),
    ("mdb WAL", Engine::Mdb, true),
];

/// `sync_put`: LMDB, mdb, mdb WAL and the limit, `n` commits each.
pub fn sync_put(base: &Path, n: usize, limit_bytes: usize, reps: usize, keep: bool) -> Res<Multi> {
    let mut m = Multi::new(
        "sync_put",
        format!(
            "1 put (16 B key, {} B value) per durable commit; limit = {} B pwrite + fdatasync into a zero-filled, synced file",
            workloads::VAL_LEN,
            limit_bytes
        ),
        "commit",
        n,
        &[
            "LMDB",
            "mdb",
            "mdb WAL",
            "limit",
            #[cfg(feature = "rocksdb")]
            "RocksDB",
        ],
    );
    // WAL / limit, WAL / LMDB, mdb / LMDB (, WAL / RocksDB).
    m.ratios = vec![(2, 3), (2, 0), (1, 0)];
    if cfg!(feature = "rocksdb") {
        m.ratios.push((2, 4));
    }
    for rep in 0..reps {
        eprintln!("sync_put rep {}/{reps}", rep + 1);
        for who in order(m.labels.len(), rep) {
            let dir = TempDir::new(base, &m.labels[who].replace(' ', "-"), keep)?;
            let d = match (ENGINES.get(who), who) {
                (Some(&(_, e, wal)), _) => {
                    let db = Db::open_mode(e, &dir.0, wal)?;
                    workloads::sync_put(&db, n)?
                }
                (None, 3) => workloads::sync_limit(&dir.0, n, limit_bytes)?,
                #[cfg(feature = "rocksdb")]
                (None, 4) => rocks::sync_put(&rocks::open(&dir.0)?, n)?,
                _ => unreachable!("sync_put contender {who}"),
            };
            m.push(who, d);
        }
    }
    Ok(m)
}

/// `sync_threads`: `n` single-put durable commits from `threads` threads
/// on LMDB, mdb and mdb WAL (group commit), and from one thread on mdb WAL.
pub fn sync_threads(base: &Path, n: usize, threads: usize, reps: usize, keep: bool) -> Res<Multi> {
    let many = format!("x{threads}");
    let labels = [
        format!("LMDB {many}"),
        format!("mdb {many}"),
        format!("mdb WAL {many}"),
        "mdb WAL x1".to_string(),
        #[cfg(feature = "rocksdb")]
        format!("RocksDB {many}"),
    ];
    // Labels live as long as the results (one leak per run of the binary).
    let labels: Vec<&'static str> = labels.into_iter().map(|s| &*s.leak()).collect();
    let mut m = Multi::new(
        "sync_threads",
        format!(
            "1 put (16 B key, {} B value) per durable commit, {threads} threads committing at once",
            workloads::VAL_LEN
        ),
        "commit",
        n,
        &labels,
    );
    // WAL xT / LMDB xT, WAL xT / WAL x1, mdb xT / LMDB xT
    // (, WAL xT / RocksDB xT).
    m.ratios = vec![(2, 0), (2, 3), (1, 0)];
    if cfg!(feature = "rocksdb") {
        m.ratios.push((2, 4));
    }
    for rep in 0..reps {
        eprintln!("sync_threads rep {}/{reps}", rep + 1);
        for who in order(m.labels.len(), rep) {
            let dir = TempDir::new(base, &format!("threads-{who}"), keep)?;
            let (e, wal, t) = match who {
                0 => (Engine::Lmdb, false, threads),
                1 => (Engine::Mdb, false, threads),
                2 => (Engine::Mdb, true, threads),
                3 => (Engine::Mdb, true, 1),
                #[cfg(feature = "rocksdb")]
                4 => {
                    let db = rocks::open(&dir.0)?;
                    m.push(who, rocks::sync_put_threads(&db, n, threads)?);
                    continue;
                }
                _ => unreachable!("sync_threads contender {who}"),
            };
            let db = Db::open_mode(e, &dir.0, wal)?;
            m.push(who, workloads::sync_put_threads(&db, n, t)?);
            if let Db::Mdb(env) = &db {
                if let Some(w) = env.wal_info() {
                    // How many commits shared a log sync (group commit).
                    eprintln!(
                        "  {}: {} records, {} log syncs, {:.2} commits per sync",
                        m.labels[who],
                        w.records,
                        w.syncs,
                        w.records as f64 / w.syncs.max(1) as f64
                    );
                }
            }
        }
    }
    Ok(m)
}

/// Passes of `disk_get` over all keys: one pass over the default 100,000
/// keys takes about 0.1 s, short enough for the machine's noise to decide.
pub const GET_PASSES: usize = 5;

/// `batch_put` and `disk_get`: LMDB, mdb, mdb WAL on the same data.
pub fn batch_and_get(base: &Path, data: &Data, reps: usize, keep: bool) -> Res<(Multi, Multi)> {
    #[allow(unused_mut)]
    let mut labels: Vec<&str> = ENGINES.iter().map(|e| e.0).collect();
    #[cfg(feature = "rocksdb")]
    labels.push("RocksDB");
    let mut put = Multi::new(
        "batch_put",
        format!(
            "random puts, {} per durable commit, into an empty environment",
            workloads::BATCH
        ),
        "put",
        data.n,
        &labels,
    );
    put.ratios = vec![(2, 0), (1, 0), (2, 1)];
    if cfg!(feature = "rocksdb") {
        put.ratios.push((2, 3));
    }
    let mut get = Multi::new(
        "disk_get",
        format!(
            "random point gets of every key, one read txn, {GET_PASSES} passes, after batch_put (data in the page cache)"
        ),
        "get",
        data.n * GET_PASSES,
        &labels,
    );
    get.ratios = vec![(2, 1), (1, 0), (2, 0)];
    if cfg!(feature = "rocksdb") {
        get.ratios.push((2, 3));
    }
    for rep in 0..reps {
        eprintln!("batch_put/disk_get rep {}/{reps}", rep + 1);
        for who in order(labels.len(), rep) {
            let dir = TempDir::new(base, &labels[who].replace(' ', "-"), keep)?;
            #[cfg(feature = "rocksdb")]
            if who == ENGINES.len() {
                let db = rocks::open(&dir.0)?;
                put.push(who, rocks::load(&db, data)?);
                let mut d = Duration::ZERO;
                for _ in 0..GET_PASSES {
                    d += rocks::get(&db, data)?;
                }
                get.push(who, d);
                continue;
            }
            let (_, e, wal) = ENGINES[who];
            let db = Db::open_mode(e, &dir.0, wal)?;
            put.push(who, workloads::load(&db, data)?);
            let mut d = Duration::ZERO;
            for _ in 0..GET_PASSES {
                d += workloads::get(&db, data)?;
            }
            get.push(who, d);
        }
    }
    Ok((put, get))
}

/// `py_sync`: the python3-lmdb script on Debian's liblmdb, ours, ours + WAL.
pub fn py_sync(
    base: &Path,
    n: usize,
    reps: usize,
    keep: bool,
    python: &Path,
    lib: &Path,
) -> Res<Multi> {
    let lib = lib.canonicalize().map_err(|e| {
        format!(
            "{}: {e} (build it: cargo build --release -p mdb-ffi, or pass --lib)",
            lib.display()
        )
    })?;
    let scratch = TempDir::new(base, "py", keep)?;
    let script = scratch.0.join("py_sync_put.py");
    std::fs::write(&script, include_str!("../scripts/py_sync_put.py"))?;
    // The drop-in: our library under LMDB's SONAME.
    let dropin = scratch.0.join("lib");
    std::fs::create_dir_all(&dropin)?;
    std::os::unix::fs::symlink(&lib, dropin.join("liblmdb.so.0"))?;
    let labels = ["Debian liblmdb", "ours", "ours MDB_WAL=1"];
    let mut m = Multi::new(
        "py_sync",
        format!(
            "python3-lmdb ({}), sync=True, 1 put (16 B key, 100 B value) per `with env.begin(write=True)`",
            python.display()
        ),
        "commit",
        n,
        &labels,
    );
    m.ratios = vec![(2, 0), (1, 0), (2, 1)];
    for rep in 0..reps {
        eprintln!("py_sync rep {}/{reps}", rep + 1);
        for who in order(labels.len(), rep) {
            let dir = TempDir::new(&scratch.0, &format!("env{who}"), keep)?;
            let mut c = Command::new(python);
            c.arg(&script)
                .arg(&dir.0)
                .arg(n.to_string())
                .env_remove("MDB_WAL")
                .env_remove("LD_LIBRARY_PATH")
                .env_remove("LD_PRELOAD");
            if who > 0 {
                c.env("LD_LIBRARY_PATH", &dropin);
            }
            if who == 2 {
                c.env("MDB_WAL", "1");
            }
            let out = c.output()?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            if !out.status.success() {
                return Err(format!(
                    "py_sync: {} failed: {stdout}{}",
                    labels[who],
                    String::from_utf8_lossy(&out.stderr)
                )
                .into());
            }
            let f: Vec<&str> = stdout.split_whitespace().collect();
            let (secs, loaded, wal) = match f[..] {
                [s, l, w] => (s.parse::<f64>()?, PathBuf::from(l), w),
                _ => return Err(format!("py_sync: unexpected output {stdout:?}").into()),
            };
            let ours = loaded == lib;
            if ours != (who > 0) || (wal == "wal=1") != (who == 2) {
                return Err(format!(
                    "py_sync: {} loaded {} with {wal}",
                    labels[who],
                    loaded.display()
                )
                .into());
            }
            m.push(who, Duration::from_secs_f64(secs));
        }
    }
    Ok(m)
}
