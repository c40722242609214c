//! Read transactions: a reader slot, a published snapshot, pages straight
//! from the map.

use super::*;
use crate::env::{pick_meta, EnvFlags};
use crate::error::ErrorKind;
use crate::format::meta::Meta;
use crate::format::page::Page;
use crate::lock::ThreadSlots;
use crate::pager::{MapView, PageRead};
use crate::sink::CommitSink;
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::{Arc, Weak};

/// One slot this thread owns in the `Env` with id `env`.
pub(crate) struct MySlot {
    env: usize,
    owner: Weak<ThreadSlots>,
    slot: usize,
    /// A read transaction of this thread uses it (one at a time, as LMDB).
    busy: bool,
}

pub(crate) struct MySlots(pub(crate) RefCell<Vec<MySlot>>);

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

/// How a read transaction holds its reader slot, which decides whether it
/// may move between threads: [`ThreadSlot`] (the default, as LMDB's) or
/// [`OwnSlot`] (under NO_TLS, from [`Env::read_txn_send`]). Sealed: name
/// it only to write code generic over both.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, EnvFlags, EnvOptions, RoTxn, SlotMode, Txn};
/// fn has<S: SlotMode>(r: &RoTxn<'_, S>, key: &[u8]) -> mdb::Result<bool> {
///     Ok(r.get(Database::MAIN, key)?.is_some())
/// }
/// let env = EnvOptions::new().flags(EnvFlags::NO_TLS).open(dir.path())?;
/// assert!(!has(&env.read_txn()?, b"k")?);
/// assert!(!has(&env.read_txn_send()?, b"k")?);
/// # Ok::<(), mdb::Error>(())
/// ```
pub trait SlotMode: sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

/// The reader slot is its thread's (LMDB's default): the transaction
/// stays on that thread (not `Send`), which holds one at a time.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, ErrorKind, RoTxn, ThreadSlot, Txn};
/// let env = Env::open(dir.path())?;
/// let r: RoTxn<'_, ThreadSlot> = env.read_txn()?; // the default mode
/// assert_eq!(r.get(Database::MAIN, b"k")?, None);
/// assert_eq!(env.read_txn().err().map(|e| e.kind()), Some(ErrorKind::BadRslot)); // one per thread
/// # Ok::<(), mdb::Error>(())
/// ```
///
/// Moving one to another thread does not compile:
///
/// ```compile_fail
/// # let dir = tempfile::tempdir().unwrap();
/// let env = mdb::Env::open(dir.path()).unwrap();
/// let r = env.read_txn().unwrap();
/// std::thread::scope(|s| {
///     s.spawn(move || drop(r)); // a thread-bound slot cannot move
/// });
/// ```
pub struct ThreadSlot(PhantomData<*const ()>);

/// The reader slot is the transaction's own (NO_TLS): it may move to
/// another thread (`Send`) and end there.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, EnvFlags, EnvOptions, OwnSlot, RoTxn, Txn};
/// let env = EnvOptions::new().flags(EnvFlags::NO_TLS).open(dir.path())?;
/// let r: RoTxn<'_, OwnSlot> = env.read_txn_send()?;
/// let (tx, rx) = std::sync::mpsc::channel();
/// std::thread::scope(|s| {
///     s.spawn(move || tx.send(r).unwrap());
/// });
/// let r = rx.recv().unwrap(); // back from the other thread
/// assert_eq!(r.get(Database::MAIN, b"k")?, None);
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct OwnSlot;

impl sealed::Sealed for ThreadSlot {}
impl sealed::Sealed for OwnSlot {}
impl SlotMode for ThreadSlot {}
impl SlotMode for OwnSlot {}

