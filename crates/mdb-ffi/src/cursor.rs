//! Cursors (c-api.md §13) over the engine's detached `CursorState`.
//!
//! Cursors of write transactions come from the environment's pool and go
//! back to it when their transaction ends (LMDB frees them then). Cursors of
//! read transactions are the caller's to close; when their transaction ends
//! they are only unbound, and `mdb_cursor_renew` binds them again.

use crate::guard::{code, failed_with, guard, guard_inline, guard_or};
use crate::handles::{cursor_ref, detach, txn_ref, Kind, Leaf, MDB_cursor, MDB_txn, View};
use crate::put::{answer_existing, check_sizes, db_flags, stash};
use crate::types::*;
use mdb::{CursorOp, CursorState, WriteFlags};
use std::cell::Cell;
use std::os::raw::{c_int, c_uint};

thread_local! {
    /// The read cursor this thread closed last, for its next
    /// `mdb_cursor_open` in a read transaction: back-mdb opens and closes
    /// several per LDAP search.
    static SPARE: Cell<Option<Box<MDB_cursor>>> = const { Cell::new(None) };
}

/// Bind a read cursor's state to `db` of snapshot `r`: in place when it
/// has one (a pooled cursor of `mdb_cursor_open`, `mdb_cursor_renew`).
fn bind_read(
    st: &mut Option<CursorState>,
    r: &mdb::RoTxn<'static>,
    db: mdb::Database,
) -> mdb::Result<()> {
    match st {
        Some(st) => st.rebind(r, db),
        None => {
            *st = Some(CursorState::new(r, db)?);
            Ok(())
        }
    }
}

/// The cursor and its (usable) transaction.
///
/// # Safety
/// As [`cursor_ref`].
unsafe fn bound<'a>(c: *mut MDB_cursor) -> Result<(&'a mut MDB_cursor, &'a mut MDB_txn), c_int> {
    // SAFETY: per the caller's contract.
    let cur = unsafe { cursor_ref(c)? };
    // SAFETY: a bound cursor's transaction is live (it unbinds them at its end).
    let t = unsafe { txn_ref(cur.txn)? };
    t.usable()?;
    if cur.st.is_none() {
        return Err(EINVAL);
    }
    Ok((cur, t))
}

/// `mdb_cursor_open`.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_open(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    cursor: *mut *mut MDB_cursor,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: txn per the lmdb.h contract.
            let t = unsafe { txn_ref(txn)? };
            // SAFETY: the txn's env outlives it.
            let env = unsafe { &*t.env };
            let db = t.db(dbi)?;
            if cursor.is_null() {
                return Err(EINVAL);
            }
            let write = !t.rdonly;
            if write && dbi == 0 {
                return Err(EINVAL);
            }
            let tenv = t.env;
            let p = match t.view()? {
                View::Ro(r) => {
                    // The thread's spare from its last close, bound in
                    // place: no allocation, no 1 KiB state moved around.
                    let mut c = match SPARE.with(Cell::take) {
                        Some(mut c) => {
                            if let Err(e) = bind_read(&mut c.st, r, db) {
                                SPARE.with(|s| s.set(Some(c)));
                                return Err(e.code());
                            }
                            c
                        }
                        None => Box::new(MDB_cursor {
                            live: true,
                            write,
                            txn,
                            env: tenv,
                            dbi,
                            st: Some(CursorState::new(r, db).map_err(|e| e.code())?),
                            leaf: None,
                            dups: None,
                        }),
                    };
                    (c.live, c.write, c.txn, c.env, c.dbi) = (true, false, txn, tenv, dbi);
                    c.forget_kept();
                    Box::into_raw(c)
                }
                View::Rw(w) => {
                    let st = CursorState::new(&*w, db).map_err(|e| e.code())?;
                    let c = MDB_cursor {
                        live: true,
                        write,
                        txn,
                        env: tenv,
                        dbi,
                        st: Some(st),
                        leaf: None,
                        dups: None,
                    };
                    env.cursors
                        .lock()
                        .unwrap_or_else(|x| x.into_inner())
                        .take(c)
                }
            };
            t.cursors.push(p);
            // SAFETY: checked non-NULL.
            unsafe { *cursor = p };
            Ok(())
        })())
    })
}

