//! redb through its Rust API: one `&[u8] -> &[u8]` table, its default
//! `Durability::Immediate` (each commit is durable when it returns), and a
//! 1 GiB page cache (redb's own cache: its reads do not go through a map).

use super::store::{touch, Batch, Handle, Store};
use crate::workloads::{key, Res};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::{Path, PathBuf};

const T: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");

pub struct Redb(Database, PathBuf);

pub fn open(dir: &Path, cache: usize) -> Res<Redb> {
    std::fs::create_dir_all(dir)?;
    let db = Database::builder()
        .set_cache_size(cache)
        .create(dir.join("db.redb"))?;
    let w = db.begin_write()?;
    w.open_table(T)?;
    w.commit()?;
    Ok(Redb(db, dir.to_path_buf()))
}

impl Store for Redb {
    fn handle(&self) -> Res<Box<dyn Handle + '_>> {
        Ok(Box::new(H(&self.0)))
    }

    /// In place: `Database::compact`.
    fn compact(&mut self, _scratch: &Path) -> Res<Option<PathBuf>> {
        self.0.compact()?;
        Ok(Some(self.1.clone()))
    }
}

struct H<'e>(&'e Database);

impl Handle for H<'_> {
    fn write(&mut self, b: &Batch<'_>) -> Res<()> {
        let w = self.0.begin_write()?;
        {
            let mut t = w.open_table(T)?;
            b.each(|k, v| {
                t.insert(k, v)?;
                Ok(())
            })?;
        }
        Ok(w.commit()?)
    }

    fn remove(&mut self, ids: &[u64]) -> Res<()> {
        let w = self.0.begin_write()?;
        {
            let mut t = w.open_table(T)?;
            for &i in ids {
                t.remove(&key(i)[..])?;
            }
        }
        Ok(w.commit()?)
    }

    fn get(&mut self, ids: &[u64]) -> Res<u64> {
        let r = self.0.begin_read()?;
        let t = r.open_table(T)?;
        let mut n = 0;
        for &i in ids {
            if let Some(v) = t.get(&key(i)[..])? {
                n += touch(v.value());
            }
        }
        Ok(n)
    }

    fn ranges(&mut self, ids: &[u64], len: usize) -> Res<u64> {
        let r = self.0.begin_read()?;
        let t = r.open_table(T)?;
        let mut n = 0;
        for &i in ids {
            let k = key(i);
            for item in t.range::<&[u8]>(&k[..]..)?.take(len) {
                item?;
                n += 1;
            }
        }
        Ok(n)
    }

    fn scan(&mut self) -> Res<(u64, u64)> {
        let r = self.0.begin_read()?;
        let t = r.open_table(T)?;
        let (mut n, mut bytes) = (0, 0);
        for item in t.iter()? {
            let (k, v) = item?;
            n += 1;
            bytes += (k.value().len() + v.value().len()) as u64;
        }
        Ok((n, bytes))
    }
}
