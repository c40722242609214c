//! Target `ops_model`: an `arbitrary`-derived operation sequence on MAIN and
//! a DUPSORT database, checked against `BTreeMap` models, with commits,
//! aborts, nested transactions and close-and-reopen.

use crate::ScratchDir;
use arbitrary::Arbitrary;
use mdb::{check, Database, DbFlags, Env, EnvFlags, EnvOptions, ErrorKind, RwTxn, Txn, WriteFlags};
use std::collections::{BTreeMap, BTreeSet};

/// Most operations run per input (the rest are ignored).
pub const MAX_OPS: usize = 200;
/// Most cursor moves per cursor operation.
pub const MAX_MOVES: usize = 48;
/// A sequence of up to `MAX` items whose length is read up front (a plain
/// `Vec`'s `Arbitrary` impl, outside the last field, reads a continue-flag
/// per element, which makes long sequences rare).
#[derive(Debug, Clone)]
pub struct Seq<T, const MAX: usize>(pub Vec<T>);

impl<'a, T: Arbitrary<'a>, const MAX: usize> Arbitrary<'a> for Seq<T, MAX> {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let n = u.int_in_range(0..=MAX)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            if u.is_empty() {
                break;
            }
            v.push(T::arbitrary(u)?);
        }
        Ok(Seq(v))
    }
}

/// Name of the DUPSORT database (never a MAIN key of the model: those use
/// only `a`-`c` or one repeated byte).
pub const DUPS: &str = "dups";

/// One fuzz input.
#[derive(Arbitrary, Debug, Clone)]
pub struct Input {
    /// Open with `MDB_WRITEMAP`.
    pub write_map: bool,
    /// Open with `MDB_NOSYNC`.
    pub no_sync: bool,
    /// The operations.
    pub ops: Seq<Op, MAX_OPS>,
}

/// Which database an operation targets.
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The main database (plain keys).
    Main,
    /// The DUPSORT database.
    Dups,
}

/// Index of a variant chosen by `weights`, from one input byte.
fn pick(u: &mut arbitrary::Unstructured<'_>, weights: &[u32]) -> arbitrary::Result<usize> {
    let total: u32 = weights.iter().sum();
    let mut x = u.int_in_range(0..=total - 1)?;
    for (i, &w) in weights.iter().enumerate() {
        if x < w {
            return Ok(i);
        }
        x -= w;
    }
    Ok(weights.len() - 1)
}

/// A key: mostly a small set of short keys so operations collide, sometimes
/// a long one (up to the 511-byte limit). Variants are weighted 85/15.
#[derive(Debug, Clone, Copy)]
pub enum KeySpec {
    /// One of ~100 keys of 1-4 letters from `abc`.
    Small(u8),
    /// `len % 511 + 1` copies of one byte (odd, never 0).
    Long(u16, u8),
}

impl KeySpec {
    /// The key bytes.
    pub fn bytes(self) -> Vec<u8> {
        match self {
            KeySpec::Small(n) => {
                let len = 1 + (n % 4) as usize;
                let mut x = (n / 4) as usize;
                (0..len)
                    .map(|_| {
                        let c = b'a' + (x % 3) as u8;
                        x /= 3;
                        c
                    })
                    .collect()
            }
            KeySpec::Long(l, b) => vec![b | 1; 1 + (l as usize % mdb::MAX_KEY_SIZE)],
        }
    }
}

impl<'a> Arbitrary<'a> for KeySpec {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(match pick(u, &[85, 15])? {
            0 => KeySpec::Small(u.arbitrary()?),
            _ => KeySpec::Long(u.arbitrary()?, u.arbitrary()?),
        })
    }
}

/// A MAIN value: small, medium or overflow-sized (weighted 60/28/12).
#[derive(Debug, Clone, Copy)]
pub enum ValSpec {
    /// 0-63 bytes.
    Small(u8, u8),
    /// 64-2111 bytes.
    Medium(u16, u8),
    /// 2112-18495 bytes (overflow pages).
    Big(u16, u8),
}

impl ValSpec {
    /// The value bytes.
    pub fn bytes(self) -> Vec<u8> {
        let (n, b) = match self {
            ValSpec::Small(n, b) => (n as usize % 64, b),
            ValSpec::Medium(n, b) => (64 + n as usize % 2048, b),
            ValSpec::Big(n, b) => (2112 + n as usize % 16384, b),
        };
        (0..n).map(|i| b.wrapping_add(i as u8)).collect()
    }
}

