//! Open an environment, write in a transaction, read a snapshot, walk a
//! range from both ends.
//!
//! `cargo run -p mdb --example quick_start`

use mdb::{Database, Env, Txn, WriteFlags};

fn main() -> mdb::Result<()> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // The map grows by itself: no size to choose up front.
    let env = Env::open(dir.path())?;

    let mut w = env.write_txn()?;
    for (k, v) in [
        ("apple", "red"),
        ("banana", "yellow"),
        ("cherry", "red"),
        ("kiwi", "green"),
    ] {
        w.put(
            Database::MAIN,
            k.as_bytes(),
            v.as_bytes(),
            WriteFlags::EMPTY,
        )?;
    }
    w.commit()?; // durable

    let r = env.read_txn()?; // a snapshot: later commits do not show
    assert_eq!(r.get(Database::MAIN, b"banana")?, Some(&b"yellow"[..]));
    for kv in r.range(Database::MAIN, &b"b"[..]..&b"k"[..])? {
        let (k, v) = kv?; // borrowed from the map, no copy
        println!(
            "{} = {}",
            String::from_utf8_lossy(k),
            String::from_utf8_lossy(v)
        );
    }
    let last = r
        .range(Database::MAIN, ..)?
        .next_back()
        .expect("four keys")?;
    assert_eq!(last.0, b"kiwi");
    println!("last: {}", String::from_utf8_lossy(last.0));
    Ok(())
}