/// `mdb_cursor_close`.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_close(cursor: *mut MDB_cursor) {
    guard(move || {
        // SAFETY: cursor per the lmdb.h contract.
        let Ok(cur) = (unsafe { cursor_ref(cursor) }) else {
            return 0;
        };
        // SAFETY: a bound cursor's transaction is live.
        if let Ok(t) = unsafe { txn_ref(cur.txn) } {
            t.cursors.retain(|&c| c != cursor);
        }
        if cur.write {
            // SAFETY: a live pooled cursor.
            unsafe { detach(cursor) };
        } else {
            cur.live = false;
            // SAFETY: read cursors come from Box::into_raw in mdb_cursor_open.
            let c = unsafe { Box::from_raw(cursor) };
            // Kept for this thread's next open (the one kept before, if
            // any, is freed).
            drop(SPARE.with(|s| s.replace(Some(c))));
        }
        0
    });
}

/// `mdb_cursor_renew`: bind a read cursor to another read transaction.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_renew(txn: *mut MDB_txn, cursor: *mut MDB_cursor) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: pointers per the lmdb.h contract.
            let (t, cur) = unsafe { (txn_ref(txn)?, cursor_ref(cursor)?) };
            if cur.write || !t.rdonly {
                return Err(EINVAL);
            }
            let db = t.db(cur.dbi)?;
            match t.view()? {
                View::Ro(r) => bind_read(&mut cur.st, r, db).map_err(|e| e.code())?,
                View::Rw(_) => return Err(EINVAL),
            }
            // SAFETY: a bound cursor's transaction is live.
            if let Ok(old) = unsafe { txn_ref(cur.txn) } {
                old.cursors.retain(|&c| c != cursor);
            }
            cur.forget_kept();
            cur.txn = txn;
            cur.env = t.env;
            t.cursors.push(cursor);
            Ok(())
        })())
    })
}

/// `mdb_cursor_txn`.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_txn(cursor: *mut MDB_cursor) -> *mut MDB_txn {
    // SAFETY: cursor per the lmdb.h contract.
    guard_or(std::ptr::null_mut(), || {
        match unsafe { cursor_ref(cursor) } {
            Ok(c) => c.txn,
            Err(_) => std::ptr::null_mut(),
        }
    })
}

/// `mdb_cursor_dbi` (0 for a NULL cursor, where LMDB would crash).
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_dbi(cursor: *mut MDB_cursor) -> MDB_dbi {
    // SAFETY: cursor per the lmdb.h contract.
    guard_or(0, || match unsafe { cursor_ref(cursor) } {
        Ok(c) => c.dbi,
        Err(_) => 0,
    })
}

const FIRST: c_int = 0;
const FIRST_DUP: c_int = 1;
const GET_BOTH: c_int = 2;
const GET_BOTH_RANGE: c_int = 3;
const GET_CURRENT: c_int = 4;
const GET_MULTIPLE: c_int = 5;
const LAST: c_int = 6;
const LAST_DUP: c_int = 7;
const NEXT: c_int = 8;
const NEXT_DUP: c_int = 9;
const NEXT_MULTIPLE: c_int = 10;
const NEXT_NODUP: c_int = 11;
const PREV: c_int = 12;
const PREV_DUP: c_int = 13;
const PREV_NODUP: c_int = 14;
const SET: c_int = 15;
const SET_KEY: c_int = 16;
const SET_RANGE: c_int = 17;
const PREV_MULTIPLE: c_int = 18;