/// A read-only snapshot ([`Env::read_txn`]). Lookups take no lock and
/// never wait for the writer; values borrow from the map, so keep read
/// transactions short while writers run (their pages cannot be reused).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// w.commit()?;
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             let r = env.read_txn().unwrap(); // one per thread
///             assert_eq!(r.get(Database::MAIN, b"k").unwrap(), Some(&b"v"[..]));
///         });
///     }
/// });
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct RoTxn<'env, S: SlotMode = ThreadSlot> {
    env: &'env Env,
    slot: usize,
    /// The slot is this transaction's (NO_TLS), freed at its end; otherwise
    /// it is its thread's.
    own_slot: bool,
    meta: Meta,
    /// The snapshot's pages in the map.
    view: MapView<'env>,
    /// Records of named databases this transaction used: the last one
    /// inline (most transactions use one), the others in `dbs`.
    last_db: Cell<Option<(u32, DbRecord)>>,
    dbs: RefCell<Vec<Option<DbRecord>>>,
    /// Bound to the thread unless the slot is its own (see [`SlotMode`]).
    _mode: PhantomData<S>,
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
        self.read_txn_in()
    }

    /// Begin a read transaction that may move to another thread (`Send`):
    /// it owns its reader slot, which the environment must have been opened
    /// with NO_TLS for (`Incompatible` otherwise).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvFlags, EnvOptions, Txn};
    /// let env = EnvOptions::new().flags(EnvFlags::NO_TLS).open(dir.path())?;
    /// let r = env.read_txn_send()?;
    /// std::thread::scope(|s| {
    ///     s.spawn(move || assert_eq!(r.get(Database::MAIN, b"k").unwrap(), None));
    /// });
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn read_txn_send(&self) -> Result<RoTxn<'_, OwnSlot>> {
        if !self.flags().contains(EnvFlags::NO_TLS) {
            return Err(ErrorKind::Incompatible.into());
        }
        self.read_txn_in()
    }

    fn read_txn_in<S: SlotMode>(&self) -> Result<RoTxn<'_, S>> {
        let begin = || {
            if self.panicked.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(ErrorKind::Panic.into());
            }
            let (slot, own_slot) = self.reader_slot()?;
            let mut txn = RoTxn::bare(self, slot, own_slot);
            // On error, dropping `txn` gives the slot back.
            txn.meta = self.snapshot_into(slot)?;
            txn.view.map = self.map_for(&txn.meta)?;
            txn.view.bound.set(self.snapshot_bound(&txn.meta));
            txn.view.last = txn.meta.last_pgno;
            Ok(txn)
        };
        begin().map_err(|e: crate::error::Error| e.during_op("begin read transaction"))
    }
}

impl<'env, S: SlotMode> RoTxn<'env, S> {
    /// A transaction in `slot` without a snapshot yet.
    fn bare(env: &'env Env, slot: usize, own_slot: bool) -> RoTxn<'env, S> {
        RoTxn {
            env,
            slot,
            own_slot,
            // A placeholder until the snapshot is read.
            meta: Meta::new_env(env.psize as u32, 0, 0),
            view: MapView {
                env,
                map: env.map(),
                bound: Cell::new(0),
                last: 0,
            },
            last_db: Cell::new(None),
            dbs: RefCell::new(Vec::new()),
            _mode: PhantomData,
        }
    }
}

impl Env {
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
                    return Err(ErrorKind::BadRslot.into());
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
            // Relaxed durability: this process sees its commits before
            // they are durable. The slot keeps the published txnid, which
            // keeps every page of the newer snapshot too.
            let m = self.sink().visible(m.txnid).unwrap_or(m);
            self.map_for(&m)?;
            return Ok(m);
        }
        // Only a lock file being scribbled on moves lock.txnid this often.
        Err(ErrorKind::Corrupted.into())
    }

    /// Pages of the snapshot of `m` that lie in the data file as last seen:
    /// what may be read from the map without another look at its length.
    pub(crate) fn snapshot_bound(&self, m: &Meta) -> u64 {
        m.last_pgno.saturating_add(1).min(self.file_pages())
    }
}

/// Slot txnid of a reader without a snapshot.
const IDLE: u64 = u64::MAX;

