//! Debian's python3-lmdb runs a script covering its surface on our library
//! (LD_LIBRARY_PATH), checking from /proc/self/maps that ours was loaded;
//! the same script passes on Debian's liblmdb.

mod common;

use common::*;
use std::process::Command;

fn run_script(dropin: Option<&std::path::Path>) -> String {
    debian::python3_lmdb();
    let scratch = tempfile::tempdir().unwrap();
    let mut c = Command::new("/usr/bin/python3");
    c.arg(crate_dir().join("tests/python/py_lmdb_test.py"))
        .arg(scratch.path());
    if let Some(d) = dropin {
        c.env("LD_LIBRARY_PATH", d)
            .env("EXPECT_LIB", library().canonicalize().unwrap());
    }
    run(&mut c)
}

#[test]
fn py_lmdb_on_our_library() {
    let dropin = dropin();
    let out = run_script(Some(dropin.path()));
    assert!(out.contains("checks passed"), "{out}");
}

#[test]
fn py_lmdb_script_passes_on_debian_liblmdb() {
    let out = run_script(None);
    assert!(out.contains("checks passed"), "{out}");
}
