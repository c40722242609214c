//! Replicated write rate: starts `--nodes` `mdb-raft-node` processes on
//! loopback (from the same target directory: build the binary first),
//! then `--clients` clients each PUT 100-byte values to the leader, one
//! at a time, for `--seconds`; prints acknowledged writes per second.
//!
//! ```text
//! cargo build --release -p mdb-raft --bin mdb-raft-node --example bench
//! target/release/examples/bench --nodes 3 --clients 8 --seconds 10
//! ```

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Nodes(Vec<Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect("a number"))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (n, clients, secs) = (
        arg(&args, "--nodes", 3),
        arg(&args, "--clients", 8),
        arg(&args, "--seconds", 10),
    );
    let bin = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("mdb-raft-node");
    let dir = tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or(".".into())).unwrap();
    let ls: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let addrs: Vec<String> = ls
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    drop(ls);
    let members: Vec<String> = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| format!("{}={a}", i + 1))
        .collect();
    let _nodes = Nodes(
        (0..n)
            .map(|i| {
                Command::new(&bin)
                    .args([
                        "--id",
                        &(i + 1).to_string(),
                        "--members",
                        &members.join(","),
                    ])
                    .arg("--dir")
                    .arg(dir.path().join(format!("n{}", i + 1)))
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap_or_else(|e| panic!("{}: {e}", bin.display()))
            })
            .collect(),
    );
    let http = reqwest::Client::new();
    let leader = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let Ok(r) = http.get(format!("http://{}/status", addrs[0])).send().await else {
            continue;
        };
        let s: serde_json::Value = r.json().await.unwrap();
        if let Some(a) = s["leader_addr"].as_str() {
            break a.to_string();
        }
    };
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let value = vec![b'v'; 100];
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (http, leader, count, stop, value) = (
                http.clone(),
                leader.clone(),
                count.clone(),
                stop.clone(),
                value.clone(),
            );
            tokio::spawn(async move {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let url = format!("http://{leader}/kv/c{c}-{i}");
                    let r = http.put(url).body(value.clone()).send().await;
                    if r.is_ok_and(|r| r.status().is_success()) {
                        count.fetch_add(1, Ordering::Relaxed);
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
    let done = count.load(Ordering::Relaxed);
    let el = start.elapsed().as_secs_f64();
    println!(
        "{n} node(s), {clients} clients, 100-byte values: {done} acknowledged writes in {el:.1} s = {:.0}/s",
        done as f64 / el
    );
}
