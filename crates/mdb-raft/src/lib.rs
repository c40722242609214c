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

mod error;
mod http;
mod log_store;
mod network;
mod node;
mod state_machine;
mod types;

pub use error::{Error, Result};
pub use node::{ReadInfo, Status};
pub use state_machine::RESERVED_DB;
pub use types::{Applied, Batch, LogId, Member, NodeId, Op, Proposal, TypeConfig};

use log_store::LogStore;
use mdb::{EnvOptions, RoTxn, WalOptions};
use node::Node;
use state_machine::StateMachine;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// How often the data environment's log is synced in the background (its
/// commits do not wait for it: see [`ReplicatedEnv::open`]).
const DATA_SYNC_PERIOD: std::time::Duration = std::time::Duration::from_millis(200);

/// How to open one node of a cluster.
#[derive(Debug, Clone)]
pub struct Config {
    /// This node's id: a key of `members`.
    pub id: NodeId,
    /// The node's directory: `data/` (the LMDB environment) and `raft/`
    /// (Raft's log, an environment in WAL mode).
    pub dir: PathBuf,
    /// Every voter's id and `host:port` (the same on every node); this
    /// node listens on its own address.
    pub members: BTreeMap<NodeId, String>,
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
}

impl Config {
    /// A node with 16 named databases, no key-value API, 100 ms heartbeats.
    pub fn new(id: NodeId, dir: impl Into<PathBuf>, members: BTreeMap<NodeId, String>) -> Config {
        Config {
            id,
            dir: dir.into(),
            members,
            max_dbs: 16,
            kv_api: false,
            heartbeat_ms: 100,
            routes: BTreeMap::new(),
        }
    }

    fn raft_config(&self) -> Result<openraft::Config> {
        let c = openraft::Config {
            cluster_name: "mdb".into(),
            heartbeat_interval: self.heartbeat_ms,
            election_timeout_min: self.heartbeat_ms * 6,
            election_timeout_max: self.heartbeat_ms * 12,
            // No snapshots yet: the log is kept whole, and a lagging node
            // catches up by replaying it.
            snapshot_policy: openraft::SnapshotPolicy::Never,
            max_payload_entries: 1000,
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
        let data_dir = config.dir.join("data");
        std::fs::create_dir_all(&data_dir).map_err(|e| Error::Engine(e.into()))?;
        // Durability comes from the Raft log (synced, never purged): the
        // data environment runs in WAL mode with relaxed commits, which a
        // power cut may roll back, to a consistent earlier state whose
        // applied id goes back with it; those entries are applied again
        // from the log. Checkpoints (and the close) make it a plain LMDB
        // file again.
        let mut wal = WalOptions::default();
        wal.sync_every = Some(DATA_SYNC_PERIOD);
        let env = Arc::new(
            EnvOptions::new()
                .max_dbs(config.max_dbs + 1)
                .wal(wal)
                .open(&data_dir)?,
        );
        let sm = StateMachine::new(env.clone())?;
        let reserved = sm.reserved();
        let log = LogStore::open(&config.dir.join("raft"))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .thread_name(format!("mdb-raft-{}", config.id))
            .build()
            .map_err(|e| Error::Engine(e.into()))?;
        let network = network::Network::new(config.routes.clone());
        let node = rt.block_on(async {
            let raft = openraft::Raft::new(config.id, raft_config, network.clone(), log, sm)
                .await
                .map_err(|e| Error::Unavailable(e.to_string()))?;
            let (proposals, queued) = tokio::sync::mpsc::unbounded_channel();
            tokio::spawn(node::propose(raft.clone(), queued));
            let node = Arc::new(Node {
                id: config.id,
                raft,
                env,
                reserved,
                leader_commit: AtomicU64::new(0),
                network: network.clone(),
                proposals,
            });
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .map_err(|e| Error::Config(format!("listen on {addr}: {e}")))?;
            let app = http::router(node.clone(), config.kv_api);
            tokio::spawn(async move { axum::serve(listener, app).await });
            if !node
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
        let (txn, info) = self.node.local_txn()?;
        Ok((f(&txn)?, info))
    }

    /// Read with linearizable consistency: the leader confirms with a
    /// quorum that it still leads and names its commit index (asked over
    /// HTTP from a follower), this node waits to apply up to it, then reads.
    pub fn read_linearizable<T>(&self, f: impl FnOnce(&RoTxn<'_>) -> mdb::Result<T>) -> Result<T> {
        let read = self.rt().block_on(self.node.read_index())?;
        self.rt().block_on(self.node.wait_applied(read))?;
        let (txn, _) = self.node.local_txn()?;
        Ok(f(&txn)?)
    }

    /// This node's view of the cluster.
    pub fn status(&self) -> Status {
        self.node.status()
    }

    /// The leader this node knows of: id and address.
    pub fn leader(&self) -> Option<(NodeId, String)> {
        self.node.leader()
    }

    /// The data environment (read it; write only through [`Self::write`]).
    pub fn env(&self) -> &mdb::Env {
        &self.node.env
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
            let _ = self.node.env.checkpoint();
        }
    }
}
