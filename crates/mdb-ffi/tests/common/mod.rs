//! Shared by the integration tests: where our library is, and a directory
//! in which it answers to the name `liblmdb.so.0`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

// Shared with mdb's tests: fail, naming the Debian package, when a tool is missing.
#[path = "../../../mdb/tests/debian/mod.rs"]
pub mod debian;

/// The cdylib cargo built for this test run (`target/<profile>/liblmdb.so`).
pub fn library() -> PathBuf {
    // The test binary is target/<profile>/deps/<name>-<hash>.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let lib = profile_dir.join("liblmdb.so");
    assert!(
        lib.exists(),
        "{} is missing: build it with `cargo build -p mdb-ffi`",
        lib.display()
    );
    // `cargo test` does not rebuild a cdylib: a stale one would test old code.
    let built = lib.metadata().and_then(|m| m.modified()).unwrap();
    let crates = crate_dir().parent().unwrap().to_path_buf();
    let mut dirs = vec![crates.join("mdb/src"), crates.join("mdb-ffi/src")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = e.path();
            if path.is_dir() {
                dirs.push(path);
            } else if e.metadata().and_then(|m| m.modified()).unwrap() > built {
                panic!(
                    "{} is older than {}: rebuild it with `cargo build -p mdb-ffi` \
                     (scripts/test.sh does)",
                    lib.display(),
                    path.display()
                );
            }
        }
    }
    lib
}

/// A fresh directory holding `liblmdb.so.0` and `liblmdb.so`, both links to
/// our library, for `-L`, `-Wl,-rpath` and `LD_LIBRARY_PATH`.
pub fn dropin() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let lib = library();
    for name in ["liblmdb.so.0", "liblmdb.so"] {
        std::os::unix::fs::symlink(&lib, d.path().join(name)).unwrap();
    }
    d
}

/// The crate's directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run `cmd`, returning its stdout; panics with both outputs on failure.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    stdout
}

/// Compile `src` with gcc. `ours`: against include/lmdb.h and the library in
/// `dropin`; otherwise against the system's lmdb.h and -llmdb.
pub fn gcc(src: &Path, out: &Path, ours: Option<&Path>) {
    debian::need("/usr/bin/gcc", "gcc");
    let mut c = Command::new("gcc");
    c.args(["-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(out)
        .arg(src);
    match ours {
        Some(dropin) => {
            c.arg("-DMDB_FFI_OURS")
                .arg("-I")
                .arg(crate_dir().join("include"))
                .arg("-L")
                .arg(dropin)
                .arg(format!("-Wl,-rpath,{}", dropin.display()));
        }
        None => {
            debian::need("/usr/include/lmdb.h", "liblmdb-dev");
        }
    }
    c.args(["-llmdb", "-lpthread"]);
    run(&mut c);
}
