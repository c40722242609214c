//! Empty values in DUPSORT databases, as LMDB 0.9 (checked against Debian's
//! liblmdb): a key whose only value is empty is stored and read back; an
//! empty value beside other values is refused with MDB_BAD_VALSIZE both ways
//! round (LMDB refuses adding an empty value to a key that has values, and
//! silently drops the empty value when a value is added to it: we refuse
//! that too rather than lose it).

use mdb::{CursorOp, DbFlags, EnvOptions, ErrorKind, Txn, WriteFlags};
use std::process::{Command, Stdio};

fn tool(name: &str) -> Command {
    assert!(
        Command::new(name).arg("-V").output().is_ok(),
        "{name} is missing: install Debian's lmdb-utils (scripts/setup.sh does)"
    );
    Command::new(name)
}

#[test]
fn lone_empty_values_are_kept_and_mixed_ones_refused() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new().max_dbs(4).open(dir.path()).unwrap();
    let mut w = env.write_txn().unwrap();
    let d = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    let f = w
        .create_db("f", DbFlags(DbFlags::DUP_SORT.0 | DbFlags::DUP_FIXED.0))
        .unwrap();
    let e = WriteFlags::EMPTY;
    w.put(d, b"k", b"", e).unwrap();
    w.put(d, b"k", b"", e).unwrap(); // the same value again: no change
    assert_eq!(
        w.put(d, b"k", b"", WriteFlags::NO_DUP_DATA)
            .map_err(|e| e.kind()),
        Err(ErrorKind::KeyExist)
    );
    assert_eq!(
        w.put(d, b"k", b"a", e).map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    w.put(d, b"m", b"a", e).unwrap();
    w.put(d, b"m", b"b", e).unwrap();
    assert_eq!(
        w.put(d, b"m", b"", e).map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    w.put(d, b"s", b"a", e).unwrap();
    assert_eq!(
        w.put(d, b"s", b"", e).map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    w.put(f, b"k", b"", e).unwrap();
    assert_eq!(
        w.put(f, b"k", b"ab", e).map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    w.commit().unwrap();

    let r = env.read_txn().unwrap();
    let items: Vec<(Vec<u8>, Vec<u8>)> = r
        .cursor(d)
        .unwrap()
        .iter()
        .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    let want: Vec<(&[u8], &[u8])> = vec![(b"k", b""), (b"m", b"a"), (b"m", b"b"), (b"s", b"a")];
    assert_eq!(
        items,
        want.iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect::<Vec<_>>()
    );
    let mut c = r.cursor(d).unwrap();
    assert_eq!(
        c.op(CursorOp::GetBoth(b"k", b"")).unwrap(),
        Some((&b"k"[..], &b""[..]))
    );
    assert_eq!(c.count().unwrap(), 1);
    assert_eq!(r.get(f, b"k").unwrap(), Some(&b""[..]));
    drop(r);

    // Debian's mdb_dump reads it as LMDB wrote it.
    let out = tool("mdb_dump")
        .args(["-p", "-s", "d"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(" k\n \n m\n a\n"), "{text}");

    let mut w = env.write_txn().unwrap();
    w.del_dup(d, b"k", b"").unwrap();
    assert_eq!(w.get(d, b"k").unwrap(), None);
    w.commit().unwrap();
}

#[test]
fn we_read_a_lone_empty_value_mdb_load_writes() {
    let dir = tempfile::tempdir().unwrap();
    let dump = "VERSION=3\nformat=print\ntype=btree\ndupsort=1\nHEADER=END\n k\n \n m\n a\n m\n b\nDATA=END\n";
    let mut child = tool("mdb_load")
        .args(["-s", "d"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dump.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let env = EnvOptions::new().max_dbs(2).open(dir.path()).unwrap();
    let r = env.read_txn().unwrap();
    let d = r.open_db("d").unwrap();
    assert_eq!(r.get(d, b"k").unwrap(), Some(&b""[..]));
    let mut c = r.cursor(d).unwrap();
    assert_eq!(c.op(CursorOp::Set(b"k")).unwrap().unwrap().1, b"");
    assert_eq!(c.count().unwrap(), 1);
    assert_eq!(c.op(CursorOp::NextDup).unwrap(), None);
    assert_eq!(
        c.op(CursorOp::Next).unwrap().unwrap(),
        (&b"m"[..], &b"a"[..])
    );
    assert_eq!(r.stat(d).unwrap().entries, 3);
}
