//! Under WRITEMAP the writer writes the meta pages through the map that
//! readers copy them out of: every snapshot a reader begins while commits
//! go on must still be one committed state (the `n` key of txn `t` is `t`).
//! The deterministic case of a torn copy is `env::tests`.

use mdb::{Database, EnvFlags, EnvOptions, Txn, WriteFlags};
use std::sync::atomic::{AtomicBool, Ordering};

#[test]
fn readers_racing_a_writemap_writer_see_committed_states() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvOptions::new()
        .flags(EnvFlags::WRITE_MAP | EnvFlags::NO_SYNC | EnvFlags::NO_TLS)
        .map_size(64 << 20)
        .open(dir.path())
        .unwrap();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut seen = 0;
                while !done.load(Ordering::Relaxed) {
                    let r = env.read_txn().unwrap();
                    if let Some(v) = r.get(Database::MAIN, b"n").unwrap() {
                        let n = u64::from_le_bytes(v.try_into().unwrap());
                        assert_eq!(n, r.id(), "snapshot {} holds txn {n}'s data", r.id());
                        assert!(r.id() >= seen);
                        seen = r.id();
                    }
                }
            });
        }
        for _ in 0..3000 {
            let mut w = env.write_txn().unwrap();
            let id = w.id();
            w.put(Database::MAIN, b"n", &id.to_le_bytes(), WriteFlags::EMPTY)
                .unwrap();
            w.commit().unwrap();
        }
        done.store(true, Ordering::Relaxed);
    });
}
