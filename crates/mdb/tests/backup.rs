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
    common::main_contents(t)
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
            // At least three commits since the last backup, however slow
            // the machine: each log archive then holds records before its
            // backup's own transaction (restored from below).
            let want = models.lock().unwrap().len() + 3;
            while models.lock().unwrap().len() < want {
                std::thread::sleep(Duration::from_millis(1));
            }
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
            // A transaction before the backup's own: restored through the
            // archive (the writer made three commits or more meanwhile).
            assert!(l.first_txnid + 1 < entries[2].txnid, "{entries:?}");
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

/// The manifest's entries as JSON values, to edit.
fn manifest_value(dest: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dest.join("manifest.json")).unwrap()).unwrap()
}

fn write_manifest(dest: &Path, v: &serde_json::Value) {
    let text = serde_json::to_string_pretty(v).unwrap();
    std::fs::write(dest.join("manifest.json"), text).unwrap();
}

/// A manifest's fields changed (as a flipped bit would): `--verify` and
/// every restore refuse it, naming the manifest; no field relabels a
/// backup silently.
#[test]
fn a_changed_manifest_field_is_found_not_restored() {
    let (_s, dest, e) = chain();
    let man = dest.path().join("manifest.json");
    let orig = manifest_value(dest.path());
    let edits: Vec<(&str, serde_json::Value)> = vec![
        ("seq", 7.into()),
        ("kind", "full".into()),
        ("kind", "log".into()),
        ("txnid", (e[0].txnid - 1).into()),
        ("file", "000000-full.mdb".into()),
        ("bytes", 12.into()),
        ("crc32c", 5.into()),
        ("pages", 3.into()),
        ("pages_written", 3.into()),
        ("created", 1.into()),
        ("snapshot_ns", 1.into()),
        ("meta_crc32c", 1.into()),
        ("wal", true.into()),
    ];
    for i in 0..e.len() {
        for (field, value) in &edits {
            let mut v = orig.clone();
            v["backups"][i][*field] = value.clone();
            if v == orig {
                continue;
            }
            write_manifest(dest.path(), &v);
            let err = mdb::verify(dest.path()).unwrap_err();
            assert_eq!(err.path.as_deref(), Some(man.as_path()), "{field}: {err}");
            assert!(err.message.contains("checksum"), "{field}: {err}");
            for p in [RestorePoint::Newest, RestorePoint::Txn(e[i].txnid)] {
                let out = tempfile::tempdir().unwrap();
                let err = mdb::restore(dest.path(), out.path(), p, None).unwrap_err();
                assert!(err.message.contains("checksum"), "{field}: {err}");
                assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
            }
        }
    }
    for (field, value) in [("page_size", 8192.into()), ("hashes_crc32c", 1.into())] {
        let mut v = orig.clone();
        v[field] = value;
        write_manifest(dest.path(), &v);
        assert!(mdb::verify(dest.path()).is_err(), "{field}");
    }
    // Every single bit flipped: refused, or read as the same manifest.
    write_manifest(dest.path(), &orig);
    let bytes = std::fs::read(&man).unwrap();
    let good = mdb::Manifest::from_json(std::str::from_utf8(&bytes).unwrap()).unwrap();
    for bit in 0..bytes.len() * 8 {
        let mut b = bytes.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        if let Ok(m) = std::str::from_utf8(&b)
            .map_err(|_| ())
            .and_then(|t| mdb::Manifest::from_json(t).map_err(|_| ()))
        {
            assert_eq!(m, good, "bit {bit} changed the manifest unnoticed");
        }
    }
    mdb::verify(dest.path()).unwrap();
}

