//! Byte-level interop with Debian's LMDB 0.9.24 for every combination of
//! database flags, in both directions.
//!
//! One list of operations (two write transactions: a load, then deletes,
//! overwrites and additions) is generated here for 37 named databases: every
//! key comparator (plain, REVERSEKEY, INTEGERKEY with 4- and 8-byte keys,
//! INTEGERKEY|REVERSEKEY) crossed with every duplicate mode (none, DUPSORT,
//! and DUPSORT with each subset of REVERSEDUP, INTEGERDUP, DUPFIXED). The
//! content puts every representation on disk: overflow values, single
//! values, sub-pages, sub-databases (including one made of five 500-byte
//! values under a 486-byte key), and sub-pages and sub-databases deleted
//! down to one value.
//!
//! * `tests/data/make_flags.py` applies the operations with python3-lmdb
//!   (databases python3-lmdb cannot express are created empty by `mdb_load`)
//!   and dumps every database in LMDB's order. We read that file: forward and
//!   backward walks, per-key walks, `count`, `get`, `get_both`, the MULTIPLE
//!   ops, statistics against `mdb_stat -s`, and `check::check_file`.
//! * We apply the same operations to a new environment. `mdb_dump -a` prints
//!   exactly what it prints for LMDB's file, `mdb_stat -a -e -f` and
//!   `mdb_copy -c` accept it, and python3-lmdb finds the expected content in
//!   every database.
//! * python3-lmdb then edits every database of our file; we read back exactly
//!   what it reports (and what the same edits give on LMDB's own file), and
//!   the file must still check clean. This last part once failed: our
//!   DUPFIXED sub-pages with an odd value size have an odd node size, which
//!   LMDB's in-place delete does not expect (it leaves nodes at odd offsets);
//!   `lmdb_deletes_from_our_odd_dupfixed_subpage` is the smallest case.

use mdb::{check, Database, DbFlags, EnvOptions, RoTxn, Txn, WriteFlags};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod debian;

const REVERSEKEY: u16 = 0x02;
const DUPSORT: u16 = 0x04;
const INTEGERKEY: u16 = 0x08;
const DUPFIXED: u16 = 0x10;
const INTEGERDUP: u16 = 0x20;
const REVERSEDUP: u16 = 0x40;

const MAP_SIZE: usize = 256 << 20;
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/make_flags.py");

/// One named database of the test environment.
struct Spec {
    name: String,
    flags: u16,
    /// INTEGERKEY: the key size (4 or 8).
    int_key: Option<usize>,
    /// DUPFIXED or INTEGERDUP: the value size.
    fixed_val: Option<usize>,
}

impl Spec {
    fn dupsort(&self) -> bool {
        self.flags & DUPSORT != 0
    }
    fn dupfixed(&self) -> bool {
        self.flags & (DUPSORT | DUPFIXED) == DUPSORT | DUPFIXED
    }
}

