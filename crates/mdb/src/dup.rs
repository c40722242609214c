//! Sorted duplicates (DUPSORT, lmdb-format.md §6): a key's values live in the
//! leaf node itself (one value), in a sub-page embedded in the node, or in a
//! sub-database whose keys are the values. Writing, deleting, and the cursor
//! position that walks values in their own order.

use crate::error::{Error, Result};
use crate::format::cmp::CmpFn;
use crate::format::flags::{DUPFIXED, INTEGERDUP};
use crate::format::meta::DbRecord;
use crate::format::page::{
    edit, footprint, node_max, search, Node, NodeData, Page, F_DUPDATA, F_SUBDATA, HDR, NODE_HDR,
    P_INVALID, P_LEAF, P_LEAF2,
};
use crate::pager::PageRead;
use crate::tree::{descend, node_value, CursorPos, Item, Path};
use crate::txn::sealed::Snapshot;
use crate::txn::RwTxn;
use crate::write::Tree;
use crate::WriteFlags;
use std::cmp::Ordering;

/// Sub-page header flags: LEAF | DIRTY | SUBP. LMDB only edits sub-pages in
/// place when DIRTY is set, so it must be present.
const SUBPAGE_FLAGS: u16 = P_LEAF | 0x10 | 0x40;

/// How a key's values are stored.
enum Dups<'a> {
    Single(&'a [u8]),
    SubPage(Page<'a>),
    SubDb(DbRecord),
}

fn dups_of<'a, S: Snapshot>(s: &'a S, n: Node<'a>) -> Result<Dups<'a>> {
    let f = n.flags();
    if f & F_DUPDATA == 0 {
        return Ok(Dups::Single(node_value(s, n)?));
    }
    if f & F_SUBDATA != 0 {
        if n.dsize() != 48 || n.data().len() != 48 {
            return Err(Error::Corrupted);
        }
        return Ok(Dups::SubDb(DbRecord::decode(n.data())));
    }
    Ok(Dups::SubPage(Page::new(n.data())?))
}

/// The first (smallest) value of a DUPSORT node.
pub(crate) fn first_dup<'a, S: Snapshot>(s: &'a S, n: Node<'a>) -> Result<&'a [u8]> {
    match dups_of(s, n)? {
        Dups::Single(v) => Ok(v),
        Dups::SubPage(p) => p.key(0),
        Dups::SubDb(rec) => {
            let mut pos = CursorPos::new();
            pos.move_edge(s, &rec, false)?;
            pos.current_key(s)?.ok_or(Error::Corrupted)
        }
    }
}

/// The tree of a key's duplicates sub-database.
fn sub_tree(t: &Tree, rec: DbRecord) -> Result<Tree> {
    Ok(Tree {
        rec,
        cmp: t.dups.ok_or(Error::Incompatible)?,
        dups: None,
        fixed: if rec.flags & DUPFIXED != 0 {
            rec.pad as usize
        } else {
            0
        },
    })
}

/// Bytes of the sub-page [`build_subpage`] makes.
fn subpage_len(vals: &[&[u8]], fixed: bool, slack: usize) -> usize {
    if fixed {
        let size = vals[0].len();
        let mut slots = vals.len() + slack;
        slots += (slots * size) % 2;
        HDR + slots * size
    } else {
        let used: usize = vals.iter().map(|v| 2 + footprint(v.len(), 0)).sum();
        HDR + used + slack.next_multiple_of(2)
    }
}

/// Encode sorted values as a sub-page with `slack` spare room: value slots
/// for DUPFIXED (packed), bytes otherwise.
fn build_subpage(vals: &[&[u8]], fixed: bool, slack: usize) -> Vec<u8> {
    if fixed {
        let size = vals[0].len();
        // Keep the sub-page size even (a spare slot when odd): LMDB edits
        // sub-pages in place and shifts the page by the size difference, so
        // an odd size would leave its nodes at odd offsets.
        let mut slots = vals.len() + slack;
        slots += (slots * size) % 2;
        let mut b = vec![0u8; HDR + slots * size];
        edit::init_leaf2(&mut b, 0, SUBPAGE_FLAGS | P_LEAF2, size);
        for (i, v) in vals.iter().enumerate() {
            let ok = edit::insert_leaf2(&mut b, i, v);
            debug_assert!(ok);
        }
        return b;
    }
    let used: usize = vals.iter().map(|v| 2 + footprint(v.len(), 0)).sum();
    let mut b = vec![0u8; HDR + used + slack.next_multiple_of(2)];
    edit::init(&mut b, 0, SUBPAGE_FLAGS);
    for (i, v) in vals.iter().enumerate() {
        let ok = edit::insert_leaf(&mut b, i, v, NodeData::Inline(&[]));
        debug_assert!(ok);
    }
    b
}

/// The packed values of a LEAF2 page or DUPFIXED sub-page.
fn packed<'a>(p: &Page<'a>) -> Result<&'a [u8]> {
    if !p.is_leaf2() {
        return Err(Error::Incompatible);
    }
    p.bytes()
        .get(HDR..HDR + p.len() * p.pad())
        .ok_or(Error::Corrupted)
}

