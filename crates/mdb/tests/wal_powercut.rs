//! Power cuts in WAL mode, simulated through the I/O seam.
//!
//! A recording run of a fixed workload (commits, checkpoints, the close)
//! numbers every write and sync the engine announces. Then, for every step
//! `i`, the workload runs again in a fresh directory with the power cut at
//! `i`: step `i` fails (or, for a write, is torn at a 512-byte boundary)
//! and every later step fails. Because `on_io` is asked before a step runs,
//! the injector reads the bytes each write is about to overwrite, so it
//! knows, per file, the writes since that file's last sync and what they
//! replaced. A crash image is the directory as the cut left it with those
//! unsynced writes dropped, kept, kept in some 512-byte sectors only
//! (per sector, any prefix of the writes that touched it), or kept in the
//! data file only. A lost write leaves the old bytes, as a disk does. One
//! more run is cut past the last step (after the close).
//!
//! Opened again (in WAL mode, or outside it: both roll the log forward),
//! every image must hold exactly the first `k` transactions, for a `k` no
//! smaller than the commits acknowledged before the cut and no larger than
//! those attempted; the page checker must find nothing; and the
//! environment must go on (one more commit, reopened, still right).
//!
//! Metadata steps (creating, renaming, retiring segments: `LogPrepare`,
//! `LogRetire`) are taken as durable once announced, as the engine syncs
//! them itself.
//!
//! Most pages of the workload's records are patches against pages of an
//! earlier snapshot, which replay reads from the data file: a cut at any
//! step of a commit or a checkpoint also checks that those bases are
//! still there (the hold, see `power_cuts`).
//!
//! Three durability modes run the workload. Durable (the default): a
//! commit is acknowledged when it returns. Relaxed (`sync_every`, here an
//! hour, so that only the workload's calls sync): a commit returns once
//! appended and acknowledges nothing; `Env::sync`, a checkpoint, or the
//! close acknowledge every commit made before them. NO_SYNC with
//! WRITE_MAP (`slapadd -q`'s flags) is acknowledged the same way, with
//! `Env::sync(true)`. Either way recovery must give exactly a prefix of
//! the commits that includes every acknowledged one, with the page
//! checker clean.

use mdb::io::{FaultInjector, IoAction, IoOp};
use mdb::meta::{Meta, META_LEN, VERSION, VERSION_OFF};
use mdb::{check, Database, Env, EnvFlags, EnvOptions, Txn, WalOptions, WriteFlags};
use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Transactions of the workload.
const TXNS: u64 = 25;
/// A checkpoint follows the commit of these transactions.
const CHECKPOINT_AFTER: [u64; 3] = [5, 12, 19];
/// This transaction's record is larger than a segment.
const BIG_TXN: u64 = 9;
/// This one deletes that large value (its pages, written before a
/// checkpoint, go to the free list), and this one writes another (which
/// needs as many pages in a row). In relaxed mode no sync comes between
/// them (see `SYNC_EVERY`): the pages freed must not be reused before the
/// delete is durable, as a crash brings the first value back.
const BIG_DEL: u64 = 16;
const BIG_AGAIN: u64 = 18;
const SECTOR: u64 = 512;
const MAP_SIZE: usize = 64 << 20;
/// In relaxed mode, `Env::sync` follows the commit of every transaction
/// `n` with `n % SYNC_EVERY == SYNC_EVERY - 1` (and no checkpoint).
const SYNC_EVERY: u64 = 4;

/// How many crash images a run of [`power_cuts`] checks (both modes share
/// the time a CI run may spend on them).
struct Plan {
    /// What becomes of the unsynced writes, for each cut.
    fates: &'static [Fate],
    /// One image in this many is opened outside WAL mode (which costs
    /// more: that open makes a log segment of the default size).
    plain_every: u64,
    /// For one image in this many, the power is cut again at every step
    /// of its recovery ...
    recovery_cuts_every: u64,
    /// ... in WAL mode, but for this image (a cut mid-workload, with
    /// records to replay) outside it: that costs more (see `plain_every`).
    plain_recovery_cuts: u64,
}

fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// When a commit is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// When it returns.
    Durable,
    /// When a later `Env::sync`, checkpoint or close returns.
    Relaxed,
    /// The same, under NO_SYNC and WRITE_MAP (`slapadd -q`'s flags).
    NoSyncMap,
}

impl Mode {
    /// A commit is acknowledged by a later call, not when it returns.
    fn relaxed(self) -> bool {
        self != Mode::Durable
    }

    fn flags(self) -> EnvFlags {
        match self {
            Mode::NoSyncMap => EnvFlags::NO_SYNC | EnvFlags::WRITE_MAP,
            _ => EnvFlags::EMPTY,
        }
    }
}

fn wal_opts(mode: Mode) -> WalOptions {
    let mut w = WalOptions::default();
    w.segment_size = 64 << 10;
    w.checkpointer = false;
    if mode.relaxed() {
        // Only the workload's calls sync: the flusher waits an hour (under
        // NO_SYNC too, whose own period is 10 ms: the recording run's op
        // sequence then does not depend on timing).
        w.sync_every = Some(Duration::from_secs(3600));
        // Moving to the next segment syncs the last: with a few records
        // to a segment, several commits wait for a sync.
        w.segment_size = 256 << 10;
    }
    w
}

/// Scratch directories on tmpfs when there is one: the crash images are
/// built by hand, so real syncs only cost time.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("mdb-powercut")
            .tempdir_in(shm)
        {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

enum Step {
    Put(Vec<u8>, Vec<u8>),
    Del(Vec<u8>),
}

/// Transaction `n` on top of `model`: a few puts (some values overflow
/// pages, one is larger than a log segment) and deletes of present keys.
fn txn_steps(n: u64, model: &Model) -> Vec<Step> {
    let mut next = xorshift(0x9e37_79b9 ^ n.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    let mut steps = Vec::new();
    let mut keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    for _ in 0..2 + next() % 4 {
        let k = format!("k{:04}", next() % 150).into_bytes();
        let len = [12, 300, 1500, 6000, 11000][(next() % 5) as usize];
        let v: Vec<u8> = (0..len).map(|i| (n as usize * 31 + i) as u8).collect();
        if !keys.contains(&k) {
            keys.push(k.clone());
        }
        steps.push(Step::Put(k, v));
    }
    if n == BIG_TXN {
        let v: Vec<u8> = (0..90_000).map(|i| (i % 251) as u8).collect();
        steps.push(Step::Put(b"big".to_vec(), v));
    }
    if n == BIG_DEL && keys.iter().any(|k| k == b"big") {
        keys.retain(|k| k != b"big");
        steps.push(Step::Del(b"big".to_vec()));
    }
    if n == BIG_AGAIN {
        let v: Vec<u8> = (0..90_000).map(|i| (i % 241) as u8).collect();
        steps.push(Step::Put(b"big2".to_vec(), v));
    }
    for _ in 0..next() % 3 {
        if keys.is_empty() {
            break;
        }
        let k = keys.remove((next() % keys.len() as u64) as usize);
        steps.push(Step::Del(k));
    }
    steps
}

fn apply_model(model: &mut Model, steps: &[Step]) {
    for s in steps {
        match s {
            Step::Put(k, v) => {
                model.insert(k.clone(), v.clone());
            }
            Step::Del(k) => {
                model.remove(k);
            }
        }
    }
}

/// `models[k]`: the contents after the first `k` transactions (one more
/// than the workload has, for the commit after recovery).
fn models() -> Vec<Model> {
    let mut v = vec![Model::new()];
    for n in 0..=TXNS {
        let mut m = v[n as usize].clone();
        let steps = txn_steps(n, &m);
        apply_model(&mut m, &steps);
        v.push(m);
    }
    v
}

/// Run transaction `n` (on top of `base`, which the environment holds).
fn commit_txn(env: &Env, n: u64, base: &Model) -> mdb::Result<()> {
    let mut w = env.write_txn()?;
    for s in txn_steps(n, base) {
        match s {
            Step::Put(k, v) => w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY)?,
            Step::Del(k) => {
                if !w.del(Database::MAIN, &k)? {
                    // Not what `base` holds.
                    return Err(mdb::ErrorKind::NotFound.into());
                }
            }
        }
    }
    w.commit()
}

fn contents(env: &Env) -> mdb::Result<Model> {
    let r = env.read_txn()?;
    let mut out = Model::new();
    for item in r.cursor(Database::MAIN)?.iter() {
        let (k, v) = item?;
        out.insert(k.to_vec(), v.to_vec());
    }
    Ok(out)
}

/// What happens to the step the power cut falls on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    Fail,
    /// Only the first `n` bytes reach the file.
    Tear(usize),
}

