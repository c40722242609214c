//! Link the system LMDB (Debian's `liblmdb-dev`) into the benchmark binary,
//! and build the callgrind client-request shim of `mdb-bench instr`.
//!
//! `MDB_BENCH_LMDB_STATIC=1` links `liblmdb.a` instead: same code, but its
//! static functions keep their symbols, so profiles of LMDB are readable.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=c/callgrind_shim.c");
    println!("cargo:rerun-if-env-changed=MDB_BENCH_LMDB_STATIC");
    // Without valgrind's headers the shim is built as no-ops, so the
    // wall-clock benchmark still builds; `instr` then says what is missing.
    let shim = || {
        let mut b = cc::Build::new();
        b.file("c/callgrind_shim.c")
            .opt_level(2)
            .cargo_warnings(false);
        b
    };
    if shim().try_compile("mdb_bench_cg").is_err() {
        shim()
            .define("MDB_BENCH_NO_CALLGRIND", None)
            .compile("mdb_bench_cg");
    }
    if std::env::var_os("MDB_BENCH_LMDB_STATIC").is_some_and(|v| !v.is_empty() && v != "0") {
        println!("cargo:rustc-link-lib=static=lmdb");
    } else {
        println!("cargo:rustc-link-lib=lmdb");
    }
}
