//! Engine bugs found by the fuzz targets, fixed, kept as regression tests
//! (`cargo test --release --test regressions`; `scripts/test.sh` runs them).
//! The engine's own copies, which run without this crate, are in
//! `crates/mdb/tests/fuzz_regressions.rs`.
//!
//! Each case runs in a child process (this same test binary, re-executed),
//! so a crash by signal (SIGBUS) fails the test instead of killing the runner.
//! The corrupt files are built from the seed file by editing named fields,
//! so they do not depend on the seed's exact page layout; the raw fuzz inputs
//! that found them are kept too.

use mdb::{Database, EnvFlags, EnvOptions, Txn};
use std::process::Command;

const CHILD: &str = "MDB_FUZZ_REGRESSION_CHILD";

/// Run `body` in a child process; fail if it panics or dies by a signal.
fn in_child(test_name: &str, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        body();
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("spawn child");
    let stderr = String::from_utf8_lossy(&out.stderr);
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = out.status.signal() {
            panic!("child died by signal {sig}\n{stderr}");
        }
    }
    assert!(
        out.status.success(),
        "child failed: {}\n{stderr}",
        out.status
    );
}

fn rd64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// The offset of the current meta page (larger txnid, meta 0 on a tie).
fn current_meta(file: &[u8], psize: usize) -> usize {
    if rd64(file, psize + 144) > rd64(file, 144) {
        psize
    } else {
        0
    }
}

fn write_and_open(file: &[u8]) -> (std::path::PathBuf, mdb_fuzz::ScratchDir) {
    let dir = mdb_fuzz::ScratchDir::new("regress");
    let path = dir.path().join("data.mdb");
    std::fs::write(&path, file).unwrap();
    (path, dir)
}

/// Bug 1: SIGBUS. A meta page whose `last_pgno` is far past the end of the
/// file is trusted: the map is sized from it, and a root page number past
/// EOF (but <= last_pgno) passes `page()`'s bound check, so reading it
/// touches mapped memory with no file behind it.
#[test]
fn sigbus_last_pgno_past_eof() {
    in_child("sigbus_last_pgno_past_eof", || {
        let seed = mdb_fuzz::seed::seed_file();
        let (ps, mut file) = (seed.psize, seed.bytes.clone());
        let pages = (file.len() / ps) as u64;
        for m in [0, ps] {
            // MAIN root := a page past EOF; last_pgno := far beyond it.
            file[m + 128..m + 136].copy_from_slice(&(pages + 10).to_le_bytes());
            file[m + 136..m + 144].copy_from_slice(&(1u64 << 26).to_le_bytes());
        }
        let (path, _dir) = write_and_open(&file);
        let mut o = EnvOptions::new();
        // SAFETY: a private scratch file that no other process or Env opens.
        unsafe { o.no_lock() };
        let env = o
            .flags(EnvFlags::NO_SUB_DIR | EnvFlags::READ_ONLY)
            .open(&path);
        let Ok(env) = env else { return }; // refusing to open is a fine fix
        let r = env.read_txn().unwrap();
        let _ = r.cursor(Database::MAIN).unwrap().first(); // SIGBUS here
    });
}

/// The raw `open_corrupt` input that found bug 1 (two edits of meta page 0:
/// MAIN root byte 129 := 0x78, last_pgno byte 139 := 0xbe), against the seed
/// built by the engine at the time it was found.
#[test]
fn sigbus_raw_fuzz_input() {
    in_child("sigbus_raw_fuzz_input", || {
        mdb_fuzz::open_corrupt(&[0x69, 0x86, 0xc1, 0x84, 0x78, 0xf3, 0x2f, 0xf8, 0x66, 0xbe]);
    });
}

