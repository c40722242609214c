//! Membership changes under a write load: a three-node cluster adds a
//! fourth node (a learner, then a voter), then removes the node that
//! leads; the writes go on throughout, and every acknowledged write is
//! on every remaining member, whose data files dump identically.

mod common;

use common::{acked_more, admin, get_local, status, wait_until, write_load, Acked, Cluster};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn three_nodes_grow_to_four_then_remove_the_leader_under_load() {
    let mut c = Cluster::start_with(4, 3, &[]);
    c.leader(None);
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let threads = write_load(&c.ports, 4, &stop, {
        let acked = acked.clone();
        move |k, v| {
            acked.lock().unwrap().insert(k, v);
        }
    });
    acked_more(&acked, 40);

    // Node 4 starts empty, is added as a learner, then made a voter.
    c.join(3);
    let body = format!(r#"{{"id":4,"addr":"{}"}}"#, c.addr(3));
    admin(&c, "/cluster/learner", &body);
    acked_more(&acked, 40);
    admin(&c, "/cluster/promote", r#"{"id":4}"#);
    acked_more(&acked, 40);

    // Remove whichever node leads now, then stop it.
    let (gone, _) = c.leader(None);
    admin(&c, "/cluster/remove", &format!(r#"{{"id":{}}}"#, gone + 1));
    c.stop(gone);
    let rest: Vec<usize> = (0..4).filter(|i| *i != gone).collect();
    wait_until("the others name a new leader", || {
        rest.iter().all(|i| {
            status(c.ports[*i]).is_some_and(|s| {
                s["leader"].as_u64().is_some_and(|l| l != gone as u64 + 1)
                    && s["voters"].as_array().map(Vec::len) == Some(3)
            })
        })
    });
    acked_more(&acked, 40);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("a client thread");
    }

    let acked = acked.lock().unwrap().clone();
    c.settle();
    for &i in &rest {
        let s = status(c.ports[i]).unwrap();
        let members = s["members"].as_object().unwrap();
        assert!(!members.contains_key(&(gone + 1).to_string()), "{s}");
        for (k, v) in &acked {
            assert_eq!(
                get_local(c.ports[i], k).as_deref(),
                Some(&v[..]),
                "node {} holds the acknowledged write of {k}",
                i + 1
            );
        }
    }
    let dumps = c.dumps_of(&rest);
    for (i, d) in dumps.iter().enumerate().skip(1) {
        assert!(
            *d == dumps[0],
            "node {} dumps as node {} does",
            rest[i] + 1,
            rest[0] + 1
        );
    }
}