/// `mdb_cursor_get`.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_get(
    cursor: *mut MDB_cursor,
    key: *mut MDB_val,
    data: *mut MDB_val,
    op: c_int,
) -> c_int {
    guard_inline(move || {
        if op == NEXT {
            // SAFETY: cursor and outputs per the lmdb.h contract.
            if let Some(rc) = unsafe { next_in_leaf(cursor, key, data) } {
                return rc;
            }
        }
        if op == NEXT_DUP {
            // SAFETY: as above.
            return unsafe { next_dup(cursor, key, data) };
        }
        // SAFETY: as above.
        unsafe { get_step(cursor, key, data, op) }
    })
}

/// `MDB_NEXT_DUP`: along the kept page of the key's values, else the
/// general path. (A call of its own: inlined into `mdb_cursor_get`, or
/// tested first in `get_step`, the step cost the scan's steps and seeks
/// 1-7 instructions more, `mdb-bench instr`.)
///
/// # Safety
/// As [`mdb_cursor_get`].
#[inline(never)]
unsafe fn next_dup(cursor: *mut MDB_cursor, key: *mut MDB_val, data: *mut MDB_val) -> c_int {
    // SAFETY: per the caller's contract.
    match unsafe { next_dup_in_leaf(cursor, key, data) } {
        Some(rc) => rc,
        // SAFETY: as above.
        None => unsafe { get_general(cursor, key, data, NEXT_DUP) },
    }
}

/// `MDB_NEXT` along a read cursor's kept leaf: the loop of most scans.
/// `None` (nothing changed) when there is no kept leaf or the next item is
/// not a plain one of the same leaf; the general path then takes over.
///
/// # Safety
/// As [`mdb_cursor_get`].
#[inline(always)]
unsafe fn next_in_leaf(
    cursor: *mut MDB_cursor,
    key: *mut MDB_val,
    data: *mut MDB_val,
) -> Option<c_int> {
    // SAFETY: NULL or a cursor from `mdb_cursor_open` (pooled structs stay
    // allocated until their environment closes).
    let cur = unsafe { cursor.as_mut() }?;
    let (leaf, st) = (cur.leaf.as_mut()?, cur.st.as_mut()?);
    // SAFETY: a kept leaf is a page of the map, bounds-checked when taken,
    // of the cursor's read snapshot, which is still live and unchanged:
    // the leaf is dropped when the snapshot ends or is reset (see `Leaf`).
    let b = unsafe { std::slice::from_raw_parts(leaf.ptr, leaf.len) };
    let i = leaf.ix + 1;
    let (k, v) = mdb::page::plain_item(b, i)?;
    leaf.ix = i;
    st.set_leaf_index(leaf.level, i);
    // SAFETY: output pointers are NULL or the caller's MDB_vals.
    unsafe {
        set_val(key, k);
        set_val(data, v);
    }
    Some(0)
}

/// `MDB_NEXT_DUP` (or `MDB_NEXT`, which moves among the key's values
/// first) along a read cursor's kept page of the current key's values:
/// back-mdb's walk of an index or of a node's children. `None` (nothing
/// changed) when there is no kept page or the cursor is on its last value;
/// the general path then takes over (the next leaf of a sub-database, or
/// the end of the key's values).
///
/// # Safety
/// As [`mdb_cursor_get`].
#[inline(always)]
unsafe fn next_dup_in_leaf(
    cursor: *mut MDB_cursor,
    key: *mut MDB_val,
    data: *mut MDB_val,
) -> Option<c_int> {
    // SAFETY: NULL or a cursor from `mdb_cursor_open` (pooled structs stay
    // allocated until their environment closes).
    let cur = unsafe { cursor.as_mut() }?;
    let (d, st) = (cur.dups.as_mut()?, cur.st.as_mut()?);
    // SAFETY: the kept page and key lie in pages of the map, bounds-checked
    // when taken, of the cursor's read snapshot, which is still live and
    // unchanged: they are dropped when the snapshot ends or is reset, and
    // by every move but this one (see `DupLeaf`).
    let (b, k) = unsafe {
        (
            std::slice::from_raw_parts(d.ptr, d.len),
            std::slice::from_raw_parts(d.key, d.key_len),
        )
    };
    let i = d.ix + 1;
    let v = mdb::page::dup_value(b, i)?;
    d.ix = i;
    st.set_dup_index(i);
    // SAFETY: output pointers are NULL or the caller's MDB_vals.
    unsafe {
        set_val(key, k);
        set_val(data, v);
    }
    Some(0)
}