/// Bug 2: panic "attempt to subtract with overflow" at tree.rs `Path::leaf`
/// (index out of bounds without overflow checks). A seek that fails with
/// `Corrupted` partway down leaves the cursor marked positioned with an
/// empty path; the next relative move (`next`/`prev`) underflows.
#[test]
fn panic_move_after_failed_seek() {
    in_child("panic_move_after_failed_seek", || {
        let seed = mdb_fuzz::seed::seed_file();
        let (ps, mut file) = (seed.psize, seed.bytes.clone());
        let m = current_meta(&file, ps);
        let root = rd64(&file, m + 128) as usize;
        // MAIN's root is a branch page: claim 8 more node pointers, all 0
        // (the free gap holds whatever the page buffer held before).
        let lower = u16::from_le_bytes([file[root * ps + 12], file[root * ps + 13]]);
        file[root * ps + 12..root * ps + 14].copy_from_slice(&(lower + 16).to_le_bytes());
        let at = root * ps + lower as usize;
        file[at..at + 16].fill(0);
        let (path, _dir) = write_and_open(&file);
        let mut o = EnvOptions::new();
        // SAFETY: a private scratch file that no other process or Env opens.
        unsafe { o.no_lock() };
        let env = o
            .flags(EnvFlags::NO_SUB_DIR | EnvFlags::READ_ONLY)
            .open(&path)
            .unwrap();
        let r = env.read_txn().unwrap();
        let mut c = r.cursor(Database::MAIN).unwrap();
        assert!(c.first().unwrap().is_some());
        assert!(
            c.set_range(b"zzzz").is_err(),
            "the seek should hit a bad node"
        );
        let _ = c.next(); // panics: Path::leaf with len == 0
        let _ = c.prev();
    });
}

/// The raw `open_corrupt` input that found bug 2 (page-header edit: `lower`
/// of MAIN's root branch page 0x1a -> 0x2a).
#[test]
fn panic_raw_fuzz_input() {
    in_child("panic_raw_fuzz_input", || {
        mdb_fuzz::open_corrupt(&[0x1c, 0x8b, 0x0a, 0x7a, 0x2a]);
    });
}

/// Bug 3: panic "index out of bounds: the len is 4096 but the index is ..."
/// at page.rs `rd16` from `Page::node`: a page flagged P_LEAF2 skips
/// `Page::new`'s lower/upper checks, so a `lower` past the end of the page
/// makes `len()` huge, and `node(i)` (used when the page is not where a
/// LEAF2 page belongs, or by `dup::Position::load`) reads the pointer array
/// past the page without a bounds check.
#[test]
fn panic_lower_past_page_end() {
    in_child("panic_lower_past_page_end", || {
        let seed = mdb_fuzz::seed::seed_file();
        let (ps, mut file) = (seed.psize, seed.bytes.clone());
        let m = current_meta(&file, ps);
        let root = rd64(&file, m + 128) as usize;
        // LEAF2 set: Page::new then skips its lower/upper checks (LMDB keeps
        // virtual lower/upper on LEAF2 pages), but the page is read through
        // Page::node all the same.
        file[root * ps + 10] |= 0x20;
        file[root * ps + 12..root * ps + 14].copy_from_slice(&0xa900u16.to_le_bytes());
        let (path, _dir) = write_and_open(&file);
        let mut o = EnvOptions::new();
        // SAFETY: a private scratch file that no other process or Env opens.
        unsafe { o.no_lock() };
        let env = o
            .flags(EnvFlags::NO_SUB_DIR | EnvFlags::READ_ONLY)
            .open(&path)
            .unwrap();
        let r = env.read_txn().unwrap();
        let _ = r.cursor(Database::MAIN).unwrap().last(); // panics in rd16
    });
}

/// The raw `open_corrupt` input that found bug 3 (page 21, the DUPFIXED
/// DB's root leaf: flags 0x02 -> 0x6f and `lower` high byte 0x00 -> 0xa9).
#[test]
fn panic_lower_raw_fuzz_input() {
    in_child("panic_lower_raw_fuzz_input", || {
        mdb_fuzz::open_corrupt(&[0x5d, 0x6d, 0xca, 0xe9, 0xa9, 0x5a, 0xed, 0x13, 0x8a, 0x6f]);
    });
}

