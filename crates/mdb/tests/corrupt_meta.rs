//! Meta pages whose txnids do not fit their slots (a commit writes txnid t
//! into meta page t & 1) must give a snapshot or an error, never a loop.
//! Each case runs in a child process: a hang is killed by a guard timeout
//! and fails the test.

mod common;

use common::{in_child, opts};
use mdb::{Database, Env, EnvFlags, ErrorKind, Txn, WriteFlags};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Four commits, one key each: meta 0 holds txnid 4 (4 keys), meta 1
/// txnid 3 (3 keys). Returns the page size.
fn four_commits(path: &Path) -> usize {
    let env = opts(EnvFlags::EMPTY).open(path).unwrap();
    for t in 1..=4u32 {
        let mut w = env.write_txn().unwrap();
        w.put(
            Database::MAIN,
            format!("k{t}").as_bytes(),
            b"v",
            WriteFlags::EMPTY,
        )
        .unwrap();
        w.commit().unwrap();
    }
    env.page_size()
}

fn set_meta_txnid(path: &Path, ps: usize, slot: usize, txnid: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&txnid.to_le_bytes(), (slot * ps + 144) as u64)
        .unwrap();
}

fn entries(env: &Env) -> mdb::Result<u64> {
    let r = env.read_txn()?;
    Ok(r.stat(Database::MAIN)?.entries)
}

fn remove_lock(path: &Path) {
    let mut l = path.as_os_str().to_owned();
    l.push("-lock");
    let _ = std::fs::remove_file(l);
}

/// (meta 0 txnid, meta 1 txnid, keys in the snapshot read: 4 = meta 0's
/// tree, 3 = meta 1's). A meta in its own slot wins over one that is not;
/// among those, the newer; with none in its slot, the newer of the two.
/// LMDB (with a lock file) reads the same trees in every case but the last
/// two, where it reads the other meta's tree.
const CASES: &[(u64, u64, u64)] = &[
    (4, 3, 4),
    (4, 6, 4), // meta 1 out of its slot, newer
    (5, 3, 3), // meta 0 out of its slot, newer
    (2, 3, 3),
    (4, 4, 4),
    (5, 5, 3),
    (0, 0, 4),
    (u64::MAX, 3, 3),
    (3, 2, 4), // both out of their slots
    (1, 4, 3),
];

#[test]
fn mismatched_meta_txnids_give_a_snapshot() {
    in_child("mismatched_meta_txnids_give_a_snapshot", || {
        for &(t0, t1, want) in CASES {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db");
            let ps = four_commits(&path);
            set_meta_txnid(&path, ps, 0, t0);
            set_meta_txnid(&path, ps, 1, t1);
            remove_lock(&path);
            eprintln!("metas {t0} {t1}");
            // Without a lock file: the same choice.
            let ro = opts(EnvFlags::NO_LOCK | EnvFlags::READ_ONLY)
                .open(&path)
                .unwrap();
            assert_eq!(entries(&ro), Ok(want), "NO_LOCK, metas {t0} {t1}");
            drop(ro);

            let env = opts(EnvFlags::EMPTY).open(&path).unwrap();
            assert_eq!(entries(&env), Ok(want), "metas {t0} {t1}");
            assert_eq!(env.stat().unwrap().entries, want);
            let mut r = env.read_txn().unwrap();
            let id = r.id();
            r.reset();
            r.renew().unwrap();
            assert_eq!(r.id(), id);
            assert_eq!(r.stat(Database::MAIN).unwrap().entries, want);
            drop(r);
            // A writer continues from that snapshot; the next snapshot is its.
            let mut w = env.write_txn().unwrap();
            assert_eq!(w.stat(Database::MAIN).unwrap().entries, want);
            w.put(Database::MAIN, b"new", b"v", WriteFlags::EMPTY)
                .unwrap();
            w.commit().unwrap();
            assert_eq!(
                entries(&env),
                Ok(want + 1),
                "after a commit, metas {t0} {t1}"
            );
            drop(env);
            remove_lock(&path);
            let env = opts(EnvFlags::EMPTY).open(&path).unwrap();
            assert_eq!(entries(&env), Ok(want + 1), "reopened, metas {t0} {t1}");
            assert_eq!(common::walk(&env).map(|_| ()), Ok(()));
        }
    });
}

