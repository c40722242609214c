//! Hot copies (`Env::copy_to_path` / `copy_to_writer`, plain and compacting)
//! checked against a model of the snapshot they were taken from, against
//! Debian's `mdb_dump`, `mdb_stat` and `mdb_copy` (LMDB 0.9.24), and with the
//! structural checker.

use mdb::{check, CopyProgress, Database, DbFlags, Env, EnvFlags, EnvOptions, ErrorKind, Txn};
use mdb::{RwTxn, WriteFlags};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod debian;

/// DB name ("" = main) -> key -> sorted values (one for plain DBs).
type Model = BTreeMap<String, BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>>;

fn tmpdir() -> tempfile::TempDir {
    if Path::new("/dev/shm").is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("mdbcopy")
            .tempdir_in("/dev/shm")
        {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

/// A small xorshift generator, seeded per commit so commits can be replayed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One change, applied both to an environment and to the model.
enum Op {
    Put(&'static str, Vec<u8>, Vec<u8>),
    Del(&'static str, Vec<u8>),
    DelDup(&'static str, Vec<u8>, Vec<u8>),
}

fn plain_value(r: &mut Rng, i: u64) -> Vec<u8> {
    let len = if r.below(20) == 0 {
        2500 + r.below(9000) as usize
    } else {
        1 + r.below(120) as usize
    };
    (0..len).map(|j| (j as u64 ^ i) as u8).collect()
}

/// The initial content: plain keys (some with overflow values) in `plain`,
/// duplicates in `dups` (a few keys with enough values for a sub-DB).
fn initial_ops() -> Vec<Op> {
    let mut r = Rng::new(1);
    let mut ops = Vec::new();
    for i in 0..3000u64 {
        let k = format!("key{:05}", i).into_bytes();
        ops.push(Op::Put("plain", k, plain_value(&mut r, i)));
    }
    for k in 0..40u64 {
        let n = if k < 4 { 400 } else { 1 + k % 7 };
        for v in 0..n {
            ops.push(Op::Put(
                "dups",
                format!("d{k:02}").into_bytes(),
                format!("value{:06}", v * 7 + k).into_bytes(),
            ));
        }
    }
    for i in 0..20u64 {
        ops.push(Op::Put(
            "",
            format!("main{i}").into_bytes(),
            vec![i as u8; 10],
        ));
    }
    ops
}

/// The changes of commit number `i` (1-based) of the concurrent writer.
fn commit_ops(i: u64) -> Vec<Op> {
    let mut r = Rng::new(1000 + i);
    let mut ops = Vec::new();
    for _ in 0..1 + r.below(6) {
        let k = format!("key{:05}", r.below(4000)).into_bytes();
        match r.below(3) {
            0 => ops.push(Op::Del("plain", k)),
            _ => {
                let v = plain_value(&mut r, i);
                ops.push(Op::Put("plain", k, v));
            }
        }
    }
    let dk = format!("d{:02}", r.below(45)).into_bytes();
    let dv = format!("value{:06}", r.below(3000)).into_bytes();
    if r.below(2) == 0 {
        ops.push(Op::Put("dups", dk, dv));
    } else {
        ops.push(Op::DelDup("dups", dk, dv));
    }
    ops
}

fn db_of(w: &mut RwTxn<'_>, name: &str) -> Database {
    match name {
        "" => Database::MAIN,
        "dups" => w.create_db("dups", DbFlags::DUP_SORT).unwrap(),
        n => w.create_db(n, DbFlags::EMPTY).unwrap(),
    }
}

fn apply_env(w: &mut RwTxn<'_>, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Put(d, k, v) => {
                let db = db_of(w, d);
                w.put(db, k, v, WriteFlags::EMPTY).unwrap();
            }
            Op::Del(d, k) => {
                let db = db_of(w, d);
                w.del(db, k).unwrap();
            }
            Op::DelDup(d, k, v) => {
                let db = db_of(w, d);
                w.del_dup(db, k, v).unwrap();
            }
        }
    }
}

fn apply_model(m: &mut Model, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Put(d, k, v) => {
                m.entry(d.to_string()).or_default();
                let db = m.get_mut(*d).unwrap();
                let set = db.entry(k.clone()).or_default();
                if *d != "dups" {
                    set.clear();
                }
                set.insert(v.clone());
            }
            Op::Del(d, k) => {
                if let Some(db) = m.get_mut(*d) {
                    db.remove(k);
                }
            }
            Op::DelDup(d, k, v) => {
                if let Some(db) = m.get_mut(*d) {
                    if let Some(set) = db.get_mut(k) {
                        set.remove(v);
                        if set.is_empty() {
                            db.remove(k);
                        }
                    }
                }
            }
        }
    }
}

