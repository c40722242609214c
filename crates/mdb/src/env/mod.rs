//! The environment: data file, map, lock file, and the database registry.

mod sink;
mod wal_open;

use crate::db::{Database, Stat};
use crate::error::{DbLabel, Error, ErrorKind, Misuse, Result};
pub(crate) use crate::format::meta::pick_meta;
use crate::format::meta::{Meta, META_LEN};
use crate::io::{DataFile, FaultInjector};
use crate::lock::ThreadSlots;
use crate::lock::{LockFile, ReaderInfo};
use crate::mmap::{Map, Maps};
use crate::sink::CommitSink;
use crate::wal::checkpointer::{WalEnv, Worker};
use crate::wal::mode::{dir_for as wal_dir, WalOptions};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use wal_open::open_wal;

/// Environment flags (LMDB's `MDB_*` open flags), combined with `|`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{EnvFlags, EnvOptions};
/// let env = EnvOptions::new()
///     .flags(EnvFlags::NO_SYNC | EnvFlags::NO_TLS)
///     .open(dir.path())?;
/// assert!(env.flags().contains(EnvFlags::NO_SYNC | EnvFlags::NO_TLS));
/// assert!(!env.flags().contains(EnvFlags::READ_ONLY));
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct EnvFlags(pub u32);

impl EnvFlags {
    /// No flags.
    pub const EMPTY: EnvFlags = EnvFlags(0);
    /// `MDB_FIXEDMAP`: map at the address recorded in the file (recorded when
    /// the file is created with this flag); `EBUSY` if that address is taken.
    pub const FIXED_MAP: EnvFlags = EnvFlags(0x01);
    /// `MDB_NOSUBDIR`: the path is the data file; the lock file is `path-lock`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{EnvFlags, EnvOptions};
    /// let file = dir.path().join("app.mdb");
    /// let env = EnvOptions::new().flags(EnvFlags::NO_SUB_DIR).open(&file)?;
    /// assert!(file.is_file());
    /// assert!(dir.path().join("app.mdb-lock").is_file());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const NO_SUB_DIR: EnvFlags = EnvFlags(0x4000);
    /// `MDB_NOSYNC`: never sync at commit (a system crash may lose or corrupt the tail).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvFlags, EnvOptions, Txn, WriteFlags};
    /// // A cache that can be rebuilt after a crash: commits without syncs.
    /// let env = EnvOptions::new().flags(EnvFlags::NO_SYNC).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?; // visible now; durable after `env.sync(true)`
    /// assert_eq!(env.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// env.sync(true)?;
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const NO_SYNC: EnvFlags = EnvFlags(0x10000);
    /// `MDB_RDONLY`: read-only environment: read transactions only.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Env, EnvFlags, EnvOptions, ErrorKind};
    /// drop(Env::open(dir.path())?); // create it
    /// let env = EnvOptions::new().flags(EnvFlags::READ_ONLY).open(dir.path())?;
    /// assert!(env.read_txn().is_ok());
    /// assert_eq!(env.write_txn().err().map(|e| e.kind()), Some(ErrorKind::Os(libc::EACCES)));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const READ_ONLY: EnvFlags = EnvFlags(0x20000);
    /// `MDB_NOMETASYNC`: do not sync the meta page (the next commit does).
    pub const NO_META_SYNC: EnvFlags = EnvFlags(0x40000);
    /// `MDB_WRITEMAP`: map the file read-write and commit through the map.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().flags(EnvFlags::WRITE_MAP).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// assert_eq!(env.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const WRITE_MAP: EnvFlags = EnvFlags(0x80000);
    /// `MDB_MAPASYNC`: with WRITEMAP, flush asynchronously.
    pub const MAP_ASYNC: EnvFlags = EnvFlags(0x100000);
    /// `MDB_NOTLS`: reader slots belong to transactions, not threads.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{EnvFlags, EnvOptions};
    /// let env = EnvOptions::new().flags(EnvFlags::NO_TLS).open(dir.path())?;
    /// let (a, b) = (env.read_txn()?, env.read_txn()?); // two in one thread
    /// let moved = env.read_txn_send()?; // and one that may change threads
    /// std::thread::scope(|s| {
    ///     s.spawn(move || drop(moved));
    /// });
    /// drop((a, b));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const NO_TLS: EnvFlags = EnvFlags(0x200000);
    /// `MDB_NOLOCK`: no lock file. Only through the unsafe
    /// [`EnvOptions::no_lock`]: [`EnvOptions::open`] refuses it in
    /// [`EnvOptions::flags`] with `EINVAL`.
    pub const NO_LOCK: EnvFlags = EnvFlags(0x400000);
    /// `MDB_NORDAHEAD`: no read-ahead (accepted, no effect here).
    pub const NO_READAHEAD: EnvFlags = EnvFlags(0x800000);
    /// `MDB_NOMEMINIT`: accepted; new pages are always zero-initialised here.
    pub const NO_MEM_INIT: EnvFlags = EnvFlags(0x1000000);

    /// Whether every flag of `o` is set.
    ///
    /// ```
    /// use mdb::EnvFlags;
    /// let f = EnvFlags::NO_SYNC | EnvFlags::NO_META_SYNC;
    /// assert!(f.contains(EnvFlags::NO_SYNC));
    /// assert!(!f.contains(EnvFlags::NO_SYNC | EnvFlags::WRITE_MAP));
    /// ```
    pub fn contains(self, o: EnvFlags) -> bool {
        self.0 & o.0 == o.0
    }
    /// The raw bits (LMDB's values, as C callers pass them).
    ///
    /// ```
    /// use mdb::EnvFlags;
    /// assert_eq!(EnvFlags::NO_SYNC.bits(), 0x10000); // MDB_NOSYNC
    /// assert_eq!(EnvFlags(0x10000), EnvFlags::NO_SYNC);
    /// ```
    pub fn bits(self) -> u32 {
        self.0
    }
    const VALID: u32 = 0x01 | 0x4000 | 0x1F_0000 | 0x20_0000 | 0x40_0000 | 0x80_0000 | 0x100_0000;
    const CHANGEABLE: u32 = 0x10000 | 0x40000 | 0x100000 | 0x1000000;
}

impl std::ops::BitOr for EnvFlags {
    type Output = EnvFlags;
    fn bitor(self, o: EnvFlags) -> EnvFlags {
        EnvFlags(self.0 | o.0)
    }
}

/// Environment information, as `mdb_stat -e` prints it ([`Env::info`]).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, EnvOptions, WriteFlags};
/// let env = EnvOptions::new().max_readers(10).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// w.commit()?;
/// let info = env.info()?;
/// assert_eq!(info.last_txnid, 1);
/// assert_eq!(info.max_readers, 10);
/// assert_eq!(info.last_pgno, 2); // two meta pages, then one leaf
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvInfo {
    /// Fixed map address recorded in the meta (0 unless FIXEDMAP).
    pub map_addr: usize,
    /// This handle's map size in bytes.
    pub map_size: usize,
    /// Highest page number in use (pages used = this + 1).
    pub last_pgno: u64,
    /// Id of the newest committed transaction.
    pub last_txnid: u64,
    /// Reader slots available.
    pub max_readers: u32,
    /// High-water mark of reader slots used.
    pub num_readers: u32,
}