/// A manifest of the format before the checksum (still read) with a
/// backup's transaction or kind changed: `--verify` and the restore find
/// the file disagrees, and the restore writes nothing.
#[test]
fn a_restore_checks_what_it_rebuilt_against_the_manifest() {
    let (_s, dest, e) = chain();
    let mut orig = manifest_value(dest.path());
    orig["format"] = 1.into();
    orig.as_object_mut().unwrap().remove("manifest_crc32c");
    // Format 1 without the checksum is read.
    write_manifest(dest.path(), &orig);
    mdb::verify(dest.path()).unwrap();
    restore_checked(dest.path(), RestorePoint::Newest);

    // The full backup's transaction one lower: restored, it would be
    // labelled with the wrong transaction.
    let mut v = orig.clone();
    v["backups"][0]["txnid"] = (e[0].txnid - 1).into();
    write_manifest(dest.path(), &v);
    let full = dest.path().join(&e[0].file);
    let err = mdb::verify(dest.path()).unwrap_err();
    assert_eq!(err.path.as_deref(), Some(full.as_path()), "{err}");
    assert!(err.message.contains("transaction"), "{err}");
    let out = tempfile::tempdir().unwrap();
    let p = RestorePoint::Txn(e[0].txnid - 1);
    let err = mdb::restore(dest.path(), out.path(), p, None).unwrap_err();
    assert!(err.message.contains("transaction"), "{err}");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);

    // An incremental backup labelled full: not an LMDB file.
    let mut v = orig.clone();
    v["backups"][2]["kind"] = "full".into();
    write_manifest(dest.path(), &v);
    let incr = dest.path().join(&e[2].file);
    let err = mdb::verify(dest.path()).unwrap_err();
    assert_eq!(err.path.as_deref(), Some(incr.as_path()), "{err}");
    let out = tempfile::tempdir().unwrap();
    let err = mdb::restore(dest.path(), out.path(), RestorePoint::Newest, None).unwrap_err();
    assert!(err.message.contains("not an LMDB"), "{err}");
    assert_eq!(err.code, mdb::ErrorKind::Corrupted);
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    // The backups before it still restore.
    let (_, t) = restore_checked(dest.path(), RestorePoint::Txn(e[1].txnid));
    assert_eq!(t, e[1].txnid);
}

/// Names and sizes of the files in `dir`, and the manifest's bytes.
fn snapshot_dir(dir: &Path) -> (Vec<(String, u64)>, Vec<u8>) {
    let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().unwrap().len())
        })
        .collect();
    files.sort();
    (files, std::fs::read(dir.join("manifest.json")).unwrap())
}

fn commits(env: &mdb::Env, n: u32, tag: u8) {
    for i in 0..n {
        let mut w = env.write_txn().unwrap();
        w.put(
            Database::MAIN,
            &i.to_be_bytes(),
            &[tag; 50],
            WriteFlags::EMPTY,
        )
        .unwrap();
        w.commit().unwrap();
    }
}

/// A backup that cannot continue the chain in its directory is refused
/// before anything is written, and the chain stays readable: an
/// environment at an older transaction (compacted with `mdb copy -c`,
/// another one, restored from an older backup), or at the same
/// transaction with other contents.
#[test]
fn a_backup_that_cannot_continue_the_chain_is_refused() {
    for wal in [false, true] {
        let t = tempfile::tempdir().unwrap();
        let mut o = EnvOptions::new();
        if wal {
            o.wal(WalOptions::default());
        }
        let dest = t.path().join("dest");
        let open = |name: &str| {
            let p = t.path().join(name);
            std::fs::create_dir_all(&p).unwrap();
            o.open(&p).unwrap()
        };
        let env = open("src");
        commits(&env, 6, 1);
        env.backup(&dest, false, None).unwrap();
        commits(&env, 2, 2);
        let newest = env.backup(&dest, true, None).unwrap();
        assert_eq!(newest.txnid, 8);

        let compacted = t.path().join("compacted");
        std::fs::create_dir(&compacted).unwrap();
        env.copy_to_path(&compacted, true).unwrap();
        let other = open("other");
        commits(&other, 3, 3);
        let twin = open("twin"); // transaction 8 too, other contents
        commits(&twin, 8, 4);
        let older = t.path().join("older");
        mdb::restore(&dest, &older, RestorePoint::Txn(6), None).unwrap();
        let before = snapshot_dir(&dest);
        for (name, path) in [
            ("compacted", compacted.clone()),
            ("other", t.path().join("other")),
            ("twin", t.path().join("twin")),
            ("older", older.clone()),
        ] {
            let e = o.open(&path).unwrap();
            assert!(e.read_txn().unwrap().id() <= 8, "{name}");
            for incremental in [true, false] {
                let err = e.backup(&dest, incremental, None).unwrap_err();
                assert!(err.message.contains("new directory"), "{name}: {err}");
                assert_eq!(snapshot_dir(&dest), before, "{name}: written to");
            }
            if wal && path.join("wal").is_dir() {
                let err = e.archive_log(&dest).unwrap_err();
                assert!(err.message.contains("new directory"), "{name}: {err}");
            }
        }
        mdb::verify(&dest).unwrap();
        let (_, t8) = restore_checked(&dest, RestorePoint::Newest);
        assert_eq!(t8, 8);
        // The environment itself continues the chain.
        commits(&env, 1, 5);
        assert_eq!(env.backup(&dest, true, None).unwrap().txnid, 9);
        mdb::verify(&dest).unwrap();
    }
}

