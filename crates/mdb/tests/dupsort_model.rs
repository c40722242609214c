//! Model-based property test for sorted duplicates: random put/del/cursor
//! sequences against a `BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>`, with commits,
//! aborts and reopen, sized so keys cross the sub-page to sub-database
//! threshold in both directions. Also the integer-key/dup and reverse flags.

use mdb::{check, DbFlags, Env, EnvOptions, ErrorKind, Txn, WriteFlags};
use proptest::prelude::*;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// A value ordered by the database's duplicate comparator.
#[derive(Clone, Debug, PartialEq, Eq)]
struct V(Vec<u8>, u16);

fn cmp_flags(flags: u16, a: &[u8], b: &[u8]) -> Ordering {
    if flags & 0x20 != 0 {
        mdb::cmp::integer(a, b)
    } else if flags & 0x40 != 0 {
        mdb::cmp::reverse(a, b)
    } else {
        a.cmp(b)
    }
}

impl Ord for V {
    fn cmp(&self, o: &Self) -> Ordering {
        cmp_flags(self.1, &self.0, &o.0)
    }
}
impl PartialOrd for V {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// A key ordered by the database's key comparator.
#[derive(Clone, Debug, PartialEq, Eq)]
struct K(Vec<u8>, u16);

impl Ord for K {
    fn cmp(&self, o: &Self) -> Ordering {
        mdb::cmp::for_flags(self.1).compare(&self.0, &o.0)
    }
}
impl PartialOrd for K {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl std::ops::Deref for K {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

type Model = BTreeMap<K, std::collections::BTreeSet<V>>;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u16, u8),
    PutNoDup(u8, u16),
    Bulk(u8, u16, u16),
    Del(u8),
    DelDup(u8, u16),
    DelMany(u8, u16),
    Walk,
    Seek(u8, u16),
    Commit,
    Abort,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (0u8..12, 0u16..2000, 1u8..90).prop_map(|(k, v, l)| Op::Put(k, v, l)),
        4 => (0u8..12, 0u16..2000).prop_map(|(k, v)| Op::PutNoDup(k, v)),
        3 => (0u8..12, 0u16..2000, 1u16..300).prop_map(|(k, s, n)| Op::Bulk(k, s, n)),
        3 => (0u8..12).prop_map(Op::Del),
        15 => (0u8..12, 0u16..2000).prop_map(|(k, v)| Op::DelDup(k, v)),
        2 => (0u8..12, 1u16..300).prop_map(|(k, n)| Op::DelMany(k, n)),
        3 => Just(Op::Walk),
        6 => (0u8..12, 0u16..2000).prop_map(|(k, v)| Op::Seek(k, v)),
        3 => Just(Op::Commit),
        1 => Just(Op::Abort),
        1 => Just(Op::Reopen),
    ]
}

fn key(k: u8, flags: u16) -> K {
    K(
        if flags & 0x08 != 0 {
            (k as u32 * 1000).to_le_bytes().to_vec()
        } else {
            format!("key-{k:02}").into_bytes()
        },
        flags,
    )
}

fn val(v: u16, len: u8, flags: u16) -> Vec<u8> {
    if flags & 0x20 != 0 {
        (v as u64 * 7).to_le_bytes().to_vec()
    } else {
        let mut b = format!("{v:05}").into_bytes();
        // DUPFIXED: every value of the database has one size.
        let len = if flags & 0x10 != 0 { 12 } else { len.max(5) };
        b.resize(len as usize, b'0' + (v % 10) as u8);
        b
    }
}

fn open(dir: &std::path::Path) -> Env {
    EnvOptions::new()
        .map_size(256 << 20)
        .max_dbs(2)
        .open(dir)
        .unwrap()
}

