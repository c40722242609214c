//! Files forged as py-lmdb 3.0's `cve_test.py` forges them: each one is
//! refused with an error at open or at first use, never read as if sound,
//! and `mdb check` flags each one.

use mdb::{check, Database, DbFlags, Env, EnvOptions, ErrorKind, Txn, WriteFlags};
use std::path::{Path, PathBuf};
use std::process::Command;

mod debian;

const P_BRANCH: u16 = 0x01;
const P_LEAF: u16 = 0x02;
const P_OVERFLOW: u16 = 0x04;
const P_DIRTY: u16 = 0x10;
const P_LEAF2: u16 = 0x20;
const F_SUBDATA: u16 = 0x02;
const F_DUPDATA: u16 = 0x04;

fn data(dir: &Path) -> PathBuf {
    dir.join("data.mdb")
}

fn rd16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(b[off..off + 2].try_into().unwrap())
}
fn rd64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}
fn wr16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

/// Rewrite the data file of `dir` with `f` (given the bytes and the page size).
fn forge(dir: &Path, f: impl FnOnce(&mut Vec<u8>, usize)) {
    let mut raw = std::fs::read(data(dir)).unwrap();
    let ps = u32::from_le_bytes(raw[40..44].try_into().unwrap()) as usize;
    f(&mut raw, ps);
    std::fs::write(data(dir), raw).unwrap();
}

/// Offsets of the pages (past the metas) whose flags have all of `flags`.
fn pages_with(raw: &[u8], ps: usize, flags: u16) -> Vec<usize> {
    (2..raw.len() / ps)
        .map(|p| p * ps)
        .filter(|&o| rd16(raw, o + 10) & flags == flags)
        .collect()
}

/// Offset of node `i` of the page at `page`.
fn node(raw: &[u8], page: usize, i: usize) -> usize {
    page + rd16(raw, page + 16 + 2 * i) as usize
}

/// `mdb check` flags the file.
fn check_flags(dir: &Path) {
    let rep = check::check_file(&data(dir)).unwrap();
    assert!(!rep.is_ok(), "mdb check passes a forged file:\n{rep:?}");
}

fn env(dir: &Path) -> Env {
    EnvOptions::new()
        .max_dbs(2)
        .map_size(16 << 20)
        .open(dir)
        .unwrap()
}

fn kind<T>(r: mdb::Result<T>) -> Option<ErrorKind> {
    r.err().map(|e| e.kind())
}

