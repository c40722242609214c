//! [`CursorState`]: a cursor that owns its position rather than borrowing
//! its transaction, for the C ABI.

use super::op::{apply, count, CursorOp};
use super::position::Position;
use crate::db::Database;
use crate::error::Result;
use crate::format::meta::DbRecord;
use crate::snapshot::Snapshot;
use crate::tree::Item;

/// What [`CursorState::seek_leaf`] found: the item, and the leaf page the
/// cursor stands on with its level and the cursor's index in it.
#[doc(hidden)]
pub type SeekLeaf<'t> = (Option<Item<'t>>, Option<(&'t [u8], usize, usize)>);

/// A cursor that owns its position instead of borrowing its transaction,
/// for bindings (the C ABI) that mix several cursors with puts and deletes in
/// one write transaction. Each call takes the transaction; after any other
/// change in that transaction the cursor re-finds its item first (and, if the
/// item was deleted, sits on its successor as LMDB's cursors do).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{CursorOp, CursorState, Database, Env, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let mut a = CursorState::new(&w, Database::MAIN)?;
/// w.put(Database::MAIN, b"k1", b"v1", WriteFlags::EMPTY)?;
/// w.put(Database::MAIN, b"k3", b"v3", WriteFlags::EMPTY)?;
/// assert_eq!(a.get(&w, CursorOp::First)?.unwrap().0, b"k1");
/// w.put(Database::MAIN, b"k2", b"v2", WriteFlags::EMPTY)?;
/// assert_eq!(a.get(&w, CursorOp::Next)?.unwrap().0, b"k2");
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct CursorState {
    pub(crate) db: Database,
    pub(crate) flags: u16,
    pub(crate) pos: Position,
    pub(crate) gen: u64,
    pub(crate) key: Vec<u8>,
    pub(crate) val: Vec<u8>,
    pub(crate) saved: bool,
}

impl CursorState {
    /// An unpositioned cursor over `db` of `txn`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// let mut c = CursorState::new(&w, Database::MAIN)?;
    /// assert!(!c.is_positioned());
    /// assert_eq!(c.get(&w, CursorOp::First)?, Some((&b"k"[..], &b"v"[..])));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn new<T: Snapshot>(txn: &T, db: Database) -> Result<CursorState> {
        db.check_env(txn.env().tag())?;
        let rec = txn.db(db)?;
        let (k, d) = txn.env().comparators(db, rec.flags);
        Ok(CursorState {
            db,
            flags: rec.flags,
            pos: Position::new(k, d),
            gen: txn.generation_of(db),
            key: Vec::new(),
            val: Vec::new(),
            saved: false,
        })
    }

    /// Become [`CursorState::new`]`(txn, db)` in place, keeping the
    /// buffers it holds: the C library binds pooled cursors this way
    /// (`mdb_cursor_open`, `mdb_cursor_renew`) instead of building and
    /// moving a new 1 KiB state. On an error the cursor is unchanged.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let r = env.read_txn()?;
    /// let mut c = CursorState::new(&r, Database::MAIN)?;
    /// c.get(&r, CursorOp::Last)?;
    /// drop(r); // one read transaction a thread
    /// let r2 = env.read_txn()?;
    /// c.rebind(&r2, Database::MAIN)?;
    /// assert!(!c.is_positioned());
    /// assert_eq!(c.get(&r2, CursorOp::First)?, Some((&b"k"[..], &b"v"[..])));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn rebind<T: Snapshot>(&mut self, txn: &T, db: Database) -> Result<()> {
        db.check_env(txn.env().tag())?;
        let rec = txn.db(db)?;
        let (k, d) = txn.env().comparators(db, rec.flags);
        self.db = db;
        self.flags = rec.flags;
        self.pos.renew(k, d);
        self.gen = txn.generation_of(db);
        self.key.clear();
        self.val.clear();
        self.saved = false;
        Ok(())
    }

    /// The database this cursor walks.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let c = CursorState::new(&w, Database::MAIN)?;
    /// assert_eq!(c.db(), Database::MAIN);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn db(&self) -> Database {
        self.db
    }

    /// Forget the position (e.g. when rebinding to another read transaction).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v1", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let r = env.read_txn()?;
    /// let mut c = CursorState::new(&r, Database::MAIN)?;
    /// c.get(&r, CursorOp::First)?;
    /// drop(r);
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v2", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let r = env.read_txn()?; // a newer snapshot: the same cursor, reset
    /// c.reset();
    /// assert!(!c.is_positioned());
    /// assert_eq!(c.get(&r, CursorOp::First)?.unwrap().1, b"v2");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn reset(&mut self) {
        let (k, d) = (self.pos.kcmp, self.pos.dcmp);
        self.pos.renew(k, d);
        self.saved = false;
    }

    /// Re-find the saved item after changes made through other handles.
    pub(crate) fn resync<T: Snapshot>(&mut self, txn: &T, rec: &DbRecord) -> Result<()> {
        let g = txn.generation_of(self.db);
        if g == self.gen {
            return Ok(());
        }
        self.gen = g;
        if !self.saved || self.pos.unset() {
            return Ok(());
        }
        txn.note_refind();
        let (key, val) = (std::mem::take(&mut self.key), std::mem::take(&mut self.val));
        let pending = (self.pos.just_deleted, self.pos.dup_del);
        // Gone: on its successor, as after a delete through this cursor.
        if self.pos.refind(txn, rec, &key, &val)? {
            (self.pos.just_deleted, self.pos.dup_del) = pending;
        }
        (self.key, self.val) = (key, val);
        Ok(())
    }

    pub(crate) fn remember(&mut self, item: Option<Item<'_>>, write: bool) {
        if !write {
            return;
        }
        match item {
            Some((k, v)) => {
                copy_into(&mut self.key, k);
                // Only duplicates are re-found by value (and are short): a
                // plain value may span a gigabyte of overflow pages.
                if self.pos.dcmp.is_some() {
                    copy_into(&mut self.val, v);
                } else {
                    self.val.clear();
                }
                self.saved = true;
            }
            None => self.saved = false,
        }
    }

    /// A positioned cursor of a plain database whose transaction has not
    /// changed since its last call: NEXT may step without a re-sync.
    #[inline(always)]
    pub(crate) fn in_step<T: Snapshot>(&self, txn: &T) -> bool {
        self.gen == txn.generation_of(self.db) && self.pos.dcmp.is_none() && !self.pos.unset()
    }

    /// Perform `op`; returns the item (key, value) the cursor lands on, or
    /// `None` for LMDB's `MDB_NOTFOUND`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// for k in [b"a", b"b", b"c"] {
    ///     w.put(Database::MAIN, k, b"", WriteFlags::EMPTY)?;
    /// }
    /// let mut c = CursorState::new(&w, Database::MAIN)?;
    /// assert_eq!(c.get(&w, CursorOp::Set(b"b"))?.unwrap().0, b"b");
    /// w.del(Database::MAIN, b"b")?; // through the transaction, not the cursor
    /// assert_eq!(c.get(&w, CursorOp::Next)?.unwrap().0, b"c");
    /// assert_eq!(c.get(&w, CursorOp::Next)?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    #[inline]
    pub fn get<'t, T: Snapshot>(
        &mut self,
        txn: &'t T,
        op: CursorOp<'_>,
    ) -> Result<Option<Item<'t>>> {
        // The scan step on a plain database, to the next item of the same
        // leaf: nothing changed since the last call, so no record or
        // re-sync is needed. Small enough to inline into the caller.
        if let CursorOp::Next = op {
            if self.in_step(txn) {
                if !self.pos.just_deleted {
                    if let Some(item) = self.pos.next_plain(txn) {
                        if self.gen != 0 {
                            self.remember(Some(item), true);
                        }
                        return Ok(Some(item));
                    }
                } else if let Some(item) = self.pos.current_plain(txn) {
                    // A delete left the cursor on this item and remembered
                    // its key.
                    self.pos.just_deleted = false;
                    return Ok(Some(item));
                }
            }
        }
        match self.get_general(txn, op) {
            Ok(item) => Ok(item),
            Err(e) => Err(op.failed(e, txn.env(), self.db)),
        }
    }

    #[inline(never)]
    fn get_general<'t, T: Snapshot>(
        &mut self,
        txn: &'t T,
        op: CursorOp<'_>,
    ) -> Result<Option<Item<'t>>> {
        if let (CursorOp::First, true) = (op, self.in_step(txn)) {
            if let Some(item) = self.pos.first_in_place(txn) {
                if self.gen != 0 {
                    self.remember(Some(item), true);
                }
                return Ok(Some(item));
            }
        }
        // (After a delete, `get` returned a plain item the cursor was left on.)
        if let CursorOp::Next = op {
            if self.in_step(txn) && !self.pos.just_deleted {
                // The next leaf: no re-sync, the position is current.
                let rec = txn.db(self.db)?;
                if !self.pos.main.move_next(txn, &rec)? {
                    return Ok(None);
                }
                let item = match self.pos.current_plain(txn) {
                    Some(item) => Some(item),
                    None => self.pos.current(txn)?,
                };
                if self.gen != 0 {
                    self.remember(item, true);
                }
                return Ok(item);
            }
        }
        let rec = txn.db(self.db)?;
        // An op that places the cursor anew does not need the old item
        // re-found first (a search from the root). Until it succeeds the
        // cursor stays behind, to re-find its item on its next op.
        let stale = op.repositions() && self.gen != txn.generation_of(self.db);
        if !stale {
            self.resync(txn, &rec)?;
        }
        // Every op but the MULTIPLE ones returns the item it lands on.
        let multiple = matches!(
            op,
            CursorOp::GetMultiple | CursorOp::NextMultiple | CursorOp::PrevMultiple
        );
        let r = apply(&mut self.pos, txn, &rec, self.flags, op)?;
        if stale {
            self.gen = txn.generation_of(self.db);
        }
        if txn.generation() != 0 {
            let cur = match r {
                Some(item) if !multiple => Some(item),
                _ => self.pos.current(txn)?,
            };
            self.remember(cur, true);
        }
        Ok(r)
    }

    /// Record that the cursor moved to item `ix` of the leaf at `level`
    /// (see [`leaf_of`](Self::leaf_of)); out-of-range levels are ignored.
    #[doc(hidden)]
    #[inline(always)]
    pub fn set_leaf_index(&mut self, level: usize, ix: usize) {
        if let Some(x) = self.pos.main.path.ix.get_mut(level) {
            *x = ix;
        }
    }

    /// The key under the cursor (`MDB_GET_CURRENT` asked for the key
    /// only): after [`cursor_del`](crate::RwTxn::cursor_del) removed the
    /// last value of a key that kept others, that key, where
    /// [`CursorOp::GetCurrent`] finds no item. `Err(EINVAL)` if never
    /// positioned; `None` past the end.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, DbFlags, EnvOptions, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db("d", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = CursorState::new(&w, db)?;
    /// c.get(&w, CursorOp::GetBoth(b"a", b"2"))?;
    /// w.cursor_del(&mut c, false)?; // a's last value
    /// assert_eq!(c.current_key(&w)?, Some(&b"a"[..]));
    /// assert_eq!(c.get(&w, CursorOp::GetCurrent)?, None);
    /// assert_eq!(c.get(&w, CursorOp::Next)?, Some((&b"b"[..], &b"1"[..])));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn current_key<'t, T: Snapshot>(&mut self, txn: &'t T) -> Result<Option<&'t [u8]>> {
        let r = (|| {
            let rec = txn.db(self.db)?;
            self.resync(txn, &rec)?;
            if self.pos.unset() {
                return Err(crate::error::Misuse::UnpositionedCursor.into());
            }
            self.pos.current_key(txn)
        })();
        r.map_err(|e| CursorOp::GetCurrent.failed(e, txn.env(), self.db))
    }

    /// Number of values of the current key (DUPSORT only).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, DbFlags, EnvOptions, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db("d", DbFlags::DUP_SORT)?;
    /// let mut c = CursorState::new(&w, db)?;
    /// w.put(db, b"k", b"1", WriteFlags::EMPTY)?;
    /// w.put(db, b"k", b"2", WriteFlags::EMPTY)?;
    /// c.get(&w, CursorOp::First)?;
    /// assert_eq!(c.count(&w)?, 2);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn count<T: Snapshot>(&mut self, txn: &T) -> Result<u64> {
        if self.gen != txn.generation_of(self.db) {
            let rec = txn.db(self.db)?;
            self.resync(txn, &rec)?;
        } else if self.saved || txn.generation() == 0 {
            // Nothing changed since the cursor stood on its item (a write
            // cursor re-found or put it; a reader's snapshot is fixed): a
            // key's sub-database record, read as the cursor entered it,
            // holds the count (slapd counts after every MDB_SET).
            if let Some(n) = self.pos.sub_entries() {
                return Ok(n);
            }
        }
        count(&self.pos, txn)
    }

    /// Whether the cursor's key holds duplicates (a sub-page or a
    /// sub-database) rather than one plain value: LMDB's `MDB_FIRST_DUP`
    /// and `MDB_LAST_DUP` leave the caller's key alone in that case only.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, DbFlags, EnvOptions, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db("d", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = CursorState::new(&w, db)?;
    /// c.get(&w, CursorOp::First)?;
    /// assert!(c.on_dups(&w)?);
    /// c.get(&w, CursorOp::NextNodup)?;
    /// assert!(!c.on_dups(&w)?);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn on_dups<T: Snapshot>(&mut self, txn: &T) -> Result<bool> {
        let rec = txn.db(self.db)?;
        self.resync(txn, &rec)?;
        self.pos.on_dups(txn)
    }

    /// Whether the cursor has been positioned.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let mut c = CursorState::new(&w, Database::MAIN)?;
    /// assert!(!c.is_positioned());
    /// assert_eq!(c.get(&w, CursorOp::First)?, None); // empty database
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// c.get(&w, CursorOp::First)?;
    /// assert!(c.is_positioned());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn is_positioned(&self) -> bool {
        !self.pos.unset()
    }
}

/// `v` becomes a copy of `src`; the sizes of back-mdb's index keys and
/// ids (4 and 8 bytes) as fixed-size copies, not `memcpy` calls (a write
/// cursor remembers its item after every op).
#[inline(always)]
fn copy_into(v: &mut Vec<u8>, src: &[u8]) {
    v.clear();
    if let Ok(a) = <&[u8; 8]>::try_from(src) {
        v.extend_from_slice(a);
    } else if let Ok(a) = <&[u8; 4]>::try_from(src) {
        v.extend_from_slice(a);
    } else {
        v.extend_from_slice(src);
    }
}
