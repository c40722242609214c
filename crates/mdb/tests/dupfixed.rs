//! DUPFIXED: fixed-size duplicates in LEAF2 pages, the MULTIPLE cursor ops,
//! and interop with LMDB's own DUPFIXED files in both directions.

use mdb::{check, DbFlags, EnvOptions, ErrorKind, Txn, WriteFlags};
use std::io::Write;
use std::process::{Command, Stdio};

mod debian;

fn values(buf: &[u8], size: usize) -> Vec<u32> {
    buf.chunks(size)
        .map(|c| u32::from_le_bytes(c[..4].try_into().unwrap()))
        .collect()
}

#[test]
fn multiple_ops_walk_pages_of_values() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .max_dbs(2)
        .map_size(64 << 20)
        .open(dir.path())
        .unwrap();
    let mut w = env.write_txn().unwrap();
    let db = w
        .create_db(
            "f",
            DbFlags::DUP_SORT | DbFlags::DUP_FIXED | DbFlags::INTEGER_DUP,
        )
        .unwrap();
    let packed: Vec<u8> = (1..=3000u32).flat_map(|i| i.to_le_bytes()).collect();
    assert_eq!(
        w.put_multiple(db, b"k", &packed, 4, WriteFlags::EMPTY)
            .unwrap(),
        3000
    );
    assert_eq!(
        w.put(db, b"k", b"12345", WriteFlags::EMPTY)
            .map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    w.put(db, b"lone", &7u32.to_le_bytes(), WriteFlags::EMPTY)
        .unwrap();
    w.commit().unwrap();

    let r = env.read_txn().unwrap();
    let db = r.open_db("f").unwrap();
    let mut c = r.cursor(db).unwrap();
    c.set_key(b"k").unwrap().unwrap();
    assert_eq!(c.count().unwrap(), 3000);
    let mut all = values(c.get_multiple().unwrap().unwrap(), 4);
    let mut pages = vec![all.len()];
    while let Some(b) = c.next_multiple().unwrap() {
        let v = values(b, 4);
        pages.push(v.len());
        all.extend(v);
    }
    assert_eq!(all, (1..=3000).collect::<Vec<_>>());
    assert!(pages.len() > 1, "{pages:?}");
    assert_eq!(c.next_multiple().unwrap(), None);
    // Backwards, a page at a time, before the last page.
    let mut back = Vec::new();
    while let Some(b) = c.prev_multiple().unwrap() {
        let mut v = values(b, 4);
        v.extend(back);
        back = v;
    }
    let last = *pages.last().unwrap();
    assert_eq!(back, (1..=(3000 - last as u32)).collect::<Vec<_>>());
    // GET_BOTH then GET_MULTIPLE returns the page holding that value.
    c.get_both(b"k", &1500u32.to_le_bytes()).unwrap().unwrap();
    let page = values(c.get_multiple().unwrap().unwrap(), 4);
    assert!(page.contains(&1500));
    // A single value comes back as a one-item buffer.
    c.set_key(b"lone").unwrap().unwrap();
    assert_eq!(values(c.get_multiple().unwrap().unwrap(), 4), vec![7]);
    drop(r);

    // Delete most values again: the sub-database shrinks back.
    let mut w = env.write_txn().unwrap();
    let db = w.open_db("f").unwrap();
    for i in 1..=2990u32 {
        assert!(w.del_dup(db, b"k", &i.to_le_bytes()).unwrap());
    }
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    let mut c = r.cursor(db).unwrap();
    c.set_key(b"k").unwrap().unwrap();
    assert_eq!(
        values(c.get_multiple().unwrap().unwrap(), 4),
        (2991..=3000).collect::<Vec<_>>()
    );
    drop(r);
    drop(env);
    let rep = check::check_file(&dir.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
}

fn run(cmd: &str, args: &[&str], input: &str) -> (bool, String) {
    let mut c = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    (o.status.success(), String::from_utf8(o.stdout).unwrap())
}

#[test]
fn lmdb_dupfixed_files_both_ways() {
    debian::lmdb_utils();
    // 3 keys with 2,000 8-byte values each, plus keys with 1 and 5 values.
    let mut body = String::new();
    for k in 0..3u8 {
        for v in 0..2000u64 {
            body += &format!(" 6b{k:02x}\n {}\n", hex(&(v * 3 + k as u64).to_be_bytes()));
        }
    }
    body += " 6c\n 0000000000000001\n";
    for v in 0..5u64 {
        body += &format!(" 6d\n {}\n", hex(&v.to_be_bytes()));
    }
    let dump = format!(
        "VERSION=3\nformat=bytevalue\ndatabase=fixed\ntype=btree\ndupsort=1\ndupfixed=1\nHEADER=END\n{body}DATA=END\n"
    );
    let theirs = tempfile::tempdir().unwrap();
    let t = theirs.path().to_str().unwrap();
    assert!(run("/usr/bin/mdb_load", &[t], &dump).0);
    // We read LMDB's file.
    let env = EnvOptions::new().max_dbs(2).open(theirs.path()).unwrap();
    let r = env.read_txn().unwrap();
    let db = r.open_db("fixed").unwrap();
    assert!(r.db_flags(db).unwrap().contains(DbFlags::DUP_FIXED));
    let mut c = r.cursor(db).unwrap();
    c.set_key(b"k\x01").unwrap().unwrap();
    let mut got = c.get_multiple().unwrap().unwrap().to_vec();
    while let Some(b) = c.next_multiple().unwrap() {
        got.extend_from_slice(b);
    }
    let want: Vec<u8> = (0..2000u64)
        .flat_map(|v| (v * 3 + 1).to_be_bytes())
        .collect();
    assert_eq!(got, want);
    let n = r.stat(db).unwrap().entries;
    assert_eq!(n, 6006);
    drop(r);
    drop(env);
    // We write the same data; LMDB dumps it identically.
    let ours = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .max_dbs(2)
        .map_size(64 << 20)
        .open(ours.path())
        .unwrap();
    let mut w = env.write_txn().unwrap();
    let db = w
        .create_db("fixed", DbFlags::DUP_SORT | DbFlags::DUP_FIXED)
        .unwrap();
    for line in body.lines().collect::<Vec<_>>().chunks(2) {
        let (k, v) = (unhex(line[0].trim()), unhex(line[1].trim()));
        w.put(db, &k, &v, WriteFlags::EMPTY).unwrap();
    }
    w.commit().unwrap();
    drop(env);
    let o = ours.path().to_str().unwrap();
    let a = run("/usr/bin/mdb_dump", &["-s", "fixed", t], "").1;
    let b = run("/usr/bin/mdb_dump", &["-s", "fixed", o], "").1;
    // (The map sizes differ: ours grows by itself from 1 MiB.)
    let no_mapsize = |s: &str| -> String {
        s.lines()
            .filter(|l| !l.starts_with("mapsize="))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    assert_eq!(no_mapsize(&a), no_mapsize(&b));
    assert!(run("/usr/bin/mdb_stat", &["-a", "-e", "-f", o], "").0);
    let rep = check::check_file(&ours.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
    // LMDB modifies our DUPFIXED file (deletes and adds), and it stays valid.
    debian::python3_lmdb();
    let script = format!(
        "import lmdb\nenv = lmdb.open({o:?}, max_dbs=2, map_size=64<<20)\ndb = env.open_db(b'fixed', dupsort=True, dupfixed=True)\nwith env.begin(write=True, db=db) as t:\n    c = t.cursor()\n    for v in range(0, 2000, 2):\n        assert c.set_key_dup(b'k\\x00', (v*3).to_bytes(8, 'big'))\n        c.delete()\n    t.put(b'k\\x05', (9).to_bytes(8, 'big'))\n"
    );
    let (ok, _) = run("/usr/bin/python3", &["-c", &script], "");
    assert!(ok, "python3-lmdb failed on our DUPFIXED file");
    {
        let rep = check::check_file(&ours.path().join("data.mdb")).unwrap();
        assert!(rep.is_ok(), "after LMDB edits: {:?}", rep.problems);
        let env = EnvOptions::new().max_dbs(2).open(ours.path()).unwrap();
        let r = env.read_txn().unwrap();
        let db = r.open_db("fixed").unwrap();
        let mut c = r.cursor(db).unwrap();
        c.set_key(b"k\x00").unwrap().unwrap();
        assert_eq!(c.count().unwrap(), 1000);
        assert_eq!(r.stat(db).unwrap().entries, 6006 - 1000 + 1);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}
