//! Replicas of an mdb environment kept in step through Raft.
//!
//! Each node keeps its data in an mdb environment (`<dir>/data`) in WAL
//! mode, a plain LMDB file that any LMDB program reads once the node has
//! stopped cleanly, and Raft's log and vote in a second environment in WAL
//! mode (`<dir>/raft`). A write is one transaction's write set
//! ([`Batch`]); the leader proposes the write sets that arrive together as
//! one entry ([`Proposal`]), a quorum syncs it, and every node applies it
//! in one write transaction that also records the applied log id (in the
//! reserved database [`RESERVED_DB`]), so a restarted node knows exactly
//! what it applied. The Raft log is the durable copy: the data
//! environment's commits are relaxed (a power cut rolls it back to a
//! consistent earlier state, which the log brings up to date again).
//! Consensus is openraft's; the transport is HTTP (axum, reqwest) with
//! postcard bodies.
//!
//! ```no_run
//! use mdb::Txn;
//! use mdb_raft::{Batch, Config, ReplicatedEnv};
//! let members = [(1, "127.0.0.1:7001".to_string()), (2, "127.0.0.1:7002".to_string()),
//!                (3, "127.0.0.1:7003".to_string())].into_iter().collect();
//! let node = ReplicatedEnv::open(Config::new(1, "/var/lib/node1", members))?;
//! let mut b = Batch::new();
//! b.put(None, b"k", b"v");
//! let applied = node.write(b)?; // on a follower: Error::NotLeader naming the leader
//! let v = node.read_linearizable(|t| Ok(t.get(mdb::Database::MAIN, b"k")?.map(<[u8]>::to_vec)))?;
//! # Ok::<(), mdb_raft::Error>(())
//! ```
#![deny(missing_docs)]
// The storage traits fix their error type, openraft's `StorageError` (224 bytes).
#![allow(clippy::result_large_err)]

mod data;
mod error;
mod http;
mod log_store;
mod network;
mod node;
mod powercut;
mod read_index;
mod seed;
mod snapshot;
mod state_machine;
mod stats;
mod types;

pub use data::RESERVED_DB;
pub use error::{Error, Result};
pub use node::{ReadInfo, Status};
pub use types::{Applied, Batch, LogId, Member, NodeId, Op, Proposal, TypeConfig};

use data::{applied_in, DataEnv};
use log_store::LogStore;
use mdb::RoTxn;
use node::Node;
use snapshot::SnapshotStore;
use state_machine::StateMachine;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The most entries one AppendEntries request carries.
const MAX_PAYLOAD_ENTRIES: u64 = 32;

/// How long a snapshot chunk may take to be sent and, for the last one,
/// installed (the follower copies the file and reopens its environment).
const INSTALL_SNAPSHOT_TIMEOUT_MS: u64 = 60_000;

/// How to open one node of a cluster.
#[derive(Debug, Clone)]
pub struct Config {
    /// This node's id: a key of `members`.
    pub id: NodeId,
    /// The node's directory: `data/` (the LMDB environment), `raft/`
    /// (Raft's log, an environment in WAL mode) and `snapshots/`.
    pub dir: PathBuf,
    /// Every voter's id and `host:port` (the same on every node); this
    /// node listens on its own address. Only the first start of an
    /// initial member uses the others: later, the membership is Raft's
    /// (see [`ReplicatedEnv::add_learner`]).
    pub members: BTreeMap<NodeId, String>,
    /// Initialise the cluster with `members` on the first start (the
    /// default). `false` for a node that joins a running cluster: it
    /// waits until the leader adds it ([`ReplicatedEnv::add_learner`]),
    /// and `members` need only hold its own address.
    pub bootstrap: bool,
    /// Build a snapshot of the data environment every this many applied
    /// entries, and purge the Raft log up to it (keeping `keep_logs`);
    /// 0: never.
    pub snapshot_every: u64,
    /// Entries kept in the Raft log below the last snapshot, so that a
    /// follower lagging by fewer catches up from the log, not a snapshot.
    pub keep_logs: u64,
    /// Named databases the data environment may hold (besides the
    /// reserved one).
    pub max_dbs: u32,
    /// Serve the key-value API (`/kv/{key}`) on the main database too.
    pub kv_api: bool,
    /// Heartbeat period in milliseconds; elections time out after 6 to
    /// 12 of them.
    pub heartbeat_ms: u64,
    /// Where this node dials some peers instead of their member address
    /// (a proxy, a tunnel): id -> `host:port`. Local to this node; the
    /// membership and the leader named to clients keep the member
    /// addresses. The fault tests route every link through a proxy.
    pub routes: BTreeMap<NodeId, String>,
    /// An `mdb backup` directory of a member's data environment to seed
    /// this node from (only with `bootstrap == false`, on its first start:
    /// ignored once the node directory holds a node). The newest point of
    /// the backup becomes the node's data; the leader checks it is a
    /// state of its cluster before adding the node
    /// ([`ReplicatedEnv::add_learner`]), which then needs only the log
    /// since the backup (or a snapshot, if the leader purged that log).
    pub seed_from: Option<PathBuf>,
}

