//! Commit-time placement (`tree::place`): a transaction that rewrote most of
//! a tree leaves its leaves in the file in key order. The file is read here
//! as raw pages (LMDB 0.9 layout) to see the order; the contents are checked
//! against a model, by the checker, across reopening, and by Debian's LMDB.

mod common;
mod debian;

use common::{rng, same_model};
use mdb::{Database, DbFlags, Env, EnvOptions, Txn, WriteFlags};
use std::collections::BTreeMap;
use std::path::Path;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// A DUPSORT database's model: each key's set of values.
type Dups = BTreeMap<Vec<u8>, std::collections::BTreeSet<Vec<u8>>>;

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The file's pages, its page size and the meta page in use.
struct File {
    bytes: Vec<u8>,
    ps: usize,
}

impl File {
    fn read(dir: &Path) -> File {
        let bytes = std::fs::read(dir.join("data.mdb")).unwrap();
        // The page size is recorded as the free database's `md_pad`.
        let ps = u32::from_le_bytes(bytes[40..44].try_into().unwrap());
        File {
            bytes,
            ps: ps as usize,
        }
    }

    fn page(&self, pg: u64) -> &[u8] {
        &self.bytes[pg as usize * self.ps..][..self.ps]
    }

    /// Root of MAIN in the newer meta page.
    fn main_root(&self) -> u64 {
        let (a, b) = (self.page(0), self.page(1));
        let m = if u64_at(a, 144) >= u64_at(b, 144) {
            a
        } else {
            b
        };
        u64_at(m, 128)
    }

    /// Nodes of page `pg`: their offsets in the page.
    fn nodes(&self, pg: u64) -> Vec<usize> {
        let p = self.page(pg);
        assert_eq!(u64_at(p, 0), pg, "page {pg} names itself");
        let n = (u16_at(p, 12) - 16) / 2;
        (0..n).map(|i| u16_at(p, 16 + 2 * i)).collect()
    }

    /// Leaf page numbers of the tree at `root`, in key order.
    fn leaves(&self, root: u64) -> Vec<u64> {
        let p = self.page(root);
        if u16_at(p, 10) & 1 == 0 {
            return vec![root];
        }
        self.nodes(root)
            .into_iter()
            .flat_map(|off| {
                let child = u16_at(p, off) as u64
                    | (u16_at(p, off + 2) as u64) << 16
                    | (u16_at(p, off + 4) as u64) << 32;
                self.leaves(child)
            })
            .collect()
    }

    /// Root of the named database `name`, from its record in MAIN.
    fn named_root(&self, name: &[u8]) -> u64 {
        for pg in self.leaves(self.main_root()) {
            let p = self.page(pg);
            for off in self.nodes(pg) {
                let ks = u16_at(p, off + 6);
                if &p[off + 8..off + 8 + ks] == name {
                    return u64_at(p, off + 8 + ks + 40);
                }
            }
        }
        panic!("no record for {name:?}");
    }
}

fn ascending(v: &[u64]) -> bool {
    v.windows(2).all(|w| w[0] < w[1])
}

fn key_val(next: &mut impl FnMut(u64) -> u64) -> (Vec<u8>, Vec<u8>) {
    let k: Vec<u8> = (0..8 + next(17)).map(|_| next(256) as u8).collect();
    let v: Vec<u8> = (0..20 + next(180)).map(|_| next(256) as u8).collect();
    (k, v)
}

fn contents<T: Txn>(t: &T, db: Database) -> Model {
    t.cursor(db)
        .unwrap()
        .iter()
        .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect()
}

/// With NO_TLS: the tests hold several read transactions in one thread.
fn dup_contents<T: Txn>(t: &T, db: Database) -> Dups {
    let mut got = Dups::new();
    for kv in t.cursor(db).unwrap().iter() {
        let (k, v) = kv.unwrap();
        got.entry(k.to_vec()).or_default().insert(v.to_vec());
    }
    got
}