/// The write `f` makes in a write transaction on the forged file of `dir`
/// fails with `Corrupted`, and `mdb check` flags the file.
fn write_refused<T>(dir: &Path, f: impl FnOnce(&mut mdb::RwTxn<'_>) -> mdb::Result<T>) {
    let env = env(dir);
    let mut w = env.write_txn().unwrap();
    assert_eq!(kind(f(&mut w)), Some(ErrorKind::Corrupted));
    drop(w);
    check_flags(dir);
}

/// Items in the main database of `env`'s current snapshot.
fn entries(env: &Env) -> u64 {
    env.read_txn()
        .unwrap()
        .stat(Database::MAIN)
        .unwrap()
        .entries
}

/// Three small items in the main database.
fn three_keys(dir: &Path) {
    let env = env(dir);
    let mut w = env.write_txn().unwrap();
    for (k, v) in [(b"1", b"aaa"), (b"2", b"bbb"), (b"3", b"ccc")] {
        w.put(Database::MAIN, k, v, WriteFlags::EMPTY).unwrap();
    }
    w.commit().unwrap();
}

/// CVE-2019-16224: DUPFIXED without DUPSORT in the main or free database's
/// record is refused at open as not a valid file, as py-lmdb's patched
/// LMDB refuses it; so is a main record whose value size (md_pad, 0 as
/// LMDB writes it) is larger than a page.
#[test]
fn dup_flags_without_dupsort_in_the_meta() {
    for (field, value) in [(88 + 4, 0x10u16), (40 + 4, 0x18), (88, 0xffff)] {
        let dir = tempfile::tempdir().unwrap();
        three_keys(dir.path());
        forge(dir.path(), |raw, ps| {
            for meta in [0, ps] {
                wr16(raw, meta + field, value);
            }
        });
        let r = EnvOptions::new().open(dir.path());
        assert_eq!(kind(r), Some(ErrorKind::Invalid));
        check_flags(dir.path());
    }
}

/// CVE-2019-16225: a committed leaf flagged dirty is refused when a write
/// would copy it.
#[test]
fn dirty_flag_on_a_committed_page() {
    let dir = tempfile::tempdir().unwrap();
    three_keys(dir.path());
    forge(dir.path(), |raw, ps| {
        let leaves = pages_with(raw, ps, P_LEAF);
        assert!(!leaves.is_empty());
        for o in leaves {
            let f = rd16(raw, o + 10);
            wr16(raw, o + 10, f | P_DIRTY);
        }
    });
    write_refused(dir.path(), |w| w.del(Database::MAIN, b"1"));
}

/// CVE-2019-16227: a node claiming duplicates in a database without them
/// is refused by reads, deletes and overwrites.
#[test]
fn duplicates_flag_in_a_plain_database() {
    let dir = tempfile::tempdir().unwrap();
    three_keys(dir.path());
    forge(dir.path(), |raw, ps| {
        let leaf = pages_with(raw, ps, P_LEAF)[0];
        let n = node(raw, leaf, 0);
        let f = rd16(raw, n + 4);
        wr16(raw, n + 4, f | F_DUPDATA);
    });
    let env = env(dir.path());
    let r = env.read_txn().unwrap();
    assert_eq!(
        kind(r.get(Database::MAIN, b"1")),
        Some(ErrorKind::Corrupted)
    );
    assert_eq!(
        kind(r.cursor(Database::MAIN).unwrap().first()),
        Some(ErrorKind::Corrupted)
    );
    drop(r);
    for put in [false, true] {
        let mut w = env.write_txn().unwrap();
        let res = if put {
            w.put(Database::MAIN, b"1", b"ddd", WriteFlags::EMPTY)
        } else {
            w.del(Database::MAIN, b"1").map(|_| ())
        };
        assert_eq!(kind(res), Some(ErrorKind::Corrupted));
    }
    check_flags(dir.path());
}

/// A DUPFIXED database whose key `key0` has 4000 values (a sub-database of
/// LEAF2 pages).
fn dupfixed(dir: &Path) {
    let env = env(dir);
    let mut w = env.write_txn().unwrap();
    let db = w
        .create_db("dfdb", DbFlags::DUP_SORT | DbFlags::DUP_FIXED)
        .unwrap();
    for i in 0..4000 {
        w.put(
            db,
            b"key0",
            format!("v{i:06}").as_bytes(),
            WriteFlags::EMPTY,
        )
        .unwrap();
    }
    w.commit().unwrap();
}

/// Walk every value of `key0` in `dfdb`.
fn walk_dups(env: &Env) -> mdb::Result<usize> {
    let r = env.read_txn()?;
    let db = r.open_db("dfdb")?;
    let mut c = r.cursor(db)?;
    c.set(b"key0")?;
    let mut n = 1;
    while c.next_dup()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// A LEAF2 page with key size 0 (every value would read as empty).
#[test]
fn leaf2_page_with_key_size_zero() {
    let dir = tempfile::tempdir().unwrap();
    dupfixed(dir.path());
    assert_eq!(walk_dups(&env(dir.path())), Ok(4000));
    forge(dir.path(), |raw, ps| {
        let o = pages_with(raw, ps, P_LEAF | P_LEAF2)[0];
        wr16(raw, o + 8, 0);
    });
    assert_eq!(
        kind(walk_dups(&env(dir.path()))),
        Some(ErrorKind::Corrupted)
    );
    check_flags(dir.path());
}

/// The leaf node of `key0` in `dfdb`'s tree, and the offset of its data.
fn dup_node(raw: &[u8], ps: usize) -> usize {
    for o in pages_with(raw, ps, P_LEAF) {
        if rd16(raw, o + 10) & (P_LEAF2 | P_BRANCH) != 0 {
            continue;
        }
        for i in 0..(rd16(raw, o + 12) as usize - 16) / 2 {
            let n = node(raw, o, i);
            let ks = rd16(raw, n + 6) as usize;
            if &raw[n + 8..n + 8 + ks] == b"key0" && rd16(raw, n + 4) & F_DUPDATA != 0 {
                return n + 8 + ks;
            }
        }
    }
    panic!("no node of key0");
}

/// A DUPFIXED sub-database record whose value size (md_pad) is not the
/// one of its pages: larger than a page, than any value, or small enough
/// for the page but not for its keys. Reads and writes refuse it.
#[test]
fn dupfixed_record_with_forged_value_size() {
    for pad in [
        |ps: usize| 8 * ps,
        |_| u32::MAX as usize,
        |ps| ps / 8,
        |ps| ps - 16,
    ] {
        let dir = tempfile::tempdir().unwrap();
        dupfixed(dir.path());
        forge(dir.path(), |raw, ps| {
            let d = dup_node(raw, ps);
            let v = pad(ps) as u32;
            raw[d..d + 4].copy_from_slice(&v.to_le_bytes());
        });
        let env = env(dir.path());
        let r = env.read_txn().unwrap();
        let db = r.open_db("dfdb").unwrap();
        assert_eq!(
            kind(r.cursor(db).unwrap().set(b"key0")),
            Some(ErrorKind::Corrupted)
        );
        let mut c = r.cursor(db).unwrap();
        assert_eq!(kind(c.set_key(b"key0")), Some(ErrorKind::Corrupted));
        drop(r);
        let mut w = env.write_txn().unwrap();
        assert_eq!(
            kind(w.put(db, b"key0", b"ZZZZZZZ", WriteFlags::EMPTY)),
            Some(ErrorKind::Corrupted)
        );
        drop(w);
        check_flags(dir.path());
    }
}

/// A sub-database record whose value size is plausible but not its
/// pages': the put that would move the packed values by it is refused.
#[test]
fn dupfixed_record_size_differs_from_its_pages() {
    let dir = tempfile::tempdir().unwrap();
    dupfixed(dir.path());
    forge(dir.path(), |raw, ps| {
        let d = dup_node(raw, ps);
        raw[d..d + 4].copy_from_slice(&8u32.to_le_bytes());
    });
    write_refused(dir.path(), |w| {
        let db = w.open_db("dfdb").unwrap();
        w.put(db, b"key0", b"ZZZZZZZZ", WriteFlags::EMPTY)
    });
}

/// A named database whose record claims a tree deeper than any cursor can
/// walk (LMDB's cursor stack is 32).
#[test]
fn named_record_deeper_than_a_cursor_walks() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = env(dir.path());
        let mut w = env.write_txn().unwrap();
        let db = w.create_db("testdb", DbFlags::EMPTY).unwrap();
        w.put(db, b"key", b"val", WriteFlags::EMPTY).unwrap();
        w.commit().unwrap();
    }
    forge(dir.path(), |raw, ps| {
        let mut patched = 0;
        for o in pages_with(raw, ps, P_LEAF) {
            for i in 0..(rd16(raw, o + 12) as usize - 16) / 2 {
                let n = node(raw, o, i);
                let ks = rd16(raw, n + 6) as usize;
                if rd16(raw, n + 4) & F_SUBDATA != 0 && &raw[n + 8..n + 8 + ks] == b"testdb" {
                    wr16(raw, n + 8 + ks + 6, 100);
                    patched += 1;
                }
            }
        }
        assert!(patched > 0);
    });
    let env = env(dir.path());
    let r = env.read_txn().unwrap();
    assert_eq!(kind(r.open_db("testdb")), Some(ErrorKind::Corrupted));
    check_flags(dir.path());
}

