//! Transactions: read snapshots ([`RoTxn`]) and the single writer ([`RwTxn`]).
//!
//! A read transaction publishes its snapshot's txn id in a reader slot and
//! then reads pages straight from the map: no locks, no copies. The write
//! transaction copies pages on write into heap buffers ("dirty pages"),
//! allocates page numbers from the free list, and at commit writes the dirty
//! pages, syncs, and flips the meta page (see `commit.rs`).
//!
//! `read`: [`RoTxn`] and reader slots; `write`: [`RwTxn`], its database
//! table and `update` (puts and deletes); `cursor`: writes through cursors;
//! `leaf`: the leaf a read cursor stands on, for the C ABI's scan;
//! `placed`: a put that starts and ends at its cursor;
//! `nested`: child transactions; `commit`; `changes`: what detached
//! cursors must re-find their item after.

mod changes;
mod commit;
mod cursor;
mod leaf;
mod nested;
mod placed;
mod read;
mod shrink;
mod update;
mod write;

pub use changes::CursorWork;
pub use cursor::RwCursor;
pub use nested::NestedTxn;
pub use read::{OwnSlot, RoTxn, SlotMode, ThreadSlot};
pub use write::RwTxn;

use crate::cursor::Cursor;
use crate::db::{Database, Stat};
use crate::env::Env;
use crate::error::{DbLabel, Error, ErrorKind, Misuse, Result};
use crate::format::flags::{DUPSORT, INTEGERKEY, PERSISTENT, SUPPORTED};
use crate::format::meta::DbRecord;
use crate::format::page::{F_DUPDATA, F_SUBDATA};
pub(crate) use crate::snapshot::Snapshot;
use crate::tree;
use std::cell::RefCell;