/// Default map size: LMDB's 1 MiB (with auto-grow, the size a new file
/// starts at).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let env = mdb::EnvOptions::new().auto_grow(false).open(dir.path())?;
/// assert_eq!(env.info()?.map_size, mdb::DEFAULT_MAPSIZE);
/// # Ok::<(), mdb::Error>(())
/// ```
pub const DEFAULT_MAPSIZE: usize = 1 << 20;
/// Default ceiling of a map that grows by itself: 1 TiB of address space,
/// reserved at open (address space only: memory is what the file uses).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let env = mdb::Env::open(dir.path())?; // auto-grow, no map size given
/// assert_eq!(env.info()?.map_size, mdb::DEFAULT_CEILING);
/// # Ok::<(), mdb::Error>(())
/// ```
pub const DEFAULT_CEILING: usize = 1 << 40;
/// Default memory budget of a write transaction's dirty pages: 512 MiB,
/// where LMDB spills too (see [`EnvOptions::txn_memory`]).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{EnvOptions, DEFAULT_TXN_MEMORY};
/// // Twice the default budget for one large import.
/// let env = EnvOptions::new().txn_memory(2 * DEFAULT_TXN_MEMORY).open(dir.path())?;
/// # Ok::<(), mdb::Error>(())
/// ```
pub const DEFAULT_TXN_MEMORY: usize = 512 << 20;
pub use crate::format::page::MAX_KEY_SIZE;

/// Builder for opening an [`Env`]: set what differs from LMDB's
/// defaults, then [`EnvOptions::open`]. Reusable for several opens.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let mut opts = mdb::EnvOptions::new();
/// opts.map_size(1 << 30).max_dbs(8);
/// let env = opts.open(dir.path())?;
/// assert_eq!(env.info()?.map_size, 1 << 30);
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Clone)]
pub struct EnvOptions {
    map_size: usize,
    max_dbs: u32,
    max_readers: u32,
    flags: EnvFlags,
    /// NO_LOCK was asked for through [`EnvOptions::no_lock`].
    no_lock: bool,
    mode: u32,
    pub(crate) fault: Option<Arc<dyn FaultInjector>>,
    pub(crate) wal: Option<WalOptions>,
    auto_grow: bool,
    txn_memory: usize,
    accept_log_loss: bool,
}

impl Default for EnvOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl EnvOptions {
    /// LMDB's defaults: map size from the file (1 MiB for a new one), 126 readers, no named DBs.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::EnvOptions::new().open(dir.path())?;
    /// assert_eq!(env.info()?.max_readers, 126);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn new() -> EnvOptions {
        EnvOptions {
            map_size: 0,
            max_dbs: 0,
            max_readers: 126,
            flags: EnvFlags::EMPTY,
            no_lock: false,
            mode: 0o644,
            fault: None,
            wal: None,
            auto_grow: true,
            txn_memory: DEFAULT_TXN_MEMORY,
            accept_log_loss: false,
        }
    }
    /// Map size in bytes: the most the database may grow to. With
    /// auto-grow (the default) it is a ceiling, [`DEFAULT_CEILING`] when 0;
    /// without, the map's fixed size, taken from the file when 0.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::EnvOptions::new().map_size(256 << 20).open(dir.path())?;
    /// assert_eq!(env.info()?.map_size, 256 << 20);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn map_size(&mut self, bytes: usize) -> &mut Self {
        self.map_size = bytes;
        self
    }
    /// How many named databases may be open at once.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, ErrorKind};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.create_db("one", DbFlags::EMPTY)?;
    /// assert_eq!(w.create_db("two", DbFlags::EMPTY).map_err(|e| e.kind()), Err(ErrorKind::DbsFull));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn max_dbs(&mut self, n: u32) -> &mut Self {
        self.max_dbs = n;
        self
    }
    /// Reader slots, used when this process creates the lock file: 1 to
    /// [`MAX_READERS`](crate::MAX_READERS); opening fails with EINVAL above.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{EnvOptions, ErrorKind, MAX_READERS};
    /// let env = EnvOptions::new().max_readers(512).open(dir.path())?;
    /// assert_eq!(env.info()?.max_readers, 512);
    /// let other = tempfile::tempdir().unwrap();
    /// let too_many = EnvOptions::new().max_readers(MAX_READERS + 1).open(other.path());
    /// assert_eq!(too_many.err().map(|e| e.kind()), Some(ErrorKind::Os(libc::EINVAL)));
    /// assert!(std::fs::read_dir(other.path())?.next().is_none()); // nothing created
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_readers(&mut self, n: u32) -> &mut Self {
        self.max_readers = n.max(1);
        self
    }
    /// Open flags. NO_LOCK is not accepted here (see [`EnvOptions::no_lock`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{EnvFlags, EnvOptions};
    /// let env = EnvOptions::new().flags(EnvFlags::WRITE_MAP).open(dir.path())?;
    /// assert!(env.flags().contains(EnvFlags::WRITE_MAP));
    /// let nolock = EnvOptions::new().flags(EnvFlags::NO_LOCK).open(dir.path());
    /// assert!(nolock.is_err());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn flags(&mut self, f: EnvFlags) -> &mut Self {
        self.flags = f;
        self
    }
    /// Open without a lock file (`MDB_NOLOCK`). The readers and writers of
    /// this process still coordinate through a table in memory (shared by
    /// every NO_LOCK `Env` of this process on the same data file), so the
    /// writer never reuses a page one of them can see; other processes
    /// cannot see that table.
    ///
    /// # Safety
    /// While the `Env` is open, no other process may use the environment,
    /// nor any `Env` of this process opened without NO_LOCK. Such a writer
    /// would not see this `Env`'s readers, and could overwrite the pages a
    /// value borrowed from a read transaction lies in (and two writers
    /// would corrupt the file).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvFlags, EnvOptions, Txn, WriteFlags};
    /// // SAFETY: nothing else uses this new directory.
    /// let env = unsafe { EnvOptions::new().no_lock() }.open(dir.path())?;
    /// assert!(env.flags().contains(EnvFlags::NO_LOCK));
    /// assert!(!dir.path().join("lock.mdb").exists());
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// assert_eq!(env.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub unsafe fn no_lock(&mut self) -> &mut Self {
        self.no_lock = true;
        self
    }
    /// Let the map grow by itself (`true`, the default) or keep LMDB's fixed
    /// map (`false`; LMDB's C API, and so this crate's C library unless
    /// `MDB_AUTOGROW=1`).
    ///
    /// With auto-grow the ceiling ([`EnvOptions::map_size`]) is reserved as
    /// address space once, at open, so the map never moves; the size the
    /// file records (what LMDB processes sharing it map) grows in steps as
    /// commits need pages, and with WRITE_MAP the file is extended in
    /// those steps. A database grown past this handle's map by another
    /// process is followed with a larger mapping at the next transaction,
    /// the older one kept until the `Env` closes (values borrowed from a
    /// transaction stay valid), never `MapResized`. `MapFull` comes only
    /// at the ceiling.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvOptions, WriteFlags};
    /// let env = EnvOptions::new().open(dir.path())?; // auto-grow, 1 TiB ceiling
    /// let mut w = env.write_txn()?;
    /// for i in 0u32..20_000 {
    ///     w.put(Database::MAIN, &i.to_be_bytes(), &[7; 100], WriteFlags::EMPTY)?;
    /// }
    /// w.commit()?; // well past LMDB's default 1 MiB map
    /// assert!(env.file_map_size()? > 1 << 20);
    ///
    /// let fixed = tempfile::tempdir().unwrap();
    /// let env = EnvOptions::new().auto_grow(false).open(fixed.path())?;
    /// let mut w = env.write_txn()?;
    /// let full = (0u32..20_000)
    ///     .try_for_each(|i| w.put(Database::MAIN, &i.to_be_bytes(), &[7; 100], WriteFlags::EMPTY));
    /// assert_eq!(full.map_err(|e| e.kind()), Err(mdb::ErrorKind::MapFull));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn auto_grow(&mut self, on: bool) -> &mut Self {
        self.auto_grow = on;
        self
    }
    /// How much memory a write transaction's dirty pages may take
    /// ([`DEFAULT_TXN_MEMORY`]; 0: no limit). Past it, the transaction
    /// writes half of them (leaves and overflow values) to the data file
    /// before its commit and reads them back when they are changed again,
    /// as LMDB spills pages, so that a transaction larger than memory
    /// runs. Not in WAL mode or under WRITE_MAP, where a transaction's
    /// pages stay in memory.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().txn_memory(1 << 20).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// for i in 0u32..2000 {
    ///     w.put(Database::MAIN, &i.to_be_bytes(), &[7; 4000], WriteFlags::EMPTY)?;
    /// } // 8 MB of values through 1 MiB of dirty pages
    /// w.commit()?;
    /// assert_eq!(env.read_txn()?.stat(Database::MAIN)?.entries, 2000);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn txn_memory(&mut self, bytes: usize) -> &mut Self {
        self.txn_memory = bytes;
        self
    }
    /// File mode for created files (before the umask).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use std::os::unix::fs::PermissionsExt;
    /// let env = mdb::EnvOptions::new().mode(0o600).open(dir.path())?;
    /// let meta = std::fs::metadata(dir.path().join("data.mdb"))?;
    /// assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn mode(&mut self, mode: u32) -> &mut Self {
        self.mode = mode;
        self
    }
    /// Write-ahead-log mode: a commit is durable once its record (pages
    /// and meta) is in the log, with one sync of the log instead of two of
    /// the data file; a checkpointer syncs the data file later, and an open
    /// after a crash rolls the log forward. The data file stays an LMDB
    /// file. The log lives in `wal/` beside the data file (`<file>-wal/`
    /// with NO_SUB_DIR). NO_SYNC and NO_META_SYNC do not apply: every
    /// commit syncs the log.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvOptions, Txn, WalOptions, WriteFlags};
    /// let env = EnvOptions::new().wal(WalOptions::default()).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?; // durable: the log is synced
    /// env.checkpoint()?; // the data file too
    /// assert!(dir.path().join("wal").is_dir());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn wal(&mut self, w: WalOptions) -> &mut Self {
        self.wal = Some(w);
        self
    }
    /// Open a data file whose write-ahead log lost commits anyway: the
    /// log is rolled forward as far as it is whole (a missing or damaged
    /// segment, a damaged record followed by durable ones), and the rest
    /// is given up; a data file whose log is gone (or is another file's)
    /// is taken as it is. Without this, such an open fails (`Corrupted`,
    /// or `VersionMismatch` when the log directory is missing) and
    /// [`crate::Error::detail`] says what is missing. Commits after the
    /// loss are lost, and pages they wrote early may have reached the data
    /// file: run `mdb check` after. `mdb checkpoint --accept-log-loss`
    /// does this.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::EnvOptions::new().accept_log_loss(true).open(dir.path())?;
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn accept_log_loss(&mut self, on: bool) -> &mut Self {
        self.accept_log_loss = on;
        self
    }
    /// Whether [`EnvOptions::accept_log_loss`] was asked for.
    pub(crate) fn accepts_log_loss(&self) -> bool {
        self.accept_log_loss
    }
    /// Route every data-file write and sync through `f`, and those of
    /// the files [`Env::backup`] writes; commit records of the log and
    /// backups take their time from its clock (tests; with the `unstable`
    /// feature only).
    #[cfg(feature = "unstable")]
    pub fn fault_injector(&mut self, f: Arc<dyn FaultInjector>) -> &mut Self {
        self.fault = Some(f);
        self
    }
    /// Open (or create) the environment at `path`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{EnvFlags, EnvOptions};
    /// let env = EnvOptions::new()
    ///     .map_size(64 << 20)
    ///     .max_dbs(4)
    ///     .flags(EnvFlags::NO_SYNC)
    ///     .open(dir.path())?;
    /// assert_eq!(env.info()?.map_size, 64 << 20);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn open(&self, path: impl AsRef<Path>) -> Result<Env> {
        Env::open_with(self, path.as_ref()).map_err(|e| e.during_op("open environment"))
    }
}

