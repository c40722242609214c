//! The Rust iterators over a cursor: every following item ([`Iter`]) or a
//! key range ([`Range`]).

use super::nav::Cursor;
use crate::error::Result;
use crate::snapshot::Snapshot;
use crate::tree::Item;

use std::ops::{Bound, RangeBounds};

/// Walking a cursor as an iterator yields every following item.
impl<'t, T: Snapshot> IntoIterator for Cursor<'t, T> {
    type Item = Result<Item<'t>>;
    type IntoIter = Iter<'t, T>;
    fn into_iter(self) -> Iter<'t, T> {
        Iter(self)
    }
}

/// Iterator over the items following a cursor's position (all items for a
/// fresh cursor), every duplicate included ([`Cursor::iter`], or a cursor
/// in a `for` loop).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"a", b"1", WriteFlags::EMPTY)?;
/// w.put(Database::MAIN, b"b", b"2", WriteFlags::EMPTY)?;
/// let mut sum = 0;
/// for item in w.cursor(Database::MAIN)? {
///     let (_key, val) = item?;
///     sum += val[0] - b'0';
/// }
/// assert_eq!(sum, 3);
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Iter<'t, T: Snapshot>(Cursor<'t, T>);

impl<'t, T: Snapshot> Iterator for Iter<'t, T> {
    type Item = Result<Item<'t>>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().transpose()
    }
}

impl<'t, T: Snapshot> Cursor<'t, T> {
    /// Iterate from the current position on (from the first item if fresh).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// # w.commit()?;
    /// let r = env.read_txn()?;
    /// let mut c = r.cursor(Database::MAIN)?;
    /// c.set(b"a")?;
    /// let rest: Vec<&[u8]> = c.iter().map(|kv| kv.map(|kv| kv.0)).collect::<mdb::Result<_>>()?;
    /// assert_eq!(rest, [b"b", b"c"]); // the items after the position
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn iter(self) -> Iter<'t, T> {
        Iter(self)
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
            cmp: self.pos.kcmp,
            cursor: self,
            pending: Some(first),
            end,
        }
    }
}

/// Iterator over a key range (see [`Cursor::range`]); the cursor stays
/// where the range ended.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// for k in [b"a", b"b", b"c", b"d"] {
///     w.put(Database::MAIN, k, b"", WriteFlags::EMPTY)?;
/// }
/// let mut c = w.cursor(Database::MAIN)?;
/// let keys: Vec<&[u8]> = c
///     .range(&b"b"[..]..=&b"c"[..])
///     .map(|kv| kv.map(|kv| kv.0))
///     .collect::<mdb::Result<_>>()?;
/// assert_eq!(keys, [b"b", b"c"]);
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Range<'c, 't, T: Snapshot> {
    cursor: &'c mut Cursor<'t, T>,
    pending: Option<Result<Option<Item<'t>>>>,
    end: Bound<Vec<u8>>,
    cmp: crate::format::cmp::CmpFn,
}

impl<'t, T: Snapshot> Iterator for Range<'_, 't, T> {
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
                    Bound::Included(e) => self.cmp.compare(k, e).is_le(),
                    Bound::Excluded(e) => self.cmp.compare(k, e).is_lt(),
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
