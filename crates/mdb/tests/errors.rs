//! Every bad input listed in the core-engine issue yields its error code.

use mdb::{Database, DbFlags, Env, EnvFlags, EnvOptions, ErrorKind, Txn, WriteFlags};
use std::io::Write;

mod debian;

fn nosubdir() -> EnvOptions {
    let mut o = EnvOptions::new();
    o.flags(EnvFlags::NO_SUB_DIR);
    o
}

fn valid_file(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("db");
    let env = nosubdir().open(&p).unwrap();
    let mut w = env.write_txn().unwrap();
    for i in 0..2000u32 {
        w.put(
            Database::MAIN,
            format!("key{i:06}").as_bytes(),
            &[7u8; 40],
            WriteFlags::EMPTY,
        )
        .unwrap();
    }
    w.commit().unwrap();
    p
}

#[test]
fn not_an_lmdb_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("garbage");
    std::fs::write(&p, vec![0x5au8; 10000]).unwrap();
    assert_eq!(
        nosubdir().open(&p).err().map(|e| e.kind()),
        Some(ErrorKind::Invalid)
    );
    // A short non-empty file is invalid too.
    std::fs::write(&p, b"short").unwrap();
    assert_eq!(
        nosubdir().open(&p).err().map(|e| e.kind()),
        Some(ErrorKind::Invalid)
    );
}

#[test]
fn wrong_version() {
    let dir = tempfile::tempdir().unwrap();
    let p = valid_file(dir.path());
    let mut b = std::fs::read(&p).unwrap();
    b[20] = 2;
    b[4096 + 20] = 2;
    std::fs::write(&p, &b).unwrap();
    assert_eq!(
        nosubdir().open(&p).err().map(|e| e.kind()),
        Some(ErrorKind::VersionMismatch)
    );
}

#[test]
fn big_endian_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = valid_file(dir.path());
    let mut b = std::fs::read(&p).unwrap();
    for base in [0, 4096] {
        b[base + 16..base + 20].copy_from_slice(&0xBEEF_C0DEu32.to_be_bytes());
    }
    std::fs::write(&p, &b).unwrap();
    assert_eq!(
        nosubdir().open(&p).err().map(|e| e.kind()),
        Some(ErrorKind::Invalid)
    );
}

#[test]
fn thirty_two_bit_file() {
    // A 32-bit LMDB meta: magic, version, u32 address, u32 mapsize, then
    // 24-byte records (u32 pad, u16 flags, u16 depth, 5 x u32).
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db32");
    let mut f = std::fs::File::create(&p).unwrap();
    for pgno in 0..2u32 {
        let mut page = vec![0u8; 4096];
        page[0..4].copy_from_slice(&pgno.to_le_bytes());
        page[6..8].copy_from_slice(&8u16.to_le_bytes()); // flags META at 32-bit offset
        page[8..12].copy_from_slice(&0xBEEF_C0DEu32.to_le_bytes());
        page[12..16].copy_from_slice(&1u32.to_le_bytes());
        page[20..24].copy_from_slice(&(1u32 << 20).to_le_bytes());
        page[24..28].copy_from_slice(&4096u32.to_le_bytes()); // FREE pad = psize
        page[44..48].copy_from_slice(&u32::MAX.to_le_bytes());
        page[68..72].copy_from_slice(&u32::MAX.to_le_bytes());
        page[72..76].copy_from_slice(&1u32.to_le_bytes());
        f.write_all(&page).unwrap();
    }
    drop(f);
    assert_eq!(
        nosubdir().open(&p).err().map(|e| e.kind()),
        Some(ErrorKind::Invalid)
    );
}

#[test]
fn corrupt_page_during_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = valid_file(dir.path());
    let env = nosubdir().open(&p).unwrap();
    let root = {
        let r = env.read_txn().unwrap();
        let st = r.stat(Database::MAIN).unwrap();
        assert!(st.depth >= 2);
        drop(r);
        let m = mdb::meta::Meta::decode(&std::fs::read(&p).unwrap()[4096..4096 + 152]).unwrap();
        m.main.root
    };
    drop(env);
    // Scribble over the root branch page's flags: it is neither branch nor leaf now.
    let mut b = std::fs::read(&p).unwrap();
    let off = root as usize * 4096;
    b[off + 10] = 0x40;
    b[off + 11] = 0;
    std::fs::write(&p, &b).unwrap();
    let env = nosubdir().open(&p).unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(
        r.get(Database::MAIN, b"key000001").err().map(|e| e.kind()),
        Some(ErrorKind::Corrupted)
    );
    let mut c = r.cursor(Database::MAIN).unwrap();
    assert_eq!(
        c.first().err().map(|e| e.kind()),
        Some(ErrorKind::Corrupted)
    );
}

