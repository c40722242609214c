//! Transactions: read snapshots ([`RoTxn`]) and the single writer ([`RwTxn`]).
//!
//! A read transaction publishes its snapshot's txn id in a reader slot and
//! then reads pages straight from the map: no locks, no copies. The write
//! transaction copies pages on write into heap buffers ("dirty pages"),
//! allocates page numbers from the free list, and at commit writes the dirty
//! pages, syncs, and flips the meta page (see `commit.rs`).

use crate::cursor::Cursor;
use crate::db::{Database, Stat, DUPSORT, INTEGERKEY, PERSISTENT, SUPPORTED};
use crate::env::{pick_meta, Env, EnvFlags};
use crate::error::{Error, Result};
use crate::freelist::FreeState;
use crate::lock::LockFile;
use crate::meta::{DbRecord, Meta};
use crate::page::{Page, F_DUPDATA, F_SUBDATA, P_OVERFLOW};
use crate::tree;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::marker::PhantomData;

/// Attempts at a snapshot while commits keep moving `lock.txnid`.
const SNAPSHOT_RETRIES: usize = 1 << 16;

pub(crate) mod sealed {
    use super::*;

    /// Page access shared by read and write transactions.
    pub trait Snapshot {
        /// The environment.
        fn env(&self) -> &Env;
        /// A tree page.
        fn page(&self, pgno: u64) -> Result<Page<'_>>;
        /// `len` value bytes stored in the overflow run starting at `pgno`.
        fn overflow(&self, pgno: u64, len: usize) -> Result<&[u8]>;
        /// The current record of a database.
        fn db(&self, db: Database) -> Result<DbRecord>;
        /// Transaction id.
        fn txn_id(&self) -> u64;
        /// Remember `rec` as the record of `db` in this transaction.
        fn cache_db(&self, db: Database, rec: DbRecord);
        /// Changes made so far (write transactions): detached cursors
        /// re-find their item when it moved.
        fn generation(&self) -> u64 {
            0
        }
    }
}
use sealed::Snapshot;

/// Operations every transaction offers: lookups, cursors and statistics.
pub trait Txn: Snapshot + Sized {
    /// Look up `key`; the value borrows from the map (or the transaction's own
    /// pages) and cannot outlive the transaction.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Env, Database, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let r = env.read_txn()?;
    /// assert_eq!(r.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    fn get(&self, db: Database, key: &[u8]) -> Result<Option<&[u8]>> {
        let rec = self.db(db)?;
        let (cmp, _) = self.env().comparators(db, rec.flags);
        tree::get(self, &rec, cmp, key)
    }

    /// A cursor over `db`, unpositioned.
    fn cursor(&self, db: Database) -> Result<Cursor<'_, Self>> {
        Cursor::new(self, db)
    }

    /// Statistics of `db` in this snapshot.
    fn stat(&self, db: Database) -> Result<Stat> {
        Ok(Stat::from_record(self.env().psize, &self.db(db)?))
    }

    /// Flags of `db`.
    fn db_flags(&self, db: Database) -> Result<crate::DbFlags> {
        Ok(crate::DbFlags(self.db(db)?.flags))
    }

    /// The id of this transaction (the snapshot's id for readers).
    fn id(&self) -> u64 {
        self.txn_id()
    }

    /// Open an existing named database: `NotFound` if absent, `Incompatible` if
    /// the name is a plain key of the main database.
    fn open_db(&self, name: impl AsRef<[u8]>) -> Result<Database> {
        let name = name.as_ref();
        check_name(self.env(), name)?;
        let rec = lookup_named(self, name)?.ok_or(Error::NotFound)?;
        check_supported(rec.flags)?;
        let db = self.env().register_dbi(name, rec.flags)?;
        // The handle slot may have been closed and reused: refresh our copy.
        self.cache_db(db, rec);
        Ok(db)
    }
}

pub(crate) fn check_name(env: &Env, name: &[u8]) -> Result<()> {
    if name.is_empty() || name.len() > crate::env::MAX_KEY_SIZE {
        return Err(Error::BadValSize);
    }
    let main = env.dbi_info(Database::MAIN)?;
    if main.flags & (DUPSORT | INTEGERKEY) != 0 {
        return Err(Error::Incompatible);
    }
    Ok(())
}

