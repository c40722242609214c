//! Cursors: ordered navigation over one database, and iterators over ranges.

use crate::db::Database;
use crate::error::{Error, ErrorKind, Result};
use crate::format::cmp::CmpFn;
use crate::format::meta::DbRecord;
use crate::format::page::{Leaf, Page};
use crate::pager::PageRead;
use crate::position::{PosBox, Position};
use crate::snapshot::Snapshot;
use crate::tree::check_key;
use crate::tree::Item;

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
/// let keys: Vec<&[u8]> = r.cursor(Database::MAIN)?.iter().map(|kv| kv.unwrap().0).collect();
/// assert_eq!(keys, [b"a", b"b", b"c"]);
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Cursor<'t, T: Snapshot> {
    txn: &'t T,
    db: Database,
    rec: DbRecord,
    pos: PosBox,
    /// The leaf under the position (plain databases): `next` steps along it
    /// without looking the page up again. The transaction is borrowed for
    /// `'t`, so no page can change under it.
    leaf: Option<Kept<'t>>,
}

/// The leaf a cursor stands on, its level in the cursor's path, and a leaf
/// further on in key order that the steps along this one prefetch.
#[derive(Clone, Copy)]
struct Kept<'t> {
    leaf: Leaf<'t>,
    /// `pos.main.path.leaf()` when kept (the path's depth does not change
    /// while the leaf is kept), so that a step computes nothing.
    lvl: usize,
    /// The cursor's index on the leaf: the steps along it move this one
    /// only (the position is on the heap, one load further), and
    /// [`Cursor::sync`] writes it back into the path before anything else
    /// reads the position.
    ix: usize,
    /// What the steps have still to prefetch of the page [`SPREAD_AHEAD`]
    /// leaves on under the same parent (empty if none).
    ahead: &'t [u8],
}

/// How many leaves ahead of the cursor's the scan steps prefetch, a few
/// lines per step (the next leaf is asked for whole when the cursor enters
/// a leaf). Two whole leaves asked for at once stall the steps after them
/// while the CPU has too many lines in flight; spread over the steps, the
/// loads overlap the cursor's work. `next` over 1M random-loaded items,
/// time against summing the mapped file (throwaway driver, medians of 11
/// runs, five rounds, both forms in one build): 1.41-1.60x against
/// 1.69-1.88x; reading every key and value byte as well, 2.52-2.99x
/// against 2.96-3.40x.
const SPREAD_AHEAD: usize = 3;

/// Bytes prefetched per step (four lines): 16 steps cover a 4 KiB page, a
/// leaf half full of 16-byte keys and 100-byte values.
const STEP_BYTES: usize = 256;

impl<'t> Kept<'t> {
    #[inline(always)]
    fn prefetch_step(&mut self) {
        if let Some((w, rest)) = self.ahead.split_at_checked(STEP_BYTES) {
            crate::mmap::prefetch_lines(w);
            self.ahead = rest;
        }
    }
}

impl<'t, T: Snapshot> Cursor<'t, T> {
    /// An unpositioned cursor over the same database and snapshot (no
    /// lookup: the record and comparators are this one's).
    pub(crate) fn sibling(&self) -> Self {
        Cursor {
            txn: self.txn,
            db: self.db,
            rec: self.rec,
            pos: PosBox::new(self.pos.kcmp, self.pos.dcmp),
            leaf: None,
        }
    }

    /// The database's key order and (DUPSORT) value order.
    pub(crate) fn comparators(&self) -> (CmpFn, Option<CmpFn>) {
        (self.pos.kcmp, self.pos.dcmp)
    }

    #[inline]
    pub(crate) fn new(txn: &'t T, db: Database) -> Result<Self> {
        db.check_env(txn.env().tag())?;
        let rec = txn.db(db)?;
        let (k, d) = txn.env().comparators(db, rec.flags);
        Ok(Cursor {
            rec,
            txn,
            db,
            pos: PosBox::new(k, d),
            leaf: None,
        })
    }

