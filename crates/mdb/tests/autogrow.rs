//! A map that grows by itself (issue 11): a writer loads 2 GiB into an
//! environment created with LMDB's 1 MiB map while a reader process reads
//! throughout; WRITE_MAP files grow in steps; a shared `Env` changes its
//! map size under live readers; LMDB's tools read what auto-grow wrote.

mod common;

use common::Reaped;
mod debian;

use mdb::{Database, EnvFlags, EnvOptions, ErrorKind, Txn, WriteFlags};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const ROLE: &str = "MDB_AUTOGROW_READER";
/// 64 KiB values, 256 per commit: 2 GiB in 128 commits.
const VAL: usize = 64 << 10;
const PER_COMMIT: u32 = 256;
const COMMITS: u32 = 128;

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

/// Value `i`: its number at both ends, so that a torn or misplaced value
/// shows.
fn value(i: u32) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; VAL];
    v[..4].copy_from_slice(&i.to_le_bytes());
    v[VAL - 4..].copy_from_slice(&i.to_le_bytes());
    v
}

fn check_value(i: u32, v: &[u8]) {
    assert_eq!(v.len(), VAL, "value {i}");
    assert_eq!(v[..4], i.to_le_bytes(), "value {i}");
    assert_eq!(v[VAL - 4..], i.to_le_bytes(), "value {i}");
    assert_eq!(v[VAL / 2], (i % 251) as u8, "value {i}");
}

/// A snapshot holds keys 0..n with their values; returns n. Checks a sample of values, every key.
fn check_snapshot<T: Txn>(t: &T) -> u32 {
    let mut n = 0u32;
    for kv in t.cursor(Database::MAIN).unwrap().iter() {
        let (k, v) = kv.unwrap();
        assert_eq!(k, key(n), "keys are 0..n");
        if n.is_multiple_of(61) {
            check_value(n, v);
        }
        n += 1;
    }
    n
}