impl<'a> Arbitrary<'a> for ValSpec {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(match pick(u, &[60, 28, 12])? {
            0 => ValSpec::Small(u.arbitrary()?, u.arbitrary()?),
            1 => ValSpec::Medium(u.arbitrary()?, u.arbitrary()?),
            _ => ValSpec::Big(u.arbitrary()?, u.arbitrary()?),
        })
    }
}

/// A duplicate value: `%05d` of `v % 2000`, padded to `len` (5..=260) bytes.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct DupVal(pub u16, pub u8);

impl DupVal {
    /// The value bytes.
    pub fn bytes(self) -> Vec<u8> {
        let v = self.0 % 2000;
        let mut b = format!("{v:05}").into_bytes();
        b.resize(5 + self.1 as usize, b'0' + (v % 10) as u8);
        b
    }
}

/// One cursor move.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Move {
    /// `MDB_FIRST`.
    First,
    /// `MDB_LAST`.
    Last,
    /// `MDB_NEXT`.
    Next,
    /// `MDB_PREV`.
    Prev,
    /// `MDB_NEXT_DUP`.
    NextDup,
    /// `MDB_PREV_DUP`.
    PrevDup,
    /// `MDB_NEXT_NODUP`.
    NextNodup,
    /// `MDB_PREV_NODUP`.
    PrevNodup,
    /// `MDB_FIRST_DUP`.
    FirstDup,
    /// `MDB_LAST_DUP`.
    LastDup,
    /// `MDB_GET_CURRENT`.
    GetCurrent,
    /// `MDB_SET_KEY`.
    SetKey(KeySpec),
    /// `MDB_SET_RANGE`.
    SetRange(KeySpec),
    /// `MDB_GET_BOTH`.
    GetBoth(KeySpec, DupVal),
    /// `MDB_GET_BOTH_RANGE`.
    GetBothRange(KeySpec, DupVal),
    /// `mdb_cursor_count`.
    Count,
}

/// One change inside a nested transaction.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct Change {
    /// Target database.
    pub db: Which,
    /// Key.
    pub key: KeySpec,
    /// MAIN value.
    pub val: ValSpec,
    /// DUPSORT value.
    pub dval: DupVal,
    /// Delete (the key on MAIN, the pair on the DUPSORT DB) instead of put.
    pub del: bool,
}

/// One operation. The variant is chosen with weights (puts and deletes
/// common, clear/abort/reopen rare) so random inputs build up real trees;
/// the fields are `arbitrary`-derived.
#[derive(Debug, Clone)]
pub enum Op {
    /// `put` on MAIN.
    Put(KeySpec, ValSpec),
    /// `put` on the DUPSORT DB.
    PutDup(KeySpec, DupVal),
    /// `put` with `NO_OVERWRITE`.
    PutNoOverwrite(Which, KeySpec, ValSpec, DupVal),
    /// `put` with `NO_DUP_DATA` on the DUPSORT DB.
    PutNoDupData(KeySpec, DupVal),
    /// Many values under one DUPSORT key (crosses the sub-page/sub-DB threshold).
    BulkDups(KeySpec, u16, u16, u8),
    /// `del` of a whole key.
    Del(Which, KeySpec),
    /// `del_dup` of one pair; `true`: of the first stored value >= the given one.
    DelDup(KeySpec, DupVal, bool),
    /// `get`.
    Get(Which, KeySpec),
    /// A read cursor and a sequence of moves.
    Cursor(Which, Seq<Move, MAX_MOVES>),
    /// A write cursor: `set_range`, `del`, then `next`.
    CursorDel(Which, KeySpec, bool),
    /// A write cursor: `set_range`, then `put` with `CURRENT` on MAIN.
    CursorPutCurrent(KeySpec, ValSpec),
    /// `clear_db` of the DUPSORT DB.
    ClearDups,
    /// A child transaction, then commit (`true`) or abort.
    Nested(Seq<Change, 64>, bool),
    /// Commit the write transaction and begin another.
    Commit,
    /// Abort the write transaction and begin another.
    Abort,
    /// Commit (`true`) or abort, close the environment, check the file, reopen.
    Reopen(bool),
}