/// Bug 4: panic "range end index 16 out of range for slice of length 8" at
/// page.rs `rd64` from `DbRecord::decode` in `dup::dups_of`: a node flagged
/// F_SUBDATA|F_DUPDATA *and* F_BIGDATA passes the `dsize() == 48` check, but
/// `Page::node` sized its data as an 8-byte overflow pgno. Any database is
/// exposed (`tree::node_value` sends every F_DUPDATA node to `dups_of`, MAIN
/// included: the raw input below corrupts a named-DB record in MAIN).
#[test]
fn panic_subdb_node_with_bigdata_flag() {
    in_child("panic_subdb_node_with_bigdata_flag", || {
        let seed = mdb_fuzz::seed::seed_file();
        let mut file = seed.bytes.clone();
        // The "dups" DB's node for key "many": dsize 48, flags SUBDATA|DUPDATA, ksize 4.
        let pat = [48u8, 0, 0, 0, 0x06, 0, 4, 0, b'm', b'a', b'n', b'y'];
        // (Every copy: an older one may sit on a free page.)
        let hits: Vec<usize> = (0..file.len() - pat.len())
            .filter(|&i| file[i..i + pat.len()] == pat)
            .collect();
        assert!(!hits.is_empty(), "sub-DB node of \"many\" in the seed");
        for at in hits {
            file[at + 4] = 0x07; // add F_BIGDATA
        }
        let (path, _dir) = write_and_open(&file);
        let mut o = EnvOptions::new();
        // SAFETY: a private scratch file that no other process or Env opens.
        unsafe { o.no_lock() };
        let env = o
            .max_dbs(4)
            .flags(EnvFlags::NO_SUB_DIR | EnvFlags::READ_ONLY)
            .open(&path)
            .unwrap();
        let r = env.read_txn().unwrap();
        let db = r.open_db("dups").unwrap();
        let mut c = r.cursor(db).unwrap();
        let _ = c.set_key(b"many"); // panics in DbRecord::decode
        let _ = r.get(db, b"many");
        let mut c = r.cursor(db).unwrap();
        while let Ok(Some(_)) = c.next() {}
    });
}

/// The raw `open_corrupt` input that found bug 4 (set u64 = 0x77 over the
/// flags of a DUPSORT node).
#[test]
fn panic_subdb_bigdata_raw_fuzz_input() {
    in_child("panic_subdb_bigdata_raw_fuzz_input", || {
        mdb_fuzz::open_corrupt(&[0x8a, 0x2f, 0x68, 0x83, 0x77]);
    });
}

/// Bug 5 (valid data, no corruption): on a DUPSORT key whose values live in
/// a sub-database (more than a sub-page holds), `get_both_range` with a value
/// above all of them returns `Ok(None)`, and then `get_current` returns
/// `Err(Corrupted)`, in write and read transactions alike. With the values
/// in a sub-page the same sequence returns `Ok(Some(..))`. Found by
/// `ops_model` (BulkDups of 245 values, then Cursor[GetBothRange, GetCurrent]).
#[test]
fn corrupted_after_get_both_range_miss_on_subdb() {
    in_child("corrupted_after_get_both_range_miss_on_subdb", || {
        use mdb::{DbFlags, ErrorKind, WriteFlags};
        let dir = mdb_fuzz::ScratchDir::new("regress");
        let env = EnvOptions::new()
            .max_dbs(2)
            .map_size(16 << 20)
            .open(dir.path())
            .unwrap();
        let mut w = env.write_txn().unwrap();
        let db = w.create_db("d", DbFlags::DUP_SORT).unwrap();
        for i in 0..50u32 {
            let mut v = format!("{:05}", 659 + 3 * i).into_bytes();
            v.resize(40, b'0');
            w.put(db, b"a", &v, WriteFlags::EMPTY).unwrap();
        }
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        let mut c = r.cursor(db).unwrap();
        assert_eq!(c.get_both_range(b"a", b"9").unwrap(), None);
        let cur = c.get_current();
        assert!(
            !matches!(
                cur.as_ref().map_err(|e| e.kind()),
                Err(ErrorKind::Corrupted)
            ),
            "get_current: {cur:?}"
        );
    });
}
