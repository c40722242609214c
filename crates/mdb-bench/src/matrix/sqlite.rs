//! SQLite (rusqlite on Debian's libsqlite3): a `WITHOUT ROWID` table of
//! blob keys and values, `journal_mode=WAL` with `synchronous=FULL` (the
//! setting under which a commit in WAL mode survives a power cut), a 1 GiB
//! page cache, prepared statements; one connection per thread (a
//! connection is not shared between threads).

use super::store::{touch, Batch, Handle, Store};
use crate::workloads::{key, Res};
use rusqlite::{params, Connection};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub struct Sqlite {
    path: PathBuf,
    dir: PathBuf,
    /// Kept open for the life of the store (and for `VACUUM`); a mutex
    /// makes the store shareable, as a connection is `Send` only.
    main: Mutex<Connection>,
    cache: usize,
}

fn connect(path: &Path, cache: usize) -> Res<Connection> {
    let c = Connection::open(path)?;
    c.busy_timeout(std::time::Duration::from_secs(60))?;
    c.execute_batch(&format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA cache_size=-{};",
        cache / 1024
    ))?;
    Ok(c)
}

pub fn open(dir: &Path, cache: usize) -> Res<Sqlite> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("db.sqlite");
    let main = connect(&path, cache)?;
    main.execute_batch(
        "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
    )?;
    Ok(Sqlite {
        path,
        dir: dir.to_path_buf(),
        main: Mutex::new(main),
        cache,
    })
}

impl Store for Sqlite {
    fn handle(&self) -> Res<Box<dyn Handle + '_>> {
        Ok(Box::new(H(connect(&self.path, self.cache)?)))
    }

    /// `VACUUM` (a rewrite of the whole file), then a truncating WAL checkpoint.
    fn compact(&mut self, _scratch: &Path) -> Res<Option<PathBuf>> {
        self.main
            .get_mut()
            .map_err(|_| "poisoned")?
            .execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")?;
        Ok(Some(self.dir.clone()))
    }
}

struct H(Connection);

impl Handle for H {
    fn write(&mut self, b: &Batch<'_>) -> Res<()> {
        let t = self
            .0
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut st = t.prepare_cached("INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)")?;
            b.each(|k, v| {
                st.execute(params![k, v])?;
                Ok(())
            })?;
        }
        Ok(t.commit()?)
    }

    fn remove(&mut self, ids: &[u64]) -> Res<()> {
        let t = self
            .0
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut st = t.prepare_cached("DELETE FROM kv WHERE k = ?1")?;
            for &i in ids {
                st.execute(params![&key(i)[..]])?;
            }
        }
        Ok(t.commit()?)
    }

    fn get(&mut self, ids: &[u64]) -> Res<u64> {
        let t = self.0.transaction()?;
        let mut n = 0;
        {
            let mut st = t.prepare_cached("SELECT v FROM kv WHERE k = ?1")?;
            for &i in ids {
                let mut rows = st.query(params![&key(i)[..]])?;
                if let Some(r) = rows.next()? {
                    n += touch(r.get_ref(0)?.as_blob()?);
                }
            }
        }
        t.commit()?;
        Ok(n)
    }

    fn ranges(&mut self, ids: &[u64], len: usize) -> Res<u64> {
        let t = self.0.transaction()?;
        let mut n = 0;
        {
            let mut st =
                t.prepare_cached("SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2")?;
            for &i in ids {
                let mut rows = st.query(params![&key(i)[..], len as i64])?;
                while let Some(r) = rows.next()? {
                    r.get_ref(1)?.as_blob()?;
                    n += 1;
                }
            }
        }
        t.commit()?;
        Ok(n)
    }

    fn scan(&mut self) -> Res<(u64, u64)> {
        let t = self.0.transaction()?;
        let (mut n, mut bytes) = (0, 0);
        {
            let mut st = t.prepare_cached("SELECT k, v FROM kv ORDER BY k")?;
            let mut rows = st.query([])?;
            while let Some(r) = rows.next()? {
                let k = r.get_ref(0)?.as_blob()?.len();
                let v = r.get_ref(1)?.as_blob()?.len();
                n += 1;
                bytes += (k + v) as u64;
            }
        }
        t.commit()?;
        Ok((n, bytes))
    }
}
