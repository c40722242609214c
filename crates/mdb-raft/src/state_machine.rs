//! The state machine: the node's own mdb environment, a plain LMDB file.
//! Applying committed entries is one write transaction that makes their
//! write sets and the last applied log id durable together, so a restart
//! knows exactly what is applied and applies nothing twice.

#[cfg(test)]
use crate::types::Proposal;
use crate::types::{Applied, Batch, Entry, LogId, Member, NodeId, Op, TypeConfig};
use mdb::{Database, DbFlags, Env, RwTxn, Txn, WriteFlags};
use openraft::storage::RaftStateMachine;
use openraft::{
    EntryPayload, RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};
use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;

type StorageResult<T> = Result<T, StorageError<NodeId>>;

/// The database of the data file reserved for replication's bookkeeping:
/// the last applied log id and membership. Applications must not write it.
pub const RESERVED_DB: &str = "__mdb_raft";
const APPLIED_KEY: &[u8] = b"applied";
const MEMBERSHIP_KEY: &[u8] = b"membership";

fn sm_read_err(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::read_state_machine(&e).into()
}
fn sm_write_err(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::write_state_machine(&e).into()
}

/// The state machine over the node's data environment.
pub struct StateMachine {
    env: Arc<Env>,
    reserved: Database,
}

/// The last applied log id recorded in the data file, read in `txn`.
pub fn applied_in(txn: &impl Txn, reserved: Database) -> mdb::Result<Option<LogId>> {
    Ok(match txn.get(reserved, APPLIED_KEY)? {
        Some(v) => serde_json::from_slice(v).ok(),
        None => None,
    })
}

impl StateMachine {
    /// Wrap `env`, creating the reserved database if needed.
    pub fn new(env: Arc<Env>) -> mdb::Result<StateMachine> {
        let mut w = env.write_txn()?;
        let reserved = w.create_db(RESERVED_DB, DbFlags::EMPTY)?;
        w.commit()?;
        Ok(StateMachine { env, reserved })
    }

    /// The handle of the reserved database.
    pub fn reserved(&self) -> Database {
        self.reserved
    }
}

/// Apply one write set inside `w`; the caller decides on commit.
fn apply_batch<'b>(w: &mut RwTxn<'_>, batch: &'b Batch) -> mdb::Result<()> {
    let mut dbs: HashMap<&str, Database> = HashMap::new();
    let mut handle = |w: &mut RwTxn<'_>, name: &'b Option<String>| -> mdb::Result<Database> {
        match name {
            None => Ok(Database::MAIN),
            Some(n) if n == RESERVED_DB => Err(mdb::ErrorKind::Incompatible.into()),
            Some(n) => {
                if let Some(db) = dbs.get(n.as_str()) {
                    return Ok(*db);
                }
                let db = w.create_db(n, DbFlags::EMPTY)?;
                dbs.insert(n.as_str(), db);
                Ok(db)
            }
        }
    };
    for op in &batch.ops {
        match op {
            Op::Put { db, key, value } => {
                let db = handle(w, db)?;
                w.put(db, key, value, WriteFlags::EMPTY)?;
            }
            Op::Delete { db, key } => {
                let db = handle(w, db)?;
                w.del(db, key)?;
            }
        }
    }
    Ok(())
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> StorageResult<(Option<LogId>, StoredMembership<NodeId, Member>)> {
        let r = self.env.read_txn().map_err(sm_read_err)?;
        let applied = applied_in(&r, self.reserved).map_err(sm_read_err)?;
        let membership = match r.get(self.reserved, MEMBERSHIP_KEY).map_err(sm_read_err)? {
            Some(v) => serde_json::from_slice(v).map_err(sm_read_err)?,
            None => StoredMembership::default(),
        };
        Ok((applied, membership))
    }

    async fn apply<I>(&mut self, entries: I) -> StorageResult<Vec<Vec<Applied>>>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        // All entries openraft hands over at once go into one transaction:
        // one sync for many client writes, and still all or nothing.
        let mut w = self.env.write_txn().map_err(sm_write_err)?;
        let mut out = Vec::new();
        let mut last = None;
        for e in entries {
            last = Some(e.log_id);
            let mut res = Vec::new();
            match &e.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(proposal) => {
                    for batch in &proposal.batches {
                        // A refused write set is undone alone; every node
                        // refuses it the same way, so the replicas stay equal.
                        let mut n = w.nested().map_err(sm_write_err)?;
                        let mut a = Applied::default();
                        match apply_batch(&mut n, batch) {
                            Ok(()) => n.commit().map_err(sm_write_err)?,
                            Err(err) => {
                                n.abort();
                                a.error = Some(err.to_string());
                            }
                        }
                        res.push(a);
                    }
                }
                EntryPayload::Membership(m) => {
                    let sm = StoredMembership::new(Some(e.log_id), m.clone());
                    let bytes = serde_json::to_vec(&sm).map_err(sm_write_err)?;
                    w.put(self.reserved, MEMBERSHIP_KEY, &bytes, WriteFlags::EMPTY)
                        .map_err(sm_write_err)?;
                }
            }
            out.push(res);
        }
        if let Some(id) = last {
            let bytes = serde_json::to_vec(&id).map_err(sm_write_err)?;
            w.put(self.reserved, APPLIED_KEY, &bytes, WriteFlags::EMPTY)
                .map_err(sm_write_err)?;
            w.commit().map_err(sm_write_err)?;
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder
    }

    async fn begin_receiving_snapshot(&mut self) -> StorageResult<Box<Cursor<Vec<u8>>>> {
        Err(no_snapshots())
    }

    async fn install_snapshot(
        &mut self,
        _meta: &SnapshotMeta<NodeId, Member>,
        _snapshot: Box<Cursor<Vec<u8>>>,
    ) -> StorageResult<()> {
        Err(no_snapshots())
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        // No snapshot is ever built (the policy is `Never`, logs are never
        // purged): a lagging node catches up from the log.
        Ok(None)
    }
}

