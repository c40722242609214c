//! Model-based property test: random operation sequences on the main and two
//! named databases, checked against a `BTreeMap` model, with commits, aborts
//! and close-and-reopen in the middle.

use mdb::{check, Database, DbFlags, Env, EnvOptions, ErrorKind, Txn, WriteFlags};
use proptest::prelude::*;
use std::collections::BTreeMap;

type Model = Vec<BTreeMap<Vec<u8>, Vec<u8>>>;

#[derive(Debug, Clone)]
enum Op {
    Put(usize, Vec<u8>, usize, u8),
    PutNoOverwrite(usize, Vec<u8>, usize),
    Append(usize, Vec<u8>),
    Del(usize, Vec<u8>),
    Get(usize, Vec<u8>),
    SetRange(usize, Vec<u8>, u8),
    CursorDel(usize, Vec<u8>),
    Commit,
    Abort,
    Reopen,
    Clear(usize),
    /// A child transaction applying (db, key, value length, delete?) then
    /// committing or aborting, with a grandchild doing the same inside.
    Nested(Vec<(usize, Vec<u8>, usize, bool)>, bool, bool),
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 1..6),
        2 => (1usize..512, any::<u8>()).prop_map(|(n, b)| vec![b | 1; n]),
    ]
}

fn vlen() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 0usize..64, 2 => 64usize..2100, 1 => 2100usize..14000]
}

fn op() -> impl Strategy<Value = Op> {
    let db = 0usize..3;
    prop_oneof![
        30 => (db.clone(), key(), vlen(), any::<u8>()).prop_map(|(d, k, n, b)| Op::Put(d, k, n, b)),
        4 => (db.clone(), key(), vlen()).prop_map(|(d, k, n)| Op::PutNoOverwrite(d, k, n)),
        3 => (db.clone(), key()).prop_map(|(d, k)| Op::Append(d, k)),
        15 => (db.clone(), key()).prop_map(|(d, k)| Op::Del(d, k)),
        8 => (db.clone(), key()).prop_map(|(d, k)| Op::Get(d, k)),
        6 => (db.clone(), key(), 0u8..6).prop_map(|(d, k, s)| Op::SetRange(d, k, s)),
        4 => (db.clone(), key()).prop_map(|(d, k)| Op::CursorDel(d, k)),
        4 => Just(Op::Commit),
        2 => Just(Op::Abort),
        1 => Just(Op::Reopen),
        1 => db.clone().prop_map(Op::Clear),
        4 => (
            proptest::collection::vec((db, key(), vlen(), any::<bool>()), 1..30),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(v, c, gc)| Op::Nested(v, c, gc)),
    ]
}

fn open(dir: &std::path::Path) -> Env {
    EnvOptions::new()
        .map_size(256 << 20)
        .max_dbs(4)
        .open(dir)
        .unwrap()
}

fn value(n: usize, b: u8) -> Vec<u8> {
    (0..n).map(|i| b.wrapping_add(i as u8)).collect()
}

fn dbs(w: &mut mdb::RwTxn<'_>) -> [Database; 3] {
    [
        Database::MAIN,
        w.create_db("one", DbFlags::EMPTY).unwrap(),
        w.create_db("two", DbFlags::EMPTY).unwrap(),
    ]
}

fn verify(env: &Env, model: &Model) {
    let r = env.read_txn().unwrap();
    for (i, m) in model.iter().enumerate() {
        let db = if i == 0 {
            Database::MAIN
        } else {
            r.open_db(if i == 1 { "one" } else { "two" }).unwrap()
        };
        let items: Vec<(Vec<u8>, Vec<u8>)> = r
            .cursor(db)
            .unwrap()
            .iter()
            .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .filter(|(k, _)| i != 0 || (k.as_slice() != b"one" && k.as_slice() != b"two"))
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(items.len(), want.len(), "db {i} length");
        assert!(items == want, "db {i} contents differ");
        let st = r.stat(db).unwrap();
        let extra = if i == 0 { 2 } else { 0 };
        assert_eq!(st.entries, m.len() as u64 + extra);
    }
}

fn apply(
    w: &mut mdb::RwTxn<'_>,
    d: &[Database; 3],
    m: &mut Model,
    changes: &[(usize, Vec<u8>, usize, bool)],
) {
    for (i, k, n, del) in changes {
        if *i == 0 && (k == b"one" || k == b"two") {
            continue;
        }
        if *del {
            assert_eq!(w.del(d[*i], k).unwrap(), m[*i].remove(k).is_some());
        } else {
            let v = value(*n, 3);
            w.put(d[*i], k, &v, WriteFlags::EMPTY).unwrap();
            m[*i].insert(k.clone(), v);
        }
    }
}

