//! Sorted duplicates (DUPSORT, lmdb-format.md §6): a key's values live in the
//! leaf node itself (one value), in a sub-page embedded in the node, or in a
//! sub-database whose keys are the values. Reading and writing them; the
//! cursor position that walks them is `cursor::position`.

use crate::error::{ErrorKind, Result};
use crate::format::flags::{DUPFIXED, INTEGERDUP};
use crate::format::meta::DbRecord;
use crate::format::page::{
    edit, footprint, node_max, search, Node, NodeData, Page, F_DUPDATA, F_SUBDATA, HDR, NODE_HDR,
    P_INVALID, P_LEAF, P_LEAF2,
};
use crate::pager::{PageRead, Pager};
use crate::tree::*;
use std::cmp::Ordering;

/// Sub-page header flags: LEAF | DIRTY | SUBP. LMDB only edits sub-pages in
/// place when DIRTY is set, so it must be present.
pub(crate) const SUBPAGE_FLAGS: u16 = P_LEAF | 0x10 | 0x40;

/// How a key's values are stored.
pub(crate) enum Dups<'a> {
    Single(&'a [u8]),
    SubPage(Page<'a>),
    SubDb(DbRecord),
}

pub(crate) fn dups_of<'a, S: PageRead>(s: &'a S, n: Node<'a>) -> Result<Dups<'a>> {
    let f = n.flags();
    if f & F_DUPDATA == 0 {
        return Ok(Dups::Single(node_value(s, n, true)?));
    }
    if f & F_SUBDATA != 0 {
        if n.dsize() != 48 || n.data().len() != 48 {
            return Err(ErrorKind::Corrupted.into());
        }
        return Ok(Dups::SubDb(DbRecord::read_sub(n.data())?));
    }
    Ok(Dups::SubPage(Page::new(n.data())?))
}

/// The first (smallest) value of a DUPSORT node.
pub(crate) fn first_dup<'a, S: PageRead>(s: &'a S, n: Node<'a>) -> Result<&'a [u8]> {
    match dups_of(s, n)? {
        Dups::Single(v) => Ok(v),
        Dups::SubPage(p) => p.key(0),
        Dups::SubDb(rec) => {
            let mut pos = CursorPos::new();
            pos.move_edge(s, &rec, false)?;
            pos.current_key(s)?.ok_or(ErrorKind::Corrupted.into())
        }
    }
}

/// The tree of a key's duplicates sub-database.
pub(crate) fn sub_tree(t: &Tree, rec: DbRecord) -> Result<Tree> {
    Ok(Tree {
        rec,
        cmp: t.dups.ok_or(ErrorKind::Incompatible)?,
        dups: None,
        fixed: if rec.flags & DUPFIXED != 0 {
            rec.pad as usize
        } else {
            0
        },
    })
}

/// Bytes of the sub-page [`build_subpage`] makes.
pub(crate) fn subpage_len(vals: &[&[u8]], fixed: bool, slack: usize) -> usize {
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
pub(crate) fn build_subpage(vals: &[&[u8]], fixed: bool, slack: usize) -> Vec<u8> {
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
pub(crate) fn packed<'a>(p: &Page<'a>) -> Result<&'a [u8]> {
    if !p.is_leaf2() {
        return Err(ErrorKind::Incompatible.into());
    }
    p.bytes()
        .get(HDR..HDR + p.len() * p.pad())
        .ok_or(ErrorKind::Corrupted.into())
}

pub(crate) fn page_values<'a>(p: &Page<'a>) -> Result<Vec<&'a [u8]>> {
    let mut v = Vec::with_capacity(p.len() + 1);
    for i in 0..p.len() {
        v.push(p.key(i)?);
    }
    Ok(v)
}

