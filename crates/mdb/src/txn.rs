//! Transactions: read snapshots ([`RoTxn`]) and the single writer ([`RwTxn`]).
//!
//! A read transaction publishes its snapshot's txn id in a reader slot and
//! then reads pages straight from the map: no locks, no copies. The write
//! transaction copies pages on write into heap buffers ("dirty pages"),
//! allocates page numbers from the free list, and at commit writes the dirty
//! pages, syncs, and flips the meta page (see `commit.rs`).

use crate::cursor::Cursor;
use crate::db::{Database, Stat};
use crate::env::{pick_meta, Env, EnvFlags};
use crate::error::{Error, Result};
use crate::format::flags::{DUPSORT, INTEGERKEY, PERSISTENT, SUPPORTED};
use crate::format::meta::{DbRecord, Meta};
use crate::format::page::{Page, F_DUPDATA, F_SUBDATA};
use crate::lock::LockFile;
use crate::pager::{MapView, PageRead, Pager};
use crate::tree;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, Weak};

pub(crate) mod sealed {
    use super::*;
    use crate::pager::PageRead;

    /// Page access shared by read and write transactions.
    pub trait Snapshot: PageRead {
        /// The environment.
        fn env(&self) -> &Env;
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
        /// Nesting level of a write transaction (`None` for readers): who
        /// may use a handle not committed yet (see `DbiInfo::pending`).
        fn write_level(&self) -> Option<u32> {
            None
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
    /// the name is a plain key of the main database. A handle first opened
    /// in a write transaction is usable by other transactions only once
    /// that one commits (see [`Database`]).
    fn open_db(&self, name: impl AsRef<[u8]>) -> Result<Database> {
        let name = name.as_ref();
        check_name(self.env(), name)?;
        let rec = lookup_named(self, name)?.ok_or(Error::NotFound)?;
        check_supported(rec.flags)?;
        let db = self
            .env()
            .register_dbi(name, rec.flags, self.write_level())?;
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
    /// Environments in which this thread holds the write transaction.
    static WRITE_ACTIVE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// The reader slots this thread owns (without NO_TLS), freed when it exits.
    static MY_SLOTS: MySlots = const { MySlots(RefCell::new(Vec::new())) };
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

/// The reader slots owned by the threads of one `Env`. As in LMDB, without
/// NO_TLS a thread takes a slot on its first read transaction and keeps it
/// until it exits or the `Env` closes, whichever comes first.
pub(crate) struct ThreadSlots {
    lock: Arc<LockFile>,
    held: Mutex<Vec<usize>>,
}

impl ThreadSlots {
    pub(crate) fn new(lock: Arc<LockFile>) -> ThreadSlots {
        ThreadSlots {
            lock,
            held: Mutex::new(Vec::new()),
        }
    }

    /// Free `slot` unless the `Env` closed (and freed it) already.
    fn release(&self, slot: usize) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = held.iter().position(|&s| s == slot) {
            held.swap_remove(i);
            self.lock.release_slot(slot);
        }
    }

    /// Free every slot (the `Env` closes).
    pub(crate) fn release_all(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        for s in held.drain(..) {
            self.lock.release_slot(s);
        }
    }
}

/// One slot this thread owns in the `Env` with id `env`.
struct MySlot {
    env: usize,
    owner: Weak<ThreadSlots>,
    slot: usize,
    /// A read transaction of this thread uses it (one at a time, as LMDB).
    busy: bool,
}

struct MySlots(RefCell<Vec<MySlot>>);

impl Drop for MySlots {
    fn drop(&mut self) {
        for s in self.0.get_mut().drain(..) {
            // A transaction still alive (kept in another thread-local) keeps
            // its slot until the `Env` closes.
            if let (false, Some(o)) = (s.busy, s.owner.upgrade()) {
                o.release(s.slot);
            }
        }
    }
}

/// A read-only snapshot. Lookups take no lock and never wait for the writer.
pub struct RoTxn<'env> {
    env: &'env Env,
    slot: usize,
    /// The slot is this transaction's (NO_TLS), freed at its end; otherwise
    /// it is its thread's.
    own_slot: bool,
    meta: Meta,
    /// The snapshot's pages in the map.
    view: MapView<'env>,
    dbs: RefCell<Vec<Option<DbRecord>>>,
    /// Bound to the thread, as LMDB's default reader slots are.
    _not_send: PhantomData<*const ()>,
}

impl Env {
    /// Begin a read transaction. Without NO_TLS a thread may hold only one
    /// per environment (`BadRslot` otherwise).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let r = env.read_txn()?; // a snapshot: later commits do not show
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// assert_eq!(r.get(Database::MAIN, b"k")?, None);
    /// drop(r);
    /// assert_eq!(env.read_txn()?.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn read_txn(&self) -> Result<RoTxn<'_>> {
        if self.panicked.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::Panic);
        }
        let (slot, own_slot) = self.reader_slot()?;
        let mut txn = RoTxn {
            env: self,
            slot,
            own_slot,
            // A placeholder until the snapshot is read.
            meta: Meta::new_env(self.psize as u32, 0, 0),
            view: MapView {
                env: self,
                bound: Cell::new(0),
                last: 0,
            },
            dbs: RefCell::new(Vec::new()),
            _not_send: PhantomData,
        };
        // On error, dropping `txn` gives the slot back.
        txn.meta = self.snapshot_into(slot)?;
        txn.view.bound.set(self.snapshot_bound(&txn.meta));
        txn.view.last = txn.meta.last_pgno;
        Ok(txn)
    }

    /// The slot for a new read transaction, and whether it is the
    /// transaction's own (freed at its end) rather than this thread's.
    fn reader_slot(&self) -> Result<(usize, bool)> {
        if self.flags().contains(EnvFlags::NO_TLS) {
            return Ok((self.lock.acquire_slot()?, true));
        }
        let mine = MY_SLOTS.try_with(|m| {
            let mut m = m.0.borrow_mut();
            if let Some(s) = m.iter_mut().find(|s| s.env == self.id) {
                if s.busy {
                    return Err(Error::BadRslot);
                }
                s.busy = true;
                return Ok(s.slot);
            }
            m.retain(|s| s.owner.strong_count() > 0);
            let slot = self.lock.acquire_slot()?;
            let owner = &self.thread_slots;
            owner
                .held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(slot);
            m.push(MySlot {
                env: self.id,
                owner: Arc::downgrade(owner),
                slot,
                busy: true,
            });
            Ok(slot)
        });
        match mine {
            Ok(r) => r.map(|s| (s, false)),
            // This thread is exiting: the transaction owns its slot.
            Err(_) => Ok((self.lock.acquire_slot()?, true)),
        }
    }

    /// Publish the newest snapshot's txnid in reader slot `slot` and return
    /// its meta; on error the slot is left idle. A retry is taken only when
    /// a commit moved `lock.txnid` meanwhile (its meta may have been read
    /// half-written); a txnid that no meta carries is settled from the
    /// metas, so no meta pages, however damaged, make this loop.
    fn snapshot_into(&self, slot: usize) -> Result<Meta> {
        let l = &self.lock;
        let r = self.publish_snapshot(slot);
        if r.is_err() {
            l.set_slot_txnid(slot, IDLE);
        }
        r
    }

    fn publish_snapshot(&self, slot: usize) -> Result<Meta> {
        let l = &self.lock;
        for _ in 0..crate::env::SNAPSHOT_RETRIES {
            let t = l.txnid();
            l.set_slot_txnid(slot, t);
            let m = match self.meta_with_txnid(t) {
                None => continue,
                Some(Some((_, m))) => m,
                Some(None) => {
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
}

/// Slot txnid of a reader without a snapshot.
const IDLE: u64 = u64::MAX;

impl RoTxn<'_> {
    /// End the transaction (same as dropping it).
    pub fn abort(self) {}

    /// Release the snapshot but keep the transaction object, and its reader
    /// slot, for [`RoTxn::renew`].
    pub fn reset(&mut self) {
        self.env.lock.set_slot_txnid(self.slot, IDLE);
        self.dbs.borrow_mut().clear();
    }

    /// Take a fresh snapshot after [`RoTxn::reset`].
    pub fn renew(&mut self) -> Result<()> {
        self.dbs.borrow_mut().clear();
        self.meta = self.env.snapshot_into(self.slot)?;
        self.view.bound.set(self.env.snapshot_bound(&self.meta));
        self.view.last = self.meta.last_pgno;
        Ok(())
    }
}

impl Drop for RoTxn<'_> {
    fn drop(&mut self) {
        if self.own_slot {
            self.env.lock.release_slot(self.slot);
            return;
        }
        self.env.lock.set_slot_txnid(self.slot, IDLE);
        // Gone already if this thread is exiting; then the slot stays the
        // `Env`'s until it closes.
        let _ = MY_SLOTS.try_with(|m| {
            let mut m = m.0.borrow_mut();
            let mine = m
                .iter_mut()
                .find(|s| s.env == self.env.id && s.slot == self.slot);
            if let Some(s) = mine {
                s.busy = false;
            }
        });
    }
}

/// Load the record of database `db` as seen from `s`'s main database.
/// `EINVAL` for a closed handle, and (as LMDB) for one that only the
/// uncommitted write transaction may use.
fn load_named<S: Snapshot>(s: &S, env: &Env, db: Database) -> Result<DbRecord> {
    let info = env.dbi_info(db)?;
    if info.pending.is_some() && s.write_level().is_none() {
        return Err(Error::Os(libc::EINVAL));
    }
    let name = info.name.ok_or(Error::Os(libc::EINVAL))?;
    let rec = lookup_named(s, &name)?.ok_or(Error::BadDbi)?;
    check_supported(rec.flags)?;
    Ok(rec)
}

impl PageRead for RoTxn<'_> {
    #[inline]
    fn page(&self, pgno: u64) -> Result<Page<'_>> {
        self.view.page(pgno)
    }
    #[inline]
    fn overflow(&self, pgno: u64, len: usize) -> Result<&[u8]> {
        self.view.overflow(pgno, len)
    }
}