/// One entry of the process-wide database handle table.
#[derive(Debug, Clone)]
pub(crate) struct DbiInfo {
    pub(crate) name: Option<Vec<u8>>,
    pub(crate) flags: u16,
    /// A user key comparator replacing the one the flags select.
    pub(crate) cmp: Option<crate::format::cmp::CmpFn>,
    /// A user duplicate comparator (DUPSORT).
    pub(crate) dcmp: Option<crate::format::cmp::CmpFn>,
    /// Opened by the write transaction at this nesting level (0: the
    /// top-level one) and not committed yet: other transactions may not use
    /// it (LMDB: `EINVAL`), and it is closed if that level aborts.
    pub(crate) pending: Option<u32>,
    /// The record in the snapshot with this txnid, as a reader looked it
    /// up: readers of the same snapshot reuse it instead of searching the
    /// main database (records of a committed snapshot never change).
    pub(crate) snap: Option<(u64, crate::format::meta::DbRecord)>,
}

/// An open environment. `Send + Sync`: share it between threads by reference or `Arc`.
///
/// Usually opened once and kept for the program's life: transactions
/// borrow it, threads share it.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// std::thread::scope(|s| {
///     s.spawn(|| -> mdb::Result<()> {
///         let mut w = env.write_txn()?;
///         w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
///         w.commit()
///     })
///     .join()
///     .unwrap()
/// })?;
/// assert_eq!(env.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Env {
    pub(crate) path: PathBuf,
    pub(crate) flags: AtomicU32,
    pub(crate) psize: usize,
    /// The map: its newest generation is what new transactions use.
    maps: Maps,
    /// Auto-grow: the ceiling in bytes; 0: LMDB's fixed map.
    ceiling: AtomicU64,
    /// Dirty bytes a write transaction keeps before spilling (0: all).
    spill_at: usize,
    pub(crate) file: DataFile,
    /// The lock file, shared with every `Env` of this process on the same
    /// environment; under NO_LOCK a table in memory.
    pub(crate) lock: Arc<LockFile>,
    /// Reader slots the threads of this `Env` own (without NO_TLS).
    pub(crate) thread_slots: Arc<ThreadSlots>,
    /// As configured (what LMDB reports under NO_LOCK).
    max_readers: u32,
    /// Whole pages in the data file when last looked at: reads stay below
    /// (a mapped page past the end of the file raises SIGBUS).
    file_pages: AtomicU64,
    pub(crate) dbis: RwLock<Vec<DbiInfo>>,
    pub(crate) max_dbs: u32,
    /// Page buffers recycled between write transactions.
    pub(crate) page_pool: Mutex<Vec<Box<[u8]>>>,
    /// Dirty pages of the last write transaction: the next one sizes its
    /// table for as many (no rehashing as it grows).
    pub(crate) dirty_hint: AtomicUsize,
    /// A commit failed after it may have changed the files (its meta write,
    /// or in WAL mode the sync or publication of its record): only a reopen
    /// can tell what they hold, so every transaction begun from now on gets
    /// `MDB_PANIC`, and the close neither shrinks the file nor checkpoints.
    pub(crate) panicked: AtomicBool,
    /// A write transaction of this handle is live.
    pub(crate) writing: AtomicBool,
    /// Some database has a user comparator (see [`Env::set_compare`]).
    pub(crate) custom_cmp: AtomicBool,
    pub(crate) id: usize,
    /// WAL mode: the log, shared with the checkpointer thread.
    pub(crate) wal: Option<Arc<WalEnv>>,
    checkpointer: Option<Worker>,
    /// Syncs the log for commits with relaxed durability.
    flusher: Option<Worker>,
}

