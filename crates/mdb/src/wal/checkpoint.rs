//! The checkpoint file, `checkpoint` in the log directory: how far the data
//! file is known to be synced, and that transaction's meta update (so
//! recovery can rewrite the meta pages). Two fixed slots written in turn,
//! each checksummed: a torn write of one leaves the other.
//!
//! Slot layout (little-endian, [`SLOT`] bytes): magic `u32`, version `u16`,
//! a zero `u16`, seq `u64` (one more per write), txnid `u64`, meta length
//! `u32`, CRC32C of the slot with this field zeroed `u32`, the log's
//! identity `u64` (version 2), then the meta bytes and zeros.
//!
//! The identity ties the log to its data file, which carries the same
//! one (`wal/tie.rs`); a version 1 slot (no identity) reads as 0, as does
//! a data file that carries none.

use super::seam::{sync_dir, Seam};
use crate::error::{ErrorKind, Result};
use crate::format::bytes::{get16, get32, get64, sub};
use crate::io::{FaultInjector, IoOp};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// "MDWC": marks a checkpoint slot.
const MAGIC: u32 = 0x4357_444d;
const VERSION: u16 = 2;
/// Bytes of one slot.
pub(crate) const SLOT: usize = 512;
/// Bytes before a slot's meta (version 1: 32, without the identity).
const FIXED: usize = 40;
/// The longest meta update a slot holds.
pub(crate) const MAX_META: usize = SLOT - FIXED;
const CRC_OFF: usize = 28;
pub(crate) const FILE_NAME: &str = "checkpoint";

/// A checkpoint read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckpointState {
    /// Writes so far, this one included.
    pub(crate) seq: u64,
    /// The data file holds every transaction up to this one.
    pub(crate) txnid: u64,
    /// That transaction's meta update.
    pub(crate) meta: Vec<u8>,
    /// The identity of the log (0: none, written before there was one).
    pub(crate) ident: u64,
}

/// The checkpoint file of a log directory.
pub(crate) struct Checkpoint {
    file: File,
    seam: Seam,
    /// Seq of the newest valid slot (0: none).
    last_seq: u64,
    /// The identity the next write records: the newest slot's.
    ident: u64,
}

fn slot_crc(slot: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&slot[..CRC_OFF]);
    let crc = crc32c::crc32c_append(crc, &[0; 4]);
    crc32c::crc32c_append(crc, &slot[CRC_OFF + 4..])
}

fn parse_slot(slot: &[u8]) -> Option<CheckpointState> {
    let (fixed, ident) = match get16(slot, 4)? {
        1 => (32, 0),
        VERSION => (FIXED, get64(slot, 32)?),
        _ => return None,
    };
    if slot.len() != SLOT || get32(slot, 0)? != MAGIC || get32(slot, CRC_OFF)? != slot_crc(slot) {
        return None;
    }
    let len = get32(slot, 24)? as usize;
    Some(CheckpointState {
        seq: get64(slot, 8)?,
        txnid: get64(slot, 16)?,
        meta: sub(slot, fixed, len)?.to_vec(),
        ident,
    })
}