/// A write not yet covered by a sync of its file: where, and the bytes it
/// replaced (zeros past the end of the file then).
struct Pending {
    off: u64,
    old: Vec<u8>,
    old_len: u64,
}

#[derive(Default)]
struct State {
    ops: Vec<IoOp>,
    /// Log syncs the engine's own threads took (its flusher's).
    background_syncs: usize,
    /// Unsynced writes by file (relative to the environment directory).
    pending: BTreeMap<PathBuf, Vec<Pending>>,
}

/// Records every step and its unsynced writes; cuts the power at a step.
struct PowerCut {
    dir: PathBuf,
    cut: Option<(usize, Cut)>,
    st: Mutex<State>,
}

fn segment_name(seq: u64) -> PathBuf {
    Path::new("wal").join(format!("{seq:016x}.wal"))
}

/// The file, offset and length a write step changes.
fn written(op: IoOp) -> Option<(PathBuf, u64, usize)> {
    match op {
        IoOp::WritePages { offset, len } | IoOp::WriteMeta { offset, len } => {
            Some((PathBuf::from("data.mdb"), offset, len))
        }
        IoOp::LogWrite { seq, offset, len } => Some((segment_name(seq), offset, len)),
        IoOp::CheckpointWrite { offset, len } => {
            Some((Path::new("wal").join("checkpoint"), offset, len))
        }
        _ => None,
    }
}

/// The file a step makes durable.
fn synced(op: IoOp) -> Option<PathBuf> {
    match op {
        IoOp::SyncData => Some(PathBuf::from("data.mdb")),
        IoOp::LogSync { seq } | IoOp::LogPrepare { seq, .. } | IoOp::LogRetire { seq } => {
            Some(segment_name(seq))
        }
        IoOp::CheckpointSync => Some(Path::new("wal").join("checkpoint")),
        _ => None,
    }
}

/// The bytes of `path` at `off..off + len` (zeros past its end), and its
/// length.
fn read_region(path: &Path, off: u64, len: usize) -> (Vec<u8>, u64) {
    let mut old = vec![0u8; len];
    let Ok(f) = std::fs::File::open(path) else {
        return (old, 0);
    };
    let flen = f.metadata().unwrap().len();
    let have = flen.saturating_sub(off).min(len as u64) as usize;
    f.read_exact_at(&mut old[..have], off).unwrap();
    (old, flen)
}

impl PowerCut {
    fn new(dir: &Path, cut: Option<(usize, Cut)>) -> Arc<PowerCut> {
        Arc::new(PowerCut {
            dir: dir.to_path_buf(),
            cut,
            st: Mutex::default(),
        })
    }

    /// Whether the power was cut (some step failed or was torn).
    fn was_cut(&self) -> bool {
        self.cut
            .is_some_and(|(at, _)| self.st.lock().unwrap().ops.len() > at)
    }
}

impl FaultInjector for PowerCut {
    fn on_io(&self, op: IoOp) -> IoAction {
        let mut st = self.st.lock().unwrap();
        let i = st.ops.len();
        st.ops.push(op);
        let thread = std::thread::current();
        if matches!(op, IoOp::LogSync { .. })
            && thread.name().is_some_and(|n| n.starts_with("mdb-"))
        {
            st.background_syncs += 1;
        }
        let act = match self.cut {
            Some((at, _)) if i > at => return IoAction::Fail(libc::EIO),
            Some((at, Cut::Fail)) if i == at => return IoAction::Fail(libc::EIO),
            Some((at, Cut::Tear(n))) if i == at => IoAction::Tear(n),
            _ => IoAction::Proceed,
        };
        if let Some((rel, off, len)) = written(op) {
            let (old, old_len) = read_region(&self.dir.join(&rel), off, len);
            st.pending
                .entry(rel)
                .or_default()
                .push(Pending { off, old, old_len });
        } else if let (IoAction::Proceed, Some(rel)) = (act, synced(op)) {
            st.pending.remove(&rel);
        }
        act
    }
}