/// An overflow page whose header counts no pages (or fewer than its value
/// needs): deleting the value refuses it instead of freeing too little.
#[test]
fn overflow_run_shorter_than_its_value() {
    for pages in [0u32, 1] {
        let dir = tempfile::tempdir().unwrap();
        {
            let env = env(dir.path());
            let mut w = env.write_txn().unwrap();
            w.put(Database::MAIN, b"big", &[b'x'; 40000], WriteFlags::EMPTY)
                .unwrap();
            w.put(Database::MAIN, b"small", b"y", WriteFlags::EMPTY)
                .unwrap();
            w.commit().unwrap();
        }
        forge(dir.path(), |raw, ps| {
            let o = pages_with(raw, ps, P_OVERFLOW)[0];
            raw[o + 12..o + 16].copy_from_slice(&pages.to_le_bytes());
        });
        write_refused(dir.path(), |w| w.del(Database::MAIN, b"big"));
    }
}

/// A free-database record listing a page twice: allocation refuses it
/// instead of handing the page out twice.
#[test]
fn free_record_listing_a_page_twice() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = env(dir.path());
        for del in [false, true] {
            let mut w = env.write_txn().unwrap();
            for i in 0..400 {
                let k = format!("k{i:05}");
                if del {
                    w.del(Database::MAIN, k.as_bytes()).unwrap();
                } else {
                    w.put(
                        Database::MAIN,
                        k.as_bytes(),
                        &[b'V'; 200],
                        WriteFlags::EMPTY,
                    )
                    .unwrap();
                }
            }
            w.commit().unwrap();
        }
        let mut w = env.write_txn().unwrap();
        for i in 0..50 {
            let k = format!("x{i:05}");
            w.put(Database::MAIN, k.as_bytes(), b"y", WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
    }
    forge(dir.path(), |raw, ps| {
        // The current meta's free-database root, a single leaf here.
        let meta = if rd64(raw, ps + 144) > rd64(raw, 144) {
            ps
        } else {
            0
        };
        let root = rd64(raw, meta + 80) as usize * ps;
        assert_eq!(rd16(raw, root + 10) & P_LEAF, P_LEAF);
        for i in 0..(rd16(raw, root + 12) as usize - 16) / 2 {
            let n = node(raw, root, i);
            let (dsize, ks) = (rd16(raw, n) as usize, rd16(raw, n + 6) as usize);
            let d = n + 8 + ks;
            if rd16(raw, n + 4) == 0 && dsize >= 24 && rd64(raw, d) >= 2 {
                let first = rd64(raw, d + 8);
                raw[d + 16..d + 24].copy_from_slice(&first.to_le_bytes());
                return;
            }
        }
        panic!("no inline free record of two pages or more");
    });
    write_refused(dir.path(), |w| {
        (0..300).try_for_each(|i| {
            let k = format!("z{i:05}");
            w.put(
                Database::MAIN,
                k.as_bytes(),
                &[b'W'; 300],
                WriteFlags::EMPTY,
            )
        })
    });
}

