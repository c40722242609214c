//! Page allocation: loose pages first (runs of them for overflow values: a
//! value rewritten in one transaction reuses the run it freed), then pages
//! of free records no reader can see (consumed from the free database in
//! key order), then the end of the file, always keeping room for the
//! commit to save the free list.

use crate::error::{ErrorKind, Result};
use crate::format::freelist;
use crate::format::page::{flags_of, footprint, HDR, P_DIRTY};
use crate::pager::{merge_desc, HeldRecord, PageRead, Pager};
use crate::tree::*;

/// Largest number of page ids in one free record we reserve at once, beyond need.
pub(crate) const SLACK: usize = 8;

/// Copy-on-write of the committed (or spilled) page `old`: a copy under a
/// page allocated now, dirty, and `old` freed. Returns the copy's number;
/// the caller points the parent at it.
#[inline]
pub(crate) fn copy_to_new(pager: &mut Pager<'_>, old: u64) -> Result<u64> {
    let new = alloc(pager, 1)?;
    let mut buf = pager.take_buf();
    let ps = pager.psize();
    crate::format::page::edit::copy_page(&mut buf, pager.committed(old, ps)?);
    // A committed page never carries P_DIRTY (LMDB clears it as it writes
    // the page): one that does is forged, and would make LMDB write into
    // the read-only map (CVE-2019-16225). Read from the copy (one map
    // lookup, not two): the error breaks the transaction, which is never
    // committed with the page it took.
    if flags_of(&buf) & P_DIRTY != 0 {
        return Err(ErrorKind::Corrupted.into());
    }
    // Its header is checked here, once: reads of a dirty page do not
    // check it again (`Pager::page`).
    crate::format::page::Page::new(&buf)?;
    crate::format::page::edit::set_pgno(&mut buf, new);
    pager.dirty.insert(new, buf);
    pager.free_pages(old, 1);
    if let Some(b) = &mut pager.bases {
        b.insert(new, old);
    }
    Ok(new)
}

/// Allocate `n` consecutive pages.
pub(crate) fn alloc(pager: &mut Pager<'_>, n: usize) -> Result<u64> {
    pager.moves += 1;
    if !pager.free.saving {
        keep_commit_room(pager, n)?;
    }
    if n == 1 {
        if let Some(p) = pager.free.loose.pop() {
            return Ok(p);
        }
    } else if let Some(p) = pager.free.take_loose_run(n) {
        return Ok(p);
    }
    loop {
        if let Some(p) = pager.free.take_run(n) {
            return Ok(p);
        }
        if pager.free.saving || !consume_record(pager)? {
            break;
        }
    }
    // WAL mode: young pages of held records before the end of the file.
    loop {
        if let Some(p) = pager.free.take_young_run(n) {
            return Ok(p);
        }
        if pager.free.saving || !consume_held(pager)? {
            break;
        }
    }
    // As LMDB: the map's last page is never used, so files we write
    // always fit a map of the same size in LMDB.
    if pager.next_pgno + n as u64 >= pager.max_pgno {
        return Err(ErrorKind::MapFull.into());
    }
    let p = pager.next_pgno;
    pager.next_pgno += n as u64;
    Ok(p)
}

/// Refuse (MAP_FULL) an allocation that would leave too few pages for
/// this transaction's commit to save the free list: the put fails, and
/// the transaction can still commit what it holds. Free records are
/// consumed first when the pages at hand and at the end of the map do
/// not cover both.
pub(crate) fn keep_commit_room(pager: &mut Pager<'_>, n: usize) -> Result<()> {
    // Pages left before the map's last page (never used, as in LMDB).
    let eof = pager.max_pgno.saturating_sub(pager.next_pgno + 1) as usize;
    loop {
        let have =
            eof + pager.free.reclaimed.len() + pager.free.loose.len() + pager.free.young_pool.len();
        let need = commit_need(pager)?;
        if have >= n + need {
            return Ok(());
        }
        // Short by the split page alone (a nearly full map: the only time
        // this costs a look at the free database's leaf): is it needed?
        if need > 0 && have + 1 >= n + need && !save_splits(pager)? {
            return Ok(());
        }
        if !consume_record(pager)? && !consume_held(pager)? {
            return Err(ErrorKind::MapFull.into());
        }
    }
}

/// Pages the commit may need to save the free list: a copy of the free
/// database's path (none once its root is ours), one split, and the
/// records themselves when they no longer fit in a node. A deeper
/// cascade of splits fails the commit with MAP_FULL, as in LMDB.
pub(crate) fn commit_need(pager: &Pager<'_>) -> Result<usize> {
    let f = &pager.free;
    if f.freed.is_empty() && f.loose.is_empty() && f.consumed == 0 {
        return Ok(0);
    }
    let rec = pager.free_db;
    let copies = if pager.dirty.contains_key(&rec.root) {
        0
    } else {
        rec.depth as usize
    };
    let ps = pager.psize();
    let rec_pages = |ids: usize| {
        let n = reserved_ids(ids);
        if freelist::fits_node(ps, n) {
            0
        } else {
            freelist::run_pages(ps, n)
        }
    };
    let nf = f.freed.len() + f.loose.len();
    Ok(copies + 1 + rec_pages(nf) + rec_pages(f.reclaimed.len() + f.loose.len()))
}

