//! The write transaction's update API: puts, deletes, dropping databases.
//! Each checks its arguments and the handle, then works on the database's
//! tree through the tree layer and stores the changed record back.

use crate::db::Database;
use crate::error::{ErrorKind, Misuse, Result};
use crate::format::cmp::CmpFn;
use crate::format::flags::DUPSORT;
use crate::format::meta::DbRecord;
use crate::format::page::F_SUBDATA;
use crate::tree::check_key;
use crate::tree::dups::DupSpot;
use crate::tree::{self, Path, Tree, Value, WriteFlags};
use crate::txn::RwTxn;

impl<'env> RwTxn<'env> {
    pub(super) fn check_usable(&mut self, db: Database) -> Result<DbRecord> {
        self.start_change(db)?;
        self.rec(db)
    }

    /// The checks every change of `db` starts with.
    pub(crate) fn start_change(&mut self, db: Database) -> Result<()> {
        if self.broken.get() {
            return Err(ErrorKind::BadTxn.into());
        }
        db.check_env(self.env.tag())?;
        // Between operations: a transaction over its memory budget writes
        // some dirty pages out (`pager::spill`).
        self.pg.maybe_spill()?;
        // Every public change passes here: detached cursors of `db` must
        // re-sync.
        self.gen.change(db);
        if db == Database::FREE {
            return Err(ErrorKind::Misuse(Misuse::FreeDbWrite).into());
        }
        Ok(())
    }

    /// The tree of `db` as of now.
    pub(crate) fn tree(&self, db: Database) -> Result<Tree> {
        Ok(self.tree_of(db, self.rec(db)?))
    }

    /// The tree of `db` whose record is `rec`.
    fn tree_of(&self, db: Database, rec: DbRecord) -> Tree {
        let (cmp, dups) = self.env.comparators(db, rec.flags);
        Tree {
            rec,
            cmp,
            dups,
            fixed: 0,
        }
    }

