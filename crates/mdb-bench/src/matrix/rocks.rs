//! RocksDB (the `rocksdb` crate against Debian's `librocksdb`, cargo feature
//! `rocksdb`): default options but a 1 GiB block cache; every write batch is
//! `set_sync(true)` (durable once its WAL record is synced); reads through a
//! snapshot with pinned values (no copy).

use super::store::{touch, Batch, Handle, Store};
use crate::workloads::{key, Res};
use rocksdb::{BlockBasedOptions, Cache, Options, WriteBatch, WriteOptions, DB};
use std::path::{Path, PathBuf};

pub struct Rocks(DB, PathBuf);

pub fn open(dir: &Path, cache: usize) -> Res<Rocks> {
    let mut o = Options::default();
    o.create_if_missing(true);
    let mut t = BlockBasedOptions::default();
    t.set_block_cache(&Cache::new_lru_cache(cache)?);
    o.set_block_based_table_factory(&t);
    Ok(Rocks(DB::open(&o, dir)?, dir.to_path_buf()))
}

fn synced() -> WriteOptions {
    let mut w = WriteOptions::default();
    w.set_sync(true);
    w
}

impl Store for Rocks {
    fn handle(&self) -> Res<Box<dyn Handle + '_>> {
        Ok(Box::new(H(&self.0, synced())))
    }

    /// A full manual compaction (`compact_range` over every key).
    fn compact(&mut self, _scratch: &Path) -> Res<Option<PathBuf>> {
        self.0.compact_range(None::<&[u8]>, None::<&[u8]>);
        Ok(Some(self.1.clone()))
    }
}

struct H<'e>(&'e DB, WriteOptions);

impl Handle for H<'_> {
    fn write(&mut self, b: &Batch<'_>) -> Res<()> {
        let mut wb = WriteBatch::default();
        b.each(|k, v| {
            wb.put(k, v);
            Ok(())
        })?;
        Ok(self.0.write_opt(wb, &self.1)?)
    }

    fn remove(&mut self, ids: &[u64]) -> Res<()> {
        let mut wb = WriteBatch::default();
        for &i in ids {
            wb.delete(key(i));
        }
        Ok(self.0.write_opt(wb, &self.1)?)
    }

    fn get(&mut self, ids: &[u64]) -> Res<u64> {
        let s = self.0.snapshot();
        let mut n = 0;
        for &i in ids {
            if let Some(v) = s.get_pinned(key(i))? {
                n += touch(&v);
            }
        }
        Ok(n)
    }

    fn ranges(&mut self, ids: &[u64], len: usize) -> Res<u64> {
        let s = self.0.snapshot();
        let mut it = s.raw_iterator();
        let mut n = 0;
        for &i in ids {
            it.seek(key(i));
            let mut got = 0;
            while it.valid() {
                got += 1;
                if got == len {
                    break;
                }
                it.next();
            }
            it.status()?;
            n += got as u64;
        }
        Ok(n)
    }

    fn scan(&mut self) -> Res<(u64, u64)> {
        let s = self.0.snapshot();
        let mut it = s.raw_iterator();
        it.seek_to_first();
        let (mut n, mut bytes) = (0, 0);
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            n += 1;
            bytes += (k.len() + v.len()) as u64;
            it.next();
        }
        it.status()?;
        Ok((n, bytes))
    }
}
