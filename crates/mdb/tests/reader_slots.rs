//! Reader slots are held exactly as long as LMDB holds them, so other
//! processes are never refused a slot LMDB would give them: under NO_TLS a
//! slot belongs to one read transaction (kept across `reset` for `renew`),
//! otherwise to one thread until it exits or the `Env` closes.
//!
//! The other process is Debian's python3-lmdb (real LMDB), so what is
//! checked is what LMDB itself sees in our lock file.

use mdb::{Database, Env, EnvFlags, EnvOptions, RoTxn, Txn, WriteFlags};
use std::path::Path;
use std::process::Command;

const PYTHON: &str = "/usr/bin/python3";

/// In another process, real LMDB begins `n` read transactions at once;
/// returns what it printed (the count it got, or the error).
fn lmdb_takes_slots(dir: &Path, n: u32) -> String {
    assert!(
        Path::new(PYTHON).exists(),
        "Debian's python3-lmdb is needed (scripts/setup.sh installs it)"
    );
    let script = "import lmdb, sys\n\
        env = lmdb.open(sys.argv[1], max_readers=int(sys.argv[2]))\n\
        got = []\n\
        try:\n\
        \x20   for _ in range(int(sys.argv[2])):\n\
        \x20       got.append(env.begin())\n\
        except lmdb.Error as e:\n\
        \x20   print('error after %d: %s' % (len(got), e))\n\
        print('took %d' % len(got))\n";
    let out = Command::new(PYTHON)
        .args(["-c", script])
        .arg(dir)
        .arg(n.to_string())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python3-lmdb failed:\n{text}");
    text
}

fn open(dir: &Path, flags: EnvFlags, max_readers: u32) -> Env {
    let env = EnvOptions::new()
        .max_readers(max_readers)
        .flags(flags)
        .open(dir)
        .unwrap();
    let mut w = env.write_txn().unwrap();
    w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)
        .unwrap();
    w.commit().unwrap();
    env
}

#[test]
fn notls_txn_end_frees_its_slot_for_other_processes() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), EnvFlags::NO_TLS, 4);
    for i in 0..50 {
        let r = env.read_txn().unwrap();
        assert_eq!(r.get(Database::MAIN, b"k").unwrap(), Some(&b"v"[..]));
        if i % 2 == 0 {
            r.abort();
        }
    }
    assert_eq!(env.readers(), vec![], "an ended NOTLS txn left its slot");

    // `reset` keeps the slot for `renew`; the end of the txn frees it.
    let mut r = env.read_txn().unwrap();
    r.reset();
    let held = env.readers();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].txnid, None);
    r.renew().unwrap();
    assert_eq!(env.readers().len(), 1);
    drop(r);
    assert_eq!(env.readers(), vec![]);

    // Two live txns hold two slots; LMDB gets the other two, then all four.
    let (a, b) = (env.read_txn().unwrap(), env.read_txn().unwrap());
    let out = lmdb_takes_slots(dir.path(), 4);
    assert!(
        out.contains("error after 2") && out.contains("took 2"),
        "{out}"
    );
    drop((a, b));
    let out = lmdb_takes_slots(dir.path(), 4);
    assert!(out.contains("took 4") && !out.contains("error"), "{out}");
}

#[test]
fn thread_slot_lives_until_the_thread_exits() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), EnvFlags::EMPTY, 3);
    let me = std::process::id();
    let main_slot = {
        let r = env.read_txn().unwrap();
        let rs = env.readers();
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0].txnid, Some(r.id()));
        rs[0]
    };
    // As LMDB: the thread keeps its (idle) slot after its txn ends.
    assert_eq!(
        env.readers(),
        vec![mdb::ReaderInfo {
            txnid: None,
            ..main_slot
        }]
    );
    let r = env.read_txn().unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let t = env.read_txn().unwrap();
                assert_eq!(t.get(Database::MAIN, b"k").unwrap(), Some(&b"v"[..]));
                assert_eq!(env.readers().len(), 2);
            })
            .join()
            .unwrap();
        }
    });
    // The threads are gone and so are their slots: only ours is left, and
    // LMDB takes the two others.
    let rs = env.readers();
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!((rs[0].pid, rs[0].tid), (me, main_slot.tid));
    let out = lmdb_takes_slots(dir.path(), 3);
    assert!(out.contains("took 2"), "{out}");
    drop(r);
    drop(env);
    let out = lmdb_takes_slots(dir.path(), 3);
    assert!(out.contains("took 3") && !out.contains("error"), "{out}");
}

#[test]
fn closing_an_env_frees_the_slots_of_its_threads() {
    let dir = tempfile::tempdir().unwrap();
    let keep = open(dir.path(), EnvFlags::EMPTY, 8);
    let r = keep.read_txn().unwrap();
    let other = std::sync::Arc::new(EnvOptions::new().open(dir.path()).unwrap());
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (end_tx, end_rx) = std::sync::mpsc::channel::<()>();
    let theirs = other.clone();
    let t = std::thread::spawn(move || {
        drop(theirs.read_txn().unwrap());
        drop(theirs);
        done_tx.send(()).unwrap();
        // This thread outlives the Env: the close must free its slot.
        end_rx.recv().unwrap();
    });
    done_rx.recv().unwrap();
    assert_eq!(keep.readers().len(), 2);
    drop(other);
    assert_eq!(keep.readers().len(), 1);
    end_tx.send(()).unwrap();
    t.join().unwrap();
    assert_eq!(keep.readers().len(), 1);
    assert_eq!(keep.readers()[0].txnid, Some(r.id()));
}

/// A read transaction kept in a thread-local can outlive the thread's slot
/// table while the thread exits (thread-locals are destroyed one by one):
/// its slot must stay published until the transaction itself ends.
#[test]
fn txn_in_a_thread_local_keeps_its_slot_through_thread_exit() {
    use std::sync::atomic::{AtomicU8, Ordering};
    static SEEN: AtomicU8 = AtomicU8::new(0);
    struct Check(&'static Env, Option<RoTxn<'static>>);
    impl Drop for Check {
        fn drop(&mut self) {
            let r = self.1.take().unwrap();
            let published = self.0.readers().iter().any(|s| s.txnid == Some(r.id()));
            SEEN.store(if published { 1 } else { 2 }, Ordering::SeqCst);
        }
    }
    thread_local! {
        static HOLD: std::cell::RefCell<Option<Check>> = const { std::cell::RefCell::new(None) };
    }
    let dir = tempfile::tempdir().unwrap();
    let env: &'static Env = Box::leak(Box::new(open(dir.path(), EnvFlags::EMPTY, 4)));
    std::thread::spawn(move || {
        // HOLD first: destroyed after the slot table (reverse order).
        HOLD.with(|h| {
            let r = env.read_txn().unwrap();
            *h.borrow_mut() = Some(Check(env, Some(r)));
        });
    })
    .join()
    .unwrap();
    assert_eq!(
        SEEN.load(Ordering::SeqCst),
        1,
        "slot freed under a live txn"
    );
}
