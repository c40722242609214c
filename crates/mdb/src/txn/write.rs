//! The write transaction: the writer lock, the pager, and the table of
//! database records it changes.

use super::*;
use crate::env::EnvFlags;
use crate::error::{DbLabel, ErrorKind};
use crate::format::page::Page;
use crate::pager::{PageRead, Pager};
use crate::sink::CommitSink;
use std::cell::Cell;
use std::marker::PhantomData;

/// Per-database state inside a write transaction.
#[derive(Clone, Copy)]
pub(crate) struct TxnDb {
    pub(crate) rec: DbRecord,
    /// The record changed and must be written back at commit.
    pub(crate) dirty: bool,
}

/// The write transaction. Only one exists at a time across all processes;
/// dropping it without [`RwTxn::commit`] aborts it. It reads its own
/// changes ([`Txn`] methods) and readers see none of them until it commits.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"apple", b"3", WriteFlags::EMPTY)?;
/// w.put(Database::MAIN, b"pear", b"5", WriteFlags::EMPTY)?;
/// w.del(Database::MAIN, b"apple")?;
/// assert_eq!(w.stat(Database::MAIN)?.entries, 1);
/// w.commit()?;
/// assert_eq!(env.read_txn()?.get(Database::MAIN, b"pear")?, Some(&b"5"[..]));
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct RwTxn<'env> {
    pub(crate) env: &'env Env,
    /// Pages: dirty table, allocation, free pages.
    pub(crate) pg: Pager<'env>,
    pub(crate) dbs: RefCell<Vec<Option<TxnDb>>>,
    /// Set when an operation failed midway: the transaction can only abort.
    pub(crate) broken: Cell<bool>,
    /// Counts of modifications, for detached cursors (see `CursorState`).
    pub(crate) gen: super::changes::Changes,
    /// Holds the writer lock: not finished yet.
    active: bool,
    /// Set by a successful commit, just before `finish`.
    pub(crate) committed: bool,
    /// Nesting level of the innermost live child ([`RwTxn::nested`]), 0 without one.
    pub(crate) depth: u32,
    /// Commit even with nothing changed (a new meta: `Env::shrink`).
    pub(crate) force_commit: bool,
    _not_send: PhantomData<*const ()>,
}

impl Env {
    /// Begin the write transaction, waiting for any other writer (in this or
    /// another process) to finish. A thread that already holds it gets `BadTxn`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, ErrorKind, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// assert_eq!(env.write_txn().err().map(|e| e.kind()), Some(ErrorKind::BadTxn)); // same thread
    /// w.abort(); // or drop it: nothing was written
    /// assert_eq!(env.read_txn()?.get(Database::MAIN, b"k")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn write_txn(&self) -> Result<RwTxn<'_>> {
        self.begin_write_txn()
            .map_err(|e| e.during_op("begin write transaction"))
    }

    fn begin_write_txn(&self) -> Result<RwTxn<'_>> {
        if self.flags().contains(EnvFlags::READ_ONLY) {
            return Err(ErrorKind::Os(libc::EACCES).into());
        }
        if self.panicked.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(ErrorKind::Panic.into());
        }
        if !tls_enter(&WRITE_ACTIVE, self.id) {
            return Err(ErrorKind::BadTxn.into());
        }
        let r = self.begin_write();
        match r {
            Ok(_) => self
                .writing
                .store(true, std::sync::atomic::Ordering::Relaxed),
            Err(_) => tls_leave(&WRITE_ACTIVE, self.id),
        }
        r
    }

    fn begin_write(&self) -> Result<RwTxn<'_>> {
        let l = &self.lock;
        // The writer lock; a sink with commits still on their way to
        // being published says which to build on (`head`).
        let sink = self.sink();
        let head = sink.lock()?;
        let unlock = |e: Error| {
            sink.unlock();
            e
        };
        let (slot, base) = match head {
            Some(h) => ((h.txnid & 1) as usize, h),
            None => self.current_meta().map_err(unlock)?,
        };
        let map = self.map_for(&base).map_err(unlock)?;
        // The new meta goes to the slot the base is not in, also when a
        // damaged file has the base in the wrong one: a crash must leave it.
        let txnid = base
            .txnid
            .checked_add(if base.txnid & 1 == slot as u64 { 1 } else { 2 })
            .ok_or(ErrorKind::Corrupted.into())
            .map_err(unlock)?;
        sink.chain(&base, txnid).map_err(unlock)?;
        // Pages freed since the last published (durable) commit stay: a
        // crash may bring that snapshot back; and those the sink holds. The
        // log's hold slots (`wal/hold.rs`) are for writers outside WAL
        // mode: a log's writer applies its exact hold, never an idle
        // handle's older one.
        let last = base.txnid.min(l.txnid());
        let (oldest, young) = match sink.oldest_bound() {
            Some(bound) => {
                let readers = l.oldest_reader_but_holds(last);
                (readers.min(bound), sink.young().map(|y| (y, readers)))
            }
            None => (l.oldest_reader(last), None),
        };
        let mut pg = Pager::new(self, map, txnid, base, self.snapshot_bound(&base), oldest);
        pg.free.young = young;
        Ok(RwTxn {
            env: self,
            pg,
            dbs: RefCell::new(vec![
                None,
                Some(TxnDb {
                    rec: base.main,
                    dirty: false,
                }),
            ]),
            broken: Cell::new(false),
            gen: super::changes::Changes::new(),
            active: true,
            committed: false,
            depth: 0,
            force_commit: false,
            _not_send: PhantomData,
        })
    }
}

