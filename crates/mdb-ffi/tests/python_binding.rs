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

/// `MDB_AUTOGROW=1` gives an unchanged python3-lmdb program a map that
/// grows by itself: into an environment Debian's LMDB created with a 1 MiB
/// map, a writer loads 2 GiB (python3-lmdb's default map is 10 MiB) while
/// a reader process reads throughout; Debian's `mdb_stat` then opens the
/// file at the size it records.
#[test]
fn py_lmdb_map_grows_with_mdb_autogrow() {
    debian::python3_lmdb();
    let dropin = dropin();
    let scratch = tempfile::tempdir().unwrap(); // on disk, not /dev/shm
    let script = crate_dir().join("tests/python/py_autogrow.py");
    let d = scratch.path().to_str().unwrap();
    let py = |args: &[&str], ours: bool, grow: bool| {
        let mut c = Command::new("/usr/bin/python3");
        c.arg(&script).args(args);
        if ours {
            c.env("LD_LIBRARY_PATH", dropin.path());
        }
        if grow {
            c.env("MDB_AUTOGROW", "1");
        } else {
            c.env_remove("MDB_AUTOGROW");
        }
        c
    };
    // Debian's LMDB creates it; a 1 MiB map refuses 2 MiB.
    assert!(run(&mut py(&["create", d], false, false)).contains("create ok"));
    // Without the variable our library keeps LMDB's fixed map.
    let out = py(&["write", d, "1"], true, false).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("MapFullError"));

    let log = scratch.path().join("reader.log");
    let mut reader = py(&["read", d, "128"], true, true)
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(scratch.path().join("reader.err")).unwrap())
        .spawn()
        .unwrap();
    while !scratch.path().join("reader-ready").exists() {
        if let Some(s) = reader.try_wait().unwrap() {
            panic!(
                "reader ended early ({s}): {}",
                std::fs::read_to_string(scratch.path().join("reader.err")).unwrap()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let w = run(&mut py(&["write", d, "128"], true, true));
    assert!(w.contains("write ok"), "{w}");
    std::fs::write(scratch.path().join("writer-done"), "").unwrap();
    let status = reader.wait().unwrap();
    let out = std::fs::read_to_string(&log).unwrap();
    let err = std::fs::read_to_string(scratch.path().join("reader.err")).unwrap();
    assert!(
        status.success() && out.starts_with("read ok"),
        "{out}\n{err}"
    );

    let stat = run(Command::new("/usr/bin/mdb_stat").args(["-e", d]));
    let map: u64 = stat
        .lines()
        .find_map(|l| l.trim().strip_prefix("Map size: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(map >= 2 << 30, "{stat}");
    assert!(stat.contains("Entries: 32768"), "{stat}");
}
