//! Files written in write-ahead-log mode are plain LMDB files once
//! checkpointed or closed, and py-lmdb 3.0.0's structural verifier
//! (`lmdb/verify.py`) finds nothing wrong with them: free records of LMDB's
//! exact size, free and live pages covering the file, every kind of page
//! (named and DUPSORT databases, sub-pages and sub-databases, overflow
//! values), after puts, overwrites, deletes and a drop.

#[path = "pylmdb/mod.rs"]
mod pylmdb;

use mdb::{Database, DbFlags, EnvOptions, WalOptions, WriteFlags};

#[test]
fn wal_mode_files_pass_py_lmdbs_verifier() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = EnvOptions::new();
    o.max_dbs(4).wal(WalOptions::default());
    {
        let env = o.open(dir.path()).unwrap();
        let mut w = env.write_txn().unwrap();
        let named = w.create_db("named", DbFlags::EMPTY).unwrap();
        let dups = w.create_db("dups", DbFlags::DUP_SORT).unwrap();
        let gone = w.create_db("gone", DbFlags::EMPTY).unwrap();
        w.commit().unwrap();
        for c in 0..300u32 {
            let mut w = env.write_txn().unwrap();
            for j in 0..20u32 {
                let i = c * 20 + j;
                let k = format!("k{:07}", (i * 7919) % 6000);
                w.put(
                    Database::MAIN,
                    k.as_bytes(),
                    &[i as u8; 90],
                    WriteFlags::EMPTY,
                )
                .unwrap();
                w.put(named, k.as_bytes(), b"v", WriteFlags::EMPTY).unwrap();
                // A few keys with many duplicates (sub-databases), most
                // with a couple (sub-pages).
                let dk = format!("d{}", i % if i % 3 == 0 { 4 } else { 500 });
                w.put(dups, dk.as_bytes(), &i.to_be_bytes(), WriteFlags::EMPTY)
                    .unwrap();
                w.put(gone, k.as_bytes(), b"x", WriteFlags::EMPTY).unwrap();
            }
            if c % 25 == 0 {
                let big = vec![c as u8; 9000 + c as usize * 40];
                w.put(
                    Database::MAIN,
                    format!("big{}", c % 4).as_bytes(),
                    &big,
                    WriteFlags::EMPTY,
                )
                .unwrap();
            }
            if c % 3 == 2 {
                for j in 0..15u32 {
                    let k = format!("k{:07}", (c * 131 + j * 17) % 6000);
                    w.del(Database::MAIN, k.as_bytes()).unwrap();
                }
            }
            w.commit().unwrap();
            if c == 150 {
                env.checkpoint().unwrap();
                pylmdb::assert_clean(dir.path());
            }
        }
        let mut w = env.write_txn().unwrap();
        w.delete_db(gone).unwrap();
        w.commit().unwrap();
    }
    // Closed: checkpointed, the log's pending mark gone.
    pylmdb::assert_clean(dir.path());
}
