//! Free-database records (lmdb-format.md §8): the key is the id of the
//! transaction that freed the pages (8 bytes, native order), the value a
//! page-number list: a `u64` count, then that many `u64` page numbers,
//! maybe followed by slack. A list past a node's room lives in an overflow
//! run.

use crate::error::{ErrorKind, Result};
use crate::format::page::{node_max, ov_pages, rd64, wr64, HDR, NODE_HDR};

/// Bytes of a record value listing `n` pages (no slack).
#[inline]
pub const fn record_len(n: usize) -> usize {
    8 * (n + 1)
}

/// Page numbers a record value of `len` bytes has room for.
#[inline]
pub fn capacity(len: usize) -> usize {
    (len / 8).saturating_sub(1)
}

/// Page numbers a record value held in an overflow run of `pages` pages
/// (of `psize` bytes) has room for.
#[inline]
pub fn run_capacity(psize: usize, pages: usize) -> usize {
    ((pages * psize).saturating_sub(HDR) / 8).saturating_sub(1)
}

/// Whether a record listing `n` pages fits inline in a leaf node (key
/// included); otherwise it takes [`run_pages`] overflow pages.
#[inline]
pub fn fits_node(psize: usize, n: usize) -> bool {
    NODE_HDR + 8 + record_len(n) <= node_max(psize)
}

/// Pages of the overflow run a record listing `n` pages takes.
#[inline]
pub fn run_pages(psize: usize, n: usize) -> usize {
    ov_pages(psize, record_len(n))
}

/// The key of the record of transaction `txnid`.
#[inline]
pub fn key(txnid: u64) -> [u8; 8] {
    txnid.to_le_bytes()
}

/// The transaction id a record key names; `Corrupted` unless it is 8 bytes.
#[inline]
pub fn decode_key(k: &[u8]) -> Result<u64> {
    match k.first_chunk::<8>() {
        Some(b) if k.len() == 8 => Ok(u64::from_le_bytes(*b)),
        _ => Err(ErrorKind::Corrupted.into()),
    }
}

/// Write the list `ids` into the record value `v` (at least
/// [`record_len`]`(ids.len())` bytes).
pub fn encode(v: &mut [u8], ids: &[u64]) {
    wr64(v, 0, ids.len() as u64);
    for (i, &p) in ids.iter().enumerate() {
        wr64(v, 8 + 8 * i, p);
    }
}

/// The count of the record value `v`: `Corrupted` if `v` holds no count or
/// fewer page numbers than it says.
pub fn count(v: &[u8]) -> Result<usize> {
    if v.len() < 8 {
        return Err(ErrorKind::Corrupted.into());
    }
    let n = rd64(v, 0) as usize;
    if n > (v.len() - 8) / 8 {
        return Err(ErrorKind::Corrupted.into());
    }
    Ok(n)
}

/// The page numbers the record value `v` lists (unjudged: order and range
/// are the caller's to check).
pub fn decode(v: &[u8]) -> Result<Vec<u64>> {
    let n = count(v)?;
    Ok((0..n).map(|i| rd64(v, 8 + 8 * i)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bounds() {
        let ids = [9u64, 7, 3];
        let mut v = vec![0u8; record_len(ids.len()) + 8]; // with slack
        encode(&mut v, &ids);
        assert_eq!(count(&v).unwrap(), 3);
        assert_eq!(decode(&v).unwrap(), ids);
        assert_eq!(capacity(v.len()), 4);
        v[0] = 5; // more than the value holds
        assert!(decode(&v).is_err());
        assert!(count(&v[..7]).is_err());
        assert_eq!(decode_key(&key(42)).unwrap(), 42);
        assert!(decode_key(&[0; 7]).is_err());
        assert_eq!(run_capacity(4096, 1), 509);
        assert!(fits_node(4096, 200) && !fits_node(4096, 300));
        assert_eq!(run_pages(4096, 509), 1);
        assert_eq!(run_pages(4096, 510), 2);
    }
}
