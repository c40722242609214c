//! Debian's LMDB (tools, library, bindings) is the oracle of the interop
//! tests. A test that needs a piece of it and does not find it fails, naming
//! the package to install: a skip would let CI pass without the comparison.
//! `scripts/setup.sh` installs them all.
//!
//! Shared by the test crates of mdb, mdb-cli and mdb-ffi (`#[path]`); each
//! uses a part.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};

fn missing(what: &str, package: &str) -> ! {
    panic!(
        "{what} is missing: this test needs Debian's {package} \
         (apt-get install {package}, or run scripts/setup.sh)"
    )
}

/// Fails unless `path` exists; `package` is the Debian package that ships it.
pub fn need(path: &str, package: &str) {
    if !Path::new(path).exists() {
        missing(path, package);
    }
}

/// mdb_copy, mdb_dump, mdb_load and mdb_stat (LMDB 0.9.24).
pub fn lmdb_utils() {
    for tool in ["mdb_copy", "mdb_dump", "mdb_load", "mdb_stat"] {
        need(&format!("/usr/bin/{tool}"), "lmdb-utils");
    }
}

/// The system python with its `lmdb` module (Debian's, on Debian's liblmdb).
pub fn python3_lmdb() {
    need("/usr/bin/python3", "python3");
    if !succeeds(Command::new("/usr/bin/python3").args(["-c", "import lmdb"])) {
        missing("python module lmdb", "python3-lmdb");
    }
}

/// The system python with pytest, setuptools and the headers to build a C
/// extension against liblmdb (py-lmdb's sdist suite).
pub fn python3_pytest() {
    python3_lmdb();
    need("/usr/include/lmdb.h", "liblmdb-dev");
    for (check, package) in [
        ("import pytest", "python3-pytest"),
        ("import setuptools", "python3-setuptools"),
        ("import pip", "python3-pip"),
        (
            "import os, sysconfig; \
             assert os.path.exists(sysconfig.get_paths()['include'] + '/Python.h')",
            "python3-dev",
        ),
    ] {
        if !succeeds(Command::new("/usr/bin/python3").args(["-c", check])) {
            missing(&format!("python3 -c \"{check}\""), package);
        }
    }
}

/// Perl with LMDB_File.
pub fn perl_lmdb_file() {
    need("/usr/bin/perl", "perl");
    if !succeeds(Command::new("/usr/bin/perl").args(["-MLMDB_File", "-e", "1"])) {
        missing("perl module LMDB_File", "liblmdb-file-perl");
    }
}

fn succeeds(c: &mut Command) -> bool {
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
