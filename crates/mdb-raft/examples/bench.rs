//! Replicated write rate, mdb-raft and etcd side by side: each run starts a
//! fresh cluster of `--nodes` processes on loopback (`mdb-raft-node`, from
//! the same target directory: build it first; or Debian's `etcd`, package
//! `etcd-server`), with their directories under `$BENCH_DIR` (the same
//! disk for both), finds the leader, and runs `--clients` clients that each
//! write 100-byte values to it, one at a time, for `--seconds`: a PUT of
//! `/kv/{key}` to mdb-raft, a POST of `/v3/kv/put` (etcd's HTTP/JSON
//! gateway, base64 key and value) to etcd, over keep-alive connections.
//! The systems take turns (`--system mdb|etcd|both`), `--reps` times; it
//! prints each run and, per system, the median and the range.
//!
//! ```text
//! cargo build --release -p mdb-raft --bin mdb-raft-node --example bench
//! BENCH_DIR=/path/on/the/disk target/release/examples/bench --nodes 3 --clients 8 --seconds 10
//! ```

use base64::Engine as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const VALUE_SIZE: usize = 100;
const STARTUP: Duration = Duration::from_secs(60);

/// Processes killed (SIGKILL) and reaped on drop.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn num(args: &[String], name: &str, default: u64) -> u64 {
    arg(args, name).map_or(default, |v| v.parse().expect("a number"))
}

/// `n` free loopback addresses (held together while picked: no duplicates).
fn free_addrs(n: u64) -> Vec<String> {
    let ls: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    ls.iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum System {
    Mdb,
    Etcd,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Mdb => "mdb-raft",
            System::Etcd => "etcd",
        }
    }
}

/// A running cluster: its processes and its leader's client address.
struct Cluster {
    _procs: Procs,
    leader: String,
}

async fn start_mdb(http: &reqwest::Client, n: u64, dir: &Path) -> Cluster {
    let bin = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("mdb-raft-node");
    let addrs = free_addrs(n);
    let members: Vec<String> = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| format!("{}={a}", i + 1))
        .collect();
    let procs = Procs(
        (0..n)
            .map(|i| {
                Command::new(&bin)
                    .args(["--id", &(i + 1).to_string()])
                    .args(["--members", &members.join(",")])
                    .arg("--dir")
                    .arg(dir.join(format!("n{}", i + 1)))
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap_or_else(|e| panic!("{}: {e}", bin.display()))
            })
            .collect(),
    );
    let start = Instant::now();
    let leader = loop {
        assert!(start.elapsed() < STARTUP, "no mdb-raft leader in time");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let Ok(r) = http.get(format!("http://{}/status", addrs[0])).send().await else {
            continue;
        };
        let s: serde_json::Value = r.json().await.unwrap();
        if let Some(a) = s["leader_addr"].as_str() {
            break a.to_string();
        }
    };
    Cluster {
        _procs: procs,
        leader,
    }
}

