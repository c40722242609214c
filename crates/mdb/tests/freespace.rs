//! Free-space reuse: after loading 100,000 keys, 1,000,000 random overwrites
//! in transactions of 100 keep the file within 2x of its size after the load.

use mdb::{Database, EnvFlags, EnvOptions, WriteFlags};

#[test]
fn overwrites_reuse_freed_pages() {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let dir = base.path();
    // NO_SYNC: this test is about page accounting, not durability.
    let env = EnvOptions::new()
        .map_size(1 << 30)
        .flags(EnvFlags::NO_SYNC)
        .open(dir)
        .unwrap();
    const N: u64 = 100_000;
    let key = |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % (N * 16)).to_be_bytes();
    let mut w = env.write_txn().unwrap();
    for i in 0..N {
        w.put(Database::MAIN, &key(i), &[i as u8; 100], WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    let size_after_load = std::fs::metadata(dir.join("data.mdb")).unwrap().len();
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for t in 0..10_000u64 {
        let mut w = env.write_txn().unwrap();
        for _ in 0..100 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w.put(
                Database::MAIN,
                &key(x % N),
                &[t as u8; 100],
                WriteFlags::EMPTY,
            )
            .unwrap();
        }
        w.commit().unwrap();
    }
    let size = std::fs::metadata(dir.join("data.mdb")).unwrap().len();
    let info = env.info().unwrap();
    assert_eq!(env.stat().unwrap().entries, N);
    drop(env);
    eprintln!(
        "file after load {size_after_load} bytes, after 1,000,000 overwrites {size} bytes ({:.2}x)",
        size as f64 / size_after_load as f64
    );
    assert!(
        size <= 2 * size_after_load,
        "file grew from {size_after_load} to {size} bytes (last page {})",
        info.last_pgno
    );
    let rep = mdb::check::check_file(&dir.join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
}