impl<'a> Arbitrary<'a> for Op {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        const W: [u32; 16] = [20, 20, 4, 4, 3, 8, 8, 6, 8, 4, 3, 1, 3, 4, 2, 2];
        Ok(match pick(u, &W)? {
            0 => Op::Put(u.arbitrary()?, u.arbitrary()?),
            1 => Op::PutDup(u.arbitrary()?, u.arbitrary()?),
            2 => Op::PutNoOverwrite(
                u.arbitrary()?,
                u.arbitrary()?,
                u.arbitrary()?,
                u.arbitrary()?,
            ),
            3 => Op::PutNoDupData(u.arbitrary()?, u.arbitrary()?),
            4 => Op::BulkDups(
                u.arbitrary()?,
                u.arbitrary()?,
                u.arbitrary()?,
                u.arbitrary()?,
            ),
            5 => Op::Del(u.arbitrary()?, u.arbitrary()?),
            6 => Op::DelDup(u.arbitrary()?, u.arbitrary()?, u.arbitrary()?),
            7 => Op::Get(u.arbitrary()?, u.arbitrary()?),
            8 => Op::Cursor(u.arbitrary()?, u.arbitrary()?),
            9 => Op::CursorDel(u.arbitrary()?, u.arbitrary()?, u.arbitrary()?),
            10 => Op::CursorPutCurrent(u.arbitrary()?, u.arbitrary()?),
            11 => Op::ClearDups,
            12 => Op::Nested(u.arbitrary()?, u.arbitrary()?),
            13 => Op::Commit,
            14 => Op::Abort,
            _ => Op::Reopen(u.arbitrary()?),
        })
    }
}

type MainModel = BTreeMap<Vec<u8>, Vec<u8>>;
type DupModel = BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>;

/// The model state of both databases.
#[derive(Clone, Default, Debug)]
pub struct Model {
    main: MainModel,
    dups: DupModel,
}

impl Model {
    /// The sorted (key, value) pairs of one database.
    fn flat(&self, w: Which) -> Vec<(Vec<u8>, Vec<u8>)> {
        match w {
            Which::Main => self
                .main
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            Which::Dups => self
                .dups
                .iter()
                .flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone())))
                .collect(),
        }
    }
    fn dup_insert(&mut self, k: Vec<u8>, v: Vec<u8>) {
        self.dups.entry(k).or_default().insert(v);
    }
    fn dup_remove(&mut self, k: &[u8], v: &[u8]) -> bool {
        let Some(s) = self.dups.get_mut(k) else {
            return false;
        };
        let r = s.remove(v);
        if s.is_empty() {
            self.dups.remove(k);
        }
        r
    }
}

struct Envs {
    dir: ScratchDir,
    flags: EnvFlags,
}

impl Envs {
    fn open(&self) -> Env {
        EnvOptions::new()
            .map_size(64 << 20)
            .max_dbs(2)
            .flags(self.flags)
            .open(self.dir.path())
            .expect("open env")
    }
}

fn dups_db(w: &mut RwTxn<'_>) -> Database {
    w.create_db(DUPS, DbFlags::DUP_SORT)
        .expect("create/open dups")
}

fn db_of(w: Which, dups: Database) -> Database {
    match w {
        Which::Main => Database::MAIN,
        Which::Dups => dups,
    }
}

