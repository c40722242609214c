//! `mdb-bench matrix` keeps working: at a tiny size every engine built in
//! runs every workload, reads back what it wrote (the matrix checks that
//! itself and fails otherwise), and the run leaves its JSON, its markdown
//! table and three PNG charts. Times are what it measures, never what this
//! test asserts.
#![cfg(feature = "matrix")]

use std::path::Path;
use std::process::Command;

const ENGINES: [&str; 8] = [
    "lmdb", "mdb", "mdb-wal", "redb", "rocksdb", "sqlite", "fjall", "sled",
];

const TIMES: [&str; 13] = [
    "load_random",
    "load_sorted",
    "single_put",
    "batch_write",
    "overwrite",
    "get",
    "get_2t",
    "range_10",
    "scan",
    "mixed",
    "remove",
    "large_put",
    "large_get",
];

fn is_png(p: &Path) -> bool {
    let b = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    b.len() > 10_000 && b.starts_with(b"\x89PNG\r\n\x1a\n")
}

#[test]
fn every_engine_runs_every_workload_and_the_outputs_are_written() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("matrix-test");
    let _ = std::fs::remove_dir_all(&base);
    let (data, out) = (base.join("data"), base.join("out"));
    let run = Command::new(env!("CARGO_BIN_EXE_mdb-bench"))
        .args(["matrix", "--n", "3000", "--reps", "2", "--single-n", "10"])
        .args(["--large-n", "12", "--cache", "16777216", "--dir"])
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("cannot run mdb-bench");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "mdb-bench matrix failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(!data.exists(), "the stores are removed after the run");

    let expected: Vec<&str> = ENGINES
        .iter()
        .copied()
        .filter(|&e| e != "rocksdb" || cfg!(feature = "rocksdb"))
        .collect();
    let text = std::fs::read_to_string(out.join("matrix.json")).unwrap();
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(j["config"]["n"], 3000);
    assert!(j["machine"]["cores"].as_u64().unwrap() >= 1);
    let engines = j["engines"].as_object().unwrap();
    assert_eq!(engines.len(), expected.len(), "{:?}", engines.keys());
    for e in &expected {
        let m = &engines[*e]["metrics"];
        for t in TIMES {
            let s = &m[t];
            assert_eq!(
                s["samples"].as_array().map(Vec::len),
                Some(2),
                "{e} {t}: {s}"
            );
            assert!(s["median"].as_f64().unwrap() > 0.0, "{e} {t}: {s}");
            if *e != "lmdb" {
                assert!(s["vs_lmdb"].as_f64().unwrap() > 0.0, "{e} {t}: {s}");
            }
        }
        for size in ["size_loaded", "size_removed"] {
            assert!(m[size]["median"].as_f64().unwrap() > 0.0, "{e} {size}");
        }
        // sled alone has no compaction.
        assert_eq!(m["size_compacted"].is_object(), *e != "sled", "{e}");
        let scale = engines[*e]["load_random_ns_per_key_by_n"]
            .as_object()
            .unwrap();
        let ns: Vec<&str> = scale.keys().map(String::as_str).collect();
        assert_eq!(ns.len(), 3, "{e}: {ns:?}");
        for n in ["30", "300", "3000"] {
            assert!(scale.contains_key(n), "{e}: {ns:?}");
        }
    }

    let md = std::fs::read_to_string(out.join("matrix.md")).unwrap();
    assert_eq!(md, stdout.trim_end_matches('\n').to_string() + "\n");
    for t in TIMES {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {t} |")))
            .unwrap_or_else(|| panic!("no row {t}:\n{md}"));
        assert_eq!(row.matches('|').count(), expected.len() + 2, "{row}");
        assert!(!row.contains("n/a"), "{row}");
    }
    for png in ["matrix-speed.png", "matrix-size.png", "matrix-scale.png"] {
        assert!(is_png(&out.join(png)), "{png}");
    }
}

#[path = "../../mdb/tests/pylmdb/mod.rs"]
mod pylmdb;

/// Every LMDB file the matrix's workloads leave (loads, overwrites,
/// removals, compacted copies, 100 KB values, in default and WAL mode; and
/// LMDB's own, as a control) passes py-lmdb 3.0.0's structural verifier.
#[test]
fn the_files_the_matrix_writes_pass_py_lmdbs_verifier() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("matrix-verify");
    let _ = std::fs::remove_dir_all(&base);
    let (data, out) = (base.join("data"), base.join("out"));
    let run = Command::new(env!("CARGO_BIN_EXE_mdb-bench"))
        .args(["matrix", "--n", "3000", "--reps", "1", "--single-n", "10"])
        .args(["--large-n", "12", "--engines", "lmdb,mdb,mdb-wal", "--keep"])
        .arg("--dir")
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("cannot run mdb-bench");
    assert!(
        run.status.success(),
        "mdb-bench matrix failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut envs = Vec::new();
    for engine in std::fs::read_dir(&data).unwrap() {
        for store in std::fs::read_dir(engine.unwrap().path()).unwrap() {
            let store = store.unwrap().path();
            if store.join("data.mdb").is_file() {
                envs.push(store);
            }
        }
    }
    // lmdb, mdb and mdb-wal: main, compacted, sorted, large and two scales.
    assert!(envs.len() >= 15, "{envs:?}");
    let paths: Vec<&Path> = envs.iter().map(|p| p.as_path()).collect();
    for (p, problems) in paths.iter().zip(pylmdb::problems(&paths)) {
        assert!(problems.is_empty(), "{}: {problems:#?}", p.display());
    }
    std::fs::remove_dir_all(&base).unwrap();
}
