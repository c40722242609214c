//! Database handles and statistics.

/// A handle to a database of an environment: small, `Copy`, valid for the
/// environment's life, except that one first opened in a write transaction
/// belongs to that transaction until it commits (other transactions get
/// `EINVAL` for it) and is closed if it aborts, as in LMDB.
/// [`Database::MAIN`] is the unnamed main database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Database(pub(crate) u32);

impl Database {
    /// The free-page database (read-only access, for tools).
    pub const FREE: Database = Database(0);
    /// The main (unnamed) database.
    pub const MAIN: Database = Database(1);

    /// The handle with LMDB's number `dbi` (as a binding receives it). Using a
    /// number that was never opened fails with `EINVAL`/`BadDbi`, never UB.
    pub fn from_dbi(dbi: u32) -> Database {
        Database(dbi)
    }

    /// LMDB's numeric handle (`MDB_dbi`).
    pub fn dbi(self) -> u32 {
        self.0
    }
}

/// Statistics of one database, as `mdb_stat` prints them.
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
