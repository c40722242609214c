//! Fuzz target bodies for the `mdb` engine, as plain functions so that both
//! the cargo-fuzz targets (`fuzz_targets/*.rs`, nightly + libFuzzer) and the
//! stable smoke runner (`tests/smoke.rs`) drive the same code.
//!
//! * [`check_file`]: arbitrary bytes through the structural checker.
//! * [`open_corrupt`]: a small valid data file with fuzzer-chosen byte edits,
//!   opened read-only (NOSUBDIR, NOLOCK) and walked with cursors and gets.
//! * [`ops::run`]: operation sequences on MAIN and a DUPSORT database checked
//!   against a `BTreeMap` model.
//! * [`open_wal_corrupt`]: the write-ahead log of a crashed environment with
//!   edits, rolled forward: refused, or exactly the state of one commit.
//!
//! Every body returns normally for every input; a panic (or a crash) is an
//! engine bug.

use mdb::{Database, Env, EnvFlags, EnvOptions, Txn};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub mod ops;
pub mod seed;
pub mod wal;

pub use wal::open_wal_corrupt;

/// Target `check_file`: the checker must accept any bytes without panicking.
pub fn check_file(data: &[u8]) {
    let rep = mdb::check::check_bytes(data);
    // Use the report so nothing is optimised away, and exercise Display.
    for p in rep.problems.iter().take(4) {
        let _ = p.to_string();
    }
}

/// A scratch directory removed on drop. Lives in `$MDB_FUZZ_TMP`, else
/// `/dev/shm` when present (no disk I/O), else the system temp dir.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Create a fresh, uniquely named directory.
    pub fn new(tag: &str) -> ScratchDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let base = std::env::var_os("MDB_FUZZ_TMP")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let shm = Path::new("/dev/shm");
                if shm.is_dir() {
                    shm.to_path_buf()
                } else {
                    std::env::temp_dir()
                }
            });
        let p = base.join(format!(
            "mdb-fuzz-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create scratch dir");
        ScratchDir(p)
    }
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Most cursor steps taken per database when walking a (possibly corrupt) file.
const WALK_STEPS: usize = 20_000;
/// Keys remembered per database for point lookups.
const WALK_KEYS: usize = 64;
/// Named databases opened per walk.
const WALK_DBS: usize = 32;

/// One edit of the seed file, decoded from 5 input bytes
/// `[o0, o1, o2, mode, val]`: a 24-bit offset, then `mode` picks the region
/// (bits 2-3: whole file / meta fields / page headers / first node bytes,
/// bit 4: which meta page) and the operation (bits 0-1: xor `val` (never a
/// no-op), set byte, set LE u16 = val, set LE u64 = val).
pub fn apply_edits(file: &mut [u8], psize: usize, data: &[u8]) {
    let len = file.len();
    if len == 0 {
        return;
    }
    let npages = (len / psize).max(1);
    for c in data.chunks_exact(5).take(64) {
        let off = c[0] as usize | (c[1] as usize) << 8 | (c[2] as usize) << 16;
        let (mode, val) = (c[3], c[4]);
        let at = match (mode >> 2) & 3 {
            0 => off % len,
            // The meta fields (the first 152 bytes of page 0 or 1).
            1 => (off % 152) + if mode & 0x10 != 0 { psize } else { 0 },
            // A page header.
            2 => ((off >> 4) % npages) * psize + (off & 15),
            // The node-pointer array and first nodes of a page.
            _ => ((off >> 7) % npages) * psize + 16 + (off & 127),
        } % len;
        match mode & 3 {
            0 => file[at] ^= if val == 0 { 0x80 } else { val },
            1 => file[at] = val,
            2 => {
                for (i, b) in (val as u16).to_le_bytes().iter().enumerate() {
                    if at + i < len {
                        file[at + i] = *b;
                    }
                }
            }
            _ => {
                for (i, b) in (val as u64).to_le_bytes().iter().enumerate() {
                    if at + i < len {
                        file[at + i] = *b;
                    }
                }
            }
        }
    }
}

/// Target `open_corrupt`: edit the seed file as `data` says, write it as a
/// NOSUBDIR data file, open it `NO_LOCK | READ_ONLY` and walk every database.
/// Errors are expected; panics are bugs.
pub fn open_corrupt(data: &[u8]) {
    let seed = seed::seed_file();
    let mut file = seed.bytes.clone();
    apply_edits(&mut file, seed.psize, data);
    // The checker on a nearly valid file reaches much deeper than on random bytes.
    check_file(&file);
    let dir = ScratchDir::new("corrupt");
    let path = dir.path().join("data.mdb");
    std::fs::write(&path, &file).expect("write data file");
    let _ = open_and_walk(&path);
}

/// Open `path` (a data file) read-only without a lock file and walk it.
pub fn open_and_walk(path: &Path) -> mdb::Result<()> {
    let mut o = EnvOptions::new();
    // SAFETY: the fuzz targets' files are private scratch files that no
    // other process or Env opens.
    unsafe { o.no_lock() };
    let env = o
        .max_dbs(WALK_DBS as u32)
        .flags(EnvFlags::NO_SUB_DIR | EnvFlags::READ_ONLY)
        .open(path)?;
    walk_env(&env)
}