/// Page ids a free record for `ids` pages is reserved with (room to spare:
/// the lists change while the save runs; trimmed when filled).
pub(crate) fn reserved_ids(ids: usize) -> usize {
    ids + ids / 8 + SLACK
}

/// Whether saving the free list may split a page of the free database.
/// Known only for a free database of one leaf (a tiny map's): no split
/// when the records it keeps (keys past `consumed`; those at or below
/// are deleted by the save) and the ones the save reserves fit in it.
fn save_splits(pager: &Pager<'_>) -> Result<bool> {
    let rec = pager.free_db;
    let f = &pager.free;
    let ps = pager.psize();
    // (Records past a node's room, or more than one leftover record, take
    // overflow pages the estimate already counts, but keep it simple.)
    let cost = |ids: usize| -> Option<usize> {
        let n = reserved_ids(ids);
        freelist::fits_node(ps, n).then(|| footprint(8, freelist::record_len(n)) + 2)
    };
    let new = [
        f.freed.len() + f.loose.len(),
        f.reclaimed.len() + f.loose.len(),
    ];
    let mut bytes = 0;
    for ids in new {
        match cost(ids) {
            Some(c) => bytes += c,
            None => return Ok(true),
        }
    }
    if rec.depth > 1 {
        return Ok(true);
    }
    if rec.depth == 1 {
        let leaf = pager.page(rec.root)?;
        for i in 0..leaf.len() {
            let node = leaf.node(i)?;
            if freelist::decode_key(node.key())? > f.consumed {
                bytes += node.footprint() + 2;
            }
        }
    }
    Ok(bytes > ps - HDR)
}

/// Move the next free record old enough into the reclaimed list (records
/// this commit filed its leftovers under are stepped over).
pub(crate) fn consume_record(pager: &mut Pager<'_>) -> Result<bool> {
    if pager.free.exhausted {
        return Ok(false);
    }
    let rec = pager.free_db;
    let mut pos = CursorPos::new();
    let cmp = crate::format::cmp::for_flags(rec.flags);
    pos.seek(&*pager, &rec, cmp, &freelist::key(pager.free.consumed + 1))?;
    let (key, pages) = loop {
        let Some((k, v)) = pos.current(&*pager)? else {
            pager.free.exhausted = true;
            return Ok(false);
        };
        let key = freelist::decode_key(k)?;
        freelist::count(v)?;
        if key >= pager.free.oldest {
            pager.free.exhausted = true;
            return Ok(false);
        }
        if pager.free.kept.contains(&key) {
            pager.free.consumed = key;
            if !pos.move_next(&*pager, &rec)? {
                pager.free.exhausted = true;
                return Ok(false);
            }
            continue;
        }
        break (key, freelist::decode(v)?);
    };
    check_record(pager, &pages)?;
    merge_desc(&mut pager.free.reclaimed, &pages);
    pager.free.consumed = key;
    Ok(true)
}

/// A free record's pages must be in range, and strictly descending as
/// LMDB and we write them (`mdb check`'s rule): a page listed twice would
/// be handed out twice.
fn check_record(pager: &Pager<'_>, pages: &[u64]) -> Result<()> {
    let mut above = u64::MAX;
    for &p in pages {
        if p < 2 || p >= pager.next_pgno || p >= above {
            return Err(ErrorKind::Corrupted.into());
        }
        above = p;
    }
    Ok(())
}

/// WAL mode: take the young pages (`young.rs`) of the next held
/// record (past the checkpoint, older than every reader) that lists some;
/// the rest of it is filed again under its key at commit. `false` when no
/// such record is left.
pub(crate) fn consume_held(pager: &mut Pager<'_>) -> Result<bool> {
    let Some((young, readers)) = pager.free.young.clone() else {
        return Ok(false);
    };
    if pager.free.young_keys.is_none() {
        let mut keys = young.keys_in(pager.free.oldest, readers);
        keys.reverse();
        pager.free.young_keys = Some(keys);
    }
    let rec = pager.free_db;
    let cmp = crate::format::cmp::for_flags(rec.flags);
    while let Some(key) = pager.free.young_keys.as_mut().and_then(|k| k.pop()) {
        let mut pos = CursorPos::new();
        pos.seek(&*pager, &rec, cmp, &freelist::key(key))?;
        let pages = match pos.current(&*pager)? {
            Some((k, v)) if freelist::decode_key(k)? == key => {
                freelist::count(v)?;
                freelist::decode(v)?
            }
            // Gone (another writer consumed it after a checkpoint).
            _ => continue,
        };
        check_record(pager, &pages)?;
        let (fresh, held) = young.split(&pages);
        if fresh.is_empty() {
            continue;
        }
        merge_desc(&mut pager.free.young_pool, &fresh);
        pager.free.held.push(HeldRecord {
            key,
            pages: held,
            reserved: false,
            young: false,
        });
        return Ok(true);
    }
    Ok(false)
}
