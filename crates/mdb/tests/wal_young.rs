//! Young pages in WAL mode (`young.rs`): a page written after the
//! last checkpoint and freed before the next is reused at once (readers
//! allowing), since replay rebuilds it from its own records before any
//! record reads it as a base; pages of the checkpoint's snapshot freed
//! since stay held. Small commits rewriting the same pages then keep the
//! file's size, and a crash before the next checkpoint still replays to
//! exactly the commits made.

mod common;

use mdb::{check, Database, Env, EnvOptions, WalOptions, WriteFlags};
use std::collections::BTreeMap;
use std::path::Path;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(dir: &Path, wal: bool) -> Env {
    let mut o = EnvOptions::new();
    o.map_size(256 << 20);
    if wal {
        let mut w = WalOptions::default();
        w.segment_size = 1 << 20;
        // Only the test's own checkpoints (and the committing thread's,
        // past the bound on held pages, which these workloads stay under).
        w.checkpointer = false;
        o.wal(w);
    }
    o.open(dir).unwrap()
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// 3,000 keys of 200-byte values in three commits, then (WAL mode) a
/// checkpoint.
fn load(env: &Env, model: &mut Model) {
    for chunk in 0..3u64 {
        let mut w = env.write_txn().unwrap();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            let v = vec![(i % 251) as u8; 200];
            w.put(Database::MAIN, &key(i), &v, WriteFlags::EMPTY)
                .unwrap();
            model.insert(key(i), v);
        }
        w.commit().unwrap();
    }
    if env.wal_info().is_some() {
        env.checkpoint().unwrap();
    }
}

/// `n` small commits on `env`: each overwrites, deletes or inserts a few
/// keys among the first 200 (the same few dozen leaves, rewritten again
/// and again).
fn churn(env: &Env, model: &mut Model, n: u64, seed: u64) {
    let mut rnd = xorshift(seed | 1);
    for t in 0..n {
        let mut w = env.write_txn().unwrap();
        for _ in 0..1 + rnd() % 3 {
            let k = key(rnd() % 200);
            if rnd().is_multiple_of(5) && model.contains_key(&k) {
                assert!(w.del(Database::MAIN, &k).unwrap());
                model.remove(&k);
            } else {
                let v = vec![(t % 251) as u8; 100 + (rnd() % 300) as usize];
                w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
                model.insert(k, v);
            }
        }
        w.commit().unwrap();
    }
}

fn contents(env: &Env) -> Model {
    common::main_contents(&env.read_txn().unwrap())
}

fn assert_clean(dir: &Path) {
    let rep = check::check_file(&dir.join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "page checker: {:?}", rep.problems);
}

#[test]
fn pages_written_after_the_checkpoint_are_reused_before_the_next() {
    let (dir, plain) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut model = Model::new();
    let env = open(dir.path(), true);
    load(&env, &mut model);
    let after_load = env.info().unwrap().last_pgno;
    churn(&env, &mut model, 600, 7);
    let info = env.wal_info().unwrap();
    let grown = env.info().unwrap().last_pgno - after_load;
    // The same commits in the default mode, for scale.
    let (penv, mut pmodel) = (open(plain.path(), false), Model::new());
    load(&penv, &mut pmodel);
    let p_after_load = penv.info().unwrap().last_pgno;
    churn(&penv, &mut pmodel, 600, 7);
    let p_grown = penv.info().unwrap().last_pgno - p_after_load;
    assert_eq!(pmodel, model);
    // No checkpoint ran since the load's: every page freed since was
    // held before young pages were reused (about 3 a commit: 1,700 more
    // pages, 7 MB on a 3 MB file).
    assert!(
        grown <= p_grown + 64,
        "WAL mode grew by {grown} pages, the default mode by {p_grown} ({} young pages reused)",
        info.young_reused
    );
    assert!(info.young_reused > 1000, "{info:?}");
    assert_eq!(contents(&env), model);
    drop(env);
    assert_clean(dir.path());
    let env = open(dir.path(), true);
    assert_eq!(contents(&env), model);
}

