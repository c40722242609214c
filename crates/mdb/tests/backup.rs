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

/// The time `ns` nanoseconds after the Unix epoch.
fn at_ns(ns: u64) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + Duration::from_nanos(ns)
}

fn restore_and_read(dest: &Path, point: RestorePoint) -> (Model, u64) {
    restore_checked(dest, point)
}

/// Restore `point` into a new directory, check the file, and read it.
fn restore_checked(dest: &Path, point: RestorePoint) -> (Model, u64) {
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
    let r2 = env.read_txn().unwrap();
    assert_eq!(r2.id(), r.txnid);
    let m = contents(&r2);
    (m, r.txnid)
}

#[test]
fn backups_taken_while_writing_restore_every_point() {
    debian::lmdb_utils();
    for wal in [false, true] {
        let src = tempfile::tempdir().unwrap();
        let dest = tempfile::tempdir().unwrap();
        let mut o = EnvOptions::new();
        if wal {
            // Small segments, so that checkpoints recycle some: the
            // backup chain's hold must keep what it has not archived.
            let mut w = WalOptions::default();
            w.segment_size = 64 << 10;
            w.checkpointer = false;
            o.wal(w);
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
            if wal {
                env.checkpoint().unwrap();
            }
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
        if wal {
            // Every transaction between the first and the last backup, by
            // the archived log (a sample of them).
            let (lo, hi) = (entries[0].txnid, entries.last().unwrap().txnid);
            assert!(entries[1..].iter().all(|e| e.log.is_some()), "{entries:?}");
            let step = ((hi - lo) / 40).max(1);
            for t in (lo..=hi).step_by(step as usize).chain([hi - 1, lo + 1]) {
                let (m, got) = restore_and_read(dest.path(), RestorePoint::Txn(t));
                assert_eq!(got, t, "restored to the transaction asked for");
                assert!(m == models[&t], "transaction {t} differs");
            }
        }
        if wal {
            // Continuous archiving: log-only entries after the last backup
            // reach every transaction since.
            let mut models = models.clone();
            // (The writer's commits after the last backup first.)
            let caught_up = env.archive_log(dest.path()).unwrap();
            assert_eq!(env.archive_log(dest.path()).unwrap(), None);
            let from = entries.last().unwrap().txnid;
            assert!(caught_up.is_none_or(|e| e.log.unwrap().first_txnid == from + 1));
            let mut m = models[&env.read_txn().unwrap().id()].clone();
            for round in 0..3u8 {
                for i in 0..4u8 {
                    let mut w = env.write_txn().unwrap();
                    let (k, v) = (vec![b'z', round, i], vec![round; 500]);
                    w.put(Database::MAIN, &k, &v, WriteFlags::EMPTY).unwrap();
                    m.insert(k, v);
                    let id = w.id();
                    w.commit().unwrap();
                    models.insert(id, m.clone());
                }
                env.checkpoint().unwrap();
                let e = env.archive_log(dest.path()).unwrap().unwrap();
                assert_eq!(e.kind, BackupKind::Log);
            }
            let to = env.read_txn().unwrap().id();
            mdb::verify(dest.path()).unwrap();
            for t in from..=to {
                let (got, at) = restore_and_read(dest.path(), RestorePoint::Txn(t));
                assert_eq!(at, t);
                assert!(got == models[&t], "transaction {t}");
            }
            let (got, at) = restore_and_read(dest.path(), RestorePoint::Newest);
            assert!(at == to && got == models[&to]);
            // An incremental backup after log entries chains on.
            let e = env.backup(dest.path(), true, None).unwrap();
            assert_eq!(e.kind, BackupKind::Incremental);
            let (got, _) = restore_and_read(dest.path(), RestorePoint::Newest);
            assert!(got == models[&to]);
            let entries: Vec<mdb::BackupEntry> = mdb::verify(dest.path())
                .unwrap()
                .manifest
                .backups
                .into_iter()
                .filter(|b| b.kind != BackupKind::Log)
                .collect();

            // Without the hold, checkpoints recycle what no backup has
            // archived: the next backup has no log archive, and a restore
            // inside that stretch gives the backup before it.
            let hold = src.path().join("wal/archive-hold");
            assert!(hold.exists());
            std::fs::remove_file(&hold).unwrap();
            let last = entries.last().unwrap().txnid;
            for _ in 0..300 {
                let mut w = env.write_txn().unwrap();
                w.put(Database::MAIN, b"k00000", &[9; 300], WriteFlags::EMPTY)
                    .unwrap();
                w.commit().unwrap();
            }
            env.checkpoint().unwrap();
            let e = env.backup(dest.path(), true, None).unwrap();
            assert!(e.log.is_none(), "{e:?}");
            let (_, t) = restore_and_read(dest.path(), RestorePoint::Txn(last + 5));
            assert_eq!(t, last);
            // A damaged log archive is named.
            let l = entries[2].log.as_ref().unwrap();
            let f = dest.path().join(&l.file);
            let mut b = std::fs::read(&f).unwrap();
            b[100] ^= 1;
            std::fs::write(&f, b).unwrap();
            let err = mdb::verify(dest.path()).unwrap_err();
            assert_eq!(err.path.as_deref(), Some(f.as_path()), "{err}");
            let out = tempfile::tempdir().unwrap();
            let p = RestorePoint::Txn(l.first_txnid + 1);
            let err = mdb::restore(dest.path(), out.path(), p, None).unwrap_err();
            assert_eq!(err.path.as_deref(), Some(f.as_path()), "{err}");
            continue;
        }
        // At the first snapshot's time: the newest backup taken by then.
        let s0 = entries[0].snapshot_ns.unwrap();
        let (_, t) = restore_and_read(dest.path(), RestorePoint::Time(at_ns(s0)));
        let by_then = entries.iter().rfind(|e| e.snapshot_ns.unwrap() <= s0);
        assert_eq!(t, by_then.unwrap().txnid);
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
    assert_eq!(err.code, mdb::ErrorKind::Corrupted);

    // Missing in the middle.
    let (_s, dest, e) = chain();
    let f = file(dest.path(), &e[1]);
    std::fs::remove_file(&f).unwrap();
    let err = mdb::verify(dest.path()).unwrap_err();
    assert_eq!(err.path.as_deref(), Some(f.as_path()));
    assert_eq!(err.code, mdb::ErrorKind::Os(libc::ENOENT));
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