#[test]
fn map_full_then_abort_keeps_env_working() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .map_size(64 * 4096)
        .open(dir.path())
        .unwrap();
    let mut w = env.write_txn().unwrap();
    w.put(Database::MAIN, b"keep", b"me", WriteFlags::EMPTY)
        .unwrap();
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    let mut err = None;
    for i in 0..100_000u32 {
        if let Err(e) = w.put(
            Database::MAIN,
            &i.to_be_bytes(),
            &[1u8; 200],
            WriteFlags::EMPTY,
        ) {
            err = Some(e);
            break;
        }
    }
    let err = err.expect("the map fills up");
    assert_eq!(err.kind(), ErrorKind::MapFull);
    // What failed is said, for logs: the put, its database and sizes.
    let what = (
        err.operation(),
        err.database(),
        err.key_len(),
        err.value_len(),
    );
    assert_eq!(what, (Some("put"), None, Some(4), Some(200)));
    assert!(
        err.to_string()
            .ends_with("(put into the main database, key of 4 bytes, value of 200 bytes)"),
        "{err}"
    );
    // The failed transaction can only abort.
    assert_eq!(
        w.put(Database::MAIN, b"x", b"y", WriteFlags::EMPTY)
            .map_err(|e| e.kind()),
        Err(ErrorKind::BadTxn)
    );
    assert_eq!(w.commit().map_err(|e| e.kind()), Err(ErrorKind::BadTxn));
    let mut w = env.write_txn().unwrap();
    w.put(Database::MAIN, b"after", b"ok", WriteFlags::EMPTY)
        .unwrap();
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(r.get(Database::MAIN, b"keep").unwrap(), Some(&b"me"[..]));
    assert_eq!(r.get(Database::MAIN, b"after").unwrap(), Some(&b"ok"[..]));
    assert_eq!(r.stat(Database::MAIN).unwrap().entries, 2);
}

#[test]
fn readers_full() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .max_readers(2)
        .flags(EnvFlags::NO_TLS)
        .open(dir.path())
        .unwrap();
    let a = env.read_txn().unwrap();
    let b = env.read_txn().unwrap();
    assert_eq!(
        env.read_txn().err().map(|e| e.kind()),
        Some(ErrorKind::ReadersFull)
    );
    drop(a);
    let c = env.read_txn().unwrap();
    drop((b, c));
}

#[test]
fn second_reader_in_thread_is_bad_rslot() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::open(dir.path()).unwrap();
    let a = env.read_txn().unwrap();
    assert_eq!(
        env.read_txn().err().map(|e| e.kind()),
        Some(ErrorKind::BadRslot)
    );
    drop(a);
    env.read_txn().unwrap();
}

#[test]
fn dbs_full() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new().max_dbs(1).open(dir.path()).unwrap();
    let mut w = env.write_txn().unwrap();
    w.create_db("one", DbFlags::EMPTY).unwrap();
    assert_eq!(
        w.create_db("two", DbFlags::EMPTY).err().map(|e| e.kind()),
        Some(ErrorKind::DbsFull)
    );
    let env0 = {
        drop(w);
        drop(env);
        Env::open(dir.path()).unwrap()
    };
    let mut w = env0.write_txn().unwrap();
    assert_eq!(
        w.create_db("one", DbFlags::EMPTY).err().map(|e| e.kind()),
        Some(ErrorKind::DbsFull)
    );
}

