//! Seeding a new node from an `mdb backup` directory: the backup (a
//! member's data environment, restored locally) becomes the node's data
//! before Raft starts, so the node needs only the log since the backup
//! from the leader, not a snapshot over the network. The leader checks,
//! before it adds the node, that the backup's state is one this cluster
//! had ([`crate::node::Node::add_learner`]).

use crate::data::{applied_in, cluster_in, RESERVED_DB};
use crate::error::{Error, Result};
use crate::types::LogId;
use mdb::{EnvFlags, EnvOptions, RestorePoint, Txn};
use std::fs::File;
use std::path::Path;

/// Where the backup is restored before it becomes `data/`.
const TMP: &str = "seed.tmp";

/// What a seed holds: the last log id applied to it and its cluster id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    /// The last log id the backed-up member had applied.
    pub applied: LogId,
    /// The cluster's id.
    pub cluster_id: String,
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Restore the newest point of the backup directory `backup` as the data
/// environment of the node directory `node_dir`, which must hold no node
/// yet (no `data/`, no `raft/`): `Ok(None)` and nothing done if it does
/// (a node restarted with the same arguments keeps its state). An error
/// if the backup cannot be restored or is not of an mdb-raft node's data
/// (no applied log id or cluster id in [`RESERVED_DB`]).
pub fn seed(node_dir: &Path, backup: &Path, max_dbs: u32) -> Result<Option<Seed>> {
    if node_dir.join("data").exists() || node_dir.join("raft").exists() {
        eprintln!(
            "mdb-raft: {} holds a node already: not seeded from {}",
            node_dir.display(),
            backup.display()
        );
        return Ok(None);
    }
    let err = |e: String| Error::Config(format!("seeding from {}: {e}", backup.display()));
    std::fs::create_dir_all(node_dir).map_err(|e| err(e.to_string()))?;
    let tmp = node_dir.join(TMP);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).map_err(|e| err(e.to_string()))?;
    mdb::restore(backup, &tmp, RestorePoint::Newest, None).map_err(|e| err(e.to_string()))?;
    let (applied, cluster_id) = (|| -> mdb::Result<_> {
        let env = EnvOptions::new()
            .max_dbs(max_dbs + 1)
            .flags(EnvFlags::READ_ONLY)
            .open(&tmp)?;
        let r = env.read_txn()?;
        let Ok(reserved) = r.open_db(RESERVED_DB) else {
            return Ok((None, None));
        };
        Ok((applied_in(&r, reserved)?, cluster_in(&r, reserved)?))
    })()
    .map_err(|e| err(e.to_string()))?;
    let (Some(applied), Some(cluster_id)) = (applied, cluster_id) else {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(err(format!(
            "not a backup of an mdb-raft node's data: its {RESERVED_DB} records no applied log id and cluster id"
        )));
    };
    // Restored and synced: the rename makes it the node's data.
    let _ = std::fs::remove_file(tmp.join("lock.mdb"));
    File::open(tmp.join("data.mdb"))
        .and_then(|f| f.sync_all())
        .and_then(|()| sync_dir(&tmp))
        .and_then(|()| std::fs::rename(&tmp, node_dir.join("data")))
        .and_then(|()| sync_dir(node_dir))
        .map_err(|e| err(e.to_string()))?;
    Ok(Some(Seed {
        applied,
        cluster_id,
    }))
}
