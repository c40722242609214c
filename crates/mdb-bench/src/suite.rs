//! The default run: LMDB against mdb in one process, in memory, on disk
//! and on a DUPSORT index, with its options, and the `--scale` series.

use crate::common::*;
use crate::workloads::{self, Data, Db, Engine, Index, IndexData, Res};
use crate::{disk, lmdb};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// In memory (`/dev/shm`, or --dir): LMDB against mdb, N keys.
const CPU_WORKLOADS: [&str; 12] = [
    "load",
    "get",
    "scan",
    "file_read",
    "file_pread",
    "scan_ordered",
    "file_read_ordered",
    "bulk_load",
    "bulk_scan",
    "bulk_file_read",
    "append_load",
    "cursor_delete",
];

/// On disk (the current directory, or --dir).
const DISK_WORKLOADS: [&str; 6] = [
    "sync_put",
    "sync_threads",
    "batch_put",
    "disk_get",
    "cold_scan",
    "py_sync",
];

/// A DUPSORT index database.
const INDEX_WORKLOADS: [&str; 3] = ["index_load", "index_get_both", "index_scan"];

/// Every workload, in the order of the report.
fn workloads_all() -> impl Iterator<Item = &'static str> {
    CPU_WORKLOADS
        .into_iter()
        .chain(DISK_WORKLOADS)
        .chain(INDEX_WORKLOADS)
}

/// Run only when named in `--only`: they need python3-lmdb and our
/// liblmdb.so.
const NOT_BY_DEFAULT: [&str; 1] = ["py_sync"];

pub(crate) const USAGE: &str = "\
usage: mdb-bench [--n N] [--reps R] [--only WORKLOAD,...] [--scale N,N,...]
                 [--sync-n M] [--disk-n K] [--py-n P] [--dir PATH]
                 [--limit-bytes B] [--threads T]
                 [--engine mdb|lmdb] [--malloc-dynamic] [--wal] [--keep]
                 [--python PATH] [--lib PATH] [--markdown]

  workloads: load, get, scan, file_read, file_pread, scan_ordered,
             file_read_ordered, bulk_load, bulk_scan, bulk_file_read,
             append_load, cursor_delete,
             sync_put, sync_threads, batch_put, disk_get, cold_scan, py_sync,
             index_load,
             index_get_both, index_scan
  on disk (the current directory, or --dir), each contender once per
  repetition, in an order rotating from one repetition to the next:
    sync_put   single-put durable commits: LMDB, mdb, mdb in WAL mode, and
               the limit (8 KiB pwrite + fdatasync into a zero-filled,
               synced file); --engine and --wal do not apply
    sync_threads
               M single-put durable commits from T threads (--threads,
               default 8): LMDB, mdb and mdb WAL (group commit), and mdb
               WAL from one thread
    batch_put  random puts, 1000 per durable commit, K keys: LMDB, mdb,
               mdb WAL
    disk_get   random gets of the K keys after batch_put (5 passes), same
               contenders
    cold_scan  K random puts in one durable txn, the environment closed,
               the file dropped from the page cache, then a full scan:
               mdb and LMDB
    py_sync    (only when named) scripts/py_sync_put.py: P single-put
               durable commits through python3-lmdb on Debian's liblmdb,
               on ours, and on ours with MDB_WAL=1
  built with --features rocksdb (docs/benchmarks.md), RocksDB with synced
  writes (WriteOptions::set_sync) is one more contender of sync_put (one
  put per write), sync_threads (T threads), batch_put (1000 puts per
  WriteBatch) and disk_get
  --n N        keys for load/get/scan/append_load/cursor_delete, and
               (key, id) pairs for index_* (N/100 keys of about 100 ids
               each) (default 1000000)
  --reps R     pairs of runs, one per engine, alternating which goes first
               (default 5); the median and the range are reported, and the
               median of the pairs' ratios
  --nosync     both engines commit without syncing (MDB_NOSYNC)
  --scale LIST random and APPEND loads at each N of LIST (e.g. 1000000,10000000), R
               pairs each: cost per key at each size and its growth
               (replaces the workloads)
  --only LIST  comma-separated workloads (default: all but py_sync)
  --sync-n M   single-put commits in sync_put (default 2000)
  --disk-n K   keys of batch_put and disk_get (default 100000)
  --limit-bytes B
               bytes per write of sync_put's limit (default 8192; a
               single-put WAL record is 12504 B)
  --threads T  committing threads of sync_threads (default 8)
  --py-n P     commits of py_sync (default 2000)
  --python P   the python with python3-lmdb (default /usr/bin/python3)
  --lib PATH   our library for py_sync (default: liblmdb.so beside this
               executable, as `cargo build --release -p mdb-ffi` puts it)
  --dir PATH   put every database under PATH (default: /dev/shm for
               load/get/scan/index_*, the current directory for sync_put,
               batch_put, disk_get, py_sync)
  --engine E   run only engine E (for profiling; no ratio)
  --malloc-dynamic
               leave glibc's malloc trimming adaptive (by default freed heap
               memory is kept, so results do not depend on engine order)
  --wal        open mdb in write-ahead-log mode (LMDB has none)
  --keep       keep the databases (paths printed on stderr), e.g. for mdb_stat
  --markdown   print the results as a markdown table