fn specs() -> Vec<Spec> {
    let keys = [
        (0, "plain"),
        (REVERSEKEY, "revkey"),
        (INTEGERKEY, "intkey"),
        (INTEGERKEY | REVERSEKEY, "intkey+revkey"),
    ];
    let dups = [
        (0, ""),
        (DUPSORT, "dupsort"),
        (DUPSORT | REVERSEDUP, "dupsort+revdup"),
        (DUPSORT | INTEGERDUP, "dupsort+intdup"),
        (DUPSORT | INTEGERDUP | REVERSEDUP, "dupsort+intdup+revdup"),
        (DUPSORT | DUPFIXED, "dupsort+dupfixed"),
        (DUPSORT | DUPFIXED | REVERSEDUP, "dupsort+dupfixed+revdup"),
        (DUPSORT | DUPFIXED | INTEGERDUP, "dupsort+dupfixed+intdup"),
        (
            DUPSORT | DUPFIXED | INTEGERDUP | REVERSEDUP,
            "dupsort+dupfixed+intdup+revdup",
        ),
    ];
    let mut out = Vec::new();
    for (ki, &(kf, kn)) in keys.iter().enumerate() {
        for (di, &(df, dn)) in dups.iter().enumerate() {
            let name = match (kf, dn) {
                (_, "") => kn.to_string(),
                (0, _) => dn.to_string(),
                _ => format!("{kn}+{dn}"),
            };
            let int_key = (kf & INTEGERKEY != 0).then_some(if di % 2 == 0 { 4 } else { 8 });
            let fixed_val = if df & INTEGERDUP != 0 {
                Some(if (ki + di) % 2 == 0 { 4 } else { 8 })
            } else if df & DUPFIXED != 0 {
                Some(5 + (ki + di) % 3)
            } else {
                None
            };
            out.push(Spec {
                name,
                flags: kf | df,
                int_key,
                fixed_val,
            });
        }
    }
    out.push(Spec {
        name: "intkey8".into(),
        flags: INTEGERKEY,
        int_key: Some(8),
        fixed_val: None,
    });
    out
}

/// Key number `i` of database `s`; distinct numbers give distinct keys.
fn key(s: &Spec, i: u64) -> Vec<u8> {
    match s.int_key {
        Some(4) => (i as u32 + 1)
            .wrapping_mul(0x9E37_79B1)
            .to_le_bytes()
            .to_vec(),
        Some(_) => (i + 1)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .to_le_bytes()
            .to_vec(),
        None => {
            // Decimal numbers share prefixes and suffixes; every 50th key is long.
            let mut k = (i * 7919 % 1_000_003).to_string().into_bytes();
            if i % 50 == 3 {
                k.extend(std::iter::repeat_n(b'k', 100 + (i as usize * 37) % 380));
            }
            k
        }
    }
}

/// Duplicate value number `j` of database `s`; distinct numbers give
/// distinct values.
fn dup_val(s: &Spec, j: u64) -> Vec<u8> {
    match s.fixed_val {
        Some(n) => (j + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93).to_le_bytes()[..n].to_vec(),
        None => {
            let mut v = (j * 7919 % 1_000_003).to_string().into_bytes();
            if j % 9 == 4 {
                v.extend(std::iter::repeat_n(b'v', (j as usize * 13) % 40));
            }
            v
        }
    }
}

/// A value of 303 to 502 bytes (only in databases without fixed-size values).
fn big_val(j: u64) -> Vec<u8> {
    let mut v = format!("{j:03}").into_bytes();
    v.extend(std::iter::repeat_n(b'x', 300 + (j as usize * 37) % 200));
    v
}

/// A plain value of `len` bytes.
fn plain_val(i: u64, len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|b| (b as u64 * 31 + i * 7) as u8 ^ salt)
        .collect()
}

enum Op {
    Put(Vec<u8>, Vec<u8>),
    Multi(Vec<u8>, usize, Vec<u8>),
    Del(Vec<u8>),
    DelDup(Vec<u8>, Vec<u8>),
}

type Content = BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>;

/// Builds the operations (per transaction) and the content they must give.
struct Gen<'a> {
    specs: &'a [Spec],
    model: Vec<Content>,
    txns: Vec<Vec<(usize, Op)>>,
}

