//! Raft's log and vote, kept in a second mdb environment in WAL mode with
//! relaxed commits: an append is one write transaction whose commit
//! returns once its record is in the log (visible to this process's
//! readers, so the replication tasks send it at once), and the flusher
//! thread tells openraft the entries are durable after one sync of the
//! log that covers every append made meanwhile (group commit: under load,
//! one sync serves many client writes). The vote, truncations and purges
//! are synced before they return. The committed id is not saved: a
//! restarted node learns it again from its leader (or, as a leader,
//! commits a blank entry of its term), and its data file holds a
//! consistent prefix of what it applied.

use crate::types::{Entry, LogId, NodeId, TypeConfig};
use mdb::{Database, DbFlags, Env, EnvOptions, Txn, WalOptions, WriteFlags};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{RaftLogReader, StorageError, StorageIOError, Vote};
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

type StorageResult<T> = Result<T, StorageError<NodeId>>;

const LOG_DB: &str = "log";
const META_DB: &str = "meta";
const VOTE_KEY: &[u8] = b"vote";
const PURGED_KEY: &[u8] = b"last_purged";

/// How often the environment's own flusher syncs the log: a backstop, the
/// flusher thread here syncs as soon as an append waits.
const BACKSTOP_SYNC: Duration = Duration::from_millis(100);

/// The log store: entries keyed by big-endian index in `log`; the vote,
/// and the last purged id in `meta`.
#[derive(Clone)]
pub struct LogStore {
    env: Arc<Env>,
    log: Database,
    meta: Database,
    /// Appends waiting for a sync; the flusher thread ends when the last
    /// clone is dropped.
    flush: Sender<LogFlushed<TypeConfig>>,
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
        let mut wal = WalOptions::default();
        wal.sync_every = Some(BACKSTOP_SYNC);
        let mut opts = EnvOptions::new();
        opts.max_dbs(4).wal(wal);
        crate::powercut::prepare(dir, true, &mut opts)?;
        let env = Arc::new(opts.open(dir)?);
        let mut w = env.write_txn()?;
        let log = w.create_db(LOG_DB, DbFlags::EMPTY)?;
        let meta = w.create_db(META_DB, DbFlags::EMPTY)?;
        w.commit()?;
        env.sync(false)?;
        let (tx, rx) = channel();
        let flusher_env = env.clone();
        std::thread::Builder::new()
            .name("mdb-raft-log-sync".into())
            .spawn(move || flusher(&flusher_env, rx))
            .map_err(mdb::Error::from)?;
        Ok(LogStore {
            env,
            log,
            meta,
            flush: tx,
        })
    }

    /// Make everything committed so far durable.
    fn sync(&self) -> mdb::Result<()> {
        self.env.sync(false)
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
        w.commit().map_err(write_err)?;
        self.sync().map_err(write_err)
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

    /// The id of the entry at `index`, if the log holds it (not purged).
    pub fn log_id_at(&self, index: u64) -> mdb::Result<Option<LogId>> {
        let r = self.env.read_txn()?;
        match r.get(self.log, &index.to_be_bytes())? {
            None => Ok(None),
            Some(v) => {
                let e: Entry = serde_json::from_slice(v).map_err(|_| mdb::ErrorKind::Corrupted)?;
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
        w.commit().map_err(write_err)?;
        self.sync().map_err(write_err)
    }
}

/// The flusher thread: waits for an append, takes every other one queued
/// meanwhile, syncs the log once (covering all of them: each was
/// committed before it was queued) and reports them durable, in order.
fn flusher(env: &Env, rx: Receiver<LogFlushed<TypeConfig>>) {
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        group.extend(rx.try_iter());
        let res = env.sync(false).map_err(|e| e.to_string());
        for cb in group {
            cb.log_io_completed(res.clone().map_err(std::io::Error::other));
        }
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
        // Relaxed durability: the commit returns once the record is in the
        // log; the flusher reports it durable after its sync.
        match w.commit() {
            Ok(()) => {
                if let Err(e) = self.flush.send(callback) {
                    // The flusher is gone (it never ends while a store lives).
                    let msg = "the log's flusher thread is gone";
                    e.0.log_io_completed(Err(std::io::Error::other(msg)));
                }
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
