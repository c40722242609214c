//! `mdb cluster status` against a live three-node cluster (mdb-raft's
//! nodes, in this process, on loopback ports picked here): the members,
//! the leader, each node's applied index and lag; then with one node
//! gone, which it reports unreachable (exit status 2).

use mdb_raft::{Batch, Config, Error, ReplicatedEnv};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::process::{Command, Output};
use std::thread::sleep;
use std::time::{Duration, Instant};

const MDB: &str = env!("CARGO_BIN_EXE_mdb");
const DEADLINE: Duration = Duration::from_secs(120);

fn status(addr: &str, json: bool) -> Output {
    let mut c = Command::new(MDB);
    c.args(["cluster", "status"]);
    if json {
        c.arg("--json");
    }
    c.arg(addr).output().expect("run mdb cluster status")
}

/// Poll until `f` gives a value; fail at the deadline.
fn wait<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "{what}: not in time");
        sleep(Duration::from_millis(50));
    }
}

#[test]
fn cluster_status_shows_members_leader_applied_and_lag() {
    let dir = tempfile::tempdir().unwrap();
    let ls: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let m: BTreeMap<u64, String> = ls
        .iter()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.local_addr().unwrap().to_string()))
        .collect();
    drop(ls);
    let mut nodes: Vec<Option<ReplicatedEnv>> = (1..=3)
        .map(|id| {
            let c = Config::new(id, dir.path().join(id.to_string()), m.clone());
            Some(ReplicatedEnv::open(c).unwrap())
        })
        .collect();
    let mut b = Batch::new();
    b.put(None, b"k", b"v");
    let written = wait("a write acknowledged", || {
        nodes
            .iter()
            .flatten()
            .find_map(|n| match n.write(b.clone()) {
                Ok(id) => Some(id),
                Err(Error::NotLeader { .. } | Error::Unavailable(_)) => None,
                Err(e) => panic!("{e}"),
            })
    });
    // Every node has applied all of the leader's log: (leader, term, last).
    let settled = |nodes: &[Option<ReplicatedEnv>]| {
        let s: Vec<_> = nodes.iter().flatten().map(|n| n.status()).collect();
        let leader = s.iter().find(|s| s.state == "Leader")?;
        let last = leader.last_log_index?;
        s.iter()
            .all(|s| s.applied_index == Some(last) && s.leader == Some(leader.id))
            .then_some((leader.id, leader.term, last))
    };
    // Asked of a follower: the table (again if an election came between).
    let (out, (leader, term, last)) = wait("a status while the cluster is settled", || {
        let before = settled(&nodes)?;
        let follower = (1..=3u64).find(|i| *i != before.0).unwrap();
        let out = status(&m[&follower], false);
        (settled(&nodes) == Some(before)).then_some((out, before))
    });
    assert!(last >= written.index);
    let follower = (1..=3u64).find(|i| *i != leader).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(&*format!(
            "leader {leader}, term {term}, last log index {last}"
        ))
    );
    assert!(lines.next().unwrap().starts_with("id "), "{text}");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 3, "{text}");
    for (i, r) in rows.iter().enumerate() {
        let id = i as u64 + 1;
        let state = if id == leader { "Leader" } else { "Follower" };
        let (applied, lag) = (last.to_string(), "0".to_string());
        let want = [
            &id.to_string(),
            "voter",
            state,
            &m[&id],
            &applied,
            &lag,
            "-",
        ];
        assert_eq!(r[..], want[..], "{text}");
    }

    // As JSON.
    let out = status(&m[&leader], true);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["leader"], leader);
    assert_eq!(v["members"].as_array().unwrap().len(), 3);
    for mem in v["members"].as_array().unwrap() {
        assert_eq!(mem["applied_index"], last, "{v}");
        assert_eq!(mem["lag"], 0, "{v}");
    }

    // A follower stops: it is reported, and the exit status says so.
    let gone = (1..=3u64).find(|i| *i != leader && *i != follower).unwrap();
    drop(nodes[gone as usize - 1].take());
    let out = status(&m[&follower], false);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("{gone} ")))
        .unwrap();
    assert!(row.contains("unreachable"), "{text}");

    // A node that does not answer at all: an error.
    let out = status(&m[&gone], false);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&m[&gone]));
}
