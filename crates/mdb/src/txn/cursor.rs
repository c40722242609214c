//! Writes through cursors: [`RwCursor`], and puts and deletes at a
//! detached [`CursorState`] (what the C API's cursors use).

use super::*;
use crate::cursor::position::DupDel;
use crate::cursor::{CursorOp, CursorState};
use crate::error::ErrorKind;
use crate::tree::{Item, Tree, WriteFlags};

/// A cursor of the write transaction that can also put and delete
/// ([`RwTxn::write_cursor`]). Items it returns borrow the cursor, so they
/// end at the next change.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// for (k, v) in [("a", "keep"), ("b", "drop"), ("c", "keep")] {
///     w.put(Database::MAIN, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
/// }
/// let mut c = w.write_cursor(Database::MAIN)?;
/// let mut more = c.first()?.is_some();
/// while more {
///     if c.get_current()?.unwrap().1 == b"drop" {
///         c.del(false)?; // `next` then returns the item after it
///     }
///     more = c.next()?.is_some();
/// }
/// drop(c);
/// assert_eq!(w.stat(Database::MAIN)?.entries, 2);
/// assert_eq!(w.get(Database::MAIN, b"b")?, None);
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct RwCursor<'t, 'env> {
    txn: &'t mut RwTxn<'env>,
    st: CursorState,
}

impl<'env> RwTxn<'env> {
    /// A cursor that can modify `db`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// c.set_key(b"b")?;
    /// c.put(b"b", b"new", WriteFlags::CURRENT)?;
    /// drop(c);
    /// assert_eq!(w.get(Database::MAIN, b"b")?, Some(&b"new"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn write_cursor(&mut self, db: Database) -> Result<RwCursor<'_, 'env>> {
        if db == Database::FREE {
            return Err(ErrorKind::Misuse(Misuse::FreeDbWrite).into());
        }
        let st = CursorState::new(&*self, db)?;
        Ok(RwCursor { txn: self, st })
    }
}

