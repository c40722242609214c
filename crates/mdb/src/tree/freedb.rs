//! Saving the free list into the free database at commit (lmdb-format.md §8).

use crate::error::{Error, Result};
use crate::format::page::{rd64, wr64};
use crate::pager::Pager;
use crate::tree::alloc::{consume_record, SLACK};
use crate::tree::*;

/// Capacity in page ids of the free record `key`, if it exists.
pub(crate) fn record_cap(pager: &Pager<'_>, key: u64) -> Result<Option<usize>> {
    let rec = pager.free_db;
    let cmp = crate::format::cmp::for_flags(rec.flags);
    Ok(crate::tree::get_node(pager, &rec, cmp, &key.to_le_bytes())?
        .map(|n| (n.dsize() / 8).saturating_sub(1)))
}

pub(crate) fn reserve_record(pager: &mut Pager<'_>, key: u64, ids: usize) -> Result<()> {
    let mut t = free_tree(pager);
    let r = put_in_tree(
        pager,
        &mut t,
        &key.to_le_bytes(),
        Value::Reserve(8 * (ids + 1)),
        WriteFlags::EMPTY,
    );
    pager.free_db = t.rec;
    r
}

pub(crate) fn fill_record(pager: &mut Pager<'_>, key: u64, ids: &[u64]) -> Result<()> {
    let v = value_mut_t(pager, &free_tree(pager), &key.to_le_bytes())?;
    if v.len() < 8 * (ids.len() + 1) {
        return Err(Error::PageFull);
    }
    wr64(v, 0, ids.len() as u64);
    for (i, &p) in ids.iter().enumerate() {
        wr64(v, 8 + 8 * i, p);
    }
    Ok(())
}

/// Consume free records (while any is old enough) until `need` pages
/// are at hand for the free database's own updates. Called between
/// updates of the free database, never during one: consuming reads it.
pub(crate) fn top_up(pager: &mut Pager<'_>, need: usize) -> Result<()> {
    while pager.free.reclaimed.len() + pager.free.loose.len() < need {
        if !consume_record(pager)? {
            break;
        }
    }
    Ok(())
}

/// Pages one update of the free database may allocate: a copy of each
/// page of its path and a split at every level.
pub(crate) fn save_need(pager: &Pager<'_>) -> Result<usize> {
    Ok(2 * (pager.free_db.depth as usize + 1))
}

/// Write the free list into the free database (commit step). Writing it
/// allocates and frees pages itself, so space is reserved until the
/// sizes stop changing and only then filled in place.
///
/// Pages for those updates come from free records too (consumed before
/// each update, since consuming reads the tree being updated): taking
/// them from the end of the file instead would grow it by a few pages
/// at every commit, and small transactions would never catch up.
pub(crate) fn save_freelist(pager: &mut Pager<'_>) -> Result<()> {
    pager.free.saving = true;
    let txnid = pager.txnid;
    // Key of the record reserved for unused reclaimed pages, once reserved.
    let mut left_key: Option<u64> = None;
    for _ in 0..10_000 {
        let need = save_need(pager)?;
        top_up(pager, need)?;
        let consumed = pager.free.consumed;
        // Records consumed by this transaction go away (all but our own
        // leftover record, filed under the newest consumed key).
        if consumed > 0 {
            let rec = pager.free_db;
            let mut pos = CursorPos::new();
            let mut stale = None;
            let mut item = pos.first(&*pager, &rec)?;
            while let Some((k, _)) = item {
                if k.len() != 8 {
                    return Err(Error::Corrupted);
                }
                let key = rd64(k, 0);
                if key > consumed {
                    break;
                }
                if left_key != Some(key) {
                    stale = Some(key);
                    break;
                }
                item = if pos.move_next(&*pager, &rec)? {
                    pos.current(&*pager)?
                } else {
                    None
                };
            }
            if let Some(key) = stale {
                let mut t = free_tree(pager);
                let r = tree_del(pager, &mut t, &key.to_le_bytes());
                pager.free_db = t.rec;
                r?;
                if left_key == Some(key) {
                    left_key = None;
                }
                continue;
            }
        }
        if consumed == 0 && !pager.free.loose.is_empty() {
            // No consumed key to re-file under: loose pages join this txn's record.
            let l = std::mem::take(&mut pager.free.loose);
            pager.free.freed.extend(l);
        }
        let nf = pager.free.freed.len();
        if nf > 0 && record_cap(pager, txnid)?.is_none_or(|c| c < nf) {
            reserve_record(pager, txnid, nf + nf / 8 + SLACK)?;
            continue;
        }
        let nl = pager.free.reclaimed.len() + pager.free.loose.len();
        if nl > 0
            && (left_key != Some(consumed) || record_cap(pager, consumed)?.is_none_or(|c| c < nl))
        {
            reserve_record(pager, consumed, nl + nl / 8 + SLACK)?;
            left_key = Some(consumed);
            continue;
        }
        if consumed == 0 && !pager.free.loose.is_empty() {
            continue;
        }
        // Stable: fill in place (no allocation from here on).
        let mut freed = std::mem::take(&mut pager.free.freed);
        if !freed.is_empty() {
            freed.sort_unstable_by(|a, b| b.cmp(a));
            freed.dedup();
            fill_record(pager, txnid, &freed)?;
        }
        let mut left = std::mem::take(&mut pager.free.reclaimed);
        left.append(&mut pager.free.loose);
        if !left.is_empty() || left_key == Some(consumed) {
            // A record reserved and emptied since keeps a count of zero.
            left.sort_unstable_by(|a, b| b.cmp(a));
            fill_record(pager, consumed, &left)?;
        }
        return Ok(());
    }
    Err(Error::PageFull)
}
