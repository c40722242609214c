//! A cluster of `mdb-raft-node` processes on 127.0.0.1 for the tests: ports
//! picked here, processes killed on drop (also when a test fails), and a
//! small HTTP/1.1 client over std's TcpStream.

#![allow(dead_code)]

pub mod history;
pub mod proxy;

use proxy::Proxies;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long any wait of these tests may take before it fails: generous,
/// for a loaded machine; the tests never assert on time otherwise.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Node processes; node `i + 1` listens on `ports[i]`.
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub ports: Vec<u16>,
    procs: Vec<Option<Child>>,
    /// Nodes `1..=voters` initialise the cluster; the others join it.
    voters: usize,
    /// Given to every node.
    args: Vec<String>,
    /// Set in every node's environment.
    envs: Vec<(String, String)>,
    /// The links between the nodes, when they go through proxies.
    pub net: Option<Proxies>,
}

impl Cluster {
    /// Start `n` nodes.
    pub fn start(n: usize) -> Cluster {
        Cluster::start_with(n, n, &[])
    }

    /// Start `n` nodes that reach each other through fault-injecting
    /// proxies (`self.net`); clients still reach each node directly.
    pub fn start_proxied(n: usize) -> Cluster {
        Cluster::start_on(n, n, &[], &[], true)
    }

    /// [`Cluster::start_proxied`], with `args` for every node and `envs`
    /// in every node's environment.
    pub fn start_proxied_with(n: usize, args: &[&str], envs: &[(&str, &str)]) -> Cluster {
        Cluster::start_on(n, n, args, envs, true)
    }

    /// Pick ports for `n` nodes and start the first `voters` of them, which
    /// initialise the cluster; `args` go to every node. The others start
    /// with [`Cluster::join`].
    pub fn start_with(n: usize, voters: usize, args: &[&str]) -> Cluster {
        Cluster::start_on(n, voters, args, &[], false)
    }

    fn start_on(
        n: usize,
        voters: usize,
        args: &[&str],
        envs: &[(&str, &str)],
        proxied: bool,
    ) -> Cluster {
        let ports = free_ports(n);
        let net = proxied.then(|| Proxies::start(&ports));
        let mut c = Cluster {
            dir: tempfile::tempdir().expect("a temporary directory"),
            ports,
            procs: (0..n).map(|_| None).collect(),
            voters,
            args: args.iter().map(|a| a.to_string()).collect(),
            envs: envs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            net,
        };
        for i in 0..voters {
            c.spawn(i);
        }
        c
    }

    /// Start node `i + 1` (beyond the initial voters) with an empty
    /// directory, waiting to be added to the cluster.
    pub fn join(&mut self, i: usize) {
        self.join_with(i, &[]);
    }

    /// [`Cluster::join`] with more arguments for this node (`--seed-from`).
    pub fn join_with(&mut self, i: usize, args: &[&str]) {
        assert!(i >= self.voters, "node {} is an initial voter", i + 1);
        self.spawn_with(i, args);
    }

