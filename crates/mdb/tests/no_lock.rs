//! NO_LOCK cannot make safe code read reused pages: the safe opener refuses
//! it, and through the unsafe one the readers of this process are still
//! tracked, so the writer never reuses a page a live reader can see.

use mdb::{Database, EnvFlags, EnvOptions, ErrorKind, Txn, WriteFlags};

/// The safe-code proof of the unsoundness: a value borrowed from a read
/// transaction changed while the borrow was alive.
#[test]
fn safe_code_cannot_open_no_lock() {
    let dir = tempfile::tempdir().unwrap();
    let r = EnvOptions::new().flags(EnvFlags::NO_LOCK).open(dir.path());
    assert_eq!(
        r.err().map(|e| e.kind()),
        Some(ErrorKind::Misuse(mdb::Misuse::BadEnvFlags))
    );
    let r = EnvOptions::new()
        .flags(EnvFlags::NO_LOCK | EnvFlags::READ_ONLY)
        .open(dir.path());
    assert_eq!(
        r.err().map(|e| e.kind()),
        Some(ErrorKind::Misuse(mdb::Misuse::BadEnvFlags))
    );
}

#[test]
fn no_lock_writer_keeps_pages_of_live_readers() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = EnvOptions::new();
    // SAFETY: the directory is private to this test: no other process
    // and no other Env uses it.
    unsafe { o.no_lock() };
    let env = o.map_size(1 << 20).open(dir.path()).unwrap();
    let put = |v: &[u8]| {
        let mut w = env.write_txn().unwrap();
        w.put(Database::MAIN, b"key", v, WriteFlags::EMPTY).unwrap();
        w.commit().unwrap();
    };
    put(&[1; 100]);
    let r = env.read_txn().unwrap();
    let v: &[u8] = r.get(Database::MAIN, b"key").unwrap().unwrap();
    for i in 2..40u8 {
        put(&[i; 100]);
    }
    assert_eq!(v, &[1; 100][..], "a page under a live borrow was reused");
    drop(r);
    // Once the reader is gone its pages are reused: 40 more commits, each
    // freeing two pages, hardly grow the file.
    let before = env.info().unwrap().last_pgno;
    for i in 40..80u8 {
        put(&[i; 100]);
    }
    let grown = env.info().unwrap().last_pgno - before;
    assert!(
        grown < 10,
        "{grown} pages more: the reader still holds them back"
    );
}

#[test]
fn no_lock_envs_of_one_process_share_their_readers() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let mut o = EnvOptions::new();
        // SAFETY: a private directory; every Env on it is NO_LOCK and in
        // this process, which the contract allows.
        unsafe { o.no_lock() };
        o.open(dir.path()).unwrap()
    };
    let (a, b) = (open(), open());
    let mut w = a.write_txn().unwrap();
    w.put(Database::MAIN, b"key", &[1; 100], WriteFlags::EMPTY)
        .unwrap();
    w.commit().unwrap();
    let r = b.read_txn().unwrap();
    let v: &[u8] = r.get(Database::MAIN, b"key").unwrap().unwrap();
    for i in 2..40u8 {
        let mut w = a.write_txn().unwrap();
        w.put(Database::MAIN, b"key", &[i; 100], WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
    }
    assert_eq!(v, &[1; 100][..]);
    // LMDB reports no reader table without a lock file.
    assert_eq!(a.reader_list_text(), "(no reader locks)\n");
    assert_eq!(a.readers(), vec![]);
}