    /// Perform any cursor operation (LMDB's `mdb_cursor_get`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// # w.commit()?;
    /// use mdb::CursorOp;
    /// let r = env.read_txn()?;
    /// let mut c = r.cursor(Database::MAIN)?;
    /// assert_eq!(c.op(CursorOp::SetRange(b"bb"))?.unwrap().0, b"c");
    /// assert_eq!(c.op(CursorOp::Prev)?.unwrap().0, b"b");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn op(&mut self, op: CursorOp<'_>) -> Result<Option<Item<'t>>> {
        match op {
            CursorOp::Next => self.next(),
            CursorOp::Prev => self.prev(),
            _ => self.op_general(op),
        }
    }

    /// NEXT to the next plain item of the leaf the last call left the
    /// cursor on (a plain database, nothing changed since), else `None`
    /// with nothing changed. Inlined into `next` and `op`, so a scan step
    /// makes no call.
    #[inline(always)]
    pub(crate) fn step_in_leaf(&mut self) -> Option<Item<'t>> {
        let kept = self.leaf.as_mut()?;
        let item = kept.leaf.item(kept.ix + 1)?;
        kept.ix += 1;
        kept.prefetch_step();
        Some(item)
    }

    /// Write the kept leaf's index back into the position (see `Kept::ix`).
    #[inline(always)]
    fn sync(&mut self) {
        if let Some(k) = &self.leaf {
            self.pos.main.path.ix[k.lvl] = k.ix;
        }
    }

    /// NEXT when [`step_in_leaf`](Self::step_in_leaf) could not: an item
    /// of another kind on the kept leaf, the next leaf's first item, or
    /// the general path.
    #[inline(never)]
    fn next_off_plain(&mut self) -> Result<Option<Item<'t>>> {
        self.sync();
        if let Some(kept) = &mut self.leaf {
            let i = kept.ix + 1;
            if i < kept.leaf.len() {
                kept.ix = i;
                self.pos.main.path.ix[kept.lvl] = i;
                let p = kept.leaf.page();
                return self.item_at(p, i, "cursor next");
            }
            if i == kept.leaf.len() {
                return self.cross_leaf(true);
            }
        }
        self.op_general(CursorOp::Next)
    }

    /// PREV to the previous plain item of the kept leaf, else `None` with
    /// nothing changed (as [`step_in_leaf`](Self::step_in_leaf)).
    #[inline(always)]
    fn step_back_in_leaf(&mut self) -> Option<Item<'t>> {
        let kept = self.leaf.as_mut()?;
        let i = kept.ix.checked_sub(1)?;
        let item = kept.leaf.item(i)?;
        kept.ix = i;
        Some(item)
    }

    /// PREV when [`step_back_in_leaf`](Self::step_back_in_leaf) could not
    /// (as [`next_off_plain`](Self::next_off_plain)).
    #[inline(never)]
    fn prev_off_plain(&mut self) -> Result<Option<Item<'t>>> {
        self.sync();
        if let Some(kept) = &mut self.leaf {
            let ix = kept.ix;
            if ix == 0 {
                return self.cross_leaf(false);
            }
            // (`ix` may be one past the last item after a seek past the end.)
            if ix <= kept.leaf.len() {
                kept.ix = ix - 1;
                self.pos.main.path.ix[kept.lvl] = ix - 1;
                let p = kept.leaf.page();
                return self.item_at(p, ix - 1, "cursor prev");
            }
        }
        self.op_general(CursorOp::Prev)
    }

    /// Item `i` of leaf `p`, whatever its kind.
    fn item_at(&self, p: Page<'t>, i: usize, op: &'static str) -> Result<Option<Item<'t>>> {
        let r = p.node(i).and_then(|n| {
            let v = crate::tree::node_value(self.txn, n, self.pos.dcmp.is_some())?;
            Ok(Some((n.key(), v)))
        });
        r.map_err(|e| self.failed(e, op))
    }

    /// NEXT (`fwd`) from the last item of the kept leaf, or PREV from its
    /// first: the first item of the next leaf (the last of the previous
    /// one), found from the path (no search from the root, no re-check of
    /// the database record), and that leaf kept in turn. A forward scan
    /// asks for the next leaf whole and spreads the third one over its
    /// steps; a backward one asks for the two before whole.
    fn cross_leaf(&mut self, fwd: bool) -> Result<Option<Item<'t>>> {
        let (op, far) = if fwd {
            ("cursor next", 2)
        } else {
            ("cursor prev", 3)
        };
        match self.pos.main.step_to_leaf(self.txn, &self.rec, fwd, far) {
            Ok(Some(crossed)) => {
                self.keep(crossed.leaf, crossed.parent.filter(|_| fwd));
                let path = &self.pos.main.path;
                let ix = path.ix[path.leaf()];
                match self.leaf.and_then(|k| k.leaf.item(ix)) {
                    Some(item) => Ok(Some(item)),
                    None => self.pos.current(self.txn).map_err(|e| self.failed(e, op)),
                }
            }
            Ok(None) => Ok(None),
            Err(e) => {
                self.leaf = None;
                Err(self.failed(e, op))
            }
        }
    }

    /// Keep `p`, the leaf at the end of the position's path, for the next
    /// steps (nothing kept if it is not a plain leaf); with its parent (a
    /// forward scan), also have them prefetch the leaf [`SPREAD_AHEAD`] on.
    #[inline]
    fn keep(&mut self, p: Page<'t>, parent: Option<Page<'t>>) {
        let path = &self.pos.main.path;
        let lvl = path.leaf();
        let mut ahead: &'t [u8] = &[];
        if let (Some(parent), Some(up)) = (parent, lvl.checked_sub(1)) {
            let child = parent.child(path.ix[up] + SPREAD_AHEAD);
            if let Ok(b) = child.and_then(|c| self.txn.page_bytes(c)) {
                ahead = b;
            }
        }
        let ix = path.ix[lvl];
        self.leaf = Leaf::of(p).map(|leaf| Kept {
            leaf,
            lvl,
            ix,
            ahead,
        });
    }

    #[cold]
    fn failed(&self, e: Error, op: &'static str) -> Error {
        self.txn.env().failed(e, op, self.db, None, None)
    }

    #[inline(never)]
    fn op_general(&mut self, op: CursorOp<'_>) -> Result<Option<Item<'t>>> {
        self.sync();
        if self.pos.dcmp.is_none() {
            match op {
                CursorOp::SetRange(k) => return self.seek_plain(op, k, false),
                CursorOp::Set(k) | CursorOp::SetKey(k) => return self.seek_plain(op, k, true),
                _ => {}
            }
        }
        let r = apply(&mut self.pos, self.txn, &self.rec, self.rec.flags, op);
        // Not `op.failed` as in `CursorState::get`: this form measured
        // 1 Ir per scan item less when every scan step came through here
        // (`mdb-bench instr`, Rust API scan).
        let r = r.map_err(|e| {
            let (name, key, val) = op.described();
            self.txn.env().failed(e, name, self.db, key, val)
        });
        self.leaf = None;
        if r.is_ok() && self.pos.dcmp.is_none() && !self.pos.unset() && !self.pos.just_deleted {
            let path = &self.pos.main.path;
            if path.len > 0 {
                if let Ok(p) = self.txn.page(path.pg[path.leaf()]) {
                    self.keep(p, None);
                }
            }
        }
        r
    }

    /// SET_RANGE (or, `exact`, SET) in a plain database: what `apply`
    /// does, with the item read from the leaf kept for the steps after
    /// (one page lookup, not three).
    fn seek_plain(&mut self, op: CursorOp<'_>, k: &[u8], exact: bool) -> Result<Option<Item<'t>>> {
        self.leaf = None;
        let found = check_key(k).and_then(|()| self.pos.seek(self.txn, &self.rec, k));
        let r = match found {
            Ok(false) if exact => Ok(None),
            Ok(_) if self.pos.unset() => Ok(None),
            Ok(_) => {
                let path = &self.pos.main.path;
                match self.txn.page(path.pg[path.leaf()]) {
                    Ok(p) => {
                        self.keep(p, None);
                        match self.leaf.and_then(|k| k.leaf.item(k.ix)) {
                            Some(item) => Ok(Some(item)),
                            // (Past the leaf's end, or not a plain item.)
                            None => self.pos.current(self.txn),
                        }
                    }
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        r.map_err(|e| {
            let (name, key, val) = op.described();
            self.txn.env().failed(e, name, self.db, key, val)
        })
    }

    /// First item (the first value of the first key).
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
    /// assert_eq!(c.first()?, Some((&b"a"[..], &b"v"[..])));
    /// assert_eq!(c.last()?.unwrap().0, b"c");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn first(&mut self) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::First)
    }
    /// Last item (the last value of the last key).
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
    /// assert_eq!(c.last()?.unwrap().0, b"c");
    /// assert_eq!(r.cursor(Database::FREE)?.last()?, None); // empty
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn last(&mut self) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::Last)
    }
    /// Next item, walking every value of DUPSORT keys (the first item if
    /// unpositioned); `None` at the end, where the position is kept.
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
    /// let mut keys = Vec::new();
    /// while let Some((k, _)) = c.next()? {
    ///     keys.push(k);
    /// }
    /// assert_eq!(keys, [b"a", b"b", b"c"]);
    /// assert_eq!(c.get_current()?.unwrap().0, b"c"); // still on the last
    /// # Ok::<(), mdb::Error>(())
    /// ```
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Result<Option<Item<'t>>> {
        match self.step_in_leaf() {
            Some(item) => Ok(Some(item)),
            None => self.next_off_plain(),
        }
    }
    /// Previous item (the last one if unpositioned).
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
    /// assert_eq!(c.prev()?.unwrap().0, b"c");
    /// assert_eq!(c.prev()?.unwrap().0, b"b");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    #[inline]
    pub fn prev(&mut self) -> Result<Option<Item<'t>>> {
        match self.step_back_in_leaf() {
            Some(item) => Ok(Some(item)),
            None => self.prev_off_plain(),
        }
    }
    /// First value of the next key (`MDB_NEXT_NODUP`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(db)?;
    /// assert_eq!(c.first()?, Some((&b"a"[..], &b"1"[..])));
    /// assert_eq!(c.next_nodup()?, Some((&b"b"[..], &b"1"[..]))); // skips a's 2 and 3
    /// assert_eq!(c.next_nodup()?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn next_nodup(&mut self) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::NextNodup)
    }
    /// Last value of the previous key (`MDB_PREV_NODUP`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(db)?;
    /// c.last()?;
    /// assert_eq!(c.prev_nodup()?, Some((&b"a"[..], &b"3"[..])));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn prev_nodup(&mut self) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::PrevNodup)
    }
    /// Next value of the current key (`MDB_NEXT_DUP`); `None` after its last.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(db)?;
    /// c.set(b"a")?;
    /// assert_eq!(c.next_dup()?.unwrap().1, b"2");
    /// assert_eq!(c.next_dup()?.unwrap().1, b"3");
    /// assert_eq!(c.next_dup()?, None); // b's values are not a's
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn next_dup(&mut self) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::NextDup)
    }
    /// Previous value of the current key (`MDB_PREV_DUP`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(db)?;
    /// c.get_both(b"a", b"2")?;
    /// assert_eq!(c.prev_dup()?.unwrap().1, b"1");
    /// assert_eq!(c.prev_dup()?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn prev_dup(&mut self) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::PrevDup)
    }
    /// First value of the current key (`MDB_FIRST_DUP`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(db)?;
    /// c.get_both(b"a", b"2")?;
    /// assert_eq!(c.first_dup()?.unwrap().1, b"1");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn first_dup(&mut self) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::FirstDup)
    }
    /// Last value of the current key (`MDB_LAST_DUP`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(db)?;
    /// c.set(b"a")?;
    /// assert_eq!(c.last_dup()?.unwrap().1, b"3");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn last_dup(&mut self) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::LastDup)
    }
    /// The item at the cursor; `Err(EINVAL)` if never positioned.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{Database, Env, ErrorKind, Txn, WriteFlags};
    /// # let env = Env::open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// # for k in [b"a", b"b", b"c"] { w.put(Database::MAIN, k, b"v", WriteFlags::EMPTY)?; }
    /// # w.commit()?;
    /// use mdb::{Error, Misuse};
    /// let r = env.read_txn()?;
    /// let mut c = r.cursor(Database::MAIN)?;
    /// assert_eq!(c.get_current().map_err(|e| e.kind()), Err(ErrorKind::Misuse(Misuse::UnpositionedCursor)));
    /// c.set(b"b")?;
    /// assert_eq!(c.get_current()?, Some((&b"b"[..], &b"v"[..])));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn get_current(&mut self) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::GetCurrent)
    }
    /// Position at exactly `key`; returns its (first) value.
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
    /// assert_eq!(c.set(b"b")?, Some(&b"v"[..]));
    /// assert_eq!(c.next()?.unwrap().0, b"c"); // go on from there
    /// assert_eq!(c.set(b"bb")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set(&mut self, key: &[u8]) -> Result<Option<&'t [u8]>> {
        Ok(self.op(CursorOp::Set(key))?.map(|kv| kv.1))
    }
    /// Position at exactly `key`; returns the stored key and its first value.
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
    /// let (k, v) = c.set_key(b"b")?.unwrap();
    /// assert_eq!((k, v), (&b"b"[..], &b"v"[..])); // `k` borrows the map
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_key(&mut self, key: &[u8]) -> Result<Option<Item<'t>>> {
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
    /// # w.commit()?;
    /// let r = env.read_txn()?;
    /// let mut c = r.cursor(Database::MAIN)?;
    /// assert_eq!(c.set_range(b"b")?.unwrap().0, b"b");
    /// assert_eq!(c.set_range(b"bb")?.unwrap().0, b"c");
    /// assert_eq!(c.set_range(b"d")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_range(&mut self, key: &[u8]) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::SetRange(key))
    }
    /// Position at exactly `key` and value `val` (`MDB_GET_BOTH`, DUPSORT only).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(db)?;
    /// assert_eq!(c.get_both(b"a", b"2")?, Some((&b"a"[..], &b"2"[..])));
    /// assert_eq!(c.get_both(b"a", b"9")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn get_both(&mut self, key: &[u8], val: &[u8]) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::GetBoth(key, val))
    }
    /// Position at `key` and its first value >= `val` (`MDB_GET_BOTH_RANGE`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(db)?;
    /// assert_eq!(c.get_both_range(b"a", b"15")?.unwrap().1, b"2");
    /// assert_eq!(c.get_both_range(b"a", b"4")?, None); // not b's values
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn get_both_range(&mut self, key: &[u8], val: &[u8]) -> Result<Option<Item<'t>>> {
        self.op(CursorOp::GetBothRange(key, val))
    }
    /// DUPFIXED: the values on the page holding the current value, packed
    /// (`MDB_GET_MULTIPLE`); the cursor moves to that page's last value.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let ids = w.create_db("ids", DbFlags::DUP_SORT | DbFlags::DUP_FIXED)?;
    /// for i in 0u32..3000 {
    ///     w.put(ids, b"k", &i.to_be_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(ids)?;
    /// c.set(b"k")?;
    /// let packed = c.get_multiple()?.unwrap(); // the first page's values
    /// assert_eq!(&packed[..8], [0, 0, 0, 0, 0, 0, 0, 1]);
    /// let n = (packed.len() / 4) as u32;
    /// assert_eq!(c.get_current()?.unwrap().1, (n - 1).to_be_bytes());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn get_multiple(&mut self) -> Result<Option<&'t [u8]>> {
        Ok(self.op(CursorOp::GetMultiple)?.map(|kv| kv.1))
    }
    /// DUPFIXED: the next page of values of the current key (`MDB_NEXT_MULTIPLE`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let ids = w.create_db("ids", DbFlags::DUP_SORT | DbFlags::DUP_FIXED)?;
    /// for i in 0u32..3000 {
    ///     w.put(ids, b"k", &i.to_be_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(ids)?;
    /// c.set(b"k")?;
    /// let mut total = 0;
    /// let mut page = c.get_multiple()?;
    /// while let Some(p) = page {
    ///     total += p.len() / 4;
    ///     page = c.next_multiple()?;
    /// }
    /// assert_eq!(total, 3000);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn next_multiple(&mut self) -> Result<Option<&'t [u8]>> {
        Ok(self.op(CursorOp::NextMultiple)?.map(|kv| kv.1))
    }
    /// DUPFIXED: the previous page of values of the current key (`MDB_PREV_MULTIPLE`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let ids = w.create_db("ids", DbFlags::DUP_SORT | DbFlags::DUP_FIXED)?;
    /// for i in 0u32..3000 {
    ///     w.put(ids, b"k", &i.to_be_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(ids)?;
    /// c.set(b"k")?;
    /// c.last_dup()?;
    /// let mut total = 0;
    /// while let Some(p) = c.prev_multiple()? {
    ///     total += p.len() / 4;
    /// }
    /// assert!(total > 0 && total < 3000); // the pages before the last one
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn prev_multiple(&mut self) -> Result<Option<&'t [u8]>> {
        Ok(self.op(CursorOp::PrevMultiple)?.map(|kv| kv.1))
    }
    /// Number of values of the current key (`mdb_cursor_count`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// # let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// # let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// for (k, v) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1")] {
    ///     w.put(db, k.as_bytes(), v.as_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(db)?;
    /// c.set(b"a")?;
    /// assert_eq!(c.count()?, 3);
    /// c.next_nodup()?;
    /// assert_eq!(c.count()?, 1);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn count(&self) -> Result<u64> {
        let mut pos = *self.pos;
        if let Some(k) = &self.leaf {
            pos.main.path.ix[k.lvl] = k.ix;
        }
        count(&pos, self.txn)
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