impl Checkpoint {
    /// Open the checkpoint file in `dir` (which must exist), creating it
    /// with two empty slots, synced, if missing or cut short by a crash.
    /// Writes record `ident` until a slot names another.
    pub(crate) fn open(
        dir: &Path,
        ident: u64,
        fault: Option<Arc<dyn FaultInjector>>,
    ) -> Result<Checkpoint> {
        let seam = Seam(fault);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(FILE_NAME))?;
        if file.metadata()?.len() < 2 * SLOT as u64 {
            // Nothing was ever written to a slot of a short file.
            let op = IoOp::CheckpointWrite {
                offset: 0,
                len: 2 * SLOT,
            };
            seam.write_at(op, &file, &[0; 2 * SLOT], 0)?;
            seam.check(IoOp::CheckpointSync)?;
            file.sync_all()?;
            sync_dir(dir)?;
        }
        let mut cp = Checkpoint {
            file,
            seam,
            last_seq: 0,
            ident,
        };
        cp.refresh()?;
        Ok(cp)
    }

    /// The valid slot with the highest seq; `None` if neither is valid (no
    /// checkpoint was ever written).
    pub(crate) fn read(&self) -> Result<Option<CheckpointState>> {
        read_file(&self.file)
    }

    /// [`Checkpoint::read`], also taking note of the newest seq (another
    /// process may have written one): the next write goes after it.
    pub(crate) fn refresh(&mut self) -> Result<Option<CheckpointState>> {
        let s = self.read()?;
        self.last_seq = s.as_ref().map_or(0, |s| s.seq);
        if let Some(s) = &s {
            self.ident = s.ident;
        }
        Ok(s)
    }

    /// Seq of the newest slot as last read or written.
    pub(crate) fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The identity the next write records.
    pub(crate) fn ident(&self) -> u64 {
        self.ident
    }

    /// Record `ident` as the log's identity from the next write on.
    pub(crate) fn set_ident(&mut self, ident: u64) {
        self.ident = ident;
    }

    /// Record that the data file holds everything up to `txnid`, with that
    /// transaction's `meta` update: write the older slot, then fdatasync.
    pub(crate) fn write(&mut self, txnid: u64, meta: &[u8]) -> Result<()> {
        if meta.len() > MAX_META {
            return Err(ErrorKind::Os(libc::EINVAL).into());
        }
        let seq = self.last_seq + 1;
        let mut slot = [0u8; SLOT];
        slot[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        slot[4..6].copy_from_slice(&VERSION.to_le_bytes());
        slot[8..16].copy_from_slice(&seq.to_le_bytes());
        slot[16..24].copy_from_slice(&txnid.to_le_bytes());
        slot[24..28].copy_from_slice(&(meta.len() as u32).to_le_bytes());
        slot[32..40].copy_from_slice(&self.ident.to_le_bytes());
        slot[FIXED..FIXED + meta.len()].copy_from_slice(meta);
        let crc = slot_crc(&slot);
        slot[CRC_OFF..CRC_OFF + 4].copy_from_slice(&crc.to_le_bytes());
        let offset = (seq % 2) * SLOT as u64;
        let op = IoOp::CheckpointWrite { offset, len: SLOT };
        self.seam.write_at(op, &self.file, &slot, offset)?;
        self.seam.sync(IoOp::CheckpointSync, &self.file)?;
        self.last_seq = seq;
        Ok(())
    }
}

/// The newest valid slot of a checkpoint file (see [`Checkpoint::read`]).
fn read_file(file: &File) -> Result<Option<CheckpointState>> {
    let mut b = [0u8; 2 * SLOT];
    file.read_exact_at(&mut b, 0)?;
    let a = parse_slot(&b[..SLOT]);
    let c = parse_slot(&b[SLOT..]);
    Ok(match (a, c) {
        (Some(a), Some(c)) => Some(if a.seq >= c.seq { a } else { c }),
        (a, c) => a.or(c),
    })
}

