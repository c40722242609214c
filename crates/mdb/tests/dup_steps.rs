//! Random walks of the Rust `Cursor` over DUPSORT databases (sub-pages and
//! sub-databases of several leaves, DUPFIXED or not) in lockstep with a
//! `CursorState` over the same transaction: the `Cursor` steps `next_dup`
//! and `next` along the page of the key's values it kept from the move
//! before, the `CursorState` takes the general path every time, and both
//! must answer alike whatever move came between.

use mdb::{CursorOp, CursorState, Database, DbFlags, EnvOptions, Txn, WriteFlags};

fn xorshift(mut x: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    }
}

type Answer = Result<Option<(Vec<u8>, Vec<u8>)>, mdb::ErrorKind>;

fn answer(r: mdb::Result<Option<mdb::Item<'_>>>) -> Answer {
    r.map(|o| o.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .map_err(|e| e.kind())
}

fn key(fixed: bool, i: u64) -> Vec<u8> {
    format!("{}{i}", if fixed { 'f' } else { 'k' }).into_bytes()
}

fn val(fixed: bool, v: u64) -> Vec<u8> {
    if fixed {
        (v as u32).to_ne_bytes().to_vec()
    } else {
        format!("v{v:04}").into_bytes()
    }
}

/// `n` random moves of a `Cursor` and a `CursorState` over `db` of `txn`.
fn walk<T: Txn>(txn: &T, db: Database, fixed: bool, rnd: &mut impl FnMut(u64) -> u64) {
    let mut c = txn.cursor(db).unwrap();
    let mut s = CursorState::new(txn, db).unwrap();
    let (nkeys, space) = if fixed { (8, 5000) } else { (10, 1000) };
    for step in 0..1500 {
        let k = key(fixed, rnd(nkeys + 1));
        let v = val(fixed, rnd(space));
        let op = match rnd(30) {
            0..=9 => CursorOp::NextDup,
            10..=13 => CursorOp::Next,
            14 => CursorOp::Prev,
            15 => CursorOp::PrevDup,
            16 => CursorOp::NextNodup,
            17 => CursorOp::PrevNodup,
            18 => CursorOp::FirstDup,
            19 => CursorOp::LastDup,
            20 => CursorOp::GetCurrent,
            21 => CursorOp::First,
            22 => CursorOp::Last,
            23 => CursorOp::Set(&k),
            24 => CursorOp::SetRange(&k),
            25 => CursorOp::GetBoth(&k, &v),
            26 => CursorOp::GetBothRange(&k, &v),
            27 if fixed => CursorOp::GetMultiple,
            28 if fixed => CursorOp::NextMultiple,
            _ => {
                let (a, b) = (c.count().map_err(|e| e.kind()), s.count(txn));
                assert_eq!(a, b.map_err(|e| e.kind()), "step {step}: count");
                continue;
            }
        };
        // (Both through `op`, as the C library calls `CursorState::get`;
        // `next_dup` and `next` below are the same steps.)
        let a = match (op, rnd(2)) {
            (CursorOp::NextDup, 0) => answer(c.next_dup()),
            (CursorOp::Next, 0) => answer(c.next()),
            _ => answer(c.op(op)),
        };
        let b = answer(s.get(txn, op));
        assert_eq!(a, b, "step {step}: {op:?}");
    }
}

#[test]
fn kept_dup_steps_answer_as_the_general_path() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .map_size(256 << 20)
        .max_dbs(2)
        .open(dir.path())
        .unwrap();
    let mut rnd = xorshift(0x9E37_79B9_7F4A_7C15);
    let mut w = env.write_txn().unwrap();
    let d = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    let f = w
        .create_db(
            "f",
            DbFlags::DUP_SORT | DbFlags::DUP_FIXED | DbFlags::INTEGER_DUP,
        )
        .unwrap();
    // One value, a few, a sub-page near its limit, sub-databases.
    let counts = [
        [1, 3, 40, 100, 300, 1, 600, 20, 2, 150],
        [1, 5, 200, 450, 900, 2400, 1, 60, 0, 0],
    ];
    for (fixed, (db, counts)) in [(false, (d, counts[0])), (true, (f, counts[1]))] {
        let space = if fixed { 5000 } else { 1000 };
        for (i, &n) in counts.iter().enumerate() {
            for _ in 0..n {
                let (k, v) = (key(fixed, i as u64), val(fixed, rnd(space)));
                w.put(db, &k, &v, WriteFlags::EMPTY).unwrap();
            }
        }
    }
    w.commit().unwrap();
    for _ in 0..6 {
        let r = env.read_txn().unwrap();
        walk(&r, d, false, &mut rnd);
        walk(&r, f, true, &mut rnd);
        drop(r);
        // Changes, then walks in the write transaction that made them.
        let mut w = env.write_txn().unwrap();
        for fixed in [false, true] {
            let (db, nkeys, space) = if fixed { (f, 8, 5000) } else { (d, 10, 1000) };
            for _ in 0..200 {
                let (k, v) = (key(fixed, rnd(nkeys)), val(fixed, rnd(space)));
                if rnd(3) == 0 {
                    let _ = w.del_dup(db, &k, &v).unwrap();
                } else {
                    w.put(db, &k, &v, WriteFlags::EMPTY).unwrap();
                }
            }
        }
        walk(&w, d, false, &mut rnd);
        walk(&w, f, true, &mut rnd);
        w.commit().unwrap();
    }
}
