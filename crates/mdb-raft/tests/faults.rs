//! Faults under load: 3 and 5 `mdb-raft-node` processes on loopback that
//! reach each other through fault-injecting proxies, several clients
//! writing and reading (linearizable reads, on any node), while the test
//! kills the leader (SIGKILL), kills followers and restarts them,
//! partitions the leader from the majority, cuts a link one way, delays
//! every link and drops connections. At the end it heals the network,
//! waits for the nodes to converge and checks that every node holds every
//! acknowledged write, that the nodes' data files dump identically
//! (Debian's `mdb_dump`, after a clean stop) and that the client history
//! is linearizable (stateright's checker, one register per key).
//!
//! A longer soak of random faults: `MDB_RAFT_SOAK_SECS=600 cargo test -p
//! mdb-raft --test faults -- --ignored` (`MDB_RAFT_SOAK_NODES`, default 5;
//! `MDB_RAFT_SEED` replays a schedule).

mod common;

use common::history::{History, Op, Outcome, Value};
use common::proxy::Fault;
use common::{http_within, status, wait_until, Cluster, DEADLINE};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{sleep, JoinHandle};
use std::time::{Duration, Instant};

/// How long a client waits for any answer before it counts its operation
/// as of unknown outcome.
const OP_TIMEOUT: Duration = Duration::from_secs(5);

/// A small deterministic generator (xorshift64*): the schedule and the
/// clients' choices follow from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Client threads writing and reading until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicUsize>,
    threads: Vec<JoinHandle<()>>,
    history: History,
}

impl Load {
    fn start(c: &Cluster, clients: usize, seed: u64) -> Load {
        let ops: Arc<AtomicUsize> = Arc::default();
        let stop: Arc<AtomicBool> = Arc::default();
        let acked: Arc<AtomicUsize> = Arc::default();
        let history = History::default();
        let threads = (0..clients)
            .map(|id| {
                let mut cl = KvClient {
                    id,
                    ports: c.ports.clone(),
                    ops: Arc::clone(&ops),
                    history: History::clone(&history),
                    acked: Arc::clone(&acked),
                    rng: Rng(seed ^ (id as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                    thread: (id as u64) << 32,
                    leader: 0,
                    seq: 0,
                };
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        cl.step();
                    }
                })
            })
            .collect();
        Load {
            stop,
            acked,
            threads,
            history,
        }
    }

    /// Wait until `n` more writes are acknowledged (the cluster makes
    /// progress under the current fault).
    fn progress(&self, n: usize) {
        let start = Instant::now();
        let target = self.acked.load(Ordering::Relaxed) + n;
        while self.acked.load(Ordering::Relaxed) < target {
            assert!(
                start.elapsed() < DEADLINE,
                "fewer than {n} writes acknowledged in time"
            );
            sleep(Duration::from_millis(20));
        }
    }

    fn stop(self) -> History {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().expect("a client thread");
        }
        self.history
    }
}

/// Operations on the keys of one epoch (by every client together), and
/// the keys of an epoch: each key's history stays short enough for
/// stateright's checker, which searches the orders without memoising
/// (hundreds of operations on one key do not finish).
const EPOCH_OPS: usize = 32;
const EPOCH_KEYS: usize = 4;

/// One client: writes go to the node it believes leads; linearizable reads
/// to any node.
struct KvClient {
    id: usize,
    ports: Vec<u16>,
    /// Operations begun by every client: they pick the keys.
    ops: Arc<AtomicUsize>,
    history: History,
    acked: Arc<AtomicUsize>,
    rng: Rng,
    /// Its thread id in the history; a new one after an operation of
    /// unknown outcome, which stays in flight for ever.
    thread: u64,
    leader: usize,
    seq: u64,
}

impl KvClient {
    fn step(&mut self) {
        self.seq += 1;
        let epoch = self.ops.fetch_add(1, Ordering::Relaxed) / EPOCH_OPS;
        let key = format!("k{epoch}-{}", self.rng.below(EPOCH_KEYS));
        match self.rng.below(10) {
            0..=3 => self.write(&key, Some(format!("c{}-{}", self.id, self.seq))),
            4 => self.write(&key, None),
            5 => self.write(
                &format!("u{}-{}", self.id, self.seq),
                Some(format!("c{}-{}", self.id, self.seq)),
            ),
            _ => self.read(&key),
        }
    }

