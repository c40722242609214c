//! What `mdb_put` and `mdb_cursor_put` share: argument checks, copies of
//! arguments that may point into the pages a put changes, and LMDB's
//! answer of the existing value under `MDB_NOOVERWRITE`.

use crate::types::*;
use mdb::Txn;
use std::os::raw::{c_int, c_uint};

/// Copy `key` and `val` into `scratch` (they may point into pages the write
/// is about to change) and return the copies.
#[inline]
pub(crate) fn stash<'s>(scratch: &'s mut Vec<u8>, key: &[u8], val: &[u8]) -> (&'s [u8], &'s [u8]) {
    let n = key.len() + val.len();
    if scratch.len() < n {
        scratch.resize(n, 0);
    }
    let (k, rest) = scratch.split_at_mut(key.len());
    copy_small(k, key);
    let v = &mut rest[..val.len()];
    copy_small(v, val);
    (k, v)
}

/// `dst.copy_from_slice(src)`, with the sizes of back-mdb's index keys
/// and ids (4 and 8 bytes) as fixed-size copies, not `memcpy` calls.
#[inline(always)]
fn copy_small(dst: &mut [u8], src: &[u8]) {
    if let (Ok(d), Ok(s)) = (
        <&mut [u8; 8]>::try_from(&mut *dst),
        <&[u8; 8]>::try_from(src),
    ) {
        *d = *s;
    } else if let (Ok(d), Ok(s)) = (
        <&mut [u8; 4]>::try_from(&mut *dst),
        <&[u8; 4]>::try_from(src),
    ) {
        *d = *s;
    } else {
        dst.copy_from_slice(src);
    }
}

/// Whether `db` is DUPSORT in `w`.
pub(crate) fn db_flags(w: &mdb::RwTxn<'static>, db: mdb::Database) -> Result<u32, c_int> {
    w.db_flags(db)
        .map(|f| f.bits() as u32)
        .map_err(|e| e.code())
}

/// Size checks of a put (§9): key 1..=511, DUPSORT data ≤ 511, data ≤ 4 GiB.
pub(crate) fn check_sizes(key: &[u8], val_len: usize, flags: u32) -> Result<(), c_int> {
    if key.is_empty() || key.len() > MAX_KEY {
        return Err(MDB_BAD_VALSIZE);
    }
    if (flags & db_flags::DUPSORT != 0 && val_len > MAX_KEY) || val_len > u32::MAX as usize {
        return Err(MDB_BAD_VALSIZE);
    }
    Ok(())
}

/// After `MDB_KEYEXIST` from `MDB_NOOVERWRITE`, LMDB hands back the
/// existing value (a DUPSORT key's first) in `data`, with `MDB_RESERVE`
/// too (OpenLDAP's slapadd reads it so). Whether `flags` asked for it and
/// `key` is there.
pub(crate) fn answer_existing(
    w: &mdb::RwTxn<'static>,
    db: mdb::Database,
    key: &[u8],
    flags: c_uint,
    data: &mut MDB_val,
) -> bool {
    if flags & put_flags::NOOVERWRITE == 0 {
        return false;
    }
    match w.get(db, key) {
        Ok(Some(old)) => {
            // SAFETY: a valid MDB_val (a reference).
            unsafe { set_val(data, old) };
            true
        }
        _ => false,
    }
}
