//! B+trees over the pager: search and cursor stacks (`read`), insertion
//! with splits (`insert`), deletion with rebalancing (`delete`), sorted
//! duplicates (`dups`), page allocation from the free list (`alloc`),
//! saving the free list at commit (`freedb`), numbering a mostly rewritten
//! tree's pages in key order at commit (`place`), and moving pages down
//! the file (`relocate`). Every database is a tree: the
//! main and free databases, named databases, DUPSORT sub-databases.
//!
//! Functions here take the [`Pager`] and a [`Tree`]; they know nothing of
//! transactions, handles or cursors above them.

pub(crate) mod alloc;
pub(crate) mod delete;
pub(crate) mod dups;
pub(crate) mod freedb;
pub(crate) mod insert;
pub(crate) mod place;
pub(crate) mod read;
pub(crate) mod relocate;

pub(crate) use alloc::alloc;
pub(crate) use delete::*;
pub(crate) use dups::{dup_del, dup_put};
pub(crate) use freedb::save_freelist;
pub(crate) use insert::*;
pub use read::Item;
pub(crate) use read::{contains, descend, get, get_node, node_value, CursorPos, Path, MAX_DEPTH};

use crate::error::{ErrorKind, Result};
use crate::format::cmp::{for_flags, CmpFn};
use crate::format::meta::DbRecord;
use crate::format::page::MAX_KEY_SIZE;
use crate::pager::Pager;

/// Flags of a put (LMDB's `MDB_*` write flags), combined with `|`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, ErrorKind, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// for i in 0u32..100 {
///     // Sorted input: append at the end of the tree, no search.
///     w.put(Database::MAIN, &i.to_be_bytes(), b"v", WriteFlags::APPEND)?;
/// }
/// let r = w.put(Database::MAIN, &5u32.to_be_bytes(), b"v", WriteFlags::APPEND);
/// assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::KeyExist)); // not after the last key
/// assert_eq!(w.stat(Database::MAIN)?.entries, 100);
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct WriteFlags(pub u32);

impl WriteFlags {
    /// Insert or replace.
    pub const EMPTY: WriteFlags = WriteFlags(0);
    /// `MDB_NOOVERWRITE`: fail with `KeyExist` if the key exists.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, ErrorKind, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"user:1", b"ada", WriteFlags::NO_OVERWRITE)?;
    /// let taken = w.put(Database::MAIN, b"user:1", b"bob", WriteFlags::NO_OVERWRITE);
    /// assert_eq!(taken.map_err(|e| e.kind()), Err(ErrorKind::KeyExist));
    /// assert_eq!(w.get(Database::MAIN, b"user:1")?, Some(&b"ada"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const NO_OVERWRITE: WriteFlags = WriteFlags(0x10);
    /// `MDB_NODUPDATA`: (DUPSORT only) fail if the pair exists.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, ErrorKind, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let tags = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// w.put(tags, b"k", b"a", WriteFlags::NO_DUP_DATA)?;
    /// w.put(tags, b"k", b"b", WriteFlags::NO_DUP_DATA)?; // another value: fine
    /// let again = w.put(tags, b"k", b"a", WriteFlags::NO_DUP_DATA);
    /// assert_eq!(again.map_err(|e| e.kind()), Err(ErrorKind::KeyExist));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const NO_DUP_DATA: WriteFlags = WriteFlags(0x20);
    /// `MDB_CURRENT`: replace the item at the cursor.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Error, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"old", WriteFlags::EMPTY)?;
    /// let mut c = w.write_cursor(Database::MAIN)?;
    /// c.first()?;
    /// c.put(b"k", b"new", WriteFlags::CURRENT)?;
    /// drop(c);
    /// assert_eq!(w.get(Database::MAIN, b"k")?, Some(&b"new"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const CURRENT: WriteFlags = WriteFlags(0x40);
    /// `MDB_RESERVE`: reserve space for the value (see [`RwTxn::reserve`](crate::RwTxn::reserve)).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Error, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// // `put` with RESERVE is `reserve` filled with the given bytes.
    /// w.put(Database::MAIN, b"k", b"value", WriteFlags::RESERVE)?;
    /// assert_eq!(w.get(Database::MAIN, b"k")?, Some(&b"value"[..]));
    /// w.reserve(Database::MAIN, b"k2", 3, WriteFlags::EMPTY)?.copy_from_slice(b"abc");
    /// assert_eq!(w.get(Database::MAIN, b"k2")?, Some(&b"abc"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const RESERVE: WriteFlags = WriteFlags(0x10000);
    /// `MDB_APPEND`: the key is greater than every key (fast path, no split copying);
    /// `KeyExist` otherwise.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, ErrorKind, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// for id in 1u64..=1000 {
    ///     // Keys in ascending order, as from a sequence or a sorted dump.
    ///     w.put(Database::MAIN, &id.to_be_bytes(), b"row", WriteFlags::APPEND)?;
    /// }
    /// let r = w.put(Database::MAIN, &1u64.to_be_bytes(), b"row", WriteFlags::APPEND);
    /// assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::KeyExist));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const APPEND: WriteFlags = WriteFlags(0x20000);
    /// `MDB_APPENDDUP`: (DUPSORT only) append a duplicate.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{ErrorKind, WriteFlags};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let log = w.create_db("log", DbFlags::DUP_SORT)?;
    /// for v in [b"1", b"2", b"3"] {
    ///     w.put(log, b"k", v, WriteFlags::APPEND_DUP)?; // each after the last
    /// }
    /// let r = w.put(log, b"k", b"0", WriteFlags::APPEND_DUP);
    /// assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::KeyExist));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const APPEND_DUP: WriteFlags = WriteFlags(0x40000);

    /// Whether every flag of `o` is set.
    ///
    /// ```
    /// use mdb::WriteFlags;
    /// let f = WriteFlags::NO_OVERWRITE | WriteFlags::APPEND;
    /// assert!(f.contains(WriteFlags::APPEND));
    /// assert!(!f.contains(WriteFlags::RESERVE));
    /// ```
    pub fn contains(self, o: WriteFlags) -> bool {
        self.0 & o.0 == o.0
    }
}

impl std::ops::BitOr for WriteFlags {
    type Output = WriteFlags;
    fn bitor(self, o: WriteFlags) -> WriteFlags {
        WriteFlags(self.0 | o.0)
    }
}

/// A B+tree being modified: its record and how its keys compare. Named
/// databases, the main and free databases, and DUPSORT sub-databases are all
/// trees; the caller stores `rec` back where it came from.
#[derive(Clone, Copy)]
pub(crate) struct Tree {
    pub(crate) rec: DbRecord,
    pub(crate) cmp: CmpFn,
    /// For DUPSORT databases: how duplicate values compare.
    pub(crate) dups: Option<CmpFn>,
    /// Key size of a tree with LEAF2 leaves (DUPFIXED sub-databases), else 0.
    pub(crate) fixed: usize,
}

/// The free database's tree as the pager holds it.
pub(crate) fn free_tree(pager: &Pager<'_>) -> Tree {
    Tree {
        rec: pager.free_db,
        cmp: for_flags(pager.free_db.flags),
        dups: None,
        fixed: 0,
    }
}

/// Keys are 1 to [`MAX_KEY_SIZE`] bytes.
pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.is_empty() || key.len() > MAX_KEY_SIZE {
        return Err(ErrorKind::BadValSize.into());
    }
    Ok(())
}