/// Compare everything the snapshot `r` holds with the model.
fn verify<T: Txn>(r: &T, dups: Database, m: &Model, ctx: &str) {
    // MAIN, minus the DUPSORT DB's record.
    let mut got = Vec::new();
    let mut c = r.cursor(Database::MAIN).unwrap();
    let mut item = c.first().unwrap();
    while let Some((k, v)) = item {
        if k != DUPS.as_bytes() {
            got.push((k.to_vec(), v.to_vec()));
        }
        item = c.next().unwrap();
    }
    let want = m.flat(Which::Main);
    assert_eq!(got.len(), want.len(), "{ctx}: MAIN length");
    assert!(got == want, "{ctx}: MAIN contents differ");
    assert_eq!(
        r.stat(Database::MAIN).unwrap().entries,
        m.main.len() as u64 + 1,
        "{ctx}: MAIN entries"
    );
    for (k, v) in &m.main {
        assert_eq!(
            r.get(Database::MAIN, k).unwrap(),
            Some(&v[..]),
            "{ctx}: get"
        );
    }

    // DUPSORT: forwards, backwards, and key by key with counts.
    let want = m.flat(Which::Dups);
    let mut c = r.cursor(dups).unwrap();
    let mut got = Vec::new();
    let mut item = c.first().unwrap();
    while let Some((k, v)) = item {
        got.push((k.to_vec(), v.to_vec()));
        item = c.next().unwrap();
    }
    assert_eq!(got.len(), want.len(), "{ctx}: dups length");
    assert!(got == want, "{ctx}: dups contents differ");
    let mut back = Vec::new();
    let mut item = c.last().unwrap();
    while let Some((k, v)) = item {
        back.push((k.to_vec(), v.to_vec()));
        item = c.prev().unwrap();
    }
    back.reverse();
    assert!(back == want, "{ctx}: dups reverse walk differs");
    let mut item = c.first().unwrap();
    for (k, vs) in &m.dups {
        let (ck, cv) = item.expect("key missing in key walk");
        assert_eq!(ck, &k[..], "{ctx}: key walk");
        assert_eq!(cv, &vs.first().unwrap()[..], "{ctx}: first dup");
        assert_eq!(c.count().unwrap(), vs.len() as u64, "{ctx}: count");
        assert_eq!(
            c.last_dup().unwrap().unwrap().1,
            &vs.last().unwrap()[..],
            "{ctx}: last dup"
        );
        assert_eq!(
            r.get(dups, k).unwrap(),
            Some(&vs.first().unwrap()[..]),
            "{ctx}: dup get"
        );
        item = c.next_nodup().unwrap();
    }
    assert!(item.is_none(), "{ctx}: extra keys in key walk");
    assert_eq!(
        r.stat(dups).unwrap().entries,
        want.len() as u64,
        "{ctx}: dups entries"
    );
}

/// Where the model thinks a cursor is.
#[derive(Clone, Debug, PartialEq)]
enum Pos {
    /// Never positioned.
    Unset,
    /// Positioned somewhere the model does not pin down (after a miss).
    Unknown,
    /// On this pair (an index into the flattened pairs).
    At(usize),
}

type Pair = (Vec<u8>, Vec<u8>);

fn owned(r: mdb::Result<Option<(&[u8], &[u8])>>, ctx: &str) -> Option<Pair> {
    r.unwrap_or_else(|e| panic!("{ctx}: unexpected error {e:?}"))
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
}

