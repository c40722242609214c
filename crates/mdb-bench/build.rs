//! Link the system LMDB (Debian's `liblmdb-dev`) into the benchmark binary.
//!
//! `MDB_BENCH_LMDB_STATIC=1` links `liblmdb.a` instead: same code, but its
//! static functions keep their symbols, so profiles of LMDB are readable.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MDB_BENCH_LMDB_STATIC");
    if std::env::var_os("MDB_BENCH_LMDB_STATIC").is_some_and(|v| !v.is_empty() && v != "0") {
        println!("cargo:rustc-link-lib=static=lmdb");
    } else {
        println!("cargo:rustc-link-lib=lmdb");
    }
}
