//! Double-ended ranges and prefixes (`Txn::range`, `Txn::prefix`) against a
//! model: random databases, plain and DUPSORT, random bounds of every kind,
//! and random interleavings of `next` and `next_back`.

mod common;

use common::rng;
use mdb::{Database, DbFlags, EnvOptions, Txn, WriteFlags};
use std::ops::Bound;

type Pair = (Vec<u8>, Vec<u8>);

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(&k[..]),
        Bound::Excluded(k) => Bound::Excluded(&k[..]),
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("{i:03}").into_bytes()
}

#[test]
fn ranges_from_both_ends_match_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    let env = EnvOptions::new().max_dbs(3).open(tmp.path()).unwrap();
    let mut rnd = rng(0x5eed);
    let mut w = env.write_txn().unwrap();
    let plain = w.create_db("plain", DbFlags::EMPTY).unwrap();
    let dups = w.create_db("dups", DbFlags::DUP_SORT).unwrap();
    let mut model_plain = std::collections::BTreeMap::new();
    let mut model_dups = std::collections::BTreeSet::new();
    for _ in 0..600 {
        let k = key(rnd(400));
        let v = format!("v{}", rnd(1000)).into_bytes();
        w.put(plain, &k, &v, WriteFlags::EMPTY).unwrap();
        model_plain.insert(k.clone(), v.clone());
        w.put(dups, &k, &v, WriteFlags::EMPTY).unwrap();
        model_dups.insert((k, v));
    }
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    let bound = |rnd: &mut dyn FnMut(u64) -> u64| -> Bound<Vec<u8>> {
        match rnd(4) {
            0 => Bound::Unbounded,
            1 => Bound::Included(key(rnd(420))),
            _ => Bound::Excluded(key(rnd(420))),
        }
    };
    let inside = |k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>| {
        (match lo {
            Bound::Unbounded => true,
            Bound::Included(s) => k >= &s[..],
            Bound::Excluded(s) => k > &s[..],
        }) && (match hi {
            Bound::Unbounded => true,
            Bound::Included(e) => k <= &e[..],
            Bound::Excluded(e) => k < &e[..],
        })
    };
    for case in 0..3000 {
        let (lo, hi) = (bound(&mut rnd), bound(&mut rnd));
        let use_dups = case % 2 == 1;
        let want: Vec<Pair> = if use_dups {
            model_dups
                .iter()
                .filter(|(k, _)| inside(k, &lo, &hi))
                .cloned()
                .collect()
        } else {
            model_plain
                .iter()
                .filter(|(k, _)| inside(k, &lo, &hi))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let db = if use_dups { dups } else { plain };
        let mut it = r.range(db, (as_ref(&lo), as_ref(&hi))).unwrap();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        loop {
            let from_back = rnd(3) == 0;
            let got = if from_back { it.next_back() } else { it.next() };
            match got {
                None => break,
                Some(kv) => {
                    let (k, v) = kv.unwrap();
                    let p = (k.to_vec(), v.to_vec());
                    if from_back {
                        back.push(p)
                    } else {
                        front.push(p)
                    }
                }
            }
        }
        assert!(it.next().is_none() && it.next_back().is_none());
        back.reverse();
        front.extend(back);
        assert_eq!(front, want, "case {case}: {lo:?}..{hi:?} dups {use_dups}");
    }
    // Keys with their values as nested iterators, values from both ends.
    let mut want: Vec<(Vec<u8>, Vec<Vec<u8>>)> = Vec::new();
    for (k, v) in &model_dups {
        match want.last_mut() {
            Some((lk, vs)) if lk == k => vs.push(v.clone()),
            _ => want.push((k.clone(), vec![v.clone()])),
        }
    }
    let mut got = Vec::new();
    for (i, g) in r.groups(dups).unwrap().enumerate() {
        let (k, vals) = g.unwrap();
        let mut vs: Vec<Vec<u8>> = if i % 2 == 0 {
            vals.map(|v| v.unwrap().to_vec()).collect()
        } else {
            let mut b: Vec<Vec<u8>> = vals.rev().map(|v| v.unwrap().to_vec()).collect();
            b.reverse();
            b
        };
        vs.dedup();
        got.push((k.to_vec(), vs));
    }
    assert_eq!(got, want);
    let plain_groups: Vec<(Vec<u8>, usize)> = r
        .groups(plain)
        .unwrap()
        .map(|g| {
            let (k, vals) = g.unwrap();
            (k.to_vec(), vals.count())
        })
        .collect();
    assert_eq!(plain_groups.len(), model_plain.len());
    assert!(plain_groups.iter().all(|(_, n)| *n == 1));
    // Prefixes, both ways.
    for p in ["", "0", "01", "012", "3", "39", "4", "9"] {
        let want: Vec<Pair> = model_plain
            .iter()
            .filter(|(k, _)| k.starts_with(p.as_bytes()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let got: Vec<Pair> = r
            .prefix(plain, p.as_bytes())
            .unwrap()
            .map(|kv| {
                let (k, v) = kv.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        assert_eq!(got, want, "prefix {p:?}");
        let mut rev: Vec<Pair> = r
            .prefix(plain, p.as_bytes())
            .unwrap()
            .rev()
            .map(|kv| {
                let (k, v) = kv.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        rev.reverse();
        assert_eq!(rev, want, "prefix {p:?} reversed");
    }
    // Empty bounds: below every key.
    let n = model_plain.len();
    assert_eq!(r.range(plain, &b""[..]..).unwrap().count(), n);
    assert_eq!(
        r.range(plain, (Bound::Excluded(&b""[..]), Bound::Unbounded))
            .unwrap()
            .count(),
        n
    );
    assert_eq!(r.range(plain, ..&b""[..]).unwrap().rev().count(), 0);
    assert_eq!(r.range(plain, ..=&b""[..]).unwrap().count(), 0);
    // 0xff bytes at the end of a prefix.
    let mut w = env.write_txn().unwrap();
    for k in [&b"a\xff"[..], b"a\xff\x01", b"a\xff\xff", b"b"] {
        w.put(Database::MAIN, k, b"", WriteFlags::EMPTY).unwrap();
    }
    assert_eq!(w.prefix(Database::MAIN, b"a\xff").unwrap().count(), 3);
    assert_eq!(w.prefix(Database::MAIN, b"a\xff\xff").unwrap().count(), 1);
    // Not for another order.
    let rev = w.create_db("rev", DbFlags::REVERSE_KEY).unwrap();
    assert_eq!(
        w.prefix(rev, b"a").err().map(|e| e.kind()),
        Some(mdb::ErrorKind::Incompatible)
    );
}