Instructions per operation under callgrind: mdb-bench instr --help
The data file's size in WAL mode against the default mode, for the
matrix's writes and removals: mdb-bench wal-size DIR N
LMDB, mdb, redb, RocksDB, SQLite, fjall and sled side by side (built with
--features matrix[,rocksdb]): mdb-bench matrix --help";

pub(crate) struct Args {
    n: usize,
    reps: usize,
    sync_n: usize,
    disk_n: usize,
    limit_bytes: usize,
    threads: usize,
    py_n: usize,
    python: PathBuf,
    lib: Option<PathBuf>,
    only: Vec<String>,
    scale: Vec<usize>,
    dir: Option<PathBuf>,
    engines: Vec<Engine>,
    markdown: bool,
    malloc_dynamic: bool,
    keep: bool,
}

pub(crate) fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        n: 1_000_000,
        reps: 5,
        sync_n: 2000,
        disk_n: 100_000,
        limit_bytes: workloads::LIMIT_WRITE,
        threads: 8,
        py_n: 2000,
        python: PathBuf::from("/usr/bin/python3"),
        lib: None,
        only: workloads_all()
            .filter(|w| !NOT_BY_DEFAULT.contains(w))
            .map(|s| s.to_string())
            .collect(),
        scale: Vec::new(),
        dir: None,
        engines: vec![Engine::Mdb, Engine::Lmdb],
        markdown: false,
        malloc_dynamic: false,
        keep: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        let num = |s: String, name: &str| -> Result<usize, String> {
            let s = s.replace('_', "");
            match s.parse::<usize>() {
                Ok(v) if v > 0 => Ok(v),
                _ => Err(format!("{name}: not a positive number: {s}")),
            }
        };
        match arg.as_str() {
            "--n" => a.n = num(value("--n")?, "--n")?,
            "--reps" => a.reps = num(value("--reps")?, "--reps")?,
            "--sync-n" => a.sync_n = num(value("--sync-n")?, "--sync-n")?,
            "--disk-n" => a.disk_n = num(value("--disk-n")?, "--disk-n")?,
            "--limit-bytes" => a.limit_bytes = num(value("--limit-bytes")?, "--limit-bytes")?,
            "--threads" => a.threads = num(value("--threads")?, "--threads")?.max(1),
            "--py-n" => a.py_n = num(value("--py-n")?, "--py-n")?,
            "--python" => a.python = PathBuf::from(value("--python")?),
            "--lib" => a.lib = Some(PathBuf::from(value("--lib")?)),
            "--only" => {
                a.only = value("--only")?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                if let Some(bad) = a
                    .only
                    .iter()
                    .find(|w| !workloads_all().any(|k| k == w.as_str()))
                {
                    return Err(format!(
                        "unknown workload {bad:?} (known: {})",
                        workloads_all().collect::<Vec<_>>().join(",")
                    ));
                }
            }
            "--scale" => {
                for s in value("--scale")?
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                {
                    a.scale.push(num(s.trim().to_string(), "--scale")?);
                }
            }
            "--dir" => a.dir = Some(PathBuf::from(value("--dir")?)),
            "--engine" => {
                a.engines = match value("--engine")?.to_ascii_lowercase().as_str() {
                    "mdb" => vec![Engine::Mdb],
                    "lmdb" => vec![Engine::Lmdb],
                    "both" => vec![Engine::Mdb, Engine::Lmdb],
                    e => return Err(format!("unknown engine {e:?} (mdb, lmdb, both)")),
                }
            }
            "--markdown" => a.markdown = true,
            "--malloc-dynamic" => a.malloc_dynamic = true,
            "--keep" => a.keep = true,
            "--wal" => workloads::MDB_WAL.store(true, std::sync::atomic::Ordering::Relaxed),
            "--nosync" => workloads::NOSYNC.store(true, std::sync::atomic::Ordering::Relaxed),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.n > u32::MAX as usize
        || a.disk_n > u32::MAX as usize
        || a.scale.iter().any(|&n| n > u32::MAX as usize)
    {
        return Err("--n must fit in 32 bits".into());
    }
    Ok(a)
}