    /// `host:port` of node `i + 1`.
    pub fn addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.ports[i])
    }

    fn members(&self) -> String {
        let m: Vec<String> = self.ports[..self.voters]
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{}=127.0.0.1:{p}", i + 1))
            .collect();
        m.join(",")
    }

    /// The data environment of node `i + 1`.
    pub fn data_dir(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("n{}", i + 1)).join("data")
    }

    fn spawn(&mut self, i: usize) {
        self.spawn_with(i, &[]);
    }

    fn spawn_with(&mut self, i: usize, extra: &[&str]) {
        assert!(self.procs[i].is_none(), "node {} runs already", i + 1);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("n{}.log", i + 1)))
            .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mdb-raft-node"));
        cmd.args(["--id", &(i + 1).to_string(), "--dir"])
            .arg(self.dir.path().join(format!("n{}", i + 1)))
            .args(if i < self.voters {
                vec!["--members".to_string(), self.members()]
            } else {
                let me = format!("{}={}", i + 1, self.addr(i));
                vec!["--members".to_string(), me, "--join".to_string()]
            })
            .args(&self.args)
            .args(extra)
            .envs(self.envs.iter().map(|(k, v)| (k, v)));
        if let Some(net) = &self.net {
            let routes: Vec<String> = (0..self.ports.len())
                .filter(|j| *j != i)
                .map(|j| format!("{}=127.0.0.1:{}", j + 1, net.port(i, j)))
                .collect();
            cmd.args(["--route", &routes.join(",")]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start mdb-raft-node");
        self.procs[i] = Some(child);
    }

    /// kill -9 node `i + 1`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.procs[i].take() {
            let _ = c.kill(); // SIGKILL
            let _ = c.wait();
        }
    }

    /// Stop node `i + 1` cleanly (SIGTERM) and wait for it to exit: its
    /// data file is then a plain LMDB file.
    pub fn stop(&mut self, i: usize) {
        self.stop_nodes(&[i]);
    }

    /// Stop the nodes `nodes` together: SIGTERM to each, then wait for
    /// each to exit. Together, so that the nodes still running cannot
    /// elect a leader meanwhile, whose first entry some of them would
    /// apply and the others not.
    pub fn stop_nodes(&mut self, nodes: &[usize]) {
        let children: Vec<(usize, Child)> = nodes
            .iter()
            .filter_map(|&i| self.procs[i].take().map(|c| (i, c)))
            .collect();
        for (i, c) in &children {
            let st = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status()
                .expect("run kill");
            assert!(st.success(), "kill -TERM node {}", i + 1);
        }
        let start = Instant::now();
        for (i, mut c) in children {
            loop {
                if let Some(st) = c.try_wait().expect("wait for a node") {
                    assert!(st.success(), "node {} stopped with {st}", i + 1);
                    break;
                }
                if start.elapsed() > DEADLINE {
                    let _ = c.kill();
                    panic!("node {} did not stop in time", i + 1);
                }
                sleep(Duration::from_millis(20));
            }
        }
    }

    /// What node `i + 1` wrote to its standard error (all its runs).
    pub fn stderr(&self, i: usize) -> String {
        let log = self.dir.path().join(format!("n{}.log", i + 1));
        std::fs::read_to_string(log).unwrap_or_default()
    }

    /// Start node `i + 1` again on its directory.
    pub fn restart(&mut self, i: usize) {
        self.spawn(i);
    }

    /// The index of the node every running node agrees leads, with the
    /// leader's own status (polls until the deadline).
    pub fn leader(&self, not: Option<usize>) -> (usize, Value) {
        let start = Instant::now();
        loop {
            if let Some(l) = self.agreed_leader(not) {
                return l;
            }
            if start.elapsed() > DEADLINE {
                let all: Vec<_> = self
                    .running()
                    .iter()
                    .map(|i| status(self.ports[*i]))
                    .collect();
                panic!("no leader agreed on in time: {all:?}");
            }
            sleep(Duration::from_millis(50));
        }
    }

    /// The leader the running nodes of `among` agree on (polls until the
    /// deadline): the majority side of a partition.
    pub fn leader_among(&self, among: &[usize]) -> usize {
        let start = Instant::now();
        loop {
            if let Some((l, _)) = self.agreed_leader_among(among, None) {
                return l;
            }
            assert!(start.elapsed() < DEADLINE, "no leader agreed on in time");
            sleep(Duration::from_millis(50));
        }
    }

    fn agreed_leader(&self, not: Option<usize>) -> Option<(usize, Value)> {
        self.agreed_leader_among(&self.running(), not)
    }

    fn agreed_leader_among(&self, among: &[usize], not: Option<usize>) -> Option<(usize, Value)> {
        let mut leader = None;
        for &i in among.iter().filter(|i| self.procs[**i].is_some()) {
            let s = status(self.ports[i])?;
            let l = s["leader"].as_u64()? as usize - 1;
            if leader.is_some_and(|x| x != l) || Some(l) == not {
                return None;
            }
            leader = Some(l);
        }
        let l = leader?;
        if !among.contains(&l) {
            return None;
        }
        let s = status(self.ports[l])?;
        (s["state"] == "Leader").then_some((l, s))
    }

    /// The running nodes.
    pub fn running(&self) -> Vec<usize> {
        (0..self.procs.len())
            .filter(|i| self.procs[*i].is_some())
            .collect()
    }

    /// Wait until every running node has applied all of the leader's log.
    pub fn settle(&self) -> u64 {
        let start = Instant::now();
        loop {
            if let Some(n) = self.settled() {
                return n;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "the nodes did not settle in time"
            );
            sleep(Duration::from_millis(50));
        }
    }

    fn settled(&self) -> Option<u64> {
        let (_, ls) = self.agreed_leader(None)?;
        let last = ls["last_log_index"].as_u64()?;
        for i in self.running() {
            let s = status(self.ports[i])?;
            if s["applied_index"].as_u64()? != last {
                return None;
            }
        }
        Some(last)
    }

    /// Stop every node cleanly, then dump every node's data file with
    /// Debian's `mdb_dump` (the test fails if the tool is missing, or if a
    /// stopped node left a file LMDB cannot read): `-a` (the named
    /// databases) without the map size, and the main database's records as
    /// key -> value without the named databases' own records. Both leave
    /// out what differs between equal contents laid out differently (a
    /// node that installed a snapshot holds a compacted copy).
    pub fn dumps(&mut self) -> Vec<(String, Records)> {
        let all: Vec<usize> = (0..self.ports.len()).collect();
        self.dumps_of(&all)
    }

    /// [`Cluster::dumps`] of the nodes `nodes` (indexes) only, stopped
    /// together.
    pub fn dumps_of(&mut self, nodes: &[usize]) -> Vec<(String, Records)> {
        self.stop_nodes(nodes);
        nodes
            .iter()
            .map(|&i| {
                let named: String = mdb_dump(&self.data_dir(i), true)
                    .lines()
                    .filter(|l| !l.starts_with("mapsize="))
                    .map(|l| format!("{l}\n"))
                    .collect();
                let mut main = parse_dump(&mdb_dump(&self.data_dir(i), false));
                for name in named.lines().filter_map(|l| l.strip_prefix("database=")) {
                    main.remove(name.as_bytes());
                }
                (named, main)
            })
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.procs.len() {
            self.kill(i);
        }
        // A failed test shows what the nodes said last (their directory
        // goes with the cluster).
        if std::thread::panicking() {
            if let Some(to) = std::env::var_os("MDB_RAFT_KEEP_DIR") {
                let _ = Command::new("cp")
                    .arg("-a")
                    .arg(self.dir.path())
                    .arg(&to)
                    .status();
                eprintln!("the cluster's directory is kept in {to:?}");
            }
            for i in 0..self.ports.len() {
                let text = self.stderr(i);
                let tail: Vec<&str> = text.lines().rev().take(120).collect();
                eprintln!("--- node {} stderr (last lines, newest first):", i + 1);
                for l in tail {
                    eprintln!("{l}");
                }
            }
        }
    }
}

