//! Database handles, flags and statistics.

/// Database flag: keys compared from the end.
pub const REVERSEKEY: u16 = 0x02;
/// Database flag: sorted duplicates.
pub const DUPSORT: u16 = 0x04;
/// Database flag: native unsigned integer keys.
pub const INTEGERKEY: u16 = 0x08;
/// Database flag: fixed-size duplicates.
pub const DUPFIXED: u16 = 0x10;
/// Database flag: integer duplicates.
pub const INTEGERDUP: u16 = 0x20;
/// Database flag: duplicates compared from the end.
pub const REVERSEDUP: u16 = 0x40;
/// Flags this version of the engine can read and write.
pub(crate) const SUPPORTED: u16 =
    REVERSEKEY | INTEGERKEY | DUPSORT | DUPFIXED | INTEGERDUP | REVERSEDUP;
/// All persistent database flags.
pub(crate) const PERSISTENT: u16 = 0x7e;

/// Flags of a database, as stored in its record.
///
/// ```
/// use mdb::DbFlags;
/// let f = DbFlags::INTEGER_KEY | DbFlags::REVERSE_KEY;
/// assert!(f.contains(DbFlags::INTEGER_KEY));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct DbFlags(pub u16);

impl DbFlags {
    /// No flags: byte-wise ordered unique keys.
    pub const EMPTY: DbFlags = DbFlags(0);
    /// `MDB_REVERSEKEY`: compare keys from the last byte.
    pub const REVERSE_KEY: DbFlags = DbFlags(REVERSEKEY);
    /// `MDB_DUPSORT`: several sorted values per key.
    pub const DUP_SORT: DbFlags = DbFlags(DUPSORT);
    /// `MDB_INTEGERKEY`: native 4- or 8-byte unsigned integer keys.
    pub const INTEGER_KEY: DbFlags = DbFlags(INTEGERKEY);
    /// `MDB_DUPFIXED`: fixed-size duplicates.
    pub const DUP_FIXED: DbFlags = DbFlags(DUPFIXED);
    /// `MDB_INTEGERDUP`: integer duplicates.
    pub const INTEGER_DUP: DbFlags = DbFlags(INTEGERDUP);
    /// `MDB_REVERSEDUP`: duplicates compared from the end.
    pub const REVERSE_DUP: DbFlags = DbFlags(REVERSEDUP);

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: DbFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// The raw bits (LMDB's values).
    pub fn bits(self) -> u16 {
        self.0
    }
}

impl std::ops::BitOr for DbFlags {
    type Output = DbFlags;
    fn bitor(self, o: DbFlags) -> DbFlags {
        DbFlags(self.0 | o.0)
    }
}

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
    pub(crate) fn from_record(psize: usize, r: &crate::meta::DbRecord) -> Stat {
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
