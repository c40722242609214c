//! Target `open_wal_corrupt`: the write-ahead log of a crashed environment,
//! with fuzzer-chosen edits, rolled forward at open.
//!
//! The seed (built once per process) is an environment in WAL mode whose
//! data file was copied at a checkpoint and whose log then took six more
//! commits (puts, overflow values, deletes): what a crash after those
//! commits leaves. An input edits the log's segments (bytes, truncation,
//! removal); the environment is opened in WAL mode. A damaged log may be
//! refused (`Corrupted`) or read as shorter; it must never panic, and
//! whatever opens must be exactly the state after one of the commits, in a
//! data file the checker finds whole.

use crate::ScratchDir;
use mdb::{Database, EnvOptions, Txn, WalOptions, WriteFlags};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The crashed environment's files and the states it may come back as.
pub struct WalSeed {
    /// The data file as the checkpoint left it.
    pub data: Vec<u8>,
    /// `wal/` files: name and bytes (segments, the checkpoint file).
    pub files: Vec<(String, Vec<u8>)>,
    /// MAIN after the checkpoint (index 0) and after each later commit.
    pub states: Vec<Model>,
}

fn opts() -> WalOptions {
    let mut w = WalOptions::default();
    w.segment_size = 64 << 10;
    w.checkpointer = false;
    w
}

fn open(dir: &Path) -> mdb::Result<mdb::Env> {
    EnvOptions::new().map_size(16 << 20).wal(opts()).open(dir)
}

/// The seed (built on first use).
pub fn wal_seed() -> &'static WalSeed {
    static SEED: OnceLock<WalSeed> = OnceLock::new();
    SEED.get_or_init(build)
}

fn build() -> WalSeed {
    let dir = ScratchDir::new("walseed");
    let env = open(dir.path()).expect("open seed env");
    let mut model = Model::new();
    let commit = |n: u32, model: &mut Model| {
        let mut w = env.write_txn().unwrap();
        for i in 0..40u32 {
            let k = format!("k{:03}", (i * 7 + n * 13) % 120).into_bytes();
            let len = if (i + n).is_multiple_of(17) {
                3000
            } else {
                20 + (i % 30) as usize
            };
            let v: Vec<u8> = (0..len).map(|j| (j as u32 ^ n ^ i) as u8).collect();
            w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
            model.insert(k, v);
        }
        let k = format!("k{:03}", (n * 31) % 120).into_bytes();
        if model.remove(&k).is_some() {
            w.del(Database::MAIN, &k).unwrap();
        }
        w.commit().unwrap();
    };
    for n in 0..4 {
        commit(n, &mut model);
    }
    env.checkpoint().expect("checkpoint");
    let mut data = std::fs::read(dir.path().join("data.mdb")).unwrap();
    // The next commit marks both meta pages (synced before its record goes
    // to the log): the crash image has the checkpoint's pages, marked.
    let psize = env.page_size();
    for slot in 0..2 {
        let at = slot * psize + mdb::meta::VERSION_OFF as usize;
        data[at..at + 4].copy_from_slice(&mdb::meta::VERSION_WAL.to_le_bytes());
    }
    let mut states = vec![model.clone()];
    for n in 4..10 {
        commit(n, &mut model);
        states.push(model.clone());
    }
    // The files as a crash now would leave them (the data file is the
    // checkpoint's: a crash may lose every unsynced write to it).
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir.path().join("wal")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        files.push((name, std::fs::read(e.path()).unwrap()));
    }
    files.sort();
    drop(env);
    let seed = WalSeed {
        data,
        files,
        states,
    };
    // The pristine seed comes back whole.
    assert_eq!(run(&seed, &[]), Some(seed.states.len() - 1));
    seed
}

/// How far a segment holds records: up to its last non-zero byte.
fn used(b: &[u8]) -> usize {
    b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1)
}

/// Apply edits of 5 input bytes each `[file, o0, o1, mode, val]` to the
/// log's files: `mode` bits 3-5 all set remove the file; else bits 0-2
/// pick xor `val` (never a no-op), set a byte, set a LE u16, or (all set)
/// cut the file at the offset; the offset falls within the file's used
/// bytes.
fn apply(files: &mut Vec<(String, Vec<u8>)>, data: &[u8]) {
    for c in data.chunks_exact(5).take(32) {
        if files.is_empty() {
            return;
        }
        let f = c[0] as usize % files.len();
        let (mode, val) = (c[3], c[4]);
        if mode & 8 != 0 && mode & 0x30 == 0x30 {
            files.remove(f);
            continue;
        }
        let b = &mut files[f].1;
        let span = used(b).max(1).min(b.len());
        if span == 0 {
            continue;
        }
        let at = (c[1] as usize | (c[2] as usize) << 8) % span;
        match mode & 7 {
            7 => b.truncate(at),
            0 | 4 => b[at] ^= if val == 0 { 0x80 } else { val },
            1 | 5 => b[at] = val,
            _ => {
                for (i, x) in (val as u16).to_le_bytes().iter().enumerate() {
                    if let Some(y) = b.get_mut(at + i) {
                        *y = *x;
                    }
                }
            }
        }
    }
}

/// Open the seed with the log edited as `data` says. `Some(k)`: it opened
/// as the state after commit `k` of the seed; `None`: it was refused.
/// Panics (the bug this target looks for) if it opened as anything else.
fn run(seed: &WalSeed, data: &[u8]) -> Option<usize> {
    let mut files = seed.files.clone();
    apply(&mut files, data);
    let dir = ScratchDir::new("wal");
    std::fs::write(dir.path().join("data.mdb"), &seed.data).unwrap();
    std::fs::create_dir(dir.path().join("wal")).unwrap();
    for (name, b) in &files {
        std::fs::write(dir.path().join("wal").join(name), b).unwrap();
    }
    let env = open(dir.path()).ok()?;
    let mut got = Model::new();
    {
        let r = env.read_txn().ok()?;
        let mut c = r.cursor(Database::MAIN).ok()?;
        let mut item = c.first();
        while let Ok(Some((k, v))) = item {
            got.insert(k.to_vec(), v.to_vec());
            item = c.next();
        }
        item.expect("a rolled-forward file reads without errors");
    }
    drop(env);
    let k = seed
        .states
        .iter()
        .position(|s| *s == got)
        .expect("the log rolled forward to a state no commit made");
    let rep = mdb::check::check_file(&dir.path().join("data.mdb")).unwrap();
    assert!(
        rep.is_ok(),
        "rolled forward into a damaged file: {:?}",
        rep.problems
    );
    Some(k)
}

/// Target `open_wal_corrupt` (see the module documentation).
pub fn open_wal_corrupt(data: &[u8]) {
    run(wal_seed(), data);
}
