//! Database flags, as stored in a database record (lmdb-format.md §4).

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

/// Flags of a database, as stored in its record: chosen when
/// [`RwTxn::create_db`](crate::RwTxn::create_db) creates it, and fixed
/// from then on.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let recent = w.create_db("recent", DbFlags::REVERSE_KEY)?; // keys compared from the end
/// for k in [b"ab", b"ba", b"ca"] {
///     w.put(recent, k, b"", WriteFlags::EMPTY)?;
/// }
/// assert_eq!(w.cursor(recent)?.first()?.unwrap().0, b"ba"); // ends in 'a'
/// assert_eq!(w.db_flags(recent)?, DbFlags::REVERSE_KEY);
/// # Ok::<(), mdb::Error>(())
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
    ///
    /// ```
    /// use mdb::DbFlags;
    /// let f = DbFlags::DUP_SORT | DbFlags::DUP_FIXED;
    /// assert!(f.contains(DbFlags::DUP_SORT));
    /// assert!(!f.contains(DbFlags::INTEGER_KEY));
    /// ```
    pub fn contains(self, other: DbFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// The raw bits (LMDB's values).
    ///
    /// ```
    /// use mdb::DbFlags;
    /// assert_eq!(DbFlags::DUP_SORT.bits(), 0x04); // MDB_DUPSORT
    /// assert_eq!(DbFlags(0x04), DbFlags::DUP_SORT);
    /// ```
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
