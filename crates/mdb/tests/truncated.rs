//! A data file shorter than its meta page says (cut at page boundaries and
//! mid-page) gives errors, never SIGBUS: reads, writes and copies stay
//! inside the file. Runs in a child process so a signal fails the test.

mod common;

use common::{build_file, in_child, opts, walk};
use mdb::{Database, EnvFlags, Txn, WriteFlags};
use std::collections::BTreeMap;
use std::path::Path;

fn remove_lock(path: &Path) {
    let mut l = path.as_os_str().to_owned();
    l.push("-lock");
    let _ = std::fs::remove_file(l);
}

/// Open `path` read-only and writable, walk it, copy it, write to it.
/// Returns the walk's result on the read-only handle; every other result
/// is allowed to be an error, only not a signal.
fn try_everything(path: &Path, errors: &mut BTreeMap<String, usize>) -> mdb::Result<usize> {
    let mut note = |r: mdb::Result<()>| {
        if let Err(e) = r {
            *errors.entry(format!("{:?}", e.kind())).or_default() += 1;
        }
    };
    let ro = opts(EnvFlags::NO_LOCK | EnvFlags::READ_ONLY).open(path);
    let seen = ro.as_ref().map_err(|e| e.clone()).and_then(walk);
    if let Ok(env) = &ro {
        let mut out = Vec::new();
        note(env.copy_to_writer(&mut out, false));
        if !out.is_empty() {
            // What a copy holds is the file's content: checking it must not crash either.
            let _ = mdb::check::check_bytes(&out);
        }
        note(env.copy_to_writer(&mut Vec::new(), true));
    }
    drop(ro);
    remove_lock(path);
    match opts(EnvFlags::EMPTY).open(path) {
        Ok(env) => {
            note(walk(&env).map(|_| ()));
            note((|| {
                let mut w = env.write_txn()?;
                w.put(Database::MAIN, b"key0150", b"new", WriteFlags::EMPTY)?;
                w.del(Database::MAIN, b"key0001")?;
                let dups = w.open_db("dups")?;
                w.put(dups, b"many", b"m99999", WriteFlags::EMPTY)?;
                w.del_dup(dups, b"many", b"m00003")?;
                let fixed = w.open_db("fixed")?;
                w.put(fixed, b"b", &7777u32.to_be_bytes(), WriteFlags::EMPTY)?;
                w.commit()
            })());
            note(walk(&env).map(|_| ()));
        }
        Err(e) => note(Err(e)),
    }
    seen
}

#[test]
fn truncated_files_give_errors() {
    in_child("truncated_files_give_errors", || {
        let dir = tempfile::tempdir().unwrap();
        let full = dir.path().join("full");
        let ps = build_file(&full);
        let bytes = std::fs::read(&full).unwrap();
        let pages = bytes.len() / ps;
        let env = opts(EnvFlags::NO_LOCK | EnvFlags::READ_ONLY)
            .open(&full)
            .unwrap();
        let whole = walk(&env).unwrap();
        drop(env);
        let mut cuts = Vec::new();
        for p in 0..pages {
            cuts.extend([p * ps, p * ps + 100, p * ps + ps / 2, p * ps + ps - 8]);
        }
        let path = dir.path().join("cut");
        let mut errors = BTreeMap::new();
        let mut failed_walks = 0;
        for &cut in &cuts {
            eprintln!("file cut to {cut} bytes of {}", bytes.len());
            std::fs::write(&path, &bytes[..cut]).unwrap();
            match try_everything(&path, &mut errors) {
                // Pages past the cut were free: nothing is missing.
                Ok(n) => assert_eq!(n, whole, "cut at {cut}: a walk lost items silently"),
                Err(e) => {
                    failed_walks += 1;
                    *errors.entry(format!("walk: {:?}", e.kind())).or_default() += 1;
                }
            }
        }
        eprintln!("{errors:?}");
        // Nearly every cut loses pages the trees use, and says so.
        assert!(
            failed_walks * 10 >= cuts.len() * 9,
            "{failed_walks} of {}",
            cuts.len()
        );
        assert!(errors.get("walk: Corrupted").copied().unwrap_or(0) > cuts.len() / 2);
    });
}

/// Pages a snapshot reaches past the data file's length as first seen
/// (the file grew since) are read: the length is looked at again.
#[test]
fn grown_file_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let env = opts(EnvFlags::EMPTY).open(&path).unwrap();
    let other = opts(EnvFlags::EMPTY).open(&path).unwrap();
    let before = std::fs::metadata(&path).unwrap().len();
    {
        let r = env.read_txn().unwrap();
        assert_eq!(r.get(Database::MAIN, b"k00000"), Ok(None));
    }
    let mut w = other.write_txn().unwrap();
    for i in 0..5000u32 {
        w.put(
            Database::MAIN,
            format!("k{i:05}").as_bytes(),
            &[1u8; 100],
            WriteFlags::EMPTY,
        )
        .unwrap();
    }
    w.commit().unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > before * 10);
    let r = env.read_txn().unwrap();
    assert_eq!(r.stat(Database::MAIN).unwrap().entries, 5000);
    assert_eq!(r.cursor(Database::MAIN).unwrap().iter().count(), 5000);
    let mut w = env.write_txn().unwrap();
    assert_eq!(w.del(Database::MAIN, b"k04999"), Ok(true));
    w.commit().unwrap();
}