/// The model after the initial load and `commits` writer commits.
fn model_after(commits: u64) -> Model {
    let mut m = Model::new();
    apply_model(&mut m, &initial_ops());
    for i in 1..=commits {
        apply_model(&mut m, &commit_ops(i));
    }
    // The main DB also holds the records of the named DBs.
    m
}

/// Everything in the environment at `path`, read with our engine.
fn read_env(path: &Path, nosubdir: bool) -> Model {
    let mut flags = EnvFlags::READ_ONLY;
    if nosubdir {
        flags = flags | EnvFlags::NO_SUB_DIR;
    }
    let env = EnvOptions::new()
        .flags(flags)
        .max_dbs(4)
        .open(path)
        .unwrap();
    let r = env.read_txn().unwrap();
    let mut m = Model::new();
    let mut names = Vec::new();
    for kv in r.cursor(Database::MAIN).unwrap().iter() {
        let (k, v) = kv.unwrap();
        if k == b"plain" || k == b"dups" {
            names.push(String::from_utf8(k.to_vec()).unwrap());
            continue;
        }
        m.entry(String::new())
            .or_default()
            .entry(k.to_vec())
            .or_default()
            .insert(v.to_vec());
    }
    for n in names {
        let db = r.open_db(&n).unwrap();
        let e = m.entry(n).or_default();
        for kv in r.cursor(db).unwrap().iter() {
            let (k, v) = kv.unwrap();
            e.entry(k.to_vec()).or_default().insert(v.to_vec());
        }
    }
    m
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The record lines Debian's `mdb_dump -a` must print for the model's named
/// DBs, as (name, lines).
fn expected_dump_records(m: &Model) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (name, db) in m {
        if name.is_empty() {
            continue;
        }
        let mut lines = Vec::new();
        for (k, vs) in db {
            for v in vs {
                lines.push(format!(" {}", hex(k)));
                lines.push(format!(" {}", hex(v)));
            }
        }
        out.push((name.clone(), lines));
    }
    out
}

/// Debian's `mdb_dump -a` output, parsed into (name, record lines).
fn debian_dump(path: &Path, nosubdir: bool) -> Vec<(String, Vec<String>)> {
    let mut c = Command::new("/usr/bin/mdb_dump");
    c.arg("-a");
    if nosubdir {
        c.arg("-n");
    }
    let o = c.arg(path).output().unwrap();
    assert!(
        o.status.success(),
        "mdb_dump -a failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut in_data = false;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("database=") {
            out.push((n.to_string(), Vec::new()));
        } else if line == "HEADER=END" {
            in_data = true;
        } else if line == "DATA=END" {
            in_data = false;
        } else if in_data {
            out.last_mut().unwrap().1.push(line.to_string());
        }
    }
    out
}

