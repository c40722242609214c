//! A database handle first opened in a write transaction belongs to that
//! transaction until it commits: other transactions get `EINVAL` for it
//! (as LMDB's `mdb_get`/`mdb_cursor_open`), and if it aborts the handle is
//! closed. Checked against Debian's liblmdb by the C suite (mdb-ffi).

use mdb::{DbFlags, Env, EnvOptions, ErrorKind, Txn, WriteFlags};

const EINVAL: ErrorKind = ErrorKind::Os(libc::EINVAL);

fn env(dir: &std::path::Path) -> Env {
    EnvOptions::new().max_dbs(4).open(dir).unwrap()
}

/// Refused as a misuse: `EINVAL` to C, saying which to Rust.
fn refused<T: std::fmt::Debug>(r: mdb::Result<T>) {
    let e = r.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Misuse(_)), "{e:?}");
    assert_eq!(e.code(), EINVAL.code());
}

#[test]
fn created_handle_is_private_until_commit() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path());
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("x", DbFlags::EMPTY).unwrap();
    w.put(db, b"k", b"v", WriteFlags::EMPTY).unwrap();
    {
        let r = env.read_txn().unwrap();
        refused(r.get(db, b"k"));
        refused(r.cursor(db).map(|_| ()));
        refused(r.stat(db));
        // Not in this snapshot: opening it by name finds nothing.
        assert_eq!(
            r.open_db("x").map_err(|e| e.kind()),
            Err(ErrorKind::NotFound)
        );
    }
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(r.get(db, b"k").unwrap(), Some(&b"v"[..]));
}

#[test]
fn aborted_create_closes_the_handle() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path());
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("x", DbFlags::EMPTY).unwrap();
    w.put(db, b"k", b"v", WriteFlags::EMPTY).unwrap();
    w.abort();
    let mut w = env.write_txn().unwrap();
    refused(w.get(db, b"k"));
    refused(w.put(db, b"k", b"v", WriteFlags::EMPTY));
    // Dropping a write transaction aborts it as well.
    let db2 = w.create_db("y", DbFlags::EMPTY).unwrap();
    w.put(db2, b"k", b"v", WriteFlags::EMPTY).unwrap();
    drop(w);
    let r = env.read_txn().unwrap();
    refused(r.get(db, b"k"));
    refused(r.get(db2, b"k"));
}

#[test]
fn opening_an_existing_db_in_a_write_txn_is_private_too() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path());
    {
        let mut w = env.write_txn().unwrap();
        let db = w.create_db("x", DbFlags::EMPTY).unwrap();
        w.put(db, b"k", b"v", WriteFlags::EMPTY).unwrap();
        w.commit().unwrap();
        env.close_db(db);
    }
    let w = env.write_txn().unwrap();
    let db = w.open_db("x").unwrap();
    assert_eq!(w.get(db, b"k").unwrap(), Some(&b"v"[..]));
    {
        let r = env.read_txn().unwrap();
        refused(r.get(db, b"k"));
        // A reader opening the same name gets a handle of its own.
        let mine = r.open_db("x").unwrap();
        assert_ne!(mine, db);
        assert_eq!(r.get(mine, b"k").unwrap(), Some(&b"v"[..]));
    }
    drop(w);
    let r = env.read_txn().unwrap();
    refused(r.get(db, b"k"));
    let again = r.open_db("x").unwrap();
    assert_eq!(r.get(again, b"k").unwrap(), Some(&b"v"[..]));
}

#[test]
fn nested_txn_opens_follow_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path());
    let mut w = env.write_txn().unwrap();
    let a = {
        let mut c = w.nested().unwrap();
        let a = c.create_db("a", DbFlags::EMPTY).unwrap();
        c.put(a, b"k", b"v", WriteFlags::EMPTY).unwrap();
        a
    };
    // The child aborted: its handle is closed, in the parent too.
    refused(w.get(a, b"k"));
    let b = {
        let mut c = w.nested().unwrap();
        let b = c.create_db("b", DbFlags::EMPTY).unwrap();
        c.put(b, b"k", b"v", WriteFlags::EMPTY).unwrap();
        c.commit().unwrap();
        b
    };
    assert_eq!(w.get(b, b"k").unwrap(), Some(&b"v"[..]));
    refused(env.read_txn().unwrap().get(b, b"k"));
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(r.get(b, b"k").unwrap(), Some(&b"v"[..]));
    assert_eq!(
        r.open_db("a").map_err(|e| e.kind()),
        Err(ErrorKind::NotFound)
    );
}

