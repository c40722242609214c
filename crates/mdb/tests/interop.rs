//! Interop with Debian's LMDB: files written by `mdb_load` and python3-lmdb
//! are read correctly by us, and files we write are read correctly by
//! `mdb_dump`, `mdb_stat` and python3-lmdb (which then modifies them).

use mdb::{check, Database, DbFlags, EnvOptions, Txn, WriteFlags};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

mod debian;

type Dbs = BTreeMap<Option<String>, BTreeMap<Vec<u8>, Vec<u8>>>;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The exact text `mdb_dump` prints for one database.
fn dump_text(name: Option<&str>, items: &BTreeMap<Vec<u8>, Vec<u8>>, mapsize: usize) -> String {
    let mut s = String::from("VERSION=3\nformat=bytevalue\n");
    if let Some(n) = name {
        s += &format!("database={n}\n");
    }
    s += &format!("type=btree\nmapsize={mapsize}\nmaxreaders=126\ndb_pagesize=4096\nHEADER=END\n");
    for (k, v) in items {
        s += &format!(" {}\n {}\n", hex(k), hex(v));
    }
    s + "DATA=END\n"
}

fn run(cmd: &str, args: &[&str], input: Option<&str>) -> (bool, String, String) {
    let mut c = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    if let Some(i) = input {
        stdin.write_all(i.as_bytes()).unwrap();
    }
    drop(stdin);
    let o = c.wait_with_output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn content(n: usize, seed: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut x = seed | 1;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let klen = 1 + (x % 60) as usize;
        let mut k: Vec<u8> = format!("{:08x}", x as u32).into_bytes();
        k.resize(klen.max(8), b'k');
        let vlen = if i % 50 == 7 {
            2000 + (x % 9000) as usize
        } else {
            (x % 200) as usize
        };
        let v: Vec<u8> = (0..vlen).map(|j| (j as u64 ^ x) as u8).collect();
        m.insert(k, v);
    }
    m
}

fn read_all(dir: &Path) -> Dbs {
    let env = EnvOptions::new().max_dbs(8).open(dir).unwrap();
    let r = env.read_txn().unwrap();
    let mut out = Dbs::new();
    let mut names = Vec::new();
    let mut main = BTreeMap::new();
    for kv in r.cursor(Database::MAIN).unwrap() {
        let (k, v) = kv.unwrap();
        match std::str::from_utf8(k)
            .ok()
            .and_then(|n| r.open_db(n).ok().map(|_| n))
        {
            Some(n) => names.push(n.to_string()),
            None => {
                main.insert(k.to_vec(), v.to_vec());
            }
        }
    }
    out.insert(None, main);
    for n in names {
        let db = r.open_db(&n).unwrap();
        let m = r
            .cursor(db)
            .unwrap()
            .iter()
            .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        out.insert(Some(n), m);
    }
    out
}