/// The lock file's txnid names no meta page (the data file was changed
/// behind the lock file's back): readers decide from the meta pages, the
/// next commit makes both agree again.
#[test]
fn lock_txnid_matching_no_meta() {
    in_child("lock_txnid_matching_no_meta", || {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let ps = four_commits(&path);
        let env = opts(EnvFlags::EMPTY).open(&path).unwrap();
        let mut r = env.read_txn().unwrap();
        assert_eq!(r.id(), 4);
        r.reset();
        // Lock file says 4; the metas now say 8 (meta 0) and 3 (meta 1).
        set_meta_txnid(&path, ps, 0, 8);
        r.renew().unwrap();
        assert_eq!(r.id(), 8);
        assert_eq!(r.stat(Database::MAIN).unwrap().entries, 4);
        drop(r);
        assert_eq!(entries(&env), Ok(4));
        assert_eq!(env.info().unwrap().last_txnid, 8);
        // Neither meta is in its slot: still a snapshot, of the newer one.
        set_meta_txnid(&path, ps, 0, 9);
        set_meta_txnid(&path, ps, 1, 6);
        assert_eq!(entries(&env), Ok(4));
        let mut w = env.write_txn().unwrap();
        w.put(Database::MAIN, b"new", b"v", WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
        // Txnid 11, not 10: meta 0 holds the base, the new meta goes to meta 1.
        let r = env.read_txn().unwrap();
        assert_eq!(r.id(), 11);
        assert_eq!(r.stat(Database::MAIN).unwrap().entries, 5);
    });
}

/// A meta page that is not a meta page (bad magic) makes open fail, as in
/// LMDB. After open, only the part a commit rewrites is read again: a meta
/// whose fields there are implausible is skipped, and the next commit
/// rewrites it.
#[test]
fn garbage_meta() {
    in_child("garbage_meta", || {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let ps = four_commits(&path);
        let env = opts(EnvFlags::EMPTY).open(&path).unwrap();
        assert_eq!(entries(&env), Ok(4));
        // Page size 0 in meta 0 (the current one), under the open environment.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(&[0u8; 4], 40).unwrap();
        assert_eq!(entries(&env), Ok(3));
        let mut w = env.write_txn().unwrap();
        w.put(Database::MAIN, b"new", b"v", WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        assert_eq!((r.id(), r.stat(Database::MAIN).unwrap().entries), (4, 4));
        drop(r);
        drop(env);
        remove_lock(&path);
        assert_eq!(entries(&opts(EnvFlags::EMPTY).open(&path).unwrap()), Ok(4));
        // Not a meta page: open fails, whichever meta it is.
        f.write_all_at(&[0u8; 4], ps as u64 + 16).unwrap();
        assert_eq!(
            opts(EnvFlags::EMPTY).open(&path).err().map(|e| e.kind()),
            Some(ErrorKind::Invalid)
        );
        f.write_all_at(&[0u8; 4], 16).unwrap();
        assert_eq!(
            opts(EnvFlags::EMPTY).open(&path).err().map(|e| e.kind()),
            Some(ErrorKind::Invalid)
        );
    });
}

/// A current meta whose last_pgno became absurd after open: errors (the
/// map cannot hold it), no overflow panic, also when adopting its size.
#[test]
fn absurd_last_pgno_after_open() {
    in_child("absurd_last_pgno_after_open", || {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        four_commits(&path);
        let env = opts(EnvFlags::EMPTY).open(&path).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(&(u64::MAX - 3).to_le_bytes(), 136).unwrap();
        assert_eq!(
            env.read_txn().err().map(|e| e.kind()),
            Some(ErrorKind::MapResized)
        );
        assert_eq!(
            env.write_txn().err().map(|e| e.kind()),
            Some(ErrorKind::MapResized)
        );
        assert_eq!(
            env.set_map_size(0).map_err(|e| e.kind()),
            Err(ErrorKind::Os(libc::ENOMEM))
        );
    });
}
