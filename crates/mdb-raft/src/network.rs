//! The Raft transport, client side: each RPC is one HTTP POST to the
//! target node's server (`http.rs` answers it), its request and answer
//! encoded with postcard (compact binary serde: a value's bytes travel as
//! they are, where JSON spelled each byte as a decimal number).

use crate::stats::{self, Phase};
use crate::types::{Member, NodeId, TypeConfig};
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The content type of the Raft RPCs' bodies (postcard).
pub(crate) const BINARY: &str = "application/octet-stream";

/// Makes one [`Peer`] per target; they share the connection pool.
#[derive(Clone)]
pub struct Network {
    /// The connection pool of every request to a peer (Raft RPCs and the
    /// read index asked of the leader).
    pub client: reqwest::Client,
    /// Peers dialed elsewhere than at their member address.
    routes: Arc<BTreeMap<NodeId, String>>,
}

impl Network {
    /// A transport with its own connection pool, dialing the peers in
    /// `routes` at the address given there.
    pub fn new(routes: BTreeMap<NodeId, String>) -> Network {
        Network {
            client: reqwest::Client::builder()
                .tcp_nodelay(true)
                .build()
                .expect("an HTTP client without TLS always builds"),
            routes: Arc::new(routes),
        }
    }

    /// Where to dial node `id`, whose member address is `addr`.
    pub fn dial<'a>(&'a self, id: NodeId, addr: &'a str) -> &'a str {
        self.routes.get(&id).map_or(addr, String::as_str)
    }
}

/// The connection to one peer.
pub struct Peer {
    client: reqwest::Client,
    target: NodeId,
    addr: String,
}

impl Peer {
    async fn call<Req, Resp, E>(
        &self,
        path: &str,
        req: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, Member, E>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let url = format!("http://{}/raft/{}", self.addr, path);
        let body =
            postcard::to_allocvec(req).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let resp = self
            .client
            .post(url)
            .timeout(option.hard_ttl())
            .header(reqwest::header::CONTENT_TYPE, BINARY)
            .body(body)
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() {
                    RPCError::Unreachable(Unreachable::new(&e))
                } else {
                    RPCError::Network(NetworkError::new(&e))
                }
            })?;
        let bytes = resp
            .error_for_status()
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?
            .bytes()
            .await
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let res: Result<Resp, E> =
            postcard::from_bytes(&bytes).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        res.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &Member) -> Peer {
        Peer {
            client: self.client.clone(),
            target,
            addr: self.dial(target, &node.addr).to_owned(),
        }
    }
}

type RpcResult<T, E = RaftError<NodeId>> = Result<T, RPCError<NodeId, Member, E>>;

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        let (t, n) = (stats::start(), rpc.entries.len());
        let r = self.call("append", &rpc, &option).await;
        stats::record(Phase::Replicate, t, n);
        r
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>> {
        self.call("snapshot", &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        self.call("vote", &rpc, &option).await
    }
}