/// A full sub-page (not DUPFIXED) grown by the room `NewDups::build` would
/// give it, with `val` inserted at `at`: its nodes are copied as they are,
/// not re-encoded one by one. `None` when the values no longer fit in a
/// node (they go to a sub-database).
fn grow_subpage(
    p: &Page<'_>,
    at: usize,
    val: &[u8],
    ksize: usize,
    psize: usize,
) -> Result<Option<Vec<u8>>> {
    let old = p.bytes();
    let n = p.len();
    let add = 2 + footprint(val.len(), 0);
    let used = p.used() + add;
    let last = if at == n { val } else { p.key(n - 1)? };
    let slack = if n < 4 {
        0
    } else {
        (used / 4).max(2 * (2 + footprint(last.len(), 0)))
    };
    let limit = node_max(psize).saturating_sub(NODE_HDR + ksize);
    let tight = HDR + used;
    if tight > limit {
        return Ok(None);
    }
    let len = tight + (slack.min(limit - tight) & !1);
    let Some(extra) = len.checked_sub(old.len()).filter(|&e| e > 0) else {
        return Ok(None);
    };
    let mut b = edit::grown(old, extra);
    if !edit::insert_leaf(&mut b, at, val, NodeData::Inline(&[])) {
        return Err(ErrorKind::Corrupted.into());
    }
    Ok(Some(b))
}

/// A key's new set of values, built while the old ones are still borrowed
/// from the page: the sub-page bytes, or (too big for a node) owned values
/// for a new sub-database.
pub(crate) enum NewDups {
    SubPage(Vec<u8>),
    SubDb(Vec<Vec<u8>>),
}

impl NewDups {
    /// Where the value at `ix` of the values built stands: on a sub-page
    /// at `ix`; in a sub-database, not known without its path.
    fn spot(&self, ix: usize) -> DupSpot {
        match self {
            NewDups::SubPage(_) => DupSpot::Page(ix),
            NewDups::SubDb(_) => DupSpot::Unknown,
        }
    }
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

fn check_dup_value(t: &Tree, val: &[u8]) -> Result<()> {
    if val.len() > crate::format::page::MAX_KEY_SIZE {
        return Err(ErrorKind::BadValSize.into());
    }
    if t.rec.flags & INTEGERDUP != 0 && val.len() != 4 && val.len() != 8 {
        return Err(ErrorKind::BadValSize.into());
    }
    Ok(())
}

/// Add `val` to the values of `key` in a DUPSORT tree.
pub(crate) fn dup_put(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    key: &[u8],
    val: &[u8],
    flags: WriteFlags,
) -> Result<()> {
    let mut sub = pager.take_path();
    let r = dup_put_at(
        pager,
        t,
        key,
        val,
        flags,
        (&mut Path::new(), None),
        &mut sub,
    );
    pager.give_path(sub);
    r.map(|_| ())
}

/// Where [`dup_put_at`] left its value among the key's values, when it
/// knows without a search (a cursor then stands there with no re-read).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum DupSpot {
    /// Not known here: anywhere after a rebuild of the key's values.
    Unknown,
    /// The key's one value (a new key).
    Single,
    /// Entry `ix` of the key's sub-page.
    Page(usize),
    /// In the key's sub-database, whose record is now this (the `sub`
    /// path of [`dup_put_at`] leads to the value unless its `len` is 0).
    SubDb(DbRecord),
}

