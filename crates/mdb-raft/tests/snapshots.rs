//! Snapshots and log compaction: the leader's log is purged up to its
//! snapshots, and a node added with an empty directory catches up from a
//! snapshot (a hot copy of the leader's data environment) plus the log
//! since, not by replaying history, then holds what every node holds.

mod common;

use common::{admin, get_local, status, wait_until, Client, Cluster};

fn index(port: u16, field: &str) -> u64 {
    status(port).and_then(|s| s[field].as_u64()).unwrap_or(0)
}

/// Write `k{i:04}` = `value {i}` and keep it as acknowledged.
fn write(cl: &mut Client, acked: &mut Vec<(String, String)>, i: u32) {
    let (k, v) = (format!("k{i:04}"), format!("value {i}"));
    cl.write(&k, Some(v.as_bytes()));
    acked.push((k, v));
}

#[test]
fn a_new_node_catches_up_from_a_snapshot_and_the_log_since() {
    // Three voters; a fourth joins later. A snapshot every 20 entries,
    // none of the log kept below it.
    let args = ["--snapshot-logs", "20", "--keep-logs", "0"];
    let mut c = Cluster::start_with(4, 3, &args);
    let (leader, _) = c.leader(None);
    let mut cl = Client::new(&c.ports);
    let mut acked = Vec::new();
    for i in 0..150 {
        write(&mut cl, &mut acked, i);
    }
    // The leader purged its log: a node that starts empty cannot replay it.
    let port = c.ports[leader];
    wait_until("the leader purges its log", || {
        index(port, "purged_index") >= 100
    });
    assert!(index(port, "snapshots_built") >= 1);

    c.join(3);
    let body = format!(r#"{{"id":4,"addr":"{}"}}"#, c.addr(3));
    admin(&c, "/cluster/learner", &body);
    for i in 150..200 {
        write(&mut cl, &mut acked, i);
    }
    admin(&c, "/cluster/promote", r#"{"id":4}"#);
    for i in 200..220 {
        write(&mut cl, &mut acked, i);
    }
    let last = c.settle();
    let s4 = status(c.ports[3]).expect("node 4 answers");
    assert_eq!(s4["applied_index"].as_u64(), Some(last));
    assert!(
        s4["snapshots_installed"].as_u64() >= Some(1),
        "node 4 caught up without a snapshot: {s4}"
    );
    assert_eq!(s4["voters"].as_array().map(Vec::len), Some(4), "{s4}");
    for i in 0..4 {
        for (k, v) in &acked {
            assert_eq!(get_local(c.ports[i], k).as_deref(), Some(v.as_bytes()));
        }
    }
    let statuses: Vec<_> = (0..4).map(|i| status(c.ports[i])).collect();
    let dumps = c.dumps();
    assert!(
        dumps[0].1.contains_key(b"k0219".as_slice()),
        "{}\n{statuses:?}",
        dumps[0].0
    );
    for (i, d) in dumps.iter().enumerate().skip(1) {
        assert!(*d == dumps[0], "node {} dumps as node 1 does", i + 1);
    }
}

#[test]
fn a_follower_down_past_the_purge_point_installs_a_snapshot_over_its_data() {
    let args = ["--snapshot-logs", "20", "--keep-logs", "0"];
    let mut c = Cluster::start_with(3, 3, &args);
    let (leader, _) = c.leader(None);
    let mut cl = Client::new(&c.ports);
    let mut acked = Vec::new();
    for i in 0..30 {
        write(&mut cl, &mut acked, i);
    }
    // A follower stops with data of its own; the log moves on past it
    // and is purged.
    let down = (0..3).find(|i| *i != leader).unwrap();
    c.settle();
    c.stop(down);
    let held = index(c.ports[leader], "last_log_index");
    for i in 30..150 {
        write(&mut cl, &mut acked, i);
    }
    let port = c.ports[c.leader(None).0];
    wait_until("the leader purges past the stopped node", || {
        index(port, "purged_index") > held + 20
    });
    c.restart(down);
    for i in 150..170 {
        write(&mut cl, &mut acked, i);
    }
    let last = c.settle();
    let s = status(c.ports[down]).expect("the restarted node answers");
    assert_eq!(s["applied_index"].as_u64(), Some(last));
    assert!(
        s["snapshots_installed"].as_u64() >= Some(1),
        "the restarted node caught up without a snapshot: {s}"
    );
    for (k, v) in &acked {
        assert_eq!(get_local(c.ports[down], k).as_deref(), Some(v.as_bytes()));
    }
    let dumps = c.dumps();
    for (i, d) in dumps.iter().enumerate().skip(1) {
        assert!(*d == dumps[0], "node {} dumps as node 1 does", i + 1);
    }
}

#[test]
fn a_follower_far_behind_catches_up_from_the_log_without_snapshots() {
    // No snapshots: the follower gets every entry it missed from the log,
    // in AppendEntries requests that must each fit in a heartbeat period.
    let mut c = Cluster::start_with(3, 3, &["--snapshot-logs", "0"]);
    let (leader, _) = c.leader(None);
    let down = (0..3).find(|i| *i != leader).unwrap();
    c.stop(down);
    let mut cl = Client::new(&c.ports);
    let value = vec![b'v'; 4096];
    for i in 0..400 {
        cl.write(&format!("k{i:04}"), Some(&value));
    }
    c.restart(down);
    let last = c.settle();
    let s = status(c.ports[down]).expect("the restarted node answers");
    assert_eq!(s["applied_index"].as_u64(), Some(last));
    assert_eq!(s["snapshots_installed"].as_u64(), Some(0), "{s}");
    let dumps = c.dumps();
    for (i, d) in dumps.iter().enumerate().skip(1) {
        assert!(*d == dumps[0], "node {} dumps as node 1 does", i + 1);
    }
}