    fn write(&mut self, key: &str, value: Value) {
        let op = self
            .history
            .begin(self.thread, key, Op::Write(value.clone()));
        let path = format!("/kv/{key}");
        let port = self.ports[self.leader];
        let r = match &value {
            Some(v) => http_within(port, "PUT", &path, v.as_bytes(), OP_TIMEOUT),
            None => http_within(port, "DELETE", &path, b"", OP_TIMEOUT),
        };
        let outcome = match r {
            Ok((200, _)) => {
                self.acked.fetch_add(1, Ordering::Relaxed);
                Outcome::Written
            }
            // A follower refused it: nothing was proposed.
            Ok((421, body)) => {
                self.follow(&body);
                Outcome::Failed
            }
            // Refused: the request never left (a killed node).
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Outcome::Failed,
            Ok((503, _)) | Err(_) => Outcome::Unknown,
            Ok((code, body)) => panic!("write {key}: {code} {}", String::from_utf8_lossy(&body)),
        };
        if outcome == Outcome::Unknown {
            self.thread += 1;
        }
        // Try another node at random: one that names the leader it knows
        // may be on the wrong side of a partition, naming the node that
        // just timed out.
        if matches!(outcome, Outcome::Unknown | Outcome::Failed) && self.ports[self.leader] == port
        {
            self.leader = self.rng.below(self.ports.len());
        }
        if outcome != Outcome::Written {
            sleep(Duration::from_millis(20)); // an election, most likely
        }
        self.history.end(op, outcome);
    }

    /// Aim at the leader a 421 names (or the next node).
    fn follow(&mut self, body: &[u8]) {
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let named = v["leader_addr"]
            .as_str()
            .and_then(|a| a.rsplit(':').next())
            .and_then(|p| p.parse::<u16>().ok())
            .and_then(|p| self.ports.iter().position(|x| *x == p));
        self.leader = named.unwrap_or_else(|| self.rng.below(self.ports.len()));
    }

    fn read(&mut self, key: &str) {
        let op = self.history.begin(self.thread, key, Op::Read);
        let port = self.ports[self.rng.below(self.ports.len())];
        let r = http_within(port, "GET", &format!("/kv/{key}"), b"", OP_TIMEOUT);
        let outcome = match r {
            Ok((200, body)) => Outcome::Read(Some(String::from_utf8(body).unwrap())),
            Ok((404, _)) => Outcome::Read(None),
            _ => Outcome::Failed, // a read that failed changed nothing
        };
        if outcome == Outcome::Failed {
            sleep(Duration::from_millis(20));
        }
        self.history.end(op, outcome);
    }
}

/// The faults a run injects.
#[derive(Debug, Clone, Copy)]
enum Nemesis {
    /// kill -9 the leader; a new one takes over; restart the old one.
    KillLeader,
    /// kill -9 followers (a minority), then restart them.
    KillFollowers(usize),
    /// Cut the leader and `with` followers off from the rest (a majority)
    /// both ways; the majority elects a leader; heal.
    PartitionLeader { with: usize },
    /// The leader's connections to one follower hold every byte (the
    /// follower still reaches the leader); heal.
    CutOneWay,
    /// Every link delays each chunk; heal.
    DelayAll(Duration),
    /// Close every connection between the nodes, a few times.
    ResetAll,
    /// Cut the power of the leader (if `leader`) and of `followers`
    /// followers at once: each loses every write it had not synced;
    /// restart them.
    PowerCut { leader: bool, followers: usize },
}

