//! Cursors: ordered navigation over one database, and iterators over ranges.

use crate::db::Database;
use crate::error::{Error, Result};
use crate::meta::DbRecord;
use crate::tree::{CursorPos, Item};
use crate::txn::{RwTxn, Txn};
use crate::WriteFlags;
use std::ops::{Bound, RangeBounds};

/// A read cursor. Items borrow from the transaction, not from the cursor,
/// so they stay usable while the cursor moves on.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Env, Database, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// for k in [b"a", b"b", b"c"] {
///     w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?;
/// }
/// w.commit()?;
/// let r = env.read_txn()?;
/// let keys: Vec<&[u8]> = r.cursor(Database::MAIN)?.map(|kv| kv.unwrap().0).collect();
/// assert_eq!(keys, [b"a", b"b", b"c"]);
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Cursor<'t, T: Txn> {
    txn: &'t T,
    rec: DbRecord,
    pos: CursorPos,
}

impl<'t, T: Txn> Cursor<'t, T> {
    pub(crate) fn new(txn: &'t T, db: Database) -> Result<Self> {
        Ok(Cursor {
            rec: txn.db(db)?,
            txn,
            pos: CursorPos::new(),
        })
    }

    /// First item.
    pub fn first(&mut self) -> Result<Option<Item<'t>>> {
        self.pos.first(self.txn, &self.rec)
    }
    /// Last item.
    pub fn last(&mut self) -> Result<Option<Item<'t>>> {
        self.pos.last(self.txn, &self.rec)
    }
    /// Next item (the first one if unpositioned); `None` at the end (the position is kept).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Item<'t>>> {
        self.pos.next(self.txn, &self.rec)
    }
    /// Previous item (the last one if unpositioned).
    pub fn prev(&mut self) -> Result<Option<Item<'t>>> {
        self.pos.prev(self.txn, &self.rec)
    }
    /// The item at the cursor; `Err(EINVAL)` if never positioned.
    pub fn get_current(&self) -> Result<Option<Item<'t>>> {
        if self.pos.unset {
            return Err(Error::Os(libc::EINVAL));
        }
        self.pos.current(self.txn)
    }
    /// Position at exactly `key`; returns its value.
    pub fn set(&mut self, key: &[u8]) -> Result<Option<&'t [u8]>> {
        Ok(self.set_key(key)?.map(|kv| kv.1))
    }
    /// Position at exactly `key`; returns the stored key and value.
    pub fn set_key(&mut self, key: &[u8]) -> Result<Option<Item<'t>>> {
        check_key(key)?;
        if self.pos.seek(self.txn, &self.rec, key)? {
            self.pos.current(self.txn)
        } else {
            Ok(None)
        }
    }
    /// Position at the first key >= `key`.
    pub fn set_range(&mut self, key: &[u8]) -> Result<Option<Item<'t>>> {
        check_key(key)?;
        self.pos.seek(self.txn, &self.rec, key)?;
        self.pos.current(self.txn)
    }
    /// Iterate over the keys in `range`, in order.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Env, Database, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c", b"d"] { w.put(Database::MAIN, k, b"", WriteFlags::EMPTY)?; }
    /// # w.commit()?;
    /// let r = env.read_txn()?;
    /// let mut c = r.cursor(Database::MAIN)?;
    /// let n = c.range(&b"b"[..]..&b"d"[..]).count();
    /// assert_eq!(n, 2);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn range<'r, R: RangeBounds<&'r [u8]>>(&mut self, range: R) -> Range<'_, 't, T> {
        let end = match range.end_bound() {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let first = match range.start_bound() {
            Bound::Unbounded => self.first(),
            Bound::Included(k) => self.set_range(k),
            Bound::Excluded(k) => match self.set_range(k) {
                Ok(Some((fk, _))) if fk == *k => self.next(),
                r => r,
            },
        };
        Range {
            cmp: crate::cmp::for_flags(self.rec.flags),
            cursor: self,
            pending: Some(first),
            end,
        }
    }
}

/// Walking a cursor as an iterator yields every following item.
impl<'t, T: Txn> Iterator for Cursor<'t, T> {
    type Item = Result<Item<'t>>;
    fn next(&mut self) -> Option<Self::Item> {
        Cursor::next(self).transpose()
    }
}

/// Iterator over a key range (see [`Cursor::range`]).
pub struct Range<'c, 't, T: Txn> {
    cursor: &'c mut Cursor<'t, T>,
    pending: Option<Result<Option<Item<'t>>>>,
    end: Bound<Vec<u8>>,
    cmp: crate::cmp::CmpFn,
}

