//! The environment: data file, map, lock file, and the database registry.
//! Its options in `options.rs`, its opening in `open.rs` (and the WAL
//! roll-forward in `wal_open.rs`), the database-handle registry and
//! comparators in `handles.rs`.

mod handles;
mod open;
mod options;
mod sink;
mod wal_open;

pub(crate) use handles::DbiInfo;
pub use options::{
    EnvFlags, EnvOptions, DEFAULT_CEILING, DEFAULT_MAPSIZE, DEFAULT_TXN_MEMORY, MAX_KEY_SIZE,
};

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

impl Env {
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
    pub fn wal_info(&self) -> Option<crate::wal::mode::WalInfo> {
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
            w.put(Database::MAIN, k, b"v", crate::tree::WriteFlags::EMPTY)
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