fn inject(c: &mut Cluster, load: &Load, n: Nemesis) {
    eprintln!("fault: {n:?}");
    let nodes = c.ports.len();
    match n {
        Nemesis::KillLeader => {
            let (l, _) = c.leader(None);
            c.kill(l);
            c.leader(Some(l));
            load.progress(40);
            c.restart(l);
        }
        Nemesis::KillFollowers(k) => {
            let (l, _) = c.leader(None);
            let fs: Vec<usize> = (1..=k).map(|d| (l + d) % nodes).collect();
            for &f in &fs {
                c.kill(f);
            }
            load.progress(20);
            for f in fs {
                c.restart(f);
            }
        }
        Nemesis::PartitionLeader { with } => {
            let (l, _) = c.leader(None);
            let minority: Vec<usize> = (0..=with).map(|d| (l + d) % nodes).collect();
            let majority: Vec<usize> = (0..nodes).filter(|i| !minority.contains(i)).collect();
            c.net.as_ref().unwrap().partition(&minority);
            c.leader_among(&majority);
            load.progress(40);
            c.net.as_ref().unwrap().set_all(Fault::Up);
        }
        Nemesis::CutOneWay => {
            let (l, _) = c.leader(None);
            c.net.as_ref().unwrap().set(l, (l + 1) % nodes, Fault::Cut);
            load.progress(40);
            c.net.as_ref().unwrap().set_all(Fault::Up);
        }
        Nemesis::DelayAll(d) => {
            c.net.as_ref().unwrap().set_all(Fault::Delay(d));
            load.progress(40);
            c.net.as_ref().unwrap().set_all(Fault::Up);
        }
        Nemesis::ResetAll => {
            for _ in 0..4 {
                c.net.as_ref().unwrap().reset_all();
                load.progress(10);
            }
        }
        Nemesis::PowerCut { leader, followers } => {
            let (l, _) = c.leader(None);
            let mut victims: Vec<usize> = (1..=followers).map(|d| (l + d) % nodes).collect();
            if leader {
                victims.push(l);
            }
            let before: Vec<usize> = victims.iter().map(|&v| undone(c, v).len()).collect();
            // SIGKILL; the nodes run with MDB_RAFT_POWERCUT=1, so at their
            // restart, before they open anything, they undo every write
            // they had not synced.
            for &v in &victims {
                c.kill(v);
            }
            if victims.len() <= (nodes - 1) / 2 || !leader {
                // A majority is left: it goes on.
                if leader {
                    c.leader(Some(l));
                }
                load.progress(40);
            }
            for &v in &victims {
                c.restart(v);
            }
            for (&v, b) in victims.iter().zip(before) {
                wait_until("the node is back", || {
                    undone(c, v).len() >= b + 2 && status(c.ports[v]).is_some()
                });
                let n: u64 = undone(c, v)[b..].iter().sum();
                eprintln!("power cut of node {}: {n} unsynced writes undone", v + 1);
                assert!(n > 0, "the power cut of node {} undid nothing", v + 1);
            }
        }
    }
    load.progress(10); // healed: the cluster takes writes again
}

/// The writes each power cut of node `i + 1` undid, per environment, in
/// order (what it printed at each start).
fn undone(c: &Cluster, i: usize) -> Vec<u64> {
    c.stderr(i)
        .lines()
        .filter_map(|l| l.strip_prefix("mdb-raft: power cut: "))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect()
}

/// Heal, stop the load, let the nodes converge, and check the run.
fn check(mut c: Cluster, load: Load) {
    let history = load.stop();
    c.net.as_ref().unwrap().set_all(Fault::Up);
    for i in 0..c.ports.len() {
        if !c.running().contains(&i) {
            c.restart(i);
        }
    }
    c.settle();
    let (acked, reads, failed, unknown) = history.counts();
    eprintln!(
        "history: {acked} writes acknowledged, {reads} reads, {failed} failed, {unknown} unknown"
    );
    let dumps = c.dumps();
    assert!(dumps[0].0.contains("database=__mdb_raft"), "{}", dumps[0].0);
    for (i, d) in dumps.iter().enumerate().skip(1) {
        assert!(
            d.0 == dumps[0].0,
            "node {}'s named databases dump as node 1's",
            i + 1
        );
        assert!(
            d.1 == dumps[0].1,
            "node {}'s main database dumps as node 1's",
            i + 1
        );
    }
    let state: BTreeMap<String, String> = dumps[0]
        .1
        .iter()
        .map(|(k, v)| {
            let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            (s(k), s(v))
        })
        .collect();
    // A key written once (`u...`) holds its acknowledged value on every
    // node; the keys written many times are checked by linearizability.
    for (k, vs) in history.acknowledged() {
        if k.starts_with('u') {
            assert_eq!(state.get(&k), vs[0].as_ref(), "acknowledged write of {k}");
        }
    }
    let t = Instant::now();
    match history.check(&state) {
        Ok(keys) => eprintln!("linearizable: {keys} keys, checked in {:?}", t.elapsed()),
        Err(e) => panic!("{e}"),
    }
}

/// `nodes` nodes, one client more than nodes, every kind of fault once
/// (a minority killed, the leader partitioned with a minority).
fn every_fault_once(nodes: usize) {
    let minority = (nodes - 1) / 2;
    let mut c = Cluster::start_proxied(nodes);
    c.leader(None);
    let load = Load::start(&c, nodes + 1, nodes as u64);
    load.progress(20);
    for n in [
        Nemesis::KillLeader,
        Nemesis::KillFollowers(minority),
        Nemesis::PartitionLeader { with: minority - 1 },
        Nemesis::DelayAll(Duration::from_millis(40)),
        Nemesis::CutOneWay,
        Nemesis::ResetAll,
    ] {
        inject(&mut c, &load, n);
    }
    check(c, load);
}

#[test]
fn three_nodes_under_faults_stay_linearizable() {
    every_fault_once(3);
}

