//! A bulk load: keys in ascending order with APPEND, one large transaction
//! whose memory stays within its budget (it spills to the file).
//!
//! `cargo run --release -p mdb --example bulk_load [N]`

use mdb::{Database, EnvOptions, Txn, WriteFlags};
use std::time::Instant;

fn main() -> mdb::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let env = EnvOptions::new()
        .txn_memory(16 << 20) // a small budget, to show spilling
        .open(dir.path())?;
    let t = Instant::now();
    let mut w = env.write_txn()?;
    let v = [0x5au8; 100];
    for i in 0..n {
        // Big-endian keys sort as the numbers do: each put appends.
        w.put(Database::MAIN, &i.to_be_bytes(), &v, WriteFlags::APPEND)?;
    }
    let spills = w.spills();
    w.commit()?;
    let secs = t.elapsed().as_secs_f64();
    let r = env.read_txn()?;
    assert_eq!(r.stat(Database::MAIN)?.entries, n);
    println!(
        "{n} keys in {secs:.2} s ({:.0} ns/key), {spills} spills, file {} MiB",
        secs * 1e9 / n as f64,
        std::fs::metadata(dir.path().join("data.mdb")).map_or(0, |m| m.len() >> 20)
    );
    Ok(())
}