/// Reject what this engine cannot yet handle, instead of misreading it.
pub(crate) fn check_supported(flags: u16) -> Result<()> {
    if flags & PERSISTENT & !SUPPORTED != 0 {
        return Err(Error::Incompatible);
    }
    Ok(())
}

/// The record of named database `name` in the main database of `s`.
pub(crate) fn lookup_named<S: Snapshot>(s: &S, name: &[u8]) -> Result<Option<DbRecord>> {
    let main = s.db(Database::MAIN)?;
    let (cmp, _) = s.env().comparators(Database::MAIN, main.flags);
    match tree::get_node(s, &main, cmp, name)? {
        None => Ok(None),
        Some(n) => {
            if n.flags() & (F_SUBDATA | F_DUPDATA) != F_SUBDATA || n.dsize() != 48 {
                return Err(Error::Incompatible);
            }
            Ok(Some(DbRecord::decode(n.data())))
        }
    }
}

thread_local! {
    /// Environments in which this thread holds a TLS-bound read transaction.
    static READ_ACTIVE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// Environments in which this thread holds the write transaction.
    static WRITE_ACTIVE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

fn tls_enter(set: &'static std::thread::LocalKey<RefCell<Vec<usize>>>, id: usize) -> bool {
    set.with(|s| {
        let mut s = s.borrow_mut();
        if s.contains(&id) {
            false
        } else {
            s.push(id);
            true
        }
    })
}

fn tls_leave(set: &'static std::thread::LocalKey<RefCell<Vec<usize>>>, id: usize) {
    set.with(|s| s.borrow_mut().retain(|&x| x != id));
}

/// A read-only snapshot. Lookups take no lock and never wait for the writer.
pub struct RoTxn<'env> {
    env: &'env Env,
    slot: Option<usize>,
    meta: Meta,
    /// Pages below this may be read without a check (see [`Env::snapshot_bound`]).
    bound: Cell<u64>,
    dbs: RefCell<Vec<Option<DbRecord>>>,
    tls: bool,
    /// Bound to the thread, as LMDB's default reader slots are.
    _not_send: PhantomData<*const ()>,
}