/// Readers share the record of a named database per snapshot (an
/// environment-wide cache keyed by txnid): each snapshot still sees its own
/// record, an older reader does not take a newer one's, and a closed
/// handle's slot reused for another database does not serve the old record.
#[test]
fn readers_see_their_own_snapshot_of_a_named_database() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .max_dbs(4)
        .flags(mdb::EnvFlags::NO_TLS)
        .open(dir.path())
        .unwrap();
    let put = |db, k: &[u8]| {
        let mut w = env.write_txn().unwrap();
        w.put(db, k, k, WriteFlags::EMPTY).unwrap();
        w.commit().unwrap();
    };
    let mut w = env.write_txn().unwrap();
    let a = w.create_db("a", DbFlags::EMPTY).unwrap();
    w.put(a, b"k1", b"k1", WriteFlags::EMPTY).unwrap();
    w.commit().unwrap();
    let keys = |r: &mdb::RoTxn<'_>, db| -> Vec<Vec<u8>> {
        r.cursor(db)
            .unwrap()
            .iter()
            .map(|kv| kv.unwrap().0.to_vec())
            .collect()
    };
    let r1 = env.read_txn().unwrap();
    assert_eq!(keys(&r1, a), [b"k1".to_vec()]);
    put(a, b"k2");
    let r2 = env.read_txn().unwrap();
    assert_eq!(keys(&r2, a), [b"k1".to_vec(), b"k2".to_vec()]);
    // A fresh transaction on r1's snapshot after r2 cached the newer record.
    drop(r1);
    let r3 = env.read_txn().unwrap();
    assert_eq!(keys(&r3, a).len(), 2);
    put(a, b"k3");
    assert_eq!(keys(&r2, a).len(), 2, "r2 keeps its snapshot");
    drop((r2, r3));
    assert_eq!(keys(&env.read_txn().unwrap(), a).len(), 3);
    // Close "a"; its slot goes to "b", which must not show a's record.
    let snapshot_of_a = env.read_txn().unwrap();
    assert_eq!(keys(&snapshot_of_a, a).len(), 3);
    drop(snapshot_of_a);
    env.close_db(a);
    let mut w = env.write_txn().unwrap();
    let b = w.create_db("b", DbFlags::EMPTY).unwrap();
    w.put(b, b"only-b", b"", WriteFlags::EMPTY).unwrap();
    w.commit().unwrap();
    assert_eq!(b, a, "the closed slot is reused");
    let r = env.read_txn().unwrap();
    assert_eq!(keys(&r, b), [b"only-b".to_vec()]);
    let a2 = r.open_db("a").unwrap();
    assert_eq!(keys(&r, a2).len(), 3);
    assert_eq!(keys(&r, b), [b"only-b".to_vec()]);
}

/// Unlike LMDB's C handles (which the C library keeps private to the read
/// transaction that opened them until it commits), a handle a Rust read
/// transaction opens is the environment's at once: a read transaction has
/// no commit, and dropping one must not close what it opened. Every use
/// looks the database up in the user's own snapshot, so a snapshot without
/// it gets `BadDbi`, never another database's pages.
#[test]
fn read_txn_handles_are_shared_at_once_and_looked_up_per_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    // NO_TLS: this thread holds several snapshots at once.
    let env = EnvOptions::new()
        .max_dbs(4)
        .flags(mdb::EnvFlags::NO_TLS)
        .open(dir.path())
        .unwrap();
    let mut w = env.write_txn().unwrap();
    let x = w.create_db("x", DbFlags::EMPTY).unwrap();
    w.put(x, b"k", b"old", WriteFlags::EMPTY).unwrap();
    w.commit().unwrap();
    env.close_db(x);
    let r1 = env.read_txn().unwrap();
    let x = r1.open_db("x").unwrap();
    let r2 = env.read_txn().unwrap();
    assert_eq!(r2.get(x, b"k").unwrap(), Some(&b"old"[..]));
    drop(r2);
    // The database goes, and another of the same name comes.
    let mut w = env.write_txn().unwrap();
    w.delete_db(x).unwrap();
    w.commit().unwrap();
    let r3 = env.read_txn().unwrap();
    assert_eq!(
        r3.get(x, b"k").map_err(|e| e.kind()),
        Err(ErrorKind::BadDbi)
    );
    let mut w = env.write_txn().unwrap();
    let y = w.create_db("x", DbFlags::EMPTY).unwrap();
    w.put(y, b"k", b"new", WriteFlags::EMPTY).unwrap();
    w.commit().unwrap();
    // The older snapshot still reads its own.
    assert_eq!(r1.get(x, b"k").unwrap(), Some(&b"old"[..]));
    assert_eq!(
        r3.get(x, b"k").map_err(|e| e.kind()),
        Err(ErrorKind::BadDbi)
    );
    let r4 = env.read_txn().unwrap();
    assert_eq!(r4.get(x, b"k").unwrap(), Some(&b"new"[..]));
    drop(r1);
    assert_eq!(r4.get(y, b"k").unwrap(), Some(&b"new"[..]));
}
