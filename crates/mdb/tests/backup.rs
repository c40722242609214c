//! Hot backups (issue 12): full and incremental backups taken while a
//! writer commits and a reader reads, in the default and write-ahead-log
//! modes; restoring every backup point gives exactly the data committed at
//! its transaction, a file LMDB's tools read; damaged, truncated or missing
//! files and manifests are errors naming them.

mod common;
mod debian;

use mdb::{BackupKind, Database, EnvOptions, RestorePoint, Txn, WalOptions, WriteFlags};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn contents<T: Txn>(t: &T) -> Model {
    t.cursor(Database::MAIN)
        .unwrap()
        .iter()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn restore_and_read(dest: &Path, point: RestorePoint) -> (Model, u64) {
    let out = tempfile::tempdir().unwrap();
    let r = mdb::restore(dest, out.path(), point, None).unwrap();
    let rep = mdb::check::check_file(&out.path().join("data.mdb")).unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
    // Debian's LMDB reads it.
    let o = Command::new("/usr/bin/mdb_stat")
        .arg(out.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let env = EnvOptions::new().open(out.path()).unwrap();
    let m = contents(&env.read_txn().unwrap());
    (m, r.entry.txnid)
}

#[test]
fn backups_taken_while_writing_restore_every_point() {
    debian::lmdb_utils();
    for wal in [false, true] {
        let src = tempfile::tempdir().unwrap();
        let dest = tempfile::tempdir().unwrap();
        let mut o = EnvOptions::new();
        if wal {
            o.wal(WalOptions::default());
        }
        let env = Arc::new(o.open(src.path()).unwrap());
        let models: Arc<Mutex<BTreeMap<u64, Model>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        {
            let mut m = Model::new();
            let mut w = env.write_txn().unwrap();
            for i in 0..3000u32 {
                let (k, v) = (format!("k{i:05}").into_bytes(), vec![i as u8; 200]);
                w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
                m.insert(k, v);
            }
            let id = w.id();
            w.commit().unwrap();
            models.lock().unwrap().insert(id, m);
        }
        let writer = std::thread::spawn({
            let (env, models, stop) = (env.clone(), models.clone(), stop.clone());
            move || {
                let mut m = models.lock().unwrap().values().next().unwrap().clone();
                let mut s = 0x1234_5678u64;
                while !stop.load(Ordering::Relaxed) {
                    let mut w = env.write_txn().unwrap();
                    for _ in 0..20 {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        let k = format!("k{:05}", s % 4000).into_bytes();
                        if s.is_multiple_of(5) {
                            w.del(Database::MAIN, &k).unwrap();
                            m.remove(&k);
                        } else {
                            let v = vec![(s >> 20) as u8; 50 + (s % 300) as usize];
                            w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
                            m.insert(k, v);
                        }
                    }
                    let id = w.id();
                    w.commit().unwrap();
                    models.lock().unwrap().insert(id, m.clone());
                }
            }
        });
        let reader = std::thread::spawn({
            let (env, stop) = (env.clone(), stop.clone());
            move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let r = env.read_txn().unwrap();
                    assert!(contents(&r).len() >= 2000);
                    n += 1;
                }
                n
            }
        });
        let mut entries = Vec::new();
        for i in 0..6 {
            std::thread::sleep(Duration::from_millis(40));
            // A second full backup in the middle of the chain.
            let incremental = i != 0 && i != 3;
            let e = env.backup(dest.path(), incremental, None).unwrap();
            assert_eq!(
                e.kind,
                if incremental {
                    BackupKind::Incremental
                } else {
                    BackupKind::Full
                }
            );
            assert_eq!(e.wal, wal);
            entries.push(e);
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert!(reader.join().unwrap() > 0);
        let v = mdb::verify(dest.path()).unwrap();
        assert_eq!(v.manifest.backups, entries);
        let models = models.lock().unwrap();
        assert!(
            entries.windows(2).all(|w| w[0].txnid < w[1].txnid),
            "{entries:?}"
        );
        for e in &entries {
            let (m, t) = restore_and_read(dest.path(), RestorePoint::Txn(e.txnid));
            assert_eq!(t, e.txnid);
            assert!(m == models[&e.txnid], "wal {wal}: backup {} differs", e.seq);
            // A point between two backups restores the earlier one.
            let (_, t) = restore_and_read(dest.path(), RestorePoint::Txn(e.txnid + 1));
            assert!(t >= e.txnid);
        }
        let (m, t) = restore_and_read(dest.path(), RestorePoint::Newest);
        assert_eq!(t, entries.last().unwrap().txnid);
        assert!(m == models[&t]);
        let (_, t) = restore_and_read(dest.path(), RestorePoint::Time(entries[0].created));
        assert!(t >= entries[0].txnid);
        let out = tempfile::tempdir().unwrap();
        let e = mdb::restore(dest.path(), out.path(), RestorePoint::Txn(0), None).unwrap_err();
        assert!(e.message.contains("no backup"), "{e}");
    }
}

/// A small change costs a small backup.
#[test]
fn an_incremental_backup_holds_what_changed() {
    let src = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    let env = EnvOptions::new().open(src.path()).unwrap();
    let mut w = env.write_txn().unwrap();
    for i in 0..50_000u32 {
        w.put(
            Database::MAIN,
            &i.to_be_bytes(),
            &[1; 100],
            WriteFlags::EMPTY,
        )
        .unwrap();
    }
    w.commit().unwrap();
    let full = env.backup(dest.path(), true, None).unwrap();
    assert_eq!(full.kind, BackupKind::Full);
    // 1% of the keys (a range of them: 1% of the pages too; a change
    // spread over every page costs a page per key).
    let mut w = env.write_txn().unwrap();
    for i in 20_000..20_500u32 {
        w.put(
            Database::MAIN,
            &i.to_be_bytes(),
            &[2; 100],
            WriteFlags::EMPTY,
        )
        .unwrap();
    }
    w.commit().unwrap();
    let incr = env.backup(dest.path(), true, None).unwrap();
    assert_eq!(incr.kind, BackupKind::Incremental);
    assert!(
        incr.bytes * 20 < full.bytes,
        "{} of {} bytes",
        incr.bytes,
        full.bytes
    );
    // Nothing changed: the metas only.
    let none = env.backup(dest.path(), true, None).unwrap();
    assert_eq!(none.pages_written, 2);
}

/// A chain of three backups to damage.
fn chain() -> (tempfile::TempDir, tempfile::TempDir, Vec<mdb::BackupEntry>) {
    let src = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    let env = EnvOptions::new().open(src.path()).unwrap();
    let mut entries = Vec::new();
    for round in 0..3u8 {
        let mut w = env.write_txn().unwrap();
        for i in 0..2000u32 {
            if i % 7 == round as u32 || round == 0 {
                w.put(
                    Database::MAIN,
                    &i.to_be_bytes(),
                    &[round; 80],
                    WriteFlags::EMPTY,
                )
                .unwrap();
            }
        }
        w.commit().unwrap();
        entries.push(env.backup(dest.path(), true, None).unwrap());
    }
    (src, dest, entries)
}

fn file(dest: &Path, e: &mdb::BackupEntry) -> std::path::PathBuf {
    dest.join(&e.file)
}

#[test]
fn damaged_chains_are_errors_naming_the_file() {
    // Truncated.
    let (_s, dest, e) = chain();
    let f = file(dest.path(), &e[1]);
    let len = std::fs::metadata(&f).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(len - 100)
        .unwrap();
    let err = mdb::verify(dest.path()).unwrap_err();
    assert_eq!(err.path.as_deref(), Some(f.as_path()), "{err}");
    assert!(err.message.contains("truncated"), "{err}");
    let out = tempfile::tempdir().unwrap();
    let err = mdb::restore(dest.path(), out.path(), RestorePoint::Newest, None).unwrap_err();
    assert_eq!(err.path.as_deref(), Some(f.as_path()), "{err}");
    assert!(!out.path().join("data.mdb").exists());
    // The backup before it still restores.
    mdb::restore(dest.path(), out.path(), RestorePoint::Txn(e[0].txnid), None).unwrap();

    // One byte changed.
    let (_s, dest, e) = chain();
    let f = file(dest.path(), &e[2]);
    let mut b = std::fs::read(&f).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    std::fs::write(&f, &b).unwrap();
    let err = mdb::verify(dest.path()).unwrap_err();
    assert_eq!(err.path.as_deref(), Some(f.as_path()));
    assert!(err.message.contains("CRC32C"), "{err}");
    assert_eq!(err.code, mdb::Error::Corrupted);

    // Missing in the middle.
    let (_s, dest, e) = chain();
    let f = file(dest.path(), &e[1]);
    std::fs::remove_file(&f).unwrap();
    let err = mdb::verify(dest.path()).unwrap_err();
    assert_eq!(err.path.as_deref(), Some(f.as_path()));
    assert_eq!(err.code, mdb::Error::Os(libc::ENOENT));
    let out = tempfile::tempdir().unwrap();
    let err = mdb::restore(dest.path(), out.path(), RestorePoint::Newest, None).unwrap_err();
    assert_eq!(err.path.as_deref(), Some(f.as_path()));

    // A manifest that is not one, or lost.
    let (_s, dest, _) = chain();
    let m = dest.path().join("manifest.json");
    std::fs::write(&m, b"{\"format\": 1, \"page_size\":").unwrap();
    let err = mdb::verify(dest.path()).unwrap_err();
    assert_eq!(err.path.as_deref(), Some(m.as_path()));
    std::fs::remove_file(&m).unwrap();
    let err = mdb::verify(dest.path()).unwrap_err();
    assert!(err.message.contains("no backup manifest"), "{err}");

    // A chain edited to skip a backup.
    let (_s, dest, _) = chain();
    let m = dest.path().join("manifest.json");
    let text = std::fs::read_to_string(&m).unwrap();
    let mut man: mdb::Manifest = serde_json_free_parse(&text);
    man.backups.remove(1);
    std::fs::write(&m, serde_json_free_write(&man)).unwrap();
    let err = mdb::verify(dest.path()).unwrap_err();
    assert!(err.message.contains("gap"), "{err}");

    // Damaged page hashes: an incremental backup is refused, a full one works.
    let (src, dest, _) = chain();
    std::fs::write(dest.path().join("hashes.bin"), b"12345678").unwrap();
    let env = EnvOptions::new().open(src.path()).unwrap();
    let err = env.backup(dest.path(), true, None).unwrap_err();
    assert!(err.message.contains("full backup"), "{err}");
    env.backup(dest.path(), false, None).unwrap();
    mdb::verify(dest.path()).unwrap();

    // Restoring over an environment is refused.
    let out = tempfile::tempdir().unwrap();
    mdb::restore(dest.path(), out.path(), RestorePoint::Newest, None).unwrap();
    let err = mdb::restore(dest.path(), out.path(), RestorePoint::Newest, None).unwrap_err();
    assert!(err.message.contains("exists"), "{err}");
}

fn serde_json_free_parse(text: &str) -> mdb::Manifest {
    mdb::Manifest::from_json(text).unwrap()
}

fn serde_json_free_write(m: &mdb::Manifest) -> String {
    m.to_json()
}