/// The checkpoint of the log in `dir`, read without creating or changing
/// anything: `None` when there is no valid one (no file, or no slot ever
/// written).
pub(crate) fn peek(dir: &Path) -> Result<Option<CheckpointState>> {
    let file = match File::open(dir.join(FILE_NAME)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if file.metadata()?.len() < 2 * SLOT as u64 {
        return Ok(None);
    }
    read_file(&file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::IoAction;
    use crate::wal::testutil::Script;

    #[test]
    fn slots_alternate_and_the_newest_wins() {
        let dir = tempfile::tempdir().unwrap();
        let mut cp = Checkpoint::open(dir.path(), 7, None).unwrap();
        assert_eq!(cp.read().unwrap(), None);
        for t in 1..=5u64 {
            cp.write(t * 10, &[t as u8; 120]).unwrap();
        }
        let want = CheckpointState {
            seq: 5,
            txnid: 50,
            meta: vec![5; 120],
            ident: 7,
        };
        assert_eq!(cp.read().unwrap(), Some(want.clone()));
        drop(cp);
        let mut cp = Checkpoint::open(dir.path(), 7, None).unwrap();
        assert_eq!(cp.read().unwrap(), Some(want));
        cp.write(60, &[]).unwrap();
        assert_eq!(cp.read().unwrap().map(|s| (s.seq, s.txnid)), Some((6, 60)));
        assert_eq!(
            std::fs::metadata(dir.path().join(FILE_NAME)).unwrap().len(),
            1024
        );
        assert_eq!(
            cp.write(1, &[0; MAX_META + 1]).map_err(|e| e.kind()),
            Err(ErrorKind::Os(libc::EINVAL))
        );
        cp.write(70, &[9; MAX_META]).unwrap();
        assert_eq!(cp.read().unwrap().unwrap().meta, vec![9; MAX_META]);
    }

    #[test]
    fn a_torn_slot_leaves_the_other() {
        for tear in [0, 1, 31, 100, SLOT - 1] {
            let dir = tempfile::tempdir().unwrap();
            let script = Script::new(|_| IoAction::Proceed);
            let mut cp = Checkpoint::open(dir.path(), 7, Some(script.clone())).unwrap();
            // Full-length metas differing in every byte: any tear shows.
            cp.write(1, &[1; MAX_META]).unwrap();
            cp.write(2, b"two").unwrap();
            script.set(move |op| match op {
                IoOp::CheckpointWrite { .. } => IoAction::Tear(tear),
                _ => IoAction::Proceed,
            });
            assert_eq!(
                cp.write(3, &[3; MAX_META]).map_err(|e| e.kind()),
                Err(ErrorKind::Os(libc::EIO))
            );
            let cp2 = Checkpoint::open(dir.path(), 7, None).unwrap();
            let got = cp2.read().unwrap().unwrap();
            assert_eq!((got.txnid, &got.meta[..]), (2, &b"two"[..]), "tear {tear}");
            // A retry goes to the same slot.
            script.set(|_| IoAction::Proceed);
            cp.write(3, &[3; MAX_META]).unwrap();
            let got = Checkpoint::open(dir.path(), 7, None)
                .unwrap()
                .read()
                .unwrap();
            assert_eq!(got.map(|s| (s.seq, s.txnid)), Some((3, 3)));
        }
    }

    #[test]
    fn a_failed_sync_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let script = Script::new(|op| match op {
            IoOp::CheckpointSync => IoAction::Fail(libc::EIO),
            _ => IoAction::Proceed,
        });
        assert_eq!(
            Checkpoint::open(dir.path(), 7, Some(script.clone()))
                .err()
                .map(|e| e.kind()),
            Some(ErrorKind::Os(libc::EIO))
        );
        script.set(|_| IoAction::Proceed);
        let mut cp = Checkpoint::open(dir.path(), 7, Some(script.clone())).unwrap();
        script.set(|op| match op {
            IoOp::CheckpointSync => IoAction::Fail(libc::EIO),
            _ => IoAction::Proceed,
        });
        assert_eq!(
            cp.write(1, b"x").map_err(|e| e.kind()),
            Err(ErrorKind::Os(libc::EIO))
        );
    }

    #[test]
    fn garbage_slots_read_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut rnd = crate::format::xorshift(77);
        let junk: Vec<u8> = (0..2 * SLOT).map(|_| rnd() as u8).collect();
        std::fs::write(dir.path().join(FILE_NAME), junk).unwrap();
        let cp = Checkpoint::open(dir.path(), 7, None).unwrap();
        assert_eq!(cp.read().unwrap(), None);
    }
}
