//! Debian's LMDB_File (liblmdb-file-perl) runs a smaller script on our
//! library, checking from /proc/self/maps that ours was loaded; the same
//! script passes on Debian's liblmdb.

mod common;

use common::*;
use std::process::Command;

fn run_script(dropin: Option<&std::path::Path>) -> String {
    debian::perl_lmdb_file();
    let scratch = tempfile::tempdir().unwrap();
    let mut c = Command::new("/usr/bin/perl");
    c.arg(crate_dir().join("tests/perl/lmdb_file_test.pl"))
        .arg(scratch.path());
    if let Some(d) = dropin {
        c.env("LD_LIBRARY_PATH", d)
            .env("EXPECT_LIB", library().canonicalize().unwrap());
    }
    run(&mut c)
}

#[test]
fn lmdb_file_on_our_library() {
    let dropin = dropin();
    let out = run_script(Some(dropin.path()));
    assert!(out.contains("checks passed"), "{out}");
}

#[test]
fn lmdb_file_script_passes_on_debian_liblmdb() {
    let out = run_script(None);
    assert!(out.contains("checks passed"), "{out}");
}
