//! The read index of a linearizable read, and the wait for it.
//!
//! openraft 0.9's read index is the leader's `max(first entry of its
//! term, commit index)`. A leader that restarts with its vote (committed,
//! for itself) resumes leading the same term at once: no election, no new
//! first entry, and a commit index taken at start from the state
//! machine's applied id. Here that is the data environment's, which a
//! power cut rolls back (relaxed commits), so the read index fell below
//! writes acknowledged before the cut, and a read served data without
//! them. Such a leader's read index is raised to the last entry its log
//! held at start: every write it acknowledged is there (each append is
//! synced before it is replicated), and, leading the same term, it never
//! truncates its log, so it commits that entry.

use crate::error::{Error, Result};
use crate::log_store::LogStore;
use crate::types::{LogId, Member, NodeId, Raft};
use openraft::error::{CheckIsLeaderError, RaftError};
use openraft::storage::RaftLogStorage;
use openraft::{LeaderId, StorageError};
use std::time::Duration;

/// What the Raft log held at start when its vote made this node the
/// leader (openraft resumes it).
#[derive(Debug, Clone)]
pub(crate) struct Resumed {
    /// The term and node of the resumed leadership.
    leader: LeaderId<NodeId>,
    /// The last entry of the log at start.
    last: Option<LogId>,
}

impl Resumed {
    /// Read from `log`, before openraft starts on it, whether node `id`
    /// resumes as leader.
    pub(crate) async fn read(
        log: &mut LogStore,
        id: NodeId,
    ) -> std::result::Result<Option<Resumed>, StorageError<NodeId>> {
        let Some(vote) = log.read_vote().await? else {
            return Ok(None);
        };
        if !vote.is_committed() || vote.leader_id().voted_for() != Some(id) {
            return Ok(None);
        }
        let last = log.get_log_state().await?.last_log_id;
        Ok(Some(Resumed {
            leader: *vote.leader_id(),
            last,
        }))
    }

    /// The term of the resumed leadership.
    pub(crate) fn term(&self) -> u64 {
        self.leader.term
    }

    /// The last entry of the log at start.
    pub(crate) fn last(&self) -> Option<LogId> {
        self.last
    }
}

/// The read index, if this node leads (confirmed with a quorum), raised
/// to `resumed`'s last entry while this node still leads the leadership
/// it resumed at start.
pub(crate) async fn read_index(
    raft: &Raft,
    resumed: Option<&Resumed>,
) -> std::result::Result<Option<LogId>, RaftError<NodeId, CheckIsLeaderError<NodeId, Member>>> {
    // Looked at before asking: votes only grow, so a vote that differs
    // now is a later leadership, whose first entry follows every entry
    // the resumed one had.
    let floor = resumed
        .filter(|r| raft.metrics().borrow().vote.leader_id() == &r.leader)
        .and_then(|r| r.last);
    let (read, _applied) = raft.get_read_log_id().await?;
    Ok(read.max(floor))
}