impl Env {
    /// Begin a read transaction. Without NO_TLS a thread may hold only one
    /// per environment (`BadRslot` otherwise).
    pub fn read_txn(&self) -> Result<RoTxn<'_>> {
        if self.panicked.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::Panic);
        }
        let tls = !self.flags().contains(EnvFlags::NO_TLS);
        if tls && !tls_enter(&READ_ACTIVE, self.id) {
            return Err(Error::BadRslot);
        }
        let r = self.begin_snapshot();
        match r {
            Ok((slot, meta)) => Ok(RoTxn {
                env: self,
                slot,
                meta,
                bound: Cell::new(self.snapshot_bound(&meta)),
                dbs: RefCell::new(Vec::new()),
                tls,
                _not_send: PhantomData,
            }),
            Err(e) => {
                if tls {
                    tls_leave(&READ_ACTIVE, self.id);
                }
                Err(e)
            }
        }
    }

    fn begin_snapshot(&self) -> Result<(Option<usize>, Meta)> {
        let Some(lock) = &self.lock else {
            let m = self.newest_meta()?;
            self.check_mapped(&m)?;
            return Ok((None, m));
        };
        let slot = match self.idle_slots.lock().unwrap().pop() {
            Some(s) => {
                // SAFETY: pthread_self has no preconditions.
                lock.set_slot_tid(s, unsafe { libc::pthread_self() } as u64);
                s
            }
            None => lock.acquire_slot()?,
        };
        match self.publish_snapshot(lock, slot) {
            Ok(m) => Ok((Some(slot), m)),
            Err(e) => {
                self.release_slot(slot);
                Err(e)
            }
        }
    }

    /// Publish the newest snapshot's txnid in reader slot `slot` and return
    /// its meta. A retry is taken only when a commit moved `lock.txnid`
    /// meanwhile (its meta may have been read half-written); a txnid that no
    /// meta carries is settled from the metas, so no meta pages, however
    /// damaged, make this loop.
    fn publish_snapshot(&self, l: &LockFile, slot: usize) -> Result<Meta> {
        for _ in 0..SNAPSHOT_RETRIES {
            let t = l.txnid();
            l.set_slot_txnid(slot, t);
            let found = self.meta_with_txnid(t);
            if l.txnid() != t {
                continue;
            }
            let m = match found {
                Some((_, m)) => m,
                None => {
                    // The data file changed behind the lock file's back, or
                    // a meta page is damaged. The slot keeps the older id,
                    // so the writer keeps every page either could see.
                    let (_, m) = pick_meta(self.meta_page(0), self.meta_page(1))?;
                    l.set_slot_txnid(slot, m.txnid.min(t));
                    if l.txnid() != t {
                        continue;
                    }
                    m
                }
            };
            self.check_mapped(&m)?;
            return Ok(m);
        }
        // Only a lock file being scribbled on moves lock.txnid this often.
        Err(Error::Corrupted)
    }

    /// `MapResized` if the snapshot reaches past this handle's map (another
    /// process grew the map).
    fn check_mapped(&self, m: &Meta) -> Result<()> {
        let end = m
            .last_pgno
            .checked_add(1)
            .and_then(|n| n.checked_mul(self.psize as u64));
        if end.is_none_or(|e| e > self.map.len() as u64) {
            return Err(Error::MapResized);
        }
        Ok(())
    }

    /// Pages of the snapshot of `m` that lie in the data file as last seen:
    /// what may be read from the map without another look at its length.
    fn snapshot_bound(&self, m: &Meta) -> u64 {
        m.last_pgno.saturating_add(1).min(self.file_pages())
    }

    fn release_slot(&self, slot: usize) {
        if let Some(l) = &self.lock {
            l.set_slot_txnid(slot, u64::MAX);
            self.idle_slots.lock().unwrap().push(slot);
        }
    }
}

impl RoTxn<'_> {
    /// End the transaction (same as dropping it).
    pub fn abort(self) {}

    /// Release the snapshot but keep the transaction object for [`RoTxn::renew`].
    pub fn reset(&mut self) {
        if let Some(l) = &self.env.lock {
            if let Some(s) = self.slot {
                l.set_slot_txnid(s, u64::MAX);
            }
        }
        self.dbs.borrow_mut().clear();
    }

    /// Take a fresh snapshot after [`RoTxn::reset`].
    pub fn renew(&mut self) -> Result<()> {
        let env = self.env;
        let m = match (&env.lock, self.slot) {
            (Some(l), Some(s)) => env.publish_snapshot(l, s).inspect_err(|_| {
                l.set_slot_txnid(s, u64::MAX);
            })?,
            _ => {
                let m = env.newest_meta()?;
                env.check_mapped(&m)?;
                m
            }
        };
        self.meta = m;
        self.bound.set(env.snapshot_bound(&m));
        self.dbs.borrow_mut().clear();
        Ok(())
    }
}

impl Drop for RoTxn<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.slot {
            self.env.release_slot(s);
        }
        if self.tls {
            tls_leave(&READ_ACTIVE, self.env.id);
        }
    }
}

/// Load the record of database `db` as seen from `s`'s main database.
fn load_named<S: Snapshot>(s: &S, env: &Env, db: Database) -> Result<DbRecord> {
    let info = env.dbi_info(db)?;
    let name = info.name.ok_or(Error::BadDbi)?;
    let rec = lookup_named(s, &name)?.ok_or(Error::BadDbi)?;
    check_supported(rec.flags)?;
    Ok(rec)
}