/// Debian's `mdb_stat -e` on `dir`: whether it opened the file.
fn lmdb_opens(dir: &Path) -> bool {
    debian::lmdb_utils();
    let _ = std::fs::remove_file(dir.join("lock.mdb"));
    Command::new("/usr/bin/mdb_stat")
        .arg("-e")
        .arg(dir)
        .output()
        .unwrap()
        .status
        .success()
}

/// The older meta page with last_pgno 0: LMDB reads the newer one and
/// never looks at it, so open does the same; `mdb check` passes the file
/// with a warning naming the meta.
#[test]
fn inactive_meta_with_last_pgno_zero() {
    let dir = tempfile::tempdir().unwrap();
    three_keys(dir.path());
    {
        let env = env(dir.path());
        let mut w = env.write_txn().unwrap();
        w.put(Database::MAIN, b"4", b"ddd", WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
    }
    forge(dir.path(), |raw, ps| {
        let older = if rd64(raw, ps + 144) > rd64(raw, 144) {
            0
        } else {
            ps
        };
        raw[older + 136..older + 144].copy_from_slice(&0u64.to_le_bytes());
    });
    assert!(lmdb_opens(dir.path()));
    let env = EnvOptions::new().open(dir.path()).unwrap();
    assert_eq!(entries(&env), 4);
    drop(env);
    let rep = check::check_file(&data(dir.path())).unwrap();
    assert!(rep.is_ok(), "{rep:?}");
    assert!(
        rep.warnings[0].message.contains("last_pgno is 0"),
        "{rep:?}"
    );
}

/// A recorded map size no process can map: LMDB, and we without
/// auto-grow (as the C library and the tools open), fail to open the file
/// at that size (ENOMEM), and `mdb check` says so. Auto-grow maps what the
/// address space allows.
#[test]
fn meta_map_size_beyond_any_address_space() {
    let dir = tempfile::tempdir().unwrap();
    three_keys(dir.path());
    forge(dir.path(), |raw, ps| {
        for meta in [0, ps] {
            raw[meta + 32..meta + 40].copy_from_slice(&(1u64 << 62).to_le_bytes());
        }
    });
    assert!(!lmdb_opens(dir.path()));
    assert_eq!(
        kind(EnvOptions::new().auto_grow(false).open(dir.path())),
        Some(ErrorKind::Os(libc::ENOMEM))
    );
    let env = EnvOptions::new().open(dir.path()).unwrap();
    assert_eq!(entries(&env), 3);
    drop(env);
    check_flags(dir.path());
}
