//! Write transactions larger than their memory budget (issue 11): dirty
//! pages spill to the data file and come back when changed again. Model
//! tests against a `BTreeMap` with a tiny budget, through nested
//! transactions, aborts and every storage form; and the memory a large
//! transaction takes (a scaled-down run here; the 8 GB run is ignored
//! unless asked for).

mod common;
#[path = "pylmdb/mod.rs"]
mod pylmdb;

use common::rng;

use mdb::{Database, DbFlags, EnvOptions, Txn, WriteFlags};
use std::collections::BTreeMap;

type Model = BTreeMap<Vec<u8>, Vec<Vec<u8>>>;

fn contents<T: Txn>(t: &T, db: Database) -> Model {
    let mut m = Model::new();
    for kv in t.cursor(db).unwrap().iter() {
        let (k, v) = kv.unwrap();
        m.entry(k.to_vec()).or_default().push(v.to_vec());
    }
    m
}

#[test]
fn spilled_transactions_match_a_model() {
    for seed in 1..=4u64 {
        let mut rnd = rng(0x9e37_79b9_7f4a_7c15 ^ seed);
        let tmp = tempfile::tempdir().unwrap();
        // 64 pages of dirty memory: every few puts spill.
        let env = EnvOptions::new()
            .max_dbs(2)
            .txn_memory(256 << 10)
            .open(tmp.path())
            .unwrap();
        let mut plain = Model::new();
        let mut dups = Model::new();
        let mut committed = (Model::new(), Model::new());
        for round in 0..3 {
            let mut w = env.write_txn().unwrap();
            let p = w.create_db("plain", DbFlags::EMPTY).unwrap();
            let d = w.create_db("dups", DbFlags::DUP_SORT).unwrap();
            for step in 0..3000 {
                let k = format!("{:05}", rnd(4000)).into_bytes();
                match rnd(10) {
                    0..=4 => {
                        let len = if rnd(12) == 0 {
                            5000 + rnd(20000)
                        } else {
                            rnd(400)
                        };
                        let v = vec![(step % 251) as u8; len as usize];
                        w.put(p, &k, &v, WriteFlags::EMPTY).unwrap();
                        plain.insert(k, vec![v]);
                    }
                    5 | 6 => {
                        let v = format!("d{:04}", rnd(300)).into_bytes();
                        w.put(d, &k[..3], &v, WriteFlags::EMPTY).unwrap();
                        let e = dups.entry(k[..3].to_vec()).or_default();
                        if let Err(i) = e.binary_search(&v) {
                            e.insert(i, v);
                        }
                    }
                    7 => {
                        assert_eq!(w.del(p, &k).unwrap(), plain.remove(&k).is_some());
                    }
                    8 => {
                        let kk = &k[..3];
                        assert_eq!(w.del(d, kk).unwrap(), dups.remove(kk).is_some());
                    }
                    _ => {
                        // Reads see spilled pages like any other.
                        let got = w.get(p, &k).unwrap().map(<[u8]>::to_vec);
                        assert_eq!(got, plain.get(&k).map(|v| v[0].clone()));
                    }
                }
                if step % 700 == 699 {
                    // A nested transaction over spilled pages: aborted,
                    // then committed.
                    let (sp, sd) = (plain.clone(), dups.clone());
                    {
                        let mut c = w.nested().unwrap();
                        for i in 0..200u32 {
                            let k = format!("{:05}", rnd(4000)).into_bytes();
                            c.put(p, &k, &i.to_be_bytes(), WriteFlags::EMPTY).unwrap();
                            c.del(d, &k[..3]).unwrap();
                        }
                    }
                    common::same_model(&contents(&w, p), &sp, "after an aborted child");
                    common::same_model(&contents(&w, d), &sd, "dups after an aborted child");
                    let mut c = w.nested().unwrap();
                    for i in 0..50u32 {
                        let k = format!("{:05}", rnd(4000)).into_bytes();
                        c.put(p, &k, &i.to_be_bytes(), WriteFlags::EMPTY).unwrap();
                        plain.insert(k, vec![i.to_be_bytes().to_vec()]);
                    }
                    c.commit().unwrap();
                }
            }
            assert!(w.spills() > 0, "seed {seed}: the budget made it spill");
            common::same_model(&contents(&w, p), &plain, "in the transaction");
            common::same_model(&contents(&w, d), &dups, "dups in the transaction");
            if round == 1 {
                // An abort leaves nothing of it (the spilled pages are free
                // or past the end).
                drop(w);
                plain = committed.0.clone();
                dups = committed.1.clone();
            } else {
                w.commit().unwrap();
                committed = (plain.clone(), dups.clone());
            }
            let r = env.read_txn().unwrap();
            let p = r.open_db("plain").unwrap();
            let d = r.open_db("dups").unwrap();
            common::same_model(&contents(&r, p), &plain, "committed");
            common::same_model(&contents(&r, d), &dups, "committed dups");
        }
        drop(env);
        let rep = mdb::check::check_file(&tmp.path().join("data.mdb")).unwrap();
        assert!(rep.is_ok(), "seed {seed}: {:?}", rep.problems);
        pylmdb::assert_clean(tmp.path());
    }
}

/// Resident memory of this process: the heap and mapped file pages (the
/// map), in bytes.
fn resident() -> u64 {
    rss("RssAnon:") + rss("RssFile:")
}

/// A resident-set line of /proc/self/status, in bytes.
fn rss(what: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix(what))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .unwrap();
    kb << 10
}

/// One transaction writes `total` bytes of 64 KiB values in random key
/// order with a `budget`; returns the growth of the resident set.
fn big_transaction(total: u64, budget: usize) -> u64 {
    let tmp = tempfile::tempdir().unwrap(); // on disk
    let env = EnvOptions::new()
        .txn_memory(budget)
        .flags(mdb::EnvFlags::NO_SYNC)
        .open(tmp.path())
        .unwrap();
    let before = resident();
    let mut peak = before;
    let n = (total >> 16) as u32;
    let mut rnd = rng(7);
    let v = vec![0x5au8; 64 << 10];
    let mut w = env.write_txn().unwrap();
    for i in 0..n {
        let k = (rnd(1 << 40) ^ i as u64).to_be_bytes();
        w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
        if i % 256 == 0 {
            peak = peak.max(resident());
        }
    }
    assert!(w.spills() > 0);
    w.commit().unwrap();
    assert_eq!(
        env.read_txn()
            .unwrap()
            .stat(Database::MAIN)
            .unwrap()
            .entries,
        n as u64
    );
    peak.saturating_sub(before)
}

#[test]
fn a_large_transaction_keeps_to_its_budget() {
    // 1 GiB through a 32 MiB budget; without spilling it would take the
    // whole GiB.
    let grew = big_transaction(1 << 30, 32 << 20);
    assert!(
        grew < 160 << 20,
        "the resident set grew by {} MiB",
        grew >> 20
    );
}

/// The run: a single 8 GB transaction with a resident set under
/// 2 GB (`MDB_SPILL_GB` sets another size).
#[test]
#[ignore = "8 GB, by hand: cargo test --release -p mdb --test spill -- --ignored --nocapture eight"]
fn eight_gb_transaction_by_hand() {
    let gb = match std::env::var("MDB_SPILL_GB") {
        Ok(v) => v.parse::<u64>().expect("MDB_SPILL_GB: a size in GiB"),
        Err(_) => 8,
    };
    let grew = big_transaction(gb << 30, mdb::DEFAULT_TXN_MEMORY);
    println!(
        "{gb} GiB in one transaction: the resident set grew by {} MiB",
        grew >> 20
    );
    assert!(grew < 2 << 30);
}
