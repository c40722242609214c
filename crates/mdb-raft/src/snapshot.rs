//! Snapshots: hot copies of the data environment (`Env::copy_to_path`,
//! the copy `mdb copy` and `mdb backup` make: one read transaction's
//! snapshot, compacted, a plain LMDB file). The last applied log id and
//! the membership travel inside the copy, in its reserved database, and
//! are read back from it; `meta.json` beside it only caches them.
//!
//! `<dir>/snapshots/snap-<index>-<seq>/` holds one snapshot (`data.mdb`,
//! then `meta.json`, written last), renamed into place from a `.tmp`
//! directory once synced; the one with the highest index is current, the
//! older ones are removed when a newer one is complete. A snapshot being
//! received from the leader is written to `incoming-<seq>.tmp/data.mdb`.

use crate::data::{applied_in, membership_in, DataEnv, RESERVED_DB};
use crate::types::{LogId, Member, NodeId};
use mdb::{EnvFlags, EnvOptions, Txn};
use openraft::{SnapshotMeta, StoredMembership};
use std::fs::File;
use std::io::{Error as IoError, ErrorKind as IoKind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Snapshot metadata of this configuration.
pub type Meta = SnapshotMeta<NodeId, Member>;

const META: &str = "meta.json";
const DATA: &str = "data.mdb";

/// The directory of a node's snapshots.
pub struct SnapshotStore {
    dir: PathBuf,
    max_dbs: u32,
    seq: AtomicU64,
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The last applied id and membership recorded in the LMDB data file of
/// directory `dir` (a snapshot's copy), read only (the lock file it makes is removed with it).
pub fn read_meta_of_copy(
    dir: &Path,
    max_dbs: u32,
) -> mdb::Result<(Option<LogId>, StoredMembership<NodeId, Member>)> {
    let env = EnvOptions::new()
        .max_dbs(max_dbs + 1)
        .flags(EnvFlags::READ_ONLY)
        .open(dir)?;
    let r = env.read_txn()?;
    let reserved = r.open_db(RESERVED_DB)?;
    Ok((applied_in(&r, reserved)?, membership_in(&r, reserved)?))
}

impl SnapshotStore {
    /// Open (or create) `<node_dir>/snapshots`, dropping unfinished ones.
    pub fn open(node_dir: &Path, max_dbs: u32) -> std::io::Result<SnapshotStore> {
        let dir = node_dir.join("snapshots");
        std::fs::create_dir_all(&dir)?;
        let mut seq = 0;
        for e in std::fs::read_dir(&dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") {
                std::fs::remove_dir_all(e.path())?;
            } else if let Some(s) = name.rsplit('-').next().and_then(|s| s.parse().ok()) {
                seq = seq.max(s);
            }
        }
        Ok(SnapshotStore {
            dir,
            max_dbs,
            seq: AtomicU64::new(seq + 1),
        })
    }

    fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// The complete snapshots, oldest first: (name, directory).
    fn complete(&self) -> std::io::Result<Vec<(String, PathBuf)>> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(&self.dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("snap-") && !name.ends_with(".tmp") {
                v.push((name, e.path()));
            }
        }
        // Names sort by index, then by sequence (both zero-padded).
        v.sort();
        Ok(v)
    }

    /// The current snapshot: its metadata and data file.
    pub fn current(&self) -> std::io::Result<Option<(Meta, PathBuf)>> {
        let Some((_, dir)) = self.complete()?.pop() else {
            return Ok(None);
        };
        let meta: Meta = serde_json::from_slice(&std::fs::read(dir.join(META))?)
            .map_err(|e| IoError::new(IoKind::InvalidData, e))?;
        Ok(Some((meta, dir.join(DATA))))
    }

    /// Make `tmp` (holding `data.mdb`, synced) a complete snapshot with
    /// `meta`, and remove the older ones.
    fn finish(&self, tmp: &Path, meta: &Meta) -> std::io::Result<PathBuf> {
        let bytes = serde_json::to_vec(meta).map_err(IoError::other)?;
        let m = tmp.join(META);
        std::fs::write(&m, bytes)?;
        File::open(&m)?.sync_all()?;
        sync_dir(tmp)?;
        let index = meta.last_log_id.map_or(0, |l| l.index);
        let dir = self
            .dir
            .join(format!("snap-{index:020}-{:010}", self.next_seq()));
        std::fs::rename(tmp, &dir)?;
        sync_dir(&self.dir)?;
        // Keep only the newest: a leader still sending an older one reads
        // it through its open file.
        let all = self.complete()?;
        for (_, old) in &all[..all.len().saturating_sub(1)] {
            std::fs::remove_dir_all(old)?;
        }
        Ok(dir.join(DATA))
    }

    /// Build a snapshot of `data`: sync it (so that after a power cut it
    /// is never behind its snapshot, whose log may be purged), copy it
    /// compacted, and read the applied id and membership back from the
    /// copy. Returns the new current snapshot.
    pub fn build(&self, data: &DataEnv) -> mdb::Result<(Meta, PathBuf)> {
        let tmp = self.dir.join(format!("build-{}.tmp", self.next_seq()));
        std::fs::create_dir(&tmp)?;
        data.with(|d| {
            d.env.sync(true)?;
            d.env.copy_to_path(&tmp, true)
        })?;
        let (last_log_id, last_membership) = read_meta_of_copy(&tmp, self.max_dbs)?;
        let meta = Meta {
            last_log_id,
            last_membership,
            snapshot_id: format!(
                "{}-{}",
                last_log_id.map_or(0, |l| l.index),
                self.seq.load(Ordering::Relaxed)
            ),
        };
        let file = self.finish(&tmp, &meta)?;
        data.built.fetch_add(1, Ordering::Relaxed);
        Ok((meta, file))
    }

    /// A new file for a snapshot the leader sends.
    pub fn incoming(&self) -> std::io::Result<PathBuf> {
        let tmp = self.dir.join(format!("incoming-{}.tmp", self.next_seq()));
        std::fs::create_dir(&tmp)?;
        Ok(tmp.join(DATA))
    }

    /// Make a received snapshot (its data file `file`, written and
    /// synced) the current one, after checking that the copy records the
    /// applied id the leader says it does. Returns its data file.
    pub fn accept(&self, file: &Path, meta: &Meta) -> std::io::Result<PathBuf> {
        let tmp = file
            .parent()
            .ok_or_else(|| IoError::other("no directory"))?;
        let (applied, _) = read_meta_of_copy(tmp, self.max_dbs).map_err(IoError::other)?;
        if applied != meta.last_log_id {
            let msg = format!(
                "the snapshot's file records {applied:?} applied, its metadata {:?}",
                meta.last_log_id
            );
            return Err(IoError::new(IoKind::InvalidData, msg));
        }
        self.finish(tmp, meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdb::{Database, WriteFlags};

    #[test]
    fn build_reads_the_applied_id_back_from_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataEnv::open(dir.path(), 4).unwrap();
        let store = SnapshotStore::open(dir.path(), 4).unwrap();
        data.with(|d| {
            let mut w = d.env.write_txn()?;
            w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
            w.commit()
        })
        .unwrap();
        let (meta, file) = store.build(&data).unwrap();
        assert_eq!(meta.last_log_id, None);
        assert!(file.exists());
    }
}
