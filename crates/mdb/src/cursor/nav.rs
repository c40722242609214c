//! [`Cursor`]: a cursor borrowing its transaction, and its moves.

use super::op::{apply, count, CursorOp};

use super::position::PosBox;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::format::cmp::CmpFn;
use crate::format::meta::DbRecord;
use crate::format::page::{Leaf, Page};
use crate::snapshot::Snapshot;
use crate::tree::check_key;
use crate::tree::Item;

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
    pub(super) pos: PosBox,
    /// The leaf under the position (plain databases): `next` steps along it
    /// without looking the page up again. The transaction is borrowed for
    /// `'t`, so no page can change under it.
    leaf: Option<Kept<'t>>,
    /// The page of the current key's values under the position (DUPSORT:
    /// its sub-page, or its sub-database's leaf): `next_dup` and `next`
    /// step along it without looking the key's node up again.
    dups: Option<KeptDups<'t>>,
}

/// A key and the page of its values a cursor stands on (see
/// [`Position::dup_leaf`](super::position::Position)), with the cursor's
/// index there, written through into the position at each step.
#[derive(Clone, Copy)]
struct KeptDups<'t> {
    key: &'t [u8],
    vals: &'t [u8],
    ix: usize,
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
            dups: None,
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
            dups: None,
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
            CursorOp::NextDup => self.next_dup(),
            _ => self.op_general(op),
        }
    }

    /// NEXT_DUP (or NEXT) to the next value on the kept page of the key's
    /// values, else `None` with nothing changed (the last value of the
    /// page, or nothing kept).
    #[inline(always)]
    fn step_dup(&mut self) -> Option<Item<'t>> {
        let d = self.dups.as_mut()?;
        let v = crate::format::page::dup_value(d.vals, d.ix + 1)?;
        d.ix += 1;
        self.pos.set_dup_index(d.ix);
        Some((d.key, v))
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
        if let Some(item) = self.step_dup() {
            return Ok(Some(item));
        }
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
        self.dups = None;
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
        } else if r.is_ok() && self.pos.dcmp.is_some() && op.steps() {
            // (After a step only, as the C library's cursors: a seek pays
            // nothing, a walk after it keeps the page at its first step.)
            self.dups =
                self.pos
                    .dup_leaf(self.txn)
                    .map(|(key, vals, ix)| KeptDups { key, vals, ix });
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
        match self.step_dup() {
            Some(item) => Ok(Some(item)),
            None => self.op_general(CursorOp::NextDup),
        }
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
}