/// [`dup_put`] for a cursor: `at` is where `key` goes on the leaf of
/// `path` (a valid path of the tree, from the cursor), if known; on return
/// `path` leads to the key's node unless the tree changed shape
/// ([`placed_path`](super::placed_path)); when the value went to (or was
/// found in) the key's sub-database, `sub` leads to it there, else its
/// `len` is 0, and the spot returned may say where it is.
pub(crate) fn dup_put_at(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    key: &[u8],
    val: &[u8],
    flags: WriteFlags,
    (path, at): (&mut Path, Option<(usize, bool)>),
    sub: &mut Path,
) -> Result<DupSpot> {
    sub.len = 0;
    check_dup_value(t, val)?;
    if t.rec.flags & crate::format::flags::INTEGERKEY != 0 && key.len() != 4 && key.len() != 8 {
        return Err(ErrorKind::BadValSize.into());
    }
    let dcmp = t.dups.ok_or(ErrorKind::Incompatible)?;
    let append_key = flags.contains(WriteFlags::APPEND);
    let (i, exact) = match at {
        Some(found) if !append_key => found,
        _ => descend(&*pager, &t.rec, t.cmp, key, path)?,
    };
    if !exact {
        // An empty value alone under its key is stored as LMDB stores it.
        let f = WriteFlags(flags.0 & (WriteFlags::NO_OVERWRITE.0 | WriteFlags::APPEND.0));
        // The descent above is the put's (APPEND takes its own way).
        let at = (!append_key).then_some((i, false));
        put_along(pager, t, key, NodeData::Inline(val), f, path, at)?;
        return Ok(DupSpot::Single);
    }
    if flags.contains(WriteFlags::NO_OVERWRITE) || flags.contains(WriteFlags::APPEND) {
        return Err(ErrorKind::KeyExist.into());
    }
    let no_dup = flags.contains(WriteFlags::NO_DUP_DATA);
    let fixed = t.rec.flags & DUPFIXED != 0;
    let append = flags.contains(WriteFlags::APPEND_DUP);
    let leaf = path.pg[path.leaf()];
    let node = pager.page(leaf)?.node(i)?;
    let dups = dups_of(&*pager, node)?;
    // An empty value beside other values: LMDB refuses one way round and
    // silently drops the empty value the other way; refuse both.
    let lone_empty = matches!(dups, Dups::Single(v) if v.is_empty());
    if val.is_empty() != lone_empty {
        return Err(ErrorKind::BadValSize.into());
    }
    if t.rec.flags & DUPFIXED != 0 {
        let size = match &dups {
            Dups::Single(v) => v.len(),
            Dups::SubPage(p) => p.key(0)?.len(),
            Dups::SubDb(r) => r.pad as usize,
        };
        if val.len() != size {
            return Err(ErrorKind::BadValSize.into());
        }
    }
    let spot = match dups {
        Dups::Single(old) => {
            let c = dcmp.compare(val, old);
            if c == Ordering::Equal {
                return if no_dup || append {
                    Err(ErrorKind::KeyExist.into())
                } else {
                    Ok(DupSpot::Single)
                };
            }
            if append && c == Ordering::Less {
                return Err(ErrorKind::KeyExist.into());
            }
            let vals = if c == Ordering::Less {
                [val, old]
            } else {
                [old, val]
            };
            let new = NewDups::build(&vals, fixed, key.len(), pager.psize());
            let spot = new.spot(usize::from(c == Ordering::Greater));
            set_dup_values(pager, t, path, i, key, new)?;
            spot
        }
        Dups::SubPage(p) => {
            let (at, found) = search(&p, val, dcmp)?;
            if found {
                return if no_dup || append {
                    Err(ErrorKind::KeyExist.into())
                } else {
                    Ok(DupSpot::Page(at))
                };
            }
            if append && at != p.len() {
                return Err(ErrorKind::KeyExist.into());
            }
            let room = if fixed {
                HDR + (p.len() + 1) * p.pad() <= p.bytes().len()
            } else {
                p.free() >= 2 + footprint(val.len(), 0)
            };
            if room {
                // In place: the sub-page has spare room.
                touch_path(pager, t, path)?;
                let buf = pager.dirty.get_mut(&path.pg[path.leaf()]).unwrap();
                let sp = edit::data_mut(buf, i);
                let ok = if fixed {
                    edit::insert_leaf2(sp, at, val)
                } else {
                    edit::insert_leaf(sp, at, val, NodeData::Inline(&[]))
                };
                if !ok {
                    return Err(ErrorKind::Corrupted.into());
                }
                t.rec.entries += 1;
                return Ok(DupSpot::Page(at));
            }
            let grown = if fixed {
                None
            } else {
                grow_subpage(&p, at, val, key.len(), pager.psize())?
            };
            let new = match grown {
                Some(sp) => NewDups::SubPage(sp),
                None => {
                    let mut vals = page_values(&p)?;
                    vals.insert(at, val);
                    NewDups::build(&vals, fixed, key.len(), pager.psize())
                }
            };
            let spot = new.spot(at);
            set_dup_values(pager, t, path, i, key, new)?;
            spot
        }
        Dups::SubDb(rec) => {
            let mut st = sub_tree(t, rec)?;
            // One descent of the sub-database finds the value or its place.
            if put_sub_value(pager, (t, &mut st), val, append, sub, path)? {
                return if no_dup || append {
                    Err(ErrorKind::KeyExist.into())
                } else {
                    Ok(DupSpot::SubDb(st.rec))
                };
            }
            write_subdb_record(pager, path, i, &st.rec);
            DupSpot::SubDb(st.rec)
        }
    };
    t.rec.entries += 1;
    Ok(spot)
}

