//! `mdb-bench matrix`: the same workloads on LMDB, mdb (default and WAL
//! mode), redb, RocksDB, SQLite, fjall and sled, each through its own API,
//! in one run; results as JSON, a markdown table and PNG charts.
//!
//! Engines are interleaved (each repetition rotates which engine goes
//! first) and every workload is repeated; the report gives the median and
//! the range. Every store lives on the file system of `--dir` (on disk by
//! default: the durable workloads mean nothing on tmpfs).

mod chart;
mod fjall;
mod lmdb;
mod mdb;
mod redb;
mod report;
#[cfg(feature = "rocksdb")]
mod rocks;
mod run;
mod sled;
mod sqlite;
mod store;

use crate::workloads::Res;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use store::Store;

const USAGE: &str = "\
usage: mdb-bench matrix [--n N] [--reps R] [--engines E,E,...] [--dir PATH]
                        [--out DIR] [--batch-n M] [--single-n S]
                        [--large-n L] [--scale N,N,...] [--cache BYTES] [--keep]

  The same workloads on every engine, R times, engines interleaved:
    load_random, load_sorted   N keys (16 B) with 100 B values, 100,000 per
                               durable commit
    single_put                 S puts, one durable commit each
    batch_write, overwrite     M new / existing keys, 1000 per durable commit
    get, get_2t                N random point reads (1 thread; 2 threads,
                               N each), 1000 per read snapshot
    range_10                   N/10 range reads of 10 items
    scan                       every item in key order
    mixed                      N operations: a reader thread's 90% gets and
                               a writer thread's 10% overwrites (100 per
                               durable commit), at the same time
    remove                     N/2 keys, 1000 per durable commit
    compact                    the engine's compaction, and file sizes after
                               the load, the removals and the compaction
                               (mdb WAL: after Env::checkpoint, log included)
    large_put, large_get       L values of 100 KB (10 per durable commit)
    scale                      random loads of each size of --scale, and N
  engines: lmdb, mdb, mdb-wal, redb, rocksdb (cargo feature rocksdb),
           sqlite, fjall, sled (default: all built in)
  --n N         keys (default 1000000)
  --reps R      repetitions (default 3)
  --batch-n M   keys of batch_write and overwrite (default N/10)
  --single-n S  commits of single_put (default 1000)
  --large-n L   values of large_put (default 500)
  --scale LIST  extra random-load sizes (default N/100,N/10)
  --cache BYTES cache of the engines that have one (default 1 GiB)
  --dir PATH    where the stores go (default ./matrix-data, removed after)
  --out DIR     matrix.json, matrix.md and the charts (default docs/bench)
  --keep        keep the stores of every run under --dir (for checks of
                the files the engines wrote)";

/// What one run measures.
pub struct Config {
    pub n: usize,
    pub reps: usize,
    pub batch_n: usize,
    pub single_n: usize,
    pub large_n: usize,
    pub large_len: usize,
    pub val_len: usize,
    pub scale: Vec<usize>,
    pub cache: usize,
    pub dir: PathBuf,
    pub out: PathBuf,
    pub engines: Vec<Eng>,
    /// Keep the stores (`--keep`).
    pub keep: bool,
}

/// The contenders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Eng {
    Lmdb,
    Mdb,
    MdbWal,
    Redb,
    Rocks,
    Sqlite,
    Fjall,
    Sled,
}

impl Eng {
    pub const ALL: [Eng; 8] = [
        Eng::Lmdb,
        Eng::Mdb,
        Eng::MdbWal,
        Eng::Redb,
        Eng::Rocks,
        Eng::Sqlite,
        Eng::Fjall,
        Eng::Sled,
    ];

