//! The engine bugs the fuzz targets found (fuzz/tests/regressions.rs holds
//! the raw inputs), rebuilt here from named field edits of a file the
//! engine makes, so they run without the fuzz crate. Each runs in a child
//! process: a signal or a panic fails the test.

mod common;

use common::{build_file, in_child, opts};
use mdb::{Database, DbFlags, EnvFlags, ErrorKind, Txn, WriteFlags};
use std::path::{Path, PathBuf};

fn rd64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// A fresh copy of the test file, its bytes, its page size, and the offset
/// of its current meta page (both metas are in their own slots here).
fn seed(dir: &Path) -> (PathBuf, Vec<u8>, usize, usize) {
    let path = dir.join("db");
    let ps = build_file(&path);
    let bytes = std::fs::read(&path).unwrap();
    let m = if rd64(&bytes, ps + 144) > rd64(&bytes, 144) {
        ps
    } else {
        0
    };
    (path, bytes, ps, m)
}

/// What `r` failed with, if it failed.
fn failure<T>(r: mdb::Result<T>) -> Option<ErrorKind> {
    r.err().map(|e| e.kind())
}

fn read_only(path: &Path) -> mdb::Result<mdb::Env> {
    opts(EnvFlags::NO_LOCK | EnvFlags::READ_ONLY).open(path)
}

/// A meta whose last_pgno is far past the end of the file, and a root
/// page past the end too: the read fails, no SIGBUS.
#[test]
fn root_past_end_of_file() {
    in_child("root_past_end_of_file", || {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut file, ps, _) = seed(dir.path());
        let pages = (file.len() / ps) as u64;
        for m in [0, ps] {
            file[m + 128..m + 136].copy_from_slice(&(pages + 10).to_le_bytes());
            file[m + 136..m + 144].copy_from_slice(&(1u64 << 26).to_le_bytes());
        }
        std::fs::write(&path, &file).unwrap();
        let env = read_only(&path).unwrap();
        let r = env.read_txn().unwrap();
        assert_eq!(
            failure(r.cursor(Database::MAIN).unwrap().first()),
            Some(ErrorKind::Corrupted)
        );
        assert_eq!(
            failure(r.get(Database::MAIN, b"key0002")),
            Some(ErrorKind::Corrupted)
        );
    });
}

/// A seek that fails on a damaged branch page leaves the cursor
/// unpositioned: the moves after it do not panic (they used to, in
/// `Path::leaf`, with an empty path).
#[test]
fn moves_after_a_failed_seek() {
    in_child("moves_after_a_failed_seek", || {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut file, ps, m) = seed(dir.path());
        let root = rd64(&file, m + 128) as usize * ps;
        assert_eq!(file[root + 10] & 1, 1, "MAIN's root is a branch page");
        // Claim 8 more node pointers (all 0: before the pointer array).
        let lower = u16::from_le_bytes([file[root + 12], file[root + 13]]);
        file[root + 12..root + 14].copy_from_slice(&(lower + 16).to_le_bytes());
        std::fs::write(&path, &file).unwrap();
        let env = read_only(&path).unwrap();
        let r = env.read_txn().unwrap();
        let mut c = r.cursor(Database::MAIN).unwrap();
        assert!(c.first().unwrap().is_some());
        assert_eq!(failure(c.set_range(b"zzzz")), Some(ErrorKind::Corrupted));
        assert_eq!(
            failure(c.get_current()),
            Some(ErrorKind::Misuse(mdb::Misuse::UnpositionedCursor))
        );
        // Unpositioned: next and prev start from the ends (and may fail).
        let _ = c.next();
        let _ = c.prev();
        let _ = c.next_nodup();
        let _ = c.prev_nodup();
    });
}