const SEC: u64 = 1_000_000_000;

/// A clock the test sets: the log's commit records and the backups'
/// snapshots read it, so that times need no wall-clock luck.
#[derive(Default)]
struct Clock(std::sync::atomic::AtomicU64);

impl mdb::io::FaultInjector for Clock {
    fn on_io(&self, _: mdb::io::IoOp) -> mdb::io::IoAction {
        mdb::io::IoAction::Proceed
    }
    fn now(&self) -> Option<std::time::SystemTime> {
        Some(at_ns(self.0.load(Ordering::SeqCst)))
    }
}

/// Commit `k` is made at second 1000 + k; backups are taken half a second
/// after commits 3 (full), 6 and 9. A restore to any time holds exactly
/// the commits made by then: in write-ahead-log mode every one of them
/// (the archived records' commit times), otherwise those of the newest
/// backup taken by then; never one made after.
#[test]
fn a_restore_to_a_time_holds_no_commit_made_after_it() {
    for wal in [false, true] {
        let (src, dest) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let clock = Arc::new(Clock::default());
        let set = |ns: u64| clock.0.store(ns, Ordering::SeqCst);
        let mut o = EnvOptions::new();
        o.fault_injector(clock.clone());
        if wal {
            o.wal(WalOptions::default());
        }
        let env = o.open(src.path()).unwrap();
        let mut snaps = Vec::new();
        for k in 1..=10u64 {
            set((1000 + k) * SEC);
            let mut w = env.write_txn().unwrap();
            assert_eq!(w.id(), k);
            w.put(Database::MAIN, &k.to_be_bytes(), b"v", WriteFlags::EMPTY)
                .unwrap();
            w.commit().unwrap();
            if k % 3 == 0 {
                set((1000 + k) * SEC + SEC / 2);
                let b = env.backup(dest.path(), k != 3, None).unwrap();
                assert_eq!(b.snapshot_ns, Some((1000 + k) * SEC + SEC / 2));
                snaps.push((b.snapshot_ns.unwrap(), b.txnid));
            }
        }
        if wal {
            assert_eq!(env.archive_log(dest.path()).unwrap().unwrap().txnid, 10);
        }
        mdb::verify(dest.path()).unwrap();
        for s in 999..=1012u64 {
            for t in [
                s * SEC - 1,
                s * SEC,
                s * SEC + SEC / 2,
                s * SEC + SEC / 2 + 1,
            ] {
                let base = snaps.iter().rfind(|(at, _)| *at <= t).map(|b| b.1);
                // The newest commit made at or before t.
                let by_then = (t / SEC).saturating_sub(1000).min(10);
                let want = base.map(|b| if wal { by_then.max(b) } else { b });
                let out = tempfile::tempdir().unwrap();
                let r = mdb::restore(dest.path(), out.path(), RestorePoint::Time(at_ns(t)), None);
                let Some(want) = want else {
                    let e = r.unwrap_err();
                    assert!(e.message.contains("no backup"), "{e}");
                    continue;
                };
                assert_eq!(r.unwrap().txnid, want, "wal {wal}, time {t}");
                let got = EnvOptions::new().open(out.path()).unwrap();
                let r = got.read_txn().unwrap();
                let keys: Vec<u64> = r
                    .cursor(Database::MAIN)
                    .unwrap()
                    .iter()
                    .map(|kv| u64::from_be_bytes(kv.unwrap().0.try_into().unwrap()))
                    .collect();
                assert_eq!(keys, (1..=want).collect::<Vec<_>>(), "wal {wal}, time {t}");
                assert!(want <= by_then, "a commit made after {t} restored");
            }
        }
    }
}

/// Fails every backup or restore write and sync from the `at`-th on with
/// ENOSPC (the disk is full), while armed.
#[derive(Default)]
struct DiskFull {
    armed: AtomicBool,
    at: std::sync::atomic::AtomicU64,
    seen: std::sync::atomic::AtomicU64,
}

impl DiskFull {
    fn arm(&self, at: u64) {
        self.seen.store(0, Ordering::SeqCst);
        self.at.store(at, Ordering::SeqCst);
        self.armed.store(true, Ordering::SeqCst);
    }
}

