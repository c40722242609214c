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
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let hosts = w.create_db("hosts", DbFlags::REVERSE_KEY)?;
    /// for h in ["mail.example.org", "example.com", "www.example.org"] {
    ///     w.put(hosts, h.as_bytes(), b"", WriteFlags::EMPTY)?;
    /// }
    /// // Compared from the end ("gro.elpmaxe.liam"...): grouped by domain.
    /// let mut c = w.cursor(hosts)?;
    /// assert_eq!(c.first()?.unwrap().0, b"mail.example.org");
    /// assert_eq!(c.next()?.unwrap().0, b"www.example.org");
    /// assert_eq!(c.next()?.unwrap().0, b"example.com");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const REVERSE_KEY: DbFlags = DbFlags(REVERSEKEY);
    /// `MDB_DUPSORT`: several sorted values per key.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let tags = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// w.put(tags, b"post1", b"rust", WriteFlags::EMPTY)?;
    /// w.put(tags, b"post1", b"db", WriteFlags::EMPTY)?; // a second value
    /// assert_eq!(w.get(tags, b"post1")?, Some(&b"db"[..])); // the first, sorted
    /// assert_eq!(w.stat(tags)?.entries, 2);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const DUP_SORT: DbFlags = DbFlags(DUPSORT);
    /// `MDB_INTEGERKEY`: native 4- or 8-byte unsigned integer keys.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let ids = w.create_db("ids", DbFlags::INTEGER_KEY)?;
    /// for id in [1000u64, 7, 300] {
    ///     w.put(ids, &id.to_ne_bytes(), b"", WriteFlags::EMPTY)?;
    /// }
    /// let last = w.cursor(ids)?.last()?.unwrap().0;
    /// assert_eq!(u64::from_ne_bytes(last.try_into().unwrap()), 1000);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const INTEGER_KEY: DbFlags = DbFlags(INTEGERKEY);
    /// `MDB_DUPFIXED`: fixed-size duplicates.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// // With DUP_SORT: values of one size, packed; see `Cursor::get_multiple`.
    /// let ids = w.create_db("ids", DbFlags::DUP_SORT | DbFlags::DUP_FIXED)?;
    /// for id in [3u32, 1, 2] {
    ///     w.put(ids, b"k", &id.to_be_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// let mut c = w.cursor(ids)?;
    /// c.set(b"k")?;
    /// assert_eq!(c.get_multiple()?, Some(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3][..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const DUP_FIXED: DbFlags = DbFlags(DUPFIXED);
    /// `MDB_INTEGERDUP`: integer duplicates.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db("d", DbFlags::DUP_SORT | DbFlags::DUP_FIXED | DbFlags::INTEGER_DUP)?;
    /// for v in [256u32, 2, 70_000] {
    ///     w.put(db, b"k", &v.to_ne_bytes(), WriteFlags::EMPTY)?;
    /// }
    /// assert_eq!(w.get(db, b"k")?, Some(&2u32.to_ne_bytes()[..])); // numeric order
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const INTEGER_DUP: DbFlags = DbFlags(INTEGERDUP);
    /// `MDB_REVERSEDUP`: duplicates compared from the end.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db("d", DbFlags::DUP_SORT | DbFlags::REVERSE_DUP)?;
    /// for v in [b"ab", b"ba", b"cc"] {
    ///     w.put(db, b"k", v, WriteFlags::EMPTY)?;
    /// }
    /// assert_eq!(w.get(db, b"k")?, Some(&b"ba"[..])); // last byte 'a' first
    /// # Ok::<(), mdb::Error>(())
    /// ```
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
