//! Structural checker for LMDB 0.9 data files (lmdb-format.md §1-8).
//!
//! The checker reads the raw bytes of a data file (in memory, or page by
//! page from a map of the file or of an open environment's snapshot,
//! `source.rs`, in a resident set bounded whatever the file's size) and
//! trusts nothing in them:
//! every offset, length and page number is bounds-checked, every page may be
//! visited only once (so a cycle or a shared page is reported instead of being
//! followed), and trees are walked with an explicit stack limited to 32
//! levels. It never panics, whatever the input.
//!
//! What is verified:
//! * both meta pages (META flag, magic, version, pgno field, page size) and
//!   the choice of the current one (larger txnid, meta 0 on a tie); the
//!   fields a commit writes as open judges them (`Meta::implausible`: a
//!   problem for the newer meta, a warning for the older one, which open
//!   passes over as LMDB does), and a map size no process can map;
//! * every tree of the current snapshot: FREE, MAIN, each named DB, each
//!   DUPSORT sub-DB and each sub-page; page headers, page types and depths,
//!   `lower`/`upper`, node bounds and overlaps, key order inside and across
//!   pages under the DB's comparator, branch separators, overflow runs;
//! * free-DB records (count, strictly descending page numbers in range);
//! * the accounting invariant: each page in `2..=last_pgno` is used by exactly
//!   one tree page, overflow run page or free-list entry;
//! * the recounted depth/branch/leaf/overflow/entries of each tree against the
//!   stored record;
//! * what LMDB would misread: named DBs beside a MAIN with INTEGERKEY (LMDB
//!   opens none of them), a DUPFIXED dup sub-DB record with `md_pad` 0 (LMDB
//!   reads its values as empty).
//!
//! Warnings (not failures) name what LMDB never writes but that loses no
//! data: node-area bytes of a page that belong to no node.

mod free;
mod meta;
mod node;
mod overflow;
mod pages;
mod report;
mod source;
mod subpage;
#[cfg(test)]
mod tests;
mod tree;

use std::path::Path;

use crate::env::Env;
use crate::error::{ErrorKind, Result};
use crate::format::cmp::Order;
use crate::format::flags::{INTEGERKEY, PERSISTENT as DB_FLAGS};
use crate::mmap::Map;
use node::{Kind, TreeSpec};
use pages::Checker;
pub use report::{CheckProgress, DbReport, Problem, Report};
use source::Source;

/// Check the file at `path` (a data file, not a directory).
/// Check a copy ([`Env::copy_to_path`](crate::Env::copy_to_path)), or
/// [`check_env`], rather than a file a writer is changing meanwhile.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// w.commit()?;
/// let report = mdb::check::check_file(&dir.path().join("data.mdb"))?;
/// for p in &report.problems {
///     eprintln!("{p}");
/// }
/// assert!(report.is_ok());
/// # Ok::<(), mdb::Error>(())
/// ```
pub fn check_file(path: &Path) -> Result<Report> {
    check_file_with(path, &mut |_| {})
}

/// [`check_file`], telling `progress` how far it has got. A regular file is
/// mapped and read page by page, its pages given back to the kernel as the
/// check goes, so a file larger than memory is checked in a resident set of
/// a few dozen MiB and 24 bytes per page; anything else is read into memory.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let env = mdb::Env::open(dir.path())?;
/// let mut calls = 0;
/// let report = mdb::check::check_file_with(&dir.path().join("data.mdb"), &mut |p| {
///     assert!(p.pages_done <= p.pages_total);
///     calls += 1;
/// })?;
/// assert!(report.is_ok() && calls >= 1);
/// # Ok::<(), mdb::Error>(())
/// ```
pub fn check_file_with(path: &Path, progress: &mut dyn FnMut(CheckProgress)) -> Result<Report> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    let len = usize::try_from(meta.len()).map_err(|_| ErrorKind::Os(libc::EFBIG))?;
    if !meta.is_file() || len == 0 {
        let bytes = std::fs::read(path)?;
        return Ok(run(Source::bytes(&bytes), Some(progress)));
    }
    let map = Map::new(&file, len, false, None)?;
    let src = Source::map(&map, len, &[]).ok_or(ErrorKind::PageNotFound)?;
    Ok(run(src, Some(progress)))
}

/// Check the current snapshot of an open environment, read through a read
/// transaction (its pages stay as they are while writers commit) and
/// straight from the map, which it gives back to the kernel as it goes, as
/// [`check_file_with`] does. The meta pages are those of the snapshot, as
/// [`Env::copy_to_path`](crate::Env::copy_to_path) writes them: the report
/// is the one a check of a plain copy would give.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// w.commit()?;
/// let report = mdb::check::check_env(&env, &mut |_| {})?;
/// assert!(report.is_ok());
/// assert_eq!((report.meta_txnid, report.dbs[1].entries), (1, 1));
/// # Ok::<(), mdb::Error>(())
/// ```
pub fn check_env(env: &Env, progress: &mut dyn FnMut(CheckProgress)) -> Result<Report> {
    let snap = env.copy_snapshot()?;
    let end =
        usize::try_from(snap.end(env.page_size() as u64)).map_err(|_| ErrorKind::MapResized)?;
    let map = env.map_for(&snap.meta)?;
    let src = Source::map(map, end, &snap.metas).ok_or(ErrorKind::PageNotFound)?;
    Ok(run(src, Some(progress)))
}

