//! Three `mdb-raft-node` processes on loopback under a write load from
//! several client threads: every acknowledged write is on every node, and
//! the nodes' data files dump identically (Debian's `mdb_dump`), also
//! after the leader is killed with SIGKILL and restarted.

mod common;

use common::{get_local, write_load, Client, Cluster, DEADLINE};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// Acknowledged writes: key -> value (`None`: deleted).
type Acked = Arc<Mutex<BTreeMap<String, Option<Vec<u8>>>>>;

fn check_all(c: &mut Cluster, acked: &BTreeMap<String, Option<Vec<u8>>>) {
    c.settle();
    for i in 0..c.ports.len() {
        for (k, v) in acked {
            assert_eq!(
                get_local(c.ports[i], k).as_deref(),
                v.as_deref(),
                "node {} holds the acknowledged write of {k}",
                i + 1
            );
        }
    }
    let dumps = c.dumps();
    assert!(dumps[0].0.contains("database=__mdb_raft"), "{}", dumps[0].0);
    let live = acked.values().filter(|v| v.is_some()).count();
    assert_eq!(dumps[0].1.len(), live, "node 1's main database");
    for (i, d) in dumps.iter().enumerate().skip(1) {
        assert!(*d == dumps[0], "node {} dumps as node 1 does", i + 1);
    }
}

#[test]
fn three_nodes_hold_every_acknowledged_write() {
    let mut c = Cluster::start(3);
    c.leader(None);
    let acked: Acked = Arc::default();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (ports, acked) = (c.ports.clone(), acked.clone());
            std::thread::spawn(move || {
                let mut cl = Client::new(&ports);
                for i in 0..40 {
                    let (k, v) = (format!("t{t}-{i:03}"), format!("value {t} {i}"));
                    cl.write(&k, Some(v.as_bytes()));
                    acked.lock().unwrap().insert(k, Some(v.into_bytes()));
                }
                // Delete every fifth key again.
                for i in (0..40).step_by(5) {
                    let k = format!("t{t}-{i:03}");
                    cl.write(&k, None);
                    acked.lock().unwrap().insert(k, None);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a client thread");
    }
    let acked = acked.lock().unwrap().clone();
    assert_eq!(acked.len(), 160);
    check_all(&mut c, &acked);
}

fn wait_acked(acked: &Acked, at_least: usize) {
    let start = Instant::now();
    while acked.lock().unwrap().len() < at_least {
        assert!(
            start.elapsed() < DEADLINE,
            "fewer than {at_least} writes acknowledged in time"
        );
        sleep(Duration::from_millis(20));
    }
}

#[test]
fn leader_killed_under_load_loses_no_acknowledged_write() {
    let mut c = Cluster::start(3);
    let (old, _) = c.leader(None);
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let threads = write_load(&c.ports, 4, &stop, {
        let acked = acked.clone();
        move |k, v| {
            acked.lock().unwrap().insert(k, Some(v));
        }
    });
    wait_acked(&acked, 40);
    c.kill(old);
    let n = acked.lock().unwrap().len();
    let (new, _) = c.leader(Some(old));
    assert_ne!(new, old);
    wait_acked(&acked, n + 40); // writes go on with two nodes
    c.restart(old);
    let n = acked.lock().unwrap().len();
    wait_acked(&acked, n + 40);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("a client thread");
    }
    let acked = acked.lock().unwrap().clone();
    check_all(&mut c, &acked); // the old leader caught up
}