impl RwCursor<'_, '_> {
    /// Perform any cursor operation (LMDB's `mdb_cursor_get`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// use mdb::CursorOp;
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// assert_eq!(c.op(CursorOp::Last)?.unwrap().0, b"c");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn op(&mut self, op: CursorOp<'_>) -> Result<Option<Item<'_>>> {
        self.st.get(&*self.txn, op)
    }
    /// First item.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// assert_eq!(c.first()?, Some((&b"a"[..], &b"v"[..])));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn first(&mut self) -> Result<Option<Item<'_>>> {
        self.op(CursorOp::First)
    }
    /// Last item.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// assert_eq!(c.last()?.unwrap().0, b"c");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn last(&mut self) -> Result<Option<Item<'_>>> {
        self.op(CursorOp::Last)
    }
    /// Next item; after a delete, the item that followed the deleted one.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// c.first()?;
    /// c.del(false)?; // a
    /// assert_eq!(c.next()?.unwrap().0, b"b");
    /// assert_eq!(c.next()?.unwrap().0, b"c");
    /// assert_eq!(c.next()?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Item<'_>>> {
        self.op(CursorOp::Next)
    }
    /// Previous item.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// c.last()?;
    /// assert_eq!(c.prev()?.unwrap().0, b"b");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn prev(&mut self) -> Result<Option<Item<'_>>> {
        self.op(CursorOp::Prev)
    }
    /// Next value of the current key.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.write_cursor(db)?;
    /// c.first()?;
    /// assert_eq!(c.next_dup()?, Some((&b"a"[..], &b"2"[..])));
    /// assert_eq!(c.next_dup()?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn next_dup(&mut self) -> Result<Option<Item<'_>>> {
        self.op(CursorOp::NextDup)
    }
    /// First value of the next key.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.write_cursor(db)?;
    /// c.first()?;
    /// assert_eq!(c.next_nodup()?, Some((&b"b"[..], &b"1"[..])));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn next_nodup(&mut self) -> Result<Option<Item<'_>>> {
        self.op(CursorOp::NextNodup)
    }
    /// The item at the cursor.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// c.set_range(b"bb")?;
    /// assert_eq!(c.get_current()?.unwrap().0, b"c");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn get_current(&mut self) -> Result<Option<Item<'_>>> {
        self.op(CursorOp::GetCurrent)
    }
    /// The key at the cursor (LMDB's `MDB_GET_CURRENT` without a value):
    /// after [`del`](Self::del) removed a key's last value while the key
    /// kept others, that key, where [`get_current`](Self::get_current)
    /// finds no item.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("children", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("p1", "c1"), ("p1", "c2"), ("p2", "c3")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.write_cursor(db)?;
    /// c.get_both(b"p1", b"c2")?;
    /// c.del(false)?;
    /// assert_eq!(c.current_key()?, Some(&b"p1"[..])); // still under p1
    /// assert_eq!(c.get_current()?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn current_key(&mut self) -> Result<Option<&[u8]>> {
        self.st.current_key(&*self.txn)
    }
    /// Position at exactly `key`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// assert_eq!(c.set_key(b"b")?, Some((&b"b"[..], &b"v"[..])));
    /// assert_eq!(c.set_key(b"x")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_key(&mut self, key: &[u8]) -> Result<Option<Item<'_>>> {
        self.op(CursorOp::SetKey(key))
    }
    /// Position at the first key >= `key`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// assert_eq!(c.set_range(b"ab")?.unwrap().0, b"b");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_range(&mut self, key: &[u8]) -> Result<Option<Item<'_>>> {
        self.op(CursorOp::SetRange(key))
    }
    /// Position at exactly `key` and value `val` (DUPSORT).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.write_cursor(db)?;
    /// assert_eq!(c.get_both(b"a", b"2")?, Some((&b"a"[..], &b"2"[..])));
    /// c.del(false)?; // just that value
    /// c.set_key(b"a")?;
    /// assert_eq!(c.count()?, 1);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn get_both(&mut self, key: &[u8], val: &[u8]) -> Result<Option<Item<'_>>> {
        self.op(CursorOp::GetBoth(key, val))
    }
    /// Number of values of the current key.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.write_cursor(db)?;
    /// c.set_key(b"a")?;
    /// assert_eq!(c.count()?, 2);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn count(&mut self) -> Result<u64> {
        self.st.count(&*self.txn)
    }
    /// Store `key`/`val` and leave the cursor on it. With
    /// [`WriteFlags::CURRENT`] the current item is replaced; its key must
    /// equal `key` (`EINVAL` otherwise, where LMDB would corrupt the order).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// c.put(b"d", b"new", WriteFlags::EMPTY)?;
    /// assert_eq!(c.get_current()?, Some((&b"d"[..], &b"new"[..])));
    /// c.put(b"d", b"newer", WriteFlags::CURRENT)?; // replace in place
    /// assert!(c.put(b"e", b"x", WriteFlags::CURRENT).is_err()); // not the current key
    /// drop(c);
    /// assert_eq!(w.get(Database::MAIN, b"d")?, Some(&b"newer"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn put(&mut self, key: &[u8], val: &[u8], flags: WriteFlags) -> Result<()> {
        self.txn.cursor_put(&mut self.st, key, val, flags)
    }
    /// Delete the item at the cursor (with `all_dups`, every value of its
    /// key). The cursor then sits on the following item, which the next
    /// [`RwCursor::next`] returns, as LMDB's cursors do:
    ///
    /// - a value followed by others of its key: on the next one, which
    ///   `next`, `next_dup` and `get_current` return;
    /// - a key's last value, the key keeping others: still on the key
    ///   ([`current_key`](Self::current_key)) but past its values:
    ///   `get_current` and `next_dup` find nothing, `next` returns the next
    ///   key's first value and `prev` the key's new last one;
    /// - a whole key (or a plain database's item): on the next key, whose
    ///   first value `next`, `next_nodup` and `get_current` return (and
    ///   `next_dup` nothing), or past the end.
    ///
    /// `prev` returns the item before the deleted one.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.write_cursor(db)?;
    /// c.set_key(b"a")?;
    /// c.del(true)?; // every value of "a"
    /// assert_eq!(c.next()?, Some((&b"b"[..], &b"1"[..])));
    /// drop(c);
    /// assert_eq!(w.get(db, b"a")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn del(&mut self, all_dups: bool) -> Result<()> {
        self.txn.cursor_del(&mut self.st, all_dups)
    }
}

