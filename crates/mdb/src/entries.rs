//! Double-ended iteration over a key range (and a key prefix): two cursors,
//! one from each end, that stop where they meet.

use crate::cursor::Cursor;
use crate::db::Database;
use crate::error::{ErrorKind, Result};
use crate::format::cmp::CmpFn;
use crate::snapshot::Snapshot;
use crate::tree::Item;
use std::cmp::Ordering;
use std::ops::{Bound, RangeBounds};

/// The items of a key range of one database, in key order (every
/// duplicate value of a DUPSORT database, in value order), from either end:
/// `rev()` iterates backwards. Items borrow from the transaction.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// for k in [b"a", b"b", b"c", b"d", b"e"] {
///     w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?;
/// }
/// w.commit()?;
/// let r = env.read_txn()?;
/// fn keys<'t>(it: impl Iterator<Item = mdb::Result<mdb::Item<'t>>>) -> Vec<&'t [u8]> {
///     it.map(|kv| kv.unwrap().0).collect()
/// }
/// assert_eq!(keys(r.range(Database::MAIN, &b"b"[..]..&b"d"[..])?), [b"b", b"c"]);
/// assert_eq!(keys(r.range(Database::MAIN, &b"b"[..]..)?.rev()), [b"e", b"d", b"c", b"b"]);
/// let mut both = r.range(Database::MAIN, ..)?;
/// assert_eq!(both.next().unwrap()?.0, b"a");
/// assert_eq!(both.next_back().unwrap()?.0, b"e");
/// assert_eq!(both.count(), 3);
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Entries<'t, T: Snapshot> {
    front: Cursor<'t, T>,
    /// Made on the first step from the back: most ranges only go forward
    /// (boxed: a cursor is a kilobyte; a range is moved on its way to a
    /// loop, and the front cursor boxed too measured 360 Ir more a range).
    back: Option<Box<Cursor<'t, T>>>,
    /// With a lower bound, the range's first item, found when the range
    /// was made (the front cursor is on it): what the back end stops at.
    /// `None`: no lower bound, the front's first step finds its start.
    low: Option<Item<'t>>,
    end: Bound<Vec<u8>>,
    /// The last item each end gave (`None`: not started).
    front_at: Option<Item<'t>>,
    back_at: Option<Item<'t>>,
    kcmp: CmpFn,
    dcmp: Option<CmpFn>,
    done: bool,
}

impl<'t, T: Snapshot> Entries<'t, T> {
    #[inline]
    pub(crate) fn new<'r, R: RangeBounds<&'r [u8]>>(
        txn: &'t T,
        db: Database,
        range: R,
    ) -> Result<Entries<'t, T>> {
        let end = range.end_bound().map(|k| k.to_vec());
        Entries::with_bounds(txn, db, range.start_bound().cloned(), end)
    }

    /// A range from `start` to `end`. A lower bound is sought at once, so
    /// that the bound itself need not be kept.
    #[inline]
    fn with_bounds(
        txn: &'t T,
        db: Database,
        start: Bound<&[u8]>,
        end: Bound<Vec<u8>>,
    ) -> Result<Entries<'t, T>> {
        let front = Cursor::new(txn, db)?;
        let (kcmp, dcmp) = front.comparators();
        let mut e = Entries {
            front,
            back: None,
            low: None,
            end,
            front_at: None,
            back_at: None,
            kcmp,
            dcmp,
            done: false,
        };
        let low = match start {
            // (No key is empty: an empty bound is the lowest.)
            Bound::Unbounded => return Ok(e),
            Bound::Included(k) | Bound::Excluded(k) if k.is_empty() => return Ok(e),
            Bound::Included(k) => e.front.set_range(k)?,
            Bound::Excluded(k) => match e.front.set_range(k)? {
                Some((fk, _)) if e.kcmp.compare(fk, k).is_eq() => e.front.next_nodup()?,
                r => r,
            },
        };
        // Nothing at or past the lower bound: an empty range.
        e.done = low.is_none();
        e.low = low;
        Ok(e)
    }

    /// The items whose key starts with `prefix` (databases ordered by the
    /// default byte-wise comparator: `Incompatible` for REVERSE_KEY,
    /// INTEGERKEY or a user comparator).
    pub(crate) fn prefix(txn: &'t T, db: Database, prefix: &[u8]) -> Result<Entries<'t, T>> {
        let rec = txn.db(db)?;
        // (The database's own order: a user comparator or another flag
        // order makes byte prefixes meaningless.)
        if !txn.env().comparators(db, rec.flags).0.is_lexical() {
            return Err(ErrorKind::Incompatible.into());
        }
        // The first key past every key with the prefix: the prefix with
        // its last byte below 0xff raised, what follows dropped.
        let mut upper = prefix.to_vec();
        while upper.last() == Some(&0xff) {
            upper.pop();
        }
        let end = match upper.last_mut() {
            Some(b) => {
                *b += 1;
                Bound::Excluded(upper)
            }
            None => Bound::Unbounded,
        };
        Entries::with_bounds(txn, db, Bound::Included(prefix), end)
    }

    /// `a` against `b` in the database's order (key, then duplicate value).
    fn order(&self, a: &Item<'_>, b: &Item<'_>) -> Ordering {
        self.kcmp.compare(a.0, b.0).then_with(|| match self.dcmp {
            Some(d) => d.compare(a.1, b.1),
            None => Ordering::Equal,
        })
    }

    #[inline]
    fn below_end(&self, k: &[u8]) -> bool {
        match &self.end {
            Bound::Unbounded => true,
            Bound::Included(e) => self.kcmp.compare(k, e).is_le(),
            Bound::Excluded(e) => self.kcmp.compare(k, e).is_lt(),
        }
    }

    fn above_start(&self, item: &Item<'_>) -> bool {
        self.low.is_none_or(|low| self.order(item, &low).is_ge())
    }

    /// The first item of the range (the front's first step).
    fn first(&mut self) -> Result<Option<Item<'t>>> {
        match self.low {
            Some(low) => Ok(Some(low)),
            None => self.front.first(),
        }
    }

    /// The last item of the range (the back's first step).
    fn last(&mut self) -> Result<Option<Item<'t>>> {
        let mut back = self
            .back
            .take()
            .unwrap_or_else(|| Box::new(self.front.sibling()));
        let r = self.last_with(&mut back);
        self.back = Some(back);
        r
    }

    fn last_with(&self, back: &mut Cursor<'t, T>) -> Result<Option<Item<'t>>> {
        let (k, inclusive) = match &self.end {
            Bound::Unbounded => return back.last(),
            Bound::Included(k) | Bound::Excluded(k) if k.is_empty() => return Ok(None),
            Bound::Included(k) => (k.as_slice(), true),
            Bound::Excluded(k) => (k.as_slice(), false),
        };
        match back.set_range(k)? {
            None => back.last(),
            Some((fk, _)) if inclusive && self.kcmp.compare(fk, k).is_eq() => {
                if self.dcmp.is_some() {
                    back.last_dup()
                } else {
                    back.get_current()
                }
            }
            Some(_) => back.prev(),
        }
    }

    fn step(&mut self, forward: bool) -> Option<Result<Item<'t>>> {
        if self.done {
            return None;
        }
        let r = match (forward, self.front_at.is_some(), self.back_at.is_some()) {
            (true, false, _) => self.first(),
            (true, true, _) => self.front.next(),
            (false, _, false) => self.last(),
            (false, _, true) => match self.back.as_mut() {
                Some(b) => b.prev(),
                None => self.last(),
            },
        };
        let item = match r {
            Ok(Some(i)) => i,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        let inside = if forward {
            self.below_end(item.0) && self.back_at.is_none_or(|b| self.order(&item, &b).is_lt())
        } else {
            self.above_start(&item) && self.front_at.is_none_or(|f| self.order(&item, &f).is_gt())
        };
        if !inside {
            self.done = true;
            return None;
        }
        if forward {
            self.front_at = Some(item);
        } else {
            self.back_at = Some(item);
        }
        Some(Ok(item))
    }
}