/// Operations every transaction offers: lookups, cursors and statistics.
/// Import it to call them on [`RoTxn`] and [`RwTxn`] alike, or to write
/// code that reads from either.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// fn count_keys(txn: &impl Txn) -> mdb::Result<u64> {
///     Ok(txn.stat(Database::MAIN)?.entries)
/// }
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// assert_eq!(count_keys(&w)?, 1); // its own uncommitted change
/// assert_eq!(count_keys(&env.read_txn()?)?, 0); // not committed yet
/// # Ok::<(), mdb::Error>(())
/// ```
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
        let found = || {
            db.check_env(self.env().tag())?;
            let rec = self.db(db)?;
            let (cmp, _) = self.env().comparators(db, rec.flags);
            tree::get(self, &rec, cmp, key)
        };
        found().map_err(|e| self.env().failed(e, "get", db, Some(key.len()), None))
    }

    /// A cursor over `db`, unpositioned.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// for k in [b"a", b"b"] {
    ///     w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(Database::MAIN)?;
    /// assert_eq!(c.first()?.unwrap().0, b"a");
    /// assert_eq!(c.next()?.unwrap().0, b"b");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    fn cursor(&self, db: Database) -> Result<Cursor<'_, Self>> {
        Cursor::new(self, db).map_err(|e| self.env().failed(e, "open cursor", db, None, None))
    }

    /// The items of `db` whose keys lie in `range`, in order, from either
    /// end (`rev()` for descending order). See [`crate::Entries`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// for k in [b"a", b"b", b"c", b"d"] {
    ///     w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?;
    /// }
    /// let keys: Vec<&[u8]> = w
    ///     .range(Database::MAIN, &b"b"[..]..)?
    ///     .rev()
    ///     .map(|kv| kv.map(|kv| kv.0))
    ///     .collect::<mdb::Result<_>>()?;
    /// assert_eq!(keys, [b"d", b"c", b"b"]);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    #[inline]
    fn range<'r, R: std::ops::RangeBounds<&'r [u8]>>(
        &self,
        db: Database,
        range: R,
    ) -> Result<crate::entries::Entries<'_, Self>> {
        crate::entries::Entries::new(self, db, range)
    }

    /// The items of `db` whose keys start with `prefix`, from either end
    /// (databases in the default byte order; `Incompatible` otherwise).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// for k in ["user/1", "user/2", "users", "video/1"] {
    ///     w.put(Database::MAIN, k.as_bytes(), b"", WriteFlags::EMPTY)?;
    /// }
    /// let last = w.prefix(Database::MAIN, b"user/")?.next_back().unwrap()?;
    /// assert_eq!(last.0, b"user/2");
    /// assert_eq!(w.prefix(Database::MAIN, b"user")?.count(), 3);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    fn prefix(&self, db: Database, prefix: &[u8]) -> Result<crate::entries::Entries<'_, Self>> {
        crate::entries::Entries::prefix(self, db, prefix)
    }

    /// Every key of `db` with its values as a nested iterator (a DUPSORT
    /// database's duplicates, in order; one value otherwise).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let tags = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "x"), ("b", "y"), ("a", "w"), ("b", "z"), ("b", "x")] {
    ///     w.put(tags, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut seen = Vec::new();
    /// for g in w.groups(tags)? {
    ///     let (key, values) = g?;
    ///     let vals: Vec<&[u8]> = values.collect::<mdb::Result<_>>()?;
    ///     seen.push((key, vals));
    /// }
    /// assert_eq!(seen, [(&b"a"[..], vec![&b"w"[..], b"x"]), (b"b", vec![b"x", b"y", b"z"])]);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    fn groups(&self, db: Database) -> Result<crate::entries::Groups<'_, Self>> {
        crate::entries::Groups::new(self, db)
    }

    /// Statistics of `db` in this snapshot.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// assert_eq!(w.stat(Database::MAIN)?.entries, 1);
    /// w.commit()?;
    /// assert_eq!(env.read_txn()?.stat(Database::MAIN)?.depth, 1);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    fn stat(&self, db: Database) -> Result<Stat> {
        let rec = db.check_env(self.env().tag()).and_then(|()| self.db(db));
        let rec = rec.map_err(|e| self.env().failed(e, "stat", db, None, None))?;
        Ok(Stat::from_record(self.env().psize, &rec))
    }

    /// Flags of `db`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, EnvOptions, Txn};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// use mdb::DbFlags;
    /// let db = w.create_db("d", DbFlags::DUP_SORT | DbFlags::REVERSE_KEY)?;
    /// assert_eq!(w.db_flags(db)?, DbFlags::DUP_SORT | DbFlags::REVERSE_KEY);
    /// assert_eq!(w.db_flags(Database::MAIN)?, DbFlags::EMPTY);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    fn db_flags(&self, db: Database) -> Result<crate::format::flags::DbFlags> {
        let rec = db.check_env(self.env().tag()).and_then(|()| self.db(db));
        let rec = rec.map_err(|e| self.env().failed(e, "db flags", db, None, None))?;
        Ok(crate::format::flags::DbFlags(rec.flags))
    }

    /// The id of this transaction (the snapshot's id for readers).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// assert_eq!(env.read_txn()?.id(), 0); // the empty snapshot
    /// let mut w = env.write_txn()?;
    /// assert_eq!(w.id(), 1); // what its commit will be
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// assert_eq!(env.read_txn()?.id(), 1);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    fn id(&self) -> u64 {
        self.txn_id()
    }

    /// Open an existing named database: `NotFound` if absent, `Incompatible` if
    /// the name is a plain key of the main database. A handle first opened
    /// in a write transaction is usable by other transactions only once
    /// that one commits (see [`Database`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{EnvOptions, ErrorKind, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(2).open(dir.path())?;
    /// use mdb::{DbFlags, Error};
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db("users", DbFlags::EMPTY)?;
    /// w.put(db, b"ada", b"1815", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let r = env.read_txn()?;
    /// let users = r.open_db("users")?;
    /// assert_eq!(r.get(users, b"ada")?, Some(&b"1815"[..]));
    /// assert_eq!(r.open_db("nobody").err().map(|e| e.kind()), Some(ErrorKind::NotFound));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    fn open_db(&self, name: impl AsRef<[u8]>) -> Result<Database> {
        let name = name.as_ref();
        let open = || {
            check_name(self.env(), name)?;
            let rec = lookup_named(self, name)?.ok_or(ErrorKind::NotFound)?;
            check_supported(rec.flags)?;
            let db = self
                .env()
                .register_dbi(name, rec.flags, self.write_level())?;
            // The handle slot may have been closed and reused: refresh our copy.
            self.cache_db(db, rec);
            Ok(db)
        };
        open().map_err(|e: Error| {
            e.during(
                "open database",
                || DbLabel::Named(name.to_vec()),
                None,
                None,
            )
        })
    }
}