fn page_values<'a>(p: &Page<'a>) -> Result<Vec<&'a [u8]>> {
    (0..p.len()).map(|i| p.key(i)).collect()
}

/// A key's new set of values, built while the old ones are still borrowed
/// from the page: the sub-page bytes, or (too big for a node) owned values
/// for a new sub-database.
enum NewDups {
    SubPage(Vec<u8>),
    SubDb(Vec<Vec<u8>>),
}

impl NewDups {
    /// Values after an insert: a sub-page with room to grow (about a quarter
    /// more, so later inserts go in place as in LMDB), or without the room
    /// if that is what fits in a node, or else a sub-database. Keys with a
    /// few variable-size values (most keys of a typical index) get no room:
    /// it would make their leaves up to twice as many.
    fn build(vals: &[&[u8]], fixed: bool, ksize: usize, psize: usize) -> NewDups {
        let fits = |sp: &Vec<u8>| NODE_HDR + ksize + sp.len() <= node_max(psize);
        let n = vals.len();
        let slack = if fixed {
            (n / 4).max(2)
        } else {
            let used: usize = vals.iter().map(|v| 2 + footprint(v.len(), 0)).sum();
            if n <= 4 {
                0
            } else {
                (used / 4).max(2 * (2 + footprint(vals[n - 1].len(), 0)))
            }
        };
        // The room is capped by the node size limit (not dropped when the
        // full room does not fit: near the limit every insert would then
        // rebuild the sub-page).
        let limit = node_max(psize).saturating_sub(NODE_HDR + ksize);
        let tight_len = subpage_len(vals, fixed, 0);
        if tight_len > limit {
            return NewDups::SubDb(vals.iter().map(|v| v.to_vec()).collect());
        }
        let mut slack = if fixed {
            slack.min((limit - tight_len) / vals[0].len().max(1))
        } else {
            slack.min(limit - tight_len) & !1
        };
        // A DUPFIXED sub-page may take one more slot to keep its size even.
        while slack > 0 && subpage_len(vals, fixed, slack) > limit {
            slack -= 1;
        }
        let sp = build_subpage(vals, fixed, slack);
        if !fits(&sp) {
            return NewDups::SubDb(vals.iter().map(|v| v.to_vec()).collect());
        }
        NewDups::SubPage(sp)
    }
}