impl Snapshot for RoTxn<'_> {
    fn env(&self) -> &Env {
        self.env
    }
    #[inline]
    fn page(&self, pgno: u64) -> Result<Page<'_>> {
        if pgno >= self.bound.get() || pgno < 2 {
            reach(self.env, &self.bound, self.meta.last_pgno, pgno, 1)?;
        }
        let ps = self.env.psize;
        Page::new(self.env.map.slice(pgno as usize * ps, ps)?)
    }
    fn overflow(&self, pgno: u64, len: usize) -> Result<&[u8]> {
        let ps = self.env.psize;
        let need = crate::page::ov_pages(ps, len) as u64;
        let b = self.bound.get();
        if pgno < 2 || pgno >= b || need > b - pgno {
            reach(self.env, &self.bound, self.meta.last_pgno, pgno, need)?;
        }
        let b = self
            .env
            .map
            .slice(pgno as usize * ps, crate::page::HDR + len)?;
        if crate::page::rd16(b, 10) & P_OVERFLOW == 0 {
            return Err(Error::Corrupted);
        }
        Ok(&b[crate::page::HDR..])
    }
    #[inline]
    fn db(&self, db: Database) -> Result<DbRecord> {
        match db.0 {
            0 => Ok(self.meta.free),
            1 => Ok(self.meta.main),
            i => {
                let i = i as usize;
                if let Some(Some(r)) = self.dbs.borrow().get(i) {
                    return Ok(*r);
                }
                let r = load_named(self, self.env, db)?;
                let mut d = self.dbs.borrow_mut();
                if d.len() <= i {
                    d.resize(i + 1, None);
                }
                d[i] = Some(r);
                Ok(r)
            }
        }
    }
    fn txn_id(&self) -> u64 {
        self.meta.txnid
    }
    fn cache_db(&self, db: Database, rec: DbRecord) {
        let i = db.0 as usize;
        let mut d = self.dbs.borrow_mut();
        if d.len() <= i {
            d.resize(i + 1, None);
        }
        d[i] = Some(rec);
    }
}

impl Txn for RoTxn<'_> {}

/// The slow path of a page access at or past `bound`: `PageNotFound` unless
/// pages `pgno..pgno + n` are in `2..=last`; `Corrupted` if they are not
/// all in the data file, whose length is re-read first (another process's
/// writer may have extended it). Raises `bound` to what the file now holds.
#[cold]
#[inline(never)]
fn reach(env: &Env, bound: &Cell<u64>, last: u64, pgno: u64, n: u64) -> Result<()> {
    let end = pgno.checked_add(n).ok_or(Error::PageNotFound)?;
    if pgno < 2 || end > last.saturating_add(1) {
        return Err(Error::PageNotFound);
    }
    let b = env.refresh_file_pages()?.min(last.saturating_add(1));
    bound.set(b);
    if end > b {
        return Err(Error::Corrupted);
    }
    Ok(())
}

/// Per-database state inside a write transaction.
#[derive(Clone, Copy)]
pub(crate) struct TxnDb {
    pub(crate) rec: DbRecord,
    /// The record changed and must be written back at commit.
    pub(crate) dirty: bool,
}

/// A fast hasher for page numbers (they are already well spread).
#[derive(Default, Clone, Copy)]
pub(crate) struct PgnoHasher(u64);

impl std::hash::Hasher for PgnoHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(crate) type PgnoMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<PgnoHasher>>;

/// The write transaction. Only one exists at a time across all processes;
/// dropping it without [`RwTxn::commit`] aborts it.
pub struct RwTxn<'env> {
    pub(crate) env: &'env Env,
    pub(crate) txnid: u64,
    pub(crate) base: Meta,
    /// Pages written in this transaction, by page number (runs under their first page).
    pub(crate) dirty: PgnoMap<Box<[u8]>>,
    /// Committed pages below this may be read without a check (see [`Env::snapshot_bound`]).
    bound: Cell<u64>,
    pub(crate) next_pgno: u64,
    pub(crate) max_pgno: u64,
    pub(crate) dbs: RefCell<Vec<Option<TxnDb>>>,
    pub(crate) free: FreeState,
    pub(crate) spare: Vec<Box<[u8]>>,
    /// Set when an operation failed midway: the transaction can only abort.
    pub(crate) broken: Cell<bool>,
    /// Count of modifications, for detached cursors (see `CursorState`).
    pub(crate) gen: Cell<u64>,
    _local: Option<std::sync::MutexGuard<'env, ()>>,
    locked: bool,
    _not_send: PhantomData<*const ()>,
}