/// What became of the acknowledged and attempted transactions of a run.
struct Outcome {
    /// Whether creating the environment got done.
    opened: bool,
    /// Transactions acknowledged: durable, their commit returned Ok;
    /// relaxed, an `Env::sync` or checkpoint after their commit did (or
    /// the close went through uncut).
    acked: u64,
    /// Transactions whose commit was called.
    attempted: u64,
    /// A commit of relaxed durability that this environment's readers did
    /// not see at once.
    unseen: Option<String>,
    /// Pages the workload's records told as patches (bases read from the
    /// data file at replay), and the pages it reused.
    patched: u64,
    /// Pages written and freed between two checkpoints that a commit
    /// reused before the second (`young_reused`).
    young: u64,
}

/// The workload: open, commit `TXNS` transactions with checkpoints between
/// (and, relaxed, syncs), close. Stops at the first error (the power is
/// out).
fn workload(dir: &Path, mode: Mode, fault: Arc<PowerCut>, models: &[Model]) -> Outcome {
    let mut out = Outcome {
        opened: false,
        acked: 0,
        attempted: 0,
        unseen: None,
        patched: 0,
        young: 0,
    };
    let Ok(env) = EnvOptions::new()
        .map_size(MAP_SIZE)
        .flags(mode.flags())
        .wal(wal_opts(mode))
        .fault_injector(fault.clone())
        .open(dir)
    else {
        return out;
    };
    out.opened = true;
    for n in 0..TXNS {
        out.attempted = n + 1;
        if commit_txn(&env, n, &models[n as usize]).is_err() {
            return out;
        }
        if n == 0 && mode.relaxed() && fault.cut.is_none() {
            // Not a time assertion: in the recording run, a pause that
            // gives a flusher syncing on a timer shorter than the hour
            // asked time to; `power_cuts` checks none did.
            std::thread::sleep(Duration::from_millis(50));
        }
        match mode {
            Mode::Durable => out.acked = n + 1,
            Mode::Relaxed | Mode::NoSyncMap => {
                // Not durable yet, but visible to this environment's
                // readers at once.
                match contents(&env) {
                    Ok(got) if got == models[n as usize + 1] => {}
                    Ok(got) => {
                        let near = models.iter().position(|m| *m == got);
                        out.unseen.get_or_insert(format!(
                            "after the commit of transaction {n}, a reader sees prefix {near:?}"
                        ));
                    }
                    Err(e) => {
                        out.unseen
                            .get_or_insert(format!("read after commit {n}: {e:?}"));
                    }
                }
            }
        }
        if CHECKPOINT_AFTER.contains(&n) {
            if env.checkpoint().is_err() {
                return out;
            }
            out.acked = n + 1;
        } else if mode.relaxed() && n % SYNC_EVERY == SYNC_EVERY - 1 {
            // Under NO_SYNC, LMDB's `mdb_env_sync` syncs only when forced.
            if env.sync(mode == Mode::NoSyncMap).is_err() {
                return out;
            }
            out.acked = n + 1;
        }
    }
    out.patched = env.wal_info().map_or(0, |i| i.patched_pages);
    out.young = env.wal_info().map_or(0, |i| i.young_reused);
    // Dropping closes with a last checkpoint, which (relaxed) makes the
    // last commits durable.
    drop(env);
    if !fault.was_cut() {
        out.acked = out.attempted;
    }
    out
}

/// How the unsynced writes of a crash image fare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// All lost.
    Dropped,
    /// All on disk.
    Kept,
    /// Per 512-byte sector, the first few of the writes to it (seeded).
    Sectors(u64),
    /// Those to the data file on disk, those to the log (and its
    /// checkpoint file) lost: nothing orders the writes of two files.
    DataOnly,
}

