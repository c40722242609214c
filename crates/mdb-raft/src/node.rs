//! A running node: openraft over the two environments, and the async
//! operations the HTTP server and [`crate::ReplicatedEnv`] call.

use crate::data::{applied_in, cluster_in, DataEnv};
use crate::error::{Error, Result};
use crate::log_store::LogStore;
use crate::network::Network;
use crate::read_index::{self, Resumed};
use crate::stats::{self, Phase};
use crate::types::{Applied, Batch, LogId, Member, NodeId, Proposal, Raft};
use mdb::RoTxn;
use openraft::error::{CheckIsLeaderError, ClientWriteError, ForwardToLeader, RaftError};
use openraft::{ChangeMembers, ServerState};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Semaphore};

/// How long a linearizable read waits for this node to apply up to the
/// leader's read index.
const READ_WAIT: Duration = Duration::from_secs(10);

/// How long adding a learner waits for it to catch up (from a snapshot
/// and the log since, or the log).
const LEARNER_WAIT: Duration = Duration::from_secs(60);

/// Where a local read stood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadInfo {
    /// The last log id applied to the snapshot the read saw.
    pub applied: Option<LogId>,
    /// Entries this node knows are committed but had not applied when
    /// the read began (from the leader's last message; 0 on a node that
    /// has heard of nothing newer).
    pub lag: u64,
}

/// A node's view of the cluster (`GET /status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// This node.
    pub id: NodeId,
    /// Leader, Follower, Candidate or Learner.
    pub state: String,
    /// The current term.
    pub term: u64,
    /// The leader this node knows of.
    pub leader: Option<NodeId>,
    /// Its address.
    pub leader_addr: Option<String>,
    /// The members (voters and learners) and their addresses.
    pub members: BTreeMap<NodeId, String>,
    /// The voters among them (the others are learners).
    pub voters: Vec<NodeId>,
    /// The index of the last entry applied to the data file.
    pub applied_index: Option<u64>,
    /// The index of the last entry in this node's Raft log.
    pub last_log_index: Option<u64>,
    /// Committed entries not applied here yet (see [`ReadInfo::lag`]).
    pub lag: u64,
    /// The last log index the current snapshot includes.
    pub snapshot_index: Option<u64>,
    /// The last log index purged from this node's Raft log.
    pub purged_index: Option<u64>,
    /// Snapshots this node built since it started.
    pub snapshots_built: u64,
    /// Snapshots from a leader this node installed since it started.
    pub snapshots_installed: u64,
    /// Why this node's Raft stopped (a storage error), if it did.
    pub fatal: Option<String>,
    /// The cluster's id, as applied here (`None` before the first
    /// leader's id entry is applied).
    pub cluster_id: Option<String>,
}

/// What a node's data environment holds (`GET /raft/state`): the leader
/// asks a node it is to add, to check that its data (seeded from a
/// backup) is a state of this cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataState {
    /// The cluster id recorded in the data.
    pub cluster_id: Option<String>,
    /// The last log id applied to it.
    pub applied: Option<LogId>,
}

/// Answer of `GET /raft/read_index` (asked of the leader by a follower).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum ReadIndexReply {
    /// The leader confirmed it leads: reads must see up to here.
    ReadIndex(Option<LogId>),
    /// The node asked does not lead; it names the leader it knows.
    NotLeader(Option<(NodeId, String)>),
    /// It could not confirm its leadership.
    Error(String),
}

/// Proposals the leader has in flight at once: while it commits, the
/// write sets that arrive queue up and go together in the next one. One:
/// openraft 0.9 syncs each entry's append before it appends the next, so a
/// second proposal in flight only splits a group in two (measured: 3 nodes
/// 986 writes/s with one, 921 with two, 590 with four; one node 2,998
/// with one, 2,054 with two, `examples/bench`, one run each).
const IN_FLIGHT: usize = 1;
/// The most write sets one proposal carries.
const MAX_GROUP: usize = 128;

/// A writer waiting for its write set to be committed and applied.
pub(crate) type Waiting = (Batch, oneshot::Sender<Result<LogId>>);