#[test]
fn five_nodes_under_faults_stay_linearizable() {
    every_fault_once(5);
}

/// Power cuts of `(leader, followers)` at once, in turn, under the
/// load of four clients (writes and linearizable reads), on three nodes
/// taking snapshots every 100 entries (so that cuts hit snapshot builds
/// and log purges too); then the checks of [`check`].
fn power_cuts(cuts: &[(bool, usize)]) {
    let envs = [("MDB_RAFT_POWERCUT", "1")];
    let args = ["--snapshot-logs", "100", "--keep-logs", "20"];
    let mut c = Cluster::start_proxied_with(3, &args, &envs);
    c.leader(None);
    let load = Load::start(&c, 4, 11);
    load.progress(20);
    for &(leader, followers) in cuts {
        inject(&mut c, &load, Nemesis::PowerCut { leader, followers });
    }
    check(c, load);
}

/// Power cuts (not kill -9, which keeps what the kernel holds) of a
/// follower, of the leader, of a follower, of the leader: every
/// acknowledged write survives, the nodes dump identically and the
/// history is linearizable.
#[test]
fn power_cuts_of_a_follower_and_the_leader_lose_no_acknowledged_write() {
    power_cuts(&[(false, 1), (true, 0), (false, 1), (true, 0)]);
}

/// Power cuts of a majority (the leader and a follower) and of every
/// node at once, after a follower's and the leader's.
#[test]
#[ignore = "fails in about 1 run of 57: a cut while a follower installs a snapshot leaves its log purged past it, and the node cannot start (docs/replication.md, Power cuts, Open)"]
fn power_cuts_of_a_majority_and_of_every_node() {
    power_cuts(&[(false, 1), (true, 0), (true, 1), (true, 2)]);
}

#[test]
#[ignore = "a soak: MDB_RAFT_SOAK_SECS=600 cargo test -p mdb-raft --test faults -- --ignored"]
fn soak_random_faults() {
    let env = |k: &str, d: u64| std::env::var(k).ok().map_or(d, |v| v.parse().expect(k));
    let secs = env("MDB_RAFT_SOAK_SECS", 300);
    let nodes = env("MDB_RAFT_SOAK_NODES", 5) as usize;
    let seed = env(
        "MDB_RAFT_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1,
    );
    eprintln!("soak: {nodes} nodes, {secs} s, MDB_RAFT_SEED={seed}");
    let mut rng = Rng(seed);
    let mut c = Cluster::start_proxied(nodes);
    c.leader(None);
    let load = Load::start(&c, 6, seed);
    let minority = (nodes - 1) / 2;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(secs) {
        let n = match rng.below(6) {
            0 => Nemesis::KillLeader,
            1 => Nemesis::KillFollowers(1 + rng.below(minority)),
            2 => Nemesis::PartitionLeader {
                with: rng.below(minority),
            },
            3 => Nemesis::DelayAll(Duration::from_millis(5 + rng.below(100) as u64)),
            4 => Nemesis::CutOneWay,
            _ => Nemesis::ResetAll,
        };
        inject(&mut c, &load, n);
    }
    check(c, load);
}

/// The checker itself: it accepts a history whose operations can be
/// ordered, and rejects a stale read and a lost acknowledged write.
#[test]
fn checker_rejects_stale_reads_and_lost_writes() {
    let s = |v: &str| Some(v.to_string());
    let h = History::default();
    let w = h.begin(1, "k", Op::Write(s("a")));
    let r = h.begin(2, "k", Op::Read); // concurrent with the write
    h.end(r, Outcome::Read(None));
    h.end(w, Outcome::Written);
    let u = h.begin(3, "k", Op::Write(s("b")));
    h.end(u, Outcome::Unknown); // may or may not have happened
    let final_a = BTreeMap::from([("k".to_string(), "a".to_string())]);
    let final_b = BTreeMap::from([("k".to_string(), "b".to_string())]);
    assert_eq!(h.check(&final_a), Ok(1));
    assert_eq!(h.check(&final_b), Ok(1));
    assert!(
        h.check(&BTreeMap::new()).is_err(),
        "an acknowledged write lost"
    );

    let r = h.begin(2, "k", Op::Read); // after the write returned
    h.end(r, Outcome::Read(None));
    assert!(h.check(&final_a).is_err(), "a stale read");

    let failed = History::default();
    let w = failed.begin(1, "k", Op::Write(s("a")));
    failed.end(w, Outcome::Failed);
    assert_eq!(failed.check(&BTreeMap::new()), Ok(0));
    assert!(
        failed.check(&final_a).is_err(),
        "a refused write took effect"
    );
}