/// A page flagged LEAF2 where a plain leaf or branch page belongs, with
/// `lower` far past the page's end: errors, no out-of-bounds panic.
#[test]
fn leaf2_flag_with_lower_past_page_end() {
    in_child("leaf2_flag_with_lower_past_page_end", || {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut file, ps, m) = seed(dir.path());
        let root = rd64(&file, m + 128) as usize * ps;
        file[root + 10] |= 0x20;
        file[root + 12..root + 14].copy_from_slice(&0xa900u16.to_le_bytes());
        std::fs::write(&path, &file).unwrap();
        let env = read_only(&path).unwrap();
        let r = env.read_txn().unwrap();
        assert_eq!(
            failure(r.cursor(Database::MAIN).unwrap().last()),
            Some(ErrorKind::Corrupted)
        );
        assert_eq!(
            failure(r.cursor(Database::MAIN).unwrap().first()),
            Some(ErrorKind::Corrupted)
        );
        assert_eq!(
            failure(r.get(Database::MAIN, b"key0002")),
            Some(ErrorKind::Corrupted)
        );
    });
}

/// A sub-database node (SUBDATA|DUPDATA, 48 bytes) also flagged BIGDATA:
/// an error, not a panic in `DbRecord::decode` on 8 bytes.
#[test]
fn subdb_node_flagged_bigdata() {
    in_child("subdb_node_flagged_bigdata", || {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut file, _, _) = seed(dir.path());
        // The "dups" DB's node for key "many": dsize 48, flags SUBDATA|DUPDATA, ksize 4.
        let pat = [48u8, 0, 0, 0, 0x06, 0, 4, 0, b'm', b'a', b'n', b'y'];
        let hits: Vec<usize> = (0..file.len() - pat.len())
            .filter(|&i| file[i..i + pat.len()] == pat)
            .collect();
        assert!(!hits.is_empty());
        for at in hits {
            file[at + 4] = 0x07;
        }
        // And the "plain" DB's record in MAIN (SUBDATA, 48 bytes).
        let pat = [48u8, 0, 0, 0, 0x02, 0, 5, 0, b'p', b'l', b'a', b'i', b'n'];
        for at in (0..file.len() - pat.len())
            .filter(|&i| file[i..i + pat.len()] == pat)
            .collect::<Vec<_>>()
        {
            file[at + 4] = 0x03;
        }
        std::fs::write(&path, &file).unwrap();
        let env = read_only(&path).unwrap();
        let r = env.read_txn().unwrap();
        let db = r.open_db("dups").unwrap();
        let mut c = r.cursor(db).unwrap();
        assert_eq!(failure(c.set_key(b"many")), Some(ErrorKind::Corrupted));
        assert_eq!(failure(r.get(db, b"many")), Some(ErrorKind::Corrupted));
        let mut c = r.cursor(db).unwrap();
        while let Ok(Some(_)) = c.next() {}
        assert_eq!(failure(r.open_db("plain")), Some(ErrorKind::Corrupted));
    });
}

/// Valid data: a `get_both_range` miss (a value above all of a key's) on a
/// key whose values are in a sub-database leaves the cursor where a miss
/// on a sub-page leaves it, on the key's last value; `get_current` used to
/// say `Corrupted`.
#[test]
fn get_current_after_get_both_range_miss() {
    let dir = tempfile::tempdir().unwrap();
    let env = mdb::EnvOptions::new()
        .max_dbs(2)
        .map_size(16 << 20)
        .open(dir.path())
        .unwrap();
    let mut w = env.write_txn().unwrap();
    let db = w.create_db("d", DbFlags::DUP_SORT).unwrap();
    // "a": 50 values of 40 bytes (a sub-database); "b": 3 (a sub-page).
    for i in 0..50u32 {
        let mut v = format!("{:05}", 659 + 3 * i).into_bytes();
        v.resize(40, b'0');
        w.put(db, b"a", &v, WriteFlags::EMPTY).unwrap();
        if i < 3 {
            w.put(db, b"b", &v, WriteFlags::EMPTY).unwrap();
        }
    }
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    for (key, last) in [(&b"a"[..], 659 + 3 * 49), (b"b", 659 + 3 * 2)] {
        let mut c = r.cursor(db).unwrap();
        assert_eq!(c.get_both_range(key, b"9").unwrap(), None);
        let (k, v) = c.get_current().unwrap().unwrap();
        assert_eq!((k, &v[..5]), (key, format!("{last:05}").as_bytes()));
        let (k, v) = c.prev().unwrap().unwrap();
        assert_eq!((k, &v[..5]), (key, format!("{:05}", last - 3).as_bytes()));
    }
}