fn debian_stat(path: &Path, nosubdir: bool) -> String {
    let mut c = Command::new("/usr/bin/mdb_stat");
    c.arg("-efa");
    if nosubdir {
        c.arg("-n");
    }
    let o = c.arg(path).output().unwrap();
    assert!(
        o.status.success(),
        "mdb_stat -efa failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn data_file(dir: &Path) -> PathBuf {
    dir.join("data.mdb")
}

fn populate(dir: &Path) -> Env {
    let env = EnvOptions::new()
        .map_size(256 << 20)
        .max_dbs(4)
        .flags(EnvFlags::NO_SYNC)
        .open(dir)
        .unwrap();
    let mut w = env.write_txn().unwrap();
    apply_env(&mut w, &initial_ops());
    w.commit().unwrap();
    env
}

/// Check a copy: sound, equal to the model of its snapshot by our reading
/// and by Debian's mdb_dump -a, readable by Debian's mdb_stat -efa.
fn verify_copy(path: &Path, nosubdir: bool, compact: bool, want: &Model) {
    let file = if nosubdir {
        path.to_path_buf()
    } else {
        data_file(path)
    };
    let rep = check::check_file(&file).unwrap();
    assert!(rep.is_ok(), "copy has problems: {:?}", rep.problems);
    if compact {
        assert_eq!(rep.free_pages, 0);
        assert_eq!(rep.meta_txnid, 1);
    }
    assert_eq!(
        &read_env(path, nosubdir),
        want,
        "copy differs from its snapshot"
    );
    debian::lmdb_utils();
    assert_eq!(debian_dump(path, nosubdir), expected_dump_records(want));
    let st = debian_stat(path, nosubdir);
    if compact {
        assert!(st.contains("  Free pages: 0\n"), "{st}");
    }
}

#[test]
fn copies_under_a_concurrent_writer_equal_their_snapshot() {
    let src = tmpdir();
    let env = Arc::new(populate(src.path()));
    let base = env.info().unwrap().last_txnid;
    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicU64::new(0));
    let writer = {
        let (env, stop, committed) = (env.clone(), stop.clone(), committed.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                i += 1;
                let mut w = env.write_txn().unwrap();
                apply_env(&mut w, &commit_ops(i));
                w.commit().unwrap();
                committed.store(i, Ordering::SeqCst);
                std::thread::sleep(Duration::from_micros(300));
            }
        })
    };
    let out = tmpdir();
    for (n, (compact, stream)) in [(false, false), (true, false), (false, true), (true, true)]
        .into_iter()
        .enumerate()
    {
        let before = committed.load(Ordering::SeqCst);
        // At the first progress report the snapshot is fixed: let the writer
        // commit twice more while the copy is under way.
        let mut first = true;
        let mut during = 0;
        let mut wait = |_: CopyProgress| {
            if first {
                first = false;
                let at = committed.load(Ordering::SeqCst);
                let t0 = Instant::now();
                while committed.load(Ordering::SeqCst) < at + 2 {
                    assert!(t0.elapsed() < Duration::from_secs(20), "writer stalled");
                    std::thread::sleep(Duration::from_millis(1));
                }
                during = committed.load(Ordering::SeqCst);
            }
            true
        };
        let (path, st) = if stream {
            let p = out.path().join(format!("stream{n}.mdb"));
            let mut buf = Vec::new();
            let st = env
                .copy_to_writer_with(&mut buf, compact, &mut wait)
                .unwrap();
            std::fs::write(&p, &buf).unwrap();
            assert_eq!(buf.len() as u64, st.bytes());
            (p, st)
        } else {
            let p = out.path().join(format!("dir{n}"));
            std::fs::create_dir(&p).unwrap();
            let st = env.copy_to_path_with(&p, compact, &mut wait).unwrap();
            assert_eq!(std::fs::metadata(data_file(&p)).unwrap().len(), st.bytes());
            (p, st)
        };
        let k = st.snapshot_txnid - base;
        assert!(
            k >= before,
            "snapshot {k} older than the copy's start {before}"
        );
        assert!(during >= k + 2, "the writer did not commit during the copy");
        verify_copy(&path, stream, compact, &model_after(k));
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    // The source itself is still sound after all this.
    let rep = check::check_file(&data_file(src.path())).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
}