/// Copy the environment (not its lock file) into `dst`, with `data` as
/// its data file.
fn image(src: &Path, dst: &Path, data: &[u8]) {
    std::fs::write(dst.join("data.mdb"), data).unwrap();
    std::fs::create_dir_all(dst.join("wal")).unwrap();
    for e in std::fs::read_dir(src.join("wal")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), dst.join("wal").join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_crash_after_young_pages_were_reused_replays_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let env = open(dir.path(), true);
    load(&env, &mut model);
    churn(&env, &mut model, 40, 3);
    // A checkpoint between: the pages young for the first are in its
    // snapshot, so held for the second.
    env.checkpoint().unwrap();
    let at_ckpt = std::fs::read(dir.path().join("data.mdb")).unwrap();
    let reused = env.wal_info().unwrap().young_reused;
    churn(&env, &mut model, 300, 11);
    assert!(
        env.wal_info().unwrap().young_reused > reused + 200,
        "{:?}",
        env.wal_info()
    );
    // The crash: every commit since the checkpoint is in the log, synced;
    // the data file's pages written since may each be on disk or not.
    let now = std::fs::read(dir.path().join("data.mdb")).unwrap();
    let ps = 4096;
    let mut rnd = xorshift(0x2545_f491);
    for fate in 0..6 {
        let mut data = now.clone();
        for (pg, old) in at_ckpt.chunks(ps).enumerate().skip(2) {
            let keep_new = match fate {
                0 => true,
                1 => false,
                _ => rnd().is_multiple_of(2),
            };
            if !keep_new {
                data[pg * ps..pg * ps + old.len()].copy_from_slice(old);
            }
        }
        for wal in [true, false] {
            let img = tempfile::tempdir().unwrap();
            image(dir.path(), img.path(), &data);
            let env = open(img.path(), wal);
            assert_eq!(contents(&env), model, "fate {fate}, wal {wal}");
            drop(env);
            assert_clean(img.path());
        }
    }
    drop(env);
    assert_clean(dir.path());
}

/// Steps of the background checkpointer (its thread only): 5 fails its
/// data syncs (no checkpoint gets past its first step); 10 holds the next
/// one (the first sync of a checkpoint that has read its meta, and holds
/// no lock) in state 2 until told to go (3); once that checkpoint ends
/// (4), every step fails, so that no later checkpoint repairs the file.
#[derive(Default)]
struct Gate {
    st: std::sync::Mutex<u8>,
    cv: std::sync::Condvar,
}

impl Gate {
    fn set(&self, s: u8) {
        *self.st.lock().unwrap() = s;
        self.cv.notify_all();
    }

    fn get(&self) -> u8 {
        *self.st.lock().unwrap()
    }

    fn wait_for(&self, s: u8) {
        let mut g = self.st.lock().unwrap();
        while *g != s {
            g = self.cv.wait(g).unwrap();
        }
    }
}

impl mdb::io::FaultInjector for Gate {
    fn on_io(&self, op: mdb::io::IoOp) -> mdb::io::IoAction {
        use mdb::io::{IoAction, IoOp};
        if std::thread::current().name() != Some("mdb-checkpointer") {
            return IoAction::Proceed;
        }
        let mut g = self.st.lock().unwrap();
        match (*g, op) {
            (5, IoOp::SyncData) | (4, _) => return IoAction::Fail(libc::EIO),
            (10, IoOp::SyncData) => {
                *g = 2;
                self.cv.notify_all();
                while *g == 2 {
                    g = self.cv.wait(g).unwrap();
                }
            }
            (3, IoOp::CheckpointSync) => {
                *g = 4;
                self.cv.notify_all();
            }
            _ => {}
        }
        IoAction::Proceed
    }
}

#[test]
fn a_checkpoint_covers_no_snapshot_whose_young_pages_were_reused_during_its_sync() {
    let dir = tempfile::tempdir().unwrap();
    let gate = std::sync::Arc::new(Gate::default());
    let mut w = WalOptions::default();
    w.segment_size = 1 << 20;
    // Every commit asks the checkpointer for a checkpoint.
    w.checkpoint_bytes = 1;
    w.checkpoint_interval = std::time::Duration::from_secs(3600);
    let env = EnvOptions::new()
        .map_size(256 << 20)
        .wal(w)
        .fault_injector(gate.clone())
        .open(dir.path())
        .unwrap();
    let mut model = Model::new();
    load(&env, &mut model);
    // Commits with no checkpoint: the pages they write are young.
    gate.set(5);
    churn(&env, &mut model, 100, 5);
    // A checkpoint reads the newest meta, then stops in its sync ...
    gate.set(10);
    let mut seed = 100;
    while gate.get() != 2 {
        churn(&env, &mut model, 1, seed);
        seed += 1;
    }
    // ... while commits free young pages of that snapshot and reuse them.
    let reused = env.wal_info().unwrap().young_reused;
    churn(&env, &mut model, 100, 13);
    assert!(env.wal_info().unwrap().young_reused > reused + 50);
    gate.set(3);
    gate.wait_for(4);
    // The crash: the files as they are (every commit is in the log).
    let img = tempfile::tempdir().unwrap();
    let data = std::fs::read(dir.path().join("data.mdb")).unwrap();
    image(dir.path(), img.path(), &data);
    let back = open(img.path(), true);
    assert_eq!(contents(&back), model);
    drop(back);
    assert_clean(img.path());
    drop(env);
}