/// Add `val` to the key's sub-database `st` (of tree `t`, the key's
/// node at the end of `main`, made dirty here): true, with nothing
/// changed, if the value is there already; with `append`, `KeyExist`
/// unless it sorts after the last value.
fn put_sub_value(
    pager: &mut Pager<'_>,
    (t, st): (&mut Tree, &mut Tree),
    val: &[u8],
    append: bool,
    sub: &mut Path,
    main: &mut Path,
) -> Result<bool> {
    let (j, found) = if append {
        // Past the last value, or not at all: the rightmost path, no search.
        descend_last(pager, st, val, sub)?.ok_or(ErrorKind::KeyExist)?
    } else {
        descend(&*pager, &st.rec, st.cmp, val, sub)?
    };
    if found {
        return Ok(true);
    }
    touch_path(pager, t, main)?;
    // Making the main path dirty moved no page of the sub-database.
    let at = Some((j, false));
    put_along(
        pager,
        st,
        val,
        NodeData::Inline(&[]),
        WriteFlags::EMPTY,
        sub,
        at,
    )?;
    Ok(false)
}

pub(crate) fn write_subdb_record(pager: &mut Pager<'_>, path: &Path, i: usize, rec: &DbRecord) {
    let buf = pager.dirty.get_mut(&path.pg[path.leaf()]).unwrap();
    edit::data_mut(buf, i).copy_from_slice(&rec.encode());
}

