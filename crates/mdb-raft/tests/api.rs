//! The Rust API of three nodes in one process: a write on a follower names
//! the leader, a follower's linearizable read sees an acknowledged write,
//! a local read says how far it has applied, and a node reopened on its
//! directory keeps what it applied and catches up.

use mdb::{Database, Txn};
use mdb_raft::{Batch, Config, Error, LogId, ReplicatedEnv};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(120);

fn members(n: usize) -> BTreeMap<u64, String> {
    let ls: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    ls.iter()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.local_addr().unwrap().to_string()))
        .collect()
}

fn open(dir: &Path, id: u64, members: &BTreeMap<u64, String>) -> ReplicatedEnv {
    ReplicatedEnv::open(Config::new(id, dir.join(id.to_string()), members.clone())).unwrap()
}

/// Retry `f` while no leader is known or reachable (an election).
fn retry<T>(mut f: impl FnMut() -> mdb_raft::Result<T>) -> T {
    let start = Instant::now();
    loop {
        match f() {
            Ok(v) => return v,
            Err(e @ (Error::NotLeader { .. } | Error::Unavailable(_))) => {
                assert!(start.elapsed() < DEADLINE, "no leader in time: {e}");
                sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Write on whichever node leads.
fn write(nodes: &[&ReplicatedEnv], b: &Batch) -> LogId {
    retry(|| {
        let mut last = Err(Error::NotLeader { leader: None });
        for n in nodes {
            last = n.write(b.clone());
            if last.is_ok() {
                break;
            }
        }
        last
    })
}

fn read_ada(t: &mdb::RoTxn<'_>) -> mdb::Result<Option<Vec<u8>>> {
    match t.open_db("users") {
        Ok(db) => Ok(t.get(db, b"ada")?.map(<[u8]>::to_vec)),
        Err(e) if e.kind() == mdb::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[test]
fn followers_name_the_leader_and_read_linearizably() {
    let dir = tempfile::tempdir().unwrap();
    let m = members(3);
    let nodes: Vec<ReplicatedEnv> = (1..=3).map(|id| open(dir.path(), id, &m)).collect();
    let mut b = Batch::new();
    b.put(Some("users"), b"ada", b"1815");
    let id = write(&nodes.iter().collect::<Vec<_>>(), &b);

    // Every follower refuses a write and names the leader it knows.
    let leader = retry(|| nodes[0].leader().ok_or(Error::NotLeader { leader: None }));
    assert_eq!(m[&leader.0], leader.1);
    for n in nodes.iter().filter(|n| n.status().id != leader.0) {
        match n.write(b.clone()) {
            Err(Error::NotLeader { leader: Some(l) }) => assert_eq!(m[&l.0], l.1),
            Err(Error::NotLeader { leader: None }) => {} // an election began meanwhile
            other => panic!("a follower's write: {other:?}"),
        }
        // Linearizable: the acknowledged write is seen at once.
        let v = retry(|| n.read_linearizable(read_ada));
        assert_eq!(v.as_deref(), Some(&b"1815"[..]));
        let (v, info) = n.read_local(read_ada).unwrap();
        assert_eq!(v.as_deref(), Some(&b"1815"[..]));
        assert!(info.applied.unwrap().index >= id.index, "{info:?}");
    }
}

#[test]
fn a_reopened_node_keeps_what_it_applied_and_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let m = members(3);
    let mut nodes: Vec<Option<ReplicatedEnv>> =
        (1..=3).map(|id| Some(open(dir.path(), id, &m))).collect();
    let mut b = Batch::new();
    b.put(None, b"k", b"1");
    let all: Vec<&ReplicatedEnv> = nodes.iter().flatten().collect();
    let first = write(&all, &b);
    // Close a node that has applied the write.
    let i = retry(|| {
        (0..3)
            .find(|i| {
                let n = nodes[*i].as_ref().unwrap();
                n.status().applied_index >= Some(first.index)
            })
            .ok_or(Error::Unavailable("not applied yet".into()))
    });
    let closed = nodes[i].take().unwrap();
    let before = closed.read_local(|t| t.get(Database::MAIN, b"k").map(|v| v.map(<[u8]>::to_vec)));
    let (v, info) = before.unwrap();
    assert_eq!(v.as_deref(), Some(&b"1"[..]));
    drop(closed);
    // Two nodes are a quorum: writes go on.
    let mut b = Batch::new();
    b.put(None, b"k", b"2");
    let all: Vec<&ReplicatedEnv> = nodes.iter().flatten().collect();
    let second = write(&all, &b);
    // Reopened: what it applied is there before it hears from anyone...
    let n = open(dir.path(), i as u64 + 1, &m);
    let (_, reopened) = n.read_local(|_| Ok(())).unwrap();
    assert!(reopened.applied >= info.applied, "{reopened:?} < {info:?}");
    // ...and it catches up with the rest.
    let start = Instant::now();
    loop {
        let (v, info) = n
            .read_local(|t| t.get(Database::MAIN, b"k").map(|v| v.map(<[u8]>::to_vec)))
            .unwrap();
        if info.applied.is_some_and(|a| a.index >= second.index) {
            assert_eq!(v.as_deref(), Some(&b"2"[..]));
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "node {} did not catch up",
            i + 1
        );
        sleep(Duration::from_millis(20));
    }
}