impl Env {
    /// Begin the write transaction, waiting for any other writer (in this or
    /// another process) to finish. A thread that already holds it gets `BadTxn`.
    pub fn write_txn(&self) -> Result<RwTxn<'_>> {
        if self.flags().contains(EnvFlags::READ_ONLY) {
            return Err(Error::Os(libc::EACCES));
        }
        if self.panicked.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::Panic);
        }
        if !tls_enter(&WRITE_ACTIVE, self.id) {
            return Err(Error::BadTxn);
        }
        let r = self.begin_write();
        if r.is_err() {
            tls_leave(&WRITE_ACTIVE, self.id);
        }
        r
    }

    fn begin_write(&self) -> Result<RwTxn<'_>> {
        let local = self.local_writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut locked = false;
        if let Some(l) = &self.lock {
            let recovered = l.lock_writer()?;
            locked = true;
            if recovered {
                // The previous writer died; its uncommitted pages are unreferenced.
                if let Ok((_, m)) = pick_meta(self.meta_page(0), self.meta_page(1)) {
                    l.set_txnid(m.txnid);
                }
            }
        }
        let unlock = |e: Error| {
            if let Some(l) = &self.lock {
                l.unlock_writer();
            }
            e
        };
        let (slot, base) = self.current_meta().map_err(unlock)?;
        self.check_mapped(&base).map_err(unlock)?;
        // The new meta goes to the slot the base is not in, also when a
        // damaged file has the base in the wrong one: a crash must leave it.
        let txnid = base
            .txnid
            .checked_add(if base.txnid & 1 == slot as u64 { 1 } else { 2 })
            .ok_or(Error::Corrupted)
            .map_err(unlock)?;
        let max_pgno = (self.map.len() / self.psize) as u64;
        let oldest = match &self.lock {
            Some(l) => l.oldest_reader(base.txnid),
            None => base.txnid,
        };
        Ok(RwTxn {
            env: self,
            txnid,
            base,
            bound: Cell::new(self.snapshot_bound(&base)),
            dirty: PgnoMap::default(),
            next_pgno: base.last_pgno + 1,
            max_pgno,
            dbs: RefCell::new(vec![
                Some(TxnDb {
                    rec: base.free,
                    dirty: false,
                }),
                Some(TxnDb {
                    rec: base.main,
                    dirty: false,
                }),
            ]),
            free: FreeState::new(oldest),
            spare: std::mem::take(&mut *self.page_pool.lock().unwrap()),
            broken: Cell::new(false),
            gen: Cell::new(1),
            _local: Some(local),
            locked,
            _not_send: PhantomData,
        })
    }
}

impl<'env> RwTxn<'env> {
    /// Discard every change (same as dropping the transaction).
    pub fn abort(self) {}

    /// Whether an operation failed midway, so the transaction can only abort.
    pub fn is_broken(&self) -> bool {
        self.broken.get()
    }

    pub(crate) fn finish(&mut self) {
        if self._local.is_none() {
            return;
        }
        // Keep page buffers for the next writer: no allocation or page
        // faults for them next time.
        let ps = self.env.psize;
        let mut pool = std::mem::take(&mut self.spare);
        pool.extend(self.dirty.drain().map(|(_, b)| b).filter(|b| b.len() == ps));
        pool.truncate(PAGE_POOL_MAX);
        *self.env.page_pool.lock().unwrap() = pool;
        if self.locked {
            if let Some(l) = &self.env.lock {
                l.unlock_writer();
            }
            self.locked = false;
        }
        tls_leave(&WRITE_ACTIVE, self.env.id);
        self._local = None;
    }

    /// Record of `db`, loading named records on first use.
    pub(crate) fn rec(&self, db: Database) -> Result<DbRecord> {
        let i = db.0 as usize;
        if let Some(Some(d)) = self.dbs.borrow().get(i) {
            return Ok(d.rec);
        }
        let r = load_named(self, self.env, db)?;
        self.set_loaded(i, r, false);
        Ok(r)
    }

    fn set_loaded(&self, i: usize, rec: DbRecord, dirty: bool) {
        let mut d = self.dbs.borrow_mut();
        if d.len() <= i {
            d.resize(i + 1, None);
        }
        d[i] = Some(TxnDb { rec, dirty });
    }

