//! A database handle first opened in a write transaction belongs to that
//! transaction until it commits: other transactions get `EINVAL` for it
//! (as LMDB's `mdb_get`/`mdb_cursor_open`), and if it aborts the handle is
//! closed. Checked against Debian's liblmdb by the C suite (mdb-ffi).

use mdb::{DbFlags, Env, EnvOptions, Error, Txn, WriteFlags};

const EINVAL: Error = Error::Os(libc::EINVAL);

fn env(dir: &std::path::Path) -> Env {
    EnvOptions::new().max_dbs(4).open(dir).unwrap()
}

fn refused<T: std::fmt::Debug>(r: mdb::Result<T>) {
    assert_eq!(r.unwrap_err(), EINVAL);
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
        assert_eq!(r.open_db("x"), Err(Error::NotFound));
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
    assert_eq!(r.open_db("a"), Err(Error::NotFound));
}