fn no_snapshots() -> StorageError<NodeId> {
    StorageIOError::write_snapshot(
        None,
        &std::io::Error::other("snapshots are not supported yet: the log is never purged"),
    )
    .into()
}

/// Would build snapshots of the data environment: not supported yet (the
/// snapshot policy is `Never`, so openraft never asks).
pub struct SnapshotBuilder;

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        Err(no_snapshots())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;

    fn entry(index: u64, batch: Batch) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Proposal {
                batches: vec![batch],
            }),
        }
    }

    fn open(dir: &std::path::Path) -> StateMachine {
        let env = mdb::EnvOptions::new().max_dbs(4).open(dir).unwrap();
        StateMachine::new(Arc::new(env)).unwrap()
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn applied_id_is_recorded_with_the_writes_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut sm = open(dir.path());
        let mut b1 = Batch::new();
        b1.put(None, b"a", b"1").put(Some("users"), b"ada", b"1815");
        let mut b2 = Batch::new();
        b2.delete(None, b"a").put(None, b"b", b"2");
        let out = block_on(sm.apply([entry(1, b1), entry(2, b2)])).unwrap();
        assert_eq!(
            out,
            vec![vec![Applied::default()], vec![Applied::default()]]
        );
        drop(sm);
        let mut sm = open(dir.path());
        let (applied, _) = block_on(sm.applied_state()).unwrap();
        assert_eq!(applied.map(|a| a.index), Some(2));
        let r = sm.env.read_txn().unwrap();
        assert_eq!(r.get(Database::MAIN, b"a").unwrap(), None);
        assert_eq!(r.get(Database::MAIN, b"b").unwrap(), Some(&b"2"[..]));
        let users = r.open_db("users").unwrap();
        assert_eq!(r.get(users, b"ada").unwrap(), Some(&b"1815"[..]));
        assert_eq!(applied_in(&r, sm.reserved()).unwrap(), applied);
    }

    #[test]
    fn write_sets_sharing_an_entry_are_applied_and_refused_each_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut sm = open(dir.path());
        let mut first = Batch::new();
        first.put(None, b"a", b"1");
        let mut bad = Batch::new();
        bad.put(None, b"b", b"2")
            .put(None, &vec![b'k'; mdb::MAX_KEY_SIZE + 1], b"y");
        let mut last = Batch::new();
        last.put(None, b"c", b"3").delete(None, b"a");
        let e = Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), 1),
            payload: EntryPayload::Normal(Proposal {
                batches: vec![first, bad, last],
            }),
        };
        let out = block_on(sm.apply([e])).unwrap();
        assert_eq!(out.len(), 1, "one answer per entry");
        let errors: Vec<bool> = out[0].iter().map(|a| a.error.is_some()).collect();
        assert_eq!(errors, [false, true, false], "{out:?}");
        let r = sm.env.read_txn().unwrap();
        assert_eq!(r.get(Database::MAIN, b"a").unwrap(), None);
        assert_eq!(r.get(Database::MAIN, b"b").unwrap(), None);
        assert_eq!(r.get(Database::MAIN, b"c").unwrap(), Some(&b"3"[..]));
    }

    #[test]
    fn a_refused_write_set_is_undone_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut sm = open(dir.path());
        let long = vec![b'k'; mdb::MAX_KEY_SIZE + 1];
        let mut bad = Batch::new();
        bad.put(None, b"first", b"x").put(None, &long, b"y");
        let mut reserved = Batch::new();
        reserved.put(Some(RESERVED_DB), APPLIED_KEY, b"forged");
        let mut good = Batch::new();
        good.put(None, b"good", b"z");
        let out = block_on(sm.apply([entry(1, bad), entry(2, reserved), entry(3, good)])).unwrap();
        assert!(out[0][0].error.is_some(), "{out:?}");
        assert!(out[1][0].error.is_some(), "{out:?}");
        assert_eq!(out[2][0].error, None);
        let r = sm.env.read_txn().unwrap();
        assert_eq!(r.get(Database::MAIN, b"first").unwrap(), None);
        assert_eq!(r.get(Database::MAIN, b"good").unwrap(), Some(&b"z"[..]));
        assert_eq!(
            applied_in(&r, sm.reserved()).unwrap().map(|a| a.index),
            Some(3)
        );
    }
}
