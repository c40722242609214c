//! The process-wide database-handle registry and the comparators a
//! handle carries.

use super::*;

/// One entry of the process-wide database handle table.
#[derive(Debug, Clone)]
pub(crate) struct DbiInfo {
    pub(crate) name: Option<Vec<u8>>,
    pub(crate) flags: u16,
    /// A user key comparator replacing the one the flags select.
    pub(crate) cmp: Option<crate::format::cmp::CmpFn>,
    /// A user duplicate comparator (DUPSORT).
    pub(crate) dcmp: Option<crate::format::cmp::CmpFn>,
    /// Opened by the write transaction at this nesting level (0: the
    /// top-level one) and not committed yet: other transactions may not use
    /// it (LMDB: `EINVAL`), and it is closed if that level aborts.
    pub(crate) pending: Option<u32>,
    /// The record in the snapshot with this txnid, as a reader looked it
    /// up: readers of the same snapshot reuse it instead of searching the
    /// main database (records of a committed snapshot never change).
    pub(crate) snap: Option<(u64, crate::format::meta::DbRecord)>,
}

impl Env {
    /// Key and duplicate comparators of `db` with record flags `flags`.
    #[inline]
    pub(crate) fn comparators(
        &self,
        db: Database,
        flags: u16,
    ) -> (crate::format::cmp::CmpFn, Option<crate::format::cmp::CmpFn>) {
        let mut k = crate::format::cmp::for_flags(flags);
        let mut d = (flags & crate::format::flags::DUPSORT != 0)
            .then(|| crate::format::cmp::dup_for_flags(flags));
        // Only take the registry lock when some database has a user comparator.
        if self.custom_cmp.load(Ordering::Relaxed) && db.0 >= 1 {
            if let Some(info) = self.dbis.read().unwrap().get(db.0 as usize) {
                if let Some(c) = info.cmp {
                    k = c;
                }
                if let (Some(c), Some(_)) = (info.dcmp, d) {
                    d = Some(c);
                }
            }
        }
        (k, d)
    }