/// `mdb_cursor_get` but for the step along a kept leaf: NEXT and PREV in
/// a top-level transaction (apart from the general path, whose frame is
/// larger), then the general path.
///
/// # Safety
/// As [`mdb_cursor_get`].
#[inline(never)]
unsafe fn get_step(
    cursor: *mut MDB_cursor,
    key: *mut MDB_val,
    data: *mut MDB_val,
    op: c_int,
) -> c_int {
    if op == NEXT || op == PREV {
        // SAFETY: per the caller's contract.
        if let Some(rc) = unsafe { step(cursor, key, data, op) } {
            return rc;
        }
    }
    // SAFETY: per the caller's contract.
    unsafe { get_general(cursor, key, data, op) }
}

/// `mdb_cursor_get` but for its `MDB_NEXT`/`MDB_PREV` fast paths.
///
/// # Safety
/// As [`mdb_cursor_get`].
#[inline(never)]
unsafe fn get_general(
    cursor: *mut MDB_cursor,
    key: *mut MDB_val,
    data: *mut MDB_val,
    op: c_int,
) -> c_int {
    code((|| {
        // SAFETY: cursor per the lmdb.h contract.
        let cur = unsafe { cursor_ref(cursor)? };
        cur.forget_kept();
        // SAFETY: a bound cursor's transaction is live (it unbinds them at its end).
        let t = unsafe { txn_ref(cur.txn)? };
        // Checks the transaction is usable (as `bound`), once.
        let view = t.view()?;
        let st = cur.st.as_mut().ok_or(EINVAL)?;
        // SAFETY: non-NULL pointers are the caller's values.
        let k = || unsafe { key.as_ref().map(|v| bytes(v)) }.ok_or(EINVAL);
        // SAFETY: as above.
        let d = || unsafe { data.as_ref().map(|v| bytes(v)) }.ok_or(EINVAL);
        let need_data = || if data.is_null() { Err(EINVAL) } else { Ok(()) };
        let cop = match op {
            FIRST => CursorOp::First,
            FIRST_DUP => {
                need_data()?;
                CursorOp::FirstDup
            }
            GET_BOTH => CursorOp::GetBoth(k()?, d()?),
            GET_BOTH_RANGE => CursorOp::GetBothRange(k()?, d()?),
            GET_CURRENT => CursorOp::GetCurrent,
            GET_MULTIPLE => {
                need_data()?;
                CursorOp::GetMultiple
            }
            LAST => CursorOp::Last,
            LAST_DUP => {
                need_data()?;
                CursorOp::LastDup
            }
            NEXT => CursorOp::Next,
            // On a plain database the engine moves as NEXT/PREV, like LMDB.
            NEXT_DUP => CursorOp::NextDup,
            NEXT_MULTIPLE => {
                need_data()?;
                CursorOp::NextMultiple
            }
            NEXT_NODUP => CursorOp::NextNodup,
            PREV => CursorOp::Prev,
            PREV_DUP => CursorOp::PrevDup,
            PREV_NODUP => CursorOp::PrevNodup,
            SET => CursorOp::Set(k()?),
            SET_KEY => CursorOp::SetKey(k()?),
            SET_RANGE => CursorOp::SetRange(k()?),
            PREV_MULTIPLE => {
                need_data()?;
                CursorOp::PrevMultiple
            }
            _ => return Err(EINVAL),
        };
        if let CursorOp::Set(k) | CursorOp::SetKey(k) | CursorOp::SetRange(k) = cop {
            if k.is_empty() {
                return Err(MDB_BAD_VALSIZE);
            }
        }
        if let (View::Ro(r), CursorOp::Set(k) | CursorOp::SetKey(k) | CursorOp::SetRange(k)) =
            (&view, cop)
        {
            // A plain database: the item and the kept leaf from one lookup.
            if let Some(found) = st.seek_leaf(r, k, op != SET_RANGE) {
                let (item, leaf) = found.map_err(|e| e.code())?;
                cur.leaf = leaf.map(Leaf::new);
                let (rk, rv) = item.ok_or(MDB_NOTFOUND)?;
                // SAFETY: output pointers are NULL or the caller's MDB_vals.
                unsafe {
                    if op != SET {
                        set_val(key, rk);
                    }
                    set_val(data, rv);
                }
                return Ok(());
            }
        }
        if op == GET_CURRENT {
            // SAFETY: output pointers are NULL or the caller's MDB_vals.
            return unsafe { get_current(st, &view, key, data) };
        }
        // FIRST_DUP and LAST_DUP move among a key's duplicates and leave the
        // caller's key alone, as LMDB (slapd's index code keeps using a key
        // pointer across a LAST_DUP and a delete); on a single value they
        // return it.
        let dup_op = matches!(op, FIRST_DUP | LAST_DUP);
        let (r, among_dups) = match view {
            View::Ro(r) => {
                let item = st.get(r, cop);
                let among = dup_op && matches!(item, Ok(Some(_))) && st.on_dups(r).unwrap_or(false);
                // The page of a key's values only after a step, which more
                // steps follow: a seek (back-mdb's index lookups, most of
                // an equality search's calls) does not pay for it, and a
                // walk after it keeps the page at its first NEXT_DUP.
                cur.keep_leaf(
                    r,
                    matches!(op, NEXT | NEXT_DUP | NEXT_NODUP | FIRST | FIRST_DUP),
                );
                (item, among)
            }
            View::Rw(w) => {
                let item = st.get(&*w, cop);
                let among =
                    dup_op && matches!(item, Ok(Some(_))) && st.on_dups(&*w).unwrap_or(false);
                (item, among)
            }
        };
        let (rk, rv) = r.map_err(|e| e.code())?.ok_or(MDB_NOTFOUND)?;
        let key_out = !among_dups && !matches!(op, SET | GET_BOTH | GET_BOTH_RANGE | GET_MULTIPLE);
        // SAFETY: output pointers are NULL or the caller's MDB_vals.
        unsafe {
            if key_out {
                set_val(key, rk);
            }
            set_val(data, rv);
        }
        Ok(())
    })())
}