impl Config {
    /// A node with 16 named databases, no key-value API, 100 ms
    /// heartbeats, a snapshot every 10,000 entries keeping 1,000 below it.
    pub fn new(id: NodeId, dir: impl Into<PathBuf>, members: BTreeMap<NodeId, String>) -> Config {
        Config {
            id,
            dir: dir.into(),
            members,
            bootstrap: true,
            snapshot_every: 10_000,
            keep_logs: 1_000,
            max_dbs: 16,
            kv_api: false,
            heartbeat_ms: 100,
            routes: BTreeMap::new(),
            seed_from: None,
        }
    }

    fn raft_config(&self) -> Result<openraft::Config> {
        let c = openraft::Config {
            cluster_name: "mdb".into(),
            heartbeat_interval: self.heartbeat_ms,
            election_timeout_min: self.heartbeat_ms * 6,
            election_timeout_max: self.heartbeat_ms * 12,
            snapshot_policy: match self.snapshot_every {
                0 => openraft::SnapshotPolicy::Never,
                n => openraft::SnapshotPolicy::LogsSinceLast(n),
            },
            max_in_snapshot_log_to_keep: self.keep_logs,
            install_snapshot_timeout: INSTALL_SNAPSHOT_TIMEOUT_MS,
            // openraft gives an AppendEntries request one heartbeat period
            // to be answered, and does not shrink one that timed out: a
            // follower far behind must get its entries in requests small
            // enough for that (one entry holds up to 128 write sets).
            max_payload_entries: MAX_PAYLOAD_ENTRIES,
            ..Default::default()
        };
        c.validate().map_err(|e| Error::Config(e.to_string()))
    }
}

/// One node of a replicated environment: the Raft member, its HTTP
/// server, and the data environment it applies to. Its methods block;
/// call them from threads outside its runtime (not from async code).
pub struct ReplicatedEnv {
    node: Arc<Node>,
    rt: Option<tokio::runtime::Runtime>,
}

impl ReplicatedEnv {
    /// Open the node's environments, start its server on its address in
    /// `members`, and join (or, on the first start of every member,
    /// initialise) the cluster.
    pub fn open(config: Config) -> Result<ReplicatedEnv> {
        let addr = config
            .members
            .get(&config.id)
            .cloned()
            .ok_or_else(|| Error::Config(format!("node {} is not a member", config.id)))?;
        let raft_config = Arc::new(config.raft_config()?);
        if let Some(backup) = &config.seed_from {
            if config.bootstrap {
                let msg = "seeding from a backup is for a node that joins (bootstrap = false)";
                return Err(Error::Config(msg.into()));
            }
            if let Some(s) = seed::seed(&config.dir, backup, config.max_dbs)? {
                eprintln!(
                    "mdb-raft: seeded from {} (cluster {}, applied {})",
                    backup.display(),
                    s.cluster_id,
                    s.applied
                );
            }
        }
        let data = Arc::new(DataEnv::open(&config.dir, config.max_dbs)?);
        let snapshots = Arc::new(
            SnapshotStore::open(&config.dir, config.max_dbs)
                .map_err(|e| Error::Engine(e.into()))?,
        );
        let sm = StateMachine::open(data.clone(), snapshots)?;
        let mut log = LogStore::open(&config.dir.join("raft"))?;
        stats::spawn_printer(config.id);
        let log_reader = log.clone();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .thread_name(format!("mdb-raft-{}", config.id))
            .build()
            .map_err(|e| Error::Engine(e.into()))?;
        let network = network::Network::new(config.routes.clone());
        let node = rt.block_on(async {
            let resumed = read_index::Resumed::read(&mut log, config.id)
                .await
                .map_err(|e| Error::Unavailable(e.to_string()))?;
            if let Some(r) = &resumed {
                let applied = data.with(|d| applied_in(&d.env.read_txn()?, d.reserved))?;
                eprintln!(
                    "mdb-raft: resuming as the leader of term {}: its log ends at {:?}, its data holds up to {:?}",
                    r.term(),
                    r.last().map(|l| l.index),
                    applied.map(|a| a.index)
                );
            }
            let raft = openraft::Raft::new(config.id, raft_config, network.clone(), log, sm)
                .await
                .map_err(|e| Error::Unavailable(e.to_string()))?;
            let (proposals, queued) = tokio::sync::mpsc::unbounded_channel();
            tokio::spawn(node::propose(raft.clone(), queued));
            let node = Arc::new(Node {
                id: config.id,
                raft,
                data,
                log: log_reader,
                leader_commit: AtomicU64::new(0),
                network: network.clone(),
                proposals,
                resumed,
            });
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .map_err(|e| Error::Config(format!("listen on {addr}: {e}")))?;
            tokio::spawn(node::claim_cluster_id(node.clone()));
            let app = http::router(node.clone(), config.kv_api);
            tokio::spawn(async move { axum::serve(listener, app).await });
            if config.bootstrap
                && !node
                    .raft
                    .is_initialized()
                    .await
                    .map_err(|e| Error::Unavailable(e.to_string()))?
            {
                let members: BTreeMap<NodeId, Member> = config
                    .members
                    .iter()
                    .map(|(id, a)| (*id, Member { addr: a.clone() }))
                    .collect();
                // Every member does this on its first start with the same
                // membership; the ones a leader reached first refuse it.
                if let Err(e) = node.raft.initialize(members).await {
                    match e {
                        openraft::error::RaftError::APIError(
                            openraft::error::InitializeError::NotAllowed(_),
                        ) => {}
                        e => return Err(Error::Unavailable(e.to_string())),
                    }
                }
            }
            Ok::<_, Error>(node)
        })?;
        Ok(ReplicatedEnv { node, rt: Some(rt) })
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("the runtime lives until drop")
    }