impl Snapshot for RoTxn<'_> {
    fn env(&self) -> &Env {
        self.env
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

/// Per-database state inside a write transaction.
#[derive(Clone, Copy)]
pub(crate) struct TxnDb {
    pub(crate) rec: DbRecord,
    /// The record changed and must be written back at commit.
    pub(crate) dirty: bool,
}

/// The write transaction. Only one exists at a time across all processes;
/// dropping it without [`RwTxn::commit`] aborts it.
pub struct RwTxn<'env> {
    pub(crate) env: &'env Env,
    /// Pages: dirty table, allocation, free pages.
    pub(crate) pg: Pager<'env>,
    pub(crate) dbs: RefCell<Vec<Option<TxnDb>>>,
    /// Set when an operation failed midway: the transaction can only abort.
    pub(crate) broken: Cell<bool>,
    /// Count of modifications, for detached cursors (see `CursorState`).
    pub(crate) gen: Cell<u64>,
    /// Holds the writer lock: not finished yet.
    active: bool,
    /// Set by a successful commit, just before `finish`.
    pub(crate) committed: bool,
    /// Nesting level of the innermost live child ([`RwTxn::nested`]), 0 without one.
    depth: u32,
    _not_send: PhantomData<*const ()>,
}

impl Env {
    /// Begin the write transaction, waiting for any other writer (in this or
    /// another process) to finish. A thread that already holds it gets `BadTxn`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Error, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// assert_eq!(env.write_txn().err(), Some(Error::BadTxn)); // same thread
    /// w.abort(); // or drop it: nothing was written
    /// assert_eq!(env.read_txn()?.get(Database::MAIN, b"k")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
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
        let l = &self.lock;
        if l.lock_writer()? {
            // The previous writer died; its uncommitted pages are unreferenced.
            if let Ok((_, m)) = pick_meta(self.meta_page(0), self.meta_page(1)) {
                l.set_txnid(m.txnid);
            }
        }
        let unlock = |e: Error| {
            l.unlock_writer();
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
        let oldest = l.oldest_reader(base.txnid);
        Ok(RwTxn {
            env: self,
            pg: Pager::new(self, txnid, base, self.snapshot_bound(&base), oldest),
            dbs: RefCell::new(vec![
                None,
                Some(TxnDb {
                    rec: base.main,
                    dirty: false,
                }),
            ]),
            broken: Cell::new(false),
            gen: Cell::new(1),
            active: true,
            committed: false,
            depth: 0,
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
        if !self.active {
            return;
        }
        // Keep page buffers for the next writer: no allocation or page
        // faults for them next time.
        self.pg.release_buffers();
        // Handles first opened in this transaction die with it unless kept.
        self.env.end_new_dbis(0, self.committed);
        self.env.lock.unlock_writer();
        tls_leave(&WRITE_ACTIVE, self.env.id);
        self.active = false;
    }

    /// Record of `db`, loading named records on first use.
    pub(crate) fn rec(&self, db: Database) -> Result<DbRecord> {
        if db == Database::FREE {
            return Ok(self.pg.free_db);
        }
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
        debug_assert!(
            db != Database::FREE,
            "the pager holds the free database's record"
        );
        self.set_loaded(db.0 as usize, rec, true);
    }

    /// Open a named database, creating it with `flags` if it does not exist.
    /// The handle is this transaction's until it commits, and is closed if
    /// it aborts (see [`Database`]).
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
                let db = self.env.register_dbi(name, rec.flags, Some(self.depth))?;
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
                let db = self.env.register_dbi(name, flags.0, Some(self.depth))?;
                self.gen.set(self.gen.get() + 1);
                let rec = DbRecord::empty(flags.0);
                self.set_rec(db, rec);
                // Store the record now so the main tree holds it from here on.
                let mut m = self.tree(Database::MAIN)?;
                let r = crate::tree::tree_put(
                    &mut self.pg,
                    &mut m,
                    name,
                    crate::format::page::NodeData::SubDb(&rec.encode()),
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
    pages: crate::pager::Saved,
    dbs: Vec<Option<TxnDb>>,
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
            pages: self.pg.save(),
            dbs: self.dbs.borrow().clone(),
            broken: self.broken.get(),
        };
        self.depth += 1;
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
        self.parent.env.end_new_dbis(self.parent.depth, true);
        Ok(())
    }

    /// Discard the child's changes (same as dropping it).
    pub fn abort(self) {}
}

fn restore(p: &mut RwTxn<'_>, s: Saved) {
    p.env.end_new_dbis(p.depth, false);
    p.pg.restore(s.pages);
    *p.dbs.borrow_mut() = s.dbs;
    p.broken.set(s.broken);
    p.gen.set(p.gen.get() + 1);
}

impl Drop for NestedTxn<'_, '_> {
    fn drop(&mut self) {
        if let Some(s) = self.saved.take() {
            restore(self.parent, s);
        }
        self.parent.depth -= 1;
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

impl PageRead for RwTxn<'_> {
    #[inline]
    fn page(&self, pgno: u64) -> Result<Page<'_>> {
        self.pg.page(pgno)
    }
    #[inline]
    fn overflow(&self, pgno: u64, len: usize) -> Result<&[u8]> {
        self.pg.overflow(pgno, len)
    }
}

impl Snapshot for RwTxn<'_> {
    fn env(&self) -> &Env {
        self.env
    }
    fn db(&self, db: Database) -> Result<DbRecord> {
        self.rec(db)
    }
    fn txn_id(&self) -> u64 {
        self.pg.txnid
    }
    fn generation(&self) -> u64 {
        self.gen.get()
    }
    fn write_level(&self) -> Option<u32> {
        Some(self.depth)
    }
    fn cache_db(&self, db: Database, rec: DbRecord) {
        if db == Database::FREE {
            return;
        }
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