async fn start_etcd(http: &reqwest::Client, n: u64, dir: &Path) -> Cluster {
    let client = free_addrs(n);
    let peer = free_addrs(n);
    let initial: Vec<String> = peer
        .iter()
        .enumerate()
        .map(|(i, p)| format!("e{}=http://{p}", i + 1))
        .collect();
    let procs = Procs(
        (0..n as usize)
            .map(|i| {
                Command::new("etcd")
                    .args(["--name", &format!("e{}", i + 1)])
                    .arg("--data-dir")
                    .arg(dir.join(format!("e{}", i + 1)))
                    .args(["--listen-client-urls", &format!("http://{}", client[i])])
                    .args(["--advertise-client-urls", &format!("http://{}", client[i])])
                    .args(["--listen-peer-urls", &format!("http://{}", peer[i])])
                    .args([
                        "--initial-advertise-peer-urls",
                        &format!("http://{}", peer[i]),
                    ])
                    .args(["--initial-cluster", &initial.join(",")])
                    .args(["--initial-cluster-state", "new"])
                    .args(["--initial-cluster-token", "mdb-raft-bench"])
                    .args(["--log-level", "error"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap_or_else(|e| panic!("etcd (Debian's etcd-server): {e}"))
            })
            .collect(),
    );
    // The member whose status names itself as the leader.
    let start = Instant::now();
    let leader = 'found: loop {
        assert!(start.elapsed() < STARTUP, "no etcd leader in time");
        tokio::time::sleep(Duration::from_millis(100)).await;
        for a in &client {
            let url = format!("http://{a}/v3/maintenance/status");
            let Ok(r) = http.post(url).body("{}").send().await else {
                continue;
            };
            let Ok(s) = r.json::<serde_json::Value>().await else {
                continue;
            };
            let me = &s["header"]["member_id"];
            if !me.is_null() && s["leader"] == *me {
                break 'found a.clone();
            }
        }
    };
    Cluster {
        _procs: procs,
        leader,
    }
}

/// One run: a fresh cluster, `clients` writers for `secs`; writes/s.
async fn run(sys: System, n: u64, clients: u64, secs: u64, base: &Path) -> f64 {
    let dir = tempfile::tempdir_in(base).unwrap();
    // One pool: every client task keeps its own keep-alive connection.
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(clients as usize + 4)
        .build()
        .unwrap();
    let cluster = match sys {
        System::Mdb => start_mdb(&http, n, dir.path()).await,
        System::Etcd => start_etcd(&http, n, dir.path()).await,
    };
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (http, leader, count, stop) = (
                http.clone(),
                cluster.leader.clone(),
                count.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                let b64 = base64::engine::general_purpose::STANDARD;
                let value = vec![b'v'; VALUE_SIZE];
                let value64 = b64.encode(&value);
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("c{c}-{i}");
                    let req = match sys {
                        System::Mdb => http
                            .put(format!("http://{leader}/kv/{key}"))
                            .body(value.clone()),
                        System::Etcd => {
                            let body =
                                format!(r#"{{"key":"{}","value":"{value64}"}}"#, b64.encode(&key));
                            http.post(format!("http://{leader}/v3/kv/put")).body(body)
                        }
                    };
                    // The body is read to the end: the connection is reused.
                    if let Ok(r) = req.send().await {
                        let ok = r.status().is_success();
                        if r.bytes().await.is_ok() && ok {
                            count.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    i += 1;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let rate = count.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64();
    drop(cluster);
    rate
}

fn summary(rates: &mut [f64]) -> String {
    rates.sort_by(f64::total_cmp);
    format!(
        "median {:.0}/s (min {:.0}, max {:.0}, {} runs)",
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1],
        rates.len()
    )
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (n, clients, secs, reps) = (
        num(&args, "--nodes", 3),
        num(&args, "--clients", 8),
        num(&args, "--seconds", 10),
        num(&args, "--reps", 3),
    );
    let systems = match arg(&args, "--system").unwrap_or("both") {
        "mdb" => vec![System::Mdb],
        "etcd" => vec![System::Etcd],
        "both" => vec![System::Mdb, System::Etcd],
        s => panic!("--system {s}: want mdb, etcd or both"),
    };
    let base = PathBuf::from(std::env::var("BENCH_DIR").unwrap_or(".".into()));
    println!(
        "{n} node(s), {clients} clients, {VALUE_SIZE}-byte values, {secs} s per run, acknowledged writes/s"
    );
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); systems.len()];
    for rep in 1..=reps {
        for (s, sys) in systems.iter().enumerate() {
            let r = run(*sys, n, clients, secs, &base).await;
            println!("run {rep} {:>8}: {r:.0}/s", sys.name());
            rates[s].push(r);
        }
    }
    for (s, sys) in systems.iter().enumerate() {
        println!("{:>8}: {}", sys.name(), summary(&mut rates[s]));
    }
}
