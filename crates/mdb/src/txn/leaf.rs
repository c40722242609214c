//! A read cursor's leaf for a binding that steps along it itself (the C
//! ABI's scan and seek fast path): the leaf's bytes are a read
//! transaction's snapshot, unchanged while it lives, so only a [`RoTxn`]
//! hands them out.

use super::read::RoTxn;
use crate::cursor::{CursorOp, CursorState, SeekLeaf};
use crate::error::Result;
use crate::pager::PageRead;
use crate::snapshot::Snapshot;
use crate::tree::check_key;

impl CursorState {
    /// The leaf page a positioned cursor of a plain database stands on in
    /// read transaction `txn`, with its level in the cursor's stack and the
    /// cursor's index in it: for a binding that steps along the leaf itself
    /// with [`page::plain_item`](crate::page::plain_item) and reports each
    /// step with [`set_leaf_index`](Self::set_leaf_index). `None` when the
    /// next `Next` needs the general path (DUPSORT, unpositioned, just
    /// deleted). The bytes are the snapshot's, unchanged while it lives.
    #[doc(hidden)]
    pub fn leaf_of<'t>(&self, txn: &'t RoTxn<'_>) -> Option<(&'t [u8], usize, usize)> {
        if !self.in_step(txn) || self.pos.just_deleted || self.pos.main.path.len == 0 {
            return None;
        }
        let path = &self.pos.main.path;
        let l = path.leaf();
        let b = txn.page_bytes(path.pg[l]).ok()?;
        Some((b, l, path.ix[l]))
    }

    /// The page of the current key's values a positioned cursor of a
    /// DUPSORT database stands on in read transaction `txn` (its sub-page,
    /// or its sub-database's leaf), as (key, page bytes, the cursor's index
    /// on the page): for a binding that steps along it itself
    /// (`MDB_NEXT_DUP`) with [`page::dup_value`](crate::page::dup_value)
    /// and reports each step with [`set_dup_index`](Self::set_dup_index).
    /// `None` when the next step needs the general path (a plain database,
    /// a single value, unpositioned). The bytes are the snapshot's,
    /// unchanged while it lives.
    #[doc(hidden)]
    #[inline]
    pub fn dups_of<'t>(&self, txn: &'t RoTxn<'_>) -> Option<(&'t [u8], &'t [u8], usize)> {
        if self.pos.dcmp.is_none() || self.gen != txn.generation_of(self.db) {
            return None;
        }
        self.pos.dup_leaf(txn)
    }

    /// Record that the cursor moved to value `ix` of the page
    /// [`dups_of`](Self::dups_of) gave.
    #[doc(hidden)]
    #[inline(always)]
    pub fn set_dup_index(&mut self, ix: usize) {
        self.pos.set_dup_index(ix);
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
        txn: &'t RoTxn<'_>,
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
}
