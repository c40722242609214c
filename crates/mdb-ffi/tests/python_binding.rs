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

/// `MDB_WAL=1` puts an unchanged python3-lmdb program in WAL mode: its
/// commits go through the log, a process that exits without closing loses
/// nothing, and Debian's `mdb_dump` reads the data file after a clean close.
#[test]
fn py_lmdb_gains_wal_mode_from_the_environment() {
    debian::python3_lmdb();
    let dropin = dropin();
    let scratch = tempfile::tempdir().unwrap();
    let script = crate_dir().join("tests/python/py_wal.py");
    let py = |args: &[&str]| {
        let mut c = Command::new("/usr/bin/python3");
        c.arg(&script)
            .args(args)
            .env("LD_LIBRARY_PATH", dropin.path())
            .env("MDB_WAL", "1");
        run(&mut c)
    };
    let d = scratch.path().to_str().unwrap();
    py(&["write", d, "300"]);
    assert!(scratch.path().join("wal").is_dir());
    assert!(py(&["read", d, "300"]).contains("read ok"));
    let dump = run(Command::new("mdb_dump").args(["-p", d]));
    assert_eq!(dump.matches(" key0").count(), 300, "{dump}");
    let ext = tempfile::tempdir().unwrap();
    let lib = library().canonicalize().unwrap();
    let out = py(&["ext", ext.path().to_str().unwrap(), lib.to_str().unwrap()]);
    assert!(out.contains("ext ok"), "{out}");
}
