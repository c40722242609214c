//! LMDB 0.9 (Debian's C library, linked): default flags, so every commit
//! syncs the data file and then the meta page.

use super::store::{touch, Batch, Handle, Store};
use crate::lmdb;
use crate::workloads::{key, Res, MAP_SIZE};
use std::path::{Path, PathBuf};

pub struct Lmdb(lmdb::Env);

pub fn open(dir: &Path) -> Res<Lmdb> {
    Ok(Lmdb(lmdb::Env::open(dir, MAP_SIZE, 1)?))
}

impl Store for Lmdb {
    fn handle(&self) -> Res<Box<dyn Handle + '_>> {
        Ok(Box::new(H(&self.0)))
    }

    /// `mdb_env_copy2` with `MDB_CP_COMPACT`, then the copy synced: the
    /// C function (and Debian's `mdb_copy -c`, checked with strace) never
    /// syncs, while mdb's copy does before it returns; both rows time a
    /// compacted copy that is on disk.
    fn compact(&mut self, scratch: &Path) -> Res<Option<PathBuf>> {
        self.0.copy_compact(scratch)?;
        std::fs::File::open(scratch.join("data.mdb"))?.sync_all()?;
        Ok(Some(scratch.to_path_buf()))
    }
}

struct H<'e>(&'e lmdb::Env);

impl Handle for H<'_> {
    fn write(&mut self, b: &Batch<'_>) -> Res<()> {
        let mut t = self.0.write_txn()?;
        b.each(|k, v| Ok(t.put(k, v)?))?;
        Ok(t.commit()?)
    }

    fn remove(&mut self, ids: &[u64]) -> Res<()> {
        let mut t = self.0.write_txn()?;
        for &i in ids {
            t.del(&key(i))?;
        }
        Ok(t.commit()?)
    }

    fn get(&mut self, ids: &[u64]) -> Res<u64> {
        let t = self.0.read_txn()?;
        let mut n = 0;
        for &i in ids {
            if let Some(v) = t.get(&key(i))? {
                n += touch(v);
            }
        }
        Ok(n)
    }

    fn ranges(&mut self, ids: &[u64], len: usize) -> Res<u64> {
        let t = self.0.read_txn()?;
        let mut n = 0;
        for &i in ids {
            let mut c = t.cursor()?;
            let mut item = c.set_range(&key(i))?;
            let mut got = 0;
            while item.is_some() {
                got += 1;
                if got == len {
                    break;
                }
                item = c.next()?;
            }
            n += got as u64;
        }
        Ok(n)
    }

    fn scan(&mut self) -> Res<(u64, u64)> {
        let t = self.0.read_txn()?;
        let mut c = t.cursor()?;
        let (mut n, mut bytes) = (0, 0);
        while let Some((k, v)) = c.next()? {
            n += 1;
            bytes += (k.len() + v.len()) as u64;
        }
        Ok((n, bytes))
    }
}