/// Random and APPEND loads at each size of `--scale`: cost per key and its
/// growth.
fn run_scale(a: &Args, base: &Path) -> Res<()> {
    let mut rows: [Vec<Samples>; 2] = [Vec::new(), Vec::new()];
    for &n in &a.scale {
        eprintln!("generating {n} keys...");
        let data = Data::new(n);
        for (w, rows) in rows.iter_mut().enumerate() {
            let mut s = Samples {
                name: if w == 0 { "load" } else { "append_load" },
                what: format!(
                    "{} puts, {} per txn",
                    ["random", "APPEND"][w],
                    workloads::BATCH
                ),
                ops: n,
                mdb: Vec::new(),
                lmdb: Vec::new(),
            };
            for rep in 0..a.reps {
                eprintln!("scale {n} {}: rep {}/{}", s.name, rep + 1, a.reps);
                for e in engine_order(&a.engines, rep) {
                    let dir = TempDir::new(base, e.name(), a.keep)?;
                    let db = Db::open(e, &dir.0)?;
                    let t = if w == 0 {
                        workloads::load(&db, &data)?
                    } else {
                        workloads::append_load(&db, &data)?
                    };
                    eprintln!("  {}: {:.1} s", e.name(), t.as_secs_f64());
                    s.push(e, t);
                }
            }
            rows.push(s);
        }
    }
    for rows in &rows {
        println!();
        println!("{}:", rows[0].what);
        println!();
        println!("| keys | mdb per key | LMDB per key | ratio (median of pairs) |");
        println!("|---:|---:|---:|---:|");
        for s in rows {
            println!(
                "| {} | {} | {} | {} |",
                s.ops,
                time_range(&s.mdb),
                time_range(&s.lmdb),
                median(&s.pair_ratios()).map_or("-".into(), |r| format!("{r:.2}"))
            );
        }
        let growth = |a: &[f64], b: &[f64]| match (median(a), median(b)) {
            (Some(x), Some(y)) => format!("{:.2}x", y / x),
            _ => "-".into(),
        };
        if let Some(f) = rows.first() {
            println!();
            for l in &rows[1..] {
                println!(
                    "Cost per key from {} to {} keys: mdb {}, LMDB {}.",
                    f.ops,
                    l.ops,
                    growth(&f.mdb, &l.mdb),
                    growth(&f.lmdb, &l.lmdb)
                );
            }
        }
    }
    Ok(())
}

/// Every repetition, each engine (alternating which goes first) in a
/// fresh directory under `base`, opened there: `f(engine, dir, db)`.
fn per_engine(
    a: &Args,
    base: &Path,
    what: &str,
    mut f: impl FnMut(Engine, &Path, Db) -> Res<()>,
) -> Res<()> {
    for rep in 0..a.reps {
        eprintln!("{what} rep {}/{}", rep + 1, a.reps);
        for e in engine_order(&a.engines, rep) {
            let dir = TempDir::new(base, e.name(), a.keep)?;
            let db = Db::open(e, &dir.0)?;
            f(e, &dir.0, db)?;
        }
    }
    Ok(())
}

/// The engines in the order of repetition `rep`: alternating who goes first.
fn engine_order(engines: &[Engine], rep: usize) -> Vec<Engine> {
    let mut v = engines.to_vec();
    if rep % 2 == 1 {
        v.reverse();
    }
    v
}