/// A cursor operation for [`Cursor::op`], [`RwCursor::op`](crate::RwCursor::op)
/// and [`CursorState::get`] (LMDB's `MDB_cursor_op`), for code that
/// chooses the move at run time; the cursors' methods name each one.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{CursorOp, Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// for k in [b"a", b"b", b"c"] {
///     w.put(Database::MAIN, k, b"", WriteFlags::EMPTY)?;
/// }
/// let backwards = true;
/// let (start, step) = if backwards {
///     (CursorOp::Last, CursorOp::Prev)
/// } else {
///     (CursorOp::First, CursorOp::Next)
/// };
/// let mut c = w.cursor(Database::MAIN)?;
/// let mut keys = Vec::new();
/// let mut item = c.op(start)?;
/// while let Some((k, _)) = item {
///     keys.push(k);
///     item = c.op(step)?;
/// }
/// assert_eq!(keys, [b"c", b"b", b"a"]);
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorOp<'k> {
    /// `MDB_FIRST`.
    First,
    /// `MDB_LAST`.
    Last,
    /// `MDB_NEXT`.
    Next,
    /// `MDB_PREV`.
    Prev,
    /// `MDB_NEXT_DUP`.
    NextDup,
    /// `MDB_PREV_DUP`.
    PrevDup,
    /// `MDB_NEXT_NODUP`.
    NextNodup,
    /// `MDB_PREV_NODUP`.
    PrevNodup,
    /// `MDB_FIRST_DUP`.
    FirstDup,
    /// `MDB_LAST_DUP`.
    LastDup,
    /// `MDB_GET_CURRENT`.
    GetCurrent,
    /// `MDB_SET`: exactly this key.
    Set(&'k [u8]),
    /// `MDB_SET_KEY`: exactly this key, returning the stored key.
    SetKey(&'k [u8]),
    /// `MDB_SET_RANGE`: the first key >= this one.
    SetRange(&'k [u8]),
    /// `MDB_GET_BOTH`: exactly this key and value.
    GetBoth(&'k [u8], &'k [u8]),
    /// `MDB_GET_BOTH_RANGE`: this key, first value >= this one.
    GetBothRange(&'k [u8], &'k [u8]),
    /// `MDB_GET_MULTIPLE`: the page of packed values (DUPFIXED) as the value.
    GetMultiple,
    /// `MDB_NEXT_MULTIPLE`.
    NextMultiple,
    /// `MDB_PREV_MULTIPLE`.
    PrevMultiple,
}

impl CursorOp<'_> {
    /// `e`, saying that this operation on `db` failed.
    #[cold]
    fn failed(&self, e: Error, env: &crate::env::Env, db: Database) -> Error {
        let (name, key, val) = self.described();
        env.failed(e, name, db, key, val)
    }

    /// What an error says was being done, and the sizes of the key and
    /// value the operation was given.
    fn described(&self) -> (&'static str, Option<usize>, Option<usize>) {
        use CursorOp::*;
        let (k, v) = match *self {
            Set(k) | SetKey(k) | SetRange(k) => (Some(k.len()), None),
            GetBoth(k, v) | GetBothRange(k, v) => (Some(k.len()), Some(v.len())),
            _ => (None, None),
        };
        let name = match self {
            First => "cursor first",
            Last => "cursor last",
            Next => "cursor next",
            Prev => "cursor prev",
            NextDup => "cursor next dup",
            PrevDup => "cursor prev dup",
            NextNodup => "cursor next nodup",
            PrevNodup => "cursor prev nodup",
            FirstDup => "cursor first dup",
            LastDup => "cursor last dup",
            GetCurrent => "cursor get current",
            Set(_) => "cursor set",
            SetKey(_) => "cursor set key",
            SetRange(_) => "cursor set range",
            GetBoth(_, _) => "cursor get both",
            GetBothRange(_, _) => "cursor get both range",
            GetMultiple => "cursor get multiple",
            NextMultiple => "cursor next multiple",
            PrevMultiple => "cursor prev multiple",
        };
        (name, k, v)
    }
}

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
        self.pos = Position::new(k, d);
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
                self.key.clear();
                self.key.extend_from_slice(k);
                // Only duplicates are re-found by value (and are short): a
                // plain value may span a gigabyte of overflow pages.
                self.val.clear();
                if self.pos.dcmp.is_some() {
                    self.val.extend_from_slice(v);
                }
                self.saved = true;
            }
            None => self.saved = false,
        }
    }

    /// A positioned cursor of a plain database whose transaction has not
    /// changed since its last call: NEXT may step without a re-sync.
    #[inline(always)]
    fn in_step<T: Snapshot>(&self, txn: &T) -> bool {
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
        self.resync(txn, &rec)?;
        // Every op but the MULTIPLE ones returns the item it lands on.
        let multiple = matches!(
            op,
            CursorOp::GetMultiple | CursorOp::NextMultiple | CursorOp::PrevMultiple
        );
        let r = apply(&mut self.pos, txn, &rec, self.flags, op)?;
        if txn.generation() != 0 {
            let cur = match r {
                Some(item) if !multiple => Some(item),
                _ => self.pos.current(txn)?,
            };
            self.remember(cur, true);
        }
        Ok(r)
    }

    /// The leaf page a positioned cursor of a plain database stands on in
    /// read transaction `txn`, with its level in the cursor's stack and the
    /// cursor's index in it: for a binding that steps along the leaf itself
    /// with [`page::plain_item`](crate::page::plain_item) and reports each
    /// step with [`set_leaf_index`](Self::set_leaf_index). `None` when the
    /// next `Next` needs the general path (DUPSORT, unpositioned, just
    /// deleted). The bytes are the snapshot's, unchanged while it lives.
    #[doc(hidden)]
    pub fn leaf_of<'t>(&self, txn: &'t crate::RoTxn<'_>) -> Option<(&'t [u8], usize, usize)> {
        if !self.in_step(txn) || self.pos.just_deleted || self.pos.main.path.len == 0 {
            return None;
        }
        let path = &self.pos.main.path;
        let l = path.leaf();
        let b = txn.page_bytes(path.pg[l]).ok()?;
        Some((b, l, path.ix[l]))
    }

    /// SET or SET_KEY (`exact`), else SET_RANGE, at `k` in a plain
    /// database of read transaction `txn`: the item, and the leaf as
    /// [`leaf_of`](Self::leaf_of) gives it after, from one lookup of the
    /// leaf (the general path looks it up for the item, then again for the
    /// leaf). `None` (nothing done) for a DUPSORT database or a cursor last
    /// used in another snapshot: the general path then takes over.
    #[doc(hidden)]
    pub fn seek_leaf<'t>(
        &mut self,
        txn: &'t crate::RoTxn<'_>,
        k: &[u8],
        exact: bool,
    ) -> Option<Result<SeekLeaf<'t>>> {
        if self.pos.dcmp.is_some() || self.gen != txn.generation() {
            return None;
        }
        let r = (|| {
            check_key(k)?;
            let rec = txn.db(self.db)?;
            let hit = self.pos.seek(txn, &rec, k)?;
            let path = &self.pos.main.path;
            if self.pos.unset() || path.len == 0 {
                return Ok((None, None));
            }
            let l = path.leaf();
            let (b, ix) = (txn.page_bytes(path.pg[l])?, path.ix[l]);
            let item = match crate::format::page::plain_item(b, ix) {
                _ if exact && !hit => None,
                Some(item) => Some(item),
                // Past the leaf's end, or not a plain item (overflow).
                None => self.pos.current(txn)?,
            };
            Ok((item, Some((b, l, ix))))
        })();
        let op = if exact {
            CursorOp::Set(k)
        } else {
            CursorOp::SetRange(k)
        };
        Some(r.map_err(|e| op.failed(e, txn.env(), self.db)))
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
        let rec = txn.db(self.db)?;
        self.resync(txn, &rec)?;
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