/// Run the moves on a read cursor over `db` and check each against `flat`.
fn cursor_moves<T: Txn>(t: &T, db: Database, which: Which, flat: &[Pair], moves: &[Move]) {
    let dupsort = which == Which::Dups;
    let mut c = t.cursor(db).unwrap();
    let mut pos = Pos::Unset;
    let idx_of = |p: &Pair| flat.binary_search(p).ok();
    for (step, mv) in moves.iter().take(MAX_MOVES).enumerate() {
        let ctx = format!("cursor {which:?} move {step} {mv:?} from {pos:?}");
        // `want`: Some(expected result) when the model pins it down.
        let (got, want): (Option<Pair>, Option<Option<usize>>) = match *mv {
            Move::First => (
                owned(c.first(), &ctx),
                Some((!flat.is_empty()).then_some(0)),
            ),
            Move::Last => (owned(c.last(), &ctx), Some(flat.len().checked_sub(1))),
            Move::Next => {
                let w = match pos {
                    Pos::Unset => Some((!flat.is_empty()).then_some(0)),
                    Pos::At(i) => Some((i + 1 < flat.len()).then_some(i + 1)),
                    Pos::Unknown => None,
                };
                (owned(c.next(), &ctx), w)
            }
            Move::Prev => {
                let w = match pos {
                    Pos::Unset => Some(flat.len().checked_sub(1)),
                    Pos::At(i) => Some(i.checked_sub(1)),
                    Pos::Unknown => None,
                };
                (owned(c.prev(), &ctx), w)
            }
            Move::NextNodup => {
                let w = match pos {
                    Pos::Unset => Some((!flat.is_empty()).then_some(0)),
                    Pos::At(i) => {
                        let j = flat.partition_point(|p| p.0 <= flat[i].0);
                        Some((j < flat.len()).then_some(j))
                    }
                    Pos::Unknown => None,
                };
                (owned(c.next_nodup(), &ctx), w)
            }
            Move::PrevNodup => {
                let w = match pos {
                    Pos::Unset => Some(flat.len().checked_sub(1)),
                    Pos::At(i) => {
                        let j = flat.partition_point(|p| p.0 < flat[i].0);
                        Some(j.checked_sub(1))
                    }
                    Pos::Unknown => None,
                };
                (owned(c.prev_nodup(), &ctx), w)
            }
            Move::NextDup | Move::PrevDup | Move::FirstDup | Move::LastDup | Move::Count
                if !dupsort =>
            {
                // Not meaningful on MAIN: only require no panic, and
                // forget the position.
                let _ = match *mv {
                    Move::NextDup => c.next_dup().map(|_| ()),
                    Move::PrevDup => c.prev_dup().map(|_| ()),
                    Move::FirstDup => c.first_dup().map(|_| ()),
                    Move::LastDup => c.last_dup().map(|_| ()),
                    _ => c.count().map(|_| ()),
                };
                pos = Pos::Unknown;
                continue;
            }
            Move::NextDup => match pos {
                Pos::At(i) => {
                    let w = (i + 1 < flat.len() && flat[i + 1].0 == flat[i].0).then_some(i + 1);
                    (owned(c.next_dup(), &ctx), Some(w))
                }
                _ => {
                    let _ = c.next_dup();
                    pos = Pos::Unknown;
                    continue;
                }
            },
            Move::PrevDup => match pos {
                Pos::At(i) => {
                    let w = (i > 0 && flat[i - 1].0 == flat[i].0).then(|| i - 1);
                    (owned(c.prev_dup(), &ctx), Some(w))
                }
                _ => {
                    let _ = c.prev_dup();
                    pos = Pos::Unknown;
                    continue;
                }
            },
            Move::FirstDup | Move::LastDup => match pos {
                Pos::At(i) => {
                    let k = &flat[i].0;
                    let w = if matches!(mv, Move::FirstDup) {
                        flat.partition_point(|p| p.0 < *k)
                    } else {
                        flat.partition_point(|p| p.0 <= *k) - 1
                    };
                    let r = if matches!(mv, Move::FirstDup) {
                        c.first_dup()
                    } else {
                        c.last_dup()
                    };
                    (owned(r, &ctx), Some(Some(w)))
                }
                _ => {
                    let r = if matches!(mv, Move::FirstDup) {
                        c.first_dup()
                    } else {
                        c.last_dup()
                    };
                    if pos == Pos::Unset {
                        assert!(r.is_err(), "{ctx}: unpositioned first/last_dup succeeded");
                    }
                    pos = Pos::Unknown;
                    continue;
                }
            },
            Move::Count => {
                match pos {
                    Pos::At(i) => {
                        let k = &flat[i].0;
                        let n = flat.iter().filter(|p| p.0 == *k).count() as u64;
                        assert_eq!(c.count().unwrap(), n, "{ctx}");
                    }
                    Pos::Unset => assert!(c.count().is_err(), "{ctx}: unpositioned count"),
                    Pos::Unknown => {
                        let _ = c.count();
                    }
                }
                continue;
            }
            Move::GetCurrent => match pos {
                Pos::At(i) => (owned(c.get_current(), &ctx), Some(Some(i))),
                Pos::Unset => {
                    assert!(c.get_current().is_err(), "{ctx}: unpositioned get_current");
                    continue;
                }
                // After a miss the cursor may be unpositioned.
                Pos::Unknown => match c.get_current() {
                    Err(e) if e == ErrorKind::Misuse(mdb::Misuse::UnpositionedCursor) => {
                        pos = Pos::Unknown;
                        continue;
                    }
                    r => (owned(r, &ctx), None),
                },
            },
            Move::SetKey(k) => {
                let k = k.bytes();
                let j = flat.partition_point(|p| p.0 < k);
                let w = (j < flat.len() && flat[j].0 == k).then_some(j);
                (owned(c.set_key(&k), &ctx), Some(w))
            }
            Move::SetRange(k) => {
                let k = k.bytes();
                let j = flat.partition_point(|p| p.0 < k);
                (
                    owned(c.set_range(&k), &ctx),
                    Some((j < flat.len()).then_some(j)),
                )
            }
            Move::GetBoth(k, v) | Move::GetBothRange(k, v) => {
                let exact = matches!(mv, Move::GetBoth(..));
                let (k, v) = (k.bytes(), v.bytes());
                if !dupsort {
                    let r = if exact {
                        c.get_both(&k, &v)
                    } else {
                        c.get_both_range(&k, &v)
                    };
                    assert!(r.is_err(), "{ctx}: get_both on a non-DUPSORT DB");
                    continue;
                }
                let j = flat.partition_point(|p| p.0 < k || (p.0 == k && p.1 < v));
                let w =
                    (j < flat.len() && flat[j].0 == k && (!exact || flat[j].1 == v)).then_some(j);
                let r = if exact {
                    c.get_both(&k, &v)
                } else {
                    c.get_both_range(&k, &v)
                };
                (owned(r, &ctx), Some(w))
            }
        };
        match want {
            Some(w) => {
                let w_pair = w.map(|i| flat[i].clone());
                assert_eq!(got, w_pair, "{ctx}");
                pos = match w {
                    Some(i) => Pos::At(i),
                    None => Pos::Unknown,
                };
            }
            None => match got {
                Some(p) => {
                    let i = idx_of(&p).unwrap_or_else(|| {
                        panic!("{ctx}: returned a pair not in the model: {p:?}")
                    });
                    pos = Pos::At(i);
                }
                None => pos = Pos::Unknown,
            },
        }
    }
}