/// Put glibc's allocator in a fixed steady state: heap memory freed by one
/// transaction is kept for the next one instead of being returned to the
/// kernel (trim threshold 1 GiB), and the mmap threshold is fixed at its
/// default (128 KiB). Left adaptive, whether a free trims the heap depends
/// on the heap's layout and on thresholds that glibc raises the first time
/// a large mmap-ed block is freed (LMDB frees several at `mdb_env_close`),
/// so an engine that allocates page buffers per transaction (ours) runs at
/// very different speeds depending on what ran before it in the process: an
/// order effect that alternating engines does not cancel. `--malloc-dynamic`
/// restores glibc's defaults. Returns a description for the header.
fn pin_malloc(dynamic: bool) -> &'static str {
    if dynamic {
        return "glibc malloc left adaptive (--malloc-dynamic): results depend on run order";
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::raw::c_int;
        extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        const M_TRIM_THRESHOLD: c_int = -1;
        const M_MMAP_THRESHOLD: c_int = -3;
        // SAFETY: mallopt only changes allocator parameters; called before
        // any other thread exists.
        let ok = unsafe {
            mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1 && mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1
        };
        if ok {
            "glibc malloc pinned: no heap trimming, mmap threshold 128 KiB (see --malloc-dynamic)"
        } else {
            "glibc malloc: mallopt failed, thresholds adaptive"
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        "malloc untouched (not glibc)"
    }
}

