//! The matrix's outputs: `matrix.json` (every sample, with the machine and
//! the command), `matrix.md` (medians, ratios to LMDB, spreads) and the
//! charts.

use super::{chart, Config, Eng, Metric, Results, Stat};
use crate::workloads::Res;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// CPU, cores, memory, kernel, and the file system the stores were on.
pub fn machine(cfg: &Config) -> Value {
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    let mem_kb: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0);
    let dir = std::fs::canonicalize(&cfg.dir).unwrap_or_else(|_| cfg.dir.clone());
    let mut fs = String::new();
    let mut best = 0;
    for l in read("/proc/mounts").lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 3 && dir.starts_with(f[1]) && f[1].len() >= best {
            best = f[1].len();
            fs = format!("{} on {} ({})", f[2], f[1], f[0]);
        }
    }
    json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "memory_gib": (mem_kb as f64 / 1048576.0 * 10.0).round() / 10.0,
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "store_dir": dir.display().to_string(),
        "file_system": fs,
    })
}

fn stat_json(s: Stat, v: &[f64]) -> Value {
    json!({"median": s.median, "min": s.min, "max": s.max, "samples": v})
}

fn to_json(cfg: &Config, r: &Results, argv: &[String]) -> Value {
    let mut engines = Map::new();
    for &e in &r.engines {
        let Some(s) = r.samples.get(&e) else { continue };
        let mut metrics = Map::new();
        for m in Metric::ALL {
            if let Some(v) = s.m.get(&m) {
                if let Some(st) = Stat::of(v) {
                    let mut o = stat_json(st, v);
                    o["unit"] = json!(m.unit());
                    if let Some(x) = r.vs_lmdb(e, m) {
                        o["vs_lmdb"] = json!(x);
                    }
                    metrics.insert(m.key().into(), o);
                }
            }
        }
        let mut scale = Map::new();
        for (n, v) in &s.scale {
            if let Some(st) = Stat::of(v) {
                scale.insert(n.to_string(), stat_json(st, v));
            }
        }
        engines.insert(
            e.slug().into(),
            json!({"name": e.name(), "version": e.version(), "metrics": metrics,
                   "load_random_ns_per_key_by_n": scale}),
        );
    }
    json!({
        "command": format!("mdb-bench matrix {}", argv.join(" ")),
        "machine": machine(cfg),
        "config": {
            "n": cfg.n, "reps": cfg.reps, "batch_n": cfg.batch_n, "single_n": cfg.single_n,
            "large_n": cfg.large_n, "large_len": cfg.large_len, "key_len": 16,
            "val_len": cfg.val_len, "scale": cfg.scale, "cache_bytes": cfg.cache,
        },
        "engines": engines,
    })
}

/// A figure with its unit, readably.
pub fn human(m: Metric, v: f64) -> String {
    if m.is_size() {
        return if v >= 1e9 {
            format!("{:.2} GB", v / 1e9)
        } else if v >= 1e6 {
            format!("{:.1} MB", v / 1e6)
        } else {
            format!("{:.0} kB", v / 1e3)
        };
    }
    let per = m
        .unit()
        .split('/')
        .nth(1)
        .map(|p| format!("/{p}"))
        .unwrap_or_default();
    let t = if v >= 1e9 {
        format!("{:.2} s", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} ms", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1} µs", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.2} µs", v / 1e3)
    } else {
        format!("{v:.0} ns")
    };
    format!("{t}{per}")
}

/// A table's header row (a column per engine) and its alignment row.
fn table_head(s: &mut String, first: &str, align: &str, engines: &[Eng]) {
    let _ = write!(s, "| {first} |");
    for e in engines {
        let _ = write!(s, " {} |", e.name());
    }
    let _ = write!(s, "\n|{align}|");
    for _ in engines {
        s.push_str("---:|");
    }
    s.push('\n');
}