/// `n` free ports below the kernel's range of ephemeral ports: a port
/// `bind(0)` picked could be taken, while its node is down, by another
/// connection's local end (the proxies make many), and the node could not
/// restart on it.
fn free_ports(n: usize) -> Vec<u16> {
    let low: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let base = 10_000u32;
    assert!(low > base + 1000, "ephemeral ports start at {low}");
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
        ^ std::process::id().rotate_left(16);
    // Hold every listener until all ports are picked: no duplicates.
    let mut ls = Vec::new();
    while ls.len() < n {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let port = base + (seed >> 8) % (low - base);
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port as u16)) {
            ls.push(l);
        }
    }
    ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

/// Debian's `mdb_dump` (`-a`: the named databases) of the environment
/// in `dir`.
fn mdb_dump(dir: &std::path::Path, all: bool) -> String {
    let mut cmd = Command::new("mdb_dump");
    if all {
        cmd.arg("-a");
    }
    let out = cmd
        .arg(dir)
        .output()
        .expect("Debian's mdb_dump (lmdb-utils) runs");
    assert!(out.status.success(), "mdb_dump {dir:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A database's records: key -> value.
pub type Records = BTreeMap<Vec<u8>, Vec<u8>>;

/// The records of a one-database `mdb_dump` (hex, `format=bytevalue`).
pub fn parse_dump(dump: &str) -> Records {
    let hex = |l: &str| -> Vec<u8> {
        let l = l.trim();
        (0..l.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&l[i..i + 2], 16).expect("mdb_dump's hex"))
            .collect()
    };
    let data = dump
        .split_once("HEADER=END\n")
        .expect("a dump header")
        .1
        .split_once("DATA=END")
        .expect("a dump's end")
        .0;
    let lines: Vec<&str> = data.lines().collect();
    assert!(
        lines.len().is_multiple_of(2),
        "records come in pairs: {dump}"
    );
    lines.chunks(2).map(|kv| (hex(kv[0]), hex(kv[1]))).collect()
}

/// One HTTP/1.1 request; the status code and body.
pub fn http(port: u16, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
    http_within(port, method, path, body, Duration::from_secs(30))
}

/// One HTTP/1.1 request that fails with an error if any step (connect,
/// send, each read) takes longer than `timeout`.
pub fn http_within(
    port: u16,
    method: &str,
    path: &str,
    body: &[u8],
    timeout: Duration,
) -> std::io::Result<(u16, Vec<u8>)> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "bad HTTP response");
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(bad)?;
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| bad())?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(bad)?;
    Ok((code, buf[head_end + 4..].to_vec()))
}

