//! Detached cursors (the C ABI's cursors): several per write transaction,
//! interleaved with puts and deletes, keep LMDB's positions.

use mdb::{CursorOp, CursorState, Database, DbFlags, EnvOptions, Txn, WriteFlags};
use std::collections::BTreeMap;

#[test]
fn cursors_follow_changes_made_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .map_size(64 << 20)
        .open(dir.path())
        .unwrap();
    let mut w = env.write_txn().unwrap();
    let m = Database::MAIN;
    for i in (0..2000u32).step_by(2) {
        w.put(m, format!("{i:05}").as_bytes(), b"v", WriteFlags::EMPTY)
            .unwrap();
    }
    let mut a = CursorState::new(&w, m).unwrap();
    let mut b = CursorState::new(&w, m).unwrap();
    assert_eq!(
        a.get(&w, CursorOp::Set(b"01000")).unwrap().unwrap().0,
        b"01000"
    );
    assert_eq!(
        b.get(&w, CursorOp::Set(b"01000")).unwrap().unwrap().0,
        b"01000"
    );
    // Inserting around a cursor does not move it off its item.
    for i in (1..2000u32).step_by(2) {
        w.put(m, format!("{i:05}").as_bytes(), b"w", WriteFlags::EMPTY)
            .unwrap();
    }
    assert_eq!(
        a.get(&w, CursorOp::GetCurrent).unwrap().unwrap().0,
        b"01000"
    );
    assert_eq!(a.get(&w, CursorOp::Next).unwrap().unwrap().0, b"01001");
    // Deleting b's item through a: b then sits on the successor.
    a.get(&w, CursorOp::Prev).unwrap();
    w.cursor_del(&mut a, false).unwrap();
    assert_eq!(
        b.get(&w, CursorOp::GetCurrent).unwrap().unwrap().0,
        b"01001"
    );
    // a: NEXT right after the delete returns the successor itself.
    assert_eq!(a.get(&w, CursorOp::Next).unwrap().unwrap().0, b"01001");
    assert_eq!(a.get(&w, CursorOp::Next).unwrap().unwrap().0, b"01002");
    // Deleting through w.del while b points at it.
    w.del(m, b"01001").unwrap();
    assert_eq!(b.get(&w, CursorOp::Next).unwrap().unwrap().0, b"01002");
    assert_eq!(b.get(&w, CursorOp::Prev).unwrap().unwrap().0, b"00999");
    // cursor_put positions on the new item; CURRENT replaces in place.
    w.cursor_put(&mut a, b"01001", b"back", WriteFlags::EMPTY)
        .unwrap();
    assert_eq!(
        a.get(&w, CursorOp::GetCurrent).unwrap().unwrap(),
        (&b"01001"[..], &b"back"[..])
    );
    w.cursor_put(&mut a, b"01001", b"again", WriteFlags::CURRENT)
        .unwrap();
    assert_eq!(
        w.cursor_put(&mut a, b"01002", b"x", WriteFlags::CURRENT)
            .map_err(|e| e.kind()),
        Err(mdb::ErrorKind::Misuse(mdb::Misuse::KeyNotCurrent))
    );
    w.commit().unwrap();
}

#[test]
fn detached_cursor_walk_matches_model_under_churn() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .max_dbs(1)
        .map_size(64 << 20)
        .open(dir.path())
        .unwrap();
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    let mut model: BTreeMap<(u32, u32), ()> = BTreeMap::new();
    for k in 0..50u32 {
        for v in 0..(k % 7) * 40 + 1 {
            w.put(db, &k.to_be_bytes(), &v.to_be_bytes(), WriteFlags::EMPTY)
                .unwrap();
            model.insert((k, v), ());
        }
    }
    // Walk with one cursor while deleting every third item through the
    // transaction and adding items behind the cursor.
    let mut c = CursorState::new(&w, db).unwrap();
    let mut seen = Vec::new();
    let mut item = c
        .get(&w, CursorOp::First)
        .unwrap()
        .map(|(k, v)| (k.to_vec(), v.to_vec()));
    let mut n = 0;
    while let Some((k, v)) = item {
        let kv = (
            u32::from_be_bytes(k[..].try_into().unwrap()),
            u32::from_be_bytes(v[..].try_into().unwrap()),
        );
        seen.push(kv);
        n += 1;
        if n % 3 == 0 {
            w.del_dup(db, &k, &v).unwrap();
            model.remove(&kv);
        }
        if n % 5 == 0 && kv.1 > 0 {
            // Behind the cursor: must not be visited.
            w.put(db, &k, &(kv.1 - 1).to_be_bytes(), WriteFlags::EMPTY)
                .unwrap();
        }
        item = c
            .get(&w, CursorOp::Next)
            .unwrap()
            .map(|(k, v)| (k.to_vec(), v.to_vec()));
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(seen, sorted, "the walk went backwards or repeated");
    assert_eq!(
        seen.len(),
        (0..50u32).map(|k| (k % 7) * 40 + 1).sum::<u32>() as usize
    );
}

/// Minor page faults of this thread so far (other tests run in parallel).
fn minor_faults() -> i64 {
    // SAFETY: getrusage only writes the struct we pass.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_THREAD, &mut ru), 0);
        ru.ru_minflt
    }
}

/// Positioning a write transaction's cursor on a large value must not read
/// the value (LMDB touches none of its pages): it used to be copied whole
/// so the cursor could re-find its item, 16,384 page faults for 64 MiB.
#[test]
fn positioning_on_a_large_value_does_not_touch_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .map_size(256 << 20)
        .open(dir.path())
        .unwrap();
    let big = vec![7u8; 64 << 20];
    let mut w = env.write_txn().unwrap();
    w.put(Database::MAIN, b"big", &big, WriteFlags::EMPTY)
        .unwrap();
    w.commit().unwrap();
    drop(big);
    let mut w = env.write_txn().unwrap();
    let mut c = CursorState::new(&w, Database::MAIN).unwrap();
    let before = minor_faults();
    for op in [
        CursorOp::First,
        CursorOp::Set(b"big"),
        CursorOp::SetKey(b"big"),
    ] {
        let (k, v) = c.get(&w, op).unwrap().unwrap();
        assert_eq!((k, v.len()), (&b"big"[..], 64 << 20));
    }
    assert_eq!(
        c.get(&w, CursorOp::GetCurrent).unwrap().unwrap().1.len(),
        64 << 20
    );
    // A write elsewhere makes the cursor re-find its item by key.
    w.put(Database::MAIN, b"a", b"x", WriteFlags::EMPTY)
        .unwrap();
    assert_eq!(c.get(&w, CursorOp::GetCurrent).unwrap().unwrap().0, b"big");
    let faults = minor_faults() - before;
    assert!(
        faults < 1000,
        "{faults} page faults positioning on a 64 MiB value"
    );
    w.cursor_del(&mut c, false).unwrap();
    assert_eq!(w.get(Database::MAIN, b"big").unwrap(), None);
}

