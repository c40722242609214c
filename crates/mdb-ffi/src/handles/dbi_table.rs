//! The table of an environment's database handles: C handle numbers (ours,
//! allocated from the lowest free slot from 2 on, as LMDB does, so they
//! stay stable when the engine is reopened) to the engine's databases, and
//! which transactions may use each.

use crate::types::{MDB_cmp_func, MDB_dbi};
use mdb::Database;

/// Handles below this number are looked up without a lock.
pub(crate) const FAST_DBIS: usize = 64;

/// One open handle.
#[derive(Clone)]
pub(crate) struct DbiEntry {
    pub(crate) db: Database,
    pub(crate) name: Option<Vec<u8>>,
    pub(crate) cmp: Option<MDB_cmp_func>,
    pub(crate) dcmp: Option<MDB_cmp_func>,
    /// Opened in the live write transaction, not committed yet: read
    /// transactions do not see it (the engine refuses them with `EINVAL`).
    pub(crate) pending: bool,
    /// The `MDB_env::dbi_epoch` at which a commit shared the handle with
    /// the transactions begun since; [`UNSHARED`] before.
    pub(crate) born: u32,
    /// The live transactions (addresses) that opened the handle and may
    /// use it whatever `born` says.
    pub(crate) owners: Vec<usize>,
}

/// `DbiEntry::born` of a handle only its openers may use.
pub(crate) const UNSHARED: u32 = u32::MAX;

/// The environment's handles, by C number.
pub(crate) struct DbiTable {
    slots: Vec<Option<DbiEntry>>,
}

impl DbiTable {
    pub(crate) fn new() -> DbiTable {
        let e = |db| {
            Some(DbiEntry {
                db,
                name: None,
                cmp: None,
                dcmp: None,
                pending: false,
                born: 0,
                owners: Vec::new(),
            })
        };
        DbiTable {
            slots: vec![e(Database::FREE), e(Database::MAIN)],
        }
    }

    pub(crate) fn get(&self, dbi: MDB_dbi) -> Option<&DbiEntry> {
        self.slots.get(dbi as usize).and_then(|s| s.as_ref())
    }

    pub(crate) fn get_mut(&mut self, dbi: MDB_dbi) -> Option<&mut DbiEntry> {
        self.slots.get_mut(dbi as usize).and_then(|s| s.as_mut())
    }

    /// The open handle named `name`; for a reader, not one still pending.
    pub(crate) fn find(&self, name: &[u8], reader: bool) -> Option<MDB_dbi> {
        self.slots
            .iter()
            .position(|s| {
                s.as_ref()
                    .is_some_and(|e| e.name.as_deref() == Some(name) && !(reader && e.pending))
            })
            .map(|i| i as MDB_dbi)
    }

    /// Take `owner` off the open handles of `dbis` it opened, and apply
    /// `f` to each.
    pub(crate) fn disown(
        &mut self,
        dbis: &[MDB_dbi],
        owner: usize,
        mut f: impl FnMut(&mut DbiEntry),
    ) {
        for &d in dbis {
            if let Some(Some(e)) = self.slots.get_mut(d as usize) {
                if let Some(i) = e.owners.iter().position(|&o| o == owner) {
                    e.owners.swap_remove(i);
                    f(e);
                }
            }
        }
    }

    /// Top-level transaction `owner`, which opened `dbis`, committed:
    /// those still private are shared from epoch `epoch` on. Whether any was.
    pub(crate) fn share(&mut self, dbis: &[MDB_dbi], owner: usize, epoch: u32) -> bool {
        let mut any = false;
        self.disown(dbis, owner, |e| {
            e.pending = false;
            if e.born == UNSHARED {
                e.born = epoch;
                any = true;
            }
        });
        any
    }

    /// Child `from`, which opened `dbis`, committed: they are its parent's.
    pub(crate) fn hand_over(&mut self, dbis: &[MDB_dbi], from: usize, to: usize) {
        self.disown(dbis, from, |e| {
            if !e.owners.contains(&to) {
                e.owners.push(to);
            }
        });
    }

    /// `owner`, which opened `dbis`, aborted: those nobody else holds and
    /// that were never shared are closed (their databases returned).
    pub(crate) fn abandon(&mut self, dbis: &[MDB_dbi], owner: usize) -> Vec<Database> {
        self.disown(dbis, owner, |_| {});
        let orphan = |e: &DbiEntry| e.owners.is_empty() && e.born == UNSHARED;
        dbis.iter()
            .filter(|&&d| self.get(d).is_some_and(orphan))
            .copied()
            .collect::<Vec<_>>()
            .into_iter()
            .filter_map(|d| self.remove(d).map(|e| e.db))
            .collect()
    }

    pub(crate) fn named(&self) -> usize {
        self.slots.iter().skip(2).filter(|s| s.is_some()).count()
    }

    pub(crate) fn insert(&mut self, e: DbiEntry) -> MDB_dbi {
        match self.slots.iter().skip(2).position(|s| s.is_none()) {
            Some(i) => {
                self.slots[i + 2] = Some(e);
                (i + 2) as MDB_dbi
            }
            None => {
                self.slots.push(Some(e));
                (self.slots.len() - 1) as MDB_dbi
            }
        }
    }

    pub(crate) fn remove(&mut self, dbi: MDB_dbi) -> Option<DbiEntry> {
        if dbi < 2 {
            return None;
        }
        self.slots.get_mut(dbi as usize).and_then(|s| s.take())
    }
}
