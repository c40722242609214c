//! Free-space reuse: after loading 100,000 keys, 1,000,000 random overwrites
//! in transactions of 100 keep the file within 2x of its size after the load;
//! after a load in large transactions, small commits do not grow the file.
//! Every file these tests write passes py-lmdb's verifier (`pylmdb`): free
//! records are saved with room to spare while the save converges, and
//! trimmed to their exact size at the end.

#[path = "pylmdb/mod.rs"]
mod pylmdb;

use mdb::{Database, Env, EnvFlags, EnvOptions, Txn, WriteFlags};

/// An environment in a fresh directory (in memory where /dev/shm is),
/// NO_SYNC: these tests are about page accounting, not durability.
fn scratch_env() -> (tempfile::TempDir, Env) {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let env = EnvOptions::new()
        .map_size(1 << 30)
        .flags(EnvFlags::NO_SYNC)
        .open(base.path())
        .unwrap();
    (base, env)
}

/// An environment with a map of `size` bytes in a fresh directory, NO_SYNC.
fn env_with_map(size: usize) -> (tempfile::TempDir, Env) {
    let base = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .map_size(size)
        .flags(EnvFlags::NO_SYNC)
        .open(base.path())
        .unwrap();
    (base, env)
}

/// Commits of one put each, the `i`th putting the key and value `kv(i)`,
/// until one fails with MAP_FULL: how many committed.
fn commits_until_map_full(env: &Env, kv: impl Fn(u64) -> (Vec<u8>, Vec<u8>)) -> u64 {
    let mut commits = 0;
    loop {
        let (k, v) = kv(commits);
        let mut w = env.write_txn().unwrap();
        match w
            .put(Database::MAIN, &k, &v, WriteFlags::EMPTY)
            .and_then(|()| w.commit())
        {
            Ok(()) => commits += 1,
            Err(e) if e.kind() == mdb::ErrorKind::MapFull => return commits,
            Err(e) => panic!("commit {commits}: {e}"),
        }
    }
}

#[test]
fn overwrites_reuse_freed_pages() {
    let (base, env) = scratch_env();
    let dir = base.path();
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
    pylmdb::assert_clean(dir);
}