pub(crate) fn check_name(env: &Env, name: &[u8]) -> Result<()> {
    if name.is_empty() || name.len() > crate::format::page::MAX_KEY_SIZE {
        return Err(ErrorKind::BadValSize.into());
    }
    let main = env.dbi_info(Database::MAIN)?;
    if main.flags & (DUPSORT | INTEGERKEY) != 0 {
        return Err(ErrorKind::Incompatible.into());
    }
    Ok(())
}

/// Reject what this engine cannot yet handle, instead of misreading it.
pub(crate) fn check_supported(flags: u16) -> Result<()> {
    if flags & PERSISTENT & !SUPPORTED != 0 {
        return Err(ErrorKind::Incompatible.into());
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
                return Err(ErrorKind::Incompatible.into());
            }
            Ok(Some(DbRecord::read(n.data())?))
        }
    }
}

/// Load the record of database `db` as seen from `s`'s main database.
/// `EINVAL` for a closed handle, and (as LMDB) for one that only the
/// uncommitted write transaction may use.
pub(crate) fn load_named<S: Snapshot>(s: &S, env: &Env, db: Database) -> Result<DbRecord> {
    let reader = s.write_level().is_none();
    let txnid = s.txn_id();
    // The name is copied out so that the search runs without the registry
    // lock (and without allocating).
    let mut buf = [0u8; crate::format::page::MAX_KEY_SIZE];
    let name = {
        let t = env.dbis.read().unwrap();
        let info = t
            .get(db.0 as usize)
            .ok_or(ErrorKind::Misuse(Misuse::UnknownHandle))?;
        if info.pending.is_some() && reader {
            return Err(ErrorKind::Misuse(Misuse::UncommittedHandle).into());
        }
        if let Some((id, rec)) = info.snap.filter(|_| reader) {
            if id == txnid {
                return Ok(rec);
            }
        }
        let name = info
            .name
            .as_deref()
            .ok_or(ErrorKind::Misuse(Misuse::UnknownHandle))?;
        let b = buf.get_mut(..name.len()).ok_or(ErrorKind::BadValSize)?;
        b.copy_from_slice(name);
        &buf[..name.len()]
    };
    let rec = lookup_named(s, name)?.ok_or(ErrorKind::BadDbi)?;
    check_supported(rec.flags)?;
    if reader {
        let mut t = env.dbis.write().unwrap();
        // Unless the handle was closed (and its slot reused) meanwhile.
        if let Some(info) = t
            .get_mut(db.0 as usize)
            .filter(|i| i.name.as_deref() == Some(name))
        {
            if info.snap.is_none_or(|(id, _)| id < txnid) {
                info.snap = Some((txnid, rec));
            }
        }
    }
    Ok(rec)
}

thread_local! {
    /// Environments in which this thread holds the write transaction.
    pub(crate) static WRITE_ACTIVE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// The reader slots this thread owns (without NO_TLS), freed when it exits.
    pub(crate) static MY_SLOTS: read::MySlots = const { read::MySlots(RefCell::new(Vec::new())) };
}

pub(crate) fn tls_enter(
    set: &'static std::thread::LocalKey<RefCell<Vec<usize>>>,
    id: usize,
) -> bool {
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

pub(crate) fn tls_leave(set: &'static std::thread::LocalKey<RefCell<Vec<usize>>>, id: usize) {
    set.with(|s| s.borrow_mut().retain(|&x| x != id));
}