/// Store a key's new values in leaf node `i`: a sub-page while it fits
/// in a node, a sub-database beyond.
pub(crate) fn set_dup_values(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    path: &mut Path,
    i: usize,
    key: &[u8],
    new: NewDups,
) -> Result<()> {
    touch_path(pager, t, path)?;
    let vals = match new {
        NewDups::SubPage(sp) => {
            return replace_node(pager, t, path, i, key, NodeData::SubPage(&sp));
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
        tree_put(pager, &mut st, v, NodeData::Inline(&[]), WriteFlags::APPEND)?;
    }
    replace_node(pager, t, path, i, key, NodeData::DupDb(&st.rec.encode()))
}

/// Where a cursor stands among its key's values, for [`dup_overwrite`].
pub(crate) enum DupAt<'p> {
    /// On the node's one value.
    Single,
    /// On entry `ix` of the node's sub-page.
    Page(usize),
    /// At the end of this path in the key's sub-database.
    Tree(&'p mut Path),
}

/// LMDB's `MDB_CURRENT` put on a duplicate: the value under a cursor
/// overwritten in place by `val`, of its size and sorting as it does (the
/// caller checks both), with no delete and insert. `main` leads to the
/// key's node; it and a sub-database path are made dirty and updated.
pub(crate) fn dup_overwrite(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    main: &mut Path,
    at: DupAt<'_>,
    val: &[u8],
) -> Result<()> {
    let i = main.ix[main.leaf()];
    touch_path(pager, t, main)?;
    let leaf = main.pg[main.leaf()];
    let target = match at {
        DupAt::Single => {
            let buf = pager.dirty.get_mut(&leaf).ok_or(ErrorKind::Corrupted)?;
            Some(edit::data_mut(buf, i))
        }
        DupAt::Page(ix) => {
            let buf = pager.dirty.get_mut(&leaf).ok_or(ErrorKind::Corrupted)?;
            edit::key_mut(edit::data_mut(buf, i), ix)
        }
        DupAt::Tree(sub) => {
            let Dups::SubDb(rec) = dups_of(&*pager, pager.page(leaf)?.node(i)?)? else {
                return Err(ErrorKind::Corrupted.into());
            };
            let mut st = sub_tree(t, rec)?;
            touch_path(pager, &mut st, sub)?;
            // The sub-database's root may have moved: its record changes.
            write_subdb_record(pager, main, i, &st.rec);
            overwrite_separator(pager, sub, val);
            let buf = pager.dirty.get_mut(&sub.pg[sub.leaf()]);
            buf.and_then(|b| edit::key_mut(b, sub.ix[sub.leaf()]))
        }
    };
    match target {
        Some(v) if v.len() == val.len() => {
            v.copy_from_slice(val);
            Ok(())
        }
        _ => Err(ErrorKind::Corrupted.into()),
    }
}

/// The value at the end of the dirty path `sub` is about to become `val`
/// in place: if it is the first of a leaf other than the leftmost, it is
/// also the separator in the nearest branch above that does not reach it
/// through its first child, and LMDB writes `val` there too (the same
/// order, so a search is right either way, but the bytes differ). A
/// separator of another size (not one LMDB wrote) is left as it is.
fn overwrite_separator(pager: &mut Pager<'_>, sub: &Path, val: &[u8]) {
    let l = sub.leaf();
    if sub.ix[l] != 0 {
        return;
    }
    let Some(lv) = (0..l).rev().find(|&lv| sub.ix[lv] != 0) else {
        return;
    };
    let buf = pager.dirty.get_mut(&sub.pg[lv]);
    if let Some(k) = buf.and_then(|b| edit::key_mut(b, sub.ix[lv])) {
        if k.len() == val.len() {
            k.copy_from_slice(val);
        }
    }
}

/// Delete `val` from `key`'s values, or all of them with `None`.
pub(crate) fn dup_del(
    pager: &mut Pager<'_>,
    t: &mut Tree,
    key: &[u8],
    val: Option<&[u8]>,
) -> Result<bool> {
    let dcmp = t.dups.ok_or(ErrorKind::Incompatible)?;
    let mut path = Path::new();
    let (i, exact) = descend(&*pager, &t.rec, t.cmp, key, &mut path)?;
    if !exact {
        return Ok(false);
    }
    let leaf = path.pg[path.leaf()];
    let node = pager.page(leaf)?.node(i)?;
    let dups = dups_of(&*pager, node)?;
    let Some(val) = val else {
        let count = match &dups {
            Dups::Single(_) => 1,
            Dups::SubPage(p) => p.len() as u64,
            Dups::SubDb(rec) => rec.entries,
        };
        if let Dups::SubDb(rec) = dups {
            let mut st = sub_tree(t, rec)?;
            drop_tree(pager, &mut st)?;
        }
        tree_del(pager, t, key)?;
        t.rec.entries = t.rec.entries.saturating_sub(count - 1);
        return Ok(true);
    };
    match dups {
        Dups::Single(old) => {
            if dcmp.compare(val, old) != Ordering::Equal {
                return Ok(false);
            }
            tree_del(pager, t, key)
        }
        Dups::SubPage(p) => {
            let (at, found) = search(&p, val, dcmp)?;
            if !found {
                return Ok(false);
            }
            if p.len() == 1 {
                return tree_del(pager, t, key);
            }
            let mut vals = page_values(&p)?;
            vals.remove(at);
            let sp = build_subpage(&vals, t.rec.flags & DUPFIXED != 0, 0);
            touch_path(pager, t, &mut path)?;
            replace_node(pager, t, &path, i, key, NodeData::SubPage(&sp))?;
            t.rec.entries -= 1;
            Ok(true)
        }
        Dups::SubDb(rec) => {
            let mut st = sub_tree(t, rec)?;
            if !crate::tree::contains(&*pager, &st.rec, dcmp, val)? {
                return Ok(false);
            }
            touch_path(pager, t, &mut path)?;
            tree_del(pager, &mut st, val)?;
            if st.rec.root == P_INVALID {
                return tree_del(pager, t, key);
            }
            write_subdb_record(pager, &path, i, &st.rec);
            t.rec.entries -= 1;
            Ok(true)
        }
    }
}
