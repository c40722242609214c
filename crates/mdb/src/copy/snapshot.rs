//! The snapshot a copy reads: a read transaction that pins it, and both
//! meta pages as of it, taken under the writer lock.

use crate::env::Env;
use crate::error::{ErrorKind, Result};
use crate::format::meta::{Meta, META_LEN, VERSION, VERSION_OFF};
use crate::txn::{RoTxn, Txn};

impl Env {
    /// Start the copy's read transaction and take both meta pages as of its
    /// snapshot.
    pub(crate) fn copy_snapshot(&self) -> Result<CopySnapshot<'_>> {
        let ps = self.psize;
        let mut txn = self.read_txn()?;
        let mut metas = vec![0u8; 2 * ps];
        {
            // As LMDB: the reader slot is taken first, then the snapshot is
            // renewed under the writer lock, so that no commit can be
            // half-way while the meta pages are read (under NO_LOCK, no
            // commit of this process).
            let l = &self.lock;
            txn.reset();
            let recovered = l.lock_writer()?;
            struct Unlock<'a>(&'a crate::lock::LockFile);
            impl Drop for Unlock<'_> {
                fn drop(&mut self) {
                    self.0.unlock_writer();
                }
            }
            let _unlock = Unlock(l);
            if recovered {
                // The previous writer died: its uncommitted pages are unreferenced.
                if let Ok((_, m)) = crate::env::pick_meta(self.meta_page(0), self.meta_page(1)) {
                    l.set_txnid(m.txnid);
                }
            }
            txn.renew()?;
            metas.copy_from_slice(self.map().slice(0, 2 * ps)?);
        }
        // A copy is a whole snapshot, with no log to wait for: plain LMDB
        // 0.9 even when the source is in write-ahead-log mode.
        for m in metas.chunks_exact_mut(ps) {
            let v = VERSION_OFF as usize;
            m[v..v + 4].copy_from_slice(&VERSION.to_le_bytes());
        }
        let t = Txn::id(&txn);
        let decode = |i: usize| Meta::decode(&metas[i * ps..i * ps + META_LEN]);
        let meta = [decode((t & 1) as usize), decode((t & 1 ^ 1) as usize)]
            .into_iter()
            .flatten()
            .find(|m| m.txnid == t)
            .ok_or(ErrorKind::Corrupted)?;
        Ok(CopySnapshot {
            _txn: txn,
            metas,
            meta,
            file_len: self.file.len()?,
        })
    }
}

/// The copy's snapshot: the read transaction that pins it, and its metas.
pub(crate) struct CopySnapshot<'e> {
    _txn: RoTxn<'e>,
    /// Pages 0 and 1 as they were when the snapshot was taken.
    pub(crate) metas: Vec<u8>,
    /// The snapshot's own meta.
    pub(crate) meta: Meta,
    /// Length of the data file when the snapshot was taken: every page of
    /// the snapshot lies within it.
    pub(crate) file_len: u64,
}

impl CopySnapshot<'_> {
    /// Where the snapshot ends in the file, in bytes: its pages
    /// (`last_pgno + 1` of `ps` bytes), clamped to the file's length, and
    /// at least the two meta pages.
    pub(crate) fn end(&self, ps: u64) -> u64 {
        self.meta
            .last_pgno
            .saturating_add(1)
            .saturating_mul(ps)
            .min(self.file_len.max(2 * ps))
    }

    /// The fixed-map address recorded in meta page 0.
    pub(super) fn metas_address(&self) -> u64 {
        self.metas
            .first_chunk::<META_LEN>()
            .map_or(0, |m| Meta::fields(m).address)
    }
}
