//! Random walks of the Rust `Cursor` (first, last, next, prev, set_range,
//! set, get_current) over a plain database of several leaves, with inline and
//! overflow values, against a sorted model: the steps along a kept leaf and
//! across leaves, both ways, in read and write transactions.

use mdb::{Database, EnvOptions, Item, Result, Txn, WriteFlags};
use std::collections::BTreeMap;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// The cursor moves a walk makes (`Cursor`'s snapshot trait is sealed, so
/// the walk takes them as one closure).
enum Move<'k> {
    First,
    Last,
    SetRange(&'k [u8]),
    Set(&'k [u8]),
    Current,
    Next,
    Prev,
}

/// A random walk of `steps` moves; the model's cursor is an index into its
/// keys, or unknown after a seek past the end.
fn walk<'t>(
    c: &mut dyn FnMut(Move<'_>) -> Result<Option<Item<'t>>>,
    m: &Model,
    seed: u64,
    steps: usize,
) {
    let keys: Vec<&Vec<u8>> = m.keys().collect();
    let item = |i: usize| Some((keys[i].as_slice(), m[keys[i]].as_slice()));
    let mut next = xorshift(seed);
    let mut at: Option<usize> = None;
    for step in 0..steps {
        let op = next() % 16;
        if at.is_none() && op >= 3 {
            // Only first, last and a seek re-anchor a walk after a seek
            // past the end.
            continue;
        }
        let (got, want) = match op {
            0 => {
                at = (!keys.is_empty()).then_some(0);
                (c(Move::First).unwrap(), at.and_then(item))
            }
            1 => {
                at = keys.len().checked_sub(1);
                (c(Move::Last).unwrap(), at.and_then(item))
            }
            2 if next().is_multiple_of(3) => {
                // An exact seek, to a key that is there or not.
                let k = format!("k{:05}", next() % 2200).into_bytes();
                let got = c(Move::Set(&k)).unwrap();
                match keys.binary_search(&&k) {
                    Ok(i) => {
                        at = Some(i);
                        (got, item(i))
                    }
                    Err(_) => {
                        at = None;
                        (got, None)
                    }
                }
            }
            2 => {
                let k = format!("k{:05}", next() % 2200).into_bytes();
                let i = keys.partition_point(|x| x.as_slice() < k.as_slice());
                let got = c(Move::SetRange(&k)).unwrap();
                if i < keys.len() {
                    at = Some(i);
                    (got, item(i))
                } else {
                    at = None;
                    (got, None)
                }
            }
            3 => {
                let want = at.and_then(item);
                (c(Move::Current).unwrap(), want)
            }
            4..=9 => {
                let got = c(Move::Next).unwrap();
                let want = match at {
                    Some(i) if i + 1 < keys.len() => {
                        at = Some(i + 1);
                        item(i + 1)
                    }
                    _ => None,
                };
                (got, want)
            }
            _ => {
                let got = c(Move::Prev).unwrap();
                let want = match at {
                    Some(i) if i > 0 => {
                        at = Some(i - 1);
                        item(i - 1)
                    }
                    _ => None,
                };
                (got, want)
            }
        };
        assert_eq!(got, want, "step {step} of walk {seed}");
    }
}

macro_rules! drive {
    ($c:expr, $mv:expr) => {
        match $mv {
            Move::First => $c.first(),
            Move::Last => $c.last(),
            Move::SetRange(k) => $c.set_range(k),
            Move::Set(k) => $c.set_key(k),
            Move::Current => $c.get_current(),
            Move::Next => $c.next(),
            Move::Prev => $c.prev(),
        }
    };
}

fn value(i: u64, big: bool) -> Vec<u8> {
    let n = if big {
        5000 + (i % 7) as usize
    } else {
        (i % 120) as usize
    };
    (0..n).map(|j| (i as usize + j) as u8).collect()
}

#[test]
fn cursor_walks_match_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .map_size(256 << 20)
        .open(dir.path())
        .unwrap();
    let mut model = Model::new();
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let m = Database::MAIN;
    for round in 0..4u64 {
        let mut w = env.write_txn().unwrap();
        for _ in 0..600 {
            let i = next() % 2000;
            let k = format!("k{i:05}").into_bytes();
            if next().is_multiple_of(5) {
                w.del(m, &k).unwrap();
                model.remove(&k);
            } else {
                let v = value(i + round, next().is_multiple_of(13));
                w.put(m, &k, &v, WriteFlags::EMPTY).unwrap();
                model.insert(k, v);
            }
        }
        // In the write transaction (its pages dirty), then committed.
        let mut c = w.cursor(m).unwrap();
        walk(&mut |mv| drive!(c, mv), &model, round * 2 + 1, 3000);
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        let mut c = r.cursor(m).unwrap();
        walk(&mut |mv| drive!(c, mv), &model, round * 2 + 2, 3000);
        // Whole passes both ways.
        let fwd: Vec<_> = r.cursor(m).unwrap().iter().map(|x| x.unwrap()).collect();
        let want: Vec<_> = model.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        assert_eq!(fwd, want);
        let mut c = r.cursor(m).unwrap();
        let mut back = Vec::new();
        while let Some(x) = c.prev().unwrap() {
            back.push(x);
        }
        back.reverse();
        assert_eq!(back, want);
    }
    assert!(env.read_txn().unwrap().stat(m).unwrap().depth >= 2);
}
