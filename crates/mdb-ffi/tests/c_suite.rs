//! The C test suite (tests/c/api_test.c), built against our lmdb.h and
//! library and against Debian's, must pass both ways: it encodes LMDB's
//! behaviour, and our library must show the same.

mod common;

use common::*;
use std::process::Command;

/// Run the suite binary and check which liblmdb it really mapped.
fn run_suite(bin: &std::path::Path, dropin: Option<&std::path::Path>) -> String {
    let scratch = tempfile::tempdir().unwrap();
    let mut c = Command::new(bin);
    c.arg(scratch.path());
    if let Some(d) = dropin {
        c.env("LD_LIBRARY_PATH", d);
    }
    run(&mut c)
}

#[test]
fn c_suite_passes_against_debian_liblmdb() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("api_test_debian");
    gcc(&crate_dir().join("tests/c/api_test.c"), &bin, None);
    let out = run_suite(&bin, None);
    assert!(out.contains(" 0 failures"), "{out}");
    assert!(out.contains("mapped: /usr/lib/"), "{out}");
}

#[test]
fn c_suite_passes_against_our_library() {
    let dropin = dropin();
    let bin = dropin.path().join("api_test_ours");
    gcc(
        &crate_dir().join("tests/c/api_test.c"),
        &bin,
        Some(dropin.path()),
    );
    let out = run_suite(&bin, Some(dropin.path()));
    assert!(out.contains(" 0 failures"), "{out}");
    let lib = library().canonicalize().unwrap();
    assert!(
        out.contains(&format!("mapped: {}", lib.display())),
        "our library was not the one loaded:\n{out}"
    );
}

#[test]
fn exports_all_56_functions_unversioned_with_soname() {
    let lib = library();
    debian::need("/usr/bin/readelf", "binutils");
    let dynamic = run(Command::new("readelf").arg("-d").arg(&lib));
    assert!(
        dynamic.contains("Library soname: [liblmdb.so.0]"),
        "{dynamic}"
    );
    let syms = run(Command::new("readelf").args(["--dyn-syms", "-W"]).arg(&lib));
    let header = std::fs::read_to_string(crate_dir().join("include/lmdb.h")).unwrap();
    let mut declared = 0;
    for line in header.lines() {
        // Function declarations: "<type> mdb_name(" at the start of a line.
        let Some(open) = line.find('(') else { continue };
        let head = &line[..open];
        let Some(name) = head.split([' ', '*']).next_back() else {
            continue;
        };
        if !name.starts_with("mdb_") || line.starts_with('#') || line.starts_with('\t') {
            continue;
        }
        declared += 1;
        let exported = syms.lines().any(|l| {
            l.contains(" FUNC ")
                && l.contains(" GLOBAL ")
                && l.trim_end().ends_with(&format!(" {name}"))
        });
        assert!(exported, "{name} is not exported unversioned");
    }
    assert_eq!(declared, 56, "lmdb.h should declare LMDB's 56 functions");
}