impl<S: SlotMode> RoTxn<'_, S> {
    fn forget_dbs(&self) {
        self.last_db.set(None);
        self.dbs.borrow_mut().clear();
    }

    /// Keep `rec` as this snapshot's record of database `i` (>= 2).
    fn keep_db(&self, i: u32, rec: DbRecord) {
        if let Some((j, old)) = self.last_db.replace(Some((i, rec))) {
            if j != i {
                let mut d = self.dbs.borrow_mut();
                let j = j as usize;
                if d.len() <= j {
                    d.resize(j + 1, None);
                }
                d[j] = Some(old);
            }
        }
    }

    /// End the transaction (same as dropping it).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let r = env.read_txn()?;
    /// assert_eq!(env.readers()[0].txnid, Some(0));
    /// r.abort(); // its snapshot's pages may be reused now
    /// assert_eq!(env.readers()[0].txnid, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn abort(self) {}

    /// Release the snapshot but keep the transaction object, and its reader
    /// slot, for [`RoTxn::renew`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut r = env.read_txn()?;
    /// assert_eq!(r.get(Database::MAIN, b"k")?, None);
    /// r.reset(); // release the snapshot between requests
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// r.renew()?;
    /// assert_eq!(r.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn reset(&mut self) {
        self.env.lock.set_slot_txnid(self.slot, IDLE);
        self.forget_dbs();
    }

    /// Take a fresh snapshot after [`RoTxn::reset`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut r = env.read_txn()?;
    /// for i in 0u8..3 {
    ///     let mut w = env.write_txn()?;
    ///     w.put(Database::MAIN, b"n", &[i], WriteFlags::EMPTY)?;
    ///     w.commit()?;
    ///     r.reset();
    ///     r.renew()?; // the newest snapshot, same reader slot
    ///     assert_eq!(r.get(Database::MAIN, b"n")?, Some(&[i][..]));
    /// }
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn renew(&mut self) -> Result<()> {
        self.forget_dbs();
        self.meta = self.env.snapshot_into(self.slot)?;
        self.view.map = self.env.map_for(&self.meta)?;
        self.view.bound.set(self.env.snapshot_bound(&self.meta));
        self.view.last = self.meta.last_pgno;
        Ok(())
    }
}

impl<S: SlotMode> Drop for RoTxn<'_, S> {
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

impl<S: SlotMode> PageRead for RoTxn<'_, S> {
    #[inline]
    fn page(&self, pgno: u64) -> Result<Page<'_>> {
        self.view.page(pgno)
    }
    #[inline]
    fn frozen(&self) -> bool {
        true
    }
    // Always, as the map's: the scan step's lookup (a cursor's general
    // path has several call sites, and one more made it an out-of-line
    // call: 1 Ir more a `scan` step, 13 a `range_10`).
    #[inline(always)]
    fn page_bytes(&self, pgno: u64) -> Result<&[u8]> {
        self.view.page_bytes(pgno)
    }
    #[inline]
    fn overflow(&self, pgno: u64, len: usize) -> Result<&[u8]> {
        self.view.overflow(pgno, len)
    }
    #[inline]
    fn prefetch(&self, pgno: u64) {
        self.view.prefetch(pgno)
    }
    #[inline]
    fn prefetch_bytes(&self, b: &[u8]) {
        self.view.prefetch_bytes(b)
    }
}

impl<S: SlotMode> Snapshot for RoTxn<'_, S> {
    fn env(&self) -> &Env {
        self.env
    }
    #[inline]
    fn db(&self, db: Database) -> Result<DbRecord> {
        match db.0 {
            0 => Ok(self.meta.free),
            1 => Ok(self.meta.main),
            i => {
                if let Some((j, r)) = self.last_db.get() {
                    if j == i {
                        return Ok(r);
                    }
                }
                let cached = self.dbs.borrow().get(i as usize).copied().flatten();
                let r = match cached {
                    Some(r) => r,
                    None => load_named(self, self.env, db)?,
                };
                self.keep_db(i, r);
                Ok(r)
            }
        }
    }
    fn txn_id(&self) -> u64 {
        self.meta.txnid
    }
    fn cache_db(&self, db: Database, rec: DbRecord) {
        if db.0 >= 2 {
            // Drop a stale copy of a reused handle slot before keeping `rec`.
            if let Some(d) = self.dbs.borrow_mut().get_mut(db.0 as usize) {
                *d = None;
            }
            self.keep_db(db.0, rec);
        }
    }
}

impl<S: SlotMode> Txn for RoTxn<'_, S> {}