fn to_markdown(cfg: &Config, r: &Results, machine: &Value, argv: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Command: `mdb-bench matrix {}`  ", argv.join(" "));
    let _ = writeln!(
        s,
        "Machine: {}, {} cores, {} GiB, Linux {}; stores on {}  ",
        machine["cpu"].as_str().unwrap_or(""),
        machine["cores"],
        machine["memory_gib"],
        machine["kernel"].as_str().unwrap_or(""),
        machine["file_system"].as_str().unwrap_or("")
    );
    let _ = writeln!(
        s,
        "N = {} keys of 16 B with {} B values; {} repetitions, engines interleaved; \
         median of the repetitions, and in brackets the engine's speed as a multiple of \
         LMDB's (> 1: faster) or, for sizes, its size as a multiple of LMDB's.\n",
        cfg.n, cfg.val_len, cfg.reps
    );
    table_head(&mut s, "workload", "---", &r.engines);
    for m in Metric::ALL {
        if r.engines.iter().all(|&e| r.median(e, m).is_none()) {
            continue;
        }
        let _ = write!(s, "| {} |", m.key());
        for &e in &r.engines {
            match r.median(e, m) {
                Some(st) => {
                    let x = r
                        .vs_lmdb(e, m)
                        .filter(|_| e != Eng::Lmdb)
                        .map(|x| format!(" ({x:.2}x)"))
                        .unwrap_or_default();
                    let _ = write!(s, " {}{} |", human(m, st.median), x);
                }
                None => s.push_str(" n/a |"),
            }
        }
        s.push('\n');
    }
    let _ = writeln!(s, "\nSpread, (max - min) / median of the repetitions:\n");
    table_head(&mut s, "workload", "---", &r.engines);
    for m in Metric::ALL.iter().filter(|m| !m.is_size()) {
        if r.engines.iter().all(|&e| r.median(e, *m).is_none()) {
            continue;
        }
        let _ = write!(s, "| {} |", m.key());
        for &e in &r.engines {
            match r.median(e, *m) {
                Some(st) if st.median > 0.0 => {
                    let _ = write!(s, " {:.0}% |", (st.max - st.min) / st.median * 100.0);
                }
                _ => s.push_str(" n/a |"),
            }
        }
        s.push('\n');
    }
    let _ = writeln!(s, "\nRandom load, ns per key by number of keys:\n");
    table_head(&mut s, "keys", "---:", &r.engines);
    let mut sizes: Vec<usize> = cfg.scale.clone();
    sizes.push(cfg.n);
    for n in sizes {
        let _ = write!(s, "| {n} |");
        for &e in &r.engines {
            match r
                .samples
                .get(&e)
                .and_then(|x| x.scale.get(&n))
                .and_then(|v| Stat::of(v))
            {
                Some(st) => {
                    let _ = write!(s, " {:.0} |", st.median);
                }
                None => s.push_str(" n/a |"),
            }
        }
        s.push('\n');
    }
    let _ = writeln!(s, "\nVersions:");
    for &e in &r.engines {
        let _ = writeln!(s, "- {}: {}", e.name(), e.version());
    }
    s
}

/// Write matrix.json, matrix.md and the charts into `cfg.out`, and the
/// table on stdout.
pub fn write(cfg: &Config, r: &Results, argv: &[String]) -> Res<()> {
    std::fs::create_dir_all(&cfg.out)?;
    let j = to_json(cfg, r, argv);
    std::fs::write(
        cfg.out.join("matrix.json"),
        serde_json::to_string_pretty(&j)? + "\n",
    )?;
    let md = to_markdown(cfg, r, &j["machine"], argv);
    std::fs::write(cfg.out.join("matrix.md"), &md)?;
    chart::write_all(cfg, r)?;
    println!("{md}");
    eprintln!(
        "matrix: wrote matrix.json, matrix.md and {} under {}",
        chart::FILES.join(", "),
        cfg.out.display()
    );
    Ok(())
}