pub(crate) fn run(a: &Args) -> Res<()> {
    let malloc_note = pin_malloc(a.malloc_dynamic);
    let want = |w: &str| a.only.iter().any(|o| o == w);
    let cpu_base = a.dir.clone().unwrap_or_else(|| {
        let shm = PathBuf::from("/dev/shm");
        if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        }
    });
    let sync_base = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    std::fs::create_dir_all(&cpu_base)?;
    std::fs::create_dir_all(&sync_base)?;
    if !a.scale.is_empty() {
        println!("- commit: {}", git_commit());
        println!(
            "- random load, {} puts per txn, 16 B keys, {} B values, {} pairs per size, dir {}",
            workloads::BATCH,
            workloads::VAL_LEN,
            a.reps,
            cpu_base.display()
        );
        println!();
        return run_scale(a, &cpu_base);
    }

    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let any = |ws: &[&str]| ws.iter().any(|w| want(w));
    let cpu_w = any(&CPU_WORKLOADS);
    let disk_w = any(&DISK_WORKLOADS);
    let index_w = any(&INDEX_WORKLOADS);
    let header: Vec<String> = [
        format!("commit: {}", git_commit()),
        format!("machine: {nproc} CPUs (nproc), {}, Linux {}", cpu_model(), kernel()),
        format!(
            "engines: {}{} vs {}",
            mdb::VERSION_STRING,
            if workloads::MDB_WAL.load(std::sync::atomic::Ordering::Relaxed) {
                " in WAL mode"
            } else {
                ""
            },
            lmdb::version()
        ),
        if cpu_w { format!(
            "load/get/scan: N = {} keys of 16 B, values of {} B, {} puts per txn, dir {}",
            a.n,
            workloads::VAL_LEN,
            workloads::BATCH,
            cpu_base.display()
        ) } else { String::new() },
        if disk_w { format!(
            "sync_put: {} single-put durable commits; batch_put/disk_get: {} keys; py_sync: {} commits; dir {} ({})",
            a.sync_n,
            a.disk_n,
            a.py_n,
            sync_base.display(),
            fs_type(&sync_base)
        ) } else { String::new() },
        if index_w { format!(
            "index_*: N = {} (key, id) pairs, {} keys of 16 B with ~{} ids of 8 B each, named DUPSORT|DUPFIXED|INTEGERDUP DB, {} puts per txn, dir {}",
            a.n,
            a.n.div_ceil(workloads::IDS_PER_KEY),
            workloads::IDS_PER_KEY,
            workloads::BATCH,
            cpu_base.display()
        ) } else { String::new() },
        format!(
            "map size {} GiB, default (durable) flags on both, {} pairs of runs (one per engine, alternating which goes first), median per op (range); ratio = median over pairs of mdb/LMDB (> 1: mdb slower); speed = 1/ratio",
            workloads::MAP_SIZE >> 30,
            a.reps
        ),
        malloc_note.to_string(),
    ]
    .into_iter()
    .filter(|l| !l.is_empty())
    .collect();
    for l in &header {
        if a.markdown {
            println!("- {l}");
        } else {
            println!("{l}");
        }
    }
    println!();

    let mk = |name: &'static str, what: String, ops: usize| Samples {
        name,
        what,
        ops,
        mdb: Vec::new(),
        lmdb: Vec::new(),
    };
    let mut load_s = mk(
        "load",
        format!("random puts, {} per txn", workloads::BATCH),
        a.n,
    );
    let mut get_s = mk("get", "random point gets, one read txn".into(), a.n);
    let mut scan_s = mk("scan", "full cursor scan".into(), a.n);
    let mut file_s = mk(
        "file_read",
        "sum of every word of the scanned data file, mapped and in the page cache, per item".into(),
        a.n,
    );
    let mut pread_s = mk(
        "file_pread",
        "read(2) of the scanned data file from the page cache, 1 MiB at a time, per item".into(),
        a.n,
    );
    let mut scan_o = mk(
        "scan_ordered",
        "full cursor scan of a compacted copy (leaves in key order), mapped by an untimed scan first".into(),
        a.n,
    );
    let mut file_o = mk(
        "file_read_ordered",
        "sum of every word of that compacted copy, mapped and in the page cache, per item".into(),
        a.n,
    );
    let mut bulk_s = mk("bulk_load", "random puts, all in one txn".into(), a.n);
    let mut bulk_scan_s = mk(
        "bulk_scan",
        "full cursor scan of that one-txn load, mapped by an untimed scan first".into(),
        a.n,
    );
    let mut bulk_file_s = mk(
        "bulk_file_read",
        "sum of every word of that one-txn load's data file, mapped and in the page cache, per item".into(),
        a.n,
    );
    let mut cold_s = mk(
        "cold_scan",
        format!(
            "full cursor scan from a cold page cache (posix_fadvise DONTNEED) of {} keys loaded in one durable txn, on disk",
            a.disk_n
        ),
        a.disk_n,
    );
    let mut append_s = mk(
        "append_load",
        format!("sorted puts with APPEND, {} per txn", workloads::BATCH),
        a.n,
    );
    let mut cdel_s = mk(
        "cursor_delete",
        format!(
            "cursor delete + next until empty, {} per txn",
            workloads::BATCH
        ),
        a.n,
    );
    let n_index_keys = a.n.div_ceil(workloads::IDS_PER_KEY);
    let mut ixload_s = mk(
        "index_load",
        format!("random (key, id) puts, {} per txn", workloads::BATCH),
        a.n,
    );
    let mut ixget_s = mk(
        "index_get_both",
        "random GET_BOTH, one read txn".into(),
        a.n,
    );
    let mut ixscan_s = mk(
        "index_scan",
        format!(
            "per key: SET_KEY + GET/NEXT_MULTIPLE over its ~{} ids; {} passes over all keys",
            workloads::IDS_PER_KEY,
            workloads::SCAN_PASSES
        ),
        n_index_keys * workloads::SCAN_PASSES,
    );

    let data = if cpu_w {
        eprintln!("generating {} keys...", a.n);
        Some(Data::new(a.n))
    } else {
        None
    };
    let ordered = want("scan_ordered") || want("file_read_ordered");
    if want("load")
        || want("get")
        || want("scan")
        || want("file_read")
        || want("file_pread")
        || ordered
    {
        let data = data.as_ref().unwrap();
        per_engine(a, &cpu_base, "load", |e, dir, db| {
            let d = workloads::load(&db, data)?;
            if want("load") {
                load_s.push(e, d);
            }
            if want("get") {
                get_s.push(e, workloads::get(&db, data)?);
            }
            if want("scan") {
                scan_s.push(e, workloads::scan(&db, data)?);
            }
            if want("file_read") {
                file_s.push(e, workloads::file_read(dir)?);
            }
            if want("file_pread") {
                pread_s.push(e, workloads::file_pread(dir)?);
            }
            if ordered {
                let cdir = dir.join("compact");
                std::fs::create_dir_all(&cdir)?;
                db.copy_compact(&cdir)?;
                let cdb = Db::open(e, &cdir)?;
                if want("scan_ordered") {
                    scan_o.push(e, workloads::scan_mapped(&cdb, data)?);
                }
                if want("file_read_ordered") {
                    file_o.push(e, workloads::file_read(&cdir)?);
                }
            }
            Ok(())
        })?;
    }
    if want("bulk_load") || want("bulk_scan") || want("bulk_file_read") {
        let data = data.as_ref().unwrap();
        per_engine(a, &cpu_base, "bulk", |e, dir, db| {
            let d = workloads::bulk_load(&db, data)?;
            if want("bulk_load") {
                bulk_s.push(e, d);
            }
            if want("bulk_scan") {
                bulk_scan_s.push(e, workloads::scan_mapped(&db, data)?);
            }
            if want("bulk_file_read") {
                bulk_file_s.push(e, workloads::file_read(dir)?);
            }
            Ok(())
        })?;
    }
    if want("append_load") || want("cursor_delete") {
        let data = data.as_ref().unwrap();
        per_engine(a, &cpu_base, "append", |e, _, db| {
            let d = workloads::append_load(&db, data)?;
            if want("append_load") {
                append_s.push(e, d);
            }
            if want("cursor_delete") {
                cdel_s.push(e, workloads::cursor_delete(&db, a.n)?);
            }
            Ok(())
        })?;
    }
    let mut multi = Vec::new();
    if want("sync_put") {
        multi.push(disk::sync_put(
            &sync_base,
            a.sync_n,
            a.limit_bytes,
            a.reps,
            a.keep,
        )?);
    }
    if want("sync_threads") {
        multi.push(disk::sync_threads(
            &sync_base, a.sync_n, a.threads, a.reps, a.keep,
        )?);
    }
    if want("batch_put") || want("disk_get") {
        eprintln!("generating {} keys...", a.disk_n);
        let data = Data::new(a.disk_n);
        let (put, get) = disk::batch_and_get(&sync_base, &data, a.reps, a.keep)?;
        multi.extend([put, get].into_iter().filter(|m| want(m.name)));
    }
    if want("cold_scan") {
        eprintln!("generating {} keys...", a.disk_n);
        let data = Data::new(a.disk_n);
        per_engine(a, &sync_base, "cold_scan", |e, dir, db| {
            workloads::bulk_load(&db, &data)?;
            // Closed, so that no mapping holds the pages in the cache.
            drop(db);
            let left = workloads::evict(&dir.join("data.mdb"))?;
            if left > 0.01 {
                return Err(format!(
                    "cold_scan: {:.0}% of the file stayed in the page cache",
                    left * 100.0
                )
                .into());
            }
            cold_s.push(e, workloads::scan(&Db::open(e, dir)?, &data)?);
            Ok(())
        })?;
    }
    if want("py_sync") {
        let lib = match &a.lib {
            Some(l) => l.clone(),
            None => std::env::current_exe()?.with_file_name("liblmdb.so"),
        };
        multi.push(disk::py_sync(
            &sync_base, a.py_n, a.reps, a.keep, &a.python, &lib,
        )?);
    }

    if want("index_load") || want("index_get_both") || want("index_scan") {
        eprintln!("generating {} index pairs over {n_index_keys} keys...", a.n);
        let data = IndexData::new(a.n);
        let mut first_sum: Option<(Engine, workloads::ScanSum)> = None;
        for rep in 0..a.reps {
            eprintln!("index rep {}/{}", rep + 1, a.reps);
            for e in engine_order(&a.engines, rep) {
                let dir = TempDir::new(&cpu_base, e.name(), a.keep)?;
                let ix = Index::open(e, &dir.0)?;
                let d = workloads::index_load(&ix, &data)?;
                if want("index_load") {
                    ixload_s.push(e, d);
                }
                if want("index_get_both") {
                    ixget_s.push(e, workloads::index_get_both(&ix, &data)?);
                }
                if want("index_scan") {
                    let (d, sum) = workloads::index_scan(&ix, &data)?;
                    ixscan_s.push(e, d);
                    match first_sum {
                        None => first_sum = Some((e, sum)),
                        Some((e0, s0)) if s0 != sum => {
                            return Err(format!(
                                "index_scan: {} read {s0:?}, {} read {sum:?}",
                                e0.name(),
                                e.name()
                            )
                            .into())
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        if let Some((_, s)) = first_sum {
            eprintln!(
                "index_scan: every run read {} ids summing to {:#018x}",
                s.ids, s.sum
            );
        }
    }

    let all = [
        &load_s,
        &get_s,
        &scan_s,
        &file_s,
        &pread_s,
        &scan_o,
        &file_o,
        &bulk_s,
        &bulk_scan_s,
        &bulk_file_s,
        &cold_s,
        &append_s,
        &cdel_s,
        &ixload_s,
        &ixget_s,
        &ixscan_s,
    ];
    let rows: Vec<&Samples> = all.into_iter().filter(|s| want(s.name)).collect();
    let ratio = |s: &Samples| median(&s.pair_ratios());
    let ratio_cell = |s: &Samples| ratio(s).map_or("-".to_string(), |r| format!("{r:.2}"));
    let speed_cell = |s: &Samples| ratio(s).map_or("-".to_string(), |r| format!("{:.2}x", 1.0 / r));
    if rows.is_empty() {
    } else if a.markdown {
        println!("| workload | mdb per op (range) | LMDB per op (range) | ratio | mdb speed |");
        println!("|---|---:|---:|---:|---:|");
        for s in &rows {
            println!(
                "| `{}` ({}, {} ops) | {} | {} | {} | {} |",
                s.name,
                s.what,
                s.ops,
                time_range(&s.mdb),
                time_range(&s.lmdb),
                ratio_cell(s),
                speed_cell(s)
            );
        }
    } else {
        println!(
            "{:<14} {:>9} {:>28} {:>28} {:>6}   ratio of each pair (mdb/LMDB)",
            "workload", "ops", "mdb", "LMDB", "ratio"
        );
        for s in &rows {
            let per_rep: Vec<String> = s.pair_ratios().iter().map(|r| format!("{r:.2}")).collect();
            println!(
                "{:<14} {:>9} {:>28} {:>28} {:>6}   {}",
                s.name,
                s.ops,
                time_range(&s.mdb),
                time_range(&s.lmdb),
                ratio_cell(s),
                per_rep.join(" ")
            );
        }
    }
    for m in &multi {
        m.print(a.markdown);
    }
    // Issue 9 asks for a full scan within 10% of reading the file from the
    // page cache: against each way of reading it, median scan / median read.
    let vs = |scan: &Samples, file: &Samples, what: &str| {
        if !want(scan.name) || !want(file.name) {
            return;
        }
        let r = |s: &[f64], f: &[f64]| match (median(s), median(f)) {
            (Some(s), Some(f)) => format!("{:.2}x", s / f),
            _ => "-".into(),
        };
        println!();
        println!(
            "{what} (median {} / median {}): mdb {}, LMDB {}.",
            scan.name,
            file.name,
            r(&scan.mdb, &file.mdb),
            r(&scan.lmdb, &file.lmdb)
        );
    };
    vs(
        &scan_s,
        &file_s,
        "Full scan against summing the mapped data file (built by random puts: leaves in random file order)",
    );
    vs(
        &scan_s,
        &pread_s,
        "Full scan against read(2) of the data file from the page cache",
    );
    vs(
        &scan_o,
        &file_o,
        "Full scan of a compacted copy (leaves in key order) against summing that copy mapped",
    );
    vs(
        &bulk_scan_s,
        &bulk_file_s,
        "Full scan of a database loaded in one transaction against summing its file mapped",
    );
    Ok(())
}

/// Per-op seconds of every repetition, per engine.
struct Samples {
    name: &'static str,
    what: String,
    ops: usize,
    mdb: Vec<f64>,
    lmdb: Vec<f64>,
}

impl Samples {
    fn push(&mut self, e: Engine, d: Duration) {
        let per_op = d.as_secs_f64() / self.ops as f64;
        eprintln!(
            "  {:<14} {:<4}  total {:>9.3} s  {:>10}/op",
            self.name,
            e.name(),
            d.as_secs_f64(),
            fmt_time(per_op)
        );
        match e {
            Engine::Mdb => self.mdb.push(per_op),
            Engine::Lmdb => self.lmdb.push(per_op),
        }
    }
}

impl Samples {
    /// mdb/LMDB of each pair of runs.
    fn pair_ratios(&self) -> Vec<f64> {
        self.mdb
            .iter()
            .zip(&self.lmdb)
            .map(|(m, l)| m / l)
            .collect()
    }
}
