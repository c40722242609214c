//! Saving the free list into the free database at commit (lmdb-format.md §8).

use crate::error::{ErrorKind, Result};
use crate::format::freelist;
use crate::format::page::{edit, NodeData, F_BIGDATA};
use crate::pager::{merge_desc, sort_pgnos, PageRead, Pager};
use crate::tree::alloc::{consume_held, consume_record, reserved_ids};
use crate::tree::*;

/// Capacity in page ids of the free record `key`, if it exists.
pub(crate) fn record_cap(pager: &Pager<'_>, key: u64) -> Result<Option<usize>> {
    let rec = pager.free_db;
    let cmp = crate::format::cmp::for_flags(rec.flags);
    Ok(
        crate::tree::get_node(pager, &rec, cmp, &freelist::key(key))?
            .map(|n| freelist::capacity(n.dsize())),
    )
}

pub(crate) fn reserve_record(pager: &mut Pager<'_>, key: u64, ids: usize) -> Result<()> {
    // A record past a node's room takes a run of overflow pages: consume
    // free records (never during an update of the tree: here, before
    // one) until the run is at hand, as the end of the file is the last
    // resort (growing it at every commit also makes every sync commit
    // file-system metadata).
    let ps = pager.psize();
    if !freelist::fits_node(ps, ids) {
        let run = freelist::run_pages(ps, ids);
        while !pager.free.has_run(run) && consume_record(pager)? {}
    }
    let mut t = free_tree(pager);
    let r = put_in_tree(
        pager,
        &mut t,
        &freelist::key(key),
        Value::Reserve(freelist::record_len(ids)),
        WriteFlags::EMPTY,
    );
    pager.free_db = t.rec;
    r
}

/// Write `ids` into the record `key` reserved for them, leaving the value
/// exactly `8 * (count + 1)` bytes long, as LMDB's readers and py-lmdb's
/// verifier require. The record was reserved with room to spare (so that
/// the save converges in few rounds); trimming it allocates nothing: an
/// inline value shrinks in its dirty leaf, and an overflow run keeps the
/// pages its value needs while the pages past them join its own ids (they
/// are this transaction's, invisible to every snapshot, so any record up
/// to this transaction's key may list them).
pub(crate) fn fill_record(pager: &mut Pager<'_>, key: u64, ids: &[u64]) -> Result<()> {
    let t = free_tree(pager);
    let mut path = Path::new();
    let (i, exact) = descend(&*pager, &t.rec, t.cmp, &freelist::key(key), &mut path)?;
    if !exact {
        return Err(ErrorKind::PageFull.into());
    }
    let leaf = path.pg[path.leaf()];
    let (big, ov, dsize) = {
        let n = pager.page(leaf)?.node(i)?;
        let big = n.flags() & F_BIGDATA != 0;
        (big, if big { n.ov_pgno() } else { 0 }, n.dsize())
    };
    if !big {
        let len = freelist::record_len(ids.len());
        if len > dsize {
            return Err(ErrorKind::PageFull.into());
        }
        let mut v = vec![0u8; len];
        freelist::encode(&mut v, ids);
        let buf = pager.dirty.get_mut(&leaf).ok_or(ErrorKind::Corrupted)?;
        // Smaller than the node it replaces: it fits where that one was.
        edit::remove(buf, i);
        if !edit::insert_leaf(buf, i, &freelist::key(key), NodeData::Inline(&v)) {
            return Err(ErrorKind::PageFull.into());
        }
        return Ok(());
    }
    let ps = pager.psize();
    let run = pager.dirty.remove(&ov).ok_or(ErrorKind::Corrupted)?;
    let pages = run.len() / ps;
    let cap = |p: usize| freelist::run_capacity(ps, p);
    if pages == 0 || ids.len() > cap(pages) {
        pager.dirty.insert(ov, run);
        return Err(ErrorKind::PageFull.into());
    }
    // The shortest run holding the ids and its own cut-off pages.
    let mut keep = pages;
    while keep > 1 && ids.len() + (pages - keep + 1) <= cap(keep - 1) {
        keep -= 1;
    }
    // The cut-off pages, descending, where they belong among the
    // descending ids (none of which lies in the run).
    let cut = (ov + keep as u64..ov + pages as u64).rev();
    let at = ids.partition_point(|&p| p > ov);
    let mut all = Vec::with_capacity(ids.len() + pages - keep);
    all.extend_from_slice(&ids[..at]);
    all.extend(cut);
    all.extend_from_slice(&ids[at..]);
    let mut run = Vec::from(run);
    run.truncate(keep * ps);
    edit::set_overflow_pages(&mut run, keep);
    let len = freelist::record_len(all.len());
    freelist::encode(&mut edit::overflow_data_mut(&mut run)[..len], &all);
    pager.dirty.insert(ov, run.into_boxed_slice());
    let buf = pager.dirty.get_mut(&leaf).ok_or(ErrorKind::Corrupted)?;
    edit::set_big_dsize(buf, i, len);
    pager.free_db.overflow_pages -= (pages - keep) as u64;
    Ok(())
}