#[test]
fn compact_copy_drops_free_pages() {
    let src = tmpdir();
    let env = populate(src.path());
    // Delete most keys: many free pages.
    let mut w = env.write_txn().unwrap();
    let plain = w.create_db("plain", DbFlags::EMPTY).unwrap();
    for i in 0..3000u64 {
        if i % 8 != 0 {
            w.del(plain, format!("key{:05}", i).as_bytes()).unwrap();
        }
    }
    w.commit().unwrap();
    // Two more commits so the freed pages are in the free list for good.
    for _ in 0..2 {
        let mut w = env.write_txn().unwrap();
        w.put(Database::MAIN, b"tick", b"tock", WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
    }
    let before = check::check_file(&data_file(src.path())).unwrap();
    assert!(before.is_ok(), "{:?}", before.problems);
    assert!(before.free_pages > 100, "free pages: {}", before.free_pages);

    let dst = tmpdir();
    env.copy_to_path(dst.path(), true).unwrap();
    let after = check::check_file(&data_file(dst.path())).unwrap();
    assert!(after.is_ok(), "{:?}", after.problems);
    assert_eq!(after.free_pages, 0);
    // Gone: the free pages and the free DB's own pages.
    let f = &before.dbs[0];
    let free_db = f.branch_pages + f.leaf_pages + f.overflow_pages;
    assert_eq!(
        after.last_pgno,
        before.last_pgno - before.free_pages - free_db
    );
    let (sz0, sz1) = (
        std::fs::metadata(data_file(src.path())).unwrap().len(),
        std::fs::metadata(data_file(dst.path())).unwrap().len(),
    );
    assert!(sz1 < sz0);
    eprintln!(
        "compact copy: {} -> {} bytes ({:.1}%), {} free pages dropped",
        sz0,
        sz1,
        100.0 * sz1 as f64 / sz0 as f64,
        before.free_pages
    );
    assert_eq!(read_env(dst.path(), false), read_env(src.path(), false));
    debian::lmdb_utils();
    assert_eq!(
        debian_dump(dst.path(), false),
        debian_dump(src.path(), false)
    );
    let st = debian_stat(dst.path(), false);
    assert!(st.contains("  Free pages: 0\n"), "{st}");
}

/// Our copies are byte-identical to Debian's `mdb_copy` and `mdb_copy -c`
/// of the same (quiescent) source, including a file over LMDB's 2 MiB of
/// copy buffers.
#[test]
fn copies_equal_lmdb_byte_for_byte() {
    debian::lmdb_utils();
    for big in [false, true] {
        let src = tmpdir();
        let env = populate(src.path());
        if big {
            let mut w = env.write_txn().unwrap();
            let plain = w.create_db("plain", DbFlags::EMPTY).unwrap();
            let mut r = Rng::new(77);
            for i in 0..20_000u64 {
                let k = format!("big{:06}", r.below(1_000_000)).into_bytes();
                w.put(plain, &k, &plain_value(&mut r, i), WriteFlags::EMPTY)
                    .unwrap();
            }
            w.commit().unwrap();
            let mut w = env.write_txn().unwrap();
            for i in (0..3000u64).step_by(3) {
                w.del(plain, format!("key{:05}", i).as_bytes()).unwrap();
            }
            w.commit().unwrap();
        }
        drop(env);
        let env = EnvOptions::new()
            .flags(EnvFlags::READ_ONLY)
            .open(src.path())
            .unwrap();
        for compact in [false, true] {
            let mut ours = Vec::new();
            env.copy_to_writer(&mut ours, compact).unwrap();
            let mut c = Command::new("/usr/bin/mdb_copy");
            if compact {
                c.arg("-c");
            }
            let o = c.arg(src.path()).output().unwrap();
            assert!(o.status.success());
            assert_eq!(ours.len(), o.stdout.len(), "big={big} compact={compact}");
            if ours != o.stdout {
                let ps = env.page_size();
                let first = (0..ours.len()).find(|&i| ours[i] != o.stdout[i]).unwrap();
                panic!(
                    "big={big} compact={compact}: first difference at byte {first} (page {}, offset {})",
                    first / ps,
                    first % ps
                );
            }
            if big && compact {
                assert!(ours.len() > 2 << 20, "not over LMDB's buffers");
            }
        }
    }
}

#[test]
fn copy_targets_and_errors() {
    let src = tmpdir();
    let env = populate(src.path());
    let dst = tmpdir();
    env.copy_to_path(dst.path(), false).unwrap();
    // data.mdb exists now: EEXIST, and the existing file is untouched.
    let len = std::fs::metadata(data_file(dst.path())).unwrap().len();
    assert_eq!(
        env.copy_to_path(dst.path(), true).map_err(|e| e.kind()),
        Err(ErrorKind::Os(libc::EEXIST))
    );
    assert_eq!(std::fs::metadata(data_file(dst.path())).unwrap().len(), len);
    assert!(!dst.path().join("lock.mdb").exists());
    assert_eq!(
        env.copy_to_path(dst.path().join("missing"), false)
            .map_err(|e| e.kind()),
        Err(ErrorKind::Os(libc::ENOENT))
    );
    // A thread holding a read transaction cannot copy (as in LMDB).
    {
        let _r = env.read_txn().unwrap();
        let d = tmpdir();
        assert_eq!(
            env.copy_to_path(d.path(), false).map_err(|e| e.kind()),
            Err(ErrorKind::BadRslot)
        );
        assert!(!data_file(d.path()).exists());
    }
    // To a descriptor, at its position: the same bytes as to a writer.
    for compact in [false, true] {
        use std::io::{Read, Seek, Write};
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"head").unwrap();
        env.copy_to_fd(&f, compact).unwrap();
        let mut got = Vec::new();
        f.rewind().unwrap();
        f.read_to_end(&mut got).unwrap();
        let mut want = b"head".to_vec();
        env.copy_to_writer(&mut want, compact).unwrap();
        assert!(got == want, "copy_to_fd compact={compact}");
    }
    // Stopping through the progress callback: EINTR, and no partial file.
    let d = tmpdir();
    let r = env.copy_to_path_with(d.path(), true, &mut |_| false);
    assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::Os(libc::EINTR)));
    assert!(!data_file(d.path()).exists());
    drop(env);

    // NOSUBDIR: the copy goes to the given file name.
    let f = tmpdir();
    let file = f.path().join("single.mdb");
    {
        let env = EnvOptions::new()
            .flags(EnvFlags::NO_SUB_DIR | EnvFlags::NO_SYNC)
            .open(&file)
            .unwrap();
        let mut w = env.write_txn().unwrap();
        w.put(Database::MAIN, b"a", b"b", WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
        let target = f.path().join("copy.mdb");
        env.copy_to_path(&target, true).unwrap();
        assert!(target.is_file());
        assert_eq!(
            env.copy_to_path(&target, false).map_err(|e| e.kind()),
            Err(ErrorKind::Os(libc::EEXIST))
        );
        let m = read_env(&target, true);
        assert_eq!(m[""][&b"a"[..]].iter().next().unwrap(), b"b");
        // The FREE record's flags carry NOSUBDIR, as a new NOSUBDIR env's do.
        let bytes = std::fs::read(&target).unwrap();
        assert_eq!(u16::from_le_bytes([bytes[44], bytes[45]]), 0x4008);
    }

    // Without a lock file (NOLOCK): same copies.
    let nl = tmpdir();
    {
        let mut o = EnvOptions::new();
        // SAFETY: a private directory that only this Env uses.
        unsafe { o.no_lock() };
        let env = o
            .flags(EnvFlags::NO_SYNC)
            .map_size(64 << 20)
            .max_dbs(4)
            .open(nl.path())
            .unwrap();
        let mut w = env.write_txn().unwrap();
        apply_env(&mut w, &initial_ops());
        w.commit().unwrap();
        for compact in [false, true] {
            let d = tmpdir();
            env.copy_to_path(d.path(), compact).unwrap();
            verify_copy(d.path(), false, compact, &model_after(0));
        }
    }

    // An empty environment: two pages, both metas txn 0 when compacted.
    let e = tmpdir();
    let env = Env::open(e.path()).unwrap();
    for compact in [false, true] {
        let mut buf = Vec::new();
        env.copy_to_writer(&mut buf, compact).unwrap();
        assert_eq!(buf.len(), 2 * env.page_size());
        let rep = check::check_bytes(&buf);
        assert!(rep.is_ok(), "{:?}", rep.problems);
        assert_eq!(rep.meta_txnid, 0);
    }
}