    pub fn slug(self) -> &'static str {
        match self {
            Eng::Lmdb => "lmdb",
            Eng::Mdb => "mdb",
            Eng::MdbWal => "mdb-wal",
            Eng::Redb => "redb",
            Eng::Rocks => "rocksdb",
            Eng::Sqlite => "sqlite",
            Eng::Fjall => "fjall",
            Eng::Sled => "sled",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Eng::Lmdb => "LMDB",
            Eng::Mdb => "mdb",
            Eng::MdbWal => "mdb WAL",
            Eng::Redb => "redb",
            Eng::Rocks => "RocksDB",
            Eng::Sqlite => "SQLite",
            Eng::Fjall => "fjall",
            Eng::Sled => "sled",
        }
    }

    /// Built into this binary (RocksDB needs the `rocksdb` feature).
    pub fn built(self) -> bool {
        self != Eng::Rocks || cfg!(feature = "rocksdb")
    }

    /// The version measured (the crates are pinned in Cargo.toml).
    pub fn version(self) -> String {
        match self {
            Eng::Lmdb => crate::lmdb::version(),
            Eng::Mdb | Eng::MdbWal => ::mdb::VERSION_STRING.to_string(),
            Eng::Redb => "redb 4.6.0".into(),
            Eng::Rocks => "rocksdb crate 0.20.1 on Debian's librocksdb 7.8.3".into(),
            Eng::Sqlite => format!("SQLite {} (rusqlite 0.37.0)", rusqlite::version()),
            Eng::Fjall => "fjall 3.1.13".into(),
            Eng::Sled => "sled 0.34.7".into(),
        }
    }

    fn open(self, dir: &Path, cache: usize) -> Res<Box<dyn Store>> {
        std::fs::create_dir_all(dir)?;
        Ok(match self {
            Eng::Lmdb => Box::new(lmdb::open(dir)?),
            Eng::Mdb => Box::new(mdb::open(dir, false)?),
            Eng::MdbWal => Box::new(mdb::open(dir, true)?),
            Eng::Redb => Box::new(redb::open(dir, cache)?),
            #[cfg(feature = "rocksdb")]
            Eng::Rocks => Box::new(rocks::open(dir, cache)?),
            #[cfg(not(feature = "rocksdb"))]
            Eng::Rocks => return Err("RocksDB: build with --features rocksdb".into()),
            Eng::Sqlite => Box::new(sqlite::open(dir, cache)?),
            Eng::Fjall => Box::new(fjall::open(dir, cache)?),
            Eng::Sled => Box::new(sled::open(dir, cache)?),
        })
    }
}

/// What is measured, per engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    LoadRandom,
    LoadSorted,
    SinglePut,
    BatchWrite,
    Overwrite,
    Get,
    Get2Threads,
    Range10,
    Scan,
    Mixed,
    Remove,
    LargePut,
    LargeGet,
    Compact,
    SizeLoaded,
    SizeRemoved,
    SizeCompacted,
}

impl Metric {
    pub const ALL: [Metric; 17] = [
        Metric::LoadRandom,
        Metric::LoadSorted,
        Metric::SinglePut,
        Metric::BatchWrite,
        Metric::Overwrite,
        Metric::Get,
        Metric::Get2Threads,
        Metric::Range10,
        Metric::Scan,
        Metric::Mixed,
        Metric::Remove,
        Metric::LargePut,
        Metric::LargeGet,
        Metric::Compact,
        Metric::SizeLoaded,
        Metric::SizeRemoved,
        Metric::SizeCompacted,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Metric::LoadRandom => "load_random",
            Metric::LoadSorted => "load_sorted",
            Metric::SinglePut => "single_put",
            Metric::BatchWrite => "batch_write",
            Metric::Overwrite => "overwrite",
            Metric::Get => "get",
            Metric::Get2Threads => "get_2t",
            Metric::Range10 => "range_10",
            Metric::Scan => "scan",
            Metric::Mixed => "mixed",
            Metric::Remove => "remove",
            Metric::LargePut => "large_put",
            Metric::LargeGet => "large_get",
            Metric::Compact => "compact",
            Metric::SizeLoaded => "size_loaded",
            Metric::SizeRemoved => "size_removed",
            Metric::SizeCompacted => "size_compacted",
        }
    }

    /// What one unit of the figure is.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::LoadRandom | Metric::LoadSorted => "ns/key",
            Metric::SinglePut => "ns/commit",
            Metric::BatchWrite | Metric::Overwrite | Metric::Remove => "ns/key",
            Metric::Get | Metric::Get2Threads => "ns/get",
            Metric::Range10 => "ns/range",
            Metric::Scan => "ns/item",
            Metric::Mixed => "ns/op",
            Metric::LargePut | Metric::LargeGet => "ns/value",
            Metric::Compact => "ns",
            Metric::SizeLoaded | Metric::SizeRemoved | Metric::SizeCompacted => "bytes",
        }
    }

    pub fn is_size(self) -> bool {
        self.unit() == "bytes"
    }
}

