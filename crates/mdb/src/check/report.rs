//! What a check finds: the problems, the warnings and the recounted figures
//! of each database, and how they are worded.

use std::fmt;

/// Problems (and, separately, warnings) listed at most; the rest are counted.
pub(super) const MAX_PROBLEMS: usize = 10_000;

/// One structural problem found in a data file.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// w.commit()?;
/// let bytes = std::fs::read(dir.path().join("data.mdb"))?;
/// let cut = &bytes[..2 * env.page_size()]; // the meta pages only
/// let p = &mdb::check::check_bytes(cut).problems[0];
/// assert_eq!((p.pgno, p.db.as_str()), (Some(2), "MAIN"));
/// assert!(p.to_string().starts_with("page 2 [MAIN]: "));
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The page the problem was found on: the faulty page itself, the page
    /// holding a faulty reference or record (a meta page for the FREE and MAIN
    /// records), or the first page of an orphaned range. `None` only when no
    /// page applies (e.g. a file too short to hold a meta page).
    pub pgno: Option<u64>,
    /// The database concerned: `"FREE"`, `"MAIN"`, a named DB's name (lossy
    /// UTF-8), `"<db>/dup:<hexkey>"` for a DUPSORT sub-DB, or an empty string
    /// for file-level problems (meta pages, orphaned pages).
    pub db: String,
    /// What is wrong, in words.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pgno {
            Some(p) => write!(f, "page {p}")?,
            None => f.write_str("file")?,
        }
        if !self.db.is_empty() {
            write!(f, " [{}]", self.db)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Recounted statistics of one database (FREE, MAIN or a named DB).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{DbFlags, EnvOptions, WriteFlags};
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let tags = w.create_db("tags", DbFlags::DUP_SORT)?;
/// for v in [b"a", b"b", b"c"] {
///     w.put(tags, b"k", v, WriteFlags::EMPTY)?;
/// }
/// w.commit()?;
/// let report = mdb::check::check_file(&dir.path().join("data.mdb"))?;
/// let names: Vec<&str> = report.dbs.iter().map(|d| d.name.as_str()).collect();
/// assert_eq!(names, ["FREE", "MAIN", "tags"]);
/// let tags = &report.dbs[2];
/// assert_eq!((tags.entries, tags.flags), (3, DbFlags::DUP_SORT.bits()));
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbReport {
    /// `"FREE"`, `"MAIN"` or the named DB's name (lossy UTF-8).
    pub name: String,
    /// The flags stored in the DB's record.
    pub flags: u16,
    /// Recounted tree height (0 = empty).
    pub depth: u16,
    /// Recounted branch pages of this tree (sub-DB pages not included).
    pub branch_pages: u64,
    /// Recounted leaf pages, LEAF2 included (sub-DB pages not included).
    pub leaf_pages: u64,
    /// Recounted overflow pages (sum of the run lengths in the run headers).
    pub overflow_pages: u64,
    /// Recounted data items; for DUPSORT DBs every duplicate counts.
    pub entries: u64,
}

/// The outcome of checking one data file.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// w.commit()?;
/// let report = mdb::check::check_file(&dir.path().join("data.mdb"))?;
/// assert!(report.is_ok() && report.warnings.is_empty());
/// assert_eq!(report.meta_txnid, 1);
/// assert_eq!(report.page_size as usize, env.page_size());
/// assert_eq!(report.dbs[1].entries, 1); // MAIN
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Page size from meta page 0 (0 if it could not be read or was invalid).
    pub page_size: u32,
    /// Transaction id of the meta page in use.
    pub meta_txnid: u64,
    /// `last_pg` of the meta page in use.
    pub last_pgno: u64,
    /// Which meta page is in use: 0 or 1.
    pub meta_used: u8,
    /// FREE, MAIN, then every named DB in key order, with recounted figures.
    pub dbs: Vec<DbReport>,
    /// Sum of the page counts of all free-DB records.
    pub free_pages: u64,
    /// Pages the checked bytes hold: the file's length (or the snapshot's,
    /// checked through an open environment) in pages; 0 without a page size.
    pub file_pages: u64,
    /// Everything found wrong; empty for a sound file.
    pub problems: Vec<Problem>,
    /// Oddities LMDB never writes but that lose no data and break no reader
    /// (space wasted inside a page). They do not make the report fail.
    pub warnings: Vec<Problem>,
}

impl Report {
    /// True when no problem was found (warnings do not count).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// assert!(mdb::check::check_file(&dir.path().join("data.mdb"))?.is_ok());
    /// assert!(!mdb::check::check_bytes(b"not a database").is_ok());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Full lower-case hex of `b`.
pub(super) fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// Hex of `b` shortened for messages.
pub(super) fn show(b: &[u8]) -> String {
    if b.len() <= 24 {
        format!("[{}]", hex(b))
    } else {
        format!("[{}...({} bytes)]", hex(&b[..24]), b.len())
    }
}

/// How far a check has got, passed to the progress callback of
/// [`check_file_with`](super::check_file_with) and [`check_env`](super::check_env): pages accounted for (the meta
/// pages, tree and overflow pages read, free-list entries) of the pages the
/// snapshot has (`last_pgno + 1`, at most the file's).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::check::CheckProgress;
/// let env = mdb::Env::open(dir.path())?;
/// let mut last = None;
/// let report = mdb::check::check_env(&env, &mut |p: CheckProgress| last = Some(p))?;
/// assert!(report.is_ok());
/// let last = last.unwrap();
/// assert_eq!(last.pages_done, last.pages_total);
/// assert_eq!(last.pages_total, report.last_pgno + 1);
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckProgress {
    /// Pages accounted for so far.
    pub pages_done: u64,
    /// Pages to account for.
    pub pages_total: u64,
}

/// A tree's figures as the walk recounts them.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    pub(super) depth: u16,
    pub(super) branch: u64,
    pub(super) leaf: u64,
    pub(super) overflow: u64,
    pub(super) entries: u64,
}

impl Counts {
    pub(super) fn report(&self, name: &str, flags: u16) -> DbReport {
        DbReport {
            name: name.to_string(),
            flags,
            depth: self.depth,
            branch_pages: self.branch,
            leaf_pages: self.leaf,
            overflow_pages: self.overflow,
            entries: self.entries,
        }
    }
}