#[test]
fn we_read_what_mdb_load_writes() {
    debian::lmdb_utils();
    for (n, named) in [
        (0usize, false),
        (1, false),
        (1000, false),
        (1000, true),
        (200_000, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let main = content(n, 7 + n as u64);
        let mapsize = 1 << 30;
        let mut text = dump_text(None, &main, mapsize);
        let mut want = Dbs::new();
        let mut main_want = main.clone();
        if named {
            for (i, name) in ["alpha", "beta"].iter().enumerate() {
                let m = content(n / 2, 99 + i as u64);
                text += &dump_text(Some(name), &m, mapsize);
                want.insert(Some(name.to_string()), m);
                main_want.remove(name.as_bytes());
            }
        }
        want.insert(None, main_want);
        let (ok, _, err) = run(
            "/usr/bin/mdb_load",
            &[dir.path().to_str().unwrap()],
            Some(&text),
        );
        assert!(ok, "mdb_load failed: {err}");
        let got = read_all(dir.path());
        assert_eq!(got.len(), want.len());
        for (k, v) in &want {
            assert!(got[k] == *v, "database {k:?} of the {n}-key file differs");
        }
        // Our stats equal mdb_stat's on the same file.
        let env = EnvOptions::new().max_dbs(8).open(dir.path()).unwrap();
        let (ok, out, _) = run("/usr/bin/mdb_stat", &[dir.path().to_str().unwrap()], None);
        assert!(ok);
        let st = env.stat().unwrap();
        let expect = format!(
            "Status of Main DB\n  Tree depth: {}\n  Branch pages: {}\n  Leaf pages: {}\n  Overflow pages: {}\n  Entries: {}\n",
            st.depth, st.branch_pages, st.leaf_pages, st.overflow_pages, st.entries
        );
        assert_eq!(out, expect);
    }
}

#[test]
fn lmdb_reads_what_we_write() {
    debian::lmdb_utils();
    let dir = tempfile::tempdir().unwrap();
    let mapsize = 256 << 20;
    let env = EnvOptions::new()
        .map_size(mapsize)
        .max_dbs(4)
        .open(dir.path())
        .unwrap();
    let mut main = content(3000, 5);
    let mut named = content(2000, 6);
    {
        let mut w = env.write_txn().unwrap();
        let db = w.create_db("named", DbFlags::EMPTY).unwrap();
        for (k, v) in &main {
            w.put(Database::MAIN, k, v, WriteFlags::EMPTY).unwrap();
        }
        for (k, v) in &named {
            w.put(db, k, v, WriteFlags::EMPTY).unwrap();
        }
        w.commit().unwrap();
    }
    // Several more transactions: deletes and overwrites, so the free list is used.
    for round in 0..5u64 {
        let mut w = env.write_txn().unwrap();
        let db = w.open_db("named").unwrap();
        let keys: Vec<Vec<u8>> = main.keys().cloned().collect();
        for (i, k) in keys.iter().enumerate() {
            if (i as u64 + round).is_multiple_of(4) {
                w.del(Database::MAIN, k).unwrap();
                main.remove(k);
            } else if i % 7 == 0 {
                let v = vec![round as u8; (i * 31) % 5000];
                w.put(Database::MAIN, k, &v, WriteFlags::EMPTY).unwrap();
                main.insert(k.clone(), v);
            }
        }
        let keys: Vec<Vec<u8>> = named.keys().take(300).cloned().collect();
        for k in keys {
            w.del(db, &k).unwrap();
            named.remove(&k);
        }
        w.commit().unwrap();
    }
    let st_main = env.stat().unwrap();
    let grown = env.file_map_size().unwrap() as usize;
    drop(env);
    // The map grew by itself (and the close gave the free tail back): the
    // file records the size it has now.
    let recorded = EnvOptions::new()
        .flags(mdb::EnvFlags::READ_ONLY)
        .open(dir.path())
        .unwrap()
        .file_map_size()
        .unwrap() as usize;
    assert!(
        recorded > 1 << 20 && recorded <= grown && grown <= mapsize,
        "{recorded} {grown}"
    );
    let rep = check::check_file(&dir.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
    let d = dir.path().to_str().unwrap();
    let (ok, out, err) = run("/usr/bin/mdb_dump", &["-s", "named", d], None);
    assert!(ok, "{err}");
    assert_eq!(out, dump_text(Some("named"), &named, recorded));
    let (ok, out, _) = run("/usr/bin/mdb_dump", &[d], None);
    assert!(ok);
    let mut main_with_rec = main.clone();
    let lines: Vec<&str> = out.lines().collect();
    // The main DB dump shows the named record (48 bytes); check the rest exactly.
    let rec_key = hex(b"named");
    let pos = lines.iter().position(|l| l.trim() == rec_key).unwrap();
    main_with_rec.insert(b"named".to_vec(), hex_decode(lines[pos + 1].trim()));
    assert_eq!(out, dump_text(None, &main_with_rec, recorded));
    let (ok, out, _) = run("/usr/bin/mdb_stat", &["-e", "-f", "-a", d], None);
    assert!(ok);
    assert!(out.contains(&format!(
        "Status of Main DB\n  Tree depth: {}\n",
        st_main.depth
    )));
    assert!(out.contains(&format!("  Entries: {}\nStatus of named", st_main.entries)));
    // A compacting copy by LMDB must find no leaked pages (it fails otherwise).
    let cp = tempfile::tempdir().unwrap();
    let (ok, _, err) = run(
        "/usr/bin/mdb_copy",
        &["-c", d, cp.path().to_str().unwrap()],
        None,
    );
    assert!(ok, "mdb_copy -c: {err}");

    // python3-lmdb (Debian's liblmdb) modifies our file; we read the result.
    debian::python3_lmdb();
    let script = format!(
        r#"
import lmdb
env = lmdb.open({d:?}, max_dbs=4, map_size={mapsize})
db = env.open_db(b"named")
with env.begin(write=True) as t:
    for i in range(500):
        t.put(b"py%05d" % i, b"v" * (i % 3000), db=db)
    for k in list(t.cursor(db=db).iternext(values=False))[::3]:
        t.delete(k, db=db)
    t.put(b"pymain", b"x" * 5000)
with env.begin() as t:
    out = open({d:?} + "/py.txt", "w")
    for k, v in t.cursor(db=db):
        out.write(k.hex() + " " + v.hex() + "\n")
"#
    );
    let (ok, _, err) = run("/usr/bin/python3", &["-c", &script], None);
    assert!(ok, "python3-lmdb failed: {err}");
    let rep = check::check_file(&dir.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "after python3-lmdb: {:?}", rep.problems);
    let got = read_all(dir.path());
    let py = std::fs::read_to_string(dir.path().join("py.txt")).unwrap();
    let want: BTreeMap<Vec<u8>, Vec<u8>> = py
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (hex_decode(k), hex_decode(v))
        })
        .collect();
    assert!(got[&Some("named".to_string())] == want);
    assert_eq!(got[&None][&b"pymain".to_vec()], vec![b'x'; 5000]);
}

fn hex_decode(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}
