//! Seeding a new node from an `mdb backup` directory of a member's data
//! (`mdb-raft-node --join --seed-from BACKUP`): the node starts from the
//! backup and needs only the log since from the leader, no snapshot; the
//! leader refuses a backup of another cluster, and falls back to a
//! snapshot when it purged the log the node would need.

mod common;

use common::{
    acked_more, admin, get_local, http, status, wait_until, write_load, Acked, Client, Cluster,
};
use mdb::{EnvFlags, EnvOptions};
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Back up the data environment of a running node into `dest` as
/// `mdb backup` does (a read-only handle, one read transaction's
/// snapshot): a full backup if `dest` has none, else an incremental one.
fn backup(data: &Path, dest: &Path) -> u64 {
    let env = EnvOptions::new()
        .flags(EnvFlags::READ_ONLY)
        .open(data)
        .expect("open a node's data read-only");
    let incremental = dest.join("manifest.json").exists();
    env.backup(dest, incremental, None)
        .expect("back up a node's data")
        .txnid
}

fn field(port: u16, name: &str) -> Option<u64> {
    status(port).and_then(|s| s[name].as_u64())
}

/// A cluster of three voters under a load of three clients; node 4 is
/// seeded from a full and an incremental backup of a follower, taken
/// under the load, then added and promoted while the writes go on.
/// Returns the cluster (node 4 running) and the acknowledged writes.
fn seed_a_fourth_node_under_load(args: &[&str], purge_first: bool) -> (Cluster, Acked) {
    let mut c = Cluster::start_with(4, 3, args);
    let (leader, _) = c.leader(None);
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let threads = write_load(&c.ports, 3, &stop, {
        let acked = acked.clone();
        move |k, v| {
            acked.lock().unwrap().insert(k, v);
        }
    });
    acked_more(&acked, 60);
    let follower = (0..3).find(|i| *i != leader).unwrap();
    let dest = c.dir.path().join("backup");
    backup(&c.data_dir(follower), &dest);
    acked_more(&acked, 30);
    backup(&c.data_dir(follower), &dest);
    acked_more(&acked, 30);
    if purge_first {
        // The leader purges its log well past the backup.
        let l = c.leader(None).0;
        let backed_up = field(c.ports[l], "last_log_index").unwrap();
        wait_until("the leader purges past the backup", || {
            field(c.ports[l], "purged_index").unwrap_or(0) > backed_up + 20
        });
    }
    c.join_with(3, &["--seed-from", dest.to_str().unwrap()]);
    wait_until("node 4 answers", || status(c.ports[3]).is_some());
    let body = format!(r#"{{"id":4,"addr":"{}"}}"#, c.addr(3));
    admin(&c, "/cluster/learner", &body);
    acked_more(&acked, 30);
    admin(&c, "/cluster/promote", r#"{"id":4}"#);
    acked_more(&acked, 30);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("a client thread");
    }
    (c, acked)
}

/// Every acknowledged write is on node 4, and the four data files dump
/// identically once stopped.
fn check_converged(c: &mut Cluster, acked: &Acked) {
    let last = c.settle();
    assert_eq!(field(c.ports[3], "applied_index"), Some(last));
    for (k, v) in acked.lock().unwrap().iter() {
        assert_eq!(
            get_local(c.ports[3], k).as_deref(),
            Some(&v[..]),
            "node 4 holds the acknowledged write of {k}"
        );
    }
    let dumps = c.dumps();
    for (i, d) in dumps.iter().enumerate().skip(1) {
        assert!(*d == dumps[0], "node {} dumps as node 1 does", i + 1);
    }
}

#[test]
fn a_node_seeded_from_a_backup_needs_only_the_log_since() {
    // The leader keeps its log past its snapshots: at a faster write rate
    // it could otherwise purge past the backup before node 4 joins.
    let (mut c, acked) = seed_a_fourth_node_under_load(&["--keep-logs", "1000000"], false);
    let s4 = status(c.ports[3]).expect("node 4 answers");
    // It started from the backup: its log begins past the backup's
    // applied index (the entries before were never sent to it) ...
    assert!(s4["purged_index"].as_u64() > Some(0), "not seeded: {s4}");
    // ... and it received no snapshot: the leader's log covered it.
    assert_eq!(s4["snapshots_installed"].as_u64(), Some(0), "{s4}");
    assert_eq!(s4["voters"].as_array().map(Vec::len), Some(4), "{s4}");
    let leader = status(c.ports[c.leader(None).0]).unwrap();
    assert_eq!(s4["cluster_id"], leader["cluster_id"], "{s4}");
    check_converged(&mut c, &acked);
}

#[test]
fn a_seeded_node_gets_a_snapshot_when_the_leader_purged_the_log_since() {
    let args = ["--snapshot-logs", "20", "--keep-logs", "0"];
    let (mut c, acked) = seed_a_fourth_node_under_load(&args, true);
    let s4 = status(c.ports[3]).expect("node 4 answers");
    assert!(
        s4["snapshots_installed"].as_u64() >= Some(1),
        "node 4 caught up without a snapshot: {s4}"
    );
    check_converged(&mut c, &acked);
}

#[test]
fn a_backup_of_another_cluster_is_refused() {
    let mut a = Cluster::start_with(4, 3, &[]);
    let mut b = Cluster::start_with(3, 3, &[]);
    let (mut ca, mut cb) = (Client::new(&a.ports[..3]), Client::new(&b.ports));
    for i in 0..20 {
        ca.write(&format!("a{i}"), Some(b"in a"));
        cb.write(&format!("b{i}"), Some(b"in b"));
    }
    b.settle();
    b.stop_nodes(&[0, 1, 2]);
    let dest = b.dir.path().join("backup");
    backup(&b.data_dir(1), &dest);

    a.join_with(3, &["--seed-from", dest.to_str().unwrap()]);
    wait_until("node 4 answers", || status(a.ports[3]).is_some());
    let body = format!(r#"{{"id":4,"addr":"{}"}}"#, a.addr(3));
    let mut refusal = None;
    wait_until("the leader answers the learner request", || {
        let l = a.leader_among(&[0, 1, 2]);
        match http(a.ports[l], "POST", "/cluster/learner", body.as_bytes()) {
            Ok((421 | 503, _)) | Err(_) => false,
            Ok(r) => {
                refusal = Some(r);
                true
            }
        }
    });
    let (code, msg) = refusal.unwrap();
    let msg: Value = serde_json::from_slice(&msg).unwrap();
    assert_eq!(code, 409, "{msg}");
    assert!(
        msg["error"].as_str().unwrap().contains("another cluster"),
        "{msg}"
    );
    let leader = status(a.ports[a.leader_among(&[0, 1, 2])]).unwrap();
    assert!(leader["members"].get("4").is_none(), "{leader}");
    // The cluster goes on without it.
    ca.write("after", Some(b"refusal"));
    a.stop(3);
    let dumps = a.dumps_of(&[0, 1, 2]);
    assert!(dumps[0].1.contains_key(b"after".as_slice()));
    assert!(!dumps[0].1.contains_key(b"b0".as_slice()));
    for d in &dumps[1..] {
        assert!(*d == dumps[0]);
    }
}