    /// Replace the record of `db` (marks it for write-back).
    pub(crate) fn set_rec(&self, db: Database, rec: DbRecord) {
        self.set_loaded(db.0 as usize, rec, true);
    }

    /// Open a named database, creating it with `flags` if it does not exist.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(4).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let fruits = w.create_db("fruits", DbFlags::EMPTY)?;
    /// w.put(fruits, b"apple", b"red", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn create_db(&mut self, name: impl AsRef<[u8]>, flags: crate::DbFlags) -> Result<Database> {
        let name = name.as_ref();
        check_name(self.env, name)?;
        match lookup_named(self, name)? {
            Some(rec) => {
                check_supported(rec.flags)?;
                let db = self.env.register_dbi(name, rec.flags)?;
                if self
                    .dbs
                    .borrow()
                    .get(db.0 as usize)
                    .and_then(|d| *d)
                    .is_none()
                {
                    self.set_loaded(db.0 as usize, rec, false);
                }
                Ok(db)
            }
            None => {
                check_supported(flags.0)?;
                if flags.0 & !PERSISTENT != 0 {
                    return Err(Error::Os(libc::EINVAL));
                }
                let db = self.env.register_dbi(name, flags.0)?;
                self.gen.set(self.gen.get() + 1);
                let rec = DbRecord::empty(flags.0);
                self.set_rec(db, rec);
                // Store the record now so the main tree holds it from here on.
                let mut m = self.tree(Database::MAIN)?;
                let r = self.tree_put(
                    &mut m,
                    name,
                    crate::page::NodeData::SubDb(&rec.encode()),
                    crate::WriteFlags::NO_OVERWRITE,
                );
                self.set_rec(Database::MAIN, m.rec);
                r?;
                Ok(db)
            }
        }
    }

    /// Set the key flags of the main database (only while it is empty).
    pub fn set_main_flags(&mut self, flags: crate::DbFlags) -> Result<()> {
        check_supported(flags.0)?;
        let mut rec = self.rec(Database::MAIN)?;
        if rec.flags == flags.0 {
            return Ok(());
        }
        if rec.entries != 0 {
            return Err(Error::Incompatible);
        }
        rec.flags = flags.0;
        self.set_rec(Database::MAIN, rec);
        self.env.dbis.write().unwrap()[1].flags = flags.0;
        Ok(())
    }
}

/// Page buffers kept between write transactions (16 MiB of 4 KiB pages).
const PAGE_POOL_MAX: usize = 4096;

/// A nested (child) write transaction: it sees its parent's changes, and
/// its own become part of the parent on [`NestedTxn::commit`] or vanish on
/// abort (drop). The parent is borrowed for the child's life, so it cannot be
/// used meanwhile (LMDB's `MDB_BAD_TXN` rule, checked at compile time).
/// Children nest to any depth; all [`RwTxn`] operations are available
/// through `Deref`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"a", b"1", WriteFlags::EMPTY)?;
/// {
///     let mut child = w.nested()?;
///     child.put(Database::MAIN, b"b", b"2", WriteFlags::EMPTY)?;
///     child.abort();
/// }
/// let mut child = w.nested()?;
/// child.put(Database::MAIN, b"c", b"3", WriteFlags::EMPTY)?;
/// child.commit()?;
/// assert_eq!(w.get(Database::MAIN, b"b")?, None);
/// assert_eq!(w.get(Database::MAIN, b"c")?, Some(&b"3"[..]));
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct NestedTxn<'p, 'env> {
    parent: &'p mut RwTxn<'env>,
    saved: Option<Saved>,
}

/// The parent's state when a child began: what an abort restores.
struct Saved {
    dirty: PgnoMap<Box<[u8]>>,
    next_pgno: u64,
    dbs: Vec<Option<TxnDb>>,
    free: FreeState,
    broken: bool,
}

