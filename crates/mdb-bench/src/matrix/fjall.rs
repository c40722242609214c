//! fjall (an LSM tree in Rust) through its Rust API: one keyspace, a 1 GiB
//! block cache, every write batch committed with `PersistMode::SyncData`
//! (journal synced before the commit returns), reads through a snapshot.

use super::store::{touch, Batch, Handle, Store};
use crate::workloads::{key, Res};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode, Readable};
use std::path::{Path, PathBuf};

pub struct Fjall {
    db: Database,
    ks: Keyspace,
    dir: PathBuf,
}

pub fn open(dir: &Path, cache: usize) -> Res<Fjall> {
    let db = Database::builder(dir).cache_size(cache as u64).open()?;
    let ks = db.keyspace("kv", KeyspaceCreateOptions::default)?;
    Ok(Fjall {
        db,
        ks,
        dir: dir.to_path_buf(),
    })
}

impl Store for Fjall {
    fn handle(&self) -> Res<Box<dyn Handle + '_>> {
        Ok(Box::new(H(self)))
    }

    /// `Keyspace::major_compact` (public but hidden from fjall's docs:
    /// fjall otherwise compacts in the background, when it chooses).
    fn compact(&mut self, _scratch: &Path) -> Res<Option<PathBuf>> {
        self.ks.rotate_memtable_and_wait()?;
        self.ks.major_compact()?;
        Ok(Some(self.dir.clone()))
    }
}

struct H<'e>(&'e Fjall);

impl Handle for H<'_> {
    fn write(&mut self, b: &Batch<'_>) -> Res<()> {
        let mut wb = self.0.db.batch().durability(Some(PersistMode::SyncData));
        b.each(|k, v| {
            wb.insert(&self.0.ks, k, v);
            Ok(())
        })?;
        Ok(wb.commit()?)
    }

    fn remove(&mut self, ids: &[u64]) -> Res<()> {
        let mut wb = self.0.db.batch().durability(Some(PersistMode::SyncData));
        for &i in ids {
            wb.remove(&self.0.ks, key(i));
        }
        Ok(wb.commit()?)
    }

    fn get(&mut self, ids: &[u64]) -> Res<u64> {
        let s = self.0.db.snapshot();
        let mut n = 0;
        for &i in ids {
            if let Some(v) = s.get(&self.0.ks, key(i))? {
                n += touch(&v);
            }
        }
        Ok(n)
    }

    fn ranges(&mut self, ids: &[u64], len: usize) -> Res<u64> {
        let s = self.0.db.snapshot();
        let mut n = 0;
        for &i in ids {
            for g in s.range(&self.0.ks, key(i)..).take(len) {
                g.value()?;
                n += 1;
            }
        }
        Ok(n)
    }

    fn scan(&mut self) -> Res<(u64, u64)> {
        let s = self.0.db.snapshot();
        let (mut n, mut bytes) = (0, 0);
        for g in s.iter(&self.0.ks) {
            let (k, v) = g.into_inner()?;
            n += 1;
            bytes += (k.len() + v.len()) as u64;
        }
        Ok((n, bytes))
    }
}