impl RwTxn<'_> {
    /// Put through a detached cursor (`mdb_cursor_put`), leaving it on the
    /// stored item. With [`WriteFlags::CURRENT`] the item at the cursor is
    /// replaced; `key` must be its key (`EINVAL` otherwise).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let mut a = CursorState::new(&w, Database::MAIN)?;
    /// let mut b = CursorState::new(&w, Database::MAIN)?;
    /// w.cursor_put(&mut a, b"k1", b"v1", WriteFlags::EMPTY)?;
    /// w.cursor_put(&mut b, b"k2", b"v2", WriteFlags::EMPTY)?;
    /// w.cursor_put(&mut a, b"k1", b"v1'", WriteFlags::CURRENT)?;
    /// assert_eq!(a.get(&w, CursorOp::GetCurrent)?, Some((&b"k1"[..], &b"v1'"[..])));
    /// assert_eq!(b.get(&w, CursorOp::GetCurrent)?.unwrap().0, b"k2");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn cursor_put(
        &mut self,
        st: &mut CursorState,
        key: &[u8],
        val: &[u8],
        flags: WriteFlags,
    ) -> Result<()> {
        match self.put_at_cursor(st, key, val, flags) {
            Ok(()) => Ok(()),
            Err(e) => {
                let (k, v) = (Some(key.len()), Some(val.len()));
                Err(self.env.failed(e, "cursor put", st.db, k, v))
            }
        }
    }

    fn put_at_cursor(
        &mut self,
        st: &mut CursorState,
        key: &[u8],
        val: &[u8],
        flags: WriteFlags,
    ) -> Result<()> {
        let db = st.db;
        // The cursor's path is the tree's now if nothing changed it since
        // its last operation. Only `CURRENT` needs its item re-found after
        // a change: any other put places the cursor on the item put (and
        // until it does, the cursor stays behind, to re-find its item on
        // its next op).
        let same = st.gen == self.generation_of(db);
        let mut known = same;
        if !same && flags.contains(WriteFlags::CURRENT) {
            let rec = self.db(db)?;
            st.resync(&*self, &rec)?;
            known = st.saved;
        }
        if flags.contains(WriteFlags::CURRENT) {
            if st.pos.unset() {
                return Err(ErrorKind::Misuse(Misuse::UnpositionedCursor).into());
            }
            let dups = st.pos.dcmp.is_some();
            // A plain value is not needed (and may be huge): copy dups only.
            let (ck, cv) = match st.pos.current(&*self)? {
                Some((k, v)) => (k.to_vec(), if dups { v.to_vec() } else { Vec::new() }),
                None => return Err(ErrorKind::NotFound.into()),
            };
            if ck != key {
                return Err(ErrorKind::Misuse(Misuse::KeyNotCurrent).into());
            }
            if dups && cv != val {
                // Of the same size and sorting the same (slapd's dn2id
                // counts in a parent's entry): in place, as LMDB.
                let dcmp = st.pos.dcmp.ok_or(ErrorKind::Incompatible)?;
                if flags == WriteFlags::CURRENT
                    && cv.len() == val.len()
                    && dcmp.compare(&cv, val) == std::cmp::Ordering::Equal
                {
                    return self.overwrite_dup(st, val);
                }
                self.del_dup(db, key, &cv)?;
                known = false;
            }
        }
        let plain = WriteFlags(flags.0 & !WriteFlags::CURRENT.0);
        if !plain.contains(WriteFlags::RESERVE) {
            return self.put_by_cursor(st, (key, val), plain, known);
        }
        let r = self.put(db, key, val, plain);
        if r.is_ok() || r == Err(ErrorKind::KeyExist.into()) {
            self.land_after_put(st, (key, val), r.is_ok())?;
        }
        r
    }

    /// `MDB_CURRENT` on the duplicate under `st` (re-synced): `val` of its
    /// size and sorting as it does, written over it in place.
    fn overwrite_dup(&mut self, st: &mut CursorState, val: &[u8]) -> Result<()> {
        let db = st.db;
        let rec = self.check_usable(db)?;
        let mut t = Tree {
            rec,
            cmp: st.pos.kcmp,
            dups: st.pos.dcmp,
            fixed: 0,
        };
        let r = st.pos.overwrite_dup(&mut self.pg, &mut t, val);
        self.set_rec(db, t.rec);
        self.fail_on_fatal(r)?;
        self.gen.note(|w| w.in_place += 1);
        let cur = st.pos.current(&*self)?;
        st.remember(cur, true);
        st.gen = self.generation_of(db);
        Ok(())
    }

    /// Delete the item at a detached cursor (`mdb_cursor_del`); with
    /// `all_dups` every value of its key. The cursor then sits on the
    /// following item, which the next `Next` returns (see
    /// [`RwCursor::del`] for where exactly).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CursorOp, CursorState, Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// for k in [b"a", b"b", b"c"] {
    ///     w.put(Database::MAIN, k, b"", WriteFlags::EMPTY)?;
    /// }
    /// let mut c = CursorState::new(&w, Database::MAIN)?;
    /// c.get(&w, CursorOp::Set(b"b"))?;
    /// w.cursor_del(&mut c, false)?;
    /// assert_eq!(c.get(&w, CursorOp::Next)?.unwrap().0, b"c");
    /// assert_eq!(w.get(Database::MAIN, b"b")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn cursor_del(&mut self, st: &mut CursorState, all_dups: bool) -> Result<()> {
        match self.del_at_cursor(st, all_dups) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.env.failed(e, "cursor del", st.db, None, None)),
        }
    }

    fn del_at_cursor(&mut self, st: &mut CursorState, all_dups: bool) -> Result<()> {
        let db = st.db;
        let rec = self.db(db)?;
        st.resync(&*self, &rec)?;
        if st.pos.unset() {
            return Err(ErrorKind::Misuse(Misuse::UnpositionedCursor).into());
        }
        let dups = st.pos.dcmp.is_some();
        if !dups {
            // Delete at the position itself, no search from the root. The
            // key is kept (in the cursor's buffer) only to find the next
            // item if the tree changes shape.
            match self.del_at(db, (rec, st.pos.kcmp), &mut st.pos.main.path, &mut st.key) {
                Ok(true) => {
                    st.pos.just_deleted = true;
                    st.val.clear();
                    st.saved = true;
                }
                Ok(false) => {
                    let rec = self.db(db)?;
                    st.pos.refind(&*self, &rec, &st.key, &[])?;
                    let cur = st.pos.current(&*self)?;
                    st.remember(cur, true);
                }
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::Incompatible) => {
                    // Nothing moved: the cursor stays where it was.
                    st.gen = self.generation_of(st.db);
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
            st.gen = self.generation_of(st.db);
            return Ok(());
        }
        self.del_dup_at_cursor(st, all_dups)
    }

    /// [`del_at_cursor`](Self::del_at_cursor) in a DUPSORT database (apart,
    /// so that the plain path stays compact).
    #[inline(never)]
    fn del_dup_at_cursor(&mut self, st: &mut CursorState, all_dups: bool) -> Result<()> {
        let db = st.db;
        // Past a key's values (a delete's `DupDel::End`) there is no value
        // to delete, but there is the key.
        let cur = match (st.pos.dup_del, all_dups) {
            (DupDel::End, false) => None,
            (DupDel::End, true) => st.pos.main.current_key(&*self)?.map(|k| (k, &[][..])),
            _ => st.pos.current(&*self)?,
        };
        let (key, val) = match cur {
            Some((k, v)) => (k.to_vec(), v.to_vec()),
            None => return Err(ErrorKind::NotFound.into()),
        };
        if all_dups {
            self.del(db, &key)?;
        } else {
            self.del_dup(db, &key, &val)?;
        }
        // Where LMDB leaves it: on the key's next value, past its values if
        // that was the last, else on the next key.
        let rec = self.db(db)?;
        st.pos.refind(&*self, &rec, &key, &val)?;
        let cur = st.pos.current(&*self)?;
        st.remember(cur, true);
        st.gen = self.generation_of(st.db);
        Ok(())
    }
}