impl RwTxn<'_> {
    fn check_dup_value(&self, t: &Tree, val: &[u8]) -> Result<()> {
        if val.len() > crate::env::MAX_KEY_SIZE {
            return Err(Error::BadValSize);
        }
        if t.rec.flags & INTEGERDUP != 0 && val.len() != 4 && val.len() != 8 {
            return Err(Error::BadValSize);
        }
        Ok(())
    }

    /// Add `val` to the values of `key` in a DUPSORT tree.
    pub(crate) fn dup_put(
        &mut self,
        t: &mut Tree,
        key: &[u8],
        val: &[u8],
        flags: WriteFlags,
    ) -> Result<()> {
        self.check_dup_value(t, val)?;
        if t.rec.flags & crate::format::flags::INTEGERKEY != 0 && key.len() != 4 && key.len() != 8 {
            return Err(Error::BadValSize);
        }
        let dcmp = t.dups.ok_or(Error::Incompatible)?;
        let mut path = Path::new();
        let (i, exact) = descend(&*self, &t.rec, t.cmp, key, &mut path)?;
        if !exact {
            // An empty value alone under its key is stored as LMDB stores it.
            let f = WriteFlags(flags.0 & (WriteFlags::NO_OVERWRITE.0 | WriteFlags::APPEND.0));
            return self.tree_put(t, key, NodeData::Inline(val), f);
        }
        if flags.contains(WriteFlags::NO_OVERWRITE) || flags.contains(WriteFlags::APPEND) {
            return Err(Error::KeyExist);
        }
        let no_dup = flags.contains(WriteFlags::NO_DUP_DATA);
        let fixed = t.rec.flags & DUPFIXED != 0;
        let append = flags.contains(WriteFlags::APPEND_DUP);
        let leaf = path.pg[path.leaf()];
        let node = self.page(leaf)?.node(i)?;
        let dups = dups_of(&*self, node)?;
        // An empty value beside other values: LMDB refuses one way round and
        // silently drops the empty value the other way; refuse both.
        let lone_empty = matches!(dups, Dups::Single(v) if v.is_empty());
        if val.is_empty() != lone_empty {
            return Err(Error::BadValSize);
        }
        if t.rec.flags & DUPFIXED != 0 {
            let size = match &dups {
                Dups::Single(v) => v.len(),
                Dups::SubPage(p) => p.key(0)?.len(),
                Dups::SubDb(r) => r.pad as usize,
            };
            if val.len() != size {
                return Err(Error::BadValSize);
            }
        }
        match dups {
            Dups::Single(old) => {
                let c = dcmp.compare(val, old);
                if c == Ordering::Equal {
                    return if no_dup || append {
                        Err(Error::KeyExist)
                    } else {
                        Ok(())
                    };
                }
                if append && c == Ordering::Less {
                    return Err(Error::KeyExist);
                }
                let vals = if c == Ordering::Less {
                    [val, old]
                } else {
                    [old, val]
                };
                let new = NewDups::build(&vals, fixed, key.len(), self.env.psize);
                self.set_dup_values(t, &mut path, i, key, new)?;
            }
            Dups::SubPage(p) => {
                let (at, found) = search(&p, val, dcmp)?;
                if found {
                    return if no_dup || append {
                        Err(Error::KeyExist)
                    } else {
                        Ok(())
                    };
                }
                if append && at != p.len() {
                    return Err(Error::KeyExist);
                }
                let room = if fixed {
                    HDR + (p.len() + 1) * p.pad() <= p.bytes().len()
                } else {
                    p.free() >= 2 + footprint(val.len(), 0)
                };
                if room {
                    // In place: the sub-page has spare room.
                    self.touch_path(t, &mut path)?;
                    let buf = self.pg.dirty.get_mut(&path.pg[path.leaf()]).unwrap();
                    let sp = edit::data_mut(buf, i);
                    let ok = if fixed {
                        edit::insert_leaf2(sp, at, val)
                    } else {
                        edit::insert_leaf(sp, at, val, NodeData::Inline(&[]))
                    };
                    if !ok {
                        return Err(Error::Corrupted);
                    }
                    t.rec.entries += 1;
                    return Ok(());
                }
                let mut vals = page_values(&p)?;
                vals.insert(at, val);
                let new = NewDups::build(&vals, fixed, key.len(), self.env.psize);
                self.set_dup_values(t, &mut path, i, key, new)?;
            }
            Dups::SubDb(rec) => {
                let mut st = sub_tree(t, rec)?;
                if crate::tree::contains(&*self, &st.rec, dcmp, val)? {
                    return if no_dup || append {
                        Err(Error::KeyExist)
                    } else {
                        Ok(())
                    };
                }
                if append {
                    let mut pos = CursorPos::new();
                    pos.move_edge(&*self, &st.rec, true)?;
                    if let Some(last) = pos.current_key(&*self)? {
                        if dcmp.compare(val, last) != Ordering::Greater {
                            return Err(Error::KeyExist);
                        }
                    }
                }
                self.touch_path(t, &mut path)?;
                self.tree_put(&mut st, val, NodeData::Inline(&[]), WriteFlags::EMPTY)?;
                self.write_subdb_record(&path, i, &st.rec);
            }
        }
        t.rec.entries += 1;
        Ok(())
    }

    fn write_subdb_record(&mut self, path: &Path, i: usize, rec: &DbRecord) {
        let buf = self.pg.dirty.get_mut(&path.pg[path.leaf()]).unwrap();
        edit::data_mut(buf, i).copy_from_slice(&rec.encode());
    }

    /// Store a key's new values in leaf node `i`: a sub-page while it fits
    /// in a node, a sub-database beyond.
    fn set_dup_values(
        &mut self,
        t: &mut Tree,
        path: &mut Path,
        i: usize,
        key: &[u8],
        new: NewDups,
    ) -> Result<()> {
        self.touch_path(t, path)?;
        let vals = match new {
            NewDups::SubPage(sp) => {
                return self.replace_node(t, path, i, key, NodeData::SubPage(&sp));
            }
            NewDups::SubDb(vals) => vals,
        };
        let mut rec = DbRecord::empty(0);
        if t.rec.flags & DUPFIXED != 0 {
            // LMDB's DUPFIXED sub-DB record: DUPFIXED, INTEGERKEY for INTEGERDUP, pad = size.
            rec.flags = 0x10
                | if t.rec.flags & INTEGERDUP != 0 {
                    0x08
                } else {
                    0
                };
            rec.pad = vals[0].len() as u32;
        }
        let mut st = sub_tree(t, rec)?;
        for v in &vals {
            self.tree_put(&mut st, v, NodeData::Inline(&[]), WriteFlags::APPEND)?;
        }
        self.replace_node(t, path, i, key, NodeData::DupDb(&st.rec.encode()))
    }

    /// Delete `val` from `key`'s values, or all of them with `None`.
    pub(crate) fn dup_del(&mut self, t: &mut Tree, key: &[u8], val: Option<&[u8]>) -> Result<bool> {
        let dcmp = t.dups.ok_or(Error::Incompatible)?;
        let mut path = Path::new();
        let (i, exact) = descend(&*self, &t.rec, t.cmp, key, &mut path)?;
        if !exact {
            return Ok(false);
        }
        let leaf = path.pg[path.leaf()];
        let node = self.page(leaf)?.node(i)?;
        let dups = dups_of(&*self, node)?;
        let Some(val) = val else {
            let count = match &dups {
                Dups::Single(_) => 1,
                Dups::SubPage(p) => p.len() as u64,
                Dups::SubDb(rec) => rec.entries,
            };
            if let Dups::SubDb(rec) = dups {
                let mut st = sub_tree(t, rec)?;
                self.drop_tree(&mut st)?;
            }
            self.tree_del(t, key)?;
            t.rec.entries = t.rec.entries.saturating_sub(count - 1);
            return Ok(true);
        };
        match dups {
            Dups::Single(old) => {
                if dcmp.compare(val, old) != Ordering::Equal {
                    return Ok(false);
                }
                self.tree_del(t, key)
            }
            Dups::SubPage(p) => {
                let (at, found) = search(&p, val, dcmp)?;
                if !found {
                    return Ok(false);
                }
                if p.len() == 1 {
                    return self.tree_del(t, key);
                }
                let mut vals = page_values(&p)?;
                vals.remove(at);
                let sp = build_subpage(&vals, t.rec.flags & DUPFIXED != 0, 0);
                self.touch_path(t, &mut path)?;
                self.replace_node(t, &path, i, key, NodeData::SubPage(&sp))?;
                t.rec.entries -= 1;
                Ok(true)
            }
            Dups::SubDb(rec) => {
                let mut st = sub_tree(t, rec)?;
                if !crate::tree::contains(&*self, &st.rec, dcmp, val)? {
                    return Ok(false);
                }
                self.touch_path(t, &mut path)?;
                self.tree_del(&mut st, val)?;
                if st.rec.root == P_INVALID {
                    return self.tree_del(t, key);
                }
                self.write_subdb_record(&path, i, &st.rec);
                t.rec.entries -= 1;
                Ok(true)
            }
        }
    }
}