/// `MDB_GET_CURRENT`. Without `data` only the key is read, which leaves a
/// delete's state among the key's values as it was (so the next
/// `MDB_NEXT` still returns the value that took a deleted one's place).
/// After the delete of a key's last value, where the key kept others,
/// there is a key but no value: `MDB_NOTFOUND` with `key` set, as LMDB.
///
/// # Safety
/// `key` and `data` are NULL or the caller's `MDB_val`s.
unsafe fn get_current(
    st: &mut CursorState,
    view: &View<'_>,
    key: *mut MDB_val,
    data: *mut MDB_val,
) -> Result<(), c_int> {
    let key_only = |st: &mut CursorState| match view {
        View::Ro(r) => st.current_key(*r),
        View::Rw(w) => st.current_key(&**w),
    };
    let item = match view {
        _ if data.is_null() => Ok(None),
        View::Ro(r) => st.get(*r, CursorOp::GetCurrent),
        View::Rw(w) => st.get(&**w, CursorOp::GetCurrent),
    };
    let r = match item {
        Ok(Some((k, v))) => Ok(Some((k, Some(v)))),
        Ok(None) => key_only(st).map(|k| k.map(|k| (k, None))),
        Err(e) => Err(e),
    };
    let (k, v) = r.map_err(|e| e.code())?.ok_or(MDB_NOTFOUND)?;
    // SAFETY: per the caller's contract.
    unsafe { set_val(key, k) };
    match v {
        // SAFETY: as above.
        Some(v) => unsafe { set_val(data, v) },
        None if !data.is_null() => return Err(MDB_NOTFOUND),
        None => {}
    }
    Ok(())
}