impl<'env> RwTxn<'env> {
    /// Discard every change (same as dropping the transaction).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.abort();
    /// assert_eq!(env.read_txn()?.get(Database::MAIN, b"k")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn abort(self) {}

    /// How many times this transaction wrote dirty pages out to stay
    /// within its memory budget ([`crate::EnvOptions::txn_memory`]).
    #[doc(hidden)]
    pub fn spills(&self) -> u64 {
        self.pg.spills
    }

    /// What the detached cursors of this transaction did so far (tests).
    #[doc(hidden)]
    pub fn cursor_work(&self) -> super::changes::CursorWork {
        self.gen.work.get()
    }

    /// Whether an operation failed midway, so the transaction can only abort.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, EnvOptions, ErrorKind, WriteFlags};
    /// let env = EnvOptions::new().auto_grow(false).open(dir.path())?; // a 1 MiB map
    /// let mut w = env.write_txn()?;
    /// assert_eq!(w.put(Database::MAIN, b"k", b"v", WriteFlags::NO_OVERWRITE), Ok(()));
    /// let r = w.put(Database::MAIN, b"k", b"v", WriteFlags::NO_OVERWRITE);
    /// assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::KeyExist));
    /// assert!(!w.is_broken()); // an expected outcome, not a failure
    /// let full = (0u32..20_000).try_for_each(|i| {
    ///     w.put(Database::MAIN, &i.to_be_bytes(), &[0; 100], WriteFlags::EMPTY)
    /// });
    /// assert_eq!(full.map_err(|e| e.kind()), Err(ErrorKind::MapFull));
    /// assert!(w.is_broken());
    /// assert_eq!(w.commit().map_err(|e| e.kind()), Err(ErrorKind::BadTxn));
    /// # Ok::<(), mdb::Error>(())
    /// ```
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
        self.env
            .writing
            .store(false, std::sync::atomic::Ordering::Relaxed);
        self.env.sink().unlock();
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
    pub fn create_db(
        &mut self,
        name: impl AsRef<[u8]>,
        flags: crate::format::flags::DbFlags,
    ) -> Result<Database> {
        let name = name.as_ref();
        let r: Result<Database> = (|| {
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
                        return Err(ErrorKind::Misuse(Misuse::BadDbFlags).into());
                    }
                    let db = self.env.register_dbi(name, flags.0, Some(self.depth))?;
                    self.gen.change_all();
                    let rec = DbRecord::empty(flags.0);
                    self.set_rec(db, rec);
                    // Store the record now so the main tree holds it from here on.
                    let mut m = self.tree(Database::MAIN)?;
                    let r = crate::tree::tree_put(
                        &mut self.pg,
                        &mut m,
                        name,
                        crate::format::page::NodeData::SubDb(&rec.encode()),
                        crate::tree::WriteFlags::NO_OVERWRITE,
                    );
                    self.set_rec(Database::MAIN, m.rec);
                    r?;
                    Ok(db)
                }
            }
        })();
        r.map_err(|e| {
            e.during(
                "create database",
                || DbLabel::Named(name.to_vec()),
                None,
                None,
            )
        })
    }

    /// Set the key flags of the main database (only while it is empty).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, DbFlags, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.set_main_flags(DbFlags::INTEGER_KEY)?; // native-endian u32 or u64 keys
    /// for n in [256u32, 2, 70_000] {
    ///     w.put(Database::MAIN, &n.to_ne_bytes(), b"", WriteFlags::EMPTY)?;
    /// }
    /// let first = w.cursor(Database::MAIN)?.first()?.unwrap().0;
    /// assert_eq!(first, 2u32.to_ne_bytes()); // numeric order
    /// assert!(w.set_main_flags(DbFlags::EMPTY).is_err()); // not empty any more
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_main_flags(&mut self, flags: crate::format::flags::DbFlags) -> Result<()> {
        check_supported(flags.0)?;
        let mut rec = self.rec(Database::MAIN)?;
        if rec.flags == flags.0 {
            return Ok(());
        }
        if rec.entries != 0 {
            return Err(ErrorKind::Incompatible.into());
        }
        rec.flags = flags.0;
        self.set_rec(Database::MAIN, rec);
        self.env.dbis.write().unwrap()[1].flags = flags.0;
        Ok(())
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
    #[inline(always)]
    fn page_bytes(&self, pgno: u64) -> Result<&[u8]> {
        self.pg.page_bytes(pgno)
    }
    #[inline]
    fn overflow(&self, pgno: u64, len: usize) -> Result<&[u8]> {
        self.pg.overflow(pgno, len)
    }
    #[inline]
    fn prefetch(&self, pgno: u64) {
        self.pg.prefetch(pgno)
    }
    #[inline]
    fn prefetch_bytes(&self, b: &[u8]) {
        self.pg.prefetch_bytes(b)
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
        self.gen.count()
    }
    #[inline]
    fn generation_of(&self, db: Database) -> u64 {
        self.gen.of(db)
    }
    fn note_refind(&self) {
        self.gen.note(|w| w.refinds += 1);
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