/// Wait (up to `timeout`) until this node applied `read`.
pub(crate) async fn wait_applied(
    raft: &Raft,
    read: Option<LogId>,
    timeout: Duration,
) -> Result<()> {
    let Some(read) = read else { return Ok(()) };
    raft.wait(Some(timeout))
        .applied_index_at_least(Some(read.index), "linearizable read")
        .await
        .map(|_| ())
        .map_err(|e| Error::Unavailable(format!("waiting to apply {read}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DataEnv;
    use crate::snapshot::SnapshotStore;
    use crate::state_machine::StateMachine;
    use crate::types::{Batch, Proposal, TypeConfig};
    use mdb::{Database, Txn};
    use openraft::error::{InstallSnapshotError, RPCError, RemoteError, Unreachable};
    use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
    use openraft::raft::{
        AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest,
        InstallSnapshotResponse, VoteRequest, VoteResponse,
    };
    use openraft::ServerState;
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    /// Nodes in one process, calling each other's Raft directly. With
    /// `only_read_checks` set, only the AppendEntries a read index sends
    /// to confirm the leadership (no entries, no previous log id) get
    /// through: the leader is confirmed but commits nothing more.
    #[derive(Clone, Default)]
    struct Mesh {
        nodes: Arc<Mutex<BTreeMap<NodeId, Raft>>>,
        only_read_checks: Arc<AtomicBool>,
    }

    struct Link {
        mesh: Mesh,
        target: NodeId,
    }

    type RpcResult<T, E = RaftError<NodeId>> = std::result::Result<T, RPCError<NodeId, Member, E>>;

    impl Link {
        fn target<E: std::error::Error>(&self, blocked: bool) -> RpcResult<Raft, E> {
            let down = || RPCError::Unreachable(Unreachable::new(&std::io::Error::other("down")));
            if blocked && self.mesh.only_read_checks.load(Ordering::SeqCst) {
                return Err(down());
            }
            let nodes = self.mesh.nodes.lock().unwrap();
            nodes.get(&self.target).cloned().ok_or_else(down)
        }
    }

    impl RaftNetworkFactory<TypeConfig> for Mesh {
        type Network = Link;
        async fn new_client(&mut self, target: NodeId, _: &Member) -> Link {
            Link {
                mesh: self.clone(),
                target,
            }
        }
    }

    impl RaftNetwork<TypeConfig> for Link {
        async fn append_entries(
            &mut self,
            rpc: AppendEntriesRequest<TypeConfig>,
            _: RPCOption,
        ) -> RpcResult<AppendEntriesResponse<NodeId>> {
            let check = rpc.entries.is_empty() && rpc.prev_log_id.is_none();
            let raft = self.target(!check)?;
            let r = raft.append_entries(rpc).await;
            r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
        }

        async fn install_snapshot(
            &mut self,
            rpc: InstallSnapshotRequest<TypeConfig>,
            _: RPCOption,
        ) -> RpcResult<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>
        {
            let raft = self.target(true)?;
            let r = raft.install_snapshot(rpc).await;
            r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
        }

        async fn vote(
            &mut self,
            rpc: VoteRequest<NodeId>,
            _: RPCOption,
        ) -> RpcResult<VoteResponse<NodeId>> {
            let raft = self.target(true)?;
            let r = raft.vote(rpc).await;
            r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
        }
    }

    /// Start node `id` on `dir`; no node starts an election on its own
    /// (node 1 is elected when it initialises the cluster).
    async fn start(mesh: &Mesh, id: NodeId, dir: &Path) -> (Raft, Arc<DataEnv>, Option<Resumed>) {
        let data = Arc::new(DataEnv::open(dir, 4).unwrap());
        let snapshots = Arc::new(SnapshotStore::open(dir, 4).unwrap());
        let sm = StateMachine::open(data.clone(), snapshots).unwrap();
        let mut log = LogStore::open(&dir.join("raft")).unwrap();
        let resumed = Resumed::read(&mut log, id).await.unwrap();
        let config = openraft::Config {
            heartbeat_interval: 50,
            election_timeout_min: 300,
            election_timeout_max: 600,
            enable_elect: false,
            snapshot_policy: openraft::SnapshotPolicy::Never,
            ..Default::default()
        };
        let config = Arc::new(config.validate().unwrap());
        let raft = Raft::new(id, config, mesh.clone(), log, sm).await.unwrap();
        mesh.nodes.lock().unwrap().insert(id, raft.clone());
        (raft, data, resumed)
    }

    async fn write(raft: &Raft, key: &[u8], value: &[u8]) {
        let mut b = Batch::new();
        b.put(None, key, value);
        let p = Proposal {
            batches: vec![b],
            cluster_id: None,
        };
        raft.client_write(p).await.unwrap();
    }

    fn get(data: &DataEnv, key: &[u8]) -> Option<Vec<u8>> {
        data.with(|d| {
            Ok(d.env
                .read_txn()?
                .get(Database::MAIN, key)?
                .map(<[u8]>::to_vec))
        })
        .unwrap()
    }

    /// A linearizable read on `raft` as the node serves one: the read
    /// index, the wait to apply it (up to `wait`), the local read.
    async fn read(
        raft: &Raft,
        resumed: Option<&Resumed>,
        data: &DataEnv,
        key: &[u8],
        wait: Duration,
    ) -> Result<Option<Vec<u8>>> {
        let read = read_index(raft, resumed)
            .await
            .map_err(|e| Error::Unavailable(e.to_string()))?;
        wait_applied(raft, read, wait).await?;
        Ok(get(data, key))
    }

    /// The leader loses power with the two followers (all its writes were
    /// synced in the Raft logs; its data environment comes back before
    /// the last one, as relaxed commits can) and resumes leading the same
    /// term at restart. A linearizable read must not miss the write it
    /// acknowledged before the cut, even while it cannot commit anything
    /// yet. Before the read index was raised for a resumed leader, the
    /// read answered "absent" at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_resumed_leader_with_older_data_serves_no_stale_read() {
        let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let old = tempfile::tempdir().unwrap();
        let mesh = Mesh::default();
        let mut nodes = Vec::new();
        for (i, d) in dirs.iter().enumerate() {
            nodes.push(start(&mesh, i as NodeId + 1, d.path()).await);
        }
        let members: BTreeMap<NodeId, Member> = (1..=3)
            .map(|id| {
                (
                    id,
                    Member {
                        addr: format!("node{id}"),
                    },
                )
            })
            .collect();
        let leader = nodes[0].0.clone();
        leader.initialize(members).await.unwrap();
        leader
            .wait(Some(Duration::from_secs(10)))
            .state(ServerState::Leader, "node 1 leads")
            .await
            .unwrap();
        write(&leader, b"a", b"1").await;
        nodes[0]
            .1
            .with(|d| d.env.copy_to_path(old.path(), false))
            .unwrap();
        write(&leader, b"b", b"2").await; // acknowledged
        drop(leader);

        // Every node stops at once; the leader's data environment comes
        // back without "b" (its applied id with it); the logs are whole.
        for (raft, ..) in nodes.drain(..) {
            raft.shutdown().await.unwrap();
        }
        mesh.nodes.lock().unwrap().clear();
        let data = DataEnv::open(dirs[0].path(), 4).unwrap();
        data.replace(&old.path().join("data.mdb")).unwrap();
        drop(data);
        assert_eq!(get_after_open(dirs[0].path(), b"b"), None);

        mesh.only_read_checks.store(true, Ordering::SeqCst);
        for (i, d) in dirs.iter().enumerate() {
            nodes.push(start(&mesh, i as NodeId + 1, d.path()).await);
        }
        let (leader, data, resumed) = &nodes[0];
        assert!(resumed.is_some(), "node 1 resumes its leadership");
        let m = leader
            .wait(Some(Duration::from_secs(10)))
            .state(ServerState::Leader, "node 1 resumes leading")
            .await
            .unwrap();
        assert_eq!(m.vote.leader_id().term, resumed.as_ref().unwrap().term());
        let short = Duration::from_millis(500);
        // The followers confirm the leadership; nothing commits: the read
        // may fail, but not miss "b".
        match read(leader, resumed.as_ref(), data, b"b", short).await {
            Ok(v) => assert_eq!(v.as_deref(), Some(&b"2"[..]), "a stale read"),
            Err(e) => eprintln!("read while nothing commits: {e}"),
        }
        mesh.only_read_checks.store(false, Ordering::SeqCst);
        let v = read(
            leader,
            resumed.as_ref(),
            data,
            b"b",
            Duration::from_secs(30),
        )
        .await;
        assert_eq!(v.unwrap().as_deref(), Some(&b"2"[..]));
        for (raft, ..) in nodes {
            raft.shutdown().await.unwrap();
        }
    }

    fn get_after_open(dir: &Path, key: &[u8]) -> Option<Vec<u8>> {
        get(&DataEnv::open(dir, 4).unwrap(), key)
    }
}
