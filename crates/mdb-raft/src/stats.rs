//! Per-phase timing of the write path, for finding where a replicated
//! write's time goes: with `MDB_RAFT_STATS=1` in its environment, a node
//! prints once a second to stderr, per phase, how many times it ran, its
//! mean time, and the mean number of items (entries, write sets) it
//! handled. Off (one relaxed load per phase) otherwise.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A phase of the write path.
#[derive(Clone, Copy)]
pub(crate) enum Phase {
    /// Leader: a proposal, from `client_write` to its answer (items:
    /// write sets).
    Propose,
    /// A log append: its transaction and the log's sync (items: entries).
    Append,
    /// The commit of a log append, its sync included.
    LogCommit,
    /// The start of a log append's write transaction.
    LogBegin,
    /// Leader: an AppendEntries round trip (items: entries).
    Replicate,
    /// Follower: `append_entries` in the server (items: entries).
    Follow,
    /// Applying entries to the data environment (items: entries).
    Apply,
    /// Leader: a key-value write, from its request to its answer.
    KvWrite,
}

const PHASES: [(&str, Phase); 8] = [
    ("propose", Phase::Propose),
    ("append", Phase::Append),
    ("log_commit", Phase::LogCommit),
    ("log_begin", Phase::LogBegin),
    ("replicate", Phase::Replicate),
    ("follow", Phase::Follow),
    ("apply", Phase::Apply),
    ("kv_write", Phase::KvWrite),
];

struct Counter {
    count: AtomicU64,
    nanos: AtomicU64,
    items: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Counter = Counter {
    count: AtomicU64::new(0),
    nanos: AtomicU64::new(0),
    items: AtomicU64::new(0),
};

static COUNTERS: [Counter; PHASES.len()] = [ZERO; PHASES.len()];

/// Whether timing is on (`MDB_RAFT_STATS` set to anything but `0`).
pub(crate) fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("MDB_RAFT_STATS").is_some_and(|v| v != "0"))
}

/// The start of a timed phase, if timing is on.
pub(crate) fn start() -> Option<Instant> {
    enabled().then(Instant::now)
}

/// Count one run of `phase`, begun at `since` (from [`start`]), that
/// handled `items`.
pub(crate) fn record(phase: Phase, since: Option<Instant>, items: usize) {
    if let Some(t) = since {
        let c = &COUNTERS[phase as usize];
        c.count.fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        c.nanos.fetch_add(ns, Ordering::Relaxed);
        c.items.fetch_add(items as u64, Ordering::Relaxed);
    }
}

/// Start the thread that prints the last second's figures of node `id`
/// (when timing is on).
pub(crate) fn spawn_printer(id: u64) {
    if !enabled() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("mdb-raft-stats".into())
        .spawn(move || {
            let mut last = [(0u64, 0u64, 0u64); PHASES.len()];
            loop {
                std::thread::sleep(Duration::from_secs(1));
                let mut line = format!("mdb-raft stats node {id}:");
                for (i, (name, _)) in PHASES.iter().enumerate() {
                    let c = &COUNTERS[i];
                    let now = (
                        c.count.load(Ordering::Relaxed),
                        c.nanos.load(Ordering::Relaxed),
                        c.items.load(Ordering::Relaxed),
                    );
                    let n = now.0 - last[i].0;
                    if let Some(ns) = (now.1 - last[i].1).checked_div(n) {
                        let us = ns / 1000;
                        let items = (now.2 - last[i].2) as f64 / n as f64;
                        line += &format!(" {name} {n}x {us}us {items:.1}i;");
                    }
                    last[i] = now;
                }
                eprintln!("{line}");
            }
        });
}