    /// Replicate one write set. Returns its log id once a quorum holds it
    /// and this node (the leader) has applied it; on a follower,
    /// [`Error::NotLeader`] naming the leader.
    pub fn write(&self, batch: Batch) -> Result<LogId> {
        self.rt().block_on(self.node.write(batch))
    }

    /// Read this node's data as it is (it may lag the leader: the
    /// [`ReadInfo`] says by how much).
    pub fn read_local<T>(
        &self,
        f: impl FnOnce(&RoTxn<'_>) -> mdb::Result<T>,
    ) -> Result<(T, ReadInfo)> {
        self.node.read_local(f)
    }

    /// Read with linearizable consistency: the leader confirms with a
    /// quorum that it still leads and names its commit index (asked over
    /// HTTP from a follower), this node waits to apply up to it, then reads.
    pub fn read_linearizable<T>(&self, f: impl FnOnce(&RoTxn<'_>) -> mdb::Result<T>) -> Result<T> {
        let read = self.rt().block_on(self.node.read_index())?;
        self.rt().block_on(self.node.wait_applied(read))?;
        Ok(self.node.read_local(f)?.0)
    }

    /// This node's view of the cluster.
    pub fn status(&self) -> Status {
        self.node.status()
    }

    /// The leader this node knows of: id and address.
    pub fn leader(&self) -> Option<(NodeId, String)> {
        self.node.leader()
    }

    /// Run `f` on the data environment (read it; write only through
    /// [`Self::write`]). The environment is replaced whole when this node
    /// installs a snapshot from the leader: that waits until `f` returns,
    /// so keep it short, and keep nothing of it.
    pub fn with_env<T>(&self, f: impl FnOnce(&mdb::Env) -> mdb::Result<T>) -> Result<T> {
        Ok(self.node.data.with(|d| f(&d.env))?)
    }

    /// Add node `id`, listening on `addr`, as a learner: it receives the
    /// log (or, if the leader purged what it lacks, a snapshot and the
    /// log since) but does not vote. A node that holds data (seeded from
    /// a backup, [`Config::seed_from`]) is asked for its state first and
    /// refused with [`Error::Incompatible`] unless it is of this cluster's
    /// id and at a log id this leader's log holds (or its snapshot covers). Returns once it has caught up with
    /// the membership change (bounded; on timeout it is a learner that
    /// is still catching up). On a follower: [`Error::NotLeader`].
    pub fn add_learner(&self, id: NodeId, addr: &str) -> Result<LogId> {
        self.rt()
            .block_on(self.node.add_learner(id, addr.to_string()))
    }

    /// Make the learner `id` a voter (a joint consensus change).
    pub fn promote(&self, id: NodeId) -> Result<LogId> {
        self.rt().block_on(self.node.promote(id))
    }

    /// Remove node `id` (voter or learner) from the cluster. Stop its
    /// process afterwards: it no longer receives the log.
    pub fn remove(&self, id: NodeId) -> Result<LogId> {
        self.rt().block_on(self.node.remove(id))
    }
}

impl Drop for ReplicatedEnv {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            let _ = rt.block_on(self.node.raft.shutdown());
            rt.shutdown_timeout(std::time::Duration::from_secs(5));
            // Nothing applies any more: leave a plain LMDB file (the close
            // does too, once the last handle goes; a task the runtime
            // could not stop may still hold one).
            let _ = self.node.data.with(|d| d.env.checkpoint());
        }
    }
}
