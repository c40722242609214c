//! A put through a detached cursor (`mdb_cursor_put`) that starts from the
//! cursor's leaf and leaves the cursor on the item from the put's own
//! path: slapd's indexing sets a cursor on a key, then puts under it, and
//! each of those searches from the root was a descent LMDB does not make.

use super::{RwTxn, Snapshot};
use crate::cursor::CursorState;
use crate::error::{ErrorKind, Result};
use crate::format::page::search;
use crate::pager::PageRead;
use crate::tree::dups::DupSpot;
use crate::tree::{Path, WriteFlags};
use std::cmp::Ordering;

impl RwTxn<'_> {
    /// Put `key`/`val` (no `CURRENT`, no `RESERVE`) with cursor `st`,
    /// re-synced; `known` says its path is one of the tree as it is now.
    /// The cursor ends on the item put, or on the existing one (`KeyExist`).
    pub(super) fn put_by_cursor(
        &mut self,
        st: &mut CursorState,
        (key, val): (&[u8], &[u8]),
        flags: WriteFlags,
        known: bool,
    ) -> Result<()> {
        // Kept paths, copied only as deep as the cursor's (a whole path
        // is 520 bytes).
        let (mut path, mut sub) = self.pg.take_paths();
        path.assign(&st.pos.main.path);
        sub.len = 0;
        let r = self.put_with_paths(st, (key, val), flags, known, (&mut path, &mut sub));
        self.pg.give_paths((path, sub));
        r
    }

    fn put_with_paths(
        &mut self,
        st: &mut CursorState,
        (key, val): (&[u8], &[u8]),
        flags: WriteFlags,
        known: bool,
        (path, sub): (&mut Path, &mut Path),
    ) -> Result<()> {
        let db = st.db;
        let at = if known && !st.pos.unset() {
            self.leaf_hint(st, key, path)?
        } else {
            None
        };
        if at.is_some() {
            self.gen.note(|w| w.from_leaf += 1);
        }
        // The cursor's comparators: the env's for `db` when it was opened
        // (looking them up again takes the handle registry's lock when a
        // database has its own, as slapd's do).
        let cmps = (st.pos.kcmp, st.pos.dcmp);
        let r = self.put_placed(db, (key, val), flags, (&mut *path, at), sub, cmps);
        let (placed, spot) = match &r {
            Ok(kept) => *kept,
            Err(e) if *e == ErrorKind::KeyExist => (false, DupSpot::Unknown),
            Err(_) => return r.map(|_| ()),
        };
        // On the item put, the cursor keeps the put's key and value for a
        // re-find (they compare equal to what is stored): no read of it.
        let on_put = placed && {
            self.gen.note(|w| w.placed += 1);
            st.pos.place(&*self, (path, sub), spot, val)?
        };
        if on_put {
            st.remember(Some((key, val)), true);
            st.gen = self.generation_of(db);
        } else if placed {
            let cur = st.pos.current(&*self)?;
            st.remember(cur, true);
            st.gen = self.generation_of(db);
        } else {
            self.land_after_put(st, (key, val), r.is_ok())?;
        }
        r.map(|_| ())
    }

    /// Put cursor `st` on the item a put of `key`/`val` left (`added`: the
    /// value went in; else on the key's existing item), found from the root.
    pub(super) fn land_after_put(
        &self,
        st: &mut CursorState,
        (key, val): (&[u8], &[u8]),
        added: bool,
    ) -> Result<()> {
        let rec = self.db(st.db)?;
        if st.pos.dcmp.is_some() && added {
            st.pos.seek_both(self, &rec, key, val, true)?;
        } else {
            st.pos.seek(self, &rec, key)?;
        }
        let cur = st.pos.current(self)?;
        st.remember(cur, true);
        st.gen = self.generation_of(st.db);
        Ok(())
    }

    /// Where `key` goes on the leaf of `path` (the cursor's, valid), if it
    /// lies within that leaf's keys (then no other leaf can hold it):
    /// `path`'s leaf index is set to it.
    fn leaf_hint(
        &self,
        st: &CursorState,
        key: &[u8],
        path: &mut Path,
    ) -> Result<Option<(usize, bool)>> {
        let rec = self.rec(st.db)?;
        if path.len == 0 || path.len != rec.depth as usize {
            return Ok(None);
        }
        let l = path.leaf();
        let leaf = self.pg.page(path.pg[l])?;
        let n = leaf.len();
        if n == 0 || !leaf.is_leaf() || leaf.is_leaf2() {
            return Ok(None);
        }
        let cmp = st.pos.kcmp;
        // The cursor's own key (a put under the key it was set on).
        let ix = path.ix[l];
        if ix < n && cmp.compare(key, leaf.key(ix)?) == Ordering::Equal {
            return Ok(Some((ix, true)));
        }
        if cmp.compare(key, leaf.key(0)?) == Ordering::Less
            || cmp.compare(key, leaf.key(n - 1)?) == Ordering::Greater
        {
            return Ok(None);
        }
        let (i, exact) = search(&leaf, key, cmp)?;
        path.ix[l] = i;
        Ok(Some((i, exact)))
    }
}