/// Check a whole data file given as bytes (the file content). The content may
/// be shorter than `(last_pgno + 1) * psize`: referenced pages past the end are
/// reported, free pages past the end are fine. Never panics.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// w.commit()?;
/// let mut bytes = std::fs::read(dir.path().join("data.mdb"))?;
/// assert!(mdb::check::check_bytes(&bytes).is_ok());
/// let ps = env.page_size();
/// bytes[2 * ps + 10] ^= 0xff; // the flags of page 2, MAIN's leaf
/// let report = mdb::check::check_bytes(&bytes);
/// assert!(!report.is_ok());
/// assert_eq!(report.problems[0].pgno, Some(2));
/// # Ok::<(), mdb::Error>(())
/// ```
pub fn check_bytes(file: &[u8]) -> Report {
    run(Source::bytes(file), None)
}

/// Check the image in `src`.
fn run<'a>(src: Source<'a>, progress: Option<&'a mut dyn FnMut(CheckProgress)>) -> Report {
    let mut rep = Report {
        page_size: 0,
        meta_txnid: 0,
        last_pgno: 0,
        meta_used: 0,
        dbs: Vec::new(),
        free_pages: 0,
        file_pages: 0,
        problems: Vec::new(),
        warnings: Vec::new(),
    };
    let Some((used, meta)) = meta::pick(&src, &mut rep) else {
        return rep;
    };
    let found = (
        std::mem::take(&mut rep.problems),
        std::mem::take(&mut rep.warnings),
    );
    let ps = rep.page_size as usize;
    let mut ck = Checker::new(src, ps, (meta.last_pgno, meta.txnid), found, progress);
    let meta_pg = u64::from(used);

    // FREE
    let free_spec = TreeSpec {
        name: "FREE".to_string(),
        kind: Kind::Free,
        flags: 0,
        key_cmp: Order::Integer,
        leaf2: false,
        fixed_size: 0,
        rec_pgno: meta_pg,
    };
    let fc = ck.walk_tree(&free_spec, &meta.free);
    ck.tell_progress(false);
    rep.dbs.push(fc.report("FREE", meta.free.flags));

    // MAIN
    if meta.main.flags & !DB_FLAGS != 0 {
        ck.problem(
            Some(meta_pg),
            "MAIN",
            format!("MAIN record has unknown flags 0x{:04x}", meta.main.flags),
        );
    }
    let main_spec = TreeSpec {
        name: "MAIN".to_string(),
        kind: Kind::Main,
        flags: meta.main.flags,
        key_cmp: Order::of_keys(meta.main.flags),
        leaf2: false,
        fixed_size: 0,
        rec_pgno: meta_pg,
    };
    let mc = ck.walk_tree(&main_spec, &meta.main);
    rep.dbs.push(mc.report("MAIN", meta.main.flags));
    if meta.main.flags & INTEGERKEY != 0 {
        if let Some((first, _, _)) = ck.named.first() {
            // LMDB's mdb_dbi_open refuses any name then (MDB_NOTFOUND), so
            // the named DBs are out of LMDB's reach.
            let msg = format!(
                "MAIN has INTEGERKEY, with which LMDB opens no named DB: {} named DB(s) here ({}...) are unreachable",
                ck.named.len(),
                String::from_utf8_lossy(first)
            );
            ck.problem(Some(meta_pg), "MAIN", msg);
        }
    }

    // Named DBs, in MAIN key order.
    let named = std::mem::take(&mut ck.named);
    for (name, rec, pg) in named {
        let name = String::from_utf8_lossy(&name).into_owned();
        if rec.flags & !DB_FLAGS != 0 {
            ck.problem(
                Some(pg),
                &name,
                format!("DB record has unknown flags 0x{:04x}", rec.flags),
            );
        }
        let spec = TreeSpec {
            name: name.clone(),
            kind: Kind::Named,
            flags: rec.flags,
            key_cmp: Order::of_keys(rec.flags),
            leaf2: false,
            fixed_size: 0,
            rec_pgno: pg,
        };
        let c = ck.walk_tree(&spec, &rec);
        rep.dbs.push(c.report(&name, rec.flags));
    }

    ck.claim_free_entries();
    ck.find_orphans();
    ck.tell_progress(true);
    rep.free_pages = ck.free_pages;
    if ck.dropped > 0 {
        ck.problems.push(Problem {
            pgno: None,
            db: String::new(),
            message: format!("{} further problems not listed", ck.dropped),
        });
    }
    rep.problems = ck.problems;
    rep.warnings = ck.warnings;
    rep
}

// ---------------------------------------------------------------------------