impl<'env> RwTxn<'env> {
    /// Begin a child transaction. Its cost is a copy of this transaction's
    /// dirty pages, taken so an abort can restore them.
    pub fn nested(&mut self) -> Result<NestedTxn<'_, 'env>> {
        if self.broken.get() {
            return Err(Error::BadTxn);
        }
        let saved = Saved {
            dirty: self.dirty.clone(),
            next_pgno: self.next_pgno,
            dbs: self.dbs.borrow().clone(),
            free: self.free.clone(),
            broken: self.broken.get(),
        };
        Ok(NestedTxn {
            parent: self,
            saved: Some(saved),
        })
    }
}

impl NestedTxn<'_, '_> {
    /// Fold the child's changes into the parent. A child that failed midway
    /// cannot commit: its changes are dropped and `BadTxn` is returned.
    pub fn commit(mut self) -> Result<()> {
        if self.parent.broken.get() {
            // As LMDB: the failed child is discarded and the parent can only abort.
            let parent = &mut *self.parent;
            if let Some(s) = self.saved.take() {
                restore(parent, s);
            }
            parent.broken.set(true);
            return Err(Error::BadTxn);
        }
        self.saved = None;
        Ok(())
    }

    /// Discard the child's changes (same as dropping it).
    pub fn abort(self) {}
}

fn restore(p: &mut RwTxn<'_>, s: Saved) {
    p.dirty = s.dirty;
    p.next_pgno = s.next_pgno;
    *p.dbs.borrow_mut() = s.dbs;
    p.free = s.free;
    p.broken.set(s.broken);
    p.gen.set(p.gen.get() + 1);
}

impl Drop for NestedTxn<'_, '_> {
    fn drop(&mut self) {
        if let Some(s) = self.saved.take() {
            restore(self.parent, s);
        }
    }
}

impl<'env> std::ops::Deref for NestedTxn<'_, 'env> {
    type Target = RwTxn<'env>;
    fn deref(&self) -> &RwTxn<'env> {
        self.parent
    }
}

impl std::ops::DerefMut for NestedTxn<'_, '_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.parent
    }
}

impl Drop for RwTxn<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl RwTxn<'_> {
    /// `len` bytes of the committed page run at `pgno`, straight from the
    /// map: never past the end of the data file.
    #[inline]
    pub(crate) fn committed(&self, pgno: u64, len: usize) -> Result<&[u8]> {
        let ps = self.env.psize;
        let b = self.bound.get();
        // (No division for the usual one-page read.)
        if pgno < 2 || pgno >= b || (len > ps && len.div_ceil(ps) as u64 > b - pgno) {
            let n = len.div_ceil(ps).max(1) as u64;
            reach(self.env, &self.bound, self.next_pgno - 1, pgno, n)?;
        }
        self.env.map.slice(pgno as usize * ps, len)
    }
}

impl Snapshot for RwTxn<'_> {
    fn env(&self) -> &Env {
        self.env
    }
    #[inline]
    fn page(&self, pgno: u64) -> Result<Page<'_>> {
        if let Some(b) = self.dirty.get(&pgno) {
            return Page::new(b);
        }
        Page::new(self.committed(pgno, self.env.psize)?)
    }
    fn overflow(&self, pgno: u64, len: usize) -> Result<&[u8]> {
        let h = crate::page::HDR;
        if let Some(b) = self.dirty.get(&pgno) {
            return b.get(h..h + len).ok_or(Error::Corrupted);
        }
        let b = self.committed(pgno, h + len)?;
        if crate::page::rd16(b, 10) & P_OVERFLOW == 0 {
            return Err(Error::Corrupted);
        }
        Ok(&b[h..])
    }
    fn db(&self, db: Database) -> Result<DbRecord> {
        self.rec(db)
    }
    fn txn_id(&self) -> u64 {
        self.txnid
    }
    fn generation(&self) -> u64 {
        self.gen.get()
    }
    fn cache_db(&self, db: Database, rec: DbRecord) {
        // Keep a modified record of this transaction; replace a stale one.
        let fresh = match self.dbs.borrow().get(db.0 as usize) {
            Some(Some(d)) => !d.dirty,
            _ => true,
        };
        if fresh {
            self.set_loaded(db.0 as usize, rec, false);
        }
    }
}

impl Txn for RwTxn<'_> {}