/// The shared state of a running node.
pub(crate) struct Node {
    pub id: NodeId,
    pub raft: Raft,
    pub data: Arc<DataEnv>,
    /// The Raft log, read to check a joining node's data against it.
    pub log: LogStore,
    /// The highest commit index a leader has told this node of.
    pub leader_commit: AtomicU64,
    /// The transport: its connection pool and routes serve the read index
    /// asked of the leader too.
    pub network: Network,
    /// The writers queued for the proposer ([`propose`]).
    pub proposals: mpsc::UnboundedSender<Waiting>,
    /// The leadership this node resumed at start, if it did: its read
    /// index is raised to the log's end at start (`read_index.rs`).
    pub resumed: Option<Resumed>,
}

/// The proposer: takes the write sets queued while earlier proposals were
/// in flight and proposes them as one Raft entry, so that concurrent
/// writers share its log appends, syncs and round trips (openraft 0.9
/// appends and syncs each client write on its own). Runs until every
/// sender is gone.
pub(crate) async fn propose(raft: Raft, mut rx: mpsc::UnboundedReceiver<Waiting>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    while let Some(first) = rx.recv().await {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(w) => group.push(w),
                Err(_) => break,
            }
        }
        let raft = raft.clone();
        tokio::spawn(async move {
            let (batches, replies): (Vec<Batch>, Vec<_>) = group.into_iter().unzip();
            let (t, n) = (stats::start(), batches.len());
            let r = raft
                .client_write(Proposal {
                    batches,
                    cluster_id: None,
                })
                .await;
            stats::record(Phase::Propose, t, n);
            drop(slot);
            match r {
                Ok(resp) => {
                    let applied = resp
                        .data
                        .into_iter()
                        .chain(std::iter::repeat(Applied::default()));
                    for (reply, a) in replies.into_iter().zip(applied) {
                        let _ = reply.send(match a.error {
                            None => Ok(resp.log_id),
                            Some(e) => Err(Error::Refused(e)),
                        });
                    }
                }
                Err(e) => {
                    for reply in replies {
                        let _ = reply.send(Err(write_error(&e)));
                    }
                }
            }
        });
    }
}

/// The error a writer gets when its proposal failed.
fn write_error(e: &RaftError<NodeId, ClientWriteError<NodeId, Member>>) -> Error {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => forward(f),
        e => Error::Unavailable(e.to_string()),
    }
}

/// A write's answer as the writer gets it: the entry's log id.
fn written(
    r: std::result::Result<
        openraft::raft::ClientWriteResponse<crate::types::TypeConfig>,
        RaftError<NodeId, ClientWriteError<NodeId, Member>>,
    >,
) -> Result<LogId> {
    r.map(|resp| resp.log_id).map_err(|e| write_error(&e))
}

fn forward(f: &ForwardToLeader<NodeId, Member>) -> Error {
    Error::NotLeader {
        leader: f
            .leader_id
            .zip(f.leader_node.as_ref().map(|n| n.addr.clone())),
    }
}

impl Node {
    /// Replicate `batch` (through the proposer, with the write sets of
    /// other writers); returns once a quorum holds it and this node (the
    /// leader) has applied it.
    pub async fn write(&self, batch: Batch) -> Result<LogId> {
        let (tx, rx) = oneshot::channel();
        let gone = || Error::Unavailable("the node is shutting down".into());
        self.proposals.send((batch, tx)).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }

    /// The leader and its address, as this node knows them.
    pub fn leader(&self) -> Option<(NodeId, String)> {
        let m = self.raft.metrics().borrow().clone();
        let id = m.current_leader?;
        let addr = m.membership_config.membership().get_node(&id)?.addr.clone();
        Some((id, addr))
    }

    /// The read index: confirmed by the leader with a quorum (here if
    /// this node leads, else asked of the leader over HTTP).
    pub async fn read_index(&self) -> Result<Option<LogId>> {
        match read_index::read_index(&self.raft, self.resumed.as_ref()).await {
            Ok(read) => Ok(read),
            Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => {
                let Some((id, node)) = f.leader_id.zip(f.leader_node.as_ref()) else {
                    return Err(forward(&f));
                };
                let addr = self.network.dial(id, &node.addr);
                let url = format!("http://{addr}/raft/read_index");
                let reply: ReadIndexReply = async {
                    self.network
                        .client
                        .get(url)
                        .timeout(READ_WAIT)
                        .send()
                        .await?
                        .json()
                        .await
                }
                .await
                .map_err(|e| Error::Unavailable(format!("asking the leader: {e}")))?;
                match reply {
                    ReadIndexReply::ReadIndex(read) => Ok(read),
                    ReadIndexReply::NotLeader(leader) => Err(Error::NotLeader { leader }),
                    ReadIndexReply::Error(e) => Err(Error::Unavailable(e)),
                }
            }
            Err(e) => Err(Error::Unavailable(e.to_string())),
        }
    }