impl Gen<'_> {
    fn put(&mut self, db: usize, k: Vec<u8>, v: Vec<u8>) {
        let m = &mut self.model[db];
        if self.specs[db].dupsort() {
            assert!(m.entry(k.clone()).or_default().insert(v.clone()));
        } else {
            m.insert(k.clone(), BTreeSet::from([v.clone()]));
        }
        self.txns.last_mut().unwrap().push((db, Op::Put(k, v)));
    }
    /// Several values for one key: one `put_multiple` for DUPFIXED.
    fn put_all(&mut self, db: usize, k: Vec<u8>, vals: Vec<Vec<u8>>) {
        match self.specs[db].fixed_val {
            Some(n) if self.specs[db].dupfixed() => {
                let set = self.model[db].entry(k.clone()).or_default();
                for v in &vals {
                    assert!(set.insert(v.clone()));
                }
                let packed = vals.concat();
                self.txns
                    .last_mut()
                    .unwrap()
                    .push((db, Op::Multi(k, n, packed)));
            }
            _ => {
                for v in vals {
                    self.put(db, k.clone(), v);
                }
            }
        }
    }
    fn del(&mut self, db: usize, k: Vec<u8>) {
        assert!(self.model[db].remove(&k).is_some());
        self.txns.last_mut().unwrap().push((db, Op::Del(k)));
    }
    fn del_dup(&mut self, db: usize, k: Vec<u8>, v: Vec<u8>) {
        let set = self.model[db].get_mut(&k).unwrap();
        assert!(set.remove(&v));
        if set.is_empty() {
            self.model[db].remove(&k);
        }
        self.txns.last_mut().unwrap().push((db, Op::DelDup(k, v)));
    }
    fn next_txn(&mut self) {
        self.txns.push(Vec::new());
    }
}

/// Transaction 1 loads, transaction 2 deletes, overwrites and adds.
fn load_and_edit(g: &mut Gen) {
    let specs = g.specs;
    for (d, s) in specs.iter().enumerate() {
        if s.dupsort() {
            // 300 keys with 1 value, 100 with 5, 3 with 2,000, one with 5 big values.
            let n = if s.fixed_val.is_none() { 404 } else { 403 };
            for u in 0..404 {
                let i = u * 103 % 404;
                if i >= n {
                    continue;
                }
                let vals: Vec<Vec<u8>> = match i {
                    0..300 => vec![dup_val(s, i)],
                    300..400 => (0..5)
                        .map(|t| dup_val(s, 10_000 + (i - 300) * 5 + t))
                        .collect(),
                    400..403 => (0..2000).map(|u| dup_val(s, u * 769 % 2000)).collect(),
                    _ => (0..5).map(big_val).collect(),
                };
                g.put_all(d, key(s, i), vals);
            }
        } else {
            for u in 0..800 {
                let i = u * 103 % 800;
                let len = if i < 500 {
                    (i as usize * 13) % 201
                } else {
                    2100 + (i as usize * 997) % 7000
                };
                g.put(d, key(s, i), plain_val(i, len, 0));
            }
        }
    }
    g.next_txn();
    for (d, s) in specs.iter().enumerate() {
        if s.dupsort() {
            for i in 0..300 {
                match i % 10 {
                    0 => g.del(d, key(s, i)),
                    1 => g.del_dup(d, key(s, i), dup_val(s, i)),
                    2 => {
                        let vals = (0..2).map(|t| dup_val(s, 20_000 + i * 2 + t)).collect();
                        g.put_all(d, key(s, i), vals)
                    }
                    _ => {}
                }
            }
            for i in 300..400 {
                let v = |t| dup_val(s, 10_000 + (i - 300) * 5 + t);
                match (i - 300) % 4 {
                    0 => (0..4).for_each(|t| g.del_dup(d, key(s, i), v(t))),
                    1 => g.del(d, key(s, i)),
                    2 => {
                        let vals = (0..3)
                            .map(|t| dup_val(s, 30_000 + (i - 300) * 3 + t))
                            .collect();
                        g.put_all(d, key(s, i), vals)
                    }
                    _ => {}
                }
            }
            // A sub-database shrunk to 10 values, one emptied value by value,
            // one grown and trimmed.
            for t in 0..1990 {
                g.del_dup(d, key(s, 400), dup_val(s, t));
            }
            for u in 0..2000 {
                g.del_dup(d, key(s, 401), dup_val(s, u * 769 % 2000));
            }
            g.put_all(
                d,
                key(s, 402),
                (2000..2500).map(|j| dup_val(s, j)).collect(),
            );
            for t in 0..100 {
                g.del_dup(d, key(s, 402), dup_val(s, t * 7));
            }
            if s.fixed_val.is_none() {
                // A sub-database of five big values, down to one value.
                for j in [0, 1, 3, 4] {
                    g.del_dup(d, key(s, 403), big_val(j));
                }
            }
            for i in 404..421 {
                g.put(d, key(s, i), dup_val(s, i));
            }
            g.put_all(
                d,
                key(s, 421),
                (0..200).map(|j| dup_val(s, 60_000 + j)).collect(),
            );
        } else {
            for i in 0..800 {
                if i % 5 == 0 {
                    g.del(d, key(s, i));
                } else if i % 7 == 1 {
                    let len = if i < 500 {
                        2100 + i as usize * 3
                    } else {
                        i as usize % 150
                    };
                    g.put(d, key(s, i), plain_val(i, len, 0x5a));
                }
            }
            for i in 800..850 {
                let len = if i % 3 == 0 {
                    3000 + i as usize
                } else {
                    i as usize % 90
                };
                g.put(d, key(s, i), plain_val(i, len, 0));
            }
        }
    }
}