    /// Order the keys of `db` with `cmp` instead of the comparator its flags
    /// select (`mdb_set_compare`). Like LMDB, the comparator is not stored in
    /// the file: every process must set the same one before using `db`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, Txn, WriteFlags};
    /// fn by_len(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    ///     a.len().cmp(&b.len()).then(a.cmp(b))
    /// }
    /// let env = Env::open(dir.path())?;
    /// env.set_compare(Database::MAIN, by_len)?;
    /// let mut w = env.write_txn()?;
    /// for k in [&b"ccc"[..], b"a", b"bb"] {
    ///     w.put(Database::MAIN, k, b"", WriteFlags::EMPTY)?;
    /// }
    /// let keys: Vec<&[u8]> = w.cursor(Database::MAIN)?.iter().map(|kv| kv.unwrap().0).collect();
    /// assert_eq!(keys, [&b"a"[..], b"bb", b"ccc"]);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_compare(&self, db: Database, cmp: crate::format::cmp::RustCmp) -> Result<()> {
        self.set_cmp(db, Some(crate::format::cmp::CmpFn::rust(cmp)), None)
    }

    /// Order the duplicate values of DUPSORT `db` with `cmp`
    /// (`mdb_set_dupsort`). Like [`Env::set_compare`], not stored in the
    /// file: set it before each use of `db`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn, WriteFlags};
    /// fn newest_first(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    ///     b.cmp(a)
    /// }
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let log = w.create_db("log", DbFlags::DUP_SORT)?;
    /// env.set_dupsort(log, newest_first)?;
    /// for v in [b"2024", b"2026", b"2025"] {
    ///     w.put(log, b"events", v, WriteFlags::EMPTY)?;
    /// }
    /// assert_eq!(w.get(log, b"events")?, Some(&b"2026"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_dupsort(&self, db: Database, cmp: crate::format::cmp::RustCmp) -> Result<()> {
        self.set_cmp(db, None, Some(crate::format::cmp::CmpFn::rust(cmp)))
    }

    /// Set key (`dup == false`) or duplicate comparator of `db` to any
    /// [`crate::CmpFn`], including C callbacks (the C ABI uses this).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CmpFn, Database, Env, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// env.set_comparator(Database::MAIN, CmpFn::rust(|a, b| b.cmp(a)), false)?;
    /// let mut w = env.write_txn()?;
    /// for k in [b"a", b"c", b"b"] {
    ///     w.put(Database::MAIN, k, b"", WriteFlags::EMPTY)?;
    /// }
    /// let first = w.cursor(Database::MAIN)?.first()?.unwrap().0;
    /// assert_eq!(first, b"c");
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn set_comparator(
        &self,
        db: Database,
        cmp: crate::format::cmp::CmpFn,
        dup: bool,
    ) -> Result<()> {
        if dup {
            self.set_cmp(db, None, Some(cmp))
        } else {
            self.set_cmp(db, Some(cmp), None)
        }
    }

    fn set_cmp(
        &self,
        db: Database,
        cmp: Option<crate::format::cmp::CmpFn>,
        dcmp: Option<crate::format::cmp::CmpFn>,
    ) -> Result<()> {
        let mut t = self.dbis.write().unwrap();
        let info = t
            .get_mut(db.0 as usize)
            .filter(|_| db.0 >= 1)
            .ok_or(ErrorKind::Misuse(Misuse::UnknownHandle))?;
        if cmp.is_some() {
            info.cmp = cmp;
        }
        if dcmp.is_some() {
            info.dcmp = dcmp;
        }
        self.custom_cmp.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// How an error names database `db`.
    pub(super) fn db_label(&self, db: Database) -> DbLabel {
        match db.0 {
            0 => DbLabel::Free,
            1 => DbLabel::Main,
            _ => match self.dbis.read().unwrap().get(db.0 as usize) {
                Some(DbiInfo { name: Some(n), .. }) => DbLabel::Named(n.clone()),
                _ => DbLabel::Handle(db.0),
            },
        }
    }

    pub(crate) fn dbi_info(&self, db: Database) -> Result<DbiInfo> {
        let t = self.dbis.read().unwrap();
        t.get(db.0 as usize)
            .cloned()
            .ok_or(Misuse::UnknownHandle.into())
    }

    /// Find or register the handle for a named database, opened by the write
    /// transaction at nesting level `level`, or by a read transaction (`None`).
    pub(crate) fn register_dbi(
        &self,
        name: &[u8],
        flags: u16,
        level: Option<u32>,
    ) -> Result<Database> {
        let mut t = self.dbis.write().unwrap();
        // A reader cannot use the writer's uncommitted handle: it gets its own.
        let usable = |d: &DbiInfo| level.is_some() || d.pending.is_none();
        if let Some(i) = t
            .iter()
            .position(|d| d.name.as_deref() == Some(name) && usable(d))
        {
            t[i].flags = flags;
            return Ok(Database(i as u32, self.tag()));
        }
        let info = DbiInfo {
            name: Some(name.to_vec()),
            flags,
            cmp: None,
            dcmp: None,
            pending: level,
            snap: None,
        };
        // Reuse a closed slot first.
        if let Some(i) = t.iter().skip(2).position(|d| d.name.is_none()) {
            t[i + 2] = info;
            return Ok(Database((i + 2) as u32, self.tag()));
        }
        if t.len() >= 2 + self.max_dbs as usize {
            return Err(ErrorKind::DbsFull.into());
        }
        t.push(info);
        Ok(Database((t.len() - 1) as u32, self.tag()))
    }

    /// The write transaction at nesting level `level` ends: the handles it
    /// (or its children) opened pass to its parent, or to every transaction
    /// at level 0, if `keep`; otherwise they are closed.
    pub(crate) fn end_new_dbis(&self, level: u32, keep: bool) {
        let mine = |d: &DbiInfo| d.pending.is_some_and(|l| l >= level);
        if !self.dbis.read().unwrap().iter().any(mine) {
            return;
        }
        for d in self.dbis.write().unwrap().iter_mut().filter(|d| mine(d)) {
            if keep {
                d.pending = level.checked_sub(1);
            } else {
                d.name = None;
                d.pending = None;
                d.snap = None;
            }
        }
    }

    /// Close a named database handle so its slot can be reused (`mdb_dbi_close`).
    /// The handle must not be used by any live transaction afterwards.
    /// Only needed by programs that open many databases in turn; handles
    /// are otherwise kept for the environment's life.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let a = w.create_db("a", DbFlags::EMPTY)?;
    /// w.commit()?;
    /// env.close_db(a); // its slot is free again
    /// let mut w = env.write_txn()?;
    /// w.create_db("b", DbFlags::EMPTY)?; // fits in max_dbs(1)
    /// w.commit()?;
    /// let r = env.read_txn()?;
    /// assert_eq!(r.stat(r.open_db("b")?)?.entries, 0);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn close_db(&self, db: Database) {
        if db.0 >= 2 {
            let mut t = self.dbis.write().unwrap();
            if let Some(d) = t.get_mut(db.0 as usize) {
                d.name = None;
                d.snap = None;
            }
        }
    }
}