/// One cursor operation on a position: the single place where LMDB's cursor
/// op rules live (used by [`Cursor`], [`RwCursor`] and [`CursorState`]).
fn apply<'t, T: Snapshot>(
    pos: &mut Position,
    txn: &'t T,
    rec: &DbRecord,
    flags: u16,
    op: CursorOp<'_>,
) -> Result<Option<Item<'t>>> {
    let dups = pos.dcmp.is_some();
    let fixed = dups && flags & crate::format::flags::DUPFIXED != 0;
    let need_pos = |p: &Position| {
        if p.unset() {
            Err(Error::from(crate::error::Misuse::UnpositionedCursor))
        } else {
            Ok(())
        }
    };
    let need = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(Error::from(ErrorKind::Incompatible))
        }
    };
    // As LMDB, every op but the forward steps (which return the item a
    // delete left the cursor on) forgets that a key was deleted, failed
    // ones too.
    if !matches!(op, CursorOp::Next | CursorOp::NextDup | CursorOp::NextNodup) {
        pos.just_deleted = false;
    }
    Ok(match op {
        CursorOp::First => pos.first(txn, rec)?,
        CursorOp::Last => pos.last(txn, rec)?,
        CursorOp::Next => pos.next(txn, rec)?,
        CursorOp::Prev => pos.prev(txn, rec)?,
        CursorOp::NextNodup => pos.next_nodup(txn, rec)?,
        CursorOp::PrevNodup => pos.prev_nodup(txn, rec)?,
        // LMDB 0.9.24 moves like NEXT/PREV on a database without
        // duplicates (c-api.md §13.2 says NOTFOUND; the library disagrees).
        // After a delete, NOTFOUND (and the next NEXT moves on).
        CursorOp::NextDup if !dups => {
            if std::mem::take(&mut pos.just_deleted) {
                None
            } else {
                pos.next(txn, rec)?
            }
        }
        CursorOp::PrevDup if !dups => pos.prev(txn, rec)?,
        CursorOp::NextDup => {
            if pos.unset() {
                pos.first(txn, rec)?
            } else {
                pos.next_dup(txn)?
            }
        }
        CursorOp::PrevDup => {
            if pos.unset() {
                pos.last(txn, rec)?
            } else {
                pos.prev_dup(txn)?
            }
        }
        CursorOp::FirstDup | CursorOp::LastDup => {
            need_pos(pos)?;
            need(dups)?;
            pos.edge_dup(txn, op == CursorOp::LastDup)?
        }
        CursorOp::GetCurrent => {
            need_pos(pos)?;
            pos.get_current(txn)?
        }
        CursorOp::Set(k) | CursorOp::SetKey(k) => {
            check_key(k)?;
            if pos.seek(txn, rec, k)? {
                pos.current(txn)?
            } else {
                None
            }
        }
        CursorOp::SetRange(k) => {
            check_key(k)?;
            pos.seek(txn, rec, k)?;
            pos.current(txn)?
        }
        CursorOp::GetBoth(k, v) | CursorOp::GetBothRange(k, v) => {
            need(dups)?;
            check_key(k)?;
            let exact = matches!(op, CursorOp::GetBoth(..));
            pos.seek_both(txn, rec, k, v, exact)?
        }
        CursorOp::GetMultiple => {
            need(fixed)?;
            need_pos(pos)?;
            let key = pos.current(txn)?.map(|kv| kv.0);
            match (key, pos.multiple(txn)?) {
                (Some(k), Some(b)) => Some((k, b)),
                _ => None,
            }
        }
        CursorOp::NextMultiple | CursorOp::PrevMultiple => {
            need(fixed)?;
            let b = if op == CursorOp::NextMultiple {
                pos.next_multiple(txn, rec)?
            } else {
                pos.prev_multiple(txn, rec)?
            };
            match (b, pos.current(txn)?) {
                (Some(b), Some((k, _))) => Some((k, b)),
                _ => None,
            }
        }
    })
}

/// `mdb_cursor_count`: values of the current key.
fn count<T: Snapshot>(pos: &Position, txn: &T) -> Result<u64> {
    if pos.dcmp.is_none() {
        return Err(ErrorKind::Incompatible.into());
    }
    if pos.unset() {
        return Err(ErrorKind::Misuse(crate::error::Misuse::UnpositionedCursor).into());
    }
    pos.count(txn)
}
