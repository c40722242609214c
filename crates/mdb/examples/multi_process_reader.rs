//! Readers in other processes: this program starts a copy of itself that
//! reads while the parent commits; readers take no lock and always see a
//! whole commit.
//!
//! `cargo run -p mdb --example multi_process_reader`

use mdb::{Database, Env, Txn, WriteFlags};
use std::process::Command;

fn reader(dir: &str) -> mdb::Result<()> {
    let env = Env::open(dir)?;
    let mut seen = 0;
    for _ in 0..200 {
        let r = env.read_txn()?;
        // Every commit writes "a" and "b" together: a snapshot has both
        // or neither, with the same value.
        let (a, b) = (r.get(Database::MAIN, b"a")?, r.get(Database::MAIN, b"b")?);
        assert_eq!(a, b, "a torn snapshot");
        if let Some(v) = a {
            seen = seen.max(u32::from_be_bytes(v.try_into().expect("4 bytes")));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    println!("reader process saw commits up to {seen}");
    Ok(())
}

fn main() -> mdb::Result<()> {
    if let Some(dir) = std::env::args().nth(1) {
        return reader(&dir);
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let env = Env::open(dir.path())?;
    let mut child = Command::new(std::env::current_exe().expect("this program"))
        .arg(dir.path())
        .spawn()
        .expect("a reader process");
    let written = (0..300u32).try_for_each(|i| {
        let mut w = env.write_txn()?;
        w.put(Database::MAIN, b"a", &i.to_be_bytes(), WriteFlags::EMPTY)?;
        w.put(Database::MAIN, b"b", &i.to_be_bytes(), WriteFlags::EMPTY)?;
        w.commit()
    });
    let status = child.wait().expect("the reader ends");
    written?;
    assert!(status.success());
    println!("writer committed 300 transactions");
    Ok(())
}
