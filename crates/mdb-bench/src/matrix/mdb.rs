//! mdb through its Rust API, with its defaults (the map grows by itself;
//! every commit syncs like LMDB's), or in write-ahead-log mode (a commit is
//! one synced log append; checkpoints copy pages to the data file later).

use super::store::{touch, Batch, Handle, Store};
use crate::workloads::{key, Res};
use mdb::{Database, Env, EnvOptions, Txn, WalOptions, WriteFlags};
use std::path::{Path, PathBuf};

pub struct Mdb(Env);

pub fn open(dir: &Path, wal: bool) -> Res<Mdb> {
    let mut o = EnvOptions::new();
    if wal {
        o.wal(WalOptions::default());
    }
    Ok(Mdb(o.open(dir)?))
}

impl Store for Mdb {
    fn handle(&self) -> Res<Box<dyn Handle + '_>> {
        Ok(Box::new(H(&self.0)))
    }

    /// A compacted copy (`mdb copy -c`), as LMDB's row does, so the two
    /// rows time the same work: ours syncs the copy before returning, and
    /// LMDB's row syncs its copy after `mdb_env_copy2`. (In place,
    /// [`Env::shrink`] gives back only the free pages that end the file.)
    fn settle(&mut self) -> Res<()> {
        if self.0.wal_info().is_some() {
            self.0.checkpoint()?;
        }
        Ok(())
    }

    fn compact(&mut self, scratch: &Path) -> Res<Option<PathBuf>> {
        self.0.copy_to_path(scratch, true)?;
        Ok(Some(scratch.to_path_buf()))
    }
}

struct H<'e>(&'e Env);

const DB: Database = Database::MAIN;

impl Handle for H<'_> {
    fn write(&mut self, b: &Batch<'_>) -> Res<()> {
        let mut t = self.0.write_txn()?;
        b.each(|k, v| Ok(t.put(DB, k, v, WriteFlags::EMPTY)?))?;
        Ok(t.commit()?)
    }

    fn remove(&mut self, ids: &[u64]) -> Res<()> {
        let mut t = self.0.write_txn()?;
        for &i in ids {
            t.del(DB, &key(i))?;
        }
        Ok(t.commit()?)
    }

    fn get(&mut self, ids: &[u64]) -> Res<u64> {
        let t = self.0.read_txn()?;
        let mut n = 0;
        for &i in ids {
            if let Some(v) = t.get(DB, &key(i))? {
                n += touch(v);
            }
        }
        Ok(n)
    }

    fn ranges(&mut self, ids: &[u64], len: usize) -> Res<u64> {
        let t = self.0.read_txn()?;
        let mut n = 0;
        for &i in ids {
            let k = key(i);
            for item in t.range(DB, &k[..]..)?.take(len) {
                item?;
                n += 1;
            }
        }
        Ok(n)
    }

    fn scan(&mut self) -> Res<(u64, u64)> {
        let t = self.0.read_txn()?;
        let (mut n, mut bytes) = (0, 0);
        for item in t.range(DB, ..)? {
            let (k, v) = item?;
            n += 1;
            bytes += (k.len() + v.len()) as u64;
        }
        Ok((n, bytes))
    }
}