/// A node's `/status`, or `None` if it does not answer.
pub fn status(port: u16) -> Option<Value> {
    match http(port, "GET", "/status", b"") {
        Ok((200, b)) => serde_json::from_slice(&b).ok(),
        _ => None,
    }
}

/// A client of the cluster's KV API that finds the leader by itself.
pub struct Client {
    ports: Vec<u16>,
    guess: usize,
}

impl Client {
    pub fn new(ports: &[u16]) -> Client {
        Client {
            ports: ports.to_vec(),
            guess: 0,
        }
    }

    /// PUT (or DELETE with `None`) until a leader acknowledges it; panics
    /// if none does before the deadline.
    pub fn write(&mut self, key: &str, value: Option<&[u8]>) {
        let start = Instant::now();
        let path = format!("/kv/{key}");
        loop {
            let port = self.ports[self.guess];
            let r = match value {
                Some(v) => http(port, "PUT", &path, v),
                None => http(port, "DELETE", &path, b""),
            };
            match r {
                Ok((200, _)) => return,
                Ok((421, body)) => {
                    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
                    match v["leader_addr"].as_str().and_then(|a| a.rsplit(':').next()) {
                        Some(p) => {
                            let p: u16 = p.parse().unwrap();
                            self.guess = self.ports.iter().position(|x| *x == p).unwrap();
                        }
                        None => self.next(),
                    }
                }
                Ok((code, body)) => {
                    assert!(
                        code == 503,
                        "write {key}: {code} {}",
                        String::from_utf8_lossy(&body)
                    );
                    self.next();
                }
                Err(_) => self.next(), // a killed node, a reset connection
            }
            assert!(
                start.elapsed() < DEADLINE,
                "write {key}: no leader acknowledged it in time"
            );
            sleep(Duration::from_millis(20));
        }
    }

    fn next(&mut self) {
        self.guess = (self.guess + 1) % self.ports.len();
    }
}

/// Read `key` on node port `port` without asking the leader.
pub fn get_local(port: u16, key: &str) -> Option<Vec<u8>> {
    let (code, body) = http(port, "GET", &format!("/kv/{key}?read=local"), b"")
        .unwrap_or_else(|e| panic!("GET {key} on {port}: {e}"));
    match code {
        200 => Some(body),
        404 => None,
        c => panic!("GET {key} on {port}: {c}"),
    }
}

/// Poll `f` until it holds; fail with `what` at the deadline.
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < DEADLINE, "{what}: not in time");
        sleep(Duration::from_millis(50));
    }
}

/// A membership change (`/cluster/learner`, `/cluster/promote`,
/// `/cluster/remove`) sent to a node that says it leads (a node waiting
/// to join knows no leader), again until one takes it.
pub fn admin(c: &Cluster, path: &str, body: &str) {
    let start = Instant::now();
    loop {
        let leaders = c
            .running()
            .into_iter()
            .filter(|i| status(c.ports[*i]).is_some_and(|s| s["state"] == "Leader"));
        for l in leaders.collect::<Vec<_>>() {
            match http(c.ports[l], "POST", path, body.as_bytes()) {
                Ok((200, _)) => return,
                Ok((421 | 503, _)) | Err(_) => {}
                Ok((code, b)) => panic!("{path} {body}: {code} {}", String::from_utf8_lossy(&b)),
            }
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{path} {body}: not taken in time"
        );
        sleep(Duration::from_millis(50));
    }
}

/// `clients` threads, each writing keys `t{T}-{I:05}` = `value {T} {I}`
/// through its own [`Client`] until `stop`, and handing each acknowledged
/// write to `record`.
pub fn write_load(
    ports: &[u16],
    clients: usize,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    record: impl Fn(String, Vec<u8>) + Send + Clone + 'static,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..clients)
        .map(|t| {
            let (ports, stop, record) = (ports.to_vec(), stop.clone(), record.clone());
            std::thread::spawn(move || {
                let mut cl = Client::new(&ports);
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let (k, v) = (format!("t{t}-{i:05}"), format!("value {t} {i}"));
                    cl.write(&k, Some(v.as_bytes()));
                    record(k, v.into_bytes());
                    i += 1;
                }
            })
        })
        .collect()
}

/// Acknowledged writes: key -> value.
pub type Acked = std::sync::Arc<std::sync::Mutex<BTreeMap<String, Vec<u8>>>>;

/// Wait until `n` more writes than now are in `acked`.
pub fn acked_more(acked: &Acked, n: usize) {
    let at_least = acked.lock().unwrap().len() + n;
    wait_until(&format!("{at_least} writes acknowledged"), || {
        acked.lock().unwrap().len() >= at_least
    });
}
