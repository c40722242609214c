//! `mdb demo`: create a database in a temporary directory, load one million
//! keys, read them all back, print the statistics and the throughput.

use mdb::{Database, EnvOptions, Txn, WriteFlags};
use std::time::Instant;

const USAGE: &str = "usage: mdb demo [-n COUNT] [-d DIR]\n";

/// A deterministic, well-spread 16-byte key for index `i`.
fn key(i: u64) -> [u8; 16] {
    let mut x = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&x.to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn rate(n: u64, secs: f64) -> String {
    format!("{:>12.0} ops/s", n as f64 / secs.max(1e-9))
}

/// Run the demo; returns the process exit status.
pub fn run(args: &[String]) -> i32 {
    let mut n: u64 = 1_000_000;
    let mut dir: Option<std::path::PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-n" => match it.next().and_then(|s| s.parse().ok()) {
                Some(v) => n = v,
                None => {
                    eprint!("{USAGE}");
                    return 1;
                }
            },
            "-d" => match it.next() {
                Some(d) => dir = Some(d.into()),
                None => {
                    eprint!("{USAGE}");
                    return 1;
                }
            },
            "-h" | "--help" => {
                print!("{USAGE}\nLoads COUNT (default 1000000) 16-byte keys with 100-byte values into a\nnew database (in a temporary directory unless -d), reads them back,\nand prints the statistics and throughput.\n");
                return 0;
            }
            _ => {
                eprint!("{USAGE}");
                return 1;
            }
        }
    }
    match demo(n, dir) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mdb demo: {e}");
            1
        }
    }
}

fn demo(n: u64, dir: Option<std::path::PathBuf>) -> Result<(), Box<dyn std::error::Error>> {
    let tmp;
    let path = match dir {
        Some(d) => {
            std::fs::create_dir_all(&d)?;
            d
        }
        None => {
            tmp = tempdir()?;
            tmp.0.clone()
        }
    };
    println!(
        "mdb demo: {n} keys (16-byte keys, 100-byte values) in {}",
        path.display()
    );
    let env = EnvOptions::new().map_size(4 << 30).open(&path)?;
    let value = [0x5au8; 100];

    let t = Instant::now();
    let batch = 10_000;
    let mut i = 0;
    while i < n {
        let mut w = env.write_txn()?;
        for j in i..(i + batch).min(n) {
            w.put(Database::MAIN, &key(j), &value, WriteFlags::EMPTY)?;
        }
        w.commit()?;
        i += batch;
    }
    let load = t.elapsed().as_secs_f64();
    println!(
        "load   (random order, {batch} puts per commit): {:7.3} s {}",
        load,
        rate(n, load)
    );

    let t = Instant::now();
    let r = env.read_txn()?;
    let mut found = 0u64;
    for j in 0..n {
        if let Some(v) = r.get(Database::MAIN, &key(j))? {
            if v == value {
                found += 1;
            }
        }
    }
    let get = t.elapsed().as_secs_f64();
    println!(
        "get    (every key, random order):           {:7.3} s {}",
        get,
        rate(n, get)
    );

    let t = Instant::now();
    let mut scanned = 0u64;
    let mut prev: Option<&[u8]> = None;
    for kv in r.cursor(Database::MAIN)? {
        let (k, _) = kv?;
        if let Some(p) = prev {
            if p >= k {
                return Err("scan out of order".into());
            }
        }
        prev = Some(k);
        scanned += 1;
    }
    let scan = t.elapsed().as_secs_f64();
    println!(
        "scan   (cursor over every key):             {:7.3} s {}",
        scan,
        rate(scanned, scan)
    );
    if found != n || scanned != n {
        return Err(format!("read back {found} of {n} values, scanned {scanned}").into());
    }
    let st = r.stat(Database::MAIN)?;
    drop(r);
    let info = env.info()?;
    let size = std::fs::metadata(path.join("data.mdb"))?.len();
    println!("all {n} keys read back and verified");
    println!("Status of Main DB");
    println!("  Tree depth: {}", st.depth);
    println!("  Branch pages: {}", st.branch_pages);
    println!("  Leaf pages: {}", st.leaf_pages);
    println!("  Overflow pages: {}", st.overflow_pages);
    println!("  Entries: {}", st.entries);
    println!("Environment");
    println!("  Page size: {}", st.page_size);
    println!("  Pages used: {}", info.last_pgno + 1);
    println!("  Last transaction ID: {}", info.last_txnid);
    println!(
        "  File size: {} bytes ({:.1} MiB)",
        size,
        size as f64 / (1 << 20) as f64
    );
    Ok(())
}

/// A temporary directory removed on drop (no extra dependency for one use).
struct TempDir(std::path::PathBuf);

fn tempdir() -> std::io::Result<TempDir> {
    let base = std::env::temp_dir();
    for k in 0..1000u32 {
        let p = base.join(format!("mdb-demo-{}-{}", std::process::id(), k));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(TempDir(p)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no temporary directory"))
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