fn verify(env: &Env, flags: u16, m: &Model) {
    let r = env.read_txn().unwrap();
    let db = r.open_db("d").unwrap();
    let mut c = r.cursor(db).unwrap();
    let mut got = Vec::new();
    let mut item = c.first().unwrap();
    while let Some((k, v)) = item {
        got.push((k.to_vec(), v.to_vec()));
        item = c.next().unwrap();
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = m
        .iter()
        .flat_map(|(k, vs)| vs.iter().map(move |v| (k.0.clone(), v.0.clone())))
        .collect();
    assert_eq!(got.len(), want.len(), "item count");
    assert!(got == want, "contents differ");
    // Backwards, and by key with counts.
    let mut back = Vec::new();
    let mut item = c.last().unwrap();
    while let Some((k, v)) = item {
        back.push((k.to_vec(), v.to_vec()));
        item = c.prev().unwrap();
    }
    back.reverse();
    assert!(back == want, "reverse walk differs");
    let mut item = c.first().unwrap();
    for (k, vs) in m {
        let (ck, _) = item.unwrap();
        assert_eq!(ck, &k[..]);
        assert_eq!(c.count().unwrap(), vs.len() as u64);
        assert_eq!(
            c.last_dup().unwrap().unwrap().1,
            &vs.iter().next_back().unwrap().0[..]
        );
        item = c.next_nodup().unwrap();
    }
    assert!(item.is_none());
    let st = r.stat(db).unwrap();
    assert_eq!(st.entries, m.values().map(|s| s.len() as u64).sum::<u64>());
    let _ = flags;
}

fn run(flags: u16, ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = open(dir.path());
        let mut w = env.write_txn().unwrap();
        w.create_db("d", DbFlags(flags)).unwrap();
        w.commit().unwrap();
    }
    let mut committed = Model::new();
    let mut cur = committed.clone();
    for seg in ops.split(|o| matches!(o, Op::Reopen)) {
        let env = open(dir.path());
        verify(&env, flags, &committed);
        let mut w = Some(env.write_txn().unwrap());
        for op in seg {
            let t = w.as_mut().unwrap();
            let db = t.open_db("d").unwrap();
            match op.clone() {
                Op::Put(k, v, l) => {
                    let (kb, vb) = (key(k, flags), val(v, l, flags));
                    t.put(db, &kb, &vb, WriteFlags::EMPTY).unwrap();
                    cur.entry(kb).or_default().insert(V(vb, flags));
                }
                Op::PutNoDup(k, v) => {
                    let (kb, vb) = (key(k, flags), val(v, 20, flags));
                    let r = t.put(db, &kb, &vb, WriteFlags::NO_DUP_DATA);
                    let e = cur.entry(kb).or_default();
                    if e.contains(&V(vb.clone(), flags)) {
                        assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::KeyExist));
                    } else {
                        r.unwrap();
                        e.insert(V(vb, flags));
                    }
                }
                Op::Bulk(k, s, n) => {
                    let kb = key(k, flags);
                    for i in 0..n {
                        let vb = val(s.wrapping_add(i * 3) % 2000, 12, flags);
                        t.put(db, &kb, &vb, WriteFlags::EMPTY).unwrap();
                        cur.entry(kb.clone()).or_default().insert(V(vb, flags));
                    }
                }
                Op::Del(k) => {
                    let kb = key(k, flags);
                    assert_eq!(t.del(db, &kb).unwrap(), cur.remove(&kb).is_some());
                }
                Op::DelDup(k, v) => {
                    let kb = key(k, flags);
                    // Delete the first stored value >= v (so deletes hit).
                    let target = cur
                        .get(&kb)
                        .and_then(|s| s.range(V(val(v, 5, flags), flags)..).next().cloned());
                    let vb = target.map(|x| x.0).unwrap_or_else(|| val(v, 5, flags));
                    let existed = cur
                        .get_mut(&kb)
                        .is_some_and(|s| s.remove(&V(vb.clone(), flags)));
                    if cur.get(&kb).is_some_and(|s| s.is_empty()) {
                        cur.remove(&kb);
                    }
                    assert_eq!(t.del_dup(db, &kb, &vb).unwrap(), existed);
                }
                Op::DelMany(k, n) => {
                    // Delete through a cursor: walk the key's values deleting every other.
                    let kb = key(k, flags);
                    let mut c = t.write_cursor(db).unwrap();
                    if c.set_key(&kb).unwrap().is_none() {
                        continue;
                    }
                    for i in 0..n {
                        let Some((ck, cv)) = c.get_current().unwrap() else {
                            break;
                        };
                        if ck != &kb[..] {
                            break;
                        }
                        let cv = cv.to_vec();
                        if i % 2 == 0 {
                            c.del(false).unwrap();
                            let s = cur.get_mut(&kb).unwrap();
                            assert!(s.remove(&V(cv, flags)));
                            if s.is_empty() {
                                cur.remove(&kb);
                            }
                            if c.next().unwrap().is_none() {
                                break;
                            }
                        } else if c.next().unwrap().is_none() {
                            break;
                        }
                    }
                }
                Op::Walk => {
                    let mut c = t.cursor(db).unwrap();
                    let mut n = 0;
                    while c.next().unwrap().is_some() {
                        n += 1;
                    }
                    assert_eq!(n, cur.values().map(|s| s.len()).sum::<usize>());
                }
                Op::Seek(k, v) => {
                    let (kb, vb) = (key(k, flags), val(v, 5, flags));
                    let mut c = t.cursor(db).unwrap();
                    let got = c.get_both_range(&kb, &vb).unwrap().map(|(_, v)| v.to_vec());
                    let want = cur
                        .get(&kb)
                        .and_then(|s| s.range(V(vb.clone(), flags)..).next().map(|x| x.0.clone()));
                    assert_eq!(got, want);
                    if let Some(w) = &want {
                        let exact = c.get_both(&kb, w).unwrap().map(|(_, v)| v.to_vec());
                        assert_eq!(exact.as_ref(), Some(w));
                        // next_dup walks the rest of this key's values in order.
                        let rest: Vec<Vec<u8>> = cur[&kb]
                            .range(V(w.clone(), flags)..)
                            .skip(1)
                            .map(|x| x.0.clone())
                            .collect();
                        let mut walked = Vec::new();
                        while let Some((ck, cv)) = c.next_dup().unwrap() {
                            assert_eq!(ck, &kb[..]);
                            walked.push(cv.to_vec());
                        }
                        assert_eq!(walked, rest);
                    }
                    assert_eq!(
                        t.get(db, &kb).unwrap().map(|v| v.to_vec()),
                        cur.get(&kb).map(|s| s.iter().next().unwrap().0.clone())
                    );
                }
                Op::Commit => {
                    w.take().unwrap().commit().unwrap();
                    committed = cur.clone();
                    verify(&env, flags, &committed);
                    w = Some(env.write_txn().unwrap());
                }
                Op::Abort => {
                    w.take().unwrap().abort();
                    cur = committed.clone();
                    w = Some(env.write_txn().unwrap());
                }
                Op::Reopen => unreachable!(),
            }
        }
        w.take().unwrap().commit().unwrap();
        committed = cur.clone();
        verify(&env, flags, &committed);
        drop(w);
        drop(env);
        let rep = check::check_file(&dir.path().join("data.mdb")).unwrap();
        assert!(rep.is_ok(), "{:?}", rep.problems);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]
    #[test]
    fn dupsort_matches_model(ops in proptest::collection::vec(op(), 1..200)) {
        run(0x04, ops);
    }
    #[test]
    fn integer_dups_match_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(0x04 | 0x20 | 0x08, ops);
    }
    #[test]
    fn fixed_dups_match_model(ops in proptest::collection::vec(op(), 1..150)) {
        run(0x04 | 0x10, ops);
    }
    #[test]
    fn fixed_integer_dups_match_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(0x04 | 0x10 | 0x20, ops);
    }
    #[test]
    fn reverse_dups_match_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(0x04 | 0x40 | 0x02, ops);
    }
}

#[test]
fn crossing_the_subpage_threshold_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    for i in 0..3000u32 {
        w.put(db, b"k", format!("{i:08}").as_bytes(), WriteFlags::EMPTY)
            .unwrap();
    }
    w.put(db, b"j", b"x", WriteFlags::EMPTY).unwrap();
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    let db = r.open_db("d").unwrap();
    let mut c = r.cursor(db).unwrap();
    c.set_key(b"k").unwrap().unwrap();
    assert_eq!(c.count().unwrap(), 3000);
    assert_eq!(r.stat(db).unwrap().entries, 3001);
    drop(r);
    let mut w = env.write_txn().unwrap();
    let db = w.open_db("d").unwrap();
    for i in 0..2999u32 {
        assert!(w.del_dup(db, b"k", format!("{i:08}").as_bytes()).unwrap());
    }
    assert_eq!(w.get(db, b"k").unwrap(), Some(&b"00002999"[..]));
    assert!(w.del_dup(db, b"k", b"00002999").unwrap());
    assert_eq!(w.get(db, b"k").unwrap(), None);
    w.commit().unwrap();
    drop(env);
    let rep = check::check_file(&dir.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
}