/// Cursor deletes on a plain database (deleted where the cursor stands,
/// no search from the root) interleaved with steps, against a BTreeMap:
/// every step returns the model's next item, through merges and shares of
/// leaves, and with overflow values.
#[test]
fn cursor_deletes_and_steps_match_a_model() {
    let (dir, env) = env_256m();
    let m = Database::MAIN;
    let mut model = BTreeMap::new();
    let mut rnd = xorshift(0x9E37_79B9_7F4A_7C15);
    let mut w = env.write_txn().unwrap();
    for _ in 0..5000 {
        let k = format!("{:08}", rnd() % 100_000).into_bytes();
        let len = if rnd().is_multiple_of(50) {
            5000
        } else {
            (rnd() % 200) as usize
        };
        let v = vec![b'v'; len];
        w.put(m, &k, &v, WriteFlags::EMPTY).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
    for round in 0..4 {
        let mut w = env.write_txn().unwrap();
        let mut c = CursorState::new(&w, m).unwrap();
        let start = format!("{:08}", rnd() % 100_000).into_bytes();
        let mut at: Option<Vec<u8>> = c
            .get(&w, CursorOp::SetRange(&start))
            .unwrap()
            .map(|(k, _)| k.to_vec());
        assert_eq!(
            at.as_ref(),
            model.range(start.clone()..).next().map(|(k, _)| k)
        );
        while let Some(k) = at.clone() {
            if !rnd().is_multiple_of(4) {
                w.cursor_del(&mut c, false).unwrap();
                model.remove(&k);
            }
            let next = c
                .get(&w, CursorOp::Next)
                .unwrap()
                .map(|(k, v)| (k.to_vec(), v.to_vec()));
            let want = model
                .range((
                    std::ops::Bound::Excluded(k.clone()),
                    std::ops::Bound::Unbounded,
                ))
                .next()
                .map(|(k, v)| (k.clone(), v.clone()));
            assert_eq!(next, want, "round {round} after {k:?}");
            at = next.map(|(k, _)| k);
        }
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        let all: Vec<(Vec<u8>, Vec<u8>)> = r
            .cursor(m)
            .unwrap()
            .iter()
            .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(all, want, "round {round}");
    }
    let rep = mdb::check::check_file(&dir.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
}

/// After each cursor delete of a front-to-back walk, PREV returns the item
/// before the deleted one and NEXT then the item after it, against a
/// BTreeMap, through the rebalances the walk causes (the cursor keeps its
/// place through them without a search when the leaf stays on its path).
#[test]
fn prev_and_next_after_cursor_deletes_match_a_model() {
    let (dir, env) = env_256m();
    let m = Database::MAIN;
    let mut model = BTreeMap::new();
    let mut w = env.write_txn().unwrap();
    for i in 0..6000u64 {
        let k = format!("{:08}", i.wrapping_mul(7919) % 100_000).into_bytes();
        let v = vec![b'v'; (i % 150) as usize];
        w.put(m, &k, &v, WriteFlags::EMPTY).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    let mut c = CursorState::new(&w, m).unwrap();
    let mut at = c.get(&w, CursorOp::First).unwrap().map(|(k, _)| k.to_vec());
    let mut n = 0u64;
    while let Some(k) = at {
        n += 1;
        // Keep every fifth item, so that leaves shrink, share and merge.
        if n.is_multiple_of(5) {
            at = c.get(&w, CursorOp::Next).unwrap().map(|(k, _)| k.to_vec());
            continue;
        }
        w.cursor_del(&mut c, false).unwrap();
        model.remove(&k);
        let before = model.range(..k.clone()).next_back().map(|(k, _)| k.clone());
        let after = model
            .range((
                std::ops::Bound::Excluded(k.clone()),
                std::ops::Bound::Unbounded,
            ))
            .next()
            .map(|(k, _)| k.clone());
        if n.is_multiple_of(3) {
            let prev = c.get(&w, CursorOp::Prev).unwrap().map(|(k, _)| k.to_vec());
            assert_eq!(prev, before, "PREV after deleting {k:?}");
            if prev.is_none() {
                // Before the first item: NEXT starts over at the first.
                let first = c.get(&w, CursorOp::First).unwrap().map(|(k, _)| k.to_vec());
                assert_eq!(first, after);
                at = first;
                continue;
            }
        }
        at = c.get(&w, CursorOp::Next).unwrap().map(|(k, _)| k.to_vec());
        assert_eq!(at, after, "NEXT after deleting {k:?}");
    }
    assert_eq!(w.stat(m).unwrap().entries, model.len() as u64);
    // Then everything from the front: the cursor's leaf is always its
    // parent's first, which takes its right sibling's nodes.
    let mut at = c.get(&w, CursorOp::First).unwrap().map(|(k, _)| k.to_vec());
    while let Some(k) = at {
        w.cursor_del(&mut c, false).unwrap();
        model.remove(&k);
        at = c.get(&w, CursorOp::Next).unwrap().map(|(k, _)| k.to_vec());
        assert_eq!(
            at.as_ref(),
            model.keys().next(),
            "NEXT after deleting {k:?}"
        );
        if model.len().is_multiple_of(7) {
            assert_eq!(c.get(&w, CursorOp::Prev).unwrap(), None);
            at = c.get(&w, CursorOp::First).unwrap().map(|(k, _)| k.to_vec());
        }
    }
    assert_eq!(w.stat(m).unwrap().entries, 0);
    w.commit().unwrap();
    let rep = mdb::check::check_file(&dir.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
}

/// A queue drained from its head (FIRST, then a cursor delete there, as
/// `mdb-bench`'s `first_delete`), FIRST coming without a descent while the
/// cursor's path is the tree's, interleaved with what must make it descend
/// again: puts in front of the head and elsewhere, deletes through another
/// cursor and the transaction, overflow values, moves elsewhere; against
/// a BTreeMap.
#[test]
fn first_after_deletes_at_the_head_matches_a_model() {
    let (dir, env) = env_256m();
    let m = Database::MAIN;
    let mut model = BTreeMap::new();
    let mut rnd = xorshift(0x2545_F491_4F6C_DD1D);
    let value = |n: u64| {
        let len = if n.is_multiple_of(40) {
            6000
        } else {
            (n % 120) as usize
        };
        vec![b'a' + (n % 26) as u8; len]
    };
    let mut w = env.write_txn().unwrap();
    for i in 0..8000u64 {
        let k = format!("{:08}", 10_000 + i * 3).into_bytes();
        w.put(m, &k, &value(i), WriteFlags::APPEND).unwrap();
        model.insert(k, value(i));
    }
    w.commit().unwrap();
    for round in 0..6 {
        let mut w = env.write_txn().unwrap();
        let mut c = CursorState::new(&w, m).unwrap();
        let mut other = CursorState::new(&w, m).unwrap();
        for step in 0..1500 {
            let got = c
                .get(&w, CursorOp::First)
                .unwrap()
                .map(|(k, v)| (k.to_vec(), v.to_vec()));
            let want = model.iter().next().map(|(k, v)| (k.clone(), v.clone()));
            assert_eq!(got, want, "round {round} step {step}");
            let Some((k, _)) = got else { break };
            match rnd() % 16 {
                // In front of the head, or anywhere.
                0 | 1 => {
                    let n = rnd();
                    let at = if n.is_multiple_of(2) { 0 } else { 10_000 };
                    let k2 = format!("{:08}", at + n % 40_000).into_bytes();
                    w.put(m, &k2, &value(n), WriteFlags::EMPTY).unwrap();
                    model.insert(k2, value(n));
                }
                // Another cursor deletes the head or an item further on.
                2 => {
                    let n = rnd() % 30_000;
                    let from = format!("{:08}", if n.is_multiple_of(3) { 0 } else { n });
                    if other
                        .get(&w, CursorOp::SetRange(from.as_bytes()))
                        .unwrap()
                        .is_some()
                    {
                        let gone = other.get(&w, CursorOp::GetCurrent).unwrap().unwrap().0;
                        model.remove(gone);
                        w.cursor_del(&mut other, false).unwrap();
                    }
                }
                3 => {
                    if let Some(k2) = model.keys().nth(1).cloned() {
                        w.del(m, &k2).unwrap();
                        model.remove(&k2);
                    }
                }
                // The cursor moves away, then comes back with FIRST.
                4 => {
                    let last = c.get(&w, CursorOp::Last).unwrap().map(|(k, _)| k.to_vec());
                    assert_eq!(last.as_ref(), model.keys().next_back());
                }
                // Elsewhere, at times on the first item of another leaf.
                7 | 8 => {
                    let to = format!("{:08}", rnd() % 40_000).into_bytes();
                    let at = c.get(&w, CursorOp::SetRange(&to)).unwrap();
                    assert_eq!(
                        at.map(|(k, _)| k),
                        model.range(to..).next().map(|(k, _)| &k[..])
                    );
                }
                // A step along the first leaf, then FIRST again.
                5 => {
                    let next = c.get(&w, CursorOp::Next).unwrap().map(|(k, _)| k.to_vec());
                    assert_eq!(next.as_ref(), model.keys().nth(1));
                }
                // The head stays: the next FIRST finds it again.
                6 => {}
                _ => {
                    w.cursor_del(&mut c, false).unwrap();
                    model.remove(&k);
                    // NEXT after the delete: the new head.
                    if step % 7 == 0 {
                        let next = c.get(&w, CursorOp::Next).unwrap().map(|(k, _)| k.to_vec());
                        assert_eq!(next.as_ref(), model.keys().next());
                    }
                }
            }
        }
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        assert_eq!(r.stat(m).unwrap().entries, model.len() as u64);
        let mut rc = CursorState::new(&r, m).unwrap();
        let first = rc
            .get(&r, CursorOp::First)
            .unwrap()
            .map(|(k, _)| k.to_vec());
        assert_eq!(first.as_ref(), model.keys().next(), "round {round}");
    }
    let rep = mdb::check::check_file(&dir.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
}

/// A fresh environment with a 256 MiB map.
fn env_256m() -> (tempfile::TempDir, mdb::Env) {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .map_size(256 << 20)
        .open(dir.path())
        .unwrap();
    (dir, env)
}

/// Where a cursor delete leaves a DUPSORT cursor, as LMDB 0.9.24 (probed):
/// the key's next value; past the values of a key that lost its last one
/// but kept others (OpenLDAP's back-mdb reads the key there); the next key
/// after a whole key.
#[test]
fn dupsort_cursor_del_leaves_lmdb_positions() {
    let (_dir, env) = env_256m_dbs();
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1"), ("b", "2")] {
        w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)
            .unwrap();
    }
    for i in 0..2000 {
        w.put(db, b"c", format!("{i:06}").as_bytes(), WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    let item = |r: mdb::Result<Option<(&[u8], &[u8])>>| {
        r.unwrap().map(|(k, v)| {
            let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            (s(k), s(v))
        })
    };
    let kv = |k: &str, v: &str| Some((k.to_string(), v.to_string()));
    // Each case in a transaction of its own, aborted.
    let case = |k: &[u8], v: Option<&[u8]>, check: &dyn Fn(&mut mdb::RwCursor<'_, '_>)| {
        let mut w = env.write_txn().unwrap();
        let mut c = w.write_cursor(db).unwrap();
        match v {
            Some(v) => assert!(c.get_both(k, v).unwrap().is_some()),
            None => assert!(c.set_key(k).unwrap().is_some()),
        }
        c.del(v.is_none()).unwrap();
        check(&mut c);
    };
    // a's last value: on a, past its values.
    case(b"a", Some(b"3"), &|c| {
        assert_eq!(c.current_key().unwrap(), Some(&b"a"[..]));
        assert_eq!(c.get_current().unwrap(), None);
        assert_eq!(c.count().unwrap(), 2);
        assert_eq!(item(c.next_dup()), None);
        assert_eq!(item(c.next()), kv("b", "1"));
    });
    case(b"a", Some(b"3"), &|c| {
        assert_eq!(item(c.prev()), kv("a", "2"))
    });
    case(b"a", Some(b"3"), &|c| {
        assert_eq!(item(c.op(CursorOp::PrevDup)), kv("a", "2"))
    });
    case(b"a", Some(b"3"), &|c| {
        assert_eq!(item(c.next_nodup()), kv("b", "1"));
    });
    // The last key's last value: nothing after it, the key's last before.
    case(b"c", Some(b"001999"), &|c| {
        assert_eq!(c.current_key().unwrap(), Some(&b"c"[..]));
        assert_eq!(item(c.next()), None);
        assert_eq!(item(c.next()), None);
        assert_eq!(item(c.prev()), kv("c", "001998"));
    });
    // A value with others after it: on the next one.
    case(b"a", Some(b"2"), &|c| {
        assert_eq!(c.current_key().unwrap(), Some(&b"a"[..]));
        assert_eq!(item(c.next_dup()), kv("a", "3"));
        assert_eq!(item(c.next()), kv("b", "1"));
    });
    case(b"a", Some(b"2"), &|c| {
        assert_eq!(item(c.get_current()), kv("a", "3"));
        assert_eq!(item(c.next()), kv("b", "1"));
    });
    case(b"a", Some(b"2"), &|c| {
        assert_eq!(item(c.prev()), kv("a", "1"))
    });
    case(b"c", Some(b"001000"), &|c| {
        assert_eq!(item(c.next_dup()), kv("c", "001001"));
    });
    // A whole key: on the next key's first value.
    case(b"a", None, &|c| {
        assert_eq!(item(c.next_dup()), None);
        assert_eq!(item(c.next()), kv("b", "1"));
    });
    case(b"a", None, &|c| {
        assert_eq!(c.current_key().unwrap(), Some(&b"b"[..]));
        assert_eq!(item(c.next()), kv("b", "1"));
    });
    case(b"b", None, &|c| {
        assert_eq!(item(c.next_nodup()), kv("c", "000000"))
    });
    case(b"b", None, &|c| assert_eq!(item(c.prev()), kv("a", "3")));
}

/// A walk deleting random values of a DUPSORT database (sub-pages and a
/// sub-database), checking after each delete what NEXT, PREV and
/// GET_CURRENT give against a model of (key, value) pairs.
#[test]
fn dupsort_cursor_deletes_and_steps_match_a_model() {
    use std::collections::BTreeSet;
    use std::ops::Bound::{Excluded, Unbounded};
    let (_dir, env) = env_256m_dbs();
    let mut model = BTreeSet::new();
    let mut rnd = xorshift(0x2545_F491_4F6C_DD1D);
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    for _ in 0..4000 {
        // Key 0 gets a sub-database, the others a few values each.
        let k = format!("{:03}", (rnd() % 400).saturating_sub(100)).into_bytes();
        let v = format!("{:05}", rnd() % 10_000).into_bytes();
        w.put(db, &k, &v, WriteFlags::EMPTY).unwrap();
        model.insert((k, v));
    }
    w.commit().unwrap();
    type Kv = (Vec<u8>, Vec<u8>);
    let own = |r: mdb::Result<Option<(&[u8], &[u8])>>| -> Option<Kv> {
        r.unwrap().map(|(k, v)| (k.to_vec(), v.to_vec()))
    };
    for round in 0..6 {
        let mut w = env.write_txn().unwrap();
        let mut c = CursorState::new(&w, db).unwrap();
        let mut at = own(c.get(&w, CursorOp::First));
        while let Some(kv) = at.clone() {
            if rnd().is_multiple_of(3) {
                at = own(c.get(&w, CursorOp::Next));
                continue;
            }
            w.cursor_del(&mut c, false).unwrap();
            model.remove(&kv);
            let succ = |x: &Kv| {
                model
                    .range((Excluded(x.clone()), Unbounded))
                    .next()
                    .cloned()
            };
            let after = succ(&kv);
            let before = model.range(..kv.clone()).next_back().cloned();
            let same_key = |o: &Option<Kv>| o.as_ref().is_some_and(|n| n.0 == kv.0);
            // The key lost its last value but kept others.
            let left = !same_key(&after) && same_key(&before);
            if left {
                assert_eq!(c.current_key(&w).unwrap(), Some(&kv.0[..]));
            }
            // Where NEXT goes on from.
            let mut from = kv.clone();
            if rnd().is_multiple_of(2) {
                let cur = own(c.get(&w, CursorOp::GetCurrent));
                let want = if left { None } else { after.clone() };
                assert_eq!(cur, want, "round {round}, GET_CURRENT after {kv:?}");
                from = cur.unwrap_or(from);
            }
            if rnd().is_multiple_of(4) {
                let prev = own(c.get(&w, CursorOp::Prev));
                assert_eq!(prev, before, "round {round}, PREV after {kv:?}");
                match prev {
                    Some(p) => from = p,
                    None => {
                        at = own(c.get(&w, CursorOp::First));
                        continue;
                    }
                }
            }
            at = own(c.get(&w, CursorOp::Next));
            assert_eq!(at, succ(&from), "round {round}, NEXT after {kv:?}");
        }
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        let all: Vec<Kv> = r
            .cursor(db)
            .unwrap()
            .iter()
            .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        assert_eq!(
            all,
            model.iter().cloned().collect::<Vec<_>>(),
            "round {round}"
        );
    }
}

/// A deterministic pseudo-random sequence from `x` (not 0).
fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// A fresh environment with a 256 MiB map and room for named databases.
fn env_256m_dbs() -> (tempfile::TempDir, mdb::Env) {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .map_size(256 << 20)
        .max_dbs(2)
        .open(dir.path())
        .unwrap();
    (dir, env)
}

/// `CursorState::seek_leaf` (the C ABI's SET/SET_KEY/SET_RANGE in a read
/// transaction) lands where the general path does: the same item, the
/// same leaf for `leaf_of`, and the same steps after; on hits, misses,
/// keys past the end and overflow values.
#[test]
fn seek_leaf_agrees_with_the_general_path() {
    let (_dir, env) = env_256m_dbs();
    let m = Database::MAIN;
    let mut w = env.write_txn().unwrap();
    for i in (0..3000u32).step_by(3) {
        // Every 7th value spills to overflow pages (not a plain item).
        let v = if i.is_multiple_of(7) {
            vec![b'o'; 5000]
        } else {
            vec![b'v'; 20]
        };
        w.put(m, format!("{i:05}").as_bytes(), &v, WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    let mut next = xorshift(0x5eed);
    for _ in 0..2000 {
        let k = format!("{:05}", next() % 3100);
        let exact = next().is_multiple_of(2);
        let mut a = CursorState::new(&r, m).unwrap();
        let mut b = CursorState::new(&r, m).unwrap();
        let (item, leaf) = a.seek_leaf(&r, k.as_bytes(), exact).unwrap().unwrap();
        let op = if exact {
            CursorOp::Set(k.as_bytes())
        } else {
            CursorOp::SetRange(k.as_bytes())
        };
        assert_eq!(item, b.get(&r, op).unwrap(), "{k} exact {exact}");
        assert_eq!(leaf, b.leaf_of(&r), "{k} exact {exact}");
        for step in [CursorOp::Next, CursorOp::Prev, CursorOp::Next] {
            assert_eq!(
                a.get(&r, step).unwrap(),
                b.get(&r, step).unwrap(),
                "{k} exact {exact} {step:?}"
            );
        }
    }
    drop(r);
    // A DUPSORT database takes the general path.
    let mut w = env.write_txn().unwrap();
    let d = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    w.put(d, b"k", b"1", WriteFlags::EMPTY).unwrap();
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    let mut c = CursorState::new(&r, d).unwrap();
    assert!(c.seek_leaf(&r, b"k", true).is_none());
}

/// slapd's indexing through the C API: per database a cursor set on a key,
/// then a put through it, the databases taken in turn (DUPSORT, values in
/// sub-pages and in sub-databases, leaves splitting). Each cursor ends on
/// the item put and steps on from it as a model says; a cursor whose own
/// database did not change since its last call searches nothing again, and
/// a put under the key its cursor was set on starts from the cursor's leaf.
#[test]
fn cursor_puts_across_databases_keep_their_places() {
    use std::collections::BTreeSet;
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .map_size(256 << 20)
        .max_dbs(4)
        .open(dir.path())
        .unwrap();
    let mut rnd = xorshift(0x9E37_79B9_7F4A_7C15);
    let mut w = env.write_txn().unwrap();
    let dbs: Vec<Database> = ["eq", "sub", "plain"]
        .iter()
        .map(|n| {
            let f = if *n == "plain" {
                DbFlags::EMPTY
            } else {
                DbFlags::DUP_SORT
            };
            w.create_db(n, f).unwrap()
        })
        .collect();
    let mut cs: Vec<CursorState> = dbs
        .iter()
        .map(|&d| CursorState::new(&w, d).unwrap())
        .collect();
    let mut model: Vec<BTreeSet<(Vec<u8>, Vec<u8>)>> = vec![BTreeSet::new(); 3];
    let (mut found_puts, mut puts) = (0u64, 0u64);
    for n in 0..12_000u32 {
        let d = (n % 3) as usize;
        // Key 0000 collects hundreds of values (a sub-database), the
        // others a few (sub-pages); the plain database replaces values.
        let k = format!("{:04}", (rnd() % 1500).saturating_sub(300)).into_bytes();
        let v = format!("{:06}", rnd() % 1_000_000).into_bytes();
        let found = cs[d].get(&w, CursorOp::Set(&k)).unwrap().is_some();
        let flags = if d == 2 {
            WriteFlags::EMPTY
        } else {
            WriteFlags::NO_DUP_DATA
        };
        let r = w.cursor_put(&mut cs[d], &k, &v, flags);
        if d < 2 && model[d].contains(&(k.clone(), v.clone())) {
            assert_eq!(r.map_err(|e| e.kind()), Err(mdb::ErrorKind::KeyExist));
            continue;
        }
        r.unwrap();
        puts += 1;
        found_puts += u64::from(found);
        if d == 2 {
            model[d].retain(|(mk, _)| *mk != k);
        }
        model[d].insert((k.clone(), v.clone()));
        let cur = cs[d].get(&w, CursorOp::GetCurrent).unwrap().unwrap();
        assert_eq!(
            cur,
            (&k[..], &v[..]),
            "put {n}: the cursor is on the item put"
        );
        if n % 7 == 0 {
            let want = model[d].range((k.clone(), v.clone())..).nth(1);
            let next = cs[d].get(&w, CursorOp::Next).unwrap();
            assert_eq!(
                next.map(|(a, b)| (a.to_vec(), b.to_vec())).as_ref(),
                want,
                "put {n}: NEXT"
            );
        }
    }
    for (d, db) in dbs.iter().enumerate() {
        let all: Vec<(Vec<u8>, Vec<u8>)> = w
            .cursor(*db)
            .unwrap()
            .iter()
            .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        assert_eq!(all, model[d].iter().cloned().collect::<Vec<_>>(), "db {d}");
    }
    let work = w.cursor_work();
    assert_eq!(work.refinds, 0, "{work:?}");
    assert!(
        work.from_leaf >= found_puts,
        "{work:?}, {found_puts} puts under a set key"
    );
    // Only puts that split a page search again afterwards.
    assert!(work.placed * 20 >= puts * 19, "{work:?} of {puts} puts");
    w.commit().unwrap();
}

/// `count` of a key whose values are in a sub-database comes from the
/// record the cursor read when it entered them: it must follow puts and
/// deletes through the cursor, through another cursor and through the
/// transaction, a nested transaction's abort, and a read snapshot.
#[test]
fn count_follows_every_change_to_a_keys_values() {
    let (_d, env) = env_256m_dbs();
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("c", DbFlags::DUP_SORT).unwrap();
    let mut model: BTreeMap<u32, u64> = BTreeMap::new();
    let put = |w: &mut mdb::RwTxn<'_>, st: Option<&mut CursorState>, k: u32, v: u32| {
        let (k, v) = (k.to_be_bytes(), format!("value-{v:08}"));
        match st {
            Some(st) => w.cursor_put(st, &k, v.as_bytes(), WriteFlags::EMPTY),
            None => w.put(db, &k, v.as_bytes(), WriteFlags::EMPTY),
        }
        .unwrap();
    };
    let mut a = CursorState::new(&w, db).unwrap();
    let mut b = CursorState::new(&w, db).unwrap();
    let mut next = xorshift(7);
    for i in 0..6000u32 {
        let k = (next() % 4) as u32;
        match next() % 6 {
            0 => put(&mut w, Some(&mut b), k, i),
            1 => put(&mut w, None, k, i),
            2 => put(&mut w, Some(&mut a), k, i),
            3 => {
                // Delete a's current value, if a stands on one.
                if a.get(&w, CursorOp::GetCurrent).ok().flatten().is_some() {
                    let key = a.get(&w, CursorOp::GetCurrent).unwrap().unwrap().0;
                    let kk = u32::from_be_bytes(key.try_into().unwrap());
                    w.cursor_del(&mut a, false).unwrap();
                    *model.get_mut(&kk).unwrap() -= 1;
                    if model[&kk] == 0 {
                        model.remove(&kk);
                    }
                }
                continue;
            }
            4 => {
                let _ = a.get(&w, CursorOp::Set(&k.to_be_bytes())).unwrap();
                continue;
            }
            _ => {
                let _ = a.get(&w, CursorOp::Next).unwrap();
                continue;
            }
        }
        *model.entry(k).or_default() += 1;
        // a counts the key it stands on, whatever moved since: first with
        // no other call between (the change may be another handle's).
        let n = a.count(&w);
        if let Ok(Some((key, _))) = a.get(&w, CursorOp::GetCurrent) {
            let kk = u32::from_be_bytes(key.try_into().unwrap());
            assert_eq!(n.unwrap(), model[&kk], "step {i}, key {kk}");
            // Again: from the record kept.
            assert_eq!(a.count(&w).unwrap(), model[&kk], "step {i}, key {kk}");
        }
    }
    // A nested transaction's puts, then its abort: back to the parent's.
    a.get(&w, CursorOp::Set(&1u32.to_be_bytes())).unwrap();
    let before = a.count(&w).unwrap();
    assert!(before > 100, "key 1 has a sub-database");
    {
        let mut c = w.nested().unwrap();
        for i in 0..50u32 {
            put(&mut c, None, 1, 900_000 + i);
        }
        assert_eq!(a.count(&*c).unwrap(), before + 50);
        c.abort();
    }
    assert_eq!(a.count(&w).unwrap(), before);
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    let mut c = CursorState::new(&r, db).unwrap();
    for (k, n) in &model {
        c.get(&r, CursorOp::Set(&k.to_be_bytes())).unwrap().unwrap();
        assert_eq!(c.count(&r).unwrap(), *n);
        assert_eq!(c.count(&r).unwrap(), *n);
    }
}

/// Values ordered by their first 4 bytes only, as slapd's dn2id orders a
/// parent's children by name and keeps a count after it.
fn by_prefix(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a[..4.min(a.len())].cmp(&b[..4.min(b.len())])
}

/// `CURRENT` on a duplicate with a value of the same size that sorts the
/// same overwrites it in place (LMDB's way; slapd's dn2id updates counts
/// so), for a key with one value, a sub-page and a sub-database: the
/// values, the cursor's place and other cursors' are as after a delete
/// and a put.
#[test]
fn current_put_of_an_equal_duplicate_overwrites_it_in_place() {
    let (_d, env) = env_256m_dbs();
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    env.set_dupsort(db, by_prefix).unwrap();
    // Key 0: one value; key 1: a sub-page; key 2: a sub-database.
    let val = |i: u32, n: u32| [i.to_be_bytes(), n.to_be_bytes()].concat();
    let sizes = [1u32, 20, 2000];
    for (k, &n) in sizes.iter().enumerate() {
        for i in 0..n {
            w.put(db, &[k as u8], &val(i, 0), WriteFlags::EMPTY)
                .unwrap();
        }
    }
    let mut c = CursorState::new(&w, db).unwrap();
    let mut other = CursorState::new(&w, db).unwrap();
    let mut puts = 0;
    for (k, &n) in sizes.iter().enumerate() {
        let key = [k as u8];
        for i in (0..n).step_by(7) {
            let old = val(i, 0);
            let got = c.get(&w, CursorOp::GetBoth(&key, &old)).unwrap();
            assert_eq!(got.unwrap().1, &old[..]);
            other.get(&w, CursorOp::GetBoth(&key, &old)).unwrap();
            let new = val(i, i + 1);
            w.cursor_put(&mut c, &key, &new, WriteFlags::CURRENT)
                .unwrap();
            puts += 1;
            assert_eq!(
                c.get(&w, CursorOp::GetCurrent).unwrap().unwrap().1,
                &new[..]
            );
            assert_eq!(c.count(&w).unwrap(), n as u64);
            // The other cursor, on the same value, reads the new bytes.
            let o = other.get(&w, CursorOp::GetCurrent).unwrap().unwrap();
            assert_eq!(o.1, &new[..], "key {k} value {i}");
            // And the cursor steps on from there.
            let next = c
                .get(&w, CursorOp::NextDup)
                .unwrap()
                .map(|kv| kv.1.to_vec());
            assert_eq!(
                next,
                (i + 1 < n).then(|| val(i + 1, 0)),
                "key {k} value {i}"
            );
        }
    }
    // A value of another size, or sorting elsewhere: a delete and a put.
    c.get(&w, CursorOp::GetBoth(&[1], &val(3, 0)))
        .unwrap()
        .unwrap();
    w.cursor_put(
        &mut c,
        &[1],
        &[val(3, 9), vec![0]].concat(),
        WriteFlags::CURRENT,
    )
    .unwrap();
    assert_eq!(w.cursor_work().in_place, puts);
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    for (k, &n) in sizes.iter().enumerate() {
        let mut rc = CursorState::new(&r, db).unwrap();
        let mut got = vec![rc
            .get(&r, CursorOp::Set(&[k as u8]))
            .unwrap()
            .unwrap()
            .1
            .to_vec()];
        while let Some((_, v)) = rc.get(&r, CursorOp::NextDup).unwrap() {
            got.push(v.to_vec());
        }
        let want: Vec<Vec<u8>> = (0..n)
            .map(|i| match (k, i) {
                (1, 3) => [val(3, 9), vec![0]].concat(),
                _ if i % 7 == 0 => val(i, i + 1),
                _ => val(i, 0),
            })
            .collect();
        assert_eq!(got, want, "key {k}");
    }
}

/// An in-place `CURRENT` write of the first value of a sub-database leaf
/// other than the leftmost writes the new bytes into the separator above
/// too, as LMDB 0.9 does (checked with Debian's liblmdb: after the same
/// overwrites no old value is left in a compacted copy). Before, the
/// branch kept the old bytes, which compare equal but differ from LMDB's
/// file; with or without `DUP_FIXED` (LEAF2 sub-pages).
#[test]
fn current_put_in_place_updates_an_equal_separator() {
    let val = |i: u32, n: u32| [i.to_be_bytes(), n.to_be_bytes()].concat();
    let n = 2000u32;
    for flags in [DbFlags::DUP_SORT, DbFlags::DUP_SORT | DbFlags::DUP_FIXED] {
        let (_d, env) = env_256m_dbs();
        let mut w = env.write_txn().unwrap();
        let db = w.create_db("d", flags).unwrap();
        env.set_dupsort(db, by_prefix).unwrap();
        for i in 0..n {
            w.put(db, b"k", &val(i, 0xaa00_0000 + i), WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
        let mut w = env.write_txn().unwrap();
        let mut c = CursorState::new(&w, db).unwrap();
        for i in 0..n {
            c.get(&w, CursorOp::GetBoth(b"k", &val(i, 0xaa00_0000 + i)))
                .unwrap()
                .unwrap();
            w.cursor_put(&mut c, b"k", &val(i, 0x5500_0000 + i), WriteFlags::CURRENT)
                .unwrap();
        }
        assert_eq!(w.cursor_work().in_place, u64::from(n));
        w.commit().unwrap();
        let mut file = Vec::new();
        env.copy_to_writer(&mut file, true).unwrap();
        let count = |suffix: u32| {
            (0..n)
                .map(|i| {
                    let v = val(i, suffix + i);
                    file.windows(8).filter(|w| *w == &v[..]).count()
                })
                .sum::<usize>()
        };
        assert_eq!(count(0xaa00_0000), 0, "old bytes left, {flags:?}");
        // Each value once in its leaf, and the separators on top.
        assert!(count(0x5500_0000) > n as usize, "{flags:?}");
    }
}

/// A cursor whose item moved (another handle changed its database) does
/// not search for it again before an op that places it anew (SET, FIRST,
/// GET_BOTH, ...) or before a put other than `CURRENT`: slapd's dn2id
/// cursor did one such search per entry added. Ops that step from the
/// item still re-find it, also after a failed placing op.
#[test]
fn placing_ops_and_puts_skip_the_refind_of_a_moved_item() {
    let (_d, env) = env_256m_dbs();
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    let key = |i: u32| i.to_be_bytes();
    for i in (0..400u32).step_by(2) {
        w.put(db, &key(i), b"v", WriteFlags::EMPTY).unwrap();
    }
    let mut a = CursorState::new(&w, db).unwrap();
    let mut placing = 0;
    for i in (1..399u32).step_by(2) {
        a.get(&w, CursorOp::Set(&key(i - 1))).unwrap().unwrap();
        w.put(db, &key(i), b"v", WriteFlags::EMPTY).unwrap();
        // A placing op right after the change: no refind.
        let got = match i % 3 {
            0 => a.get(&w, CursorOp::Set(&key(i))).unwrap(),
            1 => a.get(&w, CursorOp::GetBoth(&key(i), b"v")).unwrap(),
            _ => a.get(&w, CursorOp::SetRange(&key(i))).unwrap(),
        };
        assert_eq!(got.unwrap().0, key(i));
        placing += 1;
        w.put(db, &key(i + 1000), b"w", WriteFlags::EMPTY).unwrap();
        // A put through the cursor: no refind, and it stands on the item.
        w.cursor_put(&mut a, &key(i), b"x", WriteFlags::EMPTY)
            .unwrap();
        let got = a.get(&w, CursorOp::GetCurrent).unwrap().unwrap();
        assert_eq!(got, (&key(i)[..], &b"x"[..]));
    }
    assert_eq!(w.cursor_work().refinds, 0, "{placing} placing ops");
    // A step after a change re-finds the item; so does a step after a
    // placing op that failed.
    a.get(&w, CursorOp::Set(&key(100))).unwrap().unwrap();
    w.del(db, &key(101)).unwrap();
    assert!(a.get(&w, CursorOp::Set(b"")).is_err());
    let next = a.get(&w, CursorOp::NextNodup).unwrap().unwrap();
    assert_eq!(next.0, key(102));
    assert_eq!(w.cursor_work().refinds, 1);
}

/// A cursor put of a duplicate that compares equal to one stored (other
/// bytes, a database's own order) leaves the cursor on the stored one,
/// and there it stays when the database changes elsewhere: the re-find
/// goes by the order, not the bytes.
#[test]
fn cursor_on_an_equal_duplicate_refinds_it_by_order() {
    let (_d, env) = env_256m_dbs();
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    env.set_dupsort(db, by_prefix).unwrap();
    for (k, n) in [(b"a", 3u32), (b"b", 40), (b"c", 3000)] {
        for i in 0..n {
            let v = [i.to_be_bytes(), [0; 4]].concat();
            w.put(db, k, &v, WriteFlags::EMPTY).unwrap();
        }
    }
    let mut c = CursorState::new(&w, db).unwrap();
    for k in [b"a", b"b", b"c"] {
        let v = [1u32.to_be_bytes(), [9; 4]].concat();
        w.cursor_put(&mut c, k, &v, WriteFlags::EMPTY).unwrap();
        w.put(db, b"z", b"other", WriteFlags::EMPTY).unwrap();
        // A step first: from the item as the put left it.
        let next = c.get(&w, CursorOp::NextDup).unwrap().unwrap();
        assert_eq!(next.1, [2u32.to_be_bytes(), [0; 4]].concat());
        let stored = [1u32.to_be_bytes(), [0; 4]].concat();
        w.cursor_put(&mut c, k, &v, WriteFlags::EMPTY).unwrap();
        w.put(db, b"z", b"more", WriteFlags::EMPTY).unwrap();
        let cur = c.get(&w, CursorOp::GetCurrent).unwrap().unwrap();
        assert_eq!(cur, (&k[..], &stored[..]));
        let next = c.get(&w, CursorOp::NextDup).unwrap().unwrap();
        assert_eq!(next.1, [2u32.to_be_bytes(), [0; 4]].concat());
    }
}

/// slapd's index shape (keys of 4 and 8 bytes, 8-byte ids, DUPFIXED)
/// with two cursors on one database: after each put through one, the
/// other re-finds its item by the key and value it kept (copied by size)
/// and steps on from there as a model says.
#[test]
fn cursors_refind_short_keys_and_ids_after_each_others_puts() {
    use std::collections::BTreeSet;
    let (_dir, env) = env_256m_dbs();
    let mut w = env.write_txn().unwrap();
    let db = w
        .create_db("idx", DbFlags::DUP_SORT | DbFlags::DUP_FIXED)
        .unwrap();
    let mut cs = [
        CursorState::new(&w, db).unwrap(),
        CursorState::new(&w, db).unwrap(),
    ];
    let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
    let mut model: BTreeSet<(Vec<u8>, Vec<u8>)> = BTreeSet::new();
    for n in 0..6000usize {
        let kn = rnd() % 300;
        let k = if kn.is_multiple_of(2) {
            (kn as u32).to_be_bytes().to_vec()
        } else {
            kn.to_be_bytes().to_vec()
        };
        let v = (rnd() % 20_000).to_be_bytes().to_vec();
        let (me, other) = (n % 2, 1 - n % 2);
        let before = cs[other]
            .get(&w, CursorOp::GetCurrent)
            .ok()
            .flatten()
            .map(|(a, b)| (a.to_vec(), b.to_vec()));
        cs[me].get(&w, CursorOp::Set(&k)).unwrap();
        let r = w.cursor_put(&mut cs[me], &k, &v, WriteFlags::NO_DUP_DATA);
        if !model.insert((k.clone(), v.clone())) {
            assert_eq!(r.map_err(|e| e.kind()), Err(mdb::ErrorKind::KeyExist));
        } else {
            r.unwrap();
        }
        let Some(o) = before else { continue };
        let want = model.range(o.clone()..).nth(1);
        let next = cs[other].get(&w, CursorOp::Next).unwrap();
        assert_eq!(
            next.map(|(a, b)| (a.to_vec(), b.to_vec())).as_ref(),
            want,
            "op {n}: NEXT after {o:?}"
        );
    }
    assert!(w.cursor_work().refinds > 1000, "{:?}", w.cursor_work());
    let all: Vec<(Vec<u8>, Vec<u8>)> = w
        .cursor(db)
        .unwrap()
        .iter()
        .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
}

/// A seek among a key's values in a read snapshot may stay on the leaf
/// the cursor stands on, but only on a leaf of that key's sub-database:
/// the cursor's sub-database position is reused for the next key's, whose
/// values here lie between the first and last of the other key's last
/// leaf. (It stayed: GET_BOTH_RANGE into "a" then walked "b"'s values.)
#[test]
fn a_seek_into_another_keys_values_descends_their_tree() {
    let (_dir, env) = env_256m_dbs();
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    // Each key's values in sub-databases of several leaves: "a" the even
    // numbers, "b" the odd ones.
    for i in 0..3000u32 {
        let k: &[u8] = if i % 2 == 0 { b"a" } else { b"b" };
        w.put(db, k, format!("{i:05}").as_bytes(), WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    let want: Vec<String> = (2900..3000u32)
        .step_by(2)
        .map(|i| format!("{i:05}"))
        .collect();
    // The detached cursor (the C ABI's).
    let mut c = CursorState::new(&r, db).unwrap();
    c.get(&r, CursorOp::Set(b"b")).unwrap().unwrap();
    assert_eq!(c.get(&r, CursorOp::LastDup).unwrap().unwrap().1, b"02999");
    let mut got = Vec::new();
    let mut item = c.get(&r, CursorOp::GetBothRange(b"a", b"02899")).unwrap();
    while let Some((k, v)) = item {
        assert_eq!(k, b"a");
        got.push(String::from_utf8(v.to_vec()).unwrap());
        item = c.get(&r, CursorOp::NextDup).unwrap();
    }
    assert_eq!(got, want);
    // The Rust cursor.
    let mut c = r.cursor(db).unwrap();
    c.set(b"b").unwrap().unwrap();
    assert_eq!(c.last_dup().unwrap().unwrap().1, b"02999");
    let mut got = Vec::new();
    let mut item = c.get_both_range(b"a", b"02899").unwrap();
    while let Some((k, v)) = item {
        assert_eq!(k, b"a");
        got.push(String::from_utf8(v.to_vec()).unwrap());
        item = c.next_dup().unwrap();
    }
    assert_eq!(got, want);
}
