//! Raft's log and vote, kept in a second mdb environment in WAL mode. An
//! append is one durable write transaction: its commit returns once the
//! log is synced, and only then is openraft told the entries are durable.
//! openraft 0.9 waits for that report before it does anything else (its
//! core task awaits each append's callback before the next command), so a
//! sync on another thread would bring no overlap, only a hand-off to that
//! thread and back; and the commit's own group sync finds no other writer
//! to wait for. The vote, truncations and purges are synced before they
//! return too. Entries are stored in postcard (a tag byte, then the
//! entry): cheaper to encode and decode than JSON, which older versions
//! wrote and which is still read. The committed id is not saved: a
//! restarted node learns it again from its leader (or, as a leader,
//! commits a blank entry of its term), and its data file holds a
//! consistent prefix of what it applied.

use crate::stats::{self, Phase};
use crate::types::{Entry, LogId, NodeId, TypeConfig};
use mdb::{Database, DbFlags, Env, EnvOptions, Txn, WalOptions, WriteFlags};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{RaftLogReader, StorageError, StorageIOError, Vote};
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

type StorageResult<T> = Result<T, StorageError<NodeId>>;

const LOG_DB: &str = "log";
const META_DB: &str = "meta";
const VOTE_KEY: &[u8] = b"vote";
const PURGED_KEY: &[u8] = b"last_purged";

/// The first byte of an entry stored in postcard. Older versions stored
/// entries in JSON, which starts with `{`.
const POSTCARD_TAG: u8 = 0;

/// How long a node keeps the writer mutex of its environments (the log and
/// the data) once its writers are idle: it is their only writer, and writes
/// every few milliseconds under load, each write otherwise paying a hand-off
/// to the engine's holder thread to take the mutex again (measured 130 to
/// 390 us per append on a loaded 2-core machine).
pub(crate) const WRITER_GRACE: Duration = Duration::from_secs(1);

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
        // Durable commits (no `sync_every`): each commit syncs the log.
        let mut wal = WalOptions::default();
        wal.writer_grace = WRITER_GRACE;
        let mut opts = EnvOptions::new();
        opts.max_dbs(4).wal(wal);
        crate::powercut::prepare(dir, true, &mut opts)?;
        let env = Arc::new(opts.open(dir)?);
        let mut w = env.write_txn()?;
        let log = w.create_db(LOG_DB, DbFlags::EMPTY)?;
        let meta = w.create_db(META_DB, DbFlags::EMPTY)?;
        w.commit()?;
        env.sync(false)?;
        Ok(LogStore { env, log, meta })
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
                Ok(Some(decode_entry(v)?.log_id))
            }
        }
    }

    /// The id of the entry at `index`, if the log holds it (not purged).
    pub fn log_id_at(&self, index: u64) -> mdb::Result<Option<LogId>> {
        let r = self.env.read_txn()?;
        match r.get(self.log, &index.to_be_bytes())? {
            None => Ok(None),
            Some(v) => {
                // The entry as stored (postcard, or JSON of older versions).
                let e = decode_entry(v).map_err(|_| mdb::ErrorKind::Corrupted)?;
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

/// An entry as stored: [`POSTCARD_TAG`], then the entry in postcard.
fn encode_entry(e: &Entry) -> StorageResult<Vec<u8>> {
    postcard::to_extend(e, vec![POSTCARD_TAG]).map_err(write_err)
}

/// An entry stored by [`encode_entry`], or in JSON by an older version.
fn decode_entry(v: &[u8]) -> StorageResult<Entry> {
    match v.split_first() {
        Some((&POSTCARD_TAG, rest)) => postcard::from_bytes(rest).map_err(read_err),
        _ => serde_json::from_slice(v).map_err(read_err),
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
            out.push(decode_entry(v)?);
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
        let t = stats::start();
        let mut n = 0;
        let r = (|| {
            let t = stats::start();
            let mut w = self.env.write_txn().map_err(write_err)?;
            stats::record(Phase::LogBegin, t, 1);
            for e in entries {
                n += 1;
                let bytes = encode_entry(&e)?;
                w.put(
                    self.log,
                    &e.log_id.index.to_be_bytes(),
                    &bytes,
                    WriteFlags::EMPTY,
                )
                .map_err(write_err)?;
            }
            // A durable commit: it returns once the log is synced.
            let t = stats::start();
            let r = w.commit().map_err(write_err);
            stats::record(Phase::LogCommit, t, 1);
            r
        })();
        stats::record(Phase::Append, t, n);
        let io = r
            .as_ref()
            .map(|_| ())
            .map_err(|e| std::io::Error::other(e.to_string()));
        callback.log_io_completed(io);
        r
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Batch, Proposal};
    use openraft::{CommittedLeaderId, EntryPayload};

    fn entry(index: u64) -> Entry {
        let mut b = Batch::new();
        b.put(None, b"key", &[7; 100]);
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(3, 1), index),
            payload: EntryPayload::Normal(Proposal {
                batches: vec![b],
                cluster_id: None,
            }),
        }
    }

    /// Entries are stored in postcard behind a tag byte (a 100-byte value
    /// costs about 100 bytes, not the ~400 of JSON's number arrays), and
    /// a log written by an older version, in JSON, still reads.
    #[tokio::test]
    async fn entries_are_stored_compact_and_json_entries_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LogStore::open(dir.path()).unwrap();
        let (old, new) = (entry(1), entry(2));
        let json = serde_json::to_vec(&old).unwrap();
        let compact = encode_entry(&new).unwrap();
        assert_eq!(compact[0], POSTCARD_TAG);
        assert!(compact.len() < 150 && json.len() > 300, "{}", compact.len());
        let mut w = store.env.write_txn().unwrap();
        for (i, bytes) in [(1u64, &json), (2, &compact)] {
            w.put(store.log, &i.to_be_bytes(), bytes, WriteFlags::EMPTY)
                .unwrap();
        }
        w.commit().unwrap();
        let got = store.try_get_log_entries(1..=2).await.unwrap();
        assert_eq!(
            format!("{got:?}"),
            format!("{:?}", [old.clone(), new.clone()])
        );
        let state = store.get_log_state().await.unwrap();
        assert_eq!(state.last_log_id, Some(new.log_id));
        // The seeding check's lookup reads both as well.
        assert_eq!(store.log_id_at(1).unwrap(), Some(old.log_id));
        assert_eq!(store.log_id_at(2).unwrap(), Some(new.log_id));
        assert_eq!(store.log_id_at(3).unwrap(), None);
    }
}