/// Transaction 3 (python3-lmdb's edits): chosen from the current content.
fn python_edits(g: &mut Gen) {
    let specs = g.specs;
    g.next_txn();
    for (d, s) in specs.iter().enumerate() {
        let keys: Vec<Vec<u8>> = g.model[d].keys().cloned().collect();
        for (p, k) in keys.into_iter().enumerate() {
            let p = p as u64;
            if s.dupsort() {
                match p % 9 {
                    0 => {
                        let vals = (0..3).map(|t| dup_val(s, 50_000 + p * 3 + t)).collect();
                        g.put_all(d, k, vals);
                    }
                    4 => {
                        let first = g.model[d][&k].first().unwrap().clone();
                        g.del_dup(d, k, first);
                    }
                    7 => g.del(d, k),
                    _ => {}
                }
            } else {
                match p % 11 {
                    0 => g.del(d, k),
                    5 => {
                        let len = if p.is_multiple_of(2) {
                            2200 + p as usize
                        } else {
                            p as usize % 70
                        };
                        g.put(d, k, plain_val(p, len, 0x33));
                    }
                    _ => {}
                }
            }
        }
        if s.dupsort() {
            // LMDB grows one new key past the sub-page limit (non-DUPFIXED).
            g.put_all(
                d,
                key(s, 900),
                (0..300).map(|j| dup_val(s, 70_000 + j)).collect(),
            );
            for i in 901..911 {
                g.put(d, key(s, i), dup_val(s, i));
            }
        } else {
            for i in 900..930 {
                let len = if i % 4 == 0 {
                    2500 + i as usize
                } else {
                    i as usize % 100
                };
                g.put(d, key(s, i), plain_val(i, len, 0x11));
            }
        }
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        write!(s, "{x:02x}").unwrap();
    }
    s
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// The operations file read by make_flags.py.
fn ops_text(specs: &[Spec], txns: &[Vec<(usize, Op)>]) -> String {
    let mut s = String::new();
    for sp in specs {
        writeln!(s, "B {} {}", sp.name, sp.flags).unwrap();
    }
    for (t, ops) in txns.iter().enumerate() {
        if t > 0 {
            s += "T\n";
        }
        for (d, op) in ops {
            let name = &specs[*d].name;
            match op {
                Op::Put(k, v) => writeln!(s, "P {name} {} {}", hex(k), hex(v)),
                Op::Multi(k, n, v) => writeln!(s, "M {name} {} {n} {}", hex(k), hex(v)),
                Op::Del(k) => writeln!(s, "D {name} {}", hex(k)),
                Op::DelDup(k, v) => writeln!(s, "X {name} {} {}", hex(k), hex(v)),
            }
            .unwrap();
        }
    }
    s
}

type Items = Vec<(Vec<u8>, Vec<u8>)>;

/// make_flags.py's output: every database's items in LMDB's order.
fn read_dump(path: &Path) -> BTreeMap<String, Items> {
    let mut out = BTreeMap::new();
    let mut cur = String::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        if let Some(name) = line.strip_prefix("= ") {
            cur = name.to_string();
            out.insert(cur.clone(), Vec::new());
        } else {
            let (k, v) = line.split_once(' ').unwrap();
            out.get_mut(&cur).unwrap().push((unhex(k), unhex(v)));
        }
    }
    out
}

