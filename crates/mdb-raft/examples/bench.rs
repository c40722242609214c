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
//!
//! `--lag-rate 1000` measures instead how far mdb-raft's followers lag
//! the leader's acknowledgements at that fixed rate (see [`lag_run`]).

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

/// A running cluster: its processes, its nodes' and its leader's client
/// addresses.
struct Cluster {
    _procs: Procs,
    addrs: Vec<String>,
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
        addrs,
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
        addrs: client,
        leader,
    }
}

/// One HTTP client for `clients` tasks: each keeps its own keep-alive
/// connection.
fn pool(clients: u64) -> reqwest::Client {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(clients as usize + 4)
        .build()
        .unwrap()
}

/// One run: a fresh cluster, `clients` writers for `secs`; writes/s.
async fn run(sys: System, n: u64, clients: u64, secs: u64, base: &Path) -> f64 {
    let dir = tempfile::tempdir_in(base).unwrap();
    let http = pool(clients);
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

/// Follower lag at a fixed rate (mdb-raft): `clients` writers paced to
/// `rate` commits/s in all for `secs`, each acknowledged write's index and
/// time kept; a poller per follower asks its `/status` every millisecond
/// or so. A write's lag on a follower is the time from its
/// acknowledgement to the first answer showing it applied there (an upper
/// bound: the apply happened between that poll and the one before it; 0 if
/// the follower had applied it before the leader's answer arrived).
async fn lag_run(n: u64, clients: u64, rate: u64, secs: u64, base: &Path) {
    let dir = tempfile::tempdir_in(base).unwrap();
    let http = pool(clients);
    let cluster = start_mdb(&http, n, dir.path()).await;
    let followers: Vec<String> = cluster
        .addrs
        .iter()
        .filter(|a| **a != cluster.leader)
        .cloned()
        .collect();
    // Measure from a cluster in step: every node has applied the leader's
    // log (a follower that started late is not still catching up).
    let start = Instant::now();
    loop {
        assert!(
            start.elapsed() < STARTUP,
            "the nodes did not catch up in time"
        );
        let mut applied = Vec::new();
        for a in &cluster.addrs {
            let s: Option<serde_json::Value> =
                match http.get(format!("http://{a}/status")).send().await {
                    Ok(r) => r.json().await.ok(),
                    Err(_) => None,
                };
            applied.push(s.and_then(|s| s["applied_index"].as_u64()));
        }
        if applied[0].is_some() && applied.iter().all(|a| *a == applied[0]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(std::sync::Mutex::new(Vec::<(u64, Instant)>::new()));
    let pollers: Vec<_> = followers
        .iter()
        .map(|f| {
            let (http, stop, url) = (http.clone(), stop.clone(), format!("http://{f}/status"));
            tokio::spawn(async move {
                let mut seen = Vec::<(u64, Instant)>::new();
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(r) = http.get(&url).send().await {
                        if let Ok(s) = r.json::<serde_json::Value>().await {
                            let applied = s["applied_index"].as_u64().unwrap_or(0);
                            seen.push((applied, Instant::now()));
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                seen
            })
        })
        .collect();
    let period = Duration::from_secs_f64(clients as f64 / rate as f64);
    let start = Instant::now();
    let writers: Vec<_> = (0..clients)
        .map(|c| {
            let (http, leader, stop, acks) = (
                http.clone(),
                cluster.leader.clone(),
                stop.clone(),
                acks.clone(),
            );
            tokio::spawn(async move {
                let value = vec![b'v'; VALUE_SIZE];
                // Spread the clients' slots over the period.
                let mut next = start + period.mul_f64(c as f64 / clients as f64);
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep_until(next.into()).await;
                    next += period;
                    let r = http
                        .put(format!("http://{leader}/kv/c{c}-{i}"))
                        .body(value.clone())
                        .send()
                        .await;
                    i += 1;
                    let Ok(r) = r else { continue };
                    let Ok(v) = r.json::<serde_json::Value>().await else {
                        continue;
                    };
                    if let Some(index) = v["index"].as_u64() {
                        acks.lock().unwrap().push((index, Instant::now()));
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let elapsed = start.elapsed();
    // Let the followers apply the last writes before the pollers stop.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let acks = acks.lock().unwrap().clone();
    println!(
        "{n} nodes, {clients} clients paced to {rate} commits/s: {:.0} acknowledged/s",
        acks.len() as f64 / elapsed.as_secs_f64()
    );
    for (f, p) in followers.iter().zip(pollers) {
        let seen = p.await.unwrap();
        let mut lags: Vec<Duration> = acks
            .iter()
            .filter_map(|(index, at)| {
                let i = seen.partition_point(|(applied, _)| applied < index);
                seen.get(i).map(|(_, t)| t.saturating_duration_since(*at))
            })
            .collect();
        lags.sort();
        let q = |p: f64| lags[((lags.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e3;
        println!(
            "follower {f}: lag p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} writes, {} polls)",
            q(0.5),
            q(0.99),
            q(1.0),
            lags.len(),
            seen.len()
        );
    }
    drop(cluster);
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
    if let Some(rate) = arg(&args, "--lag-rate") {
        let rate = rate.parse().expect("--lag-rate: commits/s");
        for _ in 0..reps {
            lag_run(n, clients, rate, secs, &base).await;
        }
        return;
    }
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
