//! `mdb stat` / `mdb_stat`: environment, reader, free-list and database statistics.

use crate::getopt::{Getopt, Opt};
use crate::{lib_err, usage, Invocation};
use mdb::{Database, Env, EnvFlags, EnvOptions, RoTxn, Stat, Txn};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

const SYNOPSIS: &str = "[-V] [-n] [-e] [-r[r]] [-f[f[f]]] [-a|-s subdb] dbpath";

const HELP: &str = "\
Usage: mdb stat [-V] [-n] [-e] [-r[r]] [-f[f[f]]] [-a|-s subdb] dbpath

Print statistics of an LMDB environment (same output as mdb_stat).

Options:
  -V        print the version and exit
  -n        dbpath is the data file itself, not a directory (MDB_NOSUBDIR)
  -e        show environment information
  -f        show free-list statistics; -ff also one line per free-list record,
            -fff also the free pages
  -r        show the reader table; -rr also clear stale readers and show it again
  -a        show the main database and every named database
  -s NAME   show the named database NAME instead of the main database

  --json    (mdb stat only) print everything -efa and -r would show, or with
            -s NAME the environment, free list and that database, as one
            JSON object; the other options are then ignored

Exit status: 0 on success, 1 on error. As in LMDB, -r or -rr without -a, -s
or -f always exits 1 after printing the reader table.
";