fn as_content(items: &Items) -> Content {
    let mut c = Content::new();
    for (k, v) in items {
        c.entry(k.clone()).or_default().insert(v.clone());
    }
    c
}

fn run(cmd: &str, args: &[&str]) -> (bool, String, String) {
    let o = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn need_tools() {
    debian::lmdb_utils();
    debian::python3_lmdb();
}

/// Run make_flags.py; returns its dump of every database.
fn python(mode: &str, env: &Path, ops: &Path, expected: Option<&Path>) -> BTreeMap<String, Items> {
    let out = ops.with_extension("dump");
    let mut args = vec![
        SCRIPT,
        mode,
        env.to_str().unwrap(),
        ops.to_str().unwrap(),
        out.to_str().unwrap(),
    ];
    if let Some(e) = expected {
        args.push(e.to_str().unwrap());
    }
    let (ok, _, err) = run("/usr/bin/python3", &args);
    assert!(ok, "make_flags.py {mode} on {env:?} failed:\n{err}");
    read_dump(&out)
}

/// The whole test setup: specs, operations, and LMDB's own file.
struct Setup {
    specs: Vec<Spec>,
    txns: Vec<Vec<(usize, Op)>>,
    /// Content after python's edits (transaction 3).
    model3: Vec<Content>,
    work: tempfile::TempDir,
    /// LMDB's environment and its dump after transactions 1 and 2.
    theirs: PathBuf,
    expected: BTreeMap<String, Items>,
}

fn setup() -> Setup {
    let specs = specs();
    let mut g = Gen {
        specs: &specs,
        model: vec![Content::new(); specs.len()],
        txns: vec![Vec::new()],
    };
    load_and_edit(&mut g);
    let model2 = g.model.clone();
    python_edits(&mut g);
    let (model3, txns) = (g.model, g.txns);

    let work = tempfile::tempdir().unwrap();
    let ops12 = work.path().join("load.ops");
    std::fs::write(&ops12, ops_text(&specs, &txns[..2])).unwrap();
    let ops3 = work.path().join("edit.ops");
    std::fs::write(&ops3, ops_text(&specs, &txns[2..])).unwrap();
    let theirs = work.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let expected = python("create", &theirs, &ops12, None);
    // The generator and LMDB agree on the content (order aside).
    assert_eq!(expected.len(), specs.len());
    for (d, s) in specs.iter().enumerate() {
        assert!(
            as_content(&expected[&s.name]) == model2[d],
            "LMDB's {} differs from the generated content",
            s.name
        );
    }
    Setup {
        specs,
        txns,
        model3,
        work,
        theirs,
        expected,
    }
}

/// Report the first difference between two long item lists.
fn same_items(what: &str, got: &Items, want: &Items) {
    if got == want {
        return;
    }
    let i = got.iter().zip(want).take_while(|(a, b)| a == b).count();
    let show = |x: Option<&(Vec<u8>, Vec<u8>)>| x.map(|(k, v)| (hex(k), hex(v)));
    panic!(
        "{what}: {} items, expected {}; first difference at item {i}: got {:?}, expected {:?}",
        got.len(),
        want.len(),
        show(got.get(i)),
        show(want.get(i))
    );
}

fn owned(kv: (&[u8], &[u8])) -> (Vec<u8>, Vec<u8>) {
    (kv.0.to_vec(), kv.1.to_vec())
}

/// Read database `s` with every cursor operation that applies and compare
/// with `want` (LMDB's order).
fn verify_db(r: &RoTxn, s: &Spec, want: &Items) {
    let name = &s.name;
    let db = r.open_db(name).unwrap();
    assert_eq!(r.db_flags(db).unwrap().bits(), s.flags, "{name}: flags");
    assert_eq!(
        r.stat(db).unwrap().entries,
        want.len() as u64,
        "{name}: entries"
    );

    // Full walks, both directions.
    let mut c = r.cursor(db).unwrap();
    let mut got = Vec::new();
    let mut at = c.first().unwrap();
    while let Some(kv) = at {
        got.push(owned(kv));
        at = c.next().unwrap();
    }
    same_items(&format!("{name}: first/next"), &got, want);
    got.clear();
    let mut at = c.last().unwrap();
    while let Some(kv) = at {
        got.push(owned(kv));
        at = c.prev().unwrap();
    }
    got.reverse();
    same_items(&format!("{name}: last/prev, reversed"), &got, want);

    // Key by key: next_nodup, next_dup, count, get, get_both, MULTIPLE.
    let mut groups: Vec<(&[u8], Vec<&[u8]>)> = Vec::new();
    for (k, v) in want {
        match groups.last_mut() {
            Some((gk, vals)) if *gk == &k[..] => vals.push(v),
            _ => groups.push((k, vec![v])),
        }
    }
    let absent = dup_val(s, 999_999);
    let mut c = r.cursor(db).unwrap();
    let mut m = r.cursor(db).unwrap();
    let mut at = c.first().unwrap();
    for (n, (k, vals)) in groups.iter().enumerate() {
        let (ck, cv) = at.unwrap_or_else(|| panic!("{name}: key {n} missing"));
        assert_eq!((ck, cv), (*k, vals[0]), "{name}: key {n}, first value");
        assert_eq!(r.get(db, k).unwrap(), Some(vals[0]), "{name}: get key {n}");
        if s.dupsort() {
            assert_eq!(
                c.count().unwrap(),
                vals.len() as u64,
                "{name}: count key {n}"
            );
            let mut dups = vec![cv];
            while let Some((dk, dv)) = c.next_dup().unwrap() {
                assert_eq!(dk, *k, "{name}: next_dup left key {n}");
                dups.push(dv);
            }
            assert!(dups == *vals, "{name}: next_dup values of key {n}");
            for (j, v) in vals.iter().enumerate() {
                if j == 0 || j == vals.len() - 1 || (n + j) % 23 == 0 {
                    assert_eq!(
                        m.get_both(k, v).unwrap(),
                        Some((*k, *v)),
                        "{name}: get_both key {n} value {j}"
                    );
                }
            }
            assert_eq!(
                m.get_both(k, &absent).unwrap(),
                None,
                "{name}: get_both absent"
            );
        }
        if s.dupfixed() {
            m.set_key(k).unwrap().unwrap();
            let mut packed = m.get_multiple().unwrap().unwrap().to_vec();
            while let Some(b) = m.next_multiple().unwrap() {
                packed.extend_from_slice(b);
            }
            assert!(
                packed == vals.concat(),
                "{name}: MULTIPLE values of key {n}"
            );
        }
        at = c.next_nodup().unwrap();
    }
    assert_eq!(at, None, "{name}: next_nodup past the last key");
}

/// Our engine reads every database of `dir` as `want` says; statistics equal
/// what `mdb_stat` prints; then `check_file` must find nothing wrong.
fn verify_env(dir: &Path, specs: &[Spec], want: &BTreeMap<String, Items>) {
    {
        let env = EnvOptions::new()
            .max_dbs(64)
            .map_size(MAP_SIZE)
            .open(dir)
            .unwrap();
        let r = env.read_txn().unwrap();
        let d = dir.to_str().unwrap();
        let text = |name: &str, st: mdb::Stat| {
            format!(
                "Status of {name}\n  Tree depth: {}\n  Branch pages: {}\n  Leaf pages: {}\n  Overflow pages: {}\n  Entries: {}\n",
                st.depth, st.branch_pages, st.leaf_pages, st.overflow_pages, st.entries
            )
        };
        let main = r.stat(Database::MAIN).unwrap();
        assert_eq!(main.entries, specs.len() as u64);
        assert_eq!(run("/usr/bin/mdb_stat", &[d]).1, text("Main DB", main));
        for s in specs {
            verify_db(&r, s, &want[&s.name]);
            let st = r.stat(r.open_db(&s.name).unwrap()).unwrap();
            let (ok, out, err) = run("/usr/bin/mdb_stat", &["-s", &s.name, d]);
            assert!(ok, "mdb_stat -s {}: {err}", s.name);
            assert_eq!(text(&s.name, st), out, "statistics of {}", s.name);
        }
    }
    let rep = check::check_file(&dir.join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "check_file {dir:?}: {:#?}", rep.problems);
}

/// `mdb_dump -a`, without the mapsize line.
fn dump_all(dir: &Path) -> String {
    let (ok, out, err) = run("/usr/bin/mdb_dump", &["-a", dir.to_str().unwrap()]);
    assert!(ok, "mdb_dump -a {dir:?}: {err}");
    out.lines()
        .filter(|l| !l.starts_with("mapsize="))
        .fold(String::new(), |s, l| s + l + "\n")
}

/// Our engine applies transactions 1 and 2 to a new environment `ours`.
fn write_ours(st: &Setup) -> PathBuf {
    let specs = &st.specs;
    let ours = st.work.path().join("ours");
    std::fs::create_dir(&ours).unwrap();
    let env = EnvOptions::new()
        .max_dbs(64)
        .map_size(MAP_SIZE)
        .open(&ours)
        .unwrap();
    for (t, ops) in st.txns[..2].iter().enumerate() {
        let mut w = env.write_txn().unwrap();
        let dbs: Vec<Database> = specs
            .iter()
            .map(|s| match t {
                0 => w.create_db(&s.name, DbFlags(s.flags)).unwrap(),
                _ => w.open_db(&s.name).unwrap(),
            })
            .collect();
        for (d, op) in ops {
            let (db, name) = (dbs[*d], &specs[*d].name);
            let e = WriteFlags::EMPTY;
            match op {
                Op::Put(k, v) => w
                    .put(db, k, v, e)
                    .unwrap_or_else(|x| panic!("{name}: put {}: {x:?}", hex(k))),
                Op::Multi(k, n, v) => {
                    let got = w
                        .put_multiple(db, k, v, *n, e)
                        .unwrap_or_else(|x| panic!("{name}: put_multiple {}: {x:?}", hex(k)));
                    assert_eq!(got, v.len() / n, "{name}: put_multiple count");
                }
                Op::Del(k) => assert!(w.del(db, k).unwrap(), "{name}: del {}", hex(k)),
                Op::DelDup(k, v) => assert!(
                    w.del_dup(db, k, v).unwrap(),
                    "{name}: del_dup {} {}",
                    hex(k),
                    hex(v)
                ),
            }
        }
        w.commit().unwrap();
    }
    // Layouts need not match LMDB's page for page; note how often they do.
    let r = env.read_txn().unwrap();
    let lmdb = EnvOptions::new().max_dbs(64).open(&st.theirs).unwrap();
    let lr = lmdb.read_txn().unwrap();
    let same = specs
        .iter()
        .filter(|s| {
            let a = r.stat(r.open_db(&s.name).unwrap()).unwrap();
            let b = lr.stat(lr.open_db(&s.name).unwrap()).unwrap();
            assert_eq!(a.entries, b.entries, "{}: entries", s.name);
            a == b
        })
        .count();
    eprintln!(
        "{same} of {} databases have LMDB's depth and page counts",
        specs.len()
    );
    ours
}

#[test]
fn we_read_lmdb_files_with_every_flag_combination() {
    need_tools();
    let st = setup();
    verify_env(&st.theirs, &st.specs, &st.expected);
}

#[test]
fn lmdb_reads_our_files_with_every_flag_combination() {
    need_tools();
    let st = setup();
    let ours = write_ours(&st);
    // Our own reading, then LMDB's tools.
    verify_env(&ours, &st.specs, &st.expected);
    assert_eq!(dump_all(&ours), dump_all(&st.theirs), "mdb_dump -a differs");
    let d = ours.to_str().unwrap();
    let (ok, _, err) = run("/usr/bin/mdb_stat", &["-a", "-e", "-f", d]);
    assert!(ok, "mdb_stat -a -e -f: {err}");
    let cp = st.work.path().join("compact");
    std::fs::create_dir(&cp).unwrap();
    let (ok, _, err) = run("/usr/bin/mdb_copy", &["-c", d, cp.to_str().unwrap()]);
    assert!(ok, "mdb_copy -c: {err}");
    // python3-lmdb finds the expected content in every database.
    let none = st.work.path().join("none.ops");
    std::fs::write(&none, ops_text(&st.specs, &[])).unwrap();
    let expected = st.work.path().join("load.dump");
    assert!(python("modify", &ours, &none, Some(&expected)) == st.expected);
}

#[test]
fn lmdb_edits_our_files_with_every_flag_combination() {
    need_tools();
    let st = setup();
    let specs = &st.specs;
    let ours = write_ours(&st);
    // python3-lmdb checks every database of our file, then edits each one.
    let ops3 = st.work.path().join("edit.ops");
    let expected = st.work.path().join("load.dump");
    let after = python("modify", &ours, &ops3, Some(&expected));
    for (d, s) in specs.iter().enumerate() {
        assert!(
            as_content(&after[&s.name]) == st.model3[d],
            "{}: content after python3-lmdb's edits",
            s.name
        );
    }
    // The same edits on LMDB's own file give the same content, in the same order.
    let ops3b = st.work.path().join("edit2.ops");
    std::fs::copy(&ops3, &ops3b).unwrap();
    let after_theirs = python("modify", &st.theirs, &ops3b, Some(&expected));
    assert!(
        after_theirs == after,
        "edits on LMDB's file give other content"
    );
    assert_eq!(
        dump_all(&ours),
        dump_all(&st.theirs),
        "mdb_dump -a after edits"
    );
    // We read back what python3-lmdb reports, and the file is sound.
    verify_env(&ours, specs, &after);
}

/// The smallest case of the bug above: three 5-byte DUPFIXED values, then
/// LMDB deletes one of them.
#[test]
fn lmdb_deletes_from_our_odd_dupfixed_subpage() {
    need_tools();
    let dir = tempfile::tempdir().unwrap();
    {
        let env = EnvOptions::new().max_dbs(2).open(dir.path()).unwrap();
        let mut w = env.write_txn().unwrap();
        let db = w.create_db("f", DbFlags(DUPSORT | DUPFIXED)).unwrap();
        for k in [&b"a"[..], b"k", b"z"] {
            for v in [b"1xxxx", b"2xxxx", b"3xxxx"] {
                w.put(db, k, v, WriteFlags::EMPTY).unwrap();
            }
        }
        w.commit().unwrap();
    }
    let rep = check::check_file(&dir.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:#?}", rep.problems);
    let script = format!(
        "import lmdb\nenv = lmdb.open({:?}, max_dbs=2)\ndb = env.open_db(b'f', dupsort=True, dupfixed=True)\nwith env.begin(write=True, db=db) as t:\n    assert t.delete(b'k', b'2xxxx')\n",
        dir.path().to_str().unwrap()
    );
    let (ok, _, err) = run("/usr/bin/python3", &["-c", &script]);
    assert!(ok, "{err}");
    let rep = check::check_file(&dir.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "after LMDB's delete: {:#?}", rep.problems);
}