/// The reader process: opens with a 1 MiB ceiling of its own, so that it
/// must follow the writer's growth with new mappings; reads until told to
/// stop, keeping one snapshot (and a value borrowed from it) alive across
/// growth; then checks the final state.
fn reader_process(dir: &Path) {
    // NO_TLS: this thread holds an old snapshot while it takes new ones.
    let env = EnvOptions::new()
        .map_size(1 << 20)
        .flags(EnvFlags::NO_TLS)
        .open(dir)
        .unwrap();
    std::fs::write(dir.join("reader-ready"), "").unwrap();
    let old = env.read_txn().unwrap();
    let first = old
        .get(Database::MAIN, &key(0))
        .unwrap()
        .map(<[u8]>::to_vec);
    let held = old.get(Database::MAIN, &key(0)).unwrap();
    let (mut snapshots, mut last) = (0u32, 0u32);
    let mut other = None;
    loop {
        let stopping = dir.join("writer-done").exists();
        {
            let r = env.read_txn().unwrap();
            let n = check_snapshot(&r);
            assert_eq!(n % PER_COMMIT, 0, "a whole number of commits");
            assert!(n >= last, "snapshots go forward");
            last = n;
            snapshots += 1;
        }
        if stopping {
            break;
        }
        if other.is_none() {
            // A second thread's reader too, on whatever mapping is newest.
            other = Some(std::thread::spawn({
                let dir = dir.to_path_buf();
                move || {
                    let env = EnvOptions::new()
                        .map_size(1 << 20)
                        .flags(EnvFlags::NO_TLS)
                        .open(&dir)
                        .unwrap();
                    let r = env.read_txn().unwrap();
                    check_snapshot(&r)
                }
            }));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    other.unwrap().join().unwrap();
    // The snapshot taken first is still readable, on its own mapping.
    assert_eq!(
        old.get(Database::MAIN, &key(0))
            .unwrap()
            .map(<[u8]>::to_vec),
        first
    );
    assert_eq!(held.map(<[u8]>::to_vec), first);
    drop(old);
    assert_eq!(last, PER_COMMIT * COMMITS, "the reader saw every commit");
    std::fs::write(
        dir.join("reader-report"),
        format!("{snapshots} {}", env.info().unwrap().map_size),
    )
    .unwrap();
}

/// Bytes an unprivileged process may still write on `dir`'s file system.
fn free_bytes(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a zeroed out-struct the call fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    st.f_bavail * st.f_frsize
}

#[test]
fn loads_2_gib_from_a_1_mib_map_while_a_process_reads() {
    if let Some(dir) = std::env::var_os(ROLE) {
        return reader_process(dir.as_ref());
    }
    debian::lmdb_utils();
    // On disk: 2 GiB does not belong in /dev/shm.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let need = u64::from(COMMITS * PER_COMMIT) * VAL as u64 + (512 << 20);
    let free = free_bytes(dir);
    assert!(
        free >= need,
        "this test writes 2 GiB: {dir:?} has {} MiB free, it needs {} MiB \
         (free disk space, or point TMPDIR at a larger disk)",
        free >> 20,
        need >> 20
    );
    {
        // Created as LMDB creates it: a fixed 1 MiB map.
        let env = EnvOptions::new().auto_grow(false).open(dir).unwrap();
        assert_eq!(env.file_map_size().unwrap(), 1 << 20);
        let mut w = env.write_txn().unwrap();
        assert_eq!(
            w.put(Database::MAIN, b"big", &[0; 2 << 20], WriteFlags::EMPTY)
                .map_err(|e| e.kind()),
            Err(ErrorKind::MapFull)
        );
    }
    let env = EnvOptions::new()
        .flags(EnvFlags::NO_SYNC)
        .open(dir)
        .unwrap();
    let output = dir.join("reader-output");
    let out = std::fs::File::create(&output).unwrap();
    let mut child = Reaped(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "loads_2_gib_from_a_1_mib_map_while_a_process_reads",
                "--test-threads=1",
            ])
            .env(ROLE, dir)
            .env("RUST_BACKTRACE", "1")
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap(),
    );
    let child_failed = |status| {
        let err = std::fs::read_to_string(&output).unwrap();
        panic!("reader process failed ({status}):\n{err}")
    };
    while !dir.join("reader-ready").exists() {
        if let Some(status) = child.0.try_wait().unwrap() {
            child_failed(status);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut recorded = vec![env.file_map_size().unwrap()];
    for c in 0..COMMITS {
        let mut w = env.write_txn().unwrap();
        for i in c * PER_COMMIT..(c + 1) * PER_COMMIT {
            w.put(Database::MAIN, &key(i), &value(i), WriteFlags::APPEND)
                .unwrap();
        }
        w.commit().unwrap();
        let m = env.file_map_size().unwrap();
        if m != *recorded.last().unwrap() {
            recorded.push(m);
        }
        if let Some(status) = child.0.try_wait().unwrap() {
            child_failed(status);
        }
    }
    std::fs::write(dir.join("writer-done"), "").unwrap();
    let status = child.0.wait().unwrap();
    if !status.success() {
        child_failed(status);
    }
    let report = std::fs::read_to_string(dir.join("reader-report")).unwrap();
    let (snapshots, reader_map) = report.split_once(' ').unwrap();
    assert!(snapshots.parse::<u32>().unwrap() >= 2, "{report}");
    // The reader's map followed the file past its own 1 MiB.
    assert!(reader_map.parse::<u64>().unwrap() >= 2 << 30, "{report}");

    // The writer saw every key; its map never moved.
    let n = check_snapshot(&env.read_txn().unwrap());
    assert_eq!(n, PER_COMMIT * COMMITS);
    assert_eq!(env.info().unwrap().map_size, mdb::DEFAULT_CEILING);
    // The recorded size grew in steps (doubling up to 1 GiB, then by
    // 1 GiB), each holding the data.
    let used = (env.info().unwrap().last_pgno + 1) * 4096;
    assert!(recorded.len() >= 8, "{recorded:?}");
    assert!(recorded.windows(2).all(|w| w[1] > w[0]), "{recorded:?}");
    let last = *recorded.last().unwrap();
    assert!(
        last >= used && last < used + (1 << 30) + 4096,
        "{recorded:?}"
    );
    drop(env);

    // LMDB's own tools open it at the size it records.
    let d = dir.to_str().unwrap();
    let o = Command::new("/usr/bin/mdb_stat")
        .args(["-e", d])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    assert!(text.contains(&format!("Map size: {last}")), "{text}");
    assert!(
        text.contains(&format!("Entries: {}", PER_COMMIT * COMMITS)),
        "{text}"
    );
}

/// WRITE_MAP with auto-grow: the file is extended in steps (to the size it
/// records), not to the ceiling, and what it holds is intact.
#[test]
fn writemap_file_grows_in_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .flags(EnvFlags::WRITE_MAP | EnvFlags::NO_SYNC)
        .open(tmp.path())
        .unwrap();
    let file = tmp.path().join("data.mdb");
    let len = || std::fs::metadata(&file).unwrap().len();
    assert_eq!(len(), 1 << 20);
    let mut sizes = vec![len()];
    for c in 0..40u32 {
        let mut w = env.write_txn().unwrap();
        for i in c * 8..(c + 1) * 8 {
            w.put(Database::MAIN, &key(i), &value(i), WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
        assert_eq!(len(), env.file_map_size().unwrap());
        if len() != *sizes.last().unwrap() {
            sizes.push(len());
        }
    }
    // 20 MiB of values: 1 MiB doubled five times.
    assert_eq!(sizes, [1, 2, 4, 8, 16, 32].map(|m| m << 20));
    assert_eq!(check_snapshot(&env.read_txn().unwrap()), 320);
    drop(env);
    let rep = mdb::check::check_file(&file).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
}

/// `set_map_size` through a shared `Env` (`Arc<Env>`) while another thread
/// holds a read transaction and a value borrowed from it: the reader keeps
/// its mapping, new transactions use the new one.
#[test]
fn map_size_changes_under_live_readers() {
    let tmp = tempfile::tempdir().unwrap();
    let env = Arc::new(
        EnvOptions::new()
            .auto_grow(false)
            .map_size(4 << 20)
            .open(tmp.path())
            .unwrap(),
    );
    let mut w = env.write_txn().unwrap();
    for i in 0..40 {
        w.put(Database::MAIN, &key(i), &value(i), WriteFlags::EMPTY)
            .unwrap();
    }
    assert_eq!(
        (40..80)
            .try_for_each(|i| w.put(Database::MAIN, &key(i), &value(i), WriteFlags::EMPTY))
            .map_err(|e| e.kind()),
        Err(ErrorKind::MapFull)
    );
    drop(w);
    let mut w = env.write_txn().unwrap();
    for i in 0..40 {
        w.put(Database::MAIN, &key(i), &value(i), WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let reader = std::thread::spawn({
        let env = env.clone();
        move || {
            let r = env.read_txn().unwrap();
            let v = r.get(Database::MAIN, &key(7)).unwrap().unwrap();
            held_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            // The map changed twice meanwhile; the borrowed value did not.
            check_value(7, v);
            check_snapshot(&r)
        }
    });
    held_rx.recv().unwrap();
    env.set_map_size(64 << 20).unwrap();
    assert_eq!(env.info().unwrap().map_size, 64 << 20);
    let mut w = env.write_txn().unwrap();
    for i in 40..400 {
        w.put(Database::MAIN, &key(i), &value(i), WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    // Lower again: raised to what the data needs.
    env.set_map_size(1 << 20).unwrap();
    let m = env.info().unwrap();
    assert_eq!(m.map_size as u64, (m.last_pgno + 1) * 4096);
    go_tx.send(()).unwrap();
    assert_eq!(reader.join().unwrap(), 40);
    assert_eq!(check_snapshot(&env.read_txn().unwrap()), 400);
}

/// Another process (here: another `Env`, which shares nothing in memory
/// with the first) grows the database past a fixed map: LMDB's
/// `MapResized`, until `set_map_size(0)` adopts the recorded size; with
/// auto-grow the map follows by itself.
#[test]
fn growth_by_another_handle_is_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let fixed = EnvOptions::new().auto_grow(false).open(tmp.path()).unwrap();
    let follows = EnvOptions::new()
        .map_size(1 << 20)
        .open(tmp.path())
        .unwrap();
    let writer = EnvOptions::new().open(tmp.path()).unwrap();
    let mut w = writer.write_txn().unwrap();
    for i in 0..64 {
        w.put(Database::MAIN, &key(i), &value(i), WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    assert_eq!(
        fixed.read_txn().err().map(|e| e.kind()),
        Some(ErrorKind::MapResized)
    );
    fixed.set_map_size(0).unwrap();
    assert_eq!(check_snapshot(&fixed.read_txn().unwrap()), 64);
    assert_eq!(check_snapshot(&follows.read_txn().unwrap()), 64);
    assert!(follows.info().unwrap().map_size >= 4 << 20);
}

fn file_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("data.mdb")).unwrap().len()
}

/// Load `n` 64 KiB values, then delete all but the first `keep`.
fn load_then_delete(env: &mdb::Env, n: u32, keep: u32) {
    let mut w = env.write_txn().unwrap();
    for i in 0..n {
        w.put(Database::MAIN, &key(i), &value(i), WriteFlags::EMPTY)
            .unwrap();
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    for i in keep..n {
        w.del(Database::MAIN, &key(i)).unwrap();
    }
    w.commit().unwrap();
}

/// The free pages at the end of the file go back: not while a reader can
/// see them, not while another handle has the environment open; at close
/// with auto-grow; in WAL and WRITE_MAP modes too. LMDB reads the result.
#[test]
fn shrink_returns_the_free_tail() {
    debian::lmdb_utils();
    for (flags, wal) in [
        (EnvFlags::EMPTY, false),
        (EnvFlags::WRITE_MAP, false),
        (EnvFlags::EMPTY, true),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let open = || {
            let mut o = EnvOptions::new();
            o.flags(flags);
            if wal {
                o.wal(mdb::WalOptions::default());
            }
            o.open(dir).unwrap()
        };
        let env = open();
        let mut w = env.write_txn().unwrap();
        for i in 0..300 {
            w.put(Database::MAIN, &key(i), &value(i), WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
        // A reader still sees every value: nothing it can see is cut.
        let r = env.read_txn().unwrap();
        let mut w = env.write_txn().unwrap();
        for i in 20..300 {
            w.del(Database::MAIN, &key(i)).unwrap();
        }
        w.commit().unwrap();
        let full = file_len(dir);
        assert!(full >= (300 * 64) << 10, "{full}");
        assert_eq!(env.shrink().unwrap(), full, "{flags:?} {wal}");
        assert_eq!(check_snapshot(&r), 300);
        drop(r);
        // Another handle open: the end is committed, the file not cut.
        let other = EnvOptions::new().flags(flags).open(dir).unwrap();
        assert_eq!(env.shrink().unwrap(), full);
        let m = env.info().unwrap();
        assert!((m.last_pgno + 1) * 4096 < full / 4, "{m:?}");
        drop(other);
        let small = env.shrink().unwrap();
        assert!(small < full / 4, "{flags:?} {wal}: {small} of {full}");
        assert_eq!(file_len(dir), small);
        assert_eq!(check_snapshot(&env.read_txn().unwrap()), 20);
        // Grow again, free again: the close gives the tail back.
        load_then_delete(&env, 300, 20);
        assert!(file_len(dir) >= full);
        drop(env);
        assert!(file_len(dir) < full / 4, "{flags:?} {wal}: close");
        let rep = mdb::check::check_file(&dir.join("data.mdb")).unwrap();
        assert!(rep.is_ok(), "{:?}", rep.problems);
        let d = dir.to_str().unwrap();
        let o = Command::new("/usr/bin/mdb_stat").arg(d).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success() && text.contains("Entries: 20"), "{text}");
        let env = open();
        assert_eq!(check_snapshot(&env.read_txn().unwrap()), 20);
    }
}