/// `n` random items put into MAIN in one committed transaction.
fn bulk_main(env: &Env, seed: u64, n: usize) -> Model {
    let mut next = rng(seed);
    let mut model = Model::new();
    let mut w = env.write_txn().unwrap();
    for _ in 0..n {
        let (k, v) = key_val(&mut next);
        w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
    model
}

/// The checker finds nothing in the data file.
fn assert_sound(dir: &Path, what: &str) {
    let rep = mdb::check::check_file(&dir.join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{what}: {:?}", rep.problems);
}

/// MAIN's leaves in the data file are many and in key order.
fn assert_main_placed(dir: &Path, what: &str) {
    let f = File::read(dir);
    let leaves = f.leaves(f.main_root());
    assert!(leaves.len() > 100, "{what}: {} leaves", leaves.len());
    assert!(ascending(&leaves), "{what}: MAIN's leaves out of key order");
}

fn open(dir: &Path) -> Env {
    EnvOptions::new()
        .max_dbs(4)
        .flags(mdb::EnvFlags::NO_TLS)
        .open(dir)
        .unwrap()
}

/// Every item through Debian's python3-lmdb, as `hex(key) hex(value)` lines.
fn debian_lines(dir: &Path, db: Option<&str>) -> String {
    let name = db.map_or("None".to_string(), |n| format!("b'{n}'"));
    let script = format!(
        "import lmdb,sys\n\
         e=lmdb.open('{}',readonly=True,lock=False,max_dbs=4)\n\
         d=e.open_db({name},dupsort={name}==b'dups') if {name} is not None else None\n\
         with e.begin(db=d) as t:\n\
         \x20for k,v in t.cursor():\n\
         \x20\x20sys.stdout.write(k.hex()+' '+v.hex()+'\\n')\n",
        dir.display()
    );
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn model_lines(m: &Model) -> String {
    m.iter()
        .map(|(k, v)| format!("{} {}\n", hex(k), hex(v)))
        .collect()
}

#[test]
fn a_bulk_load_leaves_its_leaves_in_key_order() {
    debian::python3_lmdb();
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut next = rng(0x51ac_e5ee_d000_0001);
    let (mut main, mut named) = (Model::new(), Model::new());
    let mut dups: Dups = BTreeMap::new();
    let mut w = env.write_txn().unwrap();
    let n = w.create_db("named", DbFlags::EMPTY).unwrap();
    let d = w.create_db("dups", DbFlags::DUP_SORT).unwrap();
    for i in 0..20_000 {
        let (k, v) = key_val(&mut next);
        w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
        main.insert(k, v);
        let (k, v) = key_val(&mut next);
        w.put(n, &k, &v, WriteFlags::EMPTY).unwrap();
        named.insert(k, v);
        // Keys with one value, a few, and (every 500th) hundreds: values
        // inline, in sub-pages and in sub-databases.
        let (k, _) = key_val(&mut next);
        let count = match i % 500 {
            0 => 300,
            j if j % 3 == 0 => 1 + next(8),
            _ => 1,
        };
        for _ in 0..count {
            let v: Vec<u8> = (0..4 + next(12)).map(|_| next(256) as u8).collect();
            w.put(d, &k, &v, WriteFlags::EMPTY).unwrap();
            dups.entry(k.clone()).or_default().insert(v);
        }
    }
    w.commit().unwrap();

    let f = File::read(dir.path());
    let lm = f.leaves(f.main_root());
    let ln = f.leaves(f.named_root(b"named"));
    let ld = f.leaves(f.named_root(b"dups"));
    assert!(lm.len() > 100 && ln.len() > 100 && ld.len() > 100);
    assert!(ascending(&lm), "MAIN's leaves are not in key order: {lm:?}");
    assert!(
        ascending(&ln),
        "the named database's leaves are out of key order"
    );
    assert!(
        ascending(&ld),
        "the DUPSORT database's leaves are out of key order"
    );
    assert_sound(dir.path(), "bulk load");

    let r = env.read_txn().unwrap();
    let mut seen = contents(&r, Database::MAIN);
    let record = seen.remove(&b"named"[..]).expect("named's record");
    let dups_record = seen.remove(&b"dups"[..]).expect("dups' record");
    same_model(&seen, &main, "MAIN");
    same_model(&contents(&r, r.open_db("named").unwrap()), &named, "named");
    let got = dup_contents(&r, r.open_db("dups").unwrap());
    assert!(got == dups, "the DUPSORT database's contents differ");
    drop(r);
    drop(env);
    // Debian's LMDB reads the same items.
    assert_eq!(debian_lines(dir.path(), Some("named")), model_lines(&named));
    let dup_lines: String = dups
        .iter()
        .flat_map(|(k, vs)| vs.iter().map(move |v| format!("{} {}\n", hex(k), hex(v))))
        .collect();
    assert_eq!(debian_lines(dir.path(), Some("dups")), dup_lines);
    let mut with_records = main;
    with_records.insert(b"named".to_vec(), record);
    with_records.insert(b"dups".to_vec(), dups_record);
    assert_eq!(debian_lines(dir.path(), None), model_lines(&with_records));
}

/// Big rewrites (placed) and small edits (not) in turn, with readers
/// holding old snapshots, DUPSORT and overflow values in the mix: every
/// commit matches the model, every snapshot stays as it was, the checker
/// finds nothing, and a reopened environment reads the same.
#[test]
fn placed_and_unplaced_commits_keep_every_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut next = rng(0x51ac_e5ee_d000_0002);
    let mut model = Model::new();
    let mut dups: Dups = BTreeMap::new();
    let mut w = env.write_txn().unwrap();
    let d = w.create_db("dups", DbFlags::DUP_SORT).unwrap();
    w.commit().unwrap();
    let mut held = Vec::new();
    for round in 0..12 {
        let big = round % 3 != 2;
        let mut w = env.write_txn().unwrap();
        if big {
            // Rewrite every existing item and add as many again.
            let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
            for k in keys {
                let v: Vec<u8> = (0..20 + next(180)).map(|_| next(256) as u8).collect();
                w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
                model.insert(k, v);
            }
            for _ in 0..3000 {
                let (k, mut v) = key_val(&mut next);
                if next(50) == 0 {
                    v = vec![next(256) as u8; 5000 + next(5000) as usize];
                }
                w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
                model.insert(k, v);
                let dk = vec![next(40) as u8];
                let (dv, _) = key_val(&mut next);
                w.put(d, &dk, &dv, WriteFlags::EMPTY).unwrap();
                dups.entry(dk).or_default().insert(dv);
            }
        } else {
            for _ in 0..50 {
                if next(3) == 0 && !model.is_empty() {
                    let k = model
                        .keys()
                        .nth(next(model.len() as u64) as usize)
                        .unwrap()
                        .clone();
                    w.del(Database::MAIN, &k).unwrap();
                    model.remove(&k);
                } else {
                    let (k, v) = key_val(&mut next);
                    w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
                    model.insert(k, v);
                }
            }
        }
        w.commit().unwrap();
        assert_sound(dir.path(), &format!("round {round}"));
        let r = env.read_txn().unwrap();
        let mut seen = contents(&r, Database::MAIN);
        seen.remove(&b"dups"[..]);
        same_model(&seen, &model, &format!("round {round}"));
        assert!(
            dup_contents(&r, d) == dups,
            "round {round}: DUPSORT contents differ"
        );
        if big {
            assert_main_placed(dir.path(), &format!("round {round}"));
        }
        held.push((r, seen));
        // Old snapshots read as they were when taken.
        for (i, (r, m)) in held.iter().enumerate() {
            let mut now = contents(r, Database::MAIN);
            now.remove(&b"dups"[..]);
            same_model(&now, m, &format!("snapshot {i} after round {round}"));
        }
        if held.len() > 3 {
            held.remove(0);
        }
    }
    drop(held);
    drop(env);
    let env = open(dir.path());
    let r = env.read_txn().unwrap();
    let mut seen = contents(&r, Database::MAIN);
    seen.remove(&b"dups"[..]);
    same_model(&seen, &model, "reopened");
}

/// In WAL mode the placed pages go to the log, and from it to the data
/// file: after a roll-forward (a reopen without a checkpoint) and after a
/// checkpoint the leaves are in key order and the contents match.
#[test]
fn placed_pages_go_through_the_write_ahead_log() {
    let dir = tempfile::tempdir().unwrap();
    let wal = || {
        let mut o = EnvOptions::new();
        o.max_dbs(4)
            .flags(mdb::EnvFlags::NO_TLS)
            .wal(mdb::WalOptions::default());
        o
    };
    let env = wal().open(dir.path()).unwrap();
    let model = bulk_main(&env, 0x51ac_e5ee_d000_0003, 20_000);
    // Gone without a checkpoint: the commit is in the log only.
    std::mem::forget(env);
    let env = wal().open(dir.path()).unwrap();
    same_model(
        &contents(&env.read_txn().unwrap(), Database::MAIN),
        &model,
        "rolled forward",
    );
    env.checkpoint().unwrap();
    assert_main_placed(dir.path(), "after the checkpoint");
    assert_sound(dir.path(), "after the checkpoint");
}

/// Under WRITE_MAP the commit copies the dirty buffers into the writable
/// map: the placed pages land there in key order as well.
#[test]
fn placed_pages_under_write_map() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .flags(mdb::EnvFlags::WRITE_MAP)
        .open(dir.path())
        .unwrap();
    let model = bulk_main(&env, 0x51ac_e5ee_d000_0004, 20_000);
    same_model(
        &contents(&env.read_txn().unwrap(), Database::MAIN),
        &model,
        "WRITE_MAP",
    );
    assert_main_placed(dir.path(), "WRITE_MAP");
    assert_sound(dir.path(), "WRITE_MAP");
}