/// Consume free records (while any is old enough) until `need` pages
/// are at hand for the free database's own updates. Called between
/// updates of the free database, never during one: consuming reads it.
pub(crate) fn top_up(pager: &mut Pager<'_>, need: usize) -> Result<()> {
    let at_hand =
        |f: &crate::pager::FreeState| f.reclaimed.len() + f.loose.len() + f.young_pool.len();
    while at_hand(&pager.free) < need {
        if !consume_record(pager)? && !consume_held(pager)? {
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

/// Page ids one free record holds when it takes a single overflow page.
fn one_page_ids(pager: &Pager<'_>) -> usize {
    freelist::run_capacity(pager.psize(), 1).max(1)
}

/// Where the reclaimed pages this transaction did not use are filed, as
/// (key, capacity) pairs: records of at most one page each, so rewriting
/// them never needs a run of consecutive pages (scattered free pages seldom
/// hold one, and the file would grow at every commit). Keys come from
/// `consumed` down (every record at or below it was consumed by this
/// transaction), then from the unused keys below `oldest` (a record there
/// is as reusable as the ones it came from); with too few keys, records
/// of equal size, as short as the keys allow.
fn leftover_plan(pager: &Pager<'_>, n: usize) -> Result<Vec<(u64, usize)>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let total = reserved_ids(n);
    let per = one_page_ids(pager);
    let want = total.div_ceil(per);
    let (consumed, oldest) = (pager.free.consumed, pager.free.oldest);
    let mut keys: Vec<u64> = (1..=consumed).rev().take(want).collect();
    if keys.len() < want && consumed + 1 < oldest {
        let rec = pager.free_db;
        let mut pos = CursorPos::new();
        let cmp = crate::format::cmp::for_flags(rec.flags);
        pos.seek(pager, &rec, cmp, &freelist::key(consumed + 1))?;
        let key_at = |pos: &CursorPos| -> Result<Option<u64>> {
            match pos.current(pager)? {
                Some((k, _)) => freelist::decode_key(k).map(Some),
                None => Ok(None),
            }
        };
        let mut next = key_at(&pos)?;
        let mut k = consumed + 1;
        while k < oldest && keys.len() < want {
            if next == Some(k) {
                if pager.free.kept.contains(&k) {
                    keys.push(k);
                }
                next = if pos.move_next(pager, &rec)? {
                    key_at(&pos)?
                } else {
                    None
                };
            } else {
                keys.push(k);
            }
            k += 1;
        }
    }
    // Spread evenly, each record filling whole pages: with fewer keys than
    // pages, runs as short as the keys allow.
    let each = total.div_ceil(keys.len().max(1));
    let ps = pager.psize();
    // In WAL mode a record that fits a node still takes an overflow page:
    // the next commit takes the lowest pages of it and files the rest
    // again, and in a page of its own that is a change of its count and
    // its tail (a patch of a few dozen bytes against the page it freed),
    // where the node, shorter, would move in its leaf: a patch of all of
    // it (up to half a page) at every commit.
    let inline = pager.bases.is_none();
    if inline && freelist::fits_node(ps, each) {
        return Ok(keys.into_iter().map(|key| (key, each)).collect());
    }
    let pages = freelist::run_pages(ps, each);
    let cap = freelist::run_capacity(ps, pages).max(each);
    Ok(keys.into_iter().map(|key| (key, cap)).collect())
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
    // Keys of the records reserved for unused reclaimed pages: `kept`.
    pager.free.kept.clear();
    for _ in 0..10_000 {
        let need = save_need(pager)?;
        top_up(pager, need)?;
        let consumed = pager.free.consumed;
        // Records consumed by this transaction go away (all but our own
        // leftover records, filed under consumed keys).
        if consumed > 0 {
            let rec = pager.free_db;
            let mut pos = CursorPos::new();
            let mut stale = None;
            let mut item = pos.first(&*pager, &rec)?;
            while let Some((k, _)) = item {
                let key = freelist::decode_key(k)?;
                if key > consumed {
                    break;
                }
                if !pager.free.kept.contains(&key) {
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
                let r = tree_del(pager, &mut t, &freelist::key(key));
                pager.free_db = t.rec;
                r?;
                continue;
            }
        }
        // Loose pages may be young pages of held records: with any
        // consumed, they go back with them (`young.rs`).
        let to_held = !pager.free.held.is_empty();
        if consumed == 0 && !to_held && !pager.free.loose.is_empty() {
            // No consumed key to re-file under: loose pages join this txn's record.
            let l = std::mem::take(&mut pager.free.loose);
            pager.free.loose_filed.extend(l);
        }
        let nf = pager.free.freed.len() + pager.free.loose_filed.len();
        if nf > 0 && record_cap(pager, txnid)?.is_none_or(|c| c < nf) {
            reserve_record(pager, txnid, reserved_ids(nf))?;
            continue;
        }
        if let Some((key, cap)) = held_reserve(pager)? {
            reserve_record(pager, key, cap)?;
            continue;
        }
        let nl = pager.free.reclaimed.len() + if to_held { 0 } else { pager.free.loose.len() };
        // Every planned record exists, and together with any reserved
        // earlier (under a smaller `consumed`) they hold `nl` ids.
        let plan = leftover_plan(pager, nl)?;
        let mut have = 0;
        for &k in &pager.free.kept {
            have += record_cap(pager, k)?.unwrap_or(0);
        }
        let mut grow = None;
        for &(key, cap) in &plan {
            match record_cap(pager, key)? {
                None => {
                    grow = Some((key, cap));
                    break;
                }
                Some(c) if c < cap && have < nl => {
                    grow = Some((key, cap));
                    break;
                }
                Some(_) => {}
            }
        }
        if let Some((key, cap)) = grow {
            if !pager.free.kept.contains(&key) {
                pager.free.kept.push(key);
            }
            reserve_record(pager, key, cap)?;
            continue;
        }
        if have < nl {
            // Fewer keys than records: only possible with no plan at all.
            return Err(ErrorKind::PageFull.into());
        }
        if consumed == 0 && !to_held && !pager.free.loose.is_empty() {
            continue;
        }
        // Stable: fill in place (no allocation from here on).
        // `freed` stays for the commit (`RwTxn::diffs`, the count of
        // pages held until the next checkpoint in WAL mode).
        let mut own = [&pager.free.freed[..], &pager.free.loose_filed[..]].concat();
        if !own.is_empty() {
            sort_pgnos(&mut own, true);
            own.dedup();
            fill_record(pager, txnid, &own)?;
        }
        let mut left = std::mem::take(&mut pager.free.reclaimed);
        let mut loose = std::mem::take(&mut pager.free.loose);
        sort_pgnos(&mut loose, true);
        if pager.free.young.is_some() {
            pager.free.filed_loose.clone_from(&loose);
        }
        if to_held {
            fill_held(pager, &loose)?;
        } else {
            merge_desc(&mut left, &loose);
        }
        // Every record reserved for leftovers is filled, the ones no
        // longer needed with a count of zero (they stay, at or below
        // `consumed`, for a later transaction to consume and delete).
        let mut kept = std::mem::take(&mut pager.free.kept);
        sort_pgnos(&mut kept, true);
        let mut rest = &left[..];
        for &key in &kept {
            let cap = record_cap(pager, key)?.ok_or(ErrorKind::PageFull)?;
            let take = rest.len().min(cap);
            fill_record(pager, key, &rest[..take])?;
            rest = &rest[take..];
        }
        if !rest.is_empty() {
            return Err(ErrorKind::PageFull.into());
        }
        return Ok(());
    }
    Err(ErrorKind::PageFull.into())
}

/// Ids the held record `i` (`young.rs`) is filed again with: its own
/// pages, and for the last (the highest key) the young and loose pages
/// left over.
fn held_len(pager: &Pager<'_>, i: usize) -> usize {
    let f = &pager.free;
    let mut n = f.held[i].pages.len();
    if i + 1 == f.held.len() {
        n += f.young_pool.len() + f.loose.len();
    }
    n
}

/// The next held record to reserve again, (key, capacity): each is
/// reserved once by this transaction (so that filling it writes in place),
/// and again when it must hold more.
fn held_reserve(pager: &mut Pager<'_>) -> Result<Option<(u64, usize)>> {
    for i in 0..pager.free.held.len() {
        let need = held_len(pager, i);
        let h = &pager.free.held[i];
        let key = h.key;
        if !h.reserved || record_cap(pager, key)?.is_none_or(|c| c < need) {
            pager.free.held[i].reserved = true;
            return Ok(Some((key, reserved_ids(need))));
        }
    }
    Ok(None)
}

/// File the held records again (the commit's last step, no allocation):
/// the young pages left over and the `loose` ones go to the last, under a
/// key at least as high as the record each came from.
fn fill_held(pager: &mut Pager<'_>, loose: &[u64]) -> Result<()> {
    let n = pager.free.held.len();
    let mut extra = std::mem::take(&mut pager.free.young_pool);
    merge_desc(&mut extra, loose);
    for i in 0..n {
        let mut ids = pager.free.held[i].pages.clone();
        if i + 1 == n && !extra.is_empty() {
            merge_desc(&mut ids, &extra);
            pager.free.held[i].young = true;
        }
        fill_record(pager, pager.free.held[i].key, &ids)?;
    }
    Ok(())
}