/// Undo the writes of `pending` (in order) that `fate` loses from `buf`,
/// the file as the cut left it.
fn undo(buf: &mut Vec<u8>, pending: &[Pending], fate: Fate, rnd: &mut impl FnMut() -> u64) {
    let sectors = |p: &Pending| p.off / SECTOR..(p.off + p.old.len() as u64).div_ceil(SECTOR);
    let mut touched: BTreeMap<u64, u64> = BTreeMap::new();
    for p in pending {
        for s in sectors(p) {
            *touched.entry(s).or_default() += 1;
        }
    }
    // How many of the writes to each sector reach the disk.
    let kept: BTreeMap<u64, u64> = touched
        .iter()
        .map(|(&s, &m)| {
            let k = match fate {
                Fate::Dropped => 0,
                Fate::Kept => m,
                Fate::DataOnly => unreachable!("applied per file"),
                Fate::Sectors(_) => rnd() % (m + 1),
            };
            (s, k)
        })
        .collect();
    let mut seen: BTreeMap<u64, u64> = BTreeMap::new();
    let mut lost = Vec::new();
    for (j, p) in pending.iter().enumerate() {
        for s in sectors(p) {
            let r = seen.entry(s).or_default();
            *r += 1;
            if *r > kept[&s] {
                lost.push((j, s));
            }
        }
    }
    // Newest first: each undo restores what the write found.
    for &(j, s) in lost.iter().rev() {
        let p = &pending[j];
        let lo = p.off.max(s * SECTOR);
        let hi = (p.off + p.old.len() as u64)
            .min((s + 1) * SECTOR)
            .min(buf.len() as u64);
        if lo < hi {
            let (a, b) = ((lo - p.off) as usize, (hi - p.off) as usize);
            buf[lo as usize..hi as usize].copy_from_slice(&p.old[a..b]);
        }
    }
    if fate == Fate::Dropped {
        buf.truncate(pending[0].old_len as usize);
    }
}

/// Copy the environment at `src` (not its lock file) to `dst` and apply
/// `fate` to the unsynced writes.
fn crash_image(src: &Path, dst: &Path, pending: &BTreeMap<PathBuf, Vec<Pending>>, fate: Fate) {
    let mut rnd = xorshift(match fate {
        Fate::Sectors(seed) => seed | 1,
        _ => 1,
    });
    for sub in ["", "wal"] {
        let Ok(rd) = std::fs::read_dir(src.join(sub)) else {
            continue;
        };
        std::fs::create_dir_all(dst.join(sub)).unwrap();
        for e in rd {
            let e = e.unwrap();
            let name = e.file_name();
            if e.file_type().unwrap().is_file() && name != "lock.mdb" {
                std::fs::copy(e.path(), dst.join(sub).join(&name)).unwrap();
            }
        }
    }
    for (rel, writes) in pending {
        let path = dst.join(rel);
        let Ok(mut buf) = std::fs::read(&path) else {
            continue; // removed since
        };
        let fate = match fate {
            Fate::DataOnly if rel.starts_with("wal") => Fate::Dropped,
            Fate::DataOnly => Fate::Kept,
            f => f,
        };
        undo(&mut buf, writes, fate, &mut rnd);
        std::fs::write(&path, &buf).unwrap();
    }
}

/// Open the environment at `dir`, in WAL mode (and durability `mode`) if
/// `wal`.
fn open_recovered(dir: &Path, wal: Option<Mode>) -> mdb::Result<Env> {
    open_faulty(dir, wal, None)
}

fn open_faulty(dir: &Path, wal: Option<Mode>, fault: Option<Arc<PowerCut>>) -> mdb::Result<Env> {
    let mut o = EnvOptions::new();
    o.map_size(MAP_SIZE);
    if let Some(mode) = wal {
        o.wal(wal_opts(mode)).flags(mode.flags());
    }
    if let Some(f) = fault {
        o.fault_injector(f);
    }
    o.open(dir)
}

fn check_clean(dir: &Path) -> Result<(), String> {
    let rep = check::check_file(&dir.join("data.mdb")).map_err(|e| format!("check: {e:?}"))?;
    if rep.is_ok() {
        Ok(())
    } else {
        Err(format!("page checker: {:?}", rep.problems))
    }
}

