//! A cluster of `mdb-raft-node` processes on 127.0.0.1 for the tests: ports
//! picked here, processes killed on drop (also when a test fails), and a
//! small HTTP/1.1 client over std's TcpStream.

#![allow(dead_code)]

use serde_json::Value;
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
}

impl Cluster {
    /// Start `n` nodes.
    pub fn start(n: usize) -> Cluster {
        Cluster::start_with(n, n, &[])
    }

    /// Pick ports for `n` nodes and start the first `voters` of them, which
    /// initialise the cluster; `args` go to every node. The others start
    /// with [`Cluster::join`].
    pub fn start_with(n: usize, voters: usize, args: &[&str]) -> Cluster {
        // Hold every listener until all ports are picked: no duplicates.
        let ls: Vec<TcpListener> = (0..n)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
            .collect();
        let ports = ls.iter().map(|l| l.local_addr().unwrap().port()).collect();
        drop(ls);
        let mut c = Cluster {
            dir: tempfile::tempdir().expect("a temporary directory"),
            ports,
            procs: (0..n).map(|_| None).collect(),
            voters,
            args: args.iter().map(|a| a.to_string()).collect(),
        };
        for i in 0..voters {
            c.spawn(i);
        }
        c
    }

    /// Start node `i + 1` (beyond the initial voters) with an empty
    /// directory, waiting to be added to the cluster.
    pub fn join(&mut self, i: usize) {
        assert!(i >= self.voters, "node {} is an initial voter", i + 1);
        self.spawn(i);
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
        assert!(self.procs[i].is_none(), "node {} runs already", i + 1);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("n{}.log", i + 1)))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_mdb-raft-node"))
            .args(["--id", &(i + 1).to_string(), "--dir"])
            .arg(self.dir.path().join(format!("n{}", i + 1)))
            .args(if i < self.voters {
                vec!["--members".to_string(), self.members()]
            } else {
                let me = format!("{}={}", i + 1, self.addr(i));
                vec!["--members".to_string(), me, "--join".to_string()]
            })
            .args(&self.args)
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
        if let Some(mut c) = self.procs[i].take() {
            let st = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status()
                .expect("run kill");
            assert!(st.success(), "kill -TERM node {}", i + 1);
            let start = Instant::now();
            loop {
                if let Some(st) = c.try_wait().expect("wait for a node") {
                    assert!(st.success(), "node {} stopped with {st}", i + 1);
                    return;
                }
                if start.elapsed() > DEADLINE {
                    let _ = c.kill();
                    panic!("node {} did not stop in time", i + 1);
                }
                sleep(Duration::from_millis(20));
            }
        }
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

    fn agreed_leader(&self, not: Option<usize>) -> Option<(usize, Value)> {
        let mut leader = None;
        for i in self.running() {
            let s = status(self.ports[i])?;
            let l = s["leader"].as_u64()? as usize - 1;
            if leader.is_some_and(|x| x != l) || Some(l) == not {
                return None;
            }
            leader = Some(l);
        }
        let l = leader?;
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

    /// Stop every node cleanly, then `mdb_dump` and `mdb_dump -a` (Debian's) of every
    /// node's data file; the test fails if the tool is missing, or if a
    /// stopped node left a file LMDB cannot read.
    pub fn dumps(&mut self) -> Vec<String> {
        let all: Vec<usize> = (0..self.ports.len()).collect();
        self.dumps_of(&all)
    }

    /// [`Cluster::dumps`] of the nodes `nodes` (indexes) only.
    pub fn dumps_of(&mut self, nodes: &[usize]) -> Vec<String> {
        for &i in nodes {
            self.stop(i);
        }
        nodes
            .iter()
            .map(|&i| {
                let dump = |args: &[&str]| {
                    let out = Command::new("mdb_dump")
                        .args(args)
                        .arg(self.data_dir(i))
                        .output()
                        .expect("Debian's mdb_dump (lmdb-utils) runs");
                    assert!(out.status.success(), "mdb_dump of node {}: {out:?}", i + 1);
                    String::from_utf8(out.stdout).unwrap()
                };
                // `-a` dumps the named databases only: the main one too.
                logical(&dump(&[]), &dump(&["-a"]))
            })
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.procs.len() {
            self.kill(i);
        }
        if std::thread::panicking() {
            // What the nodes said, before their directory goes.
            for i in 0..self.procs.len() {
                let log = self.dir.path().join(format!("n{}.log", i + 1));
                let text = std::fs::read_to_string(log).unwrap_or_default();
                eprintln!("--- node {} stderr ---\n{text}", i + 1);
            }
        }
    }
}

/// The dumps of the main database and of the named ones, without what
/// differs between equal contents laid out differently (a node that
/// installed a snapshot holds a compacted copy): the map size, and the
/// main database's records of the named databases (their roots and page
/// counts).
fn logical(main: &str, named: &str) -> String {
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let names: Vec<String> = named
        .lines()
        .filter_map(|l| l.strip_prefix("database="))
        .map(|n| format!(" {}", hex(n)))
        .collect();
    let mut out = String::new();
    let mut lines = main.lines();
    while let Some(l) = lines.next() {
        if names.iter().any(|n| n == l) {
            lines.next(); // the record's value
        } else if !l.starts_with("mapsize=") {
            out += l;
            out += "\n";
        }
    }
    out + &named
        .lines()
        .filter(|l| !l.starts_with("mapsize="))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
}

/// One HTTP/1.1 request; the status code and body.
pub fn http(port: u16, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    s.set_write_timeout(Some(Duration::from_secs(30)))?;
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
