//! sled 0.34 (the last stable release) through its Rust API: a 1 GiB page
//! cache; a write is one atomic `apply_batch` followed by `flush` (sled's
//! way to make writes durable). sled has no snapshots: each read sees the
//! latest writes, so a batch of reads is not one consistent view.

use super::store::{touch, Batch, Handle, Store};
use crate::workloads::{key, Res};
use std::path::{Path, PathBuf};

pub struct Sled(sled::Db);

pub fn open(dir: &Path, cache: usize) -> Res<Sled> {
    let db = sled::Config::new()
        .path(dir)
        .cache_capacity(cache as u64)
        .open()?;
    Ok(Sled(db))
}

impl Store for Sled {
    fn handle(&self) -> Res<Box<dyn Handle + '_>> {
        Ok(Box::new(H(&self.0)))
    }

    /// sled has no compaction call (its segments are cleaned in the
    /// background).
    fn compact(&mut self, _scratch: &Path) -> Res<Option<PathBuf>> {
        Ok(None)
    }
}

struct H<'e>(&'e sled::Db);

impl Handle for H<'_> {
    fn write(&mut self, b: &Batch<'_>) -> Res<()> {
        let mut wb = sled::Batch::default();
        b.each(|k, v| {
            wb.insert(k, v);
            Ok(())
        })?;
        self.0.apply_batch(wb)?;
        self.0.flush()?;
        Ok(())
    }

    fn remove(&mut self, ids: &[u64]) -> Res<()> {
        let mut wb = sled::Batch::default();
        for &i in ids {
            wb.remove(&key(i)[..]);
        }
        self.0.apply_batch(wb)?;
        self.0.flush()?;
        Ok(())
    }

    fn get(&mut self, ids: &[u64]) -> Res<u64> {
        let mut n = 0;
        for &i in ids {
            if let Some(v) = self.0.get(key(i))? {
                n += touch(&v);
            }
        }
        Ok(n)
    }

    fn ranges(&mut self, ids: &[u64], len: usize) -> Res<u64> {
        let mut n = 0;
        for &i in ids {
            for item in self.0.range(key(i)..).take(len) {
                item?;
                n += 1;
            }
        }
        Ok(n)
    }

    fn scan(&mut self) -> Res<(u64, u64)> {
        let (mut n, mut bytes) = (0, 0);
        for item in self.0.iter() {
            let (k, v) = item?;
            n += 1;
            bytes += (k.len() + v.len()) as u64;
        }
        Ok((n, bytes))
    }
}