/// Every sample of one engine.
#[derive(Default)]
pub struct Samples {
    pub m: HashMap<Metric, Vec<f64>>,
    /// ns per key of a random load, by number of keys.
    pub scale: BTreeMap<usize, Vec<f64>>,
}

impl Samples {
    pub fn add(&mut self, m: Metric, v: f64) {
        self.m.entry(m).or_default().push(v);
    }
}

/// Median and range of some samples.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stat {
    pub fn of(v: &[f64]) -> Option<Stat> {
        if v.is_empty() {
            return None;
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let mid = s.len() / 2;
        let median = if s.len() % 2 == 1 {
            s[mid]
        } else {
            (s[mid - 1] + s[mid]) / 2.0
        };
        Some(Stat {
            median,
            min: s[0],
            max: s[s.len() - 1],
        })
    }
}

fn parse_list(s: &str) -> Result<Vec<usize>, String> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(|x| x.trim().parse().map_err(|e| format!("{x}: {e}")))
        .collect()
}

fn parse(argv: &[String]) -> Result<Config, String> {
    let mut c = Config {
        n: 1_000_000,
        reps: 3,
        batch_n: 0,
        single_n: 1000,
        large_n: 500,
        large_len: 100_000,
        val_len: crate::workloads::VAL_LEN,
        scale: Vec::new(),
        cache: 1 << 30,
        dir: PathBuf::from("matrix-data"),
        out: PathBuf::from("docs/bench"),
        engines: Eng::ALL.iter().copied().filter(|e| e.built()).collect(),
        keep: false,
    };
    let mut scale = None;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        let num = |v: &String| v.parse::<usize>().map_err(|e| format!("{a}: {e}"));
        match a.as_str() {
            "--n" => c.n = num(val()?)?,
            "--reps" => c.reps = num(val()?)?,
            "--batch-n" => c.batch_n = num(val()?)?,
            "--single-n" => c.single_n = num(val()?)?,
            "--large-n" => c.large_n = num(val()?)?,
            "--cache" => c.cache = num(val()?)?,
            "--scale" => scale = Some(parse_list(val()?)?),
            "--dir" => c.dir = PathBuf::from(val()?),
            "--out" => c.out = PathBuf::from(val()?),
            "--keep" => c.keep = true,
            "--engines" => {
                let mut v = Vec::new();
                for name in val()?.split(',') {
                    let e = Eng::ALL
                        .iter()
                        .copied()
                        .find(|e| e.slug() == name)
                        .ok_or(format!("unknown engine {name}"))?;
                    if !e.built() {
                        return Err(format!("{name}: build with --features {name}"));
                    }
                    v.push(e);
                }
                c.engines = v;
            }
            "-h" | "--help" => return Err(String::new()),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if c.n < 100 || c.reps == 0 || c.large_n == 0 || c.single_n == 0 {
        return Err("--n must be at least 100; --reps, --large-n, --single-n at least 1".into());
    }
    if c.batch_n == 0 {
        c.batch_n = (c.n / 10).max(1);
    }
    c.batch_n = c.batch_n.min(c.n);
    c.scale = scale.unwrap_or_else(|| vec![c.n / 100, c.n / 10]);
    c.scale.retain(|&s| s > 0 && s != c.n);
    c.scale.sort_unstable();
    c.scale.dedup();
    Ok(c)
}

/// Run every workload of one engine once, on fresh stores under `base`.
fn run_engine(cfg: &Config, e: Eng, base: &Path, out: &mut Samples) -> Res<()> {
    let _ = std::fs::remove_dir_all(base);
    let a = base.join("main");
    let scratch = base.join("compacted");
    std::fs::create_dir_all(&scratch)?;
    {
        let mut s = e.open(&a, cfg.cache)?;
        run::main_sequence(cfg, &mut *s, &a, &scratch, out)?;
    }
    if let Some(v) = out.m.get(&Metric::LoadRandom).and_then(|v| v.last()) {
        out.scale.entry(cfg.n).or_default().push(*v);
    }
    {
        let s = e.open(&base.join("sorted"), cfg.cache)?;
        run::sorted_load(cfg, &*s, out)?;
    }
    {
        let s = e.open(&base.join("large"), cfg.cache)?;
        run::large_values(cfg, &*s, out)?;
    }
    for &n in &cfg.scale {
        let s = e.open(&base.join(format!("scale-{n}")), cfg.cache)?;
        let v = run::scale_load(cfg, &*s, n)?;
        out.scale.entry(n).or_default().push(v);
    }
    if !cfg.keep {
        std::fs::remove_dir_all(base)?;
    }
    Ok(())
}

/// Everything measured in one run.
pub struct Results {
    pub engines: Vec<Eng>,
    pub samples: BTreeMap<Eng, Samples>,
}

impl Results {
    /// Median (and spread) of `e`'s samples of `m`, if it has any.
    pub fn median(&self, e: Eng, m: Metric) -> Option<Stat> {
        self.samples.get(&e)?.m.get(&m).and_then(|v| Stat::of(v))
    }

    /// How `e` compares with LMDB on `m`: its speed as a multiple of
    /// LMDB's for times (> 1: faster), its size as a multiple of LMDB's for
    /// sizes.
    pub fn vs_lmdb(&self, e: Eng, m: Metric) -> Option<f64> {
        let a = self.median(e, m)?.median;
        let l = self.median(Eng::Lmdb, m)?.median;
        if a <= 0.0 || l <= 0.0 {
            return None;
        }
        Some(if m.is_size() { a / l } else { l / a })
    }
}

pub fn run(cfg: &Config) -> Res<Results> {
    std::fs::create_dir_all(&cfg.dir)?;
    let mut samples: BTreeMap<Eng, Samples> = BTreeMap::new();
    let k = cfg.engines.len();
    for rep in 0..cfg.reps {
        for j in 0..k {
            let e = cfg.engines[(j + rep) % k];
            eprintln!("matrix: repetition {}/{}: {}", rep + 1, cfg.reps, e.name());
            let base = cfg.dir.join(format!("{}-{rep}", e.slug()));
            run_engine(cfg, e, &base, samples.entry(e).or_default())
                .map_err(|err| format!("{}: {err}", e.name()))?;
        }
    }
    Ok(Results {
        engines: cfg.engines.clone(),
        samples,
    })
}

/// `mdb-bench matrix ...`: the exit status.
pub fn main(argv: &[String]) -> i32 {
    let cfg = match parse(argv) {
        Ok(c) => c,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("mdb-bench matrix: {e}");
            }
            eprintln!("{USAGE}");
            return 2;
        }
    };
    let r = run(&cfg).and_then(|res| {
        let _ = std::fs::remove_dir(&cfg.dir);
        report::write(&cfg, &res, argv)
    });
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mdb-bench matrix: {e}");
            1
        }
    }
}
