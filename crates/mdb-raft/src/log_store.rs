//! Raft's log and vote, kept in a second mdb environment in WAL mode: an
//! append is one write transaction whose commit syncs the log before
//! openraft is told the entries are durable. The committed id is not
//! saved (one sync less per commit): applying syncs the data file, so a
//! restarted node holds all it applied, and its leader tells it again
//! what was committed since.

use crate::types::{Entry, LogId, NodeId, TypeConfig};
use mdb::{Database, DbFlags, Env, EnvOptions, Txn, WalOptions, WriteFlags};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{RaftLogReader, StorageError, StorageIOError, Vote};
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;

type StorageResult<T> = Result<T, StorageError<NodeId>>;

const LOG_DB: &str = "log";
const META_DB: &str = "meta";
const VOTE_KEY: &[u8] = b"vote";
const PURGED_KEY: &[u8] = b"last_purged";

/// The log store: entries keyed by big-endian index in `log`; the vote,
/// and the last purged id in `meta`.
#[derive(Clone)]
pub struct LogStore {
    env: Arc<Env>,
    log: Database,
    meta: Database,
}

fn read_err(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::read_logs(&e).into()
}
fn write_err(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::write_logs(&e).into()
}

impl LogStore {
    /// Open (or create) the log environment in `dir`.
    pub fn open(dir: &Path) -> mdb::Result<LogStore> {
        std::fs::create_dir_all(dir).map_err(mdb::Error::from)?;
        let env = EnvOptions::new()
            .max_dbs(4)
            .wal(WalOptions::default())
            .open(dir)?;
        let mut w = env.write_txn()?;
        let log = w.create_db(LOG_DB, DbFlags::EMPTY)?;
        let meta = w.create_db(META_DB, DbFlags::EMPTY)?;
        w.commit()?;
        Ok(LogStore {
            env: Arc::new(env),
            log,
            meta,
        })
    }

    fn get_meta<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> StorageResult<Option<T>> {
        let r = self.env.read_txn().map_err(read_err)?;
        match r.get(self.meta, key).map_err(read_err)? {
            None => Ok(None),
            Some(v) => serde_json::from_slice(v).map(Some).map_err(read_err),
        }
    }

    fn put_meta<T: serde::Serialize>(&self, key: &[u8], v: &T) -> StorageResult<()> {
        let bytes = serde_json::to_vec(v).map_err(write_err)?;
        let mut w = self.env.write_txn().map_err(write_err)?;
        w.put(self.meta, key, &bytes, WriteFlags::EMPTY)
            .map_err(write_err)?;
        w.commit().map_err(write_err)
    }

    fn last_entry_id(&self) -> StorageResult<Option<LogId>> {
        let r = self.env.read_txn().map_err(read_err)?;
        let last = r.range(self.log, ..).map_err(read_err)?.next_back();
        match last {
            None => Ok(None),
            Some(kv) => {
                let (_, v) = kv.map_err(read_err)?;
                let e: Entry = serde_json::from_slice(v).map_err(read_err)?;
                Ok(Some(e.log_id))
            }
        }
    }

    /// Delete the entries with index in `range` (one transaction).
    fn delete_range(&self, from: u64, to_inclusive: u64) -> StorageResult<()> {
        let mut w = self.env.write_txn().map_err(write_err)?;
        let keys: Vec<[u8; 8]> = {
            let it = w
                .range(
                    self.log,
                    &from.to_be_bytes()[..]..=&to_inclusive.to_be_bytes()[..],
                )
                .map_err(write_err)?;
            let mut keys = Vec::new();
            for kv in it {
                let (k, _) = kv.map_err(write_err)?;
                keys.push(k.try_into().map_err(|_| write_err(bad_key()))?);
            }
            keys
        };
        for k in keys {
            w.del(self.log, &k).map_err(write_err)?;
        }
        w.commit().map_err(write_err)
    }
}

fn bad_key() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, "log key is not 8 bytes")
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> StorageResult<Vec<Entry>> {
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s + 1,
            Bound::Unbounded => 0,
        };
        let r = self.env.read_txn().map_err(read_err)?;
        let mut out = Vec::new();
        for kv in r
            .range(self.log, &start.to_be_bytes()[..]..)
            .map_err(read_err)?
        {
            let (k, v) = kv.map_err(read_err)?;
            let idx = u64::from_be_bytes(k.try_into().map_err(|_| read_err(bad_key()))?);
            if !range.contains(&idx) {
                break;
            }
            out.push(serde_json::from_slice(v).map_err(read_err)?);
        }
        Ok(out)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        let last_purged_log_id: Option<LogId> = self.get_meta(PURGED_KEY)?;
        let last_log_id = self.last_entry_id()?.or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StorageResult<()> {
        self.put_meta(VOTE_KEY, vote)
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<NodeId>>> {
        self.get_meta(VOTE_KEY)
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut w = self.env.write_txn().map_err(write_err)?;
        for e in entries {
            let bytes = serde_json::to_vec(&e).map_err(write_err)?;
            w.put(
                self.log,
                &e.log_id.index.to_be_bytes(),
                &bytes,
                WriteFlags::EMPTY,
            )
            .map_err(write_err)?;
        }
        // WAL mode: the commit returns once the log record is synced.
        match w.commit() {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(write_err(e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> StorageResult<()> {
        self.delete_range(log_id.index, u64::MAX)
    }

    async fn purge(&mut self, log_id: LogId) -> StorageResult<()> {
        // Record the purge point first: a crash between the two leaves
        // entries below it, which are never read.
        self.put_meta(PURGED_KEY, &log_id)?;
        self.delete_range(0, log_id.index)
    }
}
