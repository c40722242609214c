//! Which log belongs to which data file.
//!
//! A log is tied to its data file by an identity, a random `u64` recorded
//! in both: in the log's checkpoint file (every slot, `checkpoint.rs`) and
//! in the data file's two meta pages, past the part LMDB reads and writes
//! (offset [`IDENT_OFF`] of each meta page: magic `u32`, CRC32C of the
//! identity `u32`, the identity `u64`). LMDB 0.9 never reads those bytes
//! and never rewrites them (a commit rewrites the meta from `mapsize` to
//! `txnid`), so the file stays byte-compatible with Debian's tools; a
//! compacting copy leaves them zero, a plain copy keeps them.
//!
//! A log directory whose checkpoint names another identity (or none,
//! when the data file has one) is not this data file's: the data file was
//! deleted and made again (`rm data.mdb lock.mdb`, as OpenLDAP's scripts
//! clear a database), or swapped. Replaying it would write another file's
//! pages into this one. What becomes of it is decided in `env/wal_open.rs`
//! (`open_wal`): set aside ([`set_aside`]) when the data file does not
//! wait for a log, refused when it does.

use crate::error::Result;
use crate::format::bytes::{get32, get64};
use crate::io::DataFile;
use std::path::{Path, PathBuf};

/// Offset of the identity in each meta page (past LMDB's 152 bytes).
pub(crate) const IDENT_OFF: u64 = 160;
/// "MDWI": marks an identity.
const MAGIC: u32 = 0x4957_444d;
const LEN: usize = 16;

/// A new identity: random, never 0 (the identity of a log made before
/// there were identities).
pub(crate) fn new_ident() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: getrandom writes at most `b.len()` bytes into `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    let mut id = u64::from_le_bytes(b);
    if n != b.len() as isize {
        // No entropy source: time and process make it unique enough here.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        id = t ^ (u64::from(std::process::id()) << 32);
    }
    id.max(1)
}

/// The bytes of identity `id` as they go into a meta page.
pub(crate) fn encode(id: u64) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    b[4..8].copy_from_slice(&crc32c::crc32c(&id.to_le_bytes()).to_le_bytes());
    b[8..16].copy_from_slice(&id.to_le_bytes());
    b
}

fn decode(b: &[u8]) -> Option<u64> {
    let id = get64(b, 8)?;
    (get32(b, 0)? == MAGIC && get32(b, 4)? == crc32c::crc32c(&id.to_le_bytes())).then_some(id)
}

/// The data file's identity, 0 when it carries none (made by LMDB, by a
/// compacting copy, or before identities).
pub(crate) fn read(df: &DataFile, psize: usize) -> Result<u64> {
    for slot in 0..2u64 {
        let mut b = [0u8; LEN];
        df.read_exact_at(&mut b, slot * psize as u64 + IDENT_OFF)?;
        if let Some(id) = decode(&b) {
            return Ok(id);
        }
    }
    Ok(0)
}

/// Record identity `id` in both meta pages, durably.
pub(crate) fn write(df: &DataFile, psize: usize, id: u64) -> Result<()> {
    for slot in 0..2u64 {
        df.write_meta(slot * psize as u64 + IDENT_OFF, &encode(id), false)?;
    }
    df.sync_data()
}

/// Where a log that is not the data file's goes: `<dir>.removing` while
/// it is deleted, or `<dir>.orphan-<identity>[-n]` when it is kept.
fn aside_path(dir: &Path, suffix: &str) -> PathBuf {
    let mut p = dir.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Remove what a crash left of an earlier [`set_aside`].
pub(crate) fn tidy(dir: &Path) -> Result<()> {
    let removing = aside_path(dir, ".removing");
    if removing.exists() {
        std::fs::remove_dir_all(&removing)?;
    }
    Ok(())
}

/// Move the log directory `dir` (identity `id`) out of the way. A log
/// that may hold commits past its checkpoint (`keep`) is renamed to
/// `<dir>.orphan-<id>` (its data file may live elsewhere: moved back
/// beside it, it rolls forward); one whose every record its data file
/// holds is deleted, renamed first so that a crash never leaves part of
/// it under the log's name. Returns where a kept log went.
pub(crate) fn set_aside(dir: &Path, id: u64, keep: bool) -> Result<Option<PathBuf>> {
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = parent.unwrap_or(Path::new("."));
    let to = if keep {
        let mut n = 0;
        loop {
            let suffix = match n {
                0 => format!(".orphan-{id:016x}"),
                n => format!(".orphan-{id:016x}-{n}"),
            };
            let p = aside_path(dir, &suffix);
            if !p.exists() {
                break p;
            }
            n += 1;
        }
    } else {
        tidy(dir)?;
        aside_path(dir, ".removing")
    };
    std::fs::rename(dir, &to)?;
    super::seam::sync_dir(parent)?;
    if keep {
        return Ok(Some(to));
    }
    std::fs::remove_dir_all(&to)?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_round_trip_and_garbage_is_none() {
        for id in [1u64, 0x0123_4567_89ab_cdef, u64::MAX] {
            assert_eq!(decode(&encode(id)), Some(id));
        }
        assert_eq!(decode(&[0u8; LEN]), None);
        let mut b = encode(42);
        b[12] ^= 1;
        assert_eq!(decode(&b), None);
        assert_ne!(new_ident(), 0);
        assert_ne!(new_ident(), new_ident());
    }
}