impl<'t, T: Snapshot> Iterator for Entries<'t, T> {
    type Item = Result<Item<'t>>;
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        // The usual step: along the front's leaf, the back end not started
        // (what `step` does then, without its general dispatch: 50 Ir
        // less a step).
        if self.front_at.is_some() && self.back_at.is_none() && !self.done {
            if let Some(item) = self.front.step_in_leaf() {
                if !self.below_end(item.0) {
                    self.done = true;
                    return None;
                }
                self.front_at = Some(item);
                return Some(Ok(item));
            }
        }
        self.step(true)
    }
}

impl<T: Snapshot> DoubleEndedIterator for Entries<'_, T> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}

/// The keys of a database, each with its values as an iterator of their
/// own (all the duplicates of a DUPSORT database, one value otherwise),
/// in key order. See [`crate::Txn::groups`].
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let likes = w.create_db("likes", DbFlags::DUP_SORT)?;
/// for (who, what) in [("ann", "tea"), ("bob", "jazz"), ("ann", "chess")] {
///     w.put(likes, who.as_bytes(), what.as_bytes(), WriteFlags::EMPTY)?;
/// }
/// let mut groups = w.groups(likes)?;
/// let (who, things) = groups.next().unwrap()?;
/// assert_eq!(who, b"ann");
/// assert_eq!(things.count(), 2);
/// assert_eq!(groups.next().unwrap()?.0, b"bob");
/// assert!(groups.next().is_none());
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Groups<'t, T: Snapshot> {
    txn: &'t T,
    db: Database,
    keys: Cursor<'t, T>,
    started: bool,
    done: bool,
}

impl<'t, T: Snapshot> Groups<'t, T> {
    pub(crate) fn new(txn: &'t T, db: Database) -> Result<Groups<'t, T>> {
        Ok(Groups {
            txn,
            db,
            keys: Cursor::new(txn, db)?,
            started: false,
            done: false,
        })
    }
}

impl<'t, T: Snapshot> Iterator for Groups<'t, T> {
    type Item = Result<(&'t [u8], Values<'t, T>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = if self.started {
            self.keys.next_nodup()
        } else {
            self.started = true;
            self.keys.first()
        };
        match r {
            Ok(Some((k, _))) => {
                let one = (Bound::Included(k), Bound::Included(k));
                Some(Entries::new(self.txn, self.db, one).map(|e| (k, Values(e))))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// The values of one key (see [`Groups`]), from either end.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let scores = w.create_db("scores", DbFlags::DUP_SORT)?;
/// for s in [b"3", b"9", b"5"] {
///     w.put(scores, b"ann", s, WriteFlags::EMPTY)?;
/// }
/// let (_, mut values) = w.groups(scores)?.next().unwrap()?;
/// assert_eq!(values.next_back().unwrap()?, b"9"); // highest
/// assert_eq!(values.next().unwrap()?, b"3"); // lowest
/// assert_eq!(values.next().unwrap()?, b"5");
/// assert!(values.next().is_none());
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Values<'t, T: Snapshot>(Entries<'t, T>);

impl<'t, T: Snapshot> Iterator for Values<'t, T> {
    type Item = Result<&'t [u8]>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|r| r.map(|(_, v)| v))
    }
}

impl<T: Snapshot> DoubleEndedIterator for Values<'_, T> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|r| r.map(|(_, v)| v))
    }
}