#[derive(Default)]
struct Opts {
    all: bool,
    env_info: bool,
    free: u32,
    readers: u32,
    no_subdir: bool,
    sub: Option<OsString>,
    json: bool,
}

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, args: Vec<OsString>) -> i32 {
    crate::default_sigpipe();
    let prog = &inv.prog[..];
    let mut o = Opts::default();
    // `mdb stat --json` (not in the LMDB-named form).
    let mut args = args;
    if inv.long_help {
        [o.json] = crate::take_long(&mut args, ["--json"]);
    }
    let g = Getopt::new(args, "Vaefnrs:").with_long_help(inv.long_help);
    let mut g = crate::ToolOpts::new(g, prog, (SYNOPSIS, HELP), 1, true);
    for opt in &mut g {
        match opt {
            Opt::Flag(b'a') => {
                if o.sub.is_some() {
                    usage(prog, SYNOPSIS);
                    return 1;
                }
                o.all = true;
            }
            Opt::Flag(b'e') => o.env_info = true,
            Opt::Flag(b'f') => o.free += 1,
            Opt::Flag(b'n') => o.no_subdir = true,
            Opt::Flag(b'r') => o.readers += 1,
            Opt::Arg(b's', v) => {
                if o.all {
                    usage(prog, SYNOPSIS);
                    return 1;
                }
                o.sub = Some(v);
            }
            _ => unreachable!("option string and match disagree"),
        }
    }
    if let Some(code) = g.exit {
        return code;
    }
    let ops = g.operands();
    if ops.len() != 1 {
        usage(prog, SYNOPSIS);
        return 1;
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let rc = if o.json {
        stat_json(&o, &ops[0], &mut out)
    } else {
        stat(&o, &ops[0], &mut out)
    };
    let _ = out.flush();
    rc
}

fn stat(o: &Opts, path: &OsString, out: &mut impl Write) -> i32 {
    let mut eo = EnvOptions::new();
    // LMDB's fixed map, as its tools open it.
    eo.auto_grow(false);
    let mut flags = EnvFlags::READ_ONLY;
    if o.no_subdir {
        flags = flags | EnvFlags::NO_SUB_DIR;
    }
    eo.flags(flags).mode(0o664);
    if o.all || o.sub.is_some() {
        eo.max_dbs(4);
    }
    let env = match eo.open(path) {
        Ok(e) => e,
        Err(e) => {
            lib_err("mdb_env_open", e);
            return 1;
        }
    };

    if o.env_info {
        let (st, info) = match (env.stat(), env.info()) {
            (Ok(s), Ok(i)) => (s, i),
            (Err(e), _) => {
                lib_err("mdb_env_stat", e);
                return 1;
            }
            (_, Err(e)) => {
                lib_err("mdb_env_info", e);
                return 1;
            }
        };
        let addr = if info.map_addr == 0 {
            "(nil)".to_string()
        } else {
            format!("{:#x}", info.map_addr)
        };
        let psize = st.page_size.max(1) as usize;
        let _ = write!(
            out,
            "Environment Info\n  Map address: {}\n  Map size: {}\n  Page size: {}\n  Max pages: {}\n  \
             Number of pages used: {}\n  Last transaction ID: {}\n  Max readers: {}\n  \
             Number of readers used: {}\n",
            addr,
            info.map_size,
            st.page_size,
            info.map_size / psize,
            info.last_pgno + 1,
            info.last_txnid,
            info.max_readers,
            info.num_readers
        );
    }

    if o.readers > 0 {
        let _ = write!(out, "Reader Table Status\n{}", env.reader_list_text());
        if o.readers > 1 {
            let dead = match env.reader_check() {
                Ok(n) => n,
                Err(e) => {
                    lib_err("mdb_reader_check", e);
                    0
                }
            };
            let _ = write!(
                out,
                "  {} stale readers cleared.\n{}",
                dead,
                env.reader_list_text()
            );
        }
        if !(o.sub.is_some() || o.all || o.free > 0) {
            // LMDB returns mdb_reader_list's result here, the (positive)
            // return value of the last fputs: the exit status is 1.
            return 1;
        }
    }

    let txn = match env.read_txn() {
        Ok(t) => t,
        Err(e) => {
            lib_err("mdb_txn_begin", e);
            return 1;
        }
    };

    if o.free > 0 {
        if let Err(rc) = freelist(&txn, o.free, out) {
            return rc;
        }
    }

    let (db, title): (Database, &[u8]) = match &o.sub {
        Some(name) => match txn.open_db(name.as_bytes()) {
            Ok(db) => (db, name.as_bytes()),
            Err(e) => {
                lib_err("mdb_open", e);
                return 1;
            }
        },
        None => (Database::MAIN, b"Main DB"),
    };
    match txn.stat(db) {
        Ok(st) => print_db(out, title, &st),
        Err(e) => {
            lib_err("mdb_stat", e);
            return 1;
        }
    }
    if db != Database::MAIN {
        drop(txn);
        env.close_db(db);
    } else if o.all {
        let names = match named_db_candidates(&txn) {
            Ok(n) => n,
            Err(e) => {
                lib_err("mdb_cursor_get", e);
                return 1;
            }
        };
        let r = for_each_named_db(&env, txn, &names, |txn, db, name| match txn.stat(db) {
            Ok(st) => {
                print_db(out, name, &st);
                Ok(())
            }
            Err(e) => {
                lib_err("mdb_stat", e);
                Err(1)
            }
        });
        if let Err(rc) = r {
            return rc;
        }
    }
    0
}

/// `mdb stat --json`: environment, free list, readers and databases as one
/// JSON object.
fn stat_json(o: &Opts, path: &OsString, out: &mut impl Write) -> i32 {
    use crate::cmd_check::json_str;
    let mut flags = EnvFlags::READ_ONLY;
    if o.no_subdir {
        flags = flags | EnvFlags::NO_SUB_DIR;
    }
    let env = match EnvOptions::new()
        .auto_grow(false)
        .flags(flags)
        .mode(0o664)
        .max_dbs(4)
        .open(path)
    {
        Ok(e) => e,
        Err(e) => {
            lib_err("mdb_env_open", e);
            return 1;
        }
    };
    let info = match env.info() {
        Ok(i) => i,
        Err(e) => {
            lib_err("mdb_env_info", e);
            return 1;
        }
    };
    let txn = match env.read_txn() {
        Ok(t) => t,
        Err(e) => {
            lib_err("mdb_txn_begin", e);
            return 1;
        }
    };
    let stat_obj = |name: Option<&[u8]>, st: &Stat| {
        let n = match name {
            Some(n) => json_str(&String::from_utf8_lossy(n)),
            None => "null".to_string(),
        };
        format!(
            "{{\"name\":{n},\"depth\":{},\"branch_pages\":{},\"leaf_pages\":{},\"overflow_pages\":{},\"entries\":{}}}",
            st.depth, st.branch_pages, st.leaf_pages, st.overflow_pages, st.entries
        )
    };
    let free = match txn.stat(Database::FREE) {
        Ok(s) => s,
        Err(e) => {
            lib_err("mdb_stat", e);
            return 1;
        }
    };
    let mut free_pages: u64 = 0;
    let mut records: u64 = 0;
    match txn.cursor(Database::FREE) {
        Ok(c) => {
            for item in c {
                match item {
                    Ok((_, v)) => {
                        free_pages = free_pages.wrapping_add(le_u64(v));
                        records += 1;
                    }
                    Err(e) => {
                        lib_err("mdb_cursor_get", e);
                        return 1;
                    }
                }
            }
        }
        Err(e) => {
            lib_err("mdb_cursor_open", e);
            return 1;
        }
    }
    let mut dbs: Vec<String> = Vec::new();
    let txn = match &o.sub {
        Some(name) => {
            match txn.open_db(name.as_bytes()).and_then(|db| txn.stat(db)) {
                Ok(st) => dbs.push(stat_obj(Some(name.as_bytes()), &st)),
                Err(e) => {
                    lib_err("mdb_open", e);
                    return 1;
                }
            }
            None
        }
        None => {
            match txn.stat(Database::MAIN) {
                Ok(st) => dbs.push(stat_obj(None, &st)),
                Err(e) => {
                    lib_err("mdb_stat", e);
                    return 1;
                }
            }
            Some(txn)
        }
    };
    if let Some(txn) = txn {
        let names = match named_db_candidates(&txn) {
            Ok(n) => n,
            Err(e) => {
                lib_err("mdb_cursor_get", e);
                return 1;
            }
        };
        let r = for_each_named_db(&env, txn, &names, |txn, db, name| match txn.stat(db) {
            Ok(st) => {
                dbs.push(stat_obj(Some(name), &st));
                Ok(())
            }
            Err(e) => {
                lib_err("mdb_stat", e);
                Err(1)
            }
        });
        if let Err(rc) = r {
            return rc;
        }
    }
    // Other processes' readers (not this tool's own transaction).
    let me = std::process::id();
    let readers: Vec<String> = env
        .readers()
        .iter()
        .filter(|r| r.pid != me)
        .map(|r| {
            let (t, behind) = match r.txnid {
                Some(t) => (t.to_string(), info.last_txnid.saturating_sub(t).to_string()),
                None => ("null".to_string(), "null".to_string()),
            };
            format!(
                "{{\"pid\":{},\"thread\":\"{:x}\",\"txnid\":{t},\"behind\":{behind}}}",
                r.pid, r.tid
            )
        })
        .collect();
    let psize = free.page_size.max(1) as usize;
    let _ = write!(
        out,
        "{{\"path\":{},\"environment\":{{\"map_address\":{},\"map_size\":{},\"page_size\":{},\"max_pages\":{},\"pages_used\":{},\"last_txnid\":{},\"max_readers\":{},\"num_readers\":{}}},",
        json_str(&path.to_string_lossy()),
        info.map_addr,
        info.map_size,
        free.page_size,
        info.map_size / psize,
        info.last_pgno + 1,
        info.last_txnid,
        info.max_readers,
        info.num_readers
    );
    let _ = write!(
        out,
        "\"freelist\":{{\"depth\":{},\"branch_pages\":{},\"leaf_pages\":{},\"overflow_pages\":{},\"entries\":{},\"records\":{},\"free_pages\":{}}},",
        free.depth, free.branch_pages, free.leaf_pages, free.overflow_pages, free.entries, records, free_pages
    );
    let _ = writeln!(
        out,
        "\"readers\":[{}],\"databases\":[{}]}}",
        readers.join(","),
        dbs.join(",")
    );
    0
}

/// Keys of the main database that may name databases: every key without a
/// NUL byte, in key order (LMDB's `-a` rule).
pub(crate) fn named_db_candidates<T: Txn>(txn: &T) -> mdb::Result<Vec<Vec<u8>>> {
    let mut names = Vec::new();
    for item in txn.cursor(Database::MAIN)? {
        let (k, _) = item?;
        if !k.contains(&0) {
            names.push(k.to_vec());
        }
    }
    Ok(names)
}

/// Call `f` for each of `names` that opens as a named database, then close
/// its handle (so maxdbs 2 or 4 is enough for any number of databases).
/// Names that do not open are skipped silently. All are read in `txn`'s
/// snapshot, as LMDB's tools read them.
pub(crate) fn for_each_named_db<'e, E>(
    env: &'e Env,
    txn: RoTxn<'e>,
    names: &[Vec<u8>],
    mut f: impl FnMut(&RoTxn<'e>, Database, &[u8]) -> Result<(), E>,
) -> Result<(), E> {
    for name in names {
        let Ok(db) = txn.open_db(name) else {
            continue;
        };
        let r = f(&txn, db, name);
        env.close_db(db);
        r?;
    }
    Ok(())
}

fn print_db(out: &mut impl Write, title: &[u8], st: &Stat) {
    let _ = out.write_all(b"Status of ");
    let _ = out.write_all(title);
    let _ = out.write_all(b"\n");
    print_stat(out, st);
}

fn print_stat(out: &mut impl Write, st: &Stat) {
    let _ = write!(
        out,
        "  Tree depth: {}\n  Branch pages: {}\n  Leaf pages: {}\n  Overflow pages: {}\n  Entries: {}\n",
        st.depth, st.branch_pages, st.leaf_pages, st.overflow_pages, st.entries
    );
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    let n = b.len().min(8);
    a[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(a)
}

/// The `-f` block: the free DB's statistics, then (`-ff`) one line per record
/// and (`-fff`) the page runs, then the total of free pages.
fn freelist<T: Txn>(txn: &T, level: u32, out: &mut impl Write) -> Result<(), i32> {
    let _ = out.write_all(b"Freelist Status\n");
    let st = txn.stat(Database::FREE).map_err(|e| {
        lib_err("mdb_stat", e);
        1
    })?;
    print_stat(out, &st);
    let cursor = txn.cursor(Database::FREE).map_err(|e| {
        lib_err("mdb_cursor_open", e);
        1
    })?;
    let mut total: u64 = 0;
    for item in cursor {
        let (k, v) = item.map_err(|e| {
            lib_err("mdb_cursor_get", e);
            1
        })?;
        let count = le_u64(v);
        total = total.wrapping_add(count);
        if level > 1 {
            // The stored list is in descending page order; never read past the value.
            let stored = v.len().saturating_sub(8) / 8;
            let n = (count as usize).min(stored);
            let ids: Vec<u64> = (0..n).map(|i| le_u64(&v[8 + 8 * i..16 + 8 * i])).collect();
            record_line(out, le_u64(k), count, &ids);
            if level > 2 {
                page_runs(out, &ids);
            }
        }
    }
    let _ = writeln!(out, "  Free pages: {}", total);
    Ok(())
}

/// `    Transaction T, N pages, maxspan S[ [bad sequence]]`.
///
/// Walks the list from its end (lowest page first): a page not above the
/// previous one (or not above 1 for the first) marks a bad sequence. The
/// maxspan is the longest run of consecutive pages, found as LMDB finds it:
/// at each position the current best span is only extended, never re-measured.
fn record_line(out: &mut impl Write, txnid: u64, count: u64, ids: &[u64]) {
    let mut bad = "";
    let mut span: usize = 0;
    let mut prev: u64 = 1;
    let mut i = ids.len();
    while i > 0 {
        i -= 1;
        let mut pg = ids[i];
        if pg <= prev {
            bad = " [bad sequence]";
        }
        prev = pg;
        pg = pg.wrapping_add(span as u64);
        while i >= span && ids[i - span] == pg {
            span += 1;
            pg = pg.wrapping_add(1);
        }
    }
    let _ = writeln!(
        out,
        "    Transaction {}, {} pages, maxspan {}{}",
        txnid, count as i64, span, bad
    );
}

/// One line per run of consecutive pages, lowest first: `     %9u` plus
/// `[len]` for runs longer than one page.
fn page_runs(out: &mut impl Write, ids: &[u64]) {
    let mut j = ids.len();
    while j > 0 {
        j -= 1;
        let pg = ids[j];
        let mut span: u64 = 1;
        while j > 0 && ids[j - 1] == pg.wrapping_add(span) {
            j -= 1;
            span += 1;
        }
        if span > 1 {
            let _ = writeln!(out, "     {:9}[{}]", pg, span);
        } else {
            let _ = writeln!(out, "     {:9}", pg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_dbs_are_read_in_one_snapshot() {
        use mdb::{DbFlags, WriteFlags};
        let dir = tempfile::tempdir().unwrap();
        let env = EnvOptions::new().max_dbs(2).open(dir.path()).unwrap();
        for name in ["a", "b", "c"] {
            let mut w = env.write_txn().unwrap();
            let db = w.create_db(name, DbFlags::EMPTY).unwrap();
            w.put(db, b"k", b"v", WriteFlags::EMPTY).unwrap();
            w.commit().unwrap();
            env.close_db(db);
        }
        let names: Vec<Vec<u8>> = vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
        let mut seen = Vec::new();
        let txn = env.read_txn().unwrap();
        let r: Result<(), ()> = for_each_named_db(&env, txn, &names, |txn, db, name| {
            seen.push(txn.stat(db).unwrap().entries);
            if name == b"a" {
                // A writer commits while the tool is between databases.
                let mut w = env.write_txn().unwrap();
                let b = w.open_db("b").unwrap();
                w.put(b, b"k2", b"v", WriteFlags::EMPTY).unwrap();
                w.commit().unwrap();
                env.close_db(b);
            }
            Ok(())
        });
        r.unwrap();
        // As LMDB's tools: every database as of the snapshot the run began with.
        assert_eq!(seen, [1, 1, 1]);
    }

    fn rec(ids: &[u64]) -> String {
        let mut v = Vec::new();
        record_line(&mut v, 7, ids.len() as u64, ids);
        page_runs(&mut v, ids);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn free_records() {
        assert_eq!(
            rec(&[264, 263, 262, 10, 9, 4, 2]),
            "    Transaction 7, 7 pages, maxspan 3\n             2\n             4\n             9[2]\n           262[3]\n"
        );
        assert_eq!(rec(&[]), "    Transaction 7, 0 pages, maxspan 0\n");
        assert!(rec(&[3, 5]).contains("maxspan 1 [bad sequence]"));
        assert!(rec(&[5, 1]).contains("[bad sequence]"));
    }
}