#[test]
fn bad_value_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::open(dir.path()).unwrap();
    let mut w = env.write_txn().unwrap();
    let m = Database::MAIN;
    assert_eq!(
        w.put(m, b"", b"v", WriteFlags::EMPTY).map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    assert_eq!(
        w.put(m, &[1u8; 512], b"v", WriteFlags::EMPTY)
            .map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    w.put(m, &[1u8; 511], b"v", WriteFlags::EMPTY).unwrap();
    assert_eq!(
        w.del(m, &[2u8; 600]).map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    // The transaction stays usable after a size error.
    w.put(m, b"ok", b"", WriteFlags::EMPTY).unwrap();
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(r.get(m, b"ok").unwrap(), Some(&b""[..]));
    let mut c = r.cursor(m).unwrap();
    assert_eq!(
        c.set_range(b"").err().map(|e| e.kind()),
        Some(ErrorKind::BadValSize)
    );
}

#[test]
fn missing_and_incompatible_databases() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new().max_dbs(4).open(dir.path()).unwrap();
    let mut w = env.write_txn().unwrap();
    w.put(Database::MAIN, b"plain", b"data", WriteFlags::EMPTY)
        .unwrap();
    assert_eq!(
        w.open_db("nothere").err().map(|e| e.kind()),
        Some(ErrorKind::NotFound)
    );
    assert_eq!(
        w.open_db("plain").err().map(|e| e.kind()),
        Some(ErrorKind::Incompatible)
    );
    assert_eq!(
        w.create_db("plain", DbFlags::EMPTY).err().map(|e| e.kind()),
        Some(ErrorKind::Incompatible)
    );
    // A DUPFIXED value of the wrong size is refused (LMDB stores it and misreads it).
    let fixed = w
        .create_db("fixed", DbFlags::DUP_SORT | DbFlags::DUP_FIXED)
        .unwrap();
    w.put(fixed, b"k", b"1234", WriteFlags::EMPTY).unwrap();
    assert_eq!(
        w.put(fixed, b"k", b"12345", WriteFlags::EMPTY)
            .map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    // MULTIPLE on a database that is not DUPFIXED.
    assert_eq!(
        w.put_multiple(Database::MAIN, b"k", b"1234", 4, WriteFlags::EMPTY)
            .map_err(|e| e.kind()),
        Err(ErrorKind::Incompatible)
    );
    // Bad duplicate sizes.
    let dups = w.create_db("dups", DbFlags::DUP_SORT).unwrap();
    // An empty value beside another one (alone it is fine: dupsort_empty.rs).
    w.put(dups, b"e", b"x", WriteFlags::EMPTY).unwrap();
    assert_eq!(
        w.put(dups, b"e", b"", WriteFlags::EMPTY)
            .map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    assert_eq!(
        w.put(dups, b"k", &[1u8; 512], WriteFlags::EMPTY)
            .map_err(|e| e.kind()),
        Err(ErrorKind::BadValSize)
    );
    assert_eq!(
        w.reserve(dups, b"k", 10, WriteFlags::EMPTY)
            .err()
            .map(|e| e.kind()),
        Some(ErrorKind::Misuse(mdb::Misuse::ReserveDupSort))
    );
}

#[test]
fn dupsort_file_from_lmdb_is_read() {
    debian::lmdb_utils();
    let dir = tempfile::tempdir().unwrap();
    let dump = "VERSION=3\nformat=bytevalue\ndatabase=tags\ntype=btree\ndupsort=1\nHEADER=END\n 61\n 31\n 61\n 32\nDATA=END\n";
    let mut child = std::process::Command::new("/usr/bin/mdb_load")
        .arg(dir.path())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dump.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let env = EnvOptions::new().max_dbs(2).open(dir.path()).unwrap();
    let r = env.read_txn().unwrap();
    let tags = r.open_db("tags").unwrap();
    let mut c = r.cursor(tags).unwrap();
    assert_eq!(c.first().unwrap(), Some((&b"a"[..], &b"1"[..])));
    assert_eq!(c.count().unwrap(), 2);
    assert_eq!(c.next().unwrap(), Some((&b"a"[..], &b"2"[..])));
    assert_eq!(c.next().unwrap(), None);
}

/// A failed operation says what it was doing, for Rust callers and their
/// logs; the C ABI still sees only the code.
#[test]
fn errors_say_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new().max_dbs(2).open(dir.path()).unwrap();
    let mut w = env.write_txn().unwrap();
    let tags = w.create_db("tags", DbFlags::DUP_SORT).unwrap();
    let e = w.cursor(tags).unwrap().set_range(b"").unwrap_err();
    assert_eq!(
        (e.kind(), e.operation(), e.database(), e.key_len()),
        (
            ErrorKind::BadValSize,
            Some("cursor set range"),
            Some(&b"tags"[..]),
            Some(0)
        )
    );
    assert_eq!(e.code(), mdb::error::code::BAD_VALSIZE);

    // The outcomes a caller tests for carry nothing (and allocate nothing).
    w.put(tags, b"k", b"v", WriteFlags::EMPTY).unwrap();
    let e = w
        .put(tags, b"k", b"v", WriteFlags::NO_DUP_DATA)
        .unwrap_err();
    assert_eq!((e.kind(), e.operation()), (ErrorKind::KeyExist, None));
    assert_eq!(e.to_string(), ErrorKind::KeyExist.to_string());

    let mut c = w.write_cursor(tags).unwrap();
    let e = c.put(b"", b"v", WriteFlags::EMPTY).unwrap_err();
    let what = (e.operation(), e.database(), e.key_len(), e.value_len());
    assert_eq!(
        what,
        (Some("cursor put"), Some(&b"tags"[..]), Some(0), Some(1))
    );
    drop(c);

    let e = w.create_db([b'n'; 600], DbFlags::EMPTY).unwrap_err();
    assert_eq!(
        (e.kind(), e.operation(), e.database().map(<[u8]>::len)),
        (ErrorKind::BadValSize, Some("create database"), Some(600))
    );

    let e = w.del(Database::MAIN, b"tags").unwrap_err();
    assert_eq!(
        e.to_string(),
        "MDB_INCOMPATIBLE: Operation and DB incompatible, or DB flags changed \
         (del on the main database, key of 4 bytes)"
    );
}
