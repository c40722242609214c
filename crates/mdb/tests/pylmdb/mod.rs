//! py-lmdb 3.0.0's offline verifier (`lmdb/verify.py` of its sdist, pure
//! Python) as a second judge of the files our tests write: it also holds
//! free records to LMDB's exact layout (value size `8 * (count + 1)`,
//! overflow runs of exactly the pages their value needs) and requires the
//! free and live pages to cover the file. `scripts/pylmdb-sdist.sh`
//! fetches the sdist once into `target/`; a test fails (never skips) when
//! it cannot.
//!
//! Shared by the test crates of mdb and mdb-ffi (`#[path]`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The unpacked sdist (fetched on first use).
pub fn sdist() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(root.join("scripts/pylmdb-sdist.sh"))
        .output()
        .expect("cannot run scripts/pylmdb-sdist.sh");
    assert!(
        out.status.success(),
        "scripts/pylmdb-sdist.sh failed (it needs python3 with pip and the network once):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// The verifier's problems with the environment (or data file) at each of
/// `paths`, one list per path.
pub fn problems(paths: &[&Path]) -> Vec<Vec<String>> {
    let verify = sdist().join("lmdb/verify.py");
    // Loaded by path: importing the `lmdb` package would need its C part.
    const SCRIPT: &str = r#"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("verify", sys.argv[1])
v = importlib.util.module_from_spec(spec)
spec.loader.exec_module(v)
for p in sys.argv[2:]:
    print("\x1e" + "\x1f".join(v.verify(p)))
"#;
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(&verify)
        .args(paths)
        .output()
        .expect("cannot run /usr/bin/python3");
    assert!(
        out.status.success(),
        "verify.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lists: Vec<Vec<String>> = text
        .split('\x1e')
        .skip(1)
        .map(|s| {
            s.trim_end_matches('\n')
                .split('\x1f')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect();
    assert_eq!(lists.len(), paths.len(), "{text}");
    lists
}

/// Panics with the verifier's findings unless the file at `path` is clean.
pub fn assert_clean(path: &Path) {
    let p = problems(&[path]).remove(0);
    assert!(
        p.is_empty(),
        "py-lmdb's verifier on {}: {p:#?}",
        path.display()
    );
}