impl<'t, T: Txn> Iterator for Range<'_, 't, T> {
    type Item = Result<Item<'t>>;
    fn next(&mut self) -> Option<Self::Item> {
        let r = match self.pending.take() {
            Some(r) => r,
            None => self.cursor.next(),
        };
        match r {
            Ok(Some((k, v))) => {
                let inside = match &self.end {
                    Bound::Unbounded => true,
                    Bound::Included(e) => (self.cmp)(k, e).is_le(),
                    Bound::Excluded(e) => (self.cmp)(k, e).is_lt(),
                };
                if inside {
                    Some(Ok((k, v)))
                } else {
                    self.end = Bound::Excluded(Vec::new());
                    self.pending = Some(Ok(None));
                    None
                }
            }
            Ok(None) => {
                self.pending = Some(Ok(None));
                None
            }
            Err(e) => Some(Err(e)),
        }
    }
}

pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.is_empty() || key.len() > crate::env::MAX_KEY_SIZE {
        return Err(Error::BadValSize);
    }
    Ok(())
}

/// A cursor of the write transaction that can also put and delete.
/// Items it returns borrow the cursor, so they end at the next change.
pub struct RwCursor<'t, 'env> {
    txn: &'t mut RwTxn<'env>,
    db: Database,
    pos: CursorPos,
}

impl<'env> RwTxn<'env> {
    /// A cursor that can modify `db`.
    pub fn write_cursor(&mut self, db: Database) -> Result<RwCursor<'_, 'env>> {
        if db == Database::FREE {
            return Err(Error::Os(libc::EINVAL));
        }
        self.rec(db)?;
        Ok(RwCursor {
            txn: self,
            db,
            pos: CursorPos::new(),
        })
    }
}

impl RwCursor<'_, '_> {
    fn rec(&self) -> Result<DbRecord> {
        self.txn.rec(self.db)
    }
    /// First item.
    pub fn first(&mut self) -> Result<Option<Item<'_>>> {
        let rec = self.rec()?;
        self.pos.first(&*self.txn, &rec)
    }
    /// Last item.
    pub fn last(&mut self) -> Result<Option<Item<'_>>> {
        let rec = self.rec()?;
        self.pos.last(&*self.txn, &rec)
    }
    /// Next item; after a delete, the item that followed the deleted one.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Item<'_>>> {
        let rec = self.rec()?;
        self.pos.next(&*self.txn, &rec)
    }
    /// Previous item.
    pub fn prev(&mut self) -> Result<Option<Item<'_>>> {
        let rec = self.rec()?;
        self.pos.prev(&*self.txn, &rec)
    }
    /// The item at the cursor.
    pub fn get_current(&mut self) -> Result<Option<Item<'_>>> {
        if self.pos.unset {
            return Err(Error::Os(libc::EINVAL));
        }
        self.pos.just_deleted = false;
        self.pos.current(&*self.txn)
    }
    /// Position at exactly `key`.
    pub fn set_key(&mut self, key: &[u8]) -> Result<Option<Item<'_>>> {
        check_key(key)?;
        let rec = self.rec()?;
        if self.pos.seek(&*self.txn, &rec, key)? {
            self.pos.current(&*self.txn)
        } else {
            Ok(None)
        }
    }
    /// Position at the first key >= `key`.
    pub fn set_range(&mut self, key: &[u8]) -> Result<Option<Item<'_>>> {
        check_key(key)?;
        let rec = self.rec()?;
        self.pos.seek(&*self.txn, &rec, key)?;
        self.pos.current(&*self.txn)
    }

    /// Store `key`/`val` and leave the cursor on it. With
    /// [`WriteFlags::CURRENT`] the current item's value is replaced; its key
    /// must equal `key` (`EINVAL` otherwise, where LMDB would corrupt the order).
    pub fn put(&mut self, key: &[u8], val: &[u8], flags: WriteFlags) -> Result<()> {
        if flags.contains(WriteFlags::CURRENT) {
            let cur = self.get_current()?.ok_or(Error::NotFound)?;
            if cur.0 != key {
                return Err(Error::Os(libc::EINVAL));
            }
        }
        let flags = WriteFlags(flags.0 & !WriteFlags::CURRENT.0);
        let r = self.txn.put(self.db, key, val, flags);
        // Reposition on the key also after MDB_KEYEXIST, as LMDB does.
        if r.is_ok() || r == Err(Error::KeyExist) {
            let rec = self.rec()?;
            self.pos.seek(&*self.txn, &rec, key)?;
        }
        r
    }

    /// Delete the item at the cursor. The cursor then sits on the following
    /// item, which the next [`RwCursor::next`] returns.
    pub fn del(&mut self) -> Result<()> {
        if self.pos.unset {
            return Err(Error::Os(libc::EINVAL));
        }
        let key = match self.pos.current(&*self.txn)? {
            Some((k, _)) => k.to_vec(),
            None => return Err(Error::NotFound),
        };
        self.txn.del(self.db, &key)?;
        let rec = self.rec()?;
        self.pos.seek(&*self.txn, &rec, &key)?;
        if self.pos.unset {
            return Ok(());
        }
        self.pos.just_deleted = true;
        Ok(())
    }
}
