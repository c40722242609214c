//! Page hashes and the incremental backup file.
//!
//! LMDB 0.9 pages carry no transaction id, so an incremental backup finds
//! the pages that changed by hashing every page of the snapshot and
//! comparing with the hashes recorded at the previous backup (as
//! rsync-style tools do). The hash only detects change (64 bits, not a
//! cryptographic hash); each backup file is also covered by a CRC32C in
//! the manifest.
//!
//! An incremental file (`NNNNNN-incr.pages`): a 40-byte header (magic
//! `MDBINC01`, page size u32, 0 u32, txnid u64, pages of the data file u64,
//! count of pages carried u64, all little-endian), the two meta pages, then
//! `count` times a page number (u64) and the page.

use super::out::{Fault, SeamFile, TmpPath};
use super::BackupError;
use crate::format::meta::Meta;
use std::io::{Read, Write};
use std::path::Path;

pub(super) const MAGIC: &[u8; 8] = b"MDBINC01";
pub(super) const HEADER: usize = 40;

/// A stable 64-bit hash of a page: word-wise multiply-xorshift (the same
/// on every build and version; `std`'s hasher promises neither).
pub(super) fn page_hash(b: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h: u64 = 0x6A09_E667_F3BC_C908 ^ b.len() as u64;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes(w.try_into().unwrap());
        h = (h ^ v).wrapping_mul(K);
        h ^= h >> 29;
    }
    for &x in words.remainder() {
        h = (h ^ x as u64).wrapping_mul(K);
    }
    h ^= h >> 32;
    h = h.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    h ^ (h >> 32)
}

/// A writer that keeps the CRC32C and length of what passes through.
pub(super) struct Crc<W> {
    pub(super) inner: W,
    pub(super) crc: u32,
    pub(super) len: u64,
}

impl Crc<std::io::BufWriter<SeamFile>> {
    /// Create `.NAME.tmp` in `dest`, written through the seam and a CRC;
    /// returns it with the temporary path (renamed to `NAME` once
    /// complete, removed if dropped before).
    pub(super) fn create_tmp(
        dest: &Path,
        name: &str,
        fault: &Fault,
    ) -> Result<(Self, TmpPath), BackupError> {
        let tmp = TmpPath::new(dest.join(format!(".{name}.tmp")));
        let file = SeamFile::open(tmp.path(), true, fault.clone())
            .map_err(|e| BackupError::io(tmp.path(), e))?;
        let out = Crc {
            inner: std::io::BufWriter::with_capacity(1 << 20, file),
            crc: 0,
            len: 0,
        };
        Ok((out, tmp))
    }
}

impl<W: Write> Write for Crc<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(b)?;
        self.crc = crc32c::crc32c_append(self.crc, &b[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The header of an incremental file.
#[derive(Debug, Clone, Copy)]
pub(super) struct IncrHeader {
    pub(super) page_size: u32,
    pub(super) txnid: u64,
    pub(super) pages: u64,
    pub(super) count: u64,
}

impl IncrHeader {
    pub(super) fn encode(&self) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&self.page_size.to_le_bytes());
        h[16..24].copy_from_slice(&self.txnid.to_le_bytes());
        h[24..32].copy_from_slice(&self.pages.to_le_bytes());
        h[32..40].copy_from_slice(&self.count.to_le_bytes());
        h
    }

    pub(super) fn decode(h: &[u8; HEADER], path: &Path) -> Result<IncrHeader, BackupError> {
        if &h[..8] != MAGIC {
            return Err(BackupError::bad(path, "not an incremental backup file"));
        }
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap());
        Ok(IncrHeader {
            page_size: u32::from_le_bytes(h[8..12].try_into().unwrap()),
            txnid: u64_at(16),
            pages: u64_at(24),
            count: u64_at(32),
        })
    }
}

/// CRC32C and length of the file at `path`, read through once.
pub(super) fn file_crc(path: &Path) -> Result<(u32, u64), BackupError> {
    let mut f = std::fs::File::open(path).map_err(|e| BackupError::io(path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut crc, mut len) = (0u32, 0u64);
    loop {
        let n = f.read(&mut buf).map_err(|e| BackupError::io(path, e))?;
        if n == 0 {
            return Ok((crc, len));
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        len += n as u64;
    }
}

/// Read the hashes file: one u64 per page.
pub(super) fn read_hashes(path: &Path, crc: u32) -> Result<Vec<u64>, BackupError> {
    let b = std::fs::read(path).map_err(|e| BackupError::io(path, e))?;
    if crc32c::crc32c(&b) != crc || b.len() % 8 != 0 {
        return Err(BackupError::bad(
            path,
            "page hashes damaged (CRC mismatch): take a full backup",
        ));
    }
    Ok(b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

/// CRC32C of what identifies a snapshot in its meta: both trees' records,
/// the last page and the txnid (not the map size or address, which a
/// reopen may change).
pub(super) fn meta_crc32c(m: &Meta) -> u32 {
    let mut c = crc32c::crc32c(&m.free.encode());
    c = crc32c::crc32c_append(c, &m.main.encode());
    c = crc32c::crc32c_append(c, &m.last_pgno.to_le_bytes());
    crc32c::crc32c_append(c, &m.txnid.to_le_bytes())
}

/// The hashes as bytes, for `hashes.bin`.
pub(super) fn hashes_bytes(h: &[u64]) -> Vec<u8> {
    h.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_hash_is_stable_and_sees_one_bit() {
        let mut p = vec![0u8; 4096];
        // Pinned: backups written by one version are read by the next.
        assert_eq!(page_hash(&p), 0x93c9_67db_9748_8b62);
        assert_eq!(page_hash(b"abc"), 0xafd1_5e02_1e16_c449);
        let h0 = page_hash(&p);
        for bit in [0usize, 7, 4095 * 8 + 7, 2048 * 8 + 3] {
            p[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(page_hash(&p), h0, "bit {bit}");
            p[bit / 8] ^= 1 << (bit % 8);
        }
        assert_eq!(page_hash(b"abc"), page_hash(b"abc"));
        assert_ne!(page_hash(b"abc"), page_hash(b"abd"));
    }

    #[test]
    fn header_round_trips() {
        let h = IncrHeader {
            page_size: 4096,
            txnid: 77,
            pages: 1234,
            count: 9,
        };
        let d = IncrHeader::decode(&h.encode(), Path::new("x")).unwrap();
        assert_eq!(
            (d.page_size, d.txnid, d.pages, d.count),
            (4096, 77, 1234, 9)
        );
        assert!(IncrHeader::decode(&[0u8; HEADER], Path::new("x")).is_err());
    }
}