/// Map `want` bytes of `file` (the auto-grow ceiling), or as much of it as
/// the address space allows, halving down to `need`.
fn reserve(
    file: &File,
    want: usize,
    need: usize,
    writable: bool,
    at: Option<usize>,
    psize: usize,
) -> Result<Map> {
    let mut len = want;
    loop {
        match Map::new(file, len, writable, at) {
            Err(e) if e == ErrorKind::Os(libc::ENOMEM) && len / 2 >= need && at.is_none() => {
                len = (len / 2).next_multiple_of(psize);
            }
            r => return r,
        }
    }
}

/// Reader slots of the in-memory table of NO_LOCK (LMDB has no limit there).
const NO_LOCK_SLOTS: u32 = 4096;

static NEXT_ENV_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

fn page_size_os() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (p.max(4096) as usize).min(32768)
}

impl Env {
    /// Open an environment with default options (see [`EnvOptions`]);
    /// `path` is a directory that must exist.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// assert!(dir.path().join("data.mdb").is_file());
    /// assert!(dir.path().join("lock.mdb").is_file());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Env> {
        EnvOptions::new().open(path)
    }

    fn open_with(o: &EnvOptions, path: &Path) -> Result<Env> {
        let mut flags = o.flags;
        if flags.0 & !EnvFlags::VALID != 0 || (flags.contains(EnvFlags::NO_LOCK) && !o.no_lock) {
            return Err(ErrorKind::Misuse(Misuse::BadEnvFlags).into());
        }
        if o.max_readers > crate::lock::MAX_READERS {
            return Err(ErrorKind::Os(libc::EINVAL).into());
        }
        if o.no_lock {
            flags = flags | EnvFlags::NO_LOCK;
        }
        let no_lock = flags.contains(EnvFlags::NO_LOCK);
        let rdonly = flags.contains(EnvFlags::READ_ONLY);
        if rdonly {
            flags.0 &= !EnvFlags::WRITE_MAP.0;
        }
        let (data_path, lock_path) = if flags.contains(EnvFlags::NO_SUB_DIR) {
            let md = std::fs::metadata(path);
            if let Ok(m) = md {
                if m.is_dir() {
                    return Err(ErrorKind::Os(libc::EISDIR).into());
                }
            }
            let mut l = path.as_os_str().to_owned();
            l.push("-lock");
            (path.to_path_buf(), PathBuf::from(l))
        } else {
            let m = std::fs::metadata(path)?;
            if !m.is_dir() {
                return Err(ErrorKind::Os(libc::ENOTDIR).into());
            }
            (path.join("data.mdb"), path.join("lock.mdb"))
        };

        // The data file first, as LMDB does: a read-only open of a place
        // with no environment fails before it creates a lock file there.
        let mut oo = OpenOptions::new();
        oo.read(true).mode(o.mode).custom_flags(libc::O_CLOEXEC);
        if !rdonly {
            oo.write(true).create(true);
        }
        let file: File = oo.open(&data_path)?;
        let meta_sync = if rdonly {
            None
        } else {
            Some(
                OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_DSYNC | libc::O_CLOEXEC)
                    .open(&data_path)?,
            )
        };

        // Held until the lock is ready for other `Env`s (`finish_open`).
        let mut registry = crate::lock::registry();
        let lock = if no_lock {
            None
        } else {
            Some(registry.lock_file(&lock_path, o.max_readers, o.mode)?)
        };
        let lock = match lock {
            Some(l) => l,
            None => registry.in_memory(&file, o.max_readers.max(NO_LOCK_SLOTS))?,
        };
        let df = DataFile::new(file, meta_sync, o.fault.clone());

        let flen = df.len()?;
        let wal = open_wal(o, (path, &data_path), flags, &df, &lock, flen)?;
        let created = flen == 0;
        let mut meta = if flen == 0 {
            if rdonly {
                return Err(ErrorKind::Os(libc::ENOENT).into());
            }
            let psize = page_size_os();
            let mapsize = match (o.map_size, o.auto_grow) {
                (0, _) => DEFAULT_MAPSIZE,
                (n, true) => n.min(DEFAULT_MAPSIZE),
                (n, false) => n,
            };
            let m = Meta::new_env(psize as u32, mapsize as u64, (flags.0 & 0x4001) as u16);
            let mut both = m.encode_page(0, psize);
            both.extend_from_slice(&m.encode_page(1, psize));
            if let Some(w) = &wal {
                // Tied to its log from the start (`wal/tie.rs`).
                let id = crate::wal::tie::encode(w.ident());
                for at in [0, psize] {
                    let at = at + crate::wal::tie::IDENT_OFF as usize;
                    both[at..at + id.len()].copy_from_slice(&id);
                }
            }
            df.file_write_initial(&both)?;
            m
        } else {
            // Both headers must be sound (as LMDB requires); of their
            // snapshots, an implausible one is passed over.
            let mut b0 = [0u8; META_LEN];
            df.read_exact_at(&mut b0, 0)?;
            let psize = Meta::fields(Meta::check_header(&b0)?).psize();
            let mut b1 = [0u8; META_LEN];
            df.read_exact_at(&mut b1, psize as u64)?;
            if Meta::fields(Meta::check_header(&b1)?).psize() != psize {
                return Err(ErrorKind::Invalid.into());
            }
            pick_meta(Meta::decode(&b0), Meta::decode(&b1))?.1
        };
        let psize = meta.psize() as usize;
        let mapsize = match (o.map_size, o.auto_grow) {
            (0, true) => DEFAULT_CEILING.max(meta.mapsize as usize),
            (0, false) => meta.mapsize as usize,
            (n, _) => n,
        };
        let used = (meta.last_pgno as usize)
            .checked_add(1)
            .and_then(|n| n.checked_mul(psize))
            .ok_or(ErrorKind::Invalid)?;
        let round = |n: usize| {
            n.checked_next_multiple_of(psize)
                .filter(|&m| m <= isize::MAX as usize)
                .ok_or(ErrorKind::Os(libc::ENOMEM))
        };
        let mapsize = round(mapsize.max(used))?;
        let writemap = flags.contains(EnvFlags::WRITE_MAP);
        if writemap {
            // With auto-grow the file holds the size it records, not the
            // ceiling (commits extend it in steps).
            let file_size = if o.auto_grow {
                round((meta.mapsize as usize).max(used))?
            } else {
                mapsize
            };
            df.extend_to(file_size as u64)?;
        }
        let fixed = flags.contains(EnvFlags::FIXED_MAP);
        let at = if fixed && !created && meta.address != 0 {
            Some(meta.address as usize)
        } else {
            None
        };
        let map = if o.auto_grow {
            reserve(&df.file, mapsize, used, writemap, at, psize)?
        } else {
            Map::new(&df.file, mapsize, writemap, at)?
        };
        let ceiling = AtomicU64::new(if o.auto_grow { mapsize as u64 } else { 0 });
        if fixed && created {
            // Record where this file is mapped, in both meta pages.
            meta.address = map.addr() as u64;
            let mut both = meta.encode_page(0, psize);
            both.extend_from_slice(&meta.encode_page(1, psize));
            df.file_write_initial(&both)?;
        }
        lock.finish_open(meta.txnid)?;
        drop(registry);
        let mut dbis = vec![
            DbiInfo {
                name: None,
                flags: meta.free.flags,
                cmp: None,
                dcmp: None,
                pending: None,
                snap: None,
            },
            DbiInfo {
                name: None,
                flags: meta.main.flags,
                cmp: None,
                dcmp: None,
                pending: None,
                snap: None,
            },
        ];
        dbis.reserve(o.max_dbs as usize);
        let file_pages = AtomicU64::new(df.len()? / psize as u64);
        let wal = match wal {
            Some(w) => {
                let own = DataFile::new(df.file.try_clone()?, None, o.fault.clone());
                // Writers outside WAL mode beside us honour reader slots only.
                w.hold_in(lock.clone())?;
                Some(Arc::new(WalEnv::new(w, own, lock.clone(), psize)?))
            }
            None => None,
        };
        let checkpointer = match &wal {
            Some(w) if w.wal.opts.checkpointer => Some(Worker::checkpointer(w.clone())?),
            _ => None,
        };
        let flusher = match &wal {
            Some(w) => Some(Worker::flusher(w.clone())?),
            None => None,
        };
        lock.handles.fetch_add(1, Ordering::AcqRel);
        Ok(Env {
            path: path.to_path_buf(),
            flags: AtomicU32::new(flags.0),
            psize,
            maps: Maps::new(map),
            ceiling,
            spill_at: if wal.is_some() || writemap {
                0
            } else {
                o.txn_memory
                    .max(if o.txn_memory == 0 { 0 } else { 64 * psize })
            },
            file: df,
            thread_slots: Arc::new(ThreadSlots::new(lock.clone())),
            file_pages,
            lock,
            max_readers: o.max_readers,
            dbis: RwLock::new(dbis),
            max_dbs: o.max_dbs,
            page_pool: Mutex::new(Vec::new()),
            dirty_hint: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            writing: AtomicBool::new(false),
            custom_cmp: AtomicBool::new(false),
            id: NEXT_ENV_ID.fetch_add(1, Ordering::Relaxed),
            wal,
            checkpointer,
            flusher,
        })
    }

    /// WAL mode: sync the data file and record that it holds every commit
    /// so far, so that the log segments before it are recycled (the
    /// checkpointer thread does this every `checkpoint_interval`). Returns
    /// the txnid the checkpoint covers. `Incompatible` outside WAL mode;
    /// `BadTxn` from the thread holding this environment's write
    /// transaction.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvOptions, WalOptions, WriteFlags};
    /// let env = EnvOptions::new().wal(WalOptions::default()).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// assert_eq!(env.checkpoint()?, env.info()?.last_txnid);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn checkpoint(&self) -> Result<u64> {
        match &self.wal {
            Some(w) => w.checkpoint(true),
            None => Err(ErrorKind::Incompatible.into()),
        }
    }

    /// The write-ahead log as this handle sees it; `None` outside WAL
    /// mode.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvOptions, WalOptions, WriteFlags};
    /// let env = EnvOptions::new().wal(WalOptions::default()).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let info = env.wal_info().unwrap();
    /// assert!(info.bytes_since_checkpoint > 0);
    /// let t = env.checkpoint()?;
    /// assert_eq!(env.wal_info().unwrap().checkpoint_txnid, t);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn wal_info(&self) -> Option<crate::WalInfo> {
        self.wal.as_ref().map(|w| w.wal.info())
    }

    /// The path the environment was opened with.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// assert_eq!(env.path(), dir.path());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flags in effect.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{EnvFlags, EnvOptions};
    /// let env = EnvOptions::new().flags(EnvFlags::NO_TLS).open(dir.path())?;
    /// assert!(env.flags().contains(EnvFlags::NO_TLS));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn flags(&self) -> EnvFlags {
        EnvFlags(self.flags.load(Ordering::Relaxed))
    }

    /// Set (`on`) or clear the changeable flags NO_SYNC, NO_META_SYNC,
    /// MAP_ASYNC, NO_MEM_INIT, e.g. to load in bulk without syncs and then
    /// sync once.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Env, EnvFlags, ErrorKind, Misuse};
    /// let env = Env::open(dir.path())?;
    /// env.set_flags(EnvFlags::NO_SYNC, true)?;
    /// assert!(env.flags().contains(EnvFlags::NO_SYNC));
    /// // ... bulk load ...
    /// env.set_flags(EnvFlags::NO_SYNC, false)?;
    /// env.sync(true)?;
    /// let fixed = env.set_flags(EnvFlags::READ_ONLY, true);
    /// assert_eq!(fixed.map_err(|e| e.kind()), Err(ErrorKind::Misuse(Misuse::BadEnvFlags)));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_flags(&self, f: EnvFlags, on: bool) -> Result<()> {
        if f.0 & !EnvFlags::CHANGEABLE != 0 {
            return Err(ErrorKind::Misuse(Misuse::BadEnvFlags).into());
        }
        if on {
            self.flags.fetch_or(f.0, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!f.0, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Change the map size (`mdb_env_set_mapsize` after open; with
    /// auto-grow, the ceiling). `0` adopts the size recorded in the file
    /// (how a process catches up after another grew it); a size below the
    /// data in use is raised to it. Commits persist only growth.
    ///
    /// Works through a shared `Env`: transactions begun before keep the
    /// mapping they began on (kept until the `Env` closes, so values they
    /// lent stay valid); later ones use the new one.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvOptions, Txn, WriteFlags};
    /// let env = std::sync::Arc::new(EnvOptions::new().auto_grow(false).open(dir.path())?);
    /// let r = env.read_txn()?;
    /// env.set_map_size(64 << 20)?;
    /// assert_eq!(env.info()?.map_size, 64 << 20);
    /// assert_eq!(r.get(Database::MAIN, b"k")?, None); // still usable
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_map_size(&self, size: usize) -> Result<()> {
        let m = self.newest_meta()?;
        let want = if size == 0 { m.mapsize as usize } else { size };
        let used = (m.last_pgno as usize)
            .checked_add(1)
            .and_then(|n| n.checked_mul(self.psize))
            .ok_or(ErrorKind::Os(libc::ENOMEM))?;
        let len = want
            .max(used)
            .checked_next_multiple_of(self.psize)
            .filter(|&l| l <= isize::MAX as usize)
            .ok_or(ErrorKind::Os(libc::ENOMEM))?;
        let writemap = self.flags().contains(EnvFlags::WRITE_MAP);
        if writemap {
            self.file.extend_to(len as u64)?;
        }
        let fixed = self.flags().contains(EnvFlags::FIXED_MAP) && m.address != 0;
        let cur = self.map().len();
        if self.auto_grows() {
            // A lower ceiling keeps the reserved map (the file records
            // less than either).
            self.ceiling.store(len as u64, Ordering::Relaxed);
            if len <= cur {
                return Ok(());
            }
        }
        if len == cur {
            return Ok(());
        }
        if fixed {
            // A fixed map cannot move; growing in place is not attempted.
            return Err(ErrorKind::Misuse(Misuse::FixedMapResize).into());
        }
        self.maps
            .install(Map::new(&self.file.file, len, writemap, None)?);
        Ok(())
    }

    /// The newest generation of the map.
    #[inline]
    pub(crate) fn map(&self) -> &Map {
        self.maps.current()
    }

    /// A map generation holding every page of the snapshot of `m`: the
    /// newest, or (auto-grow, a database another process grew past it) a
    /// larger new one; `MapResized` with LMDB's fixed map.
    pub(crate) fn map_for(&self, m: &Meta) -> Result<&Map> {
        let end = m
            .last_pgno
            .checked_add(1)
            .and_then(|n| n.checked_mul(self.psize as u64))
            .filter(|&e| e <= isize::MAX as u64)
            .ok_or(ErrorKind::MapResized)? as usize;
        let cur = self.map();
        if end <= cur.len() {
            return Ok(cur);
        }
        let fixed = self.flags().contains(EnvFlags::FIXED_MAP);
        if !self.auto_grows() || fixed {
            return Err(ErrorKind::MapResized.into());
        }
        let want = end
            .max(m.mapsize.min(isize::MAX as u64 / 2) as usize)
            .max(cur.len().saturating_mul(2))
            .min(isize::MAX as usize / 2)
            .next_multiple_of(self.psize);
        let writemap = self.flags().contains(EnvFlags::WRITE_MAP);
        self.maps.covering(&self.file.file, want, writemap)
    }

    /// Pages a write transaction may use: the ceiling (auto-grow) or the map.
    pub(crate) fn max_pgno(&self, map: &Map) -> u64 {
        let bytes = self.ceiling.load(Ordering::Relaxed).max(map.len() as u64);
        bytes / self.psize as u64
    }

    /// The map size a commit whose pages end at byte `used` records: with
    /// auto-grow, the recorded size grown in steps (doubling up to 1 GiB,
    /// then 1 GiB at a time) to hold `used`, at most the ceiling; otherwise
    /// this handle's map size, as LMDB records it.
    pub(crate) fn mapsize_for(&self, old: u64, used: u64) -> u64 {
        let ceiling = self.ceiling.load(Ordering::Relaxed);
        if ceiling == 0 {
            return old.max(self.map().len() as u64);
        }
        let mut m = old.max(self.psize as u64);
        while m < used {
            m = m.saturating_add(m.min(1 << 30));
        }
        if m != old {
            m = m.min(ceiling.max(used)).next_multiple_of(self.psize as u64);
        }
        m
    }

    /// Whether a write transaction of this handle is live (any thread).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// let w = env.write_txn()?;
    /// assert!(env.write_txn_active());
    /// w.abort();
    /// assert!(!env.write_txn_active());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn write_txn_active(&self) -> bool {
        self.writing.load(Ordering::Relaxed)
    }

    /// Dirty bytes a write transaction keeps in memory before spilling.
    pub(crate) fn spill_at(&self) -> usize {
        self.spill_at
    }

    /// The tag of the handles this environment opens.
    #[inline]
    pub(crate) fn tag(&self) -> u32 {
        (self.id as u32).max(1)
    }

    /// Where this environment's write-ahead log lives (or would).
    pub(crate) fn wal_dir(&self) -> PathBuf {
        wal_dir(&self.path, self.flags().contains(EnvFlags::NO_SUB_DIR))
    }

    /// Whether the map grows by itself ([`EnvOptions::auto_grow`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::EnvOptions;
    /// assert!(EnvOptions::new().open(dir.path())?.auto_grows());
    /// assert!(!EnvOptions::new().auto_grow(false).open(dir.path())?.auto_grows());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn auto_grows(&self) -> bool {
        self.ceiling.load(Ordering::Relaxed) != 0
    }

    /// WRITE_MAP commit of pages ending at byte `used` recording `mapsize`:
    /// the file extended to hold them (auto-grow steps) and a map
    /// generation covering them.
    pub(crate) fn writemap_room(&self, mapsize: u64, used: u64) -> Result<()> {
        self.file.extend_to(mapsize.max(used))?;
        let len = usize::try_from(used).map_err(|_| ErrorKind::MapFull)?;
        self.maps.covering(&self.file.file, len, true)?;
        Ok(())
    }

    /// The map size the newest snapshot records: with auto-grow, what the
    /// file has grown to so far (LMDB processes sharing it map this much).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// assert_eq!(env.file_map_size()?, mdb::DEFAULT_MAPSIZE as u64);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn file_map_size(&self) -> Result<u64> {
        Ok(self.newest_meta()?.mapsize)
    }

    /// The data file's descriptor (`mdb_env_get_fd`), valid while the Env
    /// lives: for `fstat` and the like, never for writes.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use std::os::fd::BorrowedFd;
    /// let env = mdb::Env::open(dir.path())?;
    /// // SAFETY: the descriptor stays open while `env` lives.
    /// let fd = unsafe { BorrowedFd::borrow_raw(env.data_fd()) };
    /// let file = std::fs::File::from(fd.try_clone_to_owned()?);
    /// assert_eq!(file.metadata()?.len(), std::fs::metadata(dir.path().join("data.mdb"))?.len());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn data_fd(&self) -> std::os::unix::io::RawFd {
        use std::os::unix::io::AsRawFd;
        self.file.file.as_raw_fd()
    }

    /// Page size of the data file (the OS page size when it was created).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn};
    /// let env = Env::open(dir.path())?;
    /// assert!(env.page_size().is_power_of_two());
    /// assert_eq!(env.read_txn()?.stat(Database::MAIN)?.page_size as usize, env.page_size());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn page_size(&self) -> usize {
        self.psize
    }

    /// Longest key accepted (511, as LMDB).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, ErrorKind, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let key = vec![b'k'; env.max_key_size()];
    /// w.put(Database::MAIN, &key, b"v", WriteFlags::EMPTY)?;
    /// let longer = vec![b'k'; env.max_key_size() + 1];
    /// assert_eq!(w.put(Database::MAIN, &longer, b"v", WriteFlags::EMPTY).map_err(|e| e.kind()), Err(ErrorKind::BadValSize));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn max_key_size(&self) -> usize {
        MAX_KEY_SIZE
    }

    /// The newest committed meta page.
    pub(crate) fn newest_meta(&self) -> Result<Meta> {
        self.current_meta().map(|(_, m)| m)
    }

    /// The newest committed meta page and its slot: the one the lock file's
    /// txnid names, else (a txnid no meta carries: a damaged meta, a data
    /// file changed behind the lock file) the one [`pick_meta`] picks.
    pub(crate) fn current_meta(&self) -> Result<(usize, Meta)> {
        for _ in 0..SNAPSHOT_RETRIES {
            match self.meta_with_txnid(self.lock.txnid()) {
                // A commit moved lock.txnid during the copy: look again.
                None => continue,
                Some(Some(sm)) => return Ok(sm),
                Some(None) => break,
            }
        }
        pick_meta(self.meta_page(0), self.meta_page(1))
    }

    /// The meta page carrying txnid `t` (in its own slot or, damaged file,
    /// the other) and its slot; `None` if a commit published a newer txn
    /// while it was being copied: the copy may then be torn, since the
    /// writer of `t + 2` rewrites that page (through the map under WRITEMAP,
    /// by `pwrite` otherwise) once `t + 1` is published.
    pub(crate) fn meta_with_txnid(&self, t: u64) -> Option<Option<(usize, Meta)>> {
        let s = (t & 1) as usize;
        let found = [s, s ^ 1].into_iter().find_map(|n| {
            self.meta_page(n)
                .ok()
                .filter(|m| m.txnid == t)
                .map(|m| (n, m))
        });
        // The copy's loads complete before the re-check of the txnid.
        std::sync::atomic::fence(Ordering::Acquire);
        if self.lock.txnid() != t {
            return None;
        }
        Some(found)
    }

    /// Whole pages in the data file, as last seen (no system call).
    #[inline]
    pub(crate) fn file_pages(&self) -> u64 {
        self.file_pages.load(Ordering::Relaxed)
    }

    /// Look at the data file's length again: a writer, here or in another
    /// process, may have extended it.
    pub(crate) fn refresh_file_pages(&self) -> Result<u64> {
        let n = self.file.len()? / self.psize as u64;
        self.file_pages.store(n, Ordering::Relaxed);
        Ok(n)
    }

    /// Meta page `n` as it is now. Only the part commits rewrite is read
    /// (the header was checked at open): a page size that is not this
    /// environment's makes the meta unusable.
    pub(crate) fn meta_page(&self, n: usize) -> Result<Meta> {
        let mut copy = [0u8; META_LEN];
        self.map().copy_out(n * self.psize, &mut copy)?;
        let m = Meta::fields(&copy);
        if m.psize() as usize != self.psize || m.last_pgno < 1 {
            return Err(ErrorKind::Invalid.into());
        }
        Ok(m)
    }

    /// Map size, page usage, last transaction and reader counts.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// assert_eq!(env.info()?.last_txnid, 0);
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// assert_eq!(env.info()?.last_txnid, 1);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn info(&self) -> Result<EnvInfo> {
        let m = self.newest_meta()?;
        Ok(EnvInfo {
            map_addr: m.address as usize,
            map_size: self.map().len(),
            last_pgno: m.last_pgno,
            last_txnid: m.txnid,
            max_readers: self
                .lock_file()
                .map_or(self.max_readers, |l| l.max_readers()),
            num_readers: self.lock_file().map_or(0, |l| l.num_readers()),
        })
    }

    /// Statistics of the main database in the newest snapshot.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"a", b"1", WriteFlags::EMPTY)?;
    /// w.put(Database::MAIN, b"b", b"2", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// assert_eq!(env.stat()?.entries, 2);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn stat(&self) -> Result<Stat> {
        let m = self.newest_meta()?;
        Ok(Stat::from_record(self.psize, &m.main))
    }

    /// Flush the data file to disk. Without `force`, a NO_SYNC environment
    /// does nothing. Commits sync by themselves unless NO_SYNC (or
    /// NO_META_SYNC, MAP_ASYNC) is set: this makes such commits durable.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvFlags, EnvOptions, WriteFlags};
    /// let env = EnvOptions::new().flags(EnvFlags::NO_SYNC).open(dir.path())?;
    /// for i in 0u32..100 {
    ///     let mut w = env.write_txn()?;
    ///     w.put(Database::MAIN, &i.to_be_bytes(), b"v", WriteFlags::EMPTY)?;
    ///     w.commit()?; // no sync
    /// }
    /// env.sync(true)?; // all 100 durable now
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn sync(&self, force: bool) -> Result<()> {
        let f = self.flags();
        if f.contains(EnvFlags::READ_ONLY) {
            return Err(ErrorKind::Os(libc::EACCES).into());
        }
        // In WAL mode, commits of relaxed durability become durable (and
        // visible to other processes) too.
        self.sink().sync(force, f.contains(EnvFlags::NO_SYNC))
    }

    /// The lock file; `None` under NO_LOCK, whose in-memory table LMDB
    /// would not have, so it is not reported.
    fn lock_file(&self) -> Option<&LockFile> {
        (!self.flags().contains(EnvFlags::NO_LOCK)).then_some(&*self.lock)
    }

    /// Live reader slots of every process using this environment: the
    /// snapshot each reads (`None`: a slot kept by its thread, idle).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// let r = env.read_txn()?;
    /// let readers = env.readers();
    /// assert_eq!(readers.len(), 1);
    /// assert_eq!(readers[0].pid, std::process::id());
    /// assert_eq!(readers[0].txnid, Some(0));
    /// drop(r);
    /// assert_eq!(env.readers()[0].txnid, None); // idle, kept by the thread
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn readers(&self) -> Vec<ReaderInfo> {
        self.lock_file().map_or_else(Vec::new, |l| l.readers())
    }

    /// The reader table in `mdb_reader_list` format.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// assert_eq!(env.reader_list_text(), "(no active readers)\n");
    /// let _r = env.read_txn()?;
    /// let text = env.reader_list_text();
    /// assert!(text.starts_with("    pid     thread     txnid\n"));
    /// assert!(text.contains(&std::process::id().to_string()));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn reader_list_text(&self) -> String {
        match self.lock_file() {
            Some(l) => l.reader_list_text(),
            None => "(no reader locks)\n".to_string(),
        }
    }

    /// Clear reader slots left by dead processes; returns how many were
    /// cleared. A crashed reader's slot would otherwise keep the pages of
    /// its snapshot from being reused.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// let _r = env.read_txn()?;
    /// assert_eq!(env.reader_check()?, 0); // this process is alive
    /// assert_eq!(env.readers().len(), 1);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn reader_check(&self) -> Result<usize> {
        match self.lock_file() {
            Some(l) => l.reader_check(),
            None => Ok(0),
        }
    }

    /// Key and duplicate comparators of `db` with record flags `flags`.
    #[inline]
    pub(crate) fn comparators(
        &self,
        db: Database,
        flags: u16,
    ) -> (crate::format::cmp::CmpFn, Option<crate::format::cmp::CmpFn>) {
        let mut k = crate::format::cmp::for_flags(flags);
        let mut d = (flags & crate::format::flags::DUPSORT != 0)
            .then(|| crate::format::cmp::dup_for_flags(flags));
        // Only take the registry lock when some database has a user comparator.
        if self.custom_cmp.load(Ordering::Relaxed) && db.0 >= 1 {
            if let Some(info) = self.dbis.read().unwrap().get(db.0 as usize) {
                if let Some(c) = info.cmp {
                    k = c;
                }
                if let (Some(c), Some(_)) = (info.dcmp, d) {
                    d = Some(c);
                }
            }
        }
        (k, d)
    }

    /// Order the keys of `db` with `cmp` instead of the comparator its flags
    /// select (`mdb_set_compare`). Like LMDB, the comparator is not stored in
    /// the file: every process must set the same one before using `db`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// fn by_len(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    ///     a.len().cmp(&b.len()).then(a.cmp(b))
    /// }
    /// let env = Env::open(dir.path())?;
    /// env.set_compare(Database::MAIN, by_len)?;
    /// let mut w = env.write_txn()?;
    /// for k in [&b"ccc"[..], b"a", b"bb"] {
    ///     w.put(Database::MAIN, k, b"", WriteFlags::EMPTY)?;
    /// }
    /// let keys: Vec<&[u8]> = w.cursor(Database::MAIN)?.iter().map(|kv| kv.unwrap().0).collect();
    /// assert_eq!(keys, [&b"a"[..], b"bb", b"ccc"]);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_compare(&self, db: Database, cmp: crate::format::cmp::RustCmp) -> Result<()> {
        self.set_cmp(db, Some(crate::format::cmp::CmpFn::rust(cmp)), None)
    }

    /// Order the duplicate values of DUPSORT `db` with `cmp`
    /// (`mdb_set_dupsort`). Like [`Env::set_compare`], not stored in the
    /// file: set it before each use of `db`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// fn newest_first(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    ///     b.cmp(a)
    /// }
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let log = w.create_db("log", DbFlags::DUP_SORT)?;
    /// env.set_dupsort(log, newest_first)?;
    /// for v in [b"2024", b"2026", b"2025"] {
    ///     w.put(log, b"events", v, WriteFlags::EMPTY)?;
    /// }
    /// assert_eq!(w.get(log, b"events")?, Some(&b"2026"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_dupsort(&self, db: Database, cmp: crate::format::cmp::RustCmp) -> Result<()> {
        self.set_cmp(db, None, Some(crate::format::cmp::CmpFn::rust(cmp)))
    }

    /// Set key (`dup == false`) or duplicate comparator of `db` to any
    /// [`crate::CmpFn`], including C callbacks (the C ABI uses this).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CmpFn, Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// env.set_comparator(Database::MAIN, CmpFn::rust(|a, b| b.cmp(a)), false)?;
    /// let mut w = env.write_txn()?;
    /// for k in [b"a", b"c", b"b"] {
    ///     w.put(Database::MAIN, k, b"", WriteFlags::EMPTY)?;
    /// }
    /// let first = w.cursor(Database::MAIN)?.first()?.unwrap().0;
    /// assert_eq!(first, b"c");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_comparator(
        &self,
        db: Database,
        cmp: crate::format::cmp::CmpFn,
        dup: bool,
    ) -> Result<()> {
        if dup {
            self.set_cmp(db, None, Some(cmp))
        } else {
            self.set_cmp(db, Some(cmp), None)
        }
    }

    fn set_cmp(
        &self,
        db: Database,
        cmp: Option<crate::format::cmp::CmpFn>,
        dcmp: Option<crate::format::cmp::CmpFn>,
    ) -> Result<()> {
        let mut t = self.dbis.write().unwrap();
        let info = t
            .get_mut(db.0 as usize)
            .filter(|_| db.0 >= 1)
            .ok_or(ErrorKind::Misuse(Misuse::UnknownHandle))?;
        if cmp.is_some() {
            info.cmp = cmp;
        }
        if dcmp.is_some() {
            info.dcmp = dcmp;
        }
        self.custom_cmp.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// `e`, saying that `op` on `db`, given a key and a value of these
    /// sizes, is what failed.
    #[cold]
    pub(crate) fn failed(
        &self,
        e: Error,
        op: &'static str,
        db: Database,
        key: Option<usize>,
        val: Option<usize>,
    ) -> Error {
        e.during(op, || self.db_label(db), key, val)
    }

    /// How an error names database `db`.
    fn db_label(&self, db: Database) -> DbLabel {
        match db.0 {
            0 => DbLabel::Free,
            1 => DbLabel::Main,
            _ => match self.dbis.read().unwrap().get(db.0 as usize) {
                Some(DbiInfo { name: Some(n), .. }) => DbLabel::Named(n.clone()),
                _ => DbLabel::Handle(db.0),
            },
        }
    }

    pub(crate) fn dbi_info(&self, db: Database) -> Result<DbiInfo> {
        let t = self.dbis.read().unwrap();
        t.get(db.0 as usize)
            .cloned()
            .ok_or(Misuse::UnknownHandle.into())
    }

    /// Find or register the handle for a named database, opened by the write
    /// transaction at nesting level `level`, or by a read transaction (`None`).
    pub(crate) fn register_dbi(
        &self,
        name: &[u8],
        flags: u16,
        level: Option<u32>,
    ) -> Result<Database> {
        let mut t = self.dbis.write().unwrap();
        // A reader cannot use the writer's uncommitted handle: it gets its own.
        let usable = |d: &DbiInfo| level.is_some() || d.pending.is_none();
        if let Some(i) = t
            .iter()
            .position(|d| d.name.as_deref() == Some(name) && usable(d))
        {
            t[i].flags = flags;
            return Ok(Database(i as u32, self.tag()));
        }
        let info = DbiInfo {
            name: Some(name.to_vec()),
            flags,
            cmp: None,
            dcmp: None,
            pending: level,
            snap: None,
        };
        // Reuse a closed slot first.
        if let Some(i) = t.iter().skip(2).position(|d| d.name.is_none()) {
            t[i + 2] = info;
            return Ok(Database((i + 2) as u32, self.tag()));
        }
        if t.len() >= 2 + self.max_dbs as usize {
            return Err(ErrorKind::DbsFull.into());
        }
        t.push(info);
        Ok(Database((t.len() - 1) as u32, self.tag()))
    }

    /// The write transaction at nesting level `level` ends: the handles it
    /// (or its children) opened pass to its parent, or to every transaction
    /// at level 0, if `keep`; otherwise they are closed.
    pub(crate) fn end_new_dbis(&self, level: u32, keep: bool) {
        let mine = |d: &DbiInfo| d.pending.is_some_and(|l| l >= level);
        if !self.dbis.read().unwrap().iter().any(mine) {
            return;
        }
        for d in self.dbis.write().unwrap().iter_mut().filter(|d| mine(d)) {
            if keep {
                d.pending = level.checked_sub(1);
            } else {
                d.name = None;
                d.pending = None;
                d.snap = None;
            }
        }
    }

    /// Close a named database handle so its slot can be reused (`mdb_dbi_close`).
    /// The handle must not be used by any live transaction afterwards.
    /// Only needed by programs that open many databases in turn; handles
    /// are otherwise kept for the environment's life.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let a = w.create_db("a", DbFlags::EMPTY)?;
    /// w.commit()?;
    /// env.close_db(a); // its slot is free again
    /// let mut w = env.write_txn()?;
    /// w.create_db("b", DbFlags::EMPTY)?; // fits in max_dbs(1)
    /// w.commit()?;
    /// let r = env.read_txn()?;
    /// assert_eq!(r.stat(r.open_db("b")?)?.entries, 0);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn close_db(&self, db: Database) {
        if db.0 >= 2 {
            let mut t = self.dbis.write().unwrap();
            if let Some(d) = t.get_mut(db.0 as usize) {
                d.name = None;
                d.snap = None;
            }
        }
    }
}

