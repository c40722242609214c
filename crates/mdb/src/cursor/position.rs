//! A cursor position over a database, DUPSORT or not: the key's place in
//! the main tree and, for DUPSORT, the value's place among the key's values.

use crate::error::{ErrorKind, Result};
use crate::format::cmp::CmpFn;
use crate::format::meta::DbRecord;
use crate::format::page::{plain_item, search, Node, Page};
use crate::pager::PageRead;
use crate::tree::dups::*;
use crate::tree::*;
use std::cell::Cell;
use std::cmp::Ordering;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

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

/// What a delete left under a DUPSORT cursor among its key's values
/// (LMDB keeps it on its sub-cursor, apart from the key-level flag).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum DupDel {
    /// Nothing pending.
    No,
    /// The value under the cursor took a deleted one's place: the next
    /// `next` or `next_dup` returns it.
    Next,
    /// The key's last value was deleted and the key kept others: the
    /// cursor stays on the key, past the value under it (its new last),
    /// so `get_current` finds no value, `next` goes to the next key and
    /// `prev` returns that value.
    End,
}

/// What [`Position::dup_leaf`] gives: the key, the bytes of the page of
/// its values the cursor stands on, and the cursor's index there.
pub(crate) type DupLeaf<'a> = (&'a [u8], &'a [u8], usize);

/// A cursor position over a database, DUPSORT or not: the key in the main
/// tree and, for DUPSORT, the value among the key's values.
#[derive(Clone, Copy)]
pub(crate) struct Position {
    pub(crate) main: CursorPos,
    sub: Sub,
    /// After a delete removed a key, the cursor stands on the following
    /// one: the next `next` (or `next_nodup`) returns it, `next_dup`
    /// finds nothing.
    pub(crate) just_deleted: bool,
    /// After a delete, where the cursor is among the key's values.
    pub(crate) dup_del: DupDel,
    pub(crate) kcmp: CmpFn,
    pub(crate) dcmp: Option<CmpFn>,
}

thread_local! {
    /// The position of the last read cursor this thread dropped, for its
    /// next one (see [`PosBox`]).
    static SPARE: Cell<Option<Box<Position>>> = const { Cell::new(None) };
}

/// A read cursor's position on the heap, taken from its thread's spare
/// and given back when dropped: a cursor (and a range holding one) stays
/// small enough to move for free (a position is a kilobyte, and a range is
/// moved two or three times on its way into a loop: 330 Ir a range in
/// `memcpy`), and a thread's cursors after its first allocate nothing.
/// (A thread's, not a transaction's: a field more in a read transaction
/// costs every transaction a larger move.)
pub(crate) struct PosBox(ManuallyDrop<Box<Position>>);

impl PosBox {
    /// A fresh position (as [`Position::new`]) in the spare box, or a new one.
    #[inline]
    pub(crate) fn new(kcmp: CmpFn, dcmp: Option<CmpFn>) -> PosBox {
        let pos = match SPARE.with(Cell::take) {
            Some(mut b) => {
                b.renew(kcmp, dcmp);
                b
            }
            None => Box::new(Position::new(kcmp, dcmp)),
        };
        PosBox(ManuallyDrop::new(pos))
    }
}

impl Deref for PosBox {
    type Target = Position;
    #[inline(always)]
    fn deref(&self) -> &Position {
        &self.0
    }
}

impl DerefMut for PosBox {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Position {
        &mut self.0
    }
}

impl Drop for PosBox {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the box is taken once, here, and never used again.
        let b = unsafe { ManuallyDrop::take(&mut self.0) };
        // (With a second live cursor's box already there, one is freed; so
        // is the box of a thread that is exiting.)
        let _ = SPARE.try_with(|s| s.set(Some(b)));
    }
}

impl Position {
    pub(crate) fn new(kcmp: CmpFn, dcmp: Option<CmpFn>) -> Position {
        Position {
            main: CursorPos::new(),
            sub: Sub::Single,
            just_deleted: false,
            dup_del: DupDel::No,
            kcmp,
            dcmp,
        }
    }

    /// Become [`Position::new`]`(kcmp, dcmp)` in place: a cursor bound
    /// anew writes a few words, not its 1 KiB of paths.
    pub(crate) fn renew(&mut self, kcmp: CmpFn, dcmp: Option<CmpFn>) {
        self.main.clear();
        self.sub = Sub::Single;
        self.just_deleted = false;
        self.dup_del = DupDel::No;
        self.kcmp = kcmp;
        self.dcmp = dcmp;
    }

