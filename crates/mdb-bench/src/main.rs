//! `mdb-bench`: time our engine against LMDB 0.9 (C), linked into the same
//! process, on identical data. Every workload runs on both engines, R times,
//! alternating which engine goes first; the report is the median time per
//! operation of each and the ratio mdb/LMDB (> 1 means we are slower).

mod common;
mod disk;
mod instr;
mod lmdb;
mod lmdb_sys;
#[cfg(feature = "matrix")]
mod matrix;
mod phases;
#[cfg(feature = "rocksdb")]
mod rocks;
mod suite;
mod walbatch;
mod walsize;
mod workloads;

use std::path::Path;

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match argv.first().map(String::as_str) {
        Some("instr") => std::process::exit(instr::main(&argv[1..])),
        Some("wal-batch") => std::process::exit(walbatch::main(&argv[1..])),
        Some("wal-size") => std::process::exit(walsize::main(&argv[1..])),
        #[cfg(feature = "matrix")]
        Some("matrix") => std::process::exit(matrix::main(&argv[1..])),
        #[cfg(not(feature = "matrix"))]
        Some("matrix") => {
            eprintln!("mdb-bench matrix: build with --features matrix (and rocksdb for RocksDB)");
            std::process::exit(2);
        }
        // The Rust API driver that `instr` runs under callgrind.
        Some("__phases") => {
            let r = match &argv[1..] {
                [dir, n] => n
                    .parse()
                    .map_err(|e| format!("N: {e}").into())
                    .and_then(|n| phases::run(Path::new(dir), n)),
                _ => Err("usage: mdb-bench __phases DIR N".into()),
            };
            if let Err(e) = r {
                eprintln!("mdb-bench __phases: {e}");
                std::process::exit(1);
            }
            return;
        }
        _ => {}
    }
    let args = match suite::parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mdb-bench: {e}\n{}", suite::USAGE);
            std::process::exit(2);
        }
    };
    if let Err(e) = suite::run(&args) {
        eprintln!("mdb-bench: {e}");
        std::process::exit(1);
    }
}
