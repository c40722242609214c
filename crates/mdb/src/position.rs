//! A cursor position over a database, DUPSORT or not: the key's place in
//! the main tree and, for DUPSORT, the value's place among the key's values.

use crate::error::{ErrorKind, Result};
use crate::format::cmp::CmpFn;
use crate::format::meta::DbRecord;
use crate::format::page::{plain_item, search, Node, Page};
use crate::pager::PageRead;
use crate::tree::dups::*;
use crate::tree::*;
use std::cmp::Ordering;

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

    fn node<'a, S: PageRead>(&self, s: &'a S) -> Result<Option<Node<'a>>> {
        match self.main.leaf_node(s)? {
            Some((p, i)) => p.node(i).map(Some),
            None => Ok(None),
        }
    }

    /// Enter the values of the key under the main cursor, at the first or last.
    fn load<S: PageRead>(&mut self, s: &S, last: bool) -> Result<()> {
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

    /// Move among the current key's values; false at the edge.
    fn sub_step<S: PageRead>(&mut self, s: &S, fwd: bool) -> Result<bool> {
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

    pub(crate) fn first<'a, S: PageRead>(
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

    pub(crate) fn last<'a, S: PageRead>(
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

    pub(crate) fn next<'a, S: PageRead>(
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
            if let Some(item) = self.next_plain(s) {
                return Ok(Some(item));
            }
            if let Some(item) = self.next_in_leaf(s)? {
                return Ok(Some(item));
            }
        } else if self.sub_step(s, true)? {
            return self.current(s);
        }
        self.next_nodup(s, rec)
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
        if self.main.leaf_node(s)?.is_some() && self.sub_step(s, false)? {
            return self.current(s);
        }
        self.prev_nodup(s, rec)
    }

    pub(crate) fn next_nodup<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        self.step_key(s, rec, true)
    }

    pub(crate) fn prev_nodup<'a, S: PageRead>(
        &mut self,
        s: &'a S,
        rec: &DbRecord,
    ) -> Result<Option<Item<'a>>> {
        self.step_key(s, rec, false)
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
    pub(crate) fn next_dup<'a, S: PageRead>(&mut self, s: &'a S) -> Result<Option<Item<'a>>> {
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
    pub(crate) fn prev_dup<'a, S: PageRead>(&mut self, s: &'a S) -> Result<Option<Item<'a>>> {
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
    pub(crate) fn edge_dup<'a, S: PageRead>(
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
    pub(crate) fn seek<S: PageRead>(&mut self, s: &S, rec: &DbRecord, key: &[u8]) -> Result<bool> {
        self.just_deleted = false;
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
        if !self.seek(s, rec, key)? {
            return Ok(None);
        }
        let dcmp = self.dcmp.ok_or(ErrorKind::Incompatible)?;
        let n = self.node(s)?.ok_or(ErrorKind::NotFound)?;
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
    pub(crate) fn prev_multiple<'a, S: PageRead>(
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
    pub(crate) fn count<S: PageRead>(&self, s: &S) -> Result<u64> {
        let n = self.node(s)?.ok_or(ErrorKind::NotFound)?;
        Ok(match dups_of(s, n)? {
            Dups::Single(_) => 1,
            Dups::SubPage(p) => p.len() as u64,
            Dups::SubDb(rec) => rec.entries,
        })
    }
}
