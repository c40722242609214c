//! User comparators for keys and duplicate values, kept across reopen.

use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
use std::cmp::Ordering;

fn by_len(a: &[u8], b: &[u8]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn descending(a: &[u8], b: &[u8]) -> Ordering {
    b.cmp(a)
}

#[test]
fn custom_key_and_dup_orders() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<Vec<u8>> = (0..5000u32)
        .map(|i| {
            let n = (i.wrapping_mul(2654435761) % 40 + 1) as usize;
            let mut k = format!("{i}").into_bytes();
            k.resize(n.max(k.len()), b'z');
            k
        })
        .collect();
    for round in 0..2 {
        let env = EnvOptions::new()
            .max_dbs(2)
            .map_size(64 << 20)
            .open(dir.path())
            .unwrap();
        let mut w = env.write_txn().unwrap();
        let kdb = w.create_db("bylen", DbFlags::EMPTY).unwrap();
        let ddb = w.create_db("desc", DbFlags::DUP_SORT).unwrap();
        env.set_compare(kdb, by_len).unwrap();
        env.set_dupsort(ddb, descending).unwrap();
        if round == 0 {
            for k in &keys {
                w.put(kdb, k, b"v", WriteFlags::EMPTY).unwrap();
            }
            for i in 0..3000u32 {
                w.put(ddb, b"k", format!("{i:05}").as_bytes(), WriteFlags::EMPTY)
                    .unwrap();
            }
        }
        // Handles opened in a write transaction live on only if it commits.
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        let mut want = keys.clone();
        want.sort_by(|a, b| by_len(a, b));
        want.dedup();
        let got: Vec<Vec<u8>> = r
            .cursor(kdb)
            .unwrap()
            .iter()
            .map(|kv| kv.unwrap().0.to_vec())
            .collect();
        assert_eq!(got, want);
        for k in &keys {
            assert_eq!(r.get(kdb, k).unwrap(), Some(&b"v"[..]));
        }
        let mut c = r.cursor(ddb).unwrap();
        assert_eq!(c.set(b"k").unwrap(), Some(&b"02999"[..]));
        assert_eq!(c.last_dup().unwrap().unwrap().1, b"00000");
        assert_eq!(
            c.get_both_range(b"k", b"01500x").unwrap().unwrap().1,
            b"01500"
        );
    }
}
