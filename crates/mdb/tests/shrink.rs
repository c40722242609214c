//! Shrinking in place moves pages of every storage form (branch and leaf
//! pages, overflow runs, named databases, duplicate sub-databases) and
//! changes no data: random workloads, then `Env::shrink`, then the same
//! contents, a clean check, and LMDB's `mdb_dump` printing the same.

mod common;
mod debian;
#[path = "pylmdb/mod.rs"]
mod pylmdb;

use mdb::{Database, DbFlags, EnvOptions, Txn, WriteFlags};
use std::collections::BTreeMap;
use std::process::Command;

type Model = BTreeMap<(u8, Vec<u8>), Vec<Vec<u8>>>;

/// Everything in the three databases, in order, but the named databases'
/// records (which say where their trees are).
fn contents<T: Txn>(t: &T, dbs: &[Database; 3]) -> Model {
    let mut m = Model::new();
    for (n, db) in dbs.iter().enumerate() {
        for kv in t.cursor(*db).unwrap().iter() {
            let (k, v) = kv.unwrap();
            if n == 0 && (k == b"plain" || k == b"dups") {
                continue;
            }
            m.entry((n as u8, k.to_vec())).or_default().push(v.to_vec());
        }
    }
    m
}

/// LMDB's dump of the two named databases.
fn lmdb_dump(dir: &std::path::Path) -> String {
    let mut out = String::new();
    for name in ["plain", "dups"] {
        out += &dump_one(dir, name);
    }
    out
}

fn dump_one(dir: &std::path::Path, name: &str) -> String {
    let o = Command::new("/usr/bin/mdb_dump")
        .args(["-s", name, dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with("mapsize="))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn shrink_keeps_every_storage_form() {
    debian::lmdb_utils();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for round in 0..6 {
        let tmp = tempfile::tempdir().unwrap();
        let env = EnvOptions::new().max_dbs(4).open(tmp.path()).unwrap();
        let mut w = env.write_txn().unwrap();
        let dbs = [
            Database::MAIN,
            w.create_db("plain", DbFlags::EMPTY).unwrap(),
            w.create_db("dups", DbFlags::DUP_SORT).unwrap(),
        ];
        w.commit().unwrap();
        // A few commits of inserts, big values and many duplicates among them.
        for _ in 0..4 {
            let mut w = env.write_txn().unwrap();
            for _ in 0..600 {
                let k = format!("k{:05}", rnd(3000)).into_bytes();
                let big = rnd(10) == 0;
                let v = vec![
                    rnd(256) as u8;
                    if big {
                        9000 + rnd(9000) as usize
                    } else {
                        1 + rnd(300) as usize
                    }
                ];
                w.put(dbs[rnd(2) as usize], &k, &v, WriteFlags::EMPTY)
                    .unwrap();
                let d = format!("d{:06}", rnd(1_000_000)).into_bytes();
                w.put(dbs[2], &k[..3 + rnd(2) as usize], &d, WriteFlags::EMPTY)
                    .unwrap();
            }
            w.commit().unwrap();
        }
        // Then deletes: most keys, or the ones written first.
        let mut w = env.write_txn().unwrap();
        for db in dbs {
            let keys: Vec<Vec<u8>> = w
                .cursor(db)
                .unwrap()
                .iter()
                .map(|kv| kv.unwrap().0.to_vec())
                .collect();
            for k in keys {
                if rnd(10) < 6 + round % 3 {
                    let _ = w.del(db, &k);
                }
            }
        }
        w.commit().unwrap();
        let before = contents(&env.read_txn().unwrap(), &dbs);
        let dump_before = lmdb_dump(tmp.path());
        let len_before = std::fs::metadata(tmp.path().join("data.mdb"))
            .unwrap()
            .len();
        let len = env.shrink().unwrap();
        assert!(len < len_before, "round {round}: {len} of {len_before}");
        common::same_model(
            &contents(&env.read_txn().unwrap(), &dbs),
            &before,
            &format!("round {round}"),
        );
        // Writes go on as usual afterwards.
        let mut w = env.write_txn().unwrap();
        w.put(dbs[1], b"after", b"shrink", WriteFlags::EMPTY)
            .unwrap();
        w.del(dbs[1], b"after").unwrap();
        w.commit().unwrap();
        drop(env);
        let rep = mdb::check::check_file(&tmp.path().join("data.mdb")).unwrap();
        assert!(rep.is_ok(), "round {round}: {:?}", rep.problems);
        pylmdb::assert_clean(tmp.path());
        assert!(
            lmdb_dump(tmp.path()) == dump_before,
            "round {round}: dumps differ"
        );
    }
}
