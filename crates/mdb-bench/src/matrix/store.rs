//! What every engine of the matrix implements: a store shared by threads,
//! and per-thread handles that run one workload step through the engine's
//! own Rust API (one transaction, batch or snapshot per call).
//!
//! Keys and values are made on the fly from `u64` ids, the same bytes for
//! every engine: a 16-byte key of well-mixed bits (so "random order" means
//! random), and a value of `len` bytes whose first 8 are the id xor a salt
//! (so an overwrite writes different bytes).

use crate::workloads::{key, mix, Res};
use std::path::Path;

/// An open engine in its own directory.
pub trait Store: Sync {
    /// A handle for the calling thread (SQLite: a connection of its own).
    fn handle(&self) -> Res<Box<dyn Handle + '_>>;

    /// Rewrite or trim the files so that free space is returned to the
    /// file system, in the engine's own way (`None`: the engine has none).
    /// Returns the directory whose size counts afterwards (LMDB's compaction
    /// is a compacted copy, written elsewhere).
    fn compact(&mut self, scratch: &Path) -> Res<Option<std::path::PathBuf>>;

    /// Bring the files to rest before their size is measured: mdb's
    /// write-ahead-log mode takes a checkpoint (`Env::checkpoint`), so the
    /// sizes count the data file and the log after a checkpoint, as issue
    /// 30's bound says. Engines without one do nothing.
    fn settle(&mut self) -> Res<()> {
        Ok(())
    }
}

/// One thread's access to a store. Every write call is one durable commit:
/// it returns once what it wrote survives a power cut (the engine's sync
/// setting for that is named in `engines()`).
pub trait Handle {
    /// Insert or overwrite every item of `b` in one durable transaction.
    fn write(&mut self, b: &Batch<'_>) -> Res<()>;
    /// Remove the keys of `ids` (all present) in one durable transaction.
    fn remove(&mut self, ids: &[u64]) -> Res<()>;
    /// Look every key of `ids` up in one snapshot, reading each value
    /// ([`touch`]); the total length of the values found.
    fn get(&mut self, ids: &[u64]) -> Res<u64>;
    /// From each key of `ids`, read `len` items in key order (fewer at the
    /// end), in one snapshot; the number of items read.
    fn ranges(&mut self, ids: &[u64], len: usize) -> Res<u64>;
    /// Read every item in key order; (items, bytes of keys and values).
    fn scan(&mut self) -> Res<(u64, u64)>;
}

/// Items to write: the keys of `ids` with values of `val_len` bytes.
pub struct Batch<'a> {
    pub ids: &'a [u64],
    pub val_len: usize,
    /// Mixed into the value, so overwrites change the bytes.
    pub salt: u64,
}

impl Batch<'_> {
    /// Call `f(key, value)` for every item, in `ids` order.
    #[inline]
    pub fn each(&self, mut f: impl FnMut(&[u8], &[u8]) -> Res<()>) -> Res<()> {
        let mut v = filler(self.val_len);
        for &i in self.ids {
            stamp(&mut v, i ^ self.salt);
            f(&key(i), &v)?;
        }
        Ok(())
    }
}

/// Deterministic filler bytes (not all zero, so compression has some work).
pub fn filler(len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    let mut s = 0x0123_4567_89ab_cdef_u64;
    for chunk in v.chunks_mut(8) {
        s = mix(s);
        // Half the bytes random, half a repeated pattern: values that
        // compress about 2:1, as typical records do.
        let b = s.to_le_bytes();
        for (j, c) in chunk.iter_mut().enumerate() {
            *c = if j < 4 { b[j] } else { b'a' + (j as u8) };
        }
    }
    v
}

/// Put `x` in the first bytes of `v`.
#[inline]
fn stamp(v: &mut [u8], x: u64) {
    let n = v.len().min(8);
    v[..n].copy_from_slice(&x.to_le_bytes()[..n]);
}

/// Read a value as its reader would: one byte of every 4 KiB page it spans
/// (and its last byte), so that engines that hand out a pointer into their
/// map pay the page faults that engines that copy the value pay. Returns
/// its length.
#[inline]
pub fn touch(v: &[u8]) -> u64 {
    let mut x = v.last().copied().unwrap_or(0);
    for i in (0..v.len()).step_by(4096) {
        x ^= v[i];
    }
    std::hint::black_box(x);
    v.len() as u64
}

/// Bytes a directory's files take on disk (allocated blocks, as `du`).
pub fn disk_usage(dir: &Path) -> Res<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let m = e.metadata()?;
        if m.is_dir() {
            total += disk_usage(&e.path())?;
        } else {
            total += m.blocks() * 512;
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_stamp_ids_and_salt() {
        let ids = [3u64, 1];
        let mut seen = Vec::new();
        Batch {
            ids: &ids,
            val_len: 20,
            salt: 0,
        }
        .each(|k, v| {
            seen.push((k.to_vec(), v.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen[0].0, key(3));
        assert_eq!(&seen[0].1[..8], &3u64.to_le_bytes());
        assert_eq!(seen[1].1.len(), 20);
        assert_eq!(seen[0].1[8..], seen[1].1[8..]);
        let mut salted = Vec::new();
        Batch {
            ids: &ids[..1],
            val_len: 4,
            salt: 1,
        }
        .each(|_, v| {
            salted.push(v.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(salted[0], 2u64.to_le_bytes()[..4]);
    }
}