impl mdb::io::FaultInjector for DiskFull {
    fn on_io(&self, op: mdb::io::IoOp) -> mdb::io::IoAction {
        use mdb::io::{IoAction, IoOp};
        if !matches!(op, IoOp::BackupWrite { .. } | IoOp::BackupSync)
            || !self.armed.load(Ordering::SeqCst)
        {
            return IoAction::Proceed;
        }
        if self.seen.fetch_add(1, Ordering::SeqCst) >= self.at.load(Ordering::SeqCst) {
            IoAction::Fail(libc::ENOSPC)
        } else {
            IoAction::Proceed
        }
    }
}

/// A backup or restore that fails on a full disk at any write or sync
/// fails with ENOSPC naming the file it was making (not a source, not a
/// temporary name), and leaves nothing behind: the chain as it was, the
/// output directory empty. The next one succeeds.
#[test]
fn a_backup_or_restore_failing_on_a_full_disk_leaves_nothing_behind() {
    for wal in [false, true] {
        let (src, dest) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let full = Arc::new(DiskFull::default());
        let mut o = EnvOptions::new();
        o.fault_injector(full.clone());
        if wal {
            o.wal(WalOptions::default());
        }
        let env = o.open(src.path()).unwrap();
        commits(&env, 300, 1);
        env.backup(dest.path(), false, None).unwrap();
        for incremental in [true, false, true] {
            commits(&env, 50, 2);
            let before = snapshot_dir(dest.path());
            let mut failures = 0;
            for at in 0.. {
                full.arm(at);
                let r = env.backup(dest.path(), incremental, None);
                full.armed.store(false, Ordering::SeqCst);
                let Err(e) = r else { break };
                failures += 1;
                assert_eq!(e.code, mdb::ErrorKind::Os(libc::ENOSPC), "{e}");
                let p = e.path.clone().unwrap();
                assert_eq!(p.parent(), Some(dest.path()), "{e}");
                assert!(
                    !p.file_name().unwrap().to_string_lossy().starts_with('.'),
                    "{e}"
                );
                assert_eq!(snapshot_dir(dest.path()), before, "left behind at {at}");
                mdb::verify(dest.path()).unwrap();
            }
            assert!(failures >= 4, "{failures} failures");
        }
        let (_, newest) = restore_checked(dest.path(), RestorePoint::Newest);
        let mut failures = 0;
        for at in 0.. {
            let out = tempfile::tempdir().unwrap();
            full.arm(at);
            let r = mdb::restore_with_faults(
                dest.path(),
                out.path(),
                RestorePoint::Newest,
                None,
                Some(full.clone()),
            );
            let Err(e) = r else {
                assert_eq!(r.unwrap().txnid, newest);
                break;
            };
            failures += 1;
            assert_eq!(e.code, mdb::ErrorKind::Os(libc::ENOSPC), "{e}");
            assert_eq!(e.path, Some(out.path().join("data.mdb")), "{e}");
            assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "at {at}");
        }
        assert!(failures >= 3, "{failures} failures");
    }
}

/// What a killed backup or restore leaves (its temporary files) is
/// removed by the next backup or restore into that directory; other
/// files are left alone.
#[test]
fn leftovers_of_a_killed_backup_or_restore_are_removed_by_the_next() {
    let (_s, dest, e) = chain();
    let env = EnvOptions::new().open(_s.path()).unwrap();
    let leftovers = [
        ".000003-incr.pages.tmp",
        ".000009-full.mdb.tmp",
        ".000004-log.records.tmp",
        ".manifest.json.tmp",
        "manifest.json.tmp",
        ".hashes.bin.tmp",
    ];
    for n in leftovers {
        std::fs::write(dest.path().join(n), vec![7u8; 1 << 16]).unwrap();
    }
    std::fs::write(dest.path().join("notes.tmp"), b"mine").unwrap();
    env.backup(dest.path(), true, None).unwrap();
    for n in leftovers {
        assert!(!dest.path().join(n).exists(), "{n} left");
    }
    assert!(dest.path().join("notes.tmp").exists());
    mdb::verify(dest.path()).unwrap();

    let out = tempfile::tempdir().unwrap();
    let restoring = out.path().join(".data.mdb.restoring");
    std::fs::write(&restoring, vec![7u8; 1 << 20]).unwrap();
    std::fs::write(out.path().join(".000001-full.mdb.tmp"), b"x").unwrap();
    let p = RestorePoint::Txn(e[0].txnid);
    mdb::restore(dest.path(), out.path(), p, None).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["data.mdb"]);
}