    /// Store `val` under `key`. In a DUPSORT database, add `val` to the
    /// key's sorted values.
    ///
    /// In a DUPSORT database an empty value may be a key's only value, as
    /// in LMDB; an empty value beside other values is refused with
    /// [`ErrorKind::BadValSize`] in both orders (LMDB refuses adding it to a key
    /// with values, but silently drops it when a value is added to it).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, ErrorKind, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"one", WriteFlags::EMPTY)?;
    /// assert_eq!(w.put(Database::MAIN, b"k", b"two", WriteFlags::NO_OVERWRITE).map_err(|e| e.kind()), Err(ErrorKind::KeyExist));
    /// assert_eq!(w.get(Database::MAIN, b"k")?, Some(&b"one"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn put(&mut self, db: Database, key: &[u8], val: &[u8], flags: WriteFlags) -> Result<()> {
        let env = self.env;
        let r = if flags.contains(WriteFlags::RESERVE) {
            self.reserve(db, key, val.len(), flags)
                .map(|b| b.copy_from_slice(val))
        } else {
            self.put_value(db, key, Value::Bytes(val), flags)
        };
        // A branch rather than `map_err` (here and in the other hot
        // operations): the closure's captures were stored on every call.
        match r {
            Ok(()) => Ok(()),
            Err(e) => Err(env.failed(e, "put", db, Some(key.len()), Some(val.len()))),
        }
    }

    /// Insert `key` only if it is absent (`MDB_NOOVERWRITE`). Returns the
    /// existing value (the first one, for DUPSORT), untouched, when the key
    /// is already there.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Env, Database};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// assert_eq!(w.put_new(Database::MAIN, b"k", b"one")?, None);
    /// assert_eq!(w.put_new(Database::MAIN, b"k", b"two")?, Some(&b"one"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn put_new(&mut self, db: Database, key: &[u8], val: &[u8]) -> Result<Option<&[u8]>> {
        match self.put(db, key, val, WriteFlags::NO_OVERWRITE) {
            Ok(()) => Ok(None),
            Err(e) if e == ErrorKind::KeyExist => {
                let t = self.tree(db)?;
                crate::tree::get(&*self, &t.rec, t.cmp, key)
            }
            Err(e) => Err(e),
        }
    }

    /// Reserve `len` bytes for the value of `key` and hand them back to fill
    /// in (`MDB_RESERVE`). Not allowed on DUPSORT databases (`EINVAL`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let buf = w.reserve(Database::MAIN, b"k", 5, WriteFlags::EMPTY)?;
    /// buf.copy_from_slice(b"hello"); // e.g. serialise straight into the page
    /// assert_eq!(w.get(Database::MAIN, b"k")?, Some(&b"hello"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn reserve(
        &mut self,
        db: Database,
        key: &[u8],
        len: usize,
        flags: WriteFlags,
    ) -> Result<&mut [u8]> {
        let env = self.env;
        let r = self.put_value(db, key, Value::Reserve(len), flags);
        r.and_then(|()| self.value_mut(db, key))
            .map_err(|e| env.failed(e, "reserve", db, Some(key.len()), Some(len)))
    }

    /// Mutable access to the (dirty) value of `key`, right after a put.
    pub(crate) fn value_mut(&mut self, db: Database, key: &[u8]) -> Result<&mut [u8]> {
        let t = self.tree(db)?;
        tree::value_mut_t(&mut self.pg, &t, key)
    }

    fn put_value(
        &mut self,
        db: Database,
        key: &[u8],
        val: Value<'_>,
        flags: WriteFlags,
    ) -> Result<()> {
        let rec = self.check_usable(db)?;
        check_key(key)?;
        self.pg.puts += 1;
        let mut t = self.tree_of(db, rec);
        let r = if t.dups.is_some() {
            match val {
                Value::Bytes(v) => tree::dup_put(&mut self.pg, &mut t, key, v, flags),
                Value::Reserve(_) => Err(ErrorKind::Misuse(Misuse::ReserveDupSort).into()),
            }
        } else {
            tree::put_in_tree(&mut self.pg, &mut t, key, val, flags)
        };
        self.set_rec(db, t.rec);
        self.fail_on_fatal(r)
    }

    /// [`RwTxn::put`] of a plain value for a cursor (`cursor_put`): `at`
    /// is where `key` goes on the leaf of `path` (a valid path of the
    /// tree, from the cursor), if known. Returns whether `path` then leads
    /// to the key's node, the tree unchanged in shape since (no split);
    /// `sub` to the value in the key's sub-database, if it went there
    /// (`tree::dups::dup_put_at`), and where the value stands among the
    /// key's values if known. `cmps`: the key and value comparators (the
    /// cursor's).
    pub(crate) fn put_placed(
        &mut self,
        db: Database,
        (key, val): (&[u8], &[u8]),
        flags: WriteFlags,
        placed: (&mut Path, Option<(usize, bool)>),
        sub: &mut Path,
        (cmp, dups): (CmpFn, Option<CmpFn>),
    ) -> Result<(bool, DupSpot)> {
        let r = (|| {
            let rec = self.check_usable(db)?;
            check_key(key)?;
            self.pg.puts += 1;
            let mut t = Tree {
                rec,
                cmp,
                dups,
                fixed: 0,
            };
            let splits = self.pg.splits;
            let path = &mut *placed.0;
            let r = if t.dups.is_some() {
                let at = (&mut *path, placed.1);
                tree::dups::dup_put_at(&mut self.pg, &mut t, key, val, flags, at, sub)
            } else {
                sub.len = 0;
                let v = Value::Bytes(val);
                tree::put_in_tree_at(&mut self.pg, &mut t, key, v, flags, (path, placed.1))
                    .map(|()| DupSpot::Unknown)
            };
            self.set_rec(db, t.rec);
            let spot = self.fail_on_fatal(r)?;
            Ok((tree::placed_path(&self.pg, &t, path, splits), spot))
        })();
        match r {
            Ok(kept) => Ok(kept),
            Err(e) => Err(self
                .env
                .failed(e, "put", db, Some(key.len()), Some(val.len()))),
        }
    }

    /// Mark the transaction broken on errors that may leave it half-done.
    pub(crate) fn fail_on_fatal<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            if !e.kind().leaves_txn_usable() {
                self.broken.set(true);
            }
        }
        r
    }

    /// Delete `key` (with every duplicate value in a DUPSORT database);
    /// returns whether it existed.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Env, Database, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// assert!(w.del(Database::MAIN, b"k")?);
    /// assert!(!w.del(Database::MAIN, b"k")?);
    /// assert_eq!(w.get(Database::MAIN, b"k")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn del(&mut self, db: Database, key: &[u8]) -> Result<bool> {
        let env = self.env;
        let r: Result<bool> = (|| {
            let rec = self.check_usable(db)?;
            check_key(key)?;
            let mut t = self.tree_of(db, rec);
            if db == Database::MAIN {
                // A named database's record goes with `delete_db`, never alone
                // (that would leak its pages).
                if let Some(n) = crate::tree::get_node(&*self, &t.rec, t.cmp, key)? {
                    if n.flags() & F_SUBDATA != 0 {
                        return Err(ErrorKind::Incompatible.into());
                    }
                }
            }
            let r = if t.dups.is_some() {
                tree::dup_del(&mut self.pg, &mut t, key, None)
            } else {
                tree::tree_del(&mut self.pg, &mut t, key)
            };
            self.set_rec(db, t.rec);
            self.fail_on_fatal(r)
        })();
        match r {
            Ok(found) => Ok(found),
            Err(e) => Err(env.failed(e, "del", db, Some(key.len()), None)),
        }
    }

    /// DUPFIXED: store the values packed in `vals` (each `size` bytes) under
    /// `key` (`MDB_MULTIPLE`); returns how many were stored.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let ids = w.create_db("ids", DbFlags::DUP_SORT | DbFlags::DUP_FIXED)?;
    /// let packed: Vec<u8> = [30u32, 10, 20].iter().flat_map(|v| v.to_be_bytes()).collect();
    /// assert_eq!(w.put_multiple(ids, b"k", &packed, 4, WriteFlags::EMPTY)?, 3);
    /// let mut c = w.cursor(ids)?;
    /// assert_eq!(c.set(b"k")?, Some(&10u32.to_be_bytes()[..])); // sorted
    /// assert_eq!(c.count()?, 3);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn put_multiple(
        &mut self,
        db: Database,
        key: &[u8],
        vals: &[u8],
        size: usize,
        flags: WriteFlags,
    ) -> Result<usize> {
        let env = self.env;
        let r: Result<usize> = (|| {
            let rec = self.check_usable(db)?;
            if rec.flags & crate::format::flags::DUPFIXED == 0 {
                return Err(ErrorKind::Incompatible.into());
            }
            if size == 0 || !vals.len().is_multiple_of(size) {
                return Err(ErrorKind::BadValSize.into());
            }
            let mut n = 0;
            for v in vals.chunks(size) {
                match self.put(db, key, v, flags) {
                    Ok(()) => n += 1,
                    Err(e)
                        if e == ErrorKind::KeyExist && flags.contains(WriteFlags::NO_DUP_DATA) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(n)
        })();
        r.map_err(|e| env.failed(e, "put multiple", db, Some(key.len()), Some(size)))
    }

    /// Delete one value of a DUPSORT key (or the key if `val` is its value in
    /// another database); returns whether the pair existed.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// w.put(db, b"k", b"1", WriteFlags::EMPTY)?;
    /// w.put(db, b"k", b"2", WriteFlags::EMPTY)?;
    /// assert!(w.del_dup(db, b"k", b"1")?);
    /// assert!(!w.del_dup(db, b"k", b"1")?);
    /// assert_eq!(w.get(db, b"k")?, Some(&b"2"[..])); // the other value stays
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn del_dup(&mut self, db: Database, key: &[u8], val: &[u8]) -> Result<bool> {
        let env = self.env;
        let r: Result<bool> = (|| {
            let rec = self.check_usable(db)?;
            check_key(key)?;
            let mut t = self.tree_of(db, rec);
            let r = if t.dups.is_some() {
                tree::dup_del(&mut self.pg, &mut t, key, Some(val))
            } else {
                match crate::tree::get(&*self, &t.rec, t.cmp, key)? {
                    Some(v) if v == val => tree::tree_del(&mut self.pg, &mut t, key),
                    _ => Ok(false),
                }
            };
            self.set_rec(db, t.rec);
            self.fail_on_fatal(r)
        })();
        r.map_err(|e| env.failed(e, "del", db, Some(key.len()), Some(val.len())))
    }

    /// Delete the item a cursor of a plain (not DUPSORT) database is on,
    /// with no search from the root: `path` is its position in the tree as
    /// it is now, updated in place (no copies of the path), `rec` the
    /// database's record. Returns whether it now stands on the following
    /// item, on the same leaf, with the tree in the same shape; `key` then
    /// holds that item's key, else the deleted one, to search from
    /// (`tree::remove_at`). `cmp` is the cursor's key order (the cursor
    /// was made for this database).
    pub(crate) fn del_at(
        &mut self,
        db: Database,
        (rec, cmp): (DbRecord, CmpFn),
        path: &mut Path,
        key: &mut Vec<u8>,
    ) -> Result<bool> {
        self.start_change(db)?;
        let mut t = Tree {
            rec,
            cmp,
            dups: None,
            fixed: 0,
        };
        if rec.flags & DUPSORT != 0 || path.len == 0 || path.len != rec.depth as usize {
            return Err(ErrorKind::Os(libc::EINVAL).into());
        }
        let i = path.ix[path.leaf()];
        // A named database's record goes with `delete_db` (see `del`).
        let cur = tree::AtCursor {
            key,
            no_subdb: db == Database::MAIN,
        };
        let r = tree::remove_at(&mut self.pg, &mut t, path, i, Some(cur));
        self.set_rec(db, t.rec);
        let kept = self.fail_on_fatal(r)?;
        Ok(kept.is_some_and(|len| i < len))
    }

    /// Delete every item of `db`, keeping the database (and its flags) for
    /// new items; [`RwTxn::delete_db`] removes a named database too.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let cache = w.create_db("cache", DbFlags::EMPTY)?;
    /// w.put(cache, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.clear_db(cache)?;
    /// assert_eq!(w.stat(cache)?.entries, 0);
    /// w.commit()?;
    /// assert!(env.read_txn()?.open_db("cache").is_ok()); // still there
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn clear_db(&mut self, db: Database) -> Result<()> {
        let env = self.env;
        let r: Result<()> = (|| {
            let rec = self.check_usable(db)?;
            let mut t = self.tree_of(db, rec);
            let r = tree::drop_tree(&mut self.pg, &mut t);
            self.set_rec(db, t.rec);
            self.fail_on_fatal(r)
        })();
        r.map_err(|e| env.failed(e, "clear database", db, None, None))
    }

    /// Delete a named database: empty it and remove its record from the main database.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, ErrorKind, Txn, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// use mdb::Error;
    /// let old = w.create_db("old", DbFlags::EMPTY)?;
    /// w.put(old, b"k", b"v", WriteFlags::EMPTY)?;
    /// w.commit()?;
    /// let mut w = env.write_txn()?;
    /// let old = w.open_db("old")?;
    /// w.delete_db(old)?;
    /// w.commit()?;
    /// assert_eq!(env.read_txn()?.open_db("old").err().map(|e| e.kind()), Some(ErrorKind::NotFound));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn delete_db(&mut self, db: Database) -> Result<()> {
        if db.0 < 2 {
            return self.clear_db(db);
        }
        let r = (|| {
            let rec = self.check_usable(db)?;
            let mut t = self.tree_of(db, rec);
            tree::drop_tree(&mut self.pg, &mut t)?;
            self.set_rec(db, t.rec);
            let name = self.env.dbi_info(db)?.name.ok_or(ErrorKind::BadDbi)?;
            let mut m = self.tree(Database::MAIN)?;
            // The main tree changes too: every cursor re-syncs.
            self.gen.change_all();
            let r = tree::tree_del(&mut self.pg, &mut m, &name);
            self.set_rec(Database::MAIN, m.rec);
            r?;
            let mut d = self.dbs.borrow_mut();
            if let Some(slot) = d.get_mut(db.0 as usize) {
                *slot = None;
            }
            Ok(())
        })();
        let env = self.env;
        self.fail_on_fatal(r)
            .map_err(|e| env.failed(e, "delete database", db, None, None))
    }
}
