//! One node of a replicated key-value service over HTTP:
//!
//! ```text
//! mdb-raft-node --id 1 --dir /var/lib/n1 \
//!     --members 1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003
//! curl -X PUT --data-binary v http://127.0.0.1:7001/kv/k   # on the leader
//! curl http://127.0.0.1:7002/kv/k?read=local               # any node
//! curl http://127.0.0.1:7002/status
//!
//! # a fourth node joins: start it with --join, then ask the leader
//! mdb-raft-node --id 4 --dir /var/lib/n4 --members 4=127.0.0.1:7004 --join
//! curl -X POST -H 'content-type: application/json' \
//!     -d '{"id":4,"addr":"127.0.0.1:7004"}' http://127.0.0.1:7001/cluster/learner
//! curl -X POST -H 'content-type: application/json' -d '{"id":4}' \
//!     http://127.0.0.1:7001/cluster/promote
//!
//! # or seeded from a recent backup of a member's data (mdb backup
//! # n1/data BACKUP), so that it needs only the log since from the leader
//! mdb-raft-node --id 4 --dir /var/lib/n4 --members 4=127.0.0.1:7004 --join \
//!     --seed-from BACKUP
//! ```
//!
//! It runs until killed; every acknowledged write is durable on a quorum.
//! On SIGTERM or SIGINT it stops cleanly: its data file is then a plain
//! LMDB file (while it runs, the file is in WAL mode, which Debian's LMDB
//! tools refuse; `mdb` reads it).

use mdb_raft::{Config, ReplicatedEnv};
use std::collections::BTreeMap;
use std::process::ExitCode;
use tokio::signal::unix::{signal, Signal, SignalKind};

const USAGE: &str = "usage: mdb-raft-node --id N --dir DIR --members ID=HOST:PORT,... \
[--join [--seed-from BACKUP_DIR]] [--heartbeat-ms MS] [--snapshot-logs N] [--keep-logs N] [--route ID=HOST:PORT,...]";

fn parse(args: &[String]) -> Result<Config, String> {
    let (mut id, mut dir, mut hb) = (None, None, 100);
    let (mut members, mut routes) = (BTreeMap::new(), BTreeMap::new());
    let (mut join, mut snapshot_logs, mut keep_logs) = (false, None, None);
    let mut seed_from = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--id" => id = Some(val()?.parse::<u64>().map_err(|e| format!("--id: {e}"))?),
            "--dir" => dir = Some(val()?.clone()),
            "--heartbeat-ms" => hb = val()?.parse().map_err(|e| format!("--heartbeat-ms: {e}"))?,
            "--join" => join = true,
            // An `mdb backup` directory of a member's data (first start).
            "--seed-from" => seed_from = Some(std::path::PathBuf::from(val()?)),
            "--snapshot-logs" => {
                snapshot_logs = Some(val()?.parse().map_err(|e| format!("{a}: {e}"))?)
            }
            "--keep-logs" => keep_logs = Some(val()?.parse().map_err(|e| format!("{a}: {e}"))?),
            "--members" => parse_addrs(val()?, &mut members)?,
            // Dial these peers there instead (a proxy: the fault tests).
            "--route" => parse_addrs(val()?, &mut routes)?,
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    let mut c = Config::new(
        id.ok_or("--id is required")?,
        dir.ok_or("--dir is required")?,
        members,
    );
    c.kv_api = true;
    c.heartbeat_ms = hb;
    c.bootstrap = !join;
    c.snapshot_every = snapshot_logs.unwrap_or(c.snapshot_every);
    c.keep_logs = keep_logs.unwrap_or(c.keep_logs);
    c.routes = routes;
    if seed_from.is_some() && !join {
        return Err("--seed-from needs --join".into());
    }
    c.seed_from = seed_from;
    Ok(c)
}

/// `ID=HOST:PORT,...` into `into`.
fn parse_addrs(list: &str, into: &mut BTreeMap<u64, String>) -> Result<(), String> {
    for m in list.split(',') {
        let (i, addr) = m
            .split_once('=')
            .ok_or(format!("{m:?}: want ID=HOST:PORT"))?;
        let i = i.parse::<u64>().map_err(|e| format!("{m:?}: {e}"))?;
        into.insert(i, addr.to_string());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mdb-raft-node: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Signals are caught from here on, before the node opens.
    let stop = match Stop::new() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mdb-raft-node: catching signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    let node = match ReplicatedEnv::open(config) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("mdb-raft-node: {e}");
            return ExitCode::FAILURE;
        }
    };
    stop.wait();
    // Shuts Raft down and checkpoints the data file.
    drop(node);
    ExitCode::SUCCESS
}

/// SIGTERM and SIGINT, caught.
struct Stop {
    rt: tokio::runtime::Runtime,
    term: Signal,
    int: Signal,
}

impl Stop {
    fn new() -> std::io::Result<Stop> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        let (term, int) = rt.block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::terminate())?,
                signal(SignalKind::interrupt())?,
            ))
        })?;
        Ok(Stop { rt, term, int })
    }

    /// Block until one of them arrives.
    fn wait(mut self) {
        self.rt.block_on(async {
            tokio::select! {
                _ = self.term.recv() => {}
                _ = self.int.recv() => {}
            }
        });
    }
}