    /// The read index as the answer to a follower's request.
    pub async fn read_index_reply(&self) -> ReadIndexReply {
        match read_index::read_index(&self.raft, self.resumed.as_ref()).await {
            Ok(read) => ReadIndexReply::ReadIndex(read),
            Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => {
                ReadIndexReply::NotLeader(f.leader_id.zip(f.leader_node.map(|n| n.addr)))
            }
            Err(e) => ReadIndexReply::Error(e.to_string()),
        }
    }

    /// Wait until this node applied `read` (bounded).
    pub async fn wait_applied(&self, read: Option<LogId>) -> Result<()> {
        read_index::wait_applied(&self.raft, read, READ_WAIT).await
    }

    /// Run `f` in a read transaction of this node's data, and say where
    /// it stands.
    pub fn read_local<T>(
        &self,
        f: impl FnOnce(&RoTxn<'_>) -> mdb::Result<T>,
    ) -> Result<(T, ReadInfo)> {
        let known = self.known_index();
        Ok(self.data.with(|d| {
            let txn = d.env.read_txn()?;
            let applied = applied_in(&txn, d.reserved)?;
            let lag = known.saturating_sub(applied.map_or(0, |a| a.index));
            Ok((f(&txn)?, ReadInfo { applied, lag }))
        })?)
    }

    /// The last index this node knows is committed (or, on the leader,
    /// proposed).
    fn known_index(&self) -> u64 {
        let m = self.raft.metrics().borrow().clone();
        if m.state == ServerState::Leader {
            m.last_log_index.unwrap_or(0)
        } else {
            self.leader_commit.load(Ordering::Relaxed)
        }
    }

    /// What this node's data environment holds.
    pub fn data_state(&self) -> Result<DataState> {
        Ok(self.data.with(|d| {
            let r = d.env.read_txn()?;
            Ok(DataState {
                cluster_id: cluster_in(&r, d.reserved)?,
                applied: applied_in(&r, d.reserved)?,
            })
        })?)
    }

    /// Check that node `id`'s data (if it holds any: a node seeded from a
    /// backup) is a state this cluster had: of this cluster's id, and at
    /// a log id this leader's log holds (or, if purged, one its snapshot
    /// covers: the node then receives the snapshot).
    async fn check_joiner(&self, id: NodeId, addr: &str) -> Result<()> {
        let url = format!("http://{}/raft/state", self.network.dial(id, addr));
        let theirs: DataState = async {
            let r = self.network.client.get(url).timeout(READ_WAIT).send();
            r.await?.error_for_status()?.json().await
        }
        .await
        .map_err(|e| Error::Unavailable(format!("asking node {id} for its data's state: {e}")))?;
        let Some(a) = theirs.applied else {
            return Ok(()); // empty: it gets a snapshot or the whole log
        };
        let ours = self.data_state()?;
        let bad = |why: String| Err(Error::Incompatible(format!("node {id}'s data {why}")));
        match (&theirs.cluster_id, &ours.cluster_id) {
            (None, _) => {
                return bad(format!(
                    "(applied {a}) records no cluster id: not a member's data"
                ))
            }
            (_, None) => {
                return Err(Error::Unavailable(
                    "this cluster has recorded no id yet: try again".into(),
                ))
            }
            (Some(t), Some(o)) if t != o => {
                return bad(format!(
                    "is from another cluster (id {t}; this cluster's is {o})"
                ))
            }
            _ => {}
        }
        let m = self.raft.metrics().borrow().clone();
        let last = m.last_log_index.unwrap_or(0);
        if a.index > last {
            return bad(format!(
                "is ahead of the leader's log (applied {a}, the log ends at {last})"
            ));
        }
        match self.log.log_id_at(a.index)? {
            Some(l) if l == a => Ok(()),
            Some(l) => bad(format!(
                "is not on the leader's log (applied {a}, the leader's entry {} is {l})",
                a.index
            )),
            None if m.purged == Some(a) => Ok(()),
            // Purged: the node will receive the snapshot, which must be
            // after its state.
            None if Some(a) < m.snapshot => Ok(()),
            None => bad(format!(
                "cannot be checked: applied {a}, the leader's log is purged up to {:?} and its snapshot is at {:?}",
                m.purged, m.snapshot
            )),
        }
    }

    /// Add `id` at `addr` as a learner, once its data (if it holds any)
    /// is found to be a state of this cluster; wait (bounded) for it to
    /// catch up.
    pub async fn add_learner(&self, id: NodeId, addr: String) -> Result<LogId> {
        self.check_joiner(id, &addr).await?;
        let add = self.raft.add_learner(id, Member { addr }, true);
        match tokio::time::timeout(LEARNER_WAIT, add).await {
            Ok(r) => written(r),
            Err(_) => Err(Error::Unavailable(format!(
                "node {id} did not catch up in {LEARNER_WAIT:?} (it may have been added)"
            ))),
        }
    }

    /// Make the learner `id` a voter.
    pub async fn promote(&self, id: NodeId) -> Result<LogId> {
        let add = ChangeMembers::AddVoterIds(BTreeSet::from([id]));
        written(self.raft.change_membership(add, false).await)
    }

    /// Remove `id`, voter or learner, from the cluster.
    pub async fn remove(&self, id: NodeId) -> Result<LogId> {
        let m = self.raft.metrics().borrow().membership_config.clone();
        let change = if m.membership().voter_ids().any(|v| v == id) {
            ChangeMembers::RemoveVoters(BTreeSet::from([id]))
        } else {
            ChangeMembers::RemoveNodes(BTreeSet::from([id]))
        };
        written(self.raft.change_membership(change, false).await)
    }

    /// Record the commit index a leader sent.
    pub fn heard_commit(&self, c: Option<LogId>) {
        if let Some(c) = c {
            self.leader_commit.fetch_max(c.index, Ordering::Relaxed);
        }
    }

    /// This node's view of the cluster.
    pub fn status(&self) -> Status {
        let m = self.raft.metrics().borrow().clone();
        let membership = m.membership_config.membership();
        let members: BTreeMap<NodeId, String> = membership
            .nodes()
            .map(|(id, n)| (*id, n.addr.clone()))
            .collect();
        let leader_addr = m.current_leader.and_then(|l| members.get(&l).cloned());
        let applied_index = m.last_applied.map(|a| a.index);
        let known = self.known_index();
        Status {
            id: self.id,
            state: format!("{:?}", m.state),
            term: m.current_term,
            leader: m.current_leader,
            leader_addr,
            members,
            voters: membership.voter_ids().collect(),
            applied_index,
            last_log_index: m.last_log_index,
            lag: known.saturating_sub(applied_index.unwrap_or(0)),
            snapshot_index: m.snapshot.map(|s| s.index),
            purged_index: m.purged.map(|p| p.index),
            snapshots_built: self.data.built.load(Ordering::Relaxed),
            snapshots_installed: self.data.installed.load(Ordering::Relaxed),
            fatal: m.running_state.as_ref().err().map(|e| e.to_string()),
            cluster_id: self.data_state().ok().and_then(|s| s.cluster_id),
        }
    }
}

/// A new cluster id: 128 random bits, in hex.
fn new_cluster_id() -> std::io::Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Whenever this node becomes leader (once per term) and finds no cluster
/// id applied, propose one. Runs until Raft stops.
pub(crate) async fn claim_cluster_id(node: Arc<Node>) {
    let mut metrics = node.raft.metrics();
    let mut tried = None;
    loop {
        let (leads, term) = {
            let m = metrics.borrow_and_update();
            (m.state == ServerState::Leader, m.current_term)
        };
        let known = node.data_state().map(|s| s.cluster_id.is_some());
        if leads && tried != Some(term) && known.is_ok_and(|k| !k) {
            tried = Some(term);
            match new_cluster_id() {
                Ok(id) => {
                    let p = Proposal {
                        batches: Vec::new(),
                        cluster_id: Some(id),
                    };
                    // A lost leadership fails it; the next leader tries.
                    let _ = node.raft.client_write(p).await;
                }
                Err(e) => eprintln!("mdb-raft: a cluster id: {e}"),
            }
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}
