//! The Raft transport, client side: each RPC is one HTTP POST with a JSON
//! body to the target node's server (`http.rs` answers it).

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
        let resp = self
            .client
            .post(url)
            .timeout(option.hard_ttl())
            .json(req)
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() {
                    RPCError::Unreachable(Unreachable::new(&e))
                } else {
                    RPCError::Network(NetworkError::new(&e))
                }
            })?;
        let res: Result<Resp, E> = resp
            .json()
            .await
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
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
        self.call("append", &rpc, &option).await
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