fn check_txn(w: &mdb::RwTxn<'_>, d: &[Database; 3], m: &Model) {
    for (i, mm) in m.iter().enumerate() {
        let n = w
            .cursor(d[i])
            .unwrap()
            .iter()
            .map(|kv| kv.unwrap())
            .filter(|(k, _)| i != 0 || (*k != b"one" && *k != b"two"))
            .count();
        assert_eq!(n, mm.len(), "db {i} in transaction");
        for (k, v) in mm {
            assert_eq!(w.get(d[i], k).unwrap(), Some(&v[..]));
        }
    }
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = open(dir.path());
        let mut w = env.write_txn().unwrap();
        dbs(&mut w);
        w.commit().unwrap();
    }
    let mut committed: Model = vec![BTreeMap::new(); 3];
    let mut cur = committed.clone();
    for segment in ops.split(|o| matches!(o, Op::Reopen)) {
        let env = open(dir.path());
        verify(&env, &committed);
        let mut txn = Some(env.write_txn().unwrap());
        let ops = segment.to_vec();
        for op in ops {
            let w = txn.as_mut().unwrap();
            let d = dbs(w);
            match op {
                Op::Put(i, k, n, b) => {
                    let v = value(n, b);
                    w.put(d[i], &k, &v, WriteFlags::EMPTY).unwrap();
                    cur[i].insert(k, v);
                }
                Op::PutNoOverwrite(i, k, n) => {
                    let v = value(n, 7);
                    let r = w.put(d[i], &k, &v, WriteFlags::NO_OVERWRITE);
                    if cur[i].contains_key(&k) || (i == 0 && (k == b"one" || k == b"two")) {
                        assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::KeyExist));
                    } else {
                        r.unwrap();
                        cur[i].insert(k, v);
                    }
                }
                Op::Append(i, k) => {
                    if i == 0 {
                        continue;
                    }
                    let r = w.put(d[i], &k, b"app", WriteFlags::APPEND);
                    let ok = cur[i].keys().next_back().is_none_or(|last| k > *last);
                    if ok {
                        r.unwrap();
                        cur[i].insert(k, b"app".to_vec());
                    } else {
                        assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::KeyExist));
                    }
                }
                Op::Del(i, k) => {
                    if i == 0 && (k == b"one" || k == b"two") {
                        continue;
                    }
                    let existed = w.del(d[i], &k).unwrap();
                    assert_eq!(existed, cur[i].remove(&k).is_some());
                }
                Op::Get(i, k) => {
                    if i == 0 && (k == b"one" || k == b"two") {
                        continue;
                    }
                    assert_eq!(w.get(d[i], &k).unwrap(), cur[i].get(&k).map(|v| &v[..]));
                }
                Op::SetRange(i, k, steps) => {
                    let mut c = w.cursor(d[i]).unwrap();
                    let got = c
                        .set_range(&k)
                        .unwrap()
                        .map(|(a, b)| (a.to_vec(), b.to_vec()));
                    let skip = |x: &Vec<u8>| i == 0 && (x == b"one" || x == b"two");
                    let mut all: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
                    if let Some(g) = got.clone() {
                        all.push(g);
                        for _ in 0..steps {
                            match c.next().unwrap() {
                                Some((a, b)) => all.push((a.to_vec(), b.to_vec())),
                                None => break,
                            }
                        }
                    }
                    let all: Vec<_> = all.into_iter().filter(|(a, _)| !skip(a)).collect();
                    let want: Vec<_> = cur[i]
                        .range(k.clone()..)
                        .take(all.len())
                        .map(|(a, b)| (a.clone(), b.clone()))
                        .collect();
                    assert_eq!(all, want);
                    if got.is_none() {
                        assert!(cur[i].range(k..).next().is_none());
                    }
                }
                Op::CursorDel(i, k) => {
                    if i == 0 {
                        continue;
                    }
                    let mut c = w.write_cursor(d[i]).unwrap();
                    let found = c.set_range(&k).unwrap().map(|(a, _)| a.to_vec());
                    if let Some(fk) = found {
                        c.del(false).unwrap();
                        cur[i].remove(&fk);
                        // The cursor now sits on the successor.
                        let next = c.next().unwrap().map(|(a, _)| a.to_vec());
                        let want = cur[i].range(fk..).next().map(|(a, _)| a.clone());
                        assert_eq!(next, want);
                    }
                }
                Op::Nested(changes, commit, grand_commit) => {
                    let half = changes.len() / 2;
                    let mut child = w.nested().unwrap();
                    let mut model = cur.clone();
                    apply(&mut child, &d, &mut model, &changes[..half]);
                    {
                        let mut grand = child.nested().unwrap();
                        let mut gm = model.clone();
                        apply(&mut grand, &d, &mut gm, &changes[half..]);
                        if grand_commit {
                            grand.commit().unwrap();
                            model = gm;
                        }
                    }
                    check_txn(&child, &d, &model);
                    if commit {
                        child.commit().unwrap();
                        cur = model;
                    } else {
                        child.abort();
                    }
                    check_txn(w, &d, &cur);
                }
                Op::Clear(i) => {
                    if i == 0 {
                        continue;
                    }
                    w.clear_db(d[i]).unwrap();
                    cur[i].clear();
                }
                Op::Commit => {
                    txn.take().unwrap().commit().unwrap();
                    committed = cur.clone();
                    verify(&env, &committed);
                    txn = Some(env.write_txn().unwrap());
                }
                Op::Abort => {
                    txn.take().unwrap().abort();
                    cur = committed.clone();
                    verify(&env, &committed);
                    txn = Some(env.write_txn().unwrap());
                }
                Op::Reopen => unreachable!(),
            }
        }

        txn.take().unwrap().commit().unwrap();
        committed = cur.clone();
        verify(&env, &committed);
        drop(txn);
        drop(env);
        let rep = check::check_file(&dir.path().join("data.mdb")).unwrap();
        assert!(rep.is_ok(), "{:?}", rep.problems);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn model_matches(ops in proptest::collection::vec(op(), 1..400)) {
        run(ops);
    }
}