/// Apply `ch` to `w` and `m`.
fn apply_change(w: &mut RwTxn<'_>, dups: Database, m: &mut Model, ch: &Change) {
    let k = ch.key.bytes();
    match (ch.db, ch.del) {
        (Which::Main, false) => {
            let v = ch.val.bytes();
            w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
            m.main.insert(k, v);
        }
        (Which::Main, true) => {
            assert_eq!(
                w.del(Database::MAIN, &k).unwrap(),
                m.main.remove(&k).is_some()
            );
        }
        (Which::Dups, false) => {
            let v = ch.dval.bytes();
            w.put(dups, &k, &v, WriteFlags::EMPTY).unwrap();
            m.dup_insert(k, v);
        }
        (Which::Dups, true) => {
            let v = ch.dval.bytes();
            assert_eq!(w.del_dup(dups, &k, &v).unwrap(), m.dup_remove(&k, &v));
        }
    }
}

/// Run one operation in the write transaction `w`.
fn step(w: &mut RwTxn<'_>, dups: Database, cur: &mut Model, op: &Op) {
    match op {
        Op::Put(k, v) => {
            let (k, v) = (k.bytes(), v.bytes());
            w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
            cur.main.insert(k, v);
        }
        Op::PutDup(k, v) => {
            let (k, v) = (k.bytes(), v.bytes());
            w.put(dups, &k, &v, WriteFlags::EMPTY).unwrap();
            cur.dup_insert(k, v);
        }
        Op::PutNoOverwrite(which, k, v, dv) => {
            let k = k.bytes();
            match which {
                Which::Main => {
                    let v = v.bytes();
                    let r = w.put(Database::MAIN, &k, &v, WriteFlags::NO_OVERWRITE);
                    match cur.main.get(&k) {
                        Some(old) => {
                            assert_eq!(
                                r.map_err(|e| e.kind()),
                                Err(ErrorKind::KeyExist),
                                "NO_OVERWRITE on existing key"
                            );
                            assert_eq!(w.get(Database::MAIN, &k).unwrap(), Some(&old[..]));
                        }
                        None => {
                            r.unwrap();
                            cur.main.insert(k, v);
                        }
                    }
                }
                Which::Dups => {
                    let v = dv.bytes();
                    let r = w.put(dups, &k, &v, WriteFlags::NO_OVERWRITE);
                    if cur.dups.contains_key(&k) {
                        assert_eq!(
                            r.map_err(|e| e.kind()),
                            Err(ErrorKind::KeyExist),
                            "NO_OVERWRITE on existing dup key"
                        );
                    } else {
                        r.unwrap();
                        cur.dup_insert(k, v);
                    }
                }
            }
        }
        Op::PutNoDupData(k, v) => {
            let (k, v) = (k.bytes(), v.bytes());
            let r = w.put(dups, &k, &v, WriteFlags::NO_DUP_DATA);
            if cur.dups.get(&k).is_some_and(|s| s.contains(&v)) {
                assert_eq!(
                    r.map_err(|e| e.kind()),
                    Err(ErrorKind::KeyExist),
                    "NO_DUP_DATA on existing pair"
                );
            } else {
                r.unwrap();
                cur.dup_insert(k, v);
            }
        }
        Op::BulkDups(k, start, n, len) => {
            let k = k.bytes();
            for i in 0..(*n % 400) {
                let v = DupVal(start.wrapping_add(i.wrapping_mul(3)), *len % 16).bytes();
                w.put(dups, &k, &v, WriteFlags::EMPTY).unwrap();
                cur.dup_insert(k.clone(), v);
            }
        }
        Op::Del(which, k) => {
            let k = k.bytes();
            let existed = match which {
                Which::Main => cur.main.remove(&k).is_some(),
                Which::Dups => cur.dups.remove(&k).is_some(),
            };
            assert_eq!(
                w.del(db_of(*which, dups), &k).unwrap(),
                existed,
                "del {k:?}"
            );
        }
        Op::DelDup(k, v, pick) => {
            let k = k.bytes();
            let mut v = v.bytes();
            if *pick {
                if let Some(x) = cur.dups.get(&k).and_then(|s| s.range(v.clone()..).next()) {
                    v = x.clone();
                }
            }
            let existed = cur.dup_remove(&k, &v);
            assert_eq!(
                w.del_dup(dups, &k, &v).unwrap(),
                existed,
                "del_dup {k:?} {v:?}"
            );
        }
        Op::Get(which, k) => {
            let k = k.bytes();
            let want: Option<Vec<u8>> = match which {
                Which::Main => cur.main.get(&k).cloned(),
                Which::Dups => cur.dups.get(&k).map(|s| s.first().unwrap().clone()),
            };
            assert_eq!(
                w.get(db_of(*which, dups), &k).unwrap().map(|v| v.to_vec()),
                want,
                "get {k:?}"
            );
        }
        Op::Cursor(which, moves) => {
            let mut flat = cur.flat(*which);
            if *which == Which::Main {
                // The DUPSORT DB's record is a MAIN key too.
                let name = DUPS.as_bytes().to_vec();
                let i = flat.partition_point(|p| p.0 < name);
                // Its value is the 48-byte record: take it from the engine.
                let v = {
                    let mut c = w.cursor(Database::MAIN).unwrap();
                    c.set_key(&name).unwrap().expect("dups record").1.to_vec()
                };
                flat.insert(i, (name, v));
            }
            cursor_moves(&*w, db_of(*which, dups), *which, &flat, &moves.0);
        }
        Op::CursorDel(which, k, all) => {
            let k = k.bytes();
            let flat = cur.flat(*which);
            let j = flat.partition_point(|p| p.0 < k);
            let mut c = w.write_cursor(db_of(*which, dups)).unwrap();
            let found = c
                .set_range(&k)
                .unwrap()
                .map(|(a, b)| (a.to_vec(), b.to_vec()));
            // On MAIN the DUPSORT DB's record may be the first key >= k: leave it alone.
            let want = flat.get(j).cloned();
            if *which == Which::Main && found.as_ref().is_some_and(|f| f.0 == DUPS.as_bytes()) {
                return;
            }
            assert_eq!(found, want, "cursor-del set_range {k:?}");
            let Some((fk, fv)) = found else { return };
            let all = *all && *which == Which::Dups;
            c.del(all).unwrap();
            match which {
                Which::Main => {
                    cur.main.remove(&fk);
                }
                Which::Dups if all => {
                    cur.dups.remove(&fk);
                }
                Which::Dups => {
                    assert!(cur.dup_remove(&fk, &fv));
                }
            }
            // The cursor now sits on the successor: next() returns it.
            let next = c.next().unwrap().map(|(a, b)| (a.to_vec(), b.to_vec()));
            let flat = cur.flat(*which);
            let succ = if all {
                flat.iter().find(|p| p.0 > fk).cloned()
            } else {
                flat.iter().find(|p| (&p.0, &p.1) > (&fk, &fv)).cloned()
            };
            if *which == Which::Main && next.as_ref().is_some_and(|n| n.0 == DUPS.as_bytes()) {
                return;
            }
            assert_eq!(next, succ, "cursor-del successor of {fk:?}");
        }
        Op::CursorPutCurrent(k, v) => {
            let (k, v) = (k.bytes(), v.bytes());
            let mut c = w.write_cursor(Database::MAIN).unwrap();
            let found = c.set_range(&k).unwrap().map(|(a, _)| a.to_vec());
            let Some(fk) = found else { return };
            if fk == DUPS.as_bytes() {
                return;
            }
            c.put(&fk, &v, WriteFlags::CURRENT).unwrap();
            let got = c
                .get_current()
                .unwrap()
                .map(|(a, b)| (a.to_vec(), b.to_vec()));
            assert_eq!(
                got,
                Some((fk.clone(), v.clone())),
                "put CURRENT then get_current"
            );
            cur.main.insert(fk, v);
        }
        Op::ClearDups => {
            w.clear_db(dups).unwrap();
            cur.dups.clear();
        }
        Op::Nested(changes, commit) => {
            let mut model = cur.clone();
            let mut child = w.nested().unwrap();
            for ch in &changes.0 {
                apply_change(&mut child, dups, &mut model, ch);
            }
            verify(&*child, dups, &model, "in child");
            if *commit {
                child.commit().unwrap();
                *cur = model;
            } else {
                child.abort();
            }
            verify(&*w, dups, cur, "parent after child");
        }
        Op::Commit | Op::Abort | Op::Reopen(_) => unreachable!(),
    }
}