/// Recover the image at `dir` (opened in WAL mode or not) and check it;
/// returns the number of transactions it holds, `None` for a data file
/// left unopenable by a cut while it was being created. Then it goes on in
/// WAL mode `mode`.
fn recover(
    dir: &Path,
    mode: Mode,
    wal: bool,
    out: &Outcome,
    models: &[Model],
) -> Result<Option<u64>, String> {
    let wal = wal.then_some(mode);
    let env = match open_recovered(dir, wal) {
        Ok(env) => env,
        // Like LMDB's, a new data file's meta pages are written in one
        // go: torn, or partly lost before their sync, they read as no
        // database (nothing was acknowledged yet).
        Err(e) if e == mdb::ErrorKind::Invalid && !out.opened => return Ok(None),
        Err(e) => return Err(format!("open (wal {wal:?}): {e:?}")),
    };
    let got = contents(&env).map_err(|e| format!("read: {e:?}"))?;
    let k = (out.acked..=out.attempted)
        .find(|&k| models[k as usize] == got)
        .ok_or_else(|| {
            let near = (0..models.len()).find(|&k| models[k] == got);
            format!(
                "contents ({} keys) are no prefix in {}..={} (equal to prefix {near:?})",
                got.len(),
                out.acked,
                out.attempted
            )
        })?;
    drop(env);
    check_clean(dir)?;
    // It goes on: one more commit, reopened.
    let env = open_recovered(dir, Some(mode)).map_err(|e| format!("reopen: {e:?}"))?;
    commit_txn(&env, k, &models[k as usize]).map_err(|e| format!("commit after: {e:?}"))?;
    drop(env);
    let env = open_recovered(dir, Some(mode)).map_err(|e| format!("reopen 2: {e:?}"))?;
    let got = contents(&env).map_err(|e| format!("read 2: {e:?}"))?;
    if got != models[k as usize + 1] {
        return Err(format!("after one more commit: not prefix {}", k + 1));
    }
    drop(env);
    check_clean(dir)?;
    Ok(Some(k))
}

/// Cut the power again at every step of recovering `img` (opening it in
/// WAL mode or not, reading, closing), and recover each such image: a
/// crash while recovering must lose nothing either. Returns the number of
/// images checked.
fn recovery_cuts(
    img: &Path,
    mode: Mode,
    wal: bool,
    out: &Outcome,
    models: &[Model],
    failures: &mut Vec<String>,
    what: &str,
) -> u64 {
    let none = BTreeMap::new();
    let once = |dir: &Path, fault: Arc<PowerCut>| {
        if let Ok(env) = open_faulty(dir, wal.then_some(mode), Some(fault)) {
            let _ = contents(&env);
        }
    };
    let first = scratch();
    crash_image(img, first.path(), &none, Fate::Kept);
    let rec = PowerCut::new(first.path(), None);
    once(first.path(), rec.clone());
    let ops = std::mem::take(&mut rec.st.lock().unwrap().ops);
    let mut images = 0;
    for (j, &op) in ops.iter().enumerate() {
        let run = scratch();
        crash_image(img, run.path(), &none, Fate::Kept);
        let fault = PowerCut::new(run.path(), Some((j, Cut::Fail)));
        once(run.path(), fault.clone());
        let st = std::mem::take(&mut *fault.st.lock().unwrap());
        assert_eq!(st.ops[..=j], ops[..=j], "{what}: the recoveries differ");
        for fate in [Fate::Dropped, Fate::Sectors(0x9e37_79b9)] {
            images += 1;
            let again = scratch();
            crash_image(run.path(), again.path(), &st.pending, fate);
            if let Err(e) = recover(again.path(), mode, true, out, models) {
                failures.push(format!(
                    "{what}, recovery (wal {wal}) cut at step {j} {op:?}, {fate:?}: {e}"
                ));
            }
        }
    }
    images
}