/// After a load in large transactions the free database holds a few huge
/// records; small commits afterwards consume them and file the unused
/// pages back. Filed as one multi-page record, each commit needed a long
/// run of consecutive pages that scattered free pages seldom hold, and
/// extended the file instead (thousands of pages; LMDB: none). They must
/// reuse what is free: the file does not grow.
#[test]
fn leftovers_of_a_large_load_need_no_new_pages() {
    let (base, env) = scratch_env();
    let dir = base.path();
    // Well-mixed keys: each load transaction rewrites most leaves, so
    // the next frees most of the tree in one record.
    let mix = |mut x: u64| {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    };
    // 16-byte keys, as in the benchmark that found it.
    let key = |i: u64| {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&mix(i).to_be_bytes());
        k[8..].copy_from_slice(&mix(i ^ 0x5555_5555_5555_5555).to_be_bytes());
        k
    };
    const N: u64 = 1_000_000;
    const LOADS: u64 = 10;
    for c in 0..LOADS {
        let mut w = env.write_txn().unwrap();
        for i in c * N / LOADS..(c + 1) * N / LOADS {
            w.put(Database::MAIN, &key(i), &[7; 100], WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
    }
    let pages = || std::fs::metadata(dir.join("data.mdb")).unwrap().len() / 4096;
    let after_load = pages();
    for c in 0..300u64 {
        let mut w = env.write_txn().unwrap();
        for j in 0..100 {
            let i = mix(c * 100 + j) % N;
            w.put(Database::MAIN, &key(i), &[8; 100], WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
    }
    let grown = pages() - after_load;
    eprintln!("{after_load} pages after the load, {grown} more after 300 small commits");
    assert!(grown <= 16, "the file grew by {grown} pages after the load");
    // Commits of 1,000 puts free a record of several pages each time: its
    // run of consecutive pages comes from free records too.
    let before = pages();
    for c in 0..40u64 {
        let mut w = env.write_txn().unwrap();
        for j in 0..1000 {
            let i = mix(1 << 40 | (c * 1000 + j)) % N;
            w.put(Database::MAIN, &key(i), &[9; 100], WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
    }
    let grown = pages() - before;
    eprintln!("{grown} more pages after 40 commits of 1,000 puts");
    assert!(grown <= 16, "batches grew the file by {grown} pages");
    drop(env);
    pylmdb::assert_clean(dir);
}

/// Single-put commits while the oldest snapshot lags a few commits behind
/// (as under group commit, where commits wait for their log sync before
/// readers see them): each commit takes a whole free record, uses part of
/// it and files the rest. Those few ids stay inside the free database's
/// leaf; an overflow page for them, rewritten at every commit, doubled
/// what a small commit writes (and logs, in WAL mode).
#[test]
fn small_commits_behind_lagging_readers_keep_free_records_small() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path();
    // NO_TLS: this thread holds several read transactions at once.
    let env = EnvOptions::new()
        .map_size(1 << 30)
        .flags(EnvFlags::NO_SYNC | EnvFlags::NO_TLS)
        .open(dir)
        .unwrap();
    let key = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes();
    let mut w = env.write_txn().unwrap();
    for i in 0..2_000 {
        w.put(Database::MAIN, &key(i), &[1; 100], WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    let pages = || std::fs::metadata(dir.join("data.mdb")).unwrap().len() / 4096;
    let mut readers = std::collections::VecDeque::new();
    let mut after_warmup = 0;
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for i in 0..2_000u64 {
        if i == 200 {
            after_warmup = pages();
        }
        // Lags of 0 to 7 commits, changing as group sizes do.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        readers.push_back(env.read_txn().unwrap());
        while readers.len() > (x % 8) as usize {
            readers.pop_front();
        }
        let mut w = env.write_txn().unwrap();
        w.put(
            Database::MAIN,
            &key(x % 2_000),
            &[2; 100],
            WriteFlags::EMPTY,
        )
        .unwrap();
        let free = w.stat(Database::FREE).unwrap();
        assert_eq!(free.overflow_pages, 0, "commit {i}: {free:?}");
        w.commit().unwrap();
    }
    drop(readers);
    let grown = pages() - after_warmup;
    eprintln!("{after_warmup} pages after the warm-up, {grown} more after 1,800 commits");
    assert!(grown <= 8, "the file grew by {grown} pages");
    drop(env);
    pylmdb::assert_clean(dir);
}

/// Overflow values rewritten many times in one transaction, in an 8 MiB
/// map: each rewrite frees the run the previous one took, and the next
/// run must come from those pages. Debian's LMDB (python3-lmdb, same
/// loops) rewrites a 40 KB value 20,000 times, and a value growing by
/// 100 bytes a step from 1,000 bytes 2,571 times before MAP_FULL; ours
/// stopped at 205 and 382, taking new pages for every run.
#[test]
fn overflow_runs_freed_in_a_transaction_are_reused_in_it() {
    let (base, env) = env_with_map(8 << 20);
    let big = vec![7u8; 40_000];
    let mut w = env.write_txn().unwrap();
    for i in 0..20_000 {
        w.put(Database::MAIN, b"k", &big, WriteFlags::EMPTY)
            .unwrap_or_else(|e| panic!("rewrite {i} of a 40 KB value: {e}"));
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    let mut steps = 0;
    for i in 0..2_571 {
        let v = vec![i as u8; 1_000 + 100 * i];
        match w.put(Database::MAIN, b"g", &v, WriteFlags::EMPTY) {
            Ok(()) => steps += 1,
            Err(e) => panic!("growing value, step {i} ({} bytes): {e}", v.len()),
        }
    }
    assert_eq!(steps, 2_571);
    w.commit().unwrap();
    drop(env);
    let rep = mdb::check::check_file(&base.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
    pylmdb::assert_clean(base.path());
}

/// py-lmdb's `crash_test.py::TxnFullTest`: single-put commits into a map of
/// 9 pages until MAP_FULL, then a delete in a new transaction. Debian's
/// LMDB (python3-lmdb, same loop) takes 268 commits and the delete
/// commits; ours refused the 5th put, keeping room for a free-list save
/// that needed no page yet, and refused the delete too.
#[test]
fn a_nine_page_map_takes_as_many_commits_as_lmdb() {
    let (base, env) = env_with_map(9 * 4096);
    let commits = commits_until_map_full(&env, |i| {
        let k = i.to_string().into_bytes();
        (k.clone(), k)
    });
    eprintln!("{commits} commits before MAP_FULL (LMDB: 268)");
    assert!(
        commits >= 268,
        "{commits} commits before MAP_FULL (LMDB: 268)"
    );
    let mut w = env.write_txn().unwrap();
    assert!(w.del(Database::MAIN, b"1").unwrap());
    w.commit().unwrap();
    drop(env);
    let rep = mdb::check::check_file(&base.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
    pylmdb::assert_clean(base.path());
}

/// Keys `key0` to `key19999` put in numeric order, one commit each (as
/// PHP's dba or a counter-keyed log does): in byte order each new key
/// lands among older, shorter ones. Debian's LMDB (python3-lmdb, same
/// loop, `mdb_stat`) ends with 173 leaves and fits 27,791 such commits in
/// a 1 MiB map; ours took 183 leaves and 26,240 commits (splits balanced
/// by bytes where LMDB's halve by count).
#[test]
fn lexically_ordered_single_put_commits_take_no_more_leaves_than_lmdb() {
    let (base, env) = scratch_env();
    for i in 0..20_000 {
        let mut w = env.write_txn().unwrap();
        w.put(
            Database::MAIN,
            format!("key{i}").as_bytes(),
            b"v",
            WriteFlags::EMPTY,
        )
        .unwrap();
        w.commit().unwrap();
    }
    let leaves = env.stat().unwrap().leaf_pages;
    eprintln!("{leaves} leaves (LMDB: 173)");
    assert!(leaves <= 173, "{leaves} leaves, LMDB 173");
    drop(env);
    pylmdb::assert_clean(base.path());
    let (_dir, env) = env_with_map(1 << 20);
    let commits = commits_until_map_full(&env, |i| (format!("key{i}").into_bytes(), b"v".to_vec()));
    eprintln!("{commits} commits in a 1 MiB map (LMDB: 27791)");
    assert!(commits >= 27_791, "{commits} commits, LMDB 27,791");
}
