//! INTEGERKEY databases of 4- and 8-byte keys, enough of them for branch
//! pages, against a `BTreeMap` of the numbers: gets and range seeks find
//! what numeric order says (the search has a loop of its own for these
//! keys, reading them in place).

use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn bytes(n: u64, width: usize) -> Vec<u8> {
    n.to_le_bytes()[..width].to_vec()
}

fn run(width: usize, keys: Vec<u64>, dels: Vec<usize>, probes: Vec<u64>) {
    let tmp = tempfile::tempdir().unwrap();
    let env = EnvOptions::new().max_dbs(2).open(tmp.path()).unwrap();
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("ids", DbFlags::INTEGER_KEY).unwrap();
    let mut model = BTreeMap::new();
    for (i, &k) in keys.iter().enumerate() {
        let v = vec![i as u8; 150];
        w.put(db, &bytes(k, width), &v, WriteFlags::EMPTY).unwrap();
        model.insert(k, v);
    }
    for &d in &dels {
        let k = keys[d % keys.len()];
        let had = model.remove(&k).is_some();
        assert_eq!(w.del(db, &bytes(k, width)).unwrap(), had, "del {k}");
    }
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    // Every key in order, and every probe's get and range seek.
    let all: Vec<u64> = r
        .cursor(db)
        .unwrap()
        .iter()
        .map(|kv| {
            let (k, _) = kv.unwrap();
            let mut b = [0u8; 8];
            b[..width].copy_from_slice(k);
            u64::from_le_bytes(b)
        })
        .collect();
    assert_eq!(all, model.keys().copied().collect::<Vec<_>>());
    let mut c = r.cursor(db).unwrap();
    for &p in probes.iter().chain(keys.iter()) {
        let got = r.get(db, &bytes(p, width)).unwrap().map(<[u8]>::to_vec);
        assert_eq!(got.as_ref(), model.get(&p), "get {p}");
        let seek = c
            .set_range(&bytes(p, width))
            .unwrap()
            .map(|(k, _)| k.to_vec());
        let want = model.range(p..).next().map(|(&k, _)| bytes(k, width));
        assert_eq!(seek, want, "set_range {p}");
    }
}

fn keys(width: usize) -> impl Strategy<Value = Vec<u64>> {
    let max = if width == 4 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    // Small numbers too: neighbours, and bytes that sort the other way.
    prop::collection::vec(prop_oneof![0..600u64, 0..=max], 1..1500)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn eight_byte_keys_match_the_model(
        ks in keys(8),
        dels in prop::collection::vec(0..2000usize, 0..300),
        probes in prop::collection::vec(prop_oneof![0..700u64, any::<u64>()], 0..200),
    ) {
        run(8, ks, dels, probes);
    }

    #[test]
    fn four_byte_keys_match_the_model(
        ks in keys(4),
        dels in prop::collection::vec(0..2000usize, 0..300),
        probes in prop::collection::vec(prop_oneof![0..700u64, 0..=u64::from(u32::MAX)], 0..200),
    ) {
        run(4, ks, dels, probes);
    }
}
