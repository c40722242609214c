//! Nested (child) write transactions.

use super::write::TxnDb;
use super::*;
use crate::error::ErrorKind;

/// A nested (child) write transaction: it sees its parent's changes, and
/// its own become part of the parent on [`NestedTxn::commit`] or vanish on
/// abort (drop). The parent is borrowed for the child's life, so it cannot be
/// used meanwhile (LMDB's `MDB_BAD_TXN` rule, checked at compile time).
/// Children nest to any depth; all [`RwTxn`] operations are available
/// through `Deref`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"a", b"1", WriteFlags::EMPTY)?;
/// {
///     let mut child = w.nested()?;
///     child.put(Database::MAIN, b"b", b"2", WriteFlags::EMPTY)?;
///     child.abort();
/// }
/// let mut child = w.nested()?;
/// child.put(Database::MAIN, b"c", b"3", WriteFlags::EMPTY)?;
/// child.commit()?;
/// assert_eq!(w.get(Database::MAIN, b"b")?, None);
/// assert_eq!(w.get(Database::MAIN, b"c")?, Some(&b"3"[..]));
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct NestedTxn<'p, 'env> {
    parent: &'p mut RwTxn<'env>,
    saved: Option<Saved>,
}

/// The parent's state when a child began: what an abort restores.
struct Saved {
    pages: crate::pager::Saved,
    dbs: Vec<Option<TxnDb>>,
    broken: bool,
}

impl<'env> RwTxn<'env> {
    /// Begin a child transaction. No page is copied when it begins: a page
    /// of this transaction that the child changes is copied then, so that
    /// an abort can put it back (this transaction's free-page lists and
    /// database records are copied at once).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// // Try a batch; keep what was written before it if it fails.
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"before", b"", WriteFlags::EMPTY)?;
    /// let mut batch = w.nested()?;
    /// let r = batch.put(Database::MAIN, b"", b"", WriteFlags::EMPTY); // empty key
    /// assert!(r.is_err());
    /// drop(batch); // aborts the child only
    /// w.commit()?;
    /// assert!(env.read_txn()?.get(Database::MAIN, b"before")?.is_some());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn nested(&mut self) -> Result<NestedTxn<'_, 'env>> {
        if self.broken.get() {
            return Err(ErrorKind::BadTxn.into());
        }
        let saved = Saved {
            pages: self.pg.save(),
            dbs: self.dbs.borrow().clone(),
            broken: self.broken.get(),
        };
        self.depth += 1;
        Ok(NestedTxn {
            parent: self,
            saved: Some(saved),
        })
    }
}

impl NestedTxn<'_, '_> {
    /// Fold the child's changes into the parent. A child that failed midway
    /// cannot commit: its changes are dropped and `BadTxn` is returned.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let mut child = w.nested()?;
    /// child.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// child.commit()?; // part of `w` now
    /// assert_eq!(w.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// w.commit()?;
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn commit(mut self) -> Result<()> {
        if self.parent.broken.get() {
            // As LMDB: the failed child is discarded and the parent can only abort.
            let parent = &mut *self.parent;
            if let Some(s) = self.saved.take() {
                restore(parent, s);
            }
            parent.broken.set(true);
            return Err(ErrorKind::BadTxn.into());
        }
        if let Some(s) = self.saved.take() {
            self.parent.pg.keep(s.pages);
        }
        self.parent.env.end_new_dbis(self.parent.depth, true);
        Ok(())
    }

    /// Discard the child's changes (same as dropping it).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"old", WriteFlags::EMPTY)?;
    /// let mut child = w.nested()?;
    /// child.put(Database::MAIN, b"k", b"new", WriteFlags::EMPTY)?;
    /// child.abort(); // `w` is as it was before the child
    /// assert_eq!(w.get(Database::MAIN, b"k")?, Some(&b"old"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn abort(self) {}
}

fn restore(p: &mut RwTxn<'_>, s: Saved) {
    p.env.end_new_dbis(p.depth, false);
    p.pg.restore(s.pages);
    *p.dbs.borrow_mut() = s.dbs;
    p.broken.set(s.broken);
    p.gen.change_all();
}

impl Drop for NestedTxn<'_, '_> {
    fn drop(&mut self) {
        if let Some(s) = self.saved.take() {
            restore(self.parent, s);
        }
        self.parent.depth -= 1;
    }
}

impl<'env> std::ops::Deref for NestedTxn<'_, 'env> {
    type Target = RwTxn<'env>;
    fn deref(&self) -> &RwTxn<'env> {
        self.parent
    }
}

impl std::ops::DerefMut for NestedTxn<'_, '_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.parent
    }
}