/// Attempts at a snapshot while commits keep moving `lock.txnid`.
pub(crate) const SNAPSHOT_RETRIES: usize = 1 << 16;

impl Drop for Env {
    fn drop(&mut self) {
        // The lock file may outlive this Env (shared with another Env of
        // this process): give back the slots of our threads now.
        self.thread_slots.release_all();
        drop(self.checkpointer.take());
        drop(self.flusher.take());
        let flags = self.flags();
        if self.auto_grows()
            && !flags.contains(EnvFlags::READ_ONLY)
            && !self.panicked.load(Ordering::Relaxed)
        {
            // A grown file gives its free tail back (a failure keeps it).
            self.shrink_at_close();
        }
        self.lock.handles.fetch_sub(1, Ordering::AcqRel);
        if let Some(w) = &self.wal {
            if !self.panicked.load(Ordering::Relaxed) {
                // The last checkpoint; a failure leaves the log to replay.
                let _ = w.checkpoint(true);
            }
        }
    }
}

impl DataFile {
    /// Write the two meta pages of a new file and make them durable.
    pub(crate) fn file_write_initial(&self, both: &[u8]) -> Result<()> {
        self.write_pages(both.len() / 2, &[(0, both)])?;
        self.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::meta::META_WRITE_OFF;

    /// A reader took `t` as the newest txn; before it copied meta `t`, `t + 1`
    /// committed and the writer of `t + 2` began rewriting that meta page.
    /// The half-written page still shows txnid `t`: only the moved
    /// `lock.txnid` tells the copy is torn.
    #[test]
    fn meta_copy_racing_its_rewrite_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let env = EnvOptions::new()
            .flags(EnvFlags::WRITE_MAP | EnvFlags::NO_SYNC)
            .open(dir.path())
            .unwrap();
        let commit = |k: &[u8]| {
            let mut w = env.write_txn().unwrap();
            w.put(Database::MAIN, k, b"v", crate::WriteFlags::EMPTY)
                .unwrap();
            w.commit().unwrap();
        };
        commit(b"a");
        commit(b"b");
        let t = env.lock.txnid();
        assert_eq!(env.meta_with_txnid(t).unwrap().unwrap().1.txnid, t);
        commit(b"c");
        // Half of `t + 2`'s meta update: new roots, txnid not written yet.
        let mut torn = env.newest_meta().unwrap();
        torn.txnid = t;
        let off = (t & 1) as usize * env.psize + META_WRITE_OFF;
        env.map().write(off, &torn.encode_update()).unwrap();
        assert!(
            env.meta_with_txnid(t).is_none(),
            "a torn meta copy was taken"
        );
        assert_eq!(env.newest_meta().unwrap().txnid, t + 1);
    }
}