/// What stock LMDB would see: unless a meta page of the image carries the
/// WAL version (which LMDB 0.9 refuses), the data file alone, without
/// the log, must hold every acknowledged commit. Returns the number of
/// transactions it holds, `None` when LMDB would refuse the file.
fn stock_view(img: &Path, out: &Outcome, models: &[Model]) -> Result<Option<u64>, String> {
    let data = std::fs::read(img.join("data.mdb")).unwrap();
    let Some(psize) = data
        .get(..META_LEN)
        .and_then(|b| Meta::decode(b).ok())
        .map(|m| m.psize() as usize)
    else {
        return Ok(None);
    };
    let version = |page: usize| {
        let at = page * psize + VERSION_OFF as usize;
        data.get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    if version(0) != Some(VERSION) || version(1) != Some(VERSION) {
        return Ok(None);
    }
    let dir = scratch();
    std::fs::write(dir.path().join("data.mdb"), &data).unwrap();
    let env = open_recovered(dir.path(), None).map_err(|e| format!("stock open: {e:?}"))?;
    let got = contents(&env).map_err(|e| format!("stock read: {e:?}"))?;
    let k = (out.acked..=out.attempted)
        .find(|&k| models[k as usize] == got)
        .ok_or_else(|| {
            let near = (0..models.len()).find(|&k| models[k] == got);
            format!(
                "a plain data file without its log is no prefix in {}..={} (prefix {near:?})",
                out.acked, out.attempted
            )
        })?;
    drop(env);
    check_clean(dir.path())?;
    Ok(Some(k))
}

/// The ways to cut the power at step `op`.
fn cuts(op: IoOp) -> Vec<Cut> {
    let mut v = vec![Cut::Fail];
    if let Some((_, off, len)) = written(op) {
        // Torn at the first and the middle sector boundary inside it.
        let first = (off / SECTOR + 1) * SECTOR - off;
        let mid = ((off + len as u64 / 2) / SECTOR * SECTOR).saturating_sub(off);
        for n in [first, mid] {
            let c = Cut::Tear(n as usize);
            if n > 0 && n < len as u64 && !v.contains(&c) {
                v.push(c);
            }
        }
    } else if matches!(op, IoOp::LogPrepare { .. }) {
        // A segment half made (zero-filled in part, or renamed only).
        v.push(Cut::Tear(4096));
    }
    v
}

/// Cut the power at every step of the workload in `mode` (and once past
/// its end), and recover the images that leaves with each of `fates`.
fn power_cuts(mode: Mode, plan: Plan) {
    let models = models();
    assert!(models[BIG_DEL as usize].contains_key(&b"big"[..]));
    assert!(!models[BIG_DEL as usize + 1].contains_key(&b"big"[..]));
    // The recording run: every step, uncut.
    let dir = scratch();
    let rec = PowerCut::new(dir.path(), None);
    let full = workload(dir.path(), mode, rec.clone(), &models);
    assert_eq!(full.acked, TXNS);
    assert_eq!(full.unseen, None);
    // Most pages are logged as patches: replay reads their bases from the
    // data file, which the hold keeps (no page freed after the last
    // checkpoint reused before the next, `txn/write.rs`). Between the
    // workload's checkpoints pages are freed and others reused: with the
    // hold taken out, most images fail (1,185 of 1,503 durable, 528 of
    // 1,173 relaxed: a base overwritten, the page replay builds wrong).
    assert!(full.patched >= 2 * TXNS, "{} pages patched", full.patched);
    // Pages written after a checkpoint and freed before the next are
    // reused before it (`young_reused`): replay rebuilds them from their
    // own records before reading them, so every cut below between two
    // checkpoints also checks that.
    assert!(full.young >= 5, "{} young pages reused", full.young);
    let ops = std::mem::take(&mut rec.st.lock().unwrap().ops);
    drop(dir);
    if mode.relaxed() {
        // Only the workload's calls (and segment switches) sync the log.
        assert_eq!(rec.st.lock().unwrap().background_syncs, 0);
    }
    let count = |f: fn(&IoOp) -> bool| ops.iter().filter(|o| f(o)).count();
    assert!(count(|o| matches!(o, IoOp::LogPrepare { .. })) >= 3);
    assert!(count(|o| matches!(o, IoOp::LogRetire { .. })) >= 2);
    assert!(count(|o| matches!(o, IoOp::CheckpointWrite { .. })) >= 4);

    let (mut images, mut failures) = (0u64, Vec::new());
    // How many images held fewer transactions than attempted, and more
    // than acknowledged: both ways must be seen.
    let (mut short, mut long, mut unborn, mut plain_files, mut twice) = (0, 0, 0, 0, 0);
    // Past the last step, the power is cut after the close: every commit
    // must be there, whatever became of writes left unsynced.
    for i in 0..=ops.len() {
        let op = ops.get(i).copied();
        for cut in op.map_or(vec![Cut::Fail], cuts) {
            let run = scratch();
            let fault = PowerCut::new(run.path(), Some((i, cut)));
            let out = workload(run.path(), mode, fault.clone(), &models);
            let st = std::mem::take(&mut *fault.st.lock().unwrap());
            let upto = (i + 1).min(ops.len());
            assert_eq!(st.ops[..upto], ops[..upto], "step {i}: the runs differ");
            if op.is_none() {
                assert_eq!(st.ops.len(), ops.len(), "the uncut run differs");
                assert_eq!(out.acked, TXNS);
            }
            if let Some(e) = &out.unseen {
                failures.push(format!("{mode:?}, step {i} {op:?}, {cut:?}: {e}"));
            }
            for &fate in plan.fates {
                images += 1;
                let img = scratch();
                crash_image(run.path(), img.path(), &st.pending, fate);
                let what = || {
                    format!(
                        "{mode:?}, step {i} {op:?}, {cut:?}, {fate:?}, acked {} attempted {}",
                        out.acked, out.attempted
                    )
                };
                match stock_view(img.path(), &out, &models) {
                    Ok(v) => plain_files += u32::from(v.is_some()),
                    Err(e) => failures.push(format!("{}: {e}", what())),
                }
                // Some images are opened outside WAL mode.
                let wal = images % plan.plain_every != 0;
                if images % plan.recovery_cuts_every == 0 {
                    let w = what();
                    let rwal = images != plan.plain_recovery_cuts;
                    twice +=
                        recovery_cuts(img.path(), mode, rwal, &out, &models, &mut failures, &w);
                }
                match recover(img.path(), mode, wal, &out, &models) {
                    Ok(None) => unborn += 1,
                    Ok(Some(k)) => {
                        short += u32::from(k < out.attempted);
                        long += u32::from(k > out.acked);
                    }
                    Err(e) => failures.push(format!("{}, wal {wal}: {e}", what())),
                }
            }
        }
    }
    eprintln!(
        "{mode:?}: {} steps ({} pages patched, {} young pages reused), {images} crash images: {short} short of the attempted, \
         {long} past the acknowledged, {unborn} cut while creating the data file, \
         {plain_files} plain data files checked without their log; \
         {twice} images of a cut while recovering",
        ops.len(),
        full.patched,
        full.young
    );
    assert!(
        failures.is_empty(),
        "{mode:?}: {} of {images} images failed:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
    assert!(short > 10 && long > 10, "short {short}, long {long}");
    assert!(unborn < 20, "{unborn} images unopenable");
    assert!(plain_files >= 20, "{plain_files} plain data files");
    assert!(twice > 0, "no cut while recovering");
}

#[test]
fn power_cuts_lose_no_acknowledged_commit() {
    power_cuts(
        Mode::Durable,
        Plan {
            fates: &[Fate::Dropped, Fate::Kept, Fate::Sectors(0x51ed_2701)],
            plain_every: 11,
            recovery_cuts_every: 53,
            plain_recovery_cuts: 15 * 53,
        },
    );
}

#[test]
fn power_cuts_lose_no_synced_commit_of_relaxed_durability() {
    // Fewer images: recovery is the same code as in durable mode.
    power_cuts(
        Mode::Relaxed,
        Plan {
            fates: &[Fate::Dropped, Fate::DataOnly, Fate::Sectors(0x2545_f491)],
            plain_every: 17,
            recovery_cuts_every: 61,
            plain_recovery_cuts: 10 * 61,
        },
    );
}

/// NO_SYNC with WRITE_MAP, as `slapadd -q` opens: a cut anywhere keeps
/// exactly a prefix holding every commit an `Env::sync(true)`, a
/// checkpoint or the close acknowledged.
#[test]
fn power_cuts_lose_no_synced_commit_under_no_sync_and_writemap() {
    power_cuts(
        Mode::NoSyncMap,
        Plan {
            fates: &[Fate::Dropped, Fate::DataOnly, Fate::Sectors(0x3c6e_f372)],
            plain_every: 17,
            recovery_cuts_every: 61,
            plain_recovery_cuts: 10 * 61,
        },
    );
}
