//! The small valid data file that `open_corrupt` mutates, built once per
//! process with the engine itself.

use crate::ScratchDir;
use mdb::{Database, DbFlags, EnvOptions, Txn, WriteFlags};
use std::sync::OnceLock;

/// A data file image and its page size.
pub struct Seed {
    /// The whole data file.
    pub bytes: Vec<u8>,
    /// Its page size.
    pub psize: usize,
}

/// The seed data file (built on first use).
pub fn seed_file() -> &'static Seed {
    static SEED: OnceLock<Seed> = OnceLock::new();
    SEED.get_or_init(build)
}

fn val(i: u32, len: usize) -> Vec<u8> {
    let mut v = format!("v{i:05}-").into_bytes();
    let mut x = i.wrapping_mul(2_654_435_761);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push(b'a' + (x % 26) as u8);
    }
    v.truncate(len);
    v
}

/// Build the seed: MAIN with 300 keys (a few overflow values), a plain named
/// DB, a DUPSORT DB with sub-pages and one sub-DB, and a DUPFIXED DB with a
/// LEAF2 sub-DB; two commits with deletes so the free DB is not empty.
fn build() -> Seed {
    let dir = ScratchDir::new("seed");
    let env = EnvOptions::new()
        .map_size(16 << 20)
        .max_dbs(4)
        .open(dir.path())
        .expect("open seed env");
    {
        let mut w = env.write_txn().unwrap();
        let named = w.create_db("named", DbFlags::EMPTY).unwrap();
        let dups = w.create_db("dups", DbFlags::DUP_SORT).unwrap();
        let fixed = w
            .create_db("fixed", DbFlags(DbFlags::DUP_SORT.0 | DbFlags::DUP_FIXED.0))
            .unwrap();
        for i in 0..300u32 {
            let len = if i % 97 == 13 {
                5000 + i as usize
            } else {
                8 + (i % 24) as usize
            };
            w.put(
                Database::MAIN,
                format!("k{i:04}").as_bytes(),
                &val(i, len),
                WriteFlags::EMPTY,
            )
            .unwrap();
        }
        for i in 0..100u32 {
            w.put(
                named,
                format!("n{:03}", i * 7 % 100).as_bytes(),
                &val(i, 20),
                WriteFlags::EMPTY,
            )
            .unwrap();
        }
        for k in 0..20u32 {
            for d in 0..(k % 5 + 1) {
                w.put(
                    dups,
                    format!("d{k:02}").as_bytes(),
                    &val(d * 31 + k, 6 + d as usize),
                    WriteFlags::EMPTY,
                )
                .unwrap();
            }
        }
        for d in 0..600u32 {
            w.put(dups, b"many", &val(d, 12), WriteFlags::EMPTY)
                .unwrap();
        }
        for d in 0..1500u32 {
            w.put(fixed, b"f", &(d * 3).to_be_bytes(), WriteFlags::EMPTY)
                .unwrap();
        }
        for d in 0..5u32 {
            w.put(fixed, b"g", &d.to_be_bytes(), WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
    }
    {
        // A second commit: deletes and rewrites fill the free DB and make
        // the two meta pages differ.
        let mut w = env.write_txn().unwrap();
        let dups = w.open_db("dups").unwrap();
        for i in (0..300u32).step_by(5) {
            w.del(Database::MAIN, format!("k{i:04}").as_bytes())
                .unwrap();
        }
        for d in (0..600u32).step_by(3) {
            w.del_dup(dups, b"many", &val(d, 12)).unwrap();
        }
        w.put(Database::MAIN, b"k0013", &val(13, 7000), WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
    }
    let psize = env.page_size();
    drop(env);
    let bytes = std::fs::read(dir.path().join("data.mdb")).expect("read seed");
    let rep = mdb::check::check_bytes(&bytes);
    assert!(
        rep.is_ok(),
        "seed file fails the checker: {:?}",
        rep.problems
    );
    // The pristine file must open and walk without a single error.
    let p = dir.path().join("copy.mdb");
    std::fs::write(&p, &bytes).unwrap();
    crate::open_and_walk(&p).expect("pristine seed walks cleanly");
    Seed { bytes, psize }
}