/// Walk MAIN and every named database of `env`; the first error is returned
/// after everything reachable was visited.
pub fn walk_env(env: &Env) -> mdb::Result<()> {
    let mut first_err = Ok(());
    let mut note = |r: mdb::Result<()>| {
        if first_err.is_ok() {
            if let Err(e) = r {
                first_err = Err(e);
            }
        }
    };
    let _ = env.info();
    let _ = env.stat();
    let r = env.read_txn()?;
    note(walk_db(&r, Database::MAIN));
    // Every MAIN key may name a database.
    let mut names = Vec::new();
    if let Ok(mut c) = r.cursor(Database::MAIN) {
        let mut item = c.first();
        let mut steps = 0;
        while let Ok(Some((k, _))) = item {
            if names.len() >= WALK_DBS || steps >= WALK_STEPS {
                break;
            }
            steps += 1;
            if !k.is_empty() && k.len() <= mdb::MAX_KEY_SIZE {
                names.push(k.to_vec());
            }
            item = c.next();
        }
        if let Err(e) = item {
            note(Err(e));
        }
    }
    for name in names {
        match r.open_db(&name) {
            Ok(db) => note(walk_db(&r, db)),
            Err(e)
                if matches!(
                    e.kind(),
                    mdb::ErrorKind::Incompatible | mdb::ErrorKind::NotFound
                ) => {}
            Err(e) => note(Err(e)),
        }
    }
    // The free database too, through the same cursors.
    note(walk_db(&r, Database::FREE));
    first_err
}

/// Walk one database forwards and backwards, by key and by duplicate, and
/// look up the keys seen. Bounded, whatever the file says.
pub fn walk_db<T: Txn>(r: &T, db: Database) -> mdb::Result<()> {
    let _ = r.stat(db)?;
    let flags = r.db_flags(db)?;
    let dupsort = flags.contains(mdb::DbFlags::DUP_SORT);
    let dupfixed = dupsort && flags.contains(mdb::DbFlags::DUP_FIXED);
    let mut keys: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut res = Ok(());

    // Forwards.
    {
        let mut c = r.cursor(db)?;
        let mut item = c.first();
        let mut steps = 0;
        loop {
            match item {
                Ok(Some((k, v))) => {
                    if keys.len() < WALK_KEYS && keys.last().is_none_or(|l| l.0 != k) {
                        keys.push((k.to_vec(), v.to_vec()));
                    }
                    if dupsort {
                        let _ = c.count();
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    res = Err(e);
                    break;
                }
            }
            steps += 1;
            if steps >= WALK_STEPS {
                break;
            }
            item = c.next();
        }
        let _ = c.get_current();
    }
    // Backwards.
    {
        let mut c = r.cursor(db)?;
        let mut item = c.last();
        let mut steps = 0;
        while let Ok(Some(_)) = item {
            steps += 1;
            if steps >= WALK_STEPS {
                break;
            }
            item = c.prev();
        }
        if let Err(e) = item {
            if res.is_ok() {
                res = Err(e);
            }
        }
    }
    // By key, then by duplicate within each key.
    if dupsort {
        let mut c = r.cursor(db)?;
        let mut item = c.first();
        let mut steps = 0;
        while let Ok(Some(_)) = item {
            steps += 1;
            if steps >= WALK_STEPS {
                break;
            }
            let _ = c.count();
            let _ = c.last_dup();
            let mut d = c.prev_dup();
            let mut n = 0;
            while let Ok(Some(_)) = d {
                n += 1;
                if n >= 64 {
                    break;
                }
                d = c.prev_dup();
            }
            let _ = c.first_dup();
            let mut d = c.next_dup();
            let mut n = 0;
            while let Ok(Some(_)) = d {
                n += 1;
                if n >= 64 {
                    break;
                }
                d = c.next_dup();
            }
            if dupfixed {
                let _ = c.first_dup();
                let _ = c.get_multiple();
                let mut m = 0;
                while let Ok(Some(_)) = c.next_multiple() {
                    m += 1;
                    if m >= 64 {
                        break;
                    }
                }
                let _ = c.prev_multiple();
            }
            item = c.next_nodup();
        }
        let mut c = r.cursor(db)?;
        let mut item = c.last();
        let mut steps = 0;
        while let Ok(Some(_)) = item {
            steps += 1;
            if steps >= WALK_STEPS {
                break;
            }
            item = c.prev_nodup();
        }
    }
    // Point lookups of what was seen, and of near misses.
    for (k, v) in &keys {
        let _ = r.get(db, k);
        let mut c = r.cursor(db)?;
        let _ = c.set_key(k);
        let _ = c.set_range(k);
        let _ = c.next();
        let mut shorter = k.clone();
        shorter.pop();
        if !shorter.is_empty() {
            let _ = c.set_range(&shorter);
            let _ = c.prev();
            let _ = r.get(db, &shorter);
        }
        if dupsort {
            let _ = c.get_both(k, v);
            let _ = c.get_both_range(k, v);
            let _ = c.get_both_range(k, b"");
            let _ = c.next_dup();
        }
    }
    res
}