/// Where a cursor is among a key's values.
// A position lives on the stack; boxing the sub-tree cursor would allocate per move.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy)]
enum Sub {
    /// A plain node: one value.
    Single,
    /// Index into the node's sub-page.
    Page(usize),
    /// Position in the key's sub-database.
    Tree(DbRecord, CursorPos),
}

/// A cursor position over a database, DUPSORT or not: the key in the main
/// tree and, for DUPSORT, the value among the key's values.
#[derive(Clone, Copy)]
pub(crate) struct Position {
    pub(crate) main: CursorPos,
    sub: Sub,
    /// After a delete, the next `next` returns the item now under the cursor.
    pub(crate) just_deleted: bool,
    pub(crate) kcmp: CmpFn,
    pub(crate) dcmp: Option<CmpFn>,
}

impl Position {
    pub(crate) fn new(kcmp: CmpFn, dcmp: Option<CmpFn>) -> Position {
        Position {
            main: CursorPos::new(),
            sub: Sub::Single,
            just_deleted: false,
            kcmp,
            dcmp,
        }
    }

    /// Whether the cursor has never been positioned (or the DB emptied).
    pub(crate) fn unset(&self) -> bool {
        self.main.unset
    }

    fn node<'a, S: Snapshot>(&self, s: &'a S) -> Result<Option<Node<'a>>> {
        match self.main.leaf_node(s)? {
            Some((p, i)) => p.node(i).map(Some),
            None => Ok(None),
        }
    }

    /// Enter the values of the key under the main cursor, at the first or last.
    fn load<S: Snapshot>(&mut self, s: &S, last: bool) -> Result<()> {
        self.sub = Sub::Single;
        if self.dcmp.is_none() {
            return Ok(());
        }
        let Some(n) = self.node(s)? else {
            return Ok(());
        };
        self.sub = match dups_of(s, n)? {
            Dups::Single(_) => Sub::Single,
            Dups::SubPage(p) => Sub::Page(if last { p.len().saturating_sub(1) } else { 0 }),
            Dups::SubDb(rec) => {
                let mut pos = CursorPos::new();
                pos.move_edge(s, &rec, last)?;
                Sub::Tree(rec, pos)
            }
        };
        Ok(())
    }

    /// The item under the cursor.
    pub(crate) fn current<'a, S: Snapshot>(&self, s: &'a S) -> Result<Option<Item<'a>>> {
        let Some(n) = self.node(s)? else {
            return Ok(None);
        };
        let v = match self.sub {
            Sub::Single => node_value(s, n)?,
            Sub::Page(ix) => Page::new(n.data())?.key(ix)?,
            Sub::Tree(_, pos) => pos.current_key(s)?.ok_or(Error::Corrupted)?,
        };
        Ok(Some((n.key(), v)))
    }

    /// Move among the current key's values; false at the edge.
    fn sub_step<S: Snapshot>(&mut self, s: &S, fwd: bool) -> Result<bool> {
        match &mut self.sub {
            Sub::Single => Ok(false),
            Sub::Page(ix) => {
                let n = match self.main.leaf_node(s)? {
                    Some((p, i)) => Page::new(p.node(i)?.data())?.len(),
                    None => return Ok(false),
                };
                if fwd && *ix + 1 < n {
                    *ix += 1;
                    Ok(true)
                } else if !fwd && *ix > 0 {
                    *ix -= 1;
                    Ok(true)
                } else {
                    Ok(false)
                }
            }
            Sub::Tree(rec, pos) => {
                let rec = *rec;
                if fwd {
                    pos.move_next(s, &rec)
                } else {
                    pos.move_prev(s, &rec)
                }
            }
        }
    }

    pub(crate) fn first<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        self.just_deleted = false;
        if !self.main.move_edge(s, rec, false)? {
            return Ok(None);
        }
        self.load(s, false)?;
        self.current(s)
    }

    pub(crate) fn last<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        self.just_deleted = false;
        if !self.main.move_edge(s, rec, true)? {
            return Ok(None);
        }
        self.load(s, true)?;
        self.current(s)
    }

    pub(crate) fn next<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        if self.main.unset {
            return self.first(s, rec);
        }
        if std::mem::take(&mut self.just_deleted) {
            return self.current(s);
        }
        if self.dcmp.is_none() {
            if let Some(item) = self.next_in_leaf(s)? {
                return Ok(Some(item));
            }
        } else if self.sub_step(s, true)? {
            return self.current(s);
        }
        self.next_nodup(s, rec)
    }

    /// Plain databases: the next item if it is on the same leaf (one page
    /// lookup, no record needed), else `None` with the position unchanged.
    #[inline]
    pub(crate) fn next_in_leaf<'a, S: Snapshot>(&mut self, s: &'a S) -> Result<Option<Item<'a>>> {
        let l = self.main.path.leaf();
        let p = s.page(self.main.path.pg[l])?;
        let i = self.main.path.ix[l] + 1;
        if i >= p.len() {
            return Ok(None);
        }
        self.main.path.ix[l] = i;
        let n = p.node(i)?;
        Ok(Some((n.key(), node_value(s, n)?)))
    }

    pub(crate) fn prev<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        if self.main.unset {
            return self.last(s, rec);
        }
        self.just_deleted = false;
        if self.main.leaf_node(s)?.is_some() && self.sub_step(s, false)? {
            return self.current(s);
        }
        self.prev_nodup(s, rec)
    }

    pub(crate) fn next_nodup<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        self.step_key(s, rec, true)
    }

    pub(crate) fn prev_nodup<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        self.step_key(s, rec, false)
    }

    /// Move to the next (or previous) key: its first (or last) value.
    /// At the edge the position is kept (the tree cursor does not move).
    fn step_key<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        fwd: bool,
    ) -> Result<Option<Item<'a>>> {
        if self.main.unset {
            return if fwd {
                self.first(s, rec)
            } else {
                self.last(s, rec)
            };
        }
        self.just_deleted = false;
        let moved = if fwd {
            self.main.move_next(s, rec)?
        } else {
            self.main.move_prev(s, rec)?
        };
        if !moved {
            return Ok(None);
        }
        self.load(s, !fwd)?;
        self.current(s)
    }

    /// Next value of the same key.
    pub(crate) fn next_dup<'a, S: Snapshot>(&mut self, s: &'a S) -> Result<Option<Item<'a>>> {
        if self.main.unset || std::mem::take(&mut self.just_deleted) {
            return Ok(None);
        }
        if self.sub_step(s, true)? {
            self.current(s)
        } else {
            Ok(None)
        }
    }

    /// Previous value of the same key.
    pub(crate) fn prev_dup<'a, S: Snapshot>(&mut self, s: &'a S) -> Result<Option<Item<'a>>> {
        self.just_deleted = false;
        if self.main.unset {
            return Ok(None);
        }
        if self.sub_step(s, false)? {
            self.current(s)
        } else {
            Ok(None)
        }
    }

    /// First or last value of the current key.
    pub(crate) fn edge_dup<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        last: bool,
    ) -> Result<Option<Item<'a>>> {
        self.just_deleted = false;
        if self.main.leaf_node(s)?.is_none() {
            return Ok(None);
        }
        self.load(s, last)?;
        self.current(s)
    }

    /// Position at the first key >= `key` (its first value); whether it matched.
    pub(crate) fn seek<S: Snapshot>(&mut self, s: &S, rec: &DbRecord, key: &[u8]) -> Result<bool> {
        self.just_deleted = false;
        let exact = self.main.seek(s, rec, self.kcmp, key)?;
        self.load(s, false)?;
        Ok(exact)
    }

    /// Position at `key` and its first value >= `val` (exactly `val` if `exact`).
    pub(crate) fn seek_both<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        key: &[u8],
        val: &[u8],
        exact: bool,
    ) -> Result<Option<Item<'a>>> {
        if !self.seek(s, rec, key)? {
            return Ok(None);
        }
        let dcmp = self.dcmp.ok_or(Error::Incompatible)?;
        let n = self.node(s)?.ok_or(Error::NotFound)?;
        let hit = match dups_of(s, n)? {
            Dups::Single(v) => {
                let c = dcmp.compare(v, val);
                c == Ordering::Equal || (!exact && c == Ordering::Greater)
            }
            Dups::SubPage(p) => {
                let (at, found) = search(&p, val, dcmp)?;
                self.sub = Sub::Page(at.min(p.len().saturating_sub(1)));
                found || (!exact && at < p.len())
            }
            Dups::SubDb(r) => {
                let mut pos = CursorPos::new();
                let found = pos.seek(s, &r, dcmp, val)?;
                let on = pos.current_key(s)?.is_some();
                if !on {
                    // Past the last value: rest on it, as on a sub-page.
                    pos.move_edge(s, &r, true)?;
                }
                self.sub = Sub::Tree(r, pos);
                found || (!exact && on)
            }
        };
        if hit {
            self.current(s)
        } else {
            Ok(None)
        }
    }

    /// DUPFIXED: the packed values of the page holding the current value,
    /// leaving the cursor on that page's last value (a lone value is a
    /// one-item buffer).
    pub(crate) fn multiple<'a, S: Snapshot>(&mut self, s: &'a S) -> Result<Option<&'a [u8]>> {
        let Some(n) = self.node(s)? else {
            return Ok(None);
        };
        match &mut self.sub {
            Sub::Single => Ok(Some(node_value(s, n)?)),
            Sub::Page(ix) => {
                let p = Page::new(n.data())?;
                *ix = p.len().saturating_sub(1);
                packed(&p).map(Some)
            }
            Sub::Tree(_, pos) => {
                let Some((p, _)) = pos.leaf_node(s)? else {
                    return Ok(None);
                };
                let l = pos.path.leaf();
                pos.path.ix[l] = p.len().saturating_sub(1);
                packed(&p).map(Some)
            }
        }
    }

    /// DUPFIXED: the next page of values of the current key.
    pub(crate) fn next_multiple<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<&'a [u8]>> {
        self.just_deleted = false;
        if self.main.unset {
            if self.first(s, rec)?.is_none() {
                return Ok(None);
            }
            return self.multiple(s);
        }
        if self.sub_step(s, true)? {
            self.multiple(s)
        } else {
            Ok(None)
        }
    }

    /// DUPFIXED: the page of values before the current one, leaving the
    /// cursor on its first value.
    pub(crate) fn prev_multiple<'a, S: Snapshot>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<&'a [u8]>> {
        self.just_deleted = false;
        if self.main.unset && self.last(s, rec)?.is_none() {
            return Ok(None);
        }
        let Sub::Tree(r, pos) = &mut self.sub else {
            return Ok(None);
        };
        let r = *r;
        let l = pos.path.leaf();
        pos.path.ix[l] = 0;
        if !pos.move_prev(s, &r)? {
            return Ok(None);
        }
        let Some((p, _)) = pos.leaf_node(s)? else {
            return Ok(None);
        };
        let l = pos.path.leaf();
        pos.path.ix[l] = 0;
        packed(&p).map(Some)
    }

    /// Number of values of the current key.
    pub(crate) fn count<S: Snapshot>(&self, s: &S) -> Result<u64> {
        let n = self.node(s)?.ok_or(Error::NotFound)?;
        Ok(match dups_of(s, n)? {
            Dups::Single(_) => 1,
            Dups::SubPage(p) => p.len() as u64,
            Dups::SubDb(rec) => rec.entries,
        })
    }
}
