//! The log's records read straight from its segment files, for backups
//! (from any process, with no log state of its own), and the hold a
//! backup chain puts on the log: segments holding records past the hold's
//! transaction are not recycled by checkpoints, so that the next backup
//! can archive them.

use super::log::walk;
use super::record::RecordView;
use super::segment::{self, Anchor, SegHeader, SEG_HEADER};
use crate::error::{Error, Result};
use std::path::Path;

/// The hold file's name in the log directory.
pub(crate) const HOLD: &str = "archive-hold";

/// The transaction the newest backup archived the log up to, if a backup
/// chain holds the log (`dir/archive-hold`).
pub(crate) fn hold(dir: &Path) -> Option<u64> {
    std::fs::read_to_string(dir.join(HOLD))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Hold the log at `txnid` (records past it are kept until archived).
pub(crate) fn set_hold(dir: &Path, txnid: u64) -> Result<()> {
    let tmp = dir.join(format!("{HOLD}.tmp"));
    std::fs::write(&tmp, format!("{txnid}\n"))?;
    std::fs::rename(&tmp, dir.join(HOLD))?;
    Ok(())
}

/// Visit, in order, the records of the log in `dir` with txnids in
/// `after + 1..=upto`, as far as the segment files hold them (a segment
/// recycled or being written is read as far as its records chain).
pub(crate) fn records_between(
    dir: &Path,
    after: u64,
    upto: u64,
    mut f: impl FnMut(RecordView<'_>) -> Result<()>,
) -> Result<()> {
    let mut seqs: Vec<u64> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| segment::parse_name(&e.file_name().to_string_lossy()))
        .collect();
    seqs.sort_unstable();
    for seq in seqs {
        let bytes = match std::fs::read(segment::path(dir, seq)) {
            Ok(b) => b,
            // Retired meanwhile: its records were checkpointed and not held.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::from(e)),
        };
        let Some(h) = bytes.get(..SEG_HEADER).and_then(SegHeader::parse) else {
            continue;
        };
        let chain = match h.anchor {
            Anchor::After(c) if h.seq == seq => c,
            _ => continue,
        };
        walk(&bytes, seq, chain, |r| {
            if r.txnid() > after && r.txnid() <= upto {
                f(r)
            } else {
                Ok(())
            }
        })?;
    }
    Ok(())
}
