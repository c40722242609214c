//! What travels through the Raft log: one transaction's write set per
//! entry, and the openraft type configuration that carries it.

use serde::{Deserialize, Serialize};

/// One change of a write set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// Store `value` under `key` (replacing what was there).
    Put {
        /// Named database, or `None` for the main database.
        db: Option<String>,
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Remove `key` (nothing happens if it is absent).
    Delete {
        /// Named database, or `None` for the main database.
        db: Option<String>,
        /// The key.
        key: Vec<u8>,
    },
}

/// One transaction's write set: applied in order, all or nothing, on
/// every node.
///
/// ```
/// let mut b = mdb_raft::Batch::new();
/// b.put(None, b"k", b"v").delete(Some("users"), b"ada");
/// assert_eq!(b.ops.len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    /// The changes, in the order they are applied.
    pub ops: Vec<Op>,
}

impl Batch {
    /// An empty write set.
    pub fn new() -> Batch {
        Batch::default()
    }
    /// Add a put into `db` (`None`: the main database).
    pub fn put(&mut self, db: Option<&str>, key: &[u8], value: &[u8]) -> &mut Self {
        self.ops.push(Op::Put {
            db: db.map(str::to_owned),
            key: key.to_vec(),
            value: value.to_vec(),
        });
        self
    }
    /// Add a delete from `db` (`None`: the main database).
    pub fn delete(&mut self, db: Option<&str>, key: &[u8]) -> &mut Self {
        self.ops.push(Op::Delete {
            db: db.map(str::to_owned),
            key: key.to_vec(),
        });
        self
    }
}

/// What one Raft entry carries: the write sets of the writers whose
/// requests arrived together (one entry, one log sync and one round trip
/// for all of them), applied in order, each all or nothing on its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// The write sets, in the order they are applied.
    pub batches: Vec<Batch>,
    /// The cluster's id, proposed by a leader that finds none applied
    /// (the first leader of a cluster): applied only if none is recorded
    /// yet, so every node keeps the first one. A backup carries it, and a
    /// node seeded from a backup is refused by a cluster of another id.
    #[serde(default)]
    pub cluster_id: Option<String>,
}

/// What applying a write set answers: the error of an op the engine
/// refused (the whole write set was then not applied), else nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The engine's error for this entry's write set, if it was refused.
    pub error: Option<String>,
}

/// A member of the cluster: where its HTTP endpoint listens.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// `host:port` of the node's HTTP server (Raft RPCs and its API).
    pub addr: String,
}

impl std::fmt::Display for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.addr)
    }
}

/// A node's id in the cluster.
pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The openraft type configuration of a replicated environment.
    pub TypeConfig:
        D = Proposal,
        R = Vec<Applied>,
        NodeId = NodeId,
        Node = Member,
        Entry = openraft::Entry<TypeConfig>,
        // A snapshot is a file: a hot copy of the data environment.
        SnapshotData = tokio::fs::File,
);

/// A Raft log id: the term's leader and the index.
pub type LogId = openraft::LogId<NodeId>;
/// A Raft log entry of this configuration.
pub type Entry = openraft::Entry<TypeConfig>;
/// The openraft handle of this configuration.
pub type Raft = openraft::Raft<TypeConfig>;