/// NEXT (first along a kept page of the key's values) or PREV in a
/// top-level transaction, the loop of most scans: the
/// general path's checks, without building a `CursorOp` from any of the
/// other codes. `None`: another case, for the general path.
///
/// # Safety
/// As [`mdb_cursor_get`].
#[inline]
unsafe fn step(
    cursor: *mut MDB_cursor,
    key: *mut MDB_val,
    data: *mut MDB_val,
    op: c_int,
) -> Option<c_int> {
    if op == NEXT {
        // Among a key's values first.
        // SAFETY: per the caller's contract.
        if let Some(rc) = unsafe { next_dup_in_leaf(cursor, key, data) } {
            return Some(rc);
        }
    }
    // SAFETY: NULL or a cursor from `mdb_cursor_open` (pooled structs stay
    // allocated until their environment closes).
    let cur = unsafe { cursor.as_mut() }?;
    if !cur.live {
        return None;
    }
    // SAFETY: a bound cursor's transaction is live (it unbinds them at its end).
    let t = unsafe { cur.txn.as_mut() }?;
    let st = cur.st.as_mut()?;
    if !t.live || t.broken || !t.child.is_null() {
        return None;
    }
    let cop = if op == NEXT {
        CursorOp::Next
    } else {
        CursorOp::Prev
    };
    let r = match &mut t.kind {
        Kind::Read(r) => {
            let r: &mdb::RoTxn<'static> = r;
            let item = st.get(r, cop);
            cur.keep_leaf(r, op == NEXT);
            item
        }
        Kind::Write(root) if !root.top_ref().is_broken() => {
            // What it returns reaches C (see `MDB_txn::view`).
            root.lent = true;
            st.get(&*root.top(), cop)
        }
        _ => return None,
    };
    Some(match r {
        Ok(Some((k, v))) => {
            // SAFETY: output pointers are NULL or the caller's MDB_vals.
            unsafe {
                set_val(key, k);
                set_val(data, v);
            }
            0
        }
        Ok(None) => MDB_NOTFOUND,
        Err(e) => e.code(),
    })
}

