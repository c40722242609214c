//! Database handles and statistics.

/// A handle to a database of an environment: small, `Copy`, valid for the
/// environment's life, except that one first opened in a write transaction
/// belongs to that transaction until it commits (other transactions get
/// `EINVAL` for it) and is closed if it aborts, as in LMDB.
/// [`Database::MAIN`] is the unnamed main database.
///
/// One opened in a read transaction is the environment's at once (a read
/// transaction has no commit, and dropping it closes nothing), where LMDB's
/// C API keeps it private to that transaction until it commits (our C
/// library does that on top). Each use finds the database in the user's own
/// snapshot: one without it gets `BadDbi`.
///
/// A handle opened by an environment belongs to it: used with a
/// transaction of another environment it is refused (`BadDbi`), where it
/// would otherwise name whatever that environment opened under the same
/// number.
///
/// ```
/// # let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
/// use mdb::{DbFlags, EnvOptions, ErrorKind, Txn};
/// let one = EnvOptions::new().max_dbs(1).open(a.path())?;
/// let two = EnvOptions::new().max_dbs(1).open(b.path())?;
/// let mut w = one.write_txn()?;
/// let db = w.create_db("t", DbFlags::EMPTY)?;
/// w.commit()?;
/// let mut w2 = two.write_txn()?;
/// w2.create_db("t", DbFlags::EMPTY)?;
/// assert_eq!(w2.get(db, b"k").err().map(|e| e.kind()), Some(ErrorKind::BadDbi));
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Database(pub(crate) u32, pub(crate) u32);

/// Handles compare by number (the environment tag is a check, not part of
/// the name).
impl PartialEq for Database {
    fn eq(&self, o: &Database) -> bool {
        self.0 == o.0
    }
}
impl Eq for Database {}
impl std::hash::Hash for Database {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.hash(h)
    }
}

impl Database {
    /// The free-page database (read-only access, for tools): its keys are
    /// transaction ids, its values the pages they freed.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// for v in [&b"one"[..], b"two"] {
    ///     let mut w = env.write_txn()?;
    ///     w.put(Database::MAIN, b"k", v, WriteFlags::EMPTY)?;
    ///     w.commit()?;
    /// }
    /// let r = env.read_txn()?;
    /// assert!(r.stat(Database::FREE)?.entries > 0); // the first tree's pages
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const FREE: Database = Database(0, 0);
    /// The main (unnamed) database, always open; named databases are
    /// records in it.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// assert_eq!(w.get(Database::MAIN, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const MAIN: Database = Database(1, 0);

    /// The handle with LMDB's number `dbi` (as a binding receives it),
    /// valid in any environment that opened that number. Using a number
    /// that was never opened fails with `EINVAL`/`BadDbi`, never UB.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db("t", DbFlags::EMPTY)?;
    /// w.put(db, b"k", b"v", WriteFlags::EMPTY)?;
    /// let same = Database::from_dbi(db.dbi()); // e.g. from a C caller
    /// assert_eq!(w.get(same, b"k")?, Some(&b"v"[..]));
    /// assert!(w.get(Database::from_dbi(9), b"k").is_err()); // never opened
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn from_dbi(dbi: u32) -> Database {
        Database(dbi, 0)
    }

    /// `BadDbi` if this handle was opened by another environment than the
    /// one with tag `env` (untagged handles pass).
    #[inline]
    pub(crate) fn check_env(self, env: u32) -> crate::error::Result<()> {
        if self.1 != 0 && self.1 != env {
            return Err(crate::error::ErrorKind::BadDbi.into());
        }
        Ok(())
    }

    /// LMDB's numeric handle (`MDB_dbi`).
    ///
    /// ```
    /// use mdb::Database;
    /// assert_eq!(Database::FREE.dbi(), 0);
    /// assert_eq!(Database::MAIN.dbi(), 1);
    /// ```
    pub fn dbi(self) -> u32 {
        self.0
    }
}

/// Statistics of one database, as `mdb_stat` prints them
/// ([`Txn::stat`](crate::Txn::stat), [`Env::stat`](crate::Env::stat)).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"small", b"v", WriteFlags::EMPTY)?;
/// w.put(Database::MAIN, b"big", &[0; 10_000], WriteFlags::EMPTY)?;
/// let s = w.stat(Database::MAIN)?;
/// assert_eq!((s.entries, s.depth, s.leaf_pages), (2, 1, 1));
/// assert!(s.overflow_pages > 0); // the value larger than a page
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    /// Page size of the environment.
    pub page_size: u32,
    /// Tree height (0 when empty).
    pub depth: u32,
    /// Branch (interior) pages.
    pub branch_pages: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Overflow pages.
    pub overflow_pages: u64,
    /// Data items.
    pub entries: u64,
}

impl Stat {
    pub(crate) fn from_record(psize: usize, r: &crate::format::meta::DbRecord) -> Stat {
        Stat {
            page_size: psize as u32,
            depth: r.depth as u32,
            branch_pages: r.branch_pages,
            leaf_pages: r.leaf_pages,
            overflow_pages: r.overflow_pages,
            entries: r.entries,
        }
    }
}