    /// Whether the cursor has never been positioned (or the DB emptied).
    pub(crate) fn unset(&self) -> bool {
        self.main.unset
    }

    /// Forget what a delete left pending: the cursor moved.
    #[inline]
    fn settle(&mut self) {
        self.just_deleted = false;
        self.dup_del = DupDel::No;
    }

    /// The key under the cursor (`MDB_GET_CURRENT` without a value): a
    /// delete's pending state among the key's values stays.
    pub(crate) fn current_key<'a, S: PageRead>(&mut self, s: &'a S) -> Result<Option<&'a [u8]>> {
        self.just_deleted = false;
        self.main.current_key(s)
    }

    /// `MDB_GET_CURRENT`: the item under the cursor, none past the values
    /// of a key whose last value was deleted.
    pub(crate) fn get_current<'a, S: PageRead>(&mut self, s: &'a S) -> Result<Option<Item<'a>>> {
        self.just_deleted = false;
        if self.dup_del == DupDel::End {
            return Ok(None);
        }
        self.dup_del = DupDel::No;
        self.current(s)
    }

    /// Position on `key` and `val` (`val` ignored without DUPSORT) after
    /// they may have been deleted; whether they are still there. If not,
    /// the cursor stands where LMDB leaves a cursor whose item was deleted:
    /// on the key's next value ([`DupDel::Next`]), past its values if the
    /// deleted one was its last ([`DupDel::End`]), else on the next key
    /// ([`Position::just_deleted`]; with [`DupDel::Next`] when that key has
    /// several values) or past the end.
    pub(crate) fn refind<S: PageRead>(
        &mut self,
        s: &S,
        rec: &DbRecord,
        key: &[u8],
        val: &[u8],
    ) -> Result<bool> {
        let on_key = self.seek(s, rec, key)?;
        if let (true, Some(dcmp)) = (on_key, self.dcmp) {
            // The same value by the database's order (a put keeps the
            // value it was given, which compares equal to the one stored).
            match self.seek_value(s, val, false)? {
                Some((_, v)) if dcmp.compare(v, val) == Ordering::Equal => return Ok(true),
                Some(_) => self.dup_del = DupDel::Next,
                None => {
                    self.load(s, true)?;
                    self.dup_del = DupDel::End;
                }
            }
            return Ok(false);
        }
        if on_key {
            return Ok(true);
        }
        if !self.main.unset {
            self.just_deleted = true;
            if !matches!(self.sub, Sub::Single) {
                self.dup_del = DupDel::Next;
            }
        }
        Ok(false)
    }

    fn node<'a, S: PageRead>(&self, s: &'a S) -> Result<Option<Node<'a>>> {
        match self.main.leaf_node(s)? {
            Some((p, i)) => p.node(i).map(Some),
            None => Ok(None),
        }
    }

    /// Enter the values of the key under the main cursor, at the first or
    /// last. (A plain database's inline: a seek's every call.)
    #[inline]
    fn load<S: PageRead>(&mut self, s: &S, last: bool) -> Result<()> {
        if self.dcmp.is_none() {
            self.sub = Sub::Single;
            return Ok(());
        }
        self.load_dups(s, last)
    }

    fn load_dups<S: PageRead>(&mut self, s: &S, last: bool) -> Result<()> {
        let n = self.node(s);
        let dups = match n {
            Ok(Some(n)) => dups_of(s, n),
            Ok(None) => Ok(Dups::Single(&[])),
            Err(e) => Err(e),
        };
        let dups = match dups {
            Ok(d) => d,
            Err(e) => {
                self.sub = Sub::Single;
                return Err(e);
            }
        };
        match dups {
            Dups::Single(_) => self.sub = Sub::Single,
            Dups::SubPage(p) => {
                self.sub = Sub::Page(if last { p.len().saturating_sub(1) } else { 0 });
            }
            Dups::SubDb(rec) => {
                if let Err(e) = self.sub_tree(rec).move_edge(s, &rec, last) {
                    self.sub = Sub::Single;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// The sub-database position, for `rec`'s tree, reused in place if
    /// the cursor has one (a position is 530 bytes: building one and
    /// moving it in was two copies per entry into a key's values).
    #[inline]
    fn sub_tree(&mut self, rec: DbRecord) -> &mut CursorPos {
        if !matches!(self.sub, Sub::Tree(..)) {
            self.sub = Sub::Tree(rec, CursorPos::new());
        }
        match &mut self.sub {
            Sub::Tree(r, pos) => {
                *r = rec;
                pos
            }
            _ => unreachable!("set just above"),
        }
    }

    /// The item under the cursor.
    pub(crate) fn current<'a, S: PageRead>(&self, s: &'a S) -> Result<Option<Item<'a>>> {
        let Some(n) = self.node(s)? else {
            return Ok(None);
        };
        let v = match self.sub {
            Sub::Single => node_value(s, n, self.dcmp.is_some())?,
            Sub::Page(ix) => Page::new(n.data())?.key(ix)?,
            Sub::Tree(_, pos) => pos.current_key(s)?.ok_or(ErrorKind::Corrupted)?,
        };
        Ok(Some((n.key(), v)))
    }

    /// Move among the current key's values and return the item there, as
    /// [`current`](Self::current) would, reading the key's node (and its
    /// sub-page) once: `None` at the edge.
    /// (A `MDB_NEXT_DUP` along a sub-page read them twice: 830
    /// instructions a step against LMDB's 168, `mdb-bench instr`.)
    fn sub_step_item<'a, S: PageRead>(&mut self, s: &'a S, fwd: bool) -> Result<Option<Item<'a>>> {
        match &mut self.sub {
            Sub::Single => Ok(None),
            Sub::Page(ix) => {
                let Some((p, i)) = self.main.leaf_node(s)? else {
                    return Ok(None);
                };
                let n = p.node(i)?;
                let sub = Page::new(n.data())?;
                let to = if fwd {
                    Some(*ix + 1).filter(|&j| j < sub.len())
                } else {
                    ix.checked_sub(1)
                };
                let Some(j) = to else {
                    return Ok(None);
                };
                *ix = j;
                Ok(Some((n.key(), sub.key(j)?)))
            }
            Sub::Tree(rec, pos) => {
                let rec = *rec;
                let moved = if fwd {
                    pos.move_next(s, &rec)?
                } else {
                    pos.move_prev(s, &rec)?
                };
                if !moved {
                    return Ok(None);
                }
                let v = pos.current_key(s)?.ok_or(ErrorKind::Corrupted)?;
                Ok(self.node(s)?.map(|n| (n.key(), v)))
            }
        }
    }

    /// The page of the current key's values the cursor stands on (its
    /// sub-page, or the leaf of its sub-database), with the key and the
    /// cursor's index on that page: for a binding that steps along it with
    /// [`dup_value`](crate::format::page::dup_value) and reports each step
    /// with [`set_dup_index`](Self::set_dup_index). `None` without
    /// duplicates under the cursor, unpositioned, or with a delete's state
    /// pending (the next step is then not the page's next value).
    #[inline(never)]
    pub(crate) fn dup_leaf<'a, S: PageRead>(&self, s: &'a S) -> Option<DupLeaf<'a>> {
        if self.main.unset || self.just_deleted || self.dup_del != DupDel::No {
            return None;
        }
        let (vals, ix) = match &self.sub {
            Sub::Single => return None,
            Sub::Page(ix) => (None, *ix),
            Sub::Tree(_, pos) if !pos.unset && pos.path.len > 0 => {
                let l = pos.path.leaf();
                (Some(s.page_bytes(pos.path.pg[l]).ok()?), pos.path.ix[l])
            }
            Sub::Tree(..) => return None,
        };
        let (p, i) = self.main.leaf_node(s).ok()??;
        let n = p.node(i).ok()?;
        // A sub-page lies in the key's node, as `dups_of` found it.
        let vals = vals.unwrap_or(n.data());
        Page::new(vals).ok()?;
        Some((n.key(), vals, ix))
    }

    /// Record that the cursor moved to value `ix` of the page
    /// [`dup_leaf`](Self::dup_leaf) gave.
    #[inline(always)]
    pub(crate) fn set_dup_index(&mut self, ix: usize) {
        match &mut self.sub {
            Sub::Page(i) => *i = ix,
            Sub::Tree(_, pos) => {
                let l = pos.path.leaf();
                if let Some(x) = pos.path.ix.get_mut(l) {
                    *x = ix;
                }
            }
            Sub::Single => {}
        }
    }

    /// The item [`first`](Self::first) or [`last`](Self::last) moved to,
    /// on `leaf`: in a plain database read from it directly (not looked up
    /// again).
    fn edge_item<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        leaf: Page<'a>,
        last: bool,
    ) -> Result<Option<Item<'a>>> {
        if self.dcmp.is_some() {
            self.load(s, last)?;
            return self.current(s);
        }
        self.sub = Sub::Single;
        let i = self.main.path.ix[self.main.path.leaf()];
        if i >= leaf.len() {
            return Ok(None);
        }
        let n = leaf.node(i)?;
        Ok(Some((n.key(), node_value(s, n, false)?)))
    }

    pub(crate) fn first<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        self.settle();
        let Some(leaf) = self.main.move_edge_leaf(s, rec, false)? else {
            return Ok(None);
        };
        self.edge_item(s, leaf, false)
    }

    /// `first` without a descent, for a plain database's position that is
    /// the tree's as it is now (nothing changed the tree since the cursor
    /// last moved or deleted): at index 0 of every level it stands on the
    /// first leaf already, as after deleting the first item (a queue
    /// drained from its head: 544 Ir an op saved). `None` when that does
    /// not apply or the item is not a plain one; the caller descends.
    #[inline]
    pub(crate) fn first_in_place<'a, S: PageRead>(&mut self, s: &'a S) -> Option<Item<'a>> {
        let path = &self.main.path;
        if self.dcmp.is_some() || self.main.unset || path.len == 0 {
            return None;
        }
        if path.ix.get(..path.len)?.iter().any(|&i| i != 0) {
            return None;
        }
        let item = plain_item(s.page_bytes(path.pg[path.len - 1]).ok()?, 0)?;
        self.settle();
        self.sub = Sub::Single;
        Some(item)
    }

    pub(crate) fn last<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        self.settle();
        let Some(leaf) = self.main.move_edge_leaf(s, rec, true)? else {
            return Ok(None);
        };
        self.edge_item(s, leaf, true)
    }

    pub(crate) fn next<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        if self.main.unset {
            return self.first(s, rec);
        }
        if std::mem::take(&mut self.just_deleted) {
            self.dup_del = DupDel::No;
            return self.current(s);
        }
        if self.dcmp.is_none() {
            if let Some(item) = self.next_plain(s) {
                return Ok(Some(item));
            }
            if let Some(item) = self.next_in_leaf(s)? {
                return Ok(Some(item));
            }
        } else {
            match std::mem::replace(&mut self.dup_del, DupDel::No) {
                DupDel::Next => return self.current(s),
                DupDel::End => return self.next_key(s, rec, DupDel::End),
                DupDel::No => {
                    if let Some(item) = self.sub_step_item(s, true)? {
                        return Ok(Some(item));
                    }
                }
            }
        }
        self.step_key(s, rec, true)
    }

    /// To the next key's first value, from a position whose delete state
    /// was `was`; at the end the cursor stays, still past the values of a
    /// key if it was ([`DupDel::End`]: LMDB keeps its sub-cursor there).
    fn next_key<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        was: DupDel,
    ) -> Result<Option<Item<'a>>> {
        let r = self.step_key(s, rec, true)?;
        if r.is_none() && was == DupDel::End && !self.main.unset {
            self.dup_del = DupDel::End;
        }
        Ok(r)
    }

    /// The scan step: the next item when it is a plain one on the same
    /// leaf, else `None` (the caller takes the general path, which also
    /// reports corruption).
    #[inline(always)]
    pub(crate) fn next_plain<'a, S: PageRead>(&mut self, s: &'a S) -> Option<Item<'a>> {
        let l = self.main.path.leaf();
        let b = s.page_bytes(self.main.path.pg[l]).ok()?;
        let i = self.main.path.ix[l] + 1;
        let item = plain_item(b, i)?;
        self.main.path.ix[l] = i;
        Some(item)
    }

    /// The item the cursor stands on when it is a plain one (else `None`,
    /// for the general path).
    #[inline(always)]
    pub(crate) fn current_plain<'a, S: PageRead>(&self, s: &'a S) -> Option<Item<'a>> {
        let l = self.main.path.leaf();
        plain_item(
            s.page_bytes(self.main.path.pg[l]).ok()?,
            self.main.path.ix[l],
        )
    }

    /// Plain databases: the next item if it is on the same leaf (one page
    /// lookup, no record needed), else `None` with the position unchanged.
    #[inline]
    pub(crate) fn next_in_leaf<'a, S: PageRead>(&mut self, s: &'a S) -> Result<Option<Item<'a>>> {
        let l = self.main.path.leaf();
        let p = s.page(self.main.path.pg[l])?;
        let i = self.main.path.ix[l] + 1;
        if i >= p.len() {
            return Ok(None);
        }
        self.main.path.ix[l] = i;
        let n = p.node(i)?;
        Ok(Some((n.key(), node_value(s, n, false)?)))
    }

    pub(crate) fn prev<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        if self.main.unset {
            return self.last(s, rec);
        }
        self.just_deleted = false;
        if std::mem::replace(&mut self.dup_del, DupDel::No) == DupDel::End {
            // The key's last value now, which the cursor is past.
            return self.current(s);
        }
        if self.main.leaf_node(s)?.is_some() {
            if let Some(item) = self.sub_step_item(s, false)? {
                return Ok(Some(item));
            }
        }
        self.step_key(s, rec, false)
    }

    /// `MDB_NEXT_NODUP`: the first value of the next key, or of the key a
    /// delete left the cursor on.
    pub(crate) fn next_nodup<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        if std::mem::take(&mut self.just_deleted) && !self.main.unset {
            self.dup_del = DupDel::No;
            return self.current(s);
        }
        self.next_key(s, rec, self.dup_del)
    }

    /// `MDB_PREV_NODUP`: the last value of the previous key. At the start
    /// the cursor stays, with a delete's state among the key's values.
    pub(crate) fn prev_nodup<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        self.just_deleted = false;
        let was = self.dup_del;
        let r = self.step_key(s, rec, false)?;
        if r.is_none() && !self.main.unset {
            self.dup_del = was;
        }
        Ok(r)
    }

    /// Move to the next (or previous) key: its first (or last) value.
    /// At the edge the position is kept (the tree cursor does not move).
    fn step_key<'a, S: PageRead>(
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
        self.settle();
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

    /// Next value of the same key. After a delete that removed a key, none
    /// (the cursor is on another key's values).
    pub(crate) fn next_dup<'a, S: PageRead>(&mut self, s: &'a S) -> Result<Option<Item<'a>>> {
        if self.main.unset || std::mem::take(&mut self.just_deleted) {
            return Ok(None);
        }
        match self.dup_del {
            DupDel::End => return Ok(None),
            DupDel::Next => {
                self.dup_del = DupDel::No;
                return self.current(s);
            }
            DupDel::No => {}
        }
        self.sub_step_item(s, true)
    }

    /// Previous value of the same key.
    pub(crate) fn prev_dup<'a, S: PageRead>(&mut self, s: &'a S) -> Result<Option<Item<'a>>> {
        self.just_deleted = false;
        if self.main.unset {
            return Ok(None);
        }
        if std::mem::replace(&mut self.dup_del, DupDel::No) == DupDel::End {
            return self.current(s);
        }
        self.sub_step_item(s, false)
    }

    /// First or last value of the current key.
    pub(crate) fn edge_dup<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        last: bool,
    ) -> Result<Option<Item<'a>>> {
        self.settle();
        if self.main.leaf_node(s)?.is_none() {
            return Ok(None);
        }
        self.load(s, last)?;
        self.current(s)
    }

    /// [`seek`](Self::seek) and the item it lands on, from one read of
    /// the key's node (SET reads it to enter the values, then for the
    /// result).
    pub(crate) fn seek_item<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        key: &[u8],
    ) -> Result<(bool, Option<Item<'a>>)> {
        self.settle();
        let (exact, at) = self.main.seek_at(s, rec, self.kcmp, key)?;
        if self.dcmp.is_none() {
            self.sub = Sub::Single;
            return Ok((exact, self.current(s)?));
        }
        // The leaf the descent reached, not looked up again.
        let n = match at {
            Some((p, i)) => Some(p.node(i)?),
            None => self.node(s)?,
        };
        let Some(n) = n else {
            self.sub = Sub::Single;
            return Ok((exact, None));
        };
        let v = match dups_of(s, n) {
            Ok(Dups::Single(v)) => {
                self.sub = Sub::Single;
                v
            }
            Ok(Dups::SubPage(p)) => {
                self.sub = Sub::Page(0);
                p.key(0)?
            }
            Ok(Dups::SubDb(rec)) => {
                let pos = self.sub_tree(rec);
                // Its first value, on the leaf the descent reached.
                match pos.move_edge_leaf(s, &rec, false) {
                    Ok(Some(leaf)) if !leaf.is_empty() => leaf.key(0)?,
                    Ok(_) => return Err(ErrorKind::Corrupted.into()),
                    Err(e) => {
                        self.sub = Sub::Single;
                        return Err(e);
                    }
                }
            }
            Err(e) => {
                self.sub = Sub::Single;
                return Err(e);
            }
        };
        Ok((exact, Some((n.key(), v))))
    }

    /// Position at the first key >= `key` (its first value); whether it matched.
    #[inline]
    pub(crate) fn seek<S: PageRead>(&mut self, s: &S, rec: &DbRecord, key: &[u8]) -> Result<bool> {
        self.settle();
        let exact = self.main.seek(s, rec, self.kcmp, key)?;
        self.load(s, false)?;
        Ok(exact)
    }

    /// Position at `key` and its first value >= `val` (exactly `val` if `exact`).
    pub(crate) fn seek_both<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
        key: &[u8],
        val: &[u8],
        exact: bool,
    ) -> Result<Option<Item<'a>>> {
        self.settle();
        if !self.main.seek(s, rec, self.kcmp, key)? {
            self.load(s, false)?;
            return Ok(None);
        }
        // Into the key's values once, by `val` (not to the first value,
        // then again by `val`).
        self.seek_value(s, val, exact)
    }

    /// Stand on the item `path` leads to (a put's path, still valid) and,
    /// for DUPSORT, on its value `val`, which `sub` leads to in the key's
    /// sub-database if its `len` is not 0, or `spot` says where it is
    /// among the key's values; whether that value is there.
    pub(crate) fn place<S: PageRead>(
        &mut self,
        s: &S,
        (path, sub): (&Path, &Path),
        spot: DupSpot,
        val: &[u8],
    ) -> Result<bool> {
        self.settle();
        self.main.path.assign(path);
        self.main.unset = false;
        if self.dcmp.is_none() {
            self.sub = Sub::Single;
            return Ok(true);
        }
        // The put said where the value went: no read of the key's node.
        match spot {
            DupSpot::Single if sub.len == 0 => {
                self.sub = Sub::Single;
                self.debug_check_on(s, val);
                return Ok(true);
            }
            DupSpot::Page(ix) if sub.len == 0 => {
                self.sub = Sub::Page(ix);
                self.debug_check_on(s, val);
                return Ok(true);
            }
            // The put's own descent, if the record it left is this one.
            DupSpot::SubDb(r)
                if sub.len > 0 && sub.pg[0] == r.root && sub.len == r.depth as usize =>
            {
                let pos = self.sub_tree(r);
                pos.path.assign(sub);
                pos.unset = false;
                self.debug_check_on(s, val);
                return Ok(true);
            }
            _ => {}
        }
        self.sub = Sub::Single;
        Ok(self.seek_value(s, val, true)?.is_some())
    }

    /// Tests' check that the cursor stands on a value that compares equal
    /// to `val` (a put's spot, taken on trust in release builds).
    fn debug_check_on<S: PageRead>(&self, s: &S, val: &[u8]) {
        if cfg!(debug_assertions) {
            let dcmp = self.dcmp.expect("DUPSORT");
            let cur = self.current(s).ok().flatten().map(|(_, v)| v.to_vec());
            let on = cur.as_deref().map(|v| dcmp.compare(v, val));
            assert_eq!(on, Some(Ordering::Equal), "a put's spot is its value");
        }
    }

    /// Among the values of the key under the cursor, to the first >= `val`
    /// (exactly `val` if `exact`).
    fn seek_value<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        val: &[u8],
        exact: bool,
    ) -> Result<Option<Item<'a>>> {
        let dcmp = self.dcmp.ok_or(ErrorKind::Incompatible)?;
        let n = self.node(s)?.ok_or(ErrorKind::NotFound)?;
        let dups = match dups_of(s, n) {
            Ok(d) => d,
            Err(e) => {
                self.sub = Sub::Single;
                return Err(e);
            }
        };
        let hit = match dups {
            Dups::Single(v) => {
                self.sub = Sub::Single;
                let c = dcmp.compare(v, val);
                c == Ordering::Equal || (!exact && c == Ordering::Greater)
            }
            Dups::SubPage(p) => {
                let (at, found) = search(&p, val, dcmp)?;
                self.sub = Sub::Page(at.min(p.len().saturating_sub(1)));
                found || (!exact && at < p.len())
            }
            Dups::SubDb(r) => {
                let pos = self.sub_tree(r);
                let r2 = (|| {
                    let found = pos.seek(s, &r, dcmp, val)?;
                    let on = pos.current_key(s)?.is_some();
                    if !on {
                        // Past the last value: rest on it, as on a sub-page.
                        pos.move_edge(s, &r, true)?;
                    }
                    Ok::<_, crate::error::Error>(found || (!exact && on))
                })();
                match r2 {
                    Ok(hit) => hit,
                    Err(e) => {
                        self.sub = Sub::Single;
                        return Err(e);
                    }
                }
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
    pub(crate) fn multiple<'a, S: PageRead>(&mut self, s: &'a S) -> Result<Option<&'a [u8]>> {
        let Some(n) = self.node(s)? else {
            return Ok(None);
        };
        match &mut self.sub {
            Sub::Single => Ok(Some(node_value(s, n, self.dcmp.is_some())?)),
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
    pub(crate) fn next_multiple<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<&'a [u8]>> {
        self.settle();
        if self.main.unset {
            if self.first(s, rec)?.is_none() {
                return Ok(None);
            }
            return self.multiple(s);
        }
        if self.sub_step_item(s, true)?.is_some() {
            self.multiple(s)
        } else {
            Ok(None)
        }
    }

    /// DUPFIXED: the page of values before the current one, leaving the
    /// cursor on its first value.
    pub(crate) fn prev_multiple<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<&'a [u8]>> {
        self.settle();
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

    /// Whether the current key holds duplicates (a sub-page or a
    /// sub-database, LMDB's F_DUPDATA) rather than one plain value.
    pub(crate) fn on_dups<S: PageRead>(&self, s: &S) -> Result<bool> {
        let n = self.node(s)?.ok_or(ErrorKind::NotFound)?;
        Ok(!matches!(dups_of(s, n)?, Dups::Single(_)))
    }

    /// Overwrite the value under the cursor in place with `val`, of its
    /// size and sorting as it does (`tree::dups::dup_overwrite`); the
    /// cursor's paths follow the pages made dirty.
    pub(crate) fn overwrite_dup(
        &mut self,
        pager: &mut crate::pager::Pager<'_>,
        t: &mut Tree,
        val: &[u8],
    ) -> Result<()> {
        let at = match &mut self.sub {
            Sub::Single => DupAt::Single,
            Sub::Page(ix) => DupAt::Page(*ix),
            Sub::Tree(_, pos) => DupAt::Tree(&mut pos.path),
        };
        dup_overwrite(pager, t, &mut self.main.path, at, val)?;
        if let Sub::Tree(r, _) = &mut self.sub {
            let n = self.main.leaf_node(&*pager)?.ok_or(ErrorKind::Corrupted)?;
            match dups_of(&*pager, n.0.node(n.1)?)? {
                Dups::SubDb(rec) => *r = rec,
                _ => return Err(ErrorKind::Corrupted.into()),
            }
        }
        Ok(())
    }

    /// The number of values of the current key when they are in a
    /// sub-database the cursor entered (its record, as read then).
    pub(crate) fn sub_entries(&self) -> Option<u64> {
        match self.sub {
            Sub::Tree(r, _) if !self.main.unset && self.dcmp.is_some() => Some(r.entries),
            _ => None,
        }
    }

    /// Number of values of the current key.
    pub(crate) fn count<S: PageRead>(&self, s: &S) -> Result<u64> {
        let n = self.node(s)?.ok_or(ErrorKind::NotFound)?;
        Ok(match dups_of(s, n)? {
            Dups::Single(_) => 1,
            Dups::SubPage(p) => p.len() as u64,
            Dups::SubDb(rec) => rec.entries,
        })
    }
}
