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
    /// Made on the first step from the back: most ranges only go forward.
    back: Option<Cursor<'t, T>>,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    /// The last item each end gave (`None`: not started).
    front_at: Option<Item<'t>>,
    back_at: Option<Item<'t>>,
    kcmp: CmpFn,
    dcmp: Option<CmpFn>,
    done: bool,
}

impl<'t, T: Snapshot> Entries<'t, T> {
    pub(crate) fn new<'r, R: RangeBounds<&'r [u8]>>(
        txn: &'t T,
        db: Database,
        range: R,
    ) -> Result<Entries<'t, T>> {
        let rec = txn.db(db)?;
        let (kcmp, dcmp) = txn.env().comparators(db, rec.flags);
        Ok(Entries {
            front: Cursor::new(txn, db)?,
            back: None,
            start: range.start_bound().map(|k| k.to_vec()),
            end: range.end_bound().map(|k| k.to_vec()),
            front_at: None,
            back_at: None,
            kcmp,
            dcmp,
            done: false,
        })
    }

    /// The items whose key starts with `prefix` (databases ordered by the
    /// default byte-wise comparator: `Incompatible` for REVERSE_KEY,
    /// INTEGERKEY or a user comparator).
    pub(crate) fn prefix(txn: &'t T, db: Database, prefix: &[u8]) -> Result<Entries<'t, T>> {
        let mut e = Entries::new(txn, db, ..)?;
        // (The database's own order: a user comparator or another flag
        // order makes byte prefixes meaningless.)
        if !e.kcmp.is_lexical() {
            return Err(ErrorKind::Incompatible.into());
        }
        // The first key past every key with the prefix: the prefix with
        // its last byte below 0xff raised, what follows dropped.
        let mut upper = prefix.to_vec();
        while upper.last() == Some(&0xff) {
            upper.pop();
        }
        e.start = Bound::Included(prefix.to_vec());
        if let Some(b) = upper.last_mut() {
            *b += 1;
            e.end = Bound::Excluded(upper);
        }
        Ok(e)
    }

    /// `a` against `b` in the database's order (key, then duplicate value).
    fn order(&self, a: &Item<'_>, b: &Item<'_>) -> Ordering {
        self.kcmp.compare(a.0, b.0).then_with(|| match self.dcmp {
            Some(d) => d.compare(a.1, b.1),
            None => Ordering::Equal,
        })
    }

    fn below_end(&self, k: &[u8]) -> bool {
        match &self.end {
            Bound::Unbounded => true,
            Bound::Included(e) => self.kcmp.compare(k, e).is_le(),
            Bound::Excluded(e) => self.kcmp.compare(k, e).is_lt(),
        }
    }

    fn above_start(&self, k: &[u8]) -> bool {
        match &self.start {
            Bound::Unbounded => true,
            Bound::Included(s) => self.kcmp.compare(k, s).is_ge(),
            Bound::Excluded(s) => self.kcmp.compare(k, s).is_gt(),
        }
    }

    /// The first item of the range (the front's first step).
    fn first(&mut self) -> Result<Option<Item<'t>>> {
        match &self.start {
            // (No key is empty: an empty bound is the lowest.)
            Bound::Unbounded => self.front.first(),
            Bound::Included(k) | Bound::Excluded(k) if k.is_empty() => self.front.first(),
            Bound::Included(k) => self.front.set_range(k),
            Bound::Excluded(k) => {
                let k = k.clone();
                match self.front.set_range(&k)? {
                    Some((fk, _)) if self.kcmp.compare(fk, &k).is_eq() => self.front.next_nodup(),
                    r => Ok(r),
                }
            }
        }
    }

    /// The last item of the range (the back's first step).
    fn last(&mut self) -> Result<Option<Item<'t>>> {
        let mut back = self.back.take().unwrap_or_else(|| self.front.sibling());
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
            self.above_start(item.0) && self.front_at.is_none_or(|f| self.order(&item, &f).is_gt())
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
    fn next(&mut self) -> Option<Self::Item> {
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
