//! `mdb-bench instr` keeps working: at a tiny size, every phase yields a
//! positive instruction count for every engine. No assertion on ratios:
//! those are what the mode measures, not what it must produce.
//!
//! Needs valgrind, gcc, Debian's liblmdb-dev (scripts/setup.sh installs
//! them) and our debug cdylib (`cargo build -p mdb-ffi`, as scripts/test.sh
//! does first); without them the test fails.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Each phase and its operation count at N = 2000.
const PHASES: [(&str, f64); 12] = [
    ("put_random", 2000.0),
    ("put_append", 2000.0),
    ("get", 2000.0),
    ("scan", 2000.0),
    ("range_10", 200.0),
    ("read_txn", 200.0),
    ("large_get", 20.0),
    ("dupsort_put", 2000.0),
    ("dupsort_walk", 2000.0),
    ("delete", 2000.0),
    ("cursor_delete", 2000.0),
    ("first_delete", 2000.0),
];
fn instr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mdb-bench"))
        .arg("instr")
        .args(args)
        .output()
        .expect("cannot run mdb-bench")
}

/// Our cdylib of this build profile (target/<profile>/liblmdb.so).
fn our_lib() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_mdb-bench"));
    let lib = exe.parent().unwrap().join("liblmdb.so");
    assert!(
        lib.is_file(),
        "{} is missing: build it with `cargo build -p mdb-ffi`",
        lib.display()
    );
    lib
}

#[test]
fn every_phase_counts_instructions_on_every_engine() {
    let lib = our_lib();
    let out = instr(&["--n", "2000", "--lib", lib.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "mdb-bench instr failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    for (phase, want_ops) in PHASES {
        let row: Vec<&str> = stdout
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.first() == Some(&phase))
            .unwrap_or_else(|| panic!("no row for {phase}:\n{stdout}"));
        // phase, ops, LMDB C, mdb C, ratio, mdb Rust, ratio
        assert_eq!(row.len(), 7, "{row:?}");
        assert_eq!(row[1].parse::<f64>().unwrap(), want_ops, "{row:?}");
        for col in [2, 3, 5] {
            let ir: f64 = row[col].parse().unwrap();
            assert!(ir > 0.0, "{phase}: column {col} is {ir}:\n{stdout}");
        }
    }
}

#[test]
fn a_missing_cdylib_is_named_with_the_command_that_builds_it() {
    let out = instr(&["--n", "2000", "--lib", "/nonexistent/liblmdb.so"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("/nonexistent/liblmdb.so")
            && stderr.contains("cargo build --release -p mdb-ffi"),
        "{stderr}"
    );
}
