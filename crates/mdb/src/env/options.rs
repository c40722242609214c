//! Opening options: the environment flags and the [`EnvOptions`] builder.

use super::*;

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
    /// `MDB_NORDAHEAD`: no read-ahead: a page fault reads its own page only
    /// (`MADV_RANDOM` on the map), for databases larger than memory.
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
    /// Every flag an open accepts.
    pub(super) const VALID: u32 = EnvFlags::FIXED_MAP.0
        | EnvFlags::NO_SUB_DIR.0
        | EnvFlags::NO_SYNC.0
        | EnvFlags::READ_ONLY.0
        | EnvFlags::NO_META_SYNC.0
        | EnvFlags::WRITE_MAP.0
        | EnvFlags::MAP_ASYNC.0
        | EnvFlags::NO_TLS.0
        | EnvFlags::NO_LOCK.0
        | EnvFlags::NO_READAHEAD.0
        | EnvFlags::NO_MEM_INIT.0;
    /// The flags [`Env::set_flags`] may change on an open environment (LMDB's
    /// `CHANGEABLE`).
    pub(super) const CHANGEABLE: u32 = EnvFlags::NO_SYNC.0
        | EnvFlags::NO_META_SYNC.0
        | EnvFlags::MAP_ASYNC.0
        | EnvFlags::NO_MEM_INIT.0;
    /// The flags a new file records in the free database's record of its
    /// meta pages (as LMDB writes them).
    pub(super) const IN_META: u32 = EnvFlags::FIXED_MAP.0 | EnvFlags::NO_SUB_DIR.0;
}

impl std::ops::BitOr for EnvFlags {
    type Output = EnvFlags;
    fn bitor(self, o: EnvFlags) -> EnvFlags {
        EnvFlags(self.0 | o.0)
    }
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
    pub(super) map_size: usize,
    pub(super) max_dbs: u32,
    pub(super) max_readers: u32,
    pub(super) flags: EnvFlags,
    /// NO_LOCK was asked for through [`EnvOptions::no_lock`].
    pub(super) no_lock: bool,
    pub(super) mode: u32,
    pub(crate) fault: Option<Arc<dyn FaultInjector>>,
    pub(crate) wal: Option<WalOptions>,
    pub(super) auto_grow: bool,
    pub(super) txn_memory: usize,
    pub(super) accept_log_loss: bool,
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
    /// with NO_SUB_DIR). Under WRITE_MAP a commit still writes its pages
    /// with `pwrite` (copies into the map cost more, `wal/sink.rs`).
    /// NO_SYNC (and MAP_ASYNC with WRITE_MAP) commits return without a
    /// sync of the log ([`WalOptions::sync_every`]: `Env::sync`,
    /// checkpoints and the close make them durable; a crash loses the last
    /// of them, never the file's consistency). NO_META_SYNC does not
    /// apply: such a commit syncs the log, once.
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