/// Target `ops_model`: run `input` against a fresh environment.
pub fn run(input: Input) {
    let mut flags = EnvFlags::EMPTY;
    if input.write_map {
        flags = flags | EnvFlags::WRITE_MAP;
    }
    if input.no_sync {
        flags = flags | EnvFlags::NO_SYNC;
    }
    let envs = Envs {
        dir: ScratchDir::new("ops"),
        flags,
    };
    {
        let env = envs.open();
        let mut w = env.write_txn().unwrap();
        dups_db(&mut w);
        w.commit().unwrap();
    }
    let mut committed = Model::default();
    let mut cur = Model::default();
    let mut ops = input.ops.0;
    ops.push(Op::Reopen(true));
    // Each segment ends with a Reopen: one environment per segment.
    for seg in ops.split_inclusive(|o| matches!(o, Op::Reopen(_))) {
        let env = envs.open();
        {
            let r = env.read_txn().unwrap();
            let d = r.open_db(DUPS).unwrap();
            verify(&r, d, &committed, "after open");
        }
        let mut w = Some(env.write_txn().unwrap());
        for op in seg {
            match op {
                Op::Commit | Op::Abort | Op::Reopen(_) => {
                    let t = w.take().unwrap();
                    if matches!(op, Op::Commit | Op::Reopen(true)) {
                        t.commit().unwrap();
                        committed = cur.clone();
                    } else {
                        t.abort();
                        cur = committed.clone();
                    }
                    {
                        let r = env.read_txn().unwrap();
                        let d = r.open_db(DUPS).unwrap();
                        verify(&r, d, &committed, "after commit/abort");
                    }
                    if !matches!(op, Op::Reopen(_)) {
                        w = Some(env.write_txn().unwrap());
                    }
                }
                op => {
                    let t = w.as_mut().unwrap();
                    let d = dups_db(t);
                    step(t, d, &mut cur, op);
                }
            }
        }
        drop(w);
        // With WRITEMAP the file is as long as the map: check only the used
        // part (the checker accepts a file cut after last_pgno).
        let used = (env.info().unwrap().last_pgno as usize + 1) * env.page_size();
        drop(env);
        let mut bytes = Vec::with_capacity(used);
        {
            use std::io::Read;
            std::fs::File::open(envs.dir.path().join("data.mdb"))
                .unwrap()
                .take(used as u64)
                .read_to_end(&mut bytes)
                .unwrap();
        }
        let rep = check::check_bytes(&bytes);
        assert!(rep.is_ok(), "checker after close: {:?}", rep.problems);
    }
}
