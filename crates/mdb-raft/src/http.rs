//! The node's HTTP server: the Raft RPCs (`/raft/...`), `/status`, the
//! membership changes (`/cluster/...`), and, when asked for, a key-value
//! API on the main database (`/kv/{key}`).

use crate::error::Error;
use crate::network::BINARY;
use crate::node::Node;
use crate::stats::{self, Phase};
use crate::types::{Batch, LogId, NodeId, TypeConfig};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mdb::{Database, Txn};
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::sync::Arc;

type N = Arc<Node>;

/// The router of one node.
pub(crate) fn router(node: N, kv_api: bool) -> Router {
    let mut r = Router::new()
        .route("/raft/append", post(append))
        .route("/raft/vote", post(vote))
        .route("/raft/snapshot", post(snapshot))
        .route("/raft/read_index", get(read_index))
        .route("/raft/state", get(node_state))
        .route("/status", get(status))
        .route("/cluster/learner", post(add_learner))
        .route("/cluster/promote", post(promote))
        .route("/cluster/remove", post(remove));
    if kv_api {
        r = r.route("/kv/{key}", get(kv_get).put(kv_put).delete(kv_delete));
    }
    r.with_state(node)
}

/// Decode a Raft RPC's postcard body, call `f`, encode its answer.
async fn rpc<Req, Resp, F>(body: Bytes, f: impl FnOnce(Req) -> F) -> Response
where
    Req: DeserializeOwned,
    Resp: Serialize,
    F: Future<Output = Resp>,
{
    let req = match postcard::from_bytes(&body) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("a Raft RPC: {e}")).into_response(),
    };
    match postcard::to_allocvec(&f(req).await) {
        Ok(b) => ([(CONTENT_TYPE, BINARY)], b).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn append(State(n): State<N>, body: Bytes) -> Response {
    rpc(body, |req: AppendEntriesRequest<TypeConfig>| async move {
        n.heard_commit(req.leader_commit);
        let (t, len) = (stats::start(), req.entries.len());
        let r = n.raft.append_entries(req).await;
        stats::record(Phase::Follow, t, len);
        r
    })
    .await
}

async fn vote(State(n): State<N>, body: Bytes) -> Response {
    rpc(body, |req: VoteRequest<NodeId>| async move {
        n.raft.vote(req).await
    })
    .await
}

async fn snapshot(State(n): State<N>, body: Bytes) -> Response {
    rpc(body, |req: InstallSnapshotRequest<TypeConfig>| async move {
        n.raft.install_snapshot(req).await
    })
    .await
}

async fn read_index(State(n): State<N>) -> Response {
    Json(n.read_index_reply().await).into_response()
}

async fn node_state(State(n): State<N>) -> Response {
    match n.data_state() {
        Ok(s) => Json(s).into_response(),
        Err(e) => error_response(e),
    }
}

async fn status(State(n): State<N>) -> Response {
    Json(n.status()).into_response()
}

/// A membership change's request body.
#[derive(Deserialize)]
struct MemberReq {
    id: NodeId,
    /// The new node's `host:port` (adding a learner only).
    addr: Option<String>,
}

/// The request body as JSON, whatever its content type says (so that
/// `curl -d '{"id":4}'` works).
fn member_req(body: &[u8]) -> Result<MemberReq, Response> {
    serde_json::from_slice(body).map_err(|e| {
        let body =
            serde_json::json!({"error": format!("want {{\"id\":N,\"addr\":\"host:port\"}}: {e}")});
        (StatusCode::BAD_REQUEST, Json(body)).into_response()
    })
}

async fn add_learner(State(n): State<N>, body: Bytes) -> Response {
    match member_req(&body) {
        Ok(MemberReq {
            id,
            addr: Some(addr),
        }) => answer(n.add_learner(id, addr).await),
        Ok(_) => {
            let body = serde_json::json!({"error": "adding a learner needs its \"addr\""});
            (StatusCode::BAD_REQUEST, Json(body)).into_response()
        }
        Err(r) => r,
    }
}

async fn promote(State(n): State<N>, body: Bytes) -> Response {
    match member_req(&body) {
        Ok(m) => answer(n.promote(m.id).await),
        Err(r) => r,
    }
}

async fn remove(State(n): State<N>, body: Bytes) -> Response {
    match member_req(&body) {
        Ok(m) => answer(n.remove(m.id).await),
        Err(r) => r,
    }
}

/// An error as the KV API answers it: 421 with the leader for a write on
/// a follower, 422 for a refused write set, 409 for a node whose data
/// is not a state of this cluster, 503 for the rest.
fn error_response(e: Error) -> Response {
    let (code, leader) = match &e {
        Error::NotLeader { leader } => (StatusCode::MISDIRECTED_REQUEST, leader.clone()),
        Error::Refused(_) => (StatusCode::UNPROCESSABLE_ENTITY, None),
        Error::Incompatible(_) => (StatusCode::CONFLICT, None),
        _ => (StatusCode::SERVICE_UNAVAILABLE, None),
    };
    let body = serde_json::json!({
        "error": e.to_string(),
        "leader_id": leader.as_ref().map(|l| l.0),
        "leader_addr": leader.map(|l| l.1),
    });
    (code, Json(body)).into_response()
}

/// A write's answer: its log id, or the error.
fn answer(r: crate::error::Result<LogId>) -> Response {
    match r {
        Ok(id) => {
            Json(serde_json::json!({"index": id.index, "term": id.leader_id.term})).into_response()
        }
        Err(e) => error_response(e),
    }
}

async fn write(n: N, batch: Batch) -> Response {
    let t = stats::start();
    let r = n.write(batch).await;
    stats::record(Phase::KvWrite, t, 1);
    answer(r)
}

async fn kv_put(State(n): State<N>, Path(key): Path<String>, body: Bytes) -> Response {
    let mut b = Batch::new();
    b.put(None, key.as_bytes(), &body);
    write(n, b).await
}

async fn kv_delete(State(n): State<N>, Path(key): Path<String>) -> Response {
    let mut b = Batch::new();
    b.delete(None, key.as_bytes());
    write(n, b).await
}

#[derive(Deserialize)]
struct ReadQuery {
    /// `local` (may lag) or `linearizable` (the default).
    read: Option<String>,
}

async fn kv_get(
    State(n): State<N>,
    Path(key): Path<String>,
    Query(q): Query<ReadQuery>,
) -> Response {
    if q.read.as_deref() != Some("local") {
        let read = match n.read_index().await {
            Ok(r) => r,
            Err(e) => return error_response(e),
        };
        if let Err(e) = n.wait_applied(read).await {
            return error_response(e);
        }
    }
    let (value, info) = match n
        .read_local(|txn| Ok(txn.get(Database::MAIN, key.as_bytes())?.map(<[u8]>::to_vec)))
    {
        Ok(r) => r,
        Err(e) => return error_response(e),
    };
    let mut h = HeaderMap::new();
    let applied = info.applied.map_or(0, |a| a.index);
    h.insert("x-applied-index", HeaderValue::from(applied));
    h.insert("x-lag", HeaderValue::from(info.lag));
    match value {
        Some(v) => (StatusCode::OK, h, v).into_response(),
        None => (StatusCode::NOT_FOUND, h).into_response(),
    }
}