/// A file whose meta claims more pages than its trees and free list hold
/// (leaked pages) cannot be compacted; a damaged tree gives an error, never
/// a crash.
#[test]
fn compact_copy_refuses_leaks_and_corruption() {
    let src = tmpdir();
    drop(populate(src.path()));
    let path = data_file(src.path());
    let pristine = std::fs::read(&path).unwrap();
    let ps = 4096;
    let rep = check::check_bytes(&pristine);
    let meta_off = rep.meta_used as usize * ps;

    // Leak: raise last_pgno by 3 (the pages exist, zero-filled).
    let mut leak = pristine.clone();
    let last = u64::from_le_bytes(leak[meta_off + 136..meta_off + 144].try_into().unwrap());
    leak[meta_off + 136..meta_off + 144].copy_from_slice(&(last + 3).to_le_bytes());
    leak.resize(leak.len() + 3 * ps, 0);
    std::fs::write(&path, &leak).unwrap();
    let _ = std::fs::remove_file(src.path().join("lock.mdb"));
    {
        let env = Env::open(src.path()).unwrap();
        let mut buf = Vec::new();
        assert_eq!(
            env.copy_to_writer(&mut buf, true).map_err(|e| e.kind()),
            Err(ErrorKind::Incompatible)
        );
        // A plain copy is still fine, leak and all.
        let mut buf = Vec::new();
        env.copy_to_writer(&mut buf, false).unwrap();
        assert_eq!(buf.len(), leak.len());
    }

    // Garbage over every tree page in turn: compacting fails or succeeds,
    // but never crashes or loops.
    let mut failures = 0;
    for pg in 2..=last as usize {
        let mut bad = pristine.clone();
        for (i, b) in bad[pg * ps + 8..pg * ps + 64].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) ^ 0x5a;
        }
        std::fs::write(&path, &bad).unwrap();
        let env = Env::open(src.path()).unwrap();
        let mut buf = Vec::new();
        if env.copy_to_writer(&mut buf, true).is_err() {
            failures += 1;
        }
    }
    assert!(failures > 0);
}

