//! The state machine: the node's own mdb environment, a plain LMDB file.
//! Applying committed entries is one write transaction that makes their
//! write sets and the last applied log id durable together, so a restart
//! knows exactly what is applied and applies nothing twice. Snapshots are
//! hot copies of it (`snapshot.rs`); installing one replaces it whole
//! (`data.rs`).

use crate::data::{
    applied_in, membership_in, DataEnv, APPLIED_KEY, CLUSTER_KEY, MEMBERSHIP_KEY, RESERVED_DB,
};
use crate::snapshot::{Meta, SnapshotStore};
use crate::stats::{self, Phase};
#[cfg(test)]
use crate::types::Proposal;
use crate::types::{Applied, Batch, Entry, LogId, Member, NodeId, Op, TypeConfig};
use mdb::{Database, DbFlags, RwTxn, Txn, WriteFlags};
use openraft::storage::RaftStateMachine;
use openraft::{
    EntryPayload, RaftSnapshotBuilder, Snapshot, StorageError, StorageIOError, StoredMembership,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

type StorageResult<T> = Result<T, StorageError<NodeId>>;

fn sm_read_err(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::read_state_machine(&e).into()
}
fn sm_write_err(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::write_state_machine(&e).into()
}
fn snap_read_err(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::read_snapshot(None, &e).into()
}
fn snap_write_err(
    meta: Option<&Meta>,
    e: impl std::error::Error + 'static,
) -> StorageError<NodeId> {
    StorageIOError::write_snapshot(meta.map(|m| m.signature()), &e).into()
}

/// The state machine over the node's data environment.
pub struct StateMachine {
    data: Arc<DataEnv>,
    snapshots: Arc<SnapshotStore>,
    /// The file a snapshot from the leader is being received into.
    incoming: Option<PathBuf>,
}

impl StateMachine {
    /// The state machine over `data`, with its snapshots in `snapshots`.
    /// If the data environment is behind the current snapshot (a power
    /// cut rolled its relaxed commits back past it, whose log may be
    /// purged), it is replaced by the snapshot first.
    pub fn open(data: Arc<DataEnv>, snapshots: Arc<SnapshotStore>) -> mdb::Result<StateMachine> {
        if let Some((meta, file)) = snapshots.current()? {
            let applied = data.with(|d| applied_in(&d.env.read_txn()?, d.reserved))?;
            if applied < meta.last_log_id {
                data.replace(&file)?;
            }
        }
        Ok(StateMachine {
            data,
            snapshots,
            incoming: None,
        })
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

/// Apply `entries` in one transaction of `d`; one answer per entry.
fn apply_entries(
    d: &crate::data::Data,
    entries: impl Iterator<Item = Entry>,
) -> mdb::Result<Vec<Vec<Applied>>> {
    // All entries openraft hands over at once go into one transaction:
    // one commit for many client writes, and still all or nothing.
    let mut w = d.env.write_txn()?;
    let mut out = Vec::new();
    let mut last = None;
    for e in entries {
        last = Some(e.log_id);
        let mut res = Vec::new();
        match &e.payload {
            EntryPayload::Blank => {}
            EntryPayload::Normal(proposal) => {
                if let Some(id) = &proposal.cluster_id {
                    // The first id committed stays: a second leader may
                    // have proposed one before it applied the first.
                    if w.get(d.reserved, CLUSTER_KEY)?.is_none() {
                        w.put(d.reserved, CLUSTER_KEY, id.as_bytes(), WriteFlags::EMPTY)?;
                    }
                }
                for batch in &proposal.batches {
                    // A refused write set is undone alone; every node
                    // refuses it the same way, so the replicas stay equal.
                    let mut n = w.nested()?;
                    let mut a = Applied::default();
                    match apply_batch(&mut n, batch) {
                        Ok(()) => n.commit()?,
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
                let bytes = serde_json::to_vec(&sm).map_err(|_| mdb::ErrorKind::Invalid)?;
                w.put(d.reserved, MEMBERSHIP_KEY, &bytes, WriteFlags::EMPTY)?;
            }
        }
        out.push(res);
    }
    if let Some(id) = last {
        let bytes = serde_json::to_vec(&id).map_err(|_| mdb::ErrorKind::Invalid)?;
        w.put(d.reserved, APPLIED_KEY, &bytes, WriteFlags::EMPTY)?;
        w.commit()?;
    }
    Ok(out)
}

/// The snapshot at `file` with `meta`, opened for reading.
async fn open_snapshot(meta: Meta, file: PathBuf) -> StorageResult<Snapshot<TypeConfig>> {
    let f = tokio::fs::File::open(&file).await.map_err(snap_read_err)?;
    Ok(Snapshot {
        meta,
        snapshot: Box::new(f),
    })
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> StorageResult<(Option<LogId>, StoredMembership<NodeId, Member>)> {
        self.data
            .with(|d| {
                let r = d.env.read_txn()?;
                Ok((applied_in(&r, d.reserved)?, membership_in(&r, d.reserved)?))
            })
            .map_err(sm_read_err)
    }

    async fn apply<I>(&mut self, entries: I) -> StorageResult<Vec<Vec<Applied>>>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let entries = entries.into_iter();
        let t = stats::start();
        let r = self
            .data
            .with(|d| apply_entries(d, entries))
            .map_err(sm_write_err);
        if let Ok(out) = &r {
            stats::record(Phase::Apply, t, out.len());
        }
        r
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder {
            data: self.data.clone(),
            snapshots: self.snapshots.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> StorageResult<Box<tokio::fs::File>> {
        let path = self
            .snapshots
            .incoming()
            .map_err(|e| snap_write_err(None, e))?;
        let f = tokio::fs::File::create(&path)
            .await
            .map_err(|e| snap_write_err(None, e))?;
        if let Some(old) = self.incoming.replace(path) {
            // A transfer that started over: its partial file is of no use.
            let _ = std::fs::remove_dir_all(old.parent().unwrap_or(&old));
        }
        Ok(Box::new(f))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        mut snapshot: Box<tokio::fs::File>,
    ) -> StorageResult<()> {
        let err = |e: std::io::Error| snap_write_err(Some(meta), e);
        snapshot.flush().await.map_err(err)?;
        snapshot.sync_all().await.map_err(err)?;
        drop(snapshot);
        let incoming = self
            .incoming
            .take()
            .ok_or_else(|| err(std::io::Error::other("no snapshot was being received")))?;
        let (data, snapshots, m) = (self.data.clone(), self.snapshots.clone(), meta.clone());
        // Checking, copying and swapping the files block: off the
        // runtime's workers.
        let done = tokio::task::spawn_blocking(move || {
            let file = snapshots.accept(&incoming, &m).map_err(|e| {
                eprintln!("mdb-raft: accepting a snapshot: {e}");
                e
            })?;
            data.replace(&file).map_err(|e| {
                eprintln!("mdb-raft: installing a snapshot: {e}");
                std::io::Error::other(e)
            })
        });
        done.await
            .map_err(|e| err(std::io::Error::other(e.to_string())))?
            .map_err(err)?;
        self.data.installed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        match self.snapshots.current().map_err(snap_read_err)? {
            None => Ok(None),
            Some((meta, file)) => open_snapshot(meta, file).await.map(Some),
        }
    }
}

/// Builds a snapshot: a compacted hot copy of the data environment, taken
/// while entries keep being applied (the copy reads one snapshot of it).
pub struct SnapshotBuilder {
    data: Arc<DataEnv>,
    snapshots: Arc<SnapshotStore>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        let (data, snapshots) = (self.data.clone(), self.snapshots.clone());
        // The copy and its syncs block: off the runtime's workers.
        let (meta, file) = tokio::task::spawn_blocking(move || snapshots.build(&data))
            .await
            .map_err(|e| snap_write_err(None, std::io::Error::other(e.to_string())))?
            .map_err(|e| {
                // openraft stops this node on a storage error: say why.
                eprintln!("mdb-raft: building a snapshot: {e}");
                snap_write_err(None, e)
            })?;
        open_snapshot(meta, file).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdb::Txn;
    use openraft::CommittedLeaderId;

    fn entry(index: u64, batch: Batch) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Proposal {
                batches: vec![batch],
                cluster_id: None,
            }),
        }
    }

    fn open(dir: &std::path::Path) -> StateMachine {
        let data = Arc::new(DataEnv::open(dir, 4).unwrap());
        let snapshots = Arc::new(SnapshotStore::open(dir, 4).unwrap());
        StateMachine::open(data, snapshots).unwrap()
    }

    /// Run `f` in a read transaction of the data environment.
    fn read<T>(sm: &StateMachine, f: impl FnOnce(&mdb::RoTxn<'_>, Database) -> T) -> T {
        sm.data
            .with(|d| Ok(f(&d.env.read_txn()?, d.reserved)))
            .unwrap()
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
        read(&sm, |r, reserved| {
            assert_eq!(r.get(Database::MAIN, b"a").unwrap(), None);
            assert_eq!(r.get(Database::MAIN, b"b").unwrap(), Some(&b"2"[..]));
            let users = r.open_db("users").unwrap();
            assert_eq!(r.get(users, b"ada").unwrap(), Some(&b"1815"[..]));
            assert_eq!(applied_in(r, reserved).unwrap(), applied);
        });
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
                cluster_id: None,
            }),
        };
        let out = block_on(sm.apply([e])).unwrap();
        assert_eq!(out.len(), 1, "one answer per entry");
        let errors: Vec<bool> = out[0].iter().map(|a| a.error.is_some()).collect();
        assert_eq!(errors, [false, true, false], "{out:?}");
        read(&sm, |r, _| {
            assert_eq!(r.get(Database::MAIN, b"a").unwrap(), None);
            assert_eq!(r.get(Database::MAIN, b"b").unwrap(), None);
            assert_eq!(r.get(Database::MAIN, b"c").unwrap(), Some(&b"3"[..]));
        });
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
        read(&sm, |r, reserved| {
            assert_eq!(r.get(Database::MAIN, b"first").unwrap(), None);
            assert_eq!(r.get(Database::MAIN, b"good").unwrap(), Some(&b"z"[..]));
            assert_eq!(applied_in(r, reserved).unwrap().map(|a| a.index), Some(3));
        });
    }

    #[test]
    fn a_data_env_behind_its_snapshot_is_replaced_by_it_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let old = tempfile::tempdir().unwrap();
        let mut sm = open(dir.path());
        let mut b = Batch::new();
        b.put(None, b"a", b"1");
        block_on(sm.apply([entry(1, b)])).unwrap();
        sm.data
            .with(|d| d.env.copy_to_path(old.path(), false))
            .unwrap();
        let mut b = Batch::new();
        b.put(None, b"b", b"2");
        block_on(sm.apply([entry(2, b)])).unwrap();
        let snap = block_on(block_on(sm.get_snapshot_builder()).build_snapshot()).unwrap();
        assert_eq!(snap.meta.last_log_id.map(|l| l.index), Some(2));
        // A power cut takes the data environment's relaxed commits back
        // to before the snapshot, whose log is purged.
        sm.data.replace(&old.path().join("data.mdb")).unwrap();
        drop(sm);
        let mut sm = open(dir.path());
        let (applied, _) = block_on(sm.applied_state()).unwrap();
        assert_eq!(applied.map(|a| a.index), Some(2));
        read(&sm, |r, _| {
            assert_eq!(r.get(Database::MAIN, b"b").unwrap(), Some(&b"2"[..]));
        });
        let current = block_on(sm.get_current_snapshot()).unwrap().unwrap();
        assert_eq!(current.meta, snap.meta);
    }

    #[test]
    fn a_snapshot_sent_in_chunks_replaces_the_receivers_data() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut leader = open(a.path());
        let mut follower = open(b.path());
        let mut x = Batch::new();
        x.put(Some("users"), b"ada", b"1815");
        block_on(leader.apply([entry(1, x)])).unwrap();
        let mut y = Batch::new();
        y.put(None, b"stale", b"x");
        block_on(follower.apply([entry(1, y)])).unwrap();
        let snap = block_on(block_on(leader.get_snapshot_builder()).build_snapshot()).unwrap();
        block_on(async {
            let mut bytes = Vec::new();
            let mut f = snap.snapshot;
            f.read_to_end(&mut bytes).await.unwrap();
            let mut into = follower.begin_receiving_snapshot().await.unwrap();
            for chunk in bytes.chunks(1000) {
                into.write_all(chunk).await.unwrap();
            }
            follower.install_snapshot(&snap.meta, into).await.unwrap();
        });
        let (applied, _) = block_on(follower.applied_state()).unwrap();
        assert_eq!(applied, snap.meta.last_log_id);
        read(&follower, |r, _| {
            assert_eq!(r.get(Database::MAIN, b"stale").unwrap(), None);
            let users = r.open_db("users").unwrap();
            assert_eq!(r.get(users, b"ada").unwrap(), Some(&b"1815"[..]));
        });
        assert_eq!(follower.data.installed.load(Ordering::Relaxed), 1);
        let current = block_on(follower.get_current_snapshot()).unwrap().unwrap();
        assert_eq!(current.meta, snap.meta);
    }
}