/// `mdb_cursor_put`.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_put(
    cursor: *mut MDB_cursor,
    key: *mut MDB_val,
    data: *mut MDB_val,
    flags: c_uint,
) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: cursor per the lmdb.h contract.
            let (cur, t) = unsafe { bound(cursor)? };
            if key.is_null() || data.is_null() {
                return Err(EINVAL);
            }
            let mut scratch = std::mem::take(&mut t.scratch);
            let r = (|| {
                let st = cur.st.as_mut().ok_or(EINVAL)?;
                let db = st.db();
                if flags & put_flags::MULTIPLE != 0 {
                    let fl = match t.view()? {
                        View::Ro(r) => mdb::Txn::db_flags(r, db),
                        View::Rw(w) => mdb::Txn::db_flags(&*w, db),
                    }
                    .map_err(|e| e.code())?
                    .bits() as u32;
                    if fl & db_flags::DUPFIXED == 0 {
                        // SAFETY: MULTIPLE passes an array of two MDB_vals.
                        unsafe { (*data.add(1)).mv_size = 0 };
                        return Err(MDB_INCOMPATIBLE);
                    }
                }
                let w = t.write()?;
                // SAFETY: checked non-NULL; the caller's key.
                let k = unsafe { bytes(&*key) };
                // SAFETY: checked non-NULL.
                let d = unsafe { &mut *data };
                // The database's flags matter to a put only for a value
                // longer than a DUPSORT value may be, and for MULTIPLE and
                // RESERVE: not read for every index id slapadd puts (83
                // instructions).
                let dflags = if d.mv_size > MAX_KEY
                    || flags & (put_flags::MULTIPLE | put_flags::RESERVE) != 0
                {
                    db_flags(w, db)?
                } else {
                    0
                };
                if flags & put_flags::MULTIPLE != 0 {
                    // SAFETY: MULTIPLE passes an array of two MDB_vals.
                    let count = unsafe { (*data.add(1)).mv_size };
                    let size = d.mv_size;
                    check_sizes(k, size, dflags)?;
                    let total = size.checked_mul(count).ok_or(EINVAL)?;
                    // SAFETY: the caller's array of `count` items of `size` bytes.
                    let all = unsafe {
                        bytes(&MDB_val {
                            mv_size: total,
                            mv_data: d.mv_data,
                        })
                    };
                    let (k, vals) = stash(&mut scratch, k, all);
                    let wf = WriteFlags(flags & put_flags::ENGINE & !put_flags::CURRENT);
                    let r = w.put_multiple(db, k, vals, size, wf);
                    let n = t.note(r)?;
                    // SAFETY: as above.
                    unsafe { (*data.add(1)).mv_size = n };
                    if n > 0 && size > 0 {
                        let last = &vals[(count - 1) * size..];
                        let w = t.write()?;
                        let _ = st.get(&*w, CursorOp::GetBoth(k, last));
                    }
                    return Ok(());
                }
                check_sizes(k, d.mv_size, dflags)?;
                let wf = WriteFlags(flags & put_flags::ENGINE);
                if flags & put_flags::RESERVE != 0 {
                    let (k, _) = stash(&mut scratch, k, &[]);
                    let r = if dflags & db_flags::DUPSORT != 0 {
                        // As `mdb_put`: only an existing key is answered.
                        if !answer_existing(w, db, k, flags, d) {
                            return Err(EINVAL);
                        }
                        Err(mdb::ErrorKind::KeyExist.into())
                    } else {
                        let wf = WriteFlags(wf.0 & !put_flags::CURRENT);
                        let r = w.reserve(db, k, d.mv_size, wf).map(|b| b.as_mut_ptr());
                        if failed_with(&r, mdb::ErrorKind::KeyExist) {
                            answer_existing(w, db, k, flags, d);
                        }
                        r
                    };
                    // On the new item, or on the existing one (as LMDB).
                    if r.is_ok() || failed_with(&r, mdb::ErrorKind::KeyExist) {
                        let _ = st.get(&*w, CursorOp::SetKey(k));
                    }
                    d.mv_data = t.note(r)?.cast();
                    return Ok(());
                }
                // SAFETY: the caller's data.
                let (k, v) = stash(&mut scratch, k, unsafe { bytes(d) });
                let r = w.cursor_put(st, k, v, wf);
                if failed_with(&r, mdb::ErrorKind::KeyExist) {
                    answer_existing(w, db, k, flags, d);
                }
                t.note(r)
            })();
            t.scratch = scratch;
            r
        })())
    })
}

/// `mdb_cursor_del`.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_del(cursor: *mut MDB_cursor, flags: c_uint) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: cursor per the lmdb.h contract.
            let (cur, t) = unsafe { bound(cursor)? };
            let st = cur.st.as_mut().ok_or(EINVAL)?;
            let w = t.write()?;
            let r = w.cursor_del(st, flags & put_flags::NODUPDATA != 0);
            if failed_with(&r, mdb::ErrorKind::Incompatible) {
                // A named database's record: LMDB fails the txn, as `mdb_del`.
                t.broken = true;
            }
            t.note(r)
        })())
    })
}

/// `mdb_cursor_count`.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_count(cursor: *mut MDB_cursor, countp: *mut usize) -> c_int {
    guard(move || {
        code((|| {
            // SAFETY: cursor per the lmdb.h contract.
            let (cur, t) = unsafe { bound(cursor)? };
            if countp.is_null() {
                return Err(EINVAL);
            }
            let st = cur.st.as_mut().ok_or(EINVAL)?;
            let n = match t.view()? {
                View::Ro(r) => st.count(r),
                View::Rw(w) => st.count(&*w),
            }
            .map_err(|e| e.code())?;
            // SAFETY: checked non-NULL.
            unsafe { *countp = n as usize };
            Ok(())
        })())
    })
}