/// A compacting copy of several MiB (the walk runs in its own thread,
/// writes in this one) stops cleanly at once when the writer fails or the
/// progress callback says stop, whichever buffer the walk is at, and
/// reports that error, not the walk's.
#[test]
fn compact_copy_stops_on_a_failed_write_or_a_cancel() {
    struct FailAfter(usize);
    impl std::io::Write for FailAfter {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0 < b.len() {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.0 -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let src = tmpdir();
    let env = EnvOptions::new()
        .flags(EnvFlags::NO_SYNC)
        .map_size(256 << 20)
        .open(src.path())
        .unwrap();
    let mut w = env.write_txn().unwrap();
    for i in 0..60_000u32 {
        let v = vec![i as u8; 90 + (i % 7) as usize * 40];
        w.put(Database::MAIN, &i.to_be_bytes(), &v, WriteFlags::EMPTY)
            .unwrap();
    }
    // Overflow runs too: they go out straight from the map, in between.
    for i in 0..40u32 {
        let k = format!("big{i}");
        w.put(
            Database::MAIN,
            k.as_bytes(),
            &vec![7u8; 20_000],
            WriteFlags::EMPTY,
        )
        .unwrap();
    }
    w.commit().unwrap();
    let mut whole = Vec::new();
    env.copy_to_writer(&mut whole, true).unwrap();
    assert!(whole.len() > 8 << 20, "{} bytes", whole.len());
    for limit in [0, 4096, 1 << 20, (1 << 20) + 1, 3 << 20, whole.len() - 1] {
        let r = env.copy_to_writer(&mut FailAfter(limit), true);
        assert_eq!(
            r.map_err(|e| e.kind()),
            Err(ErrorKind::Os(libc::ENOSPC)),
            "{limit}"
        );
    }
    for stop_at in 1..5 {
        let mut calls = 0;
        let mut out = Vec::new();
        let r = env.copy_to_writer_with(&mut out, true, &mut |_| {
            calls += 1;
            calls < stop_at
        });
        assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::Os(libc::EINTR)));
        assert_eq!(calls, stop_at);
        assert!(out.len() < whole.len());
        assert_eq!(out[..], whole[..out.len()]);
    }
    // And the environment is fine afterwards: the copy's reader is gone.
    let mut again = Vec::new();
    env.copy_to_writer(&mut again, true).unwrap();
    assert!(again == whole);
}
