//! `mdb check`: a full structural check of a data file (no LMDB counterpart).

use crate::progress::{Progress, Unit};
use crate::{errln, Invocation};
use mdb::check::{CheckProgress, Report};
use mdb::{EnvFlags, EnvOptions};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const SYNOPSIS: &str = "[-V] [-n] [--json] dbpath";

const HELP: &str = "\
Usage: mdb check [-V] [-n] [--json] dbpath

Check the structure of an LMDB data file without trusting any of it: both
meta pages and the choice between them; every tree (free list, main database,
named databases, duplicate sub-databases and sub-pages) page by page, with
key order under each database's comparator inside and across pages, branch
separators, equal leaf depth and overflow runs; free-list records; that each
page from 2 to the last one is used exactly once, by one tree or one
free-list entry (no cycles, no page in two places, no orphans); and that the
statistics stored for each database equal a recount; and what LMDB would
misread (named databases beside a main database with INTEGERKEY, a DUPFIXED
duplicate sub-database whose record gives value size 0). Each problem is
named with the page it was found on. Warnings name what LMDB never writes
but that loses no data (unused bytes between the nodes of a page); they do
not fail the check. A corrupt file never makes the check crash or loop.

dbpath is an environment directory, or with -n (or if it is a file) the data
file itself. If the environment opens, the check reads one consistent
snapshot through a read transaction, so it can run while writers are busy;
if it does not (for instance because a meta page is damaged), the file is
read as it is.

Options:
  -V        print the version and exit
  -n        dbpath is the data file itself, not a directory (MDB_NOSUBDIR)
  --json    print the report as one JSON object instead of text

Exit status: 0 if no problem was found (warnings or not), 1 if problems
were found, 2 if the check could not be run (bad usage, unreadable file).
";

/// Where the checked bytes came from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A read-transaction snapshot of the open environment.
    Snapshot,
    /// The data file read as it is.
    File,
}

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let mut args = args;
    let [json] = crate::take_long(&mut args, ["--json"]);
    let (nosubdir, dbpath) = match crate::nosubdir_and_path(prog, args, SYNOPSIS, HELP, 2) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let path = Path::new(&dbpath);
    let is_file = nosubdir
        || std::fs::metadata(path)
            .map(|m| !m.is_dir())
            .unwrap_or(false);
    let data_path: PathBuf = if is_file {
        path.to_path_buf()
    } else {
        path.join("data.mdb")
    };

    let mut bar = Progress::new("checking", 0, Unit::Items("pages"));
    let mut progress = |p: CheckProgress| {
        bar.set_total(p.pages_total);
        bar.update(p.pages_done);
    };
    let checked = match check_snapshot(path, is_file, &mut progress) {
        Some(r) => Ok((r, Source::Snapshot)),
        None => mdb::check::check_file_with(&data_path, &mut progress).map(|r| (r, Source::File)),
    };
    bar.finish();
    let (report, source) = match checked {
        Ok(v) => v,
        Err(e) => {
            let text = mdb::error::strerror(e.code());
            errln(&[
                prog,
                b": ",
                data_path.as_os_str().as_bytes(),
                b": ",
                text.as_bytes(),
            ]);
            return 2;
        }
    };
    let file_pages = report.file_pages;
    let text = if json {
        to_json(&data_path, source, file_pages, &report)
    } else {
        to_text(&data_path, source, file_pages, &report)
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    if report.is_ok() {
        0
    } else {
        1
    }
}

/// The check of the newest snapshot of the environment at `path`, read
/// through a read transaction, or `None` if the environment does not open.
fn check_snapshot(
    path: &Path,
    is_file: bool,
    progress: &mut dyn FnMut(CheckProgress),
) -> Option<Report> {
    let data = if is_file {
        path.to_path_buf()
    } else {
        path.join("data.mdb")
    };
    if !metas_plausible(&data) {
        return None;
    }
    let mut flags = EnvFlags::READ_ONLY;
    if is_file {
        flags = flags | EnvFlags::NO_SUB_DIR;
    }
    let env = EnvOptions::new()
        .auto_grow(false)
        .flags(flags)
        .mode(0o664)
        .open(path)
        .ok()?;
    mdb::check::check_env(&env, progress).ok()
}

/// Whether both meta pages decode and their sizes are ones the engine can
/// open (a damaged `last_pgno` can make the map size overflow): otherwise
/// the file is checked as it is, without opening the environment.
fn metas_plausible(data: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(f) = std::fs::File::open(data) else {
        return false;
    };
    let meta_at = |off: u64| {
        let mut b = [0u8; mdb::meta::META_LEN];
        f.read_exact_at(&mut b, off).ok()?;
        mdb::meta::Meta::decode(&b).ok()
    };
    let Some(m0) = meta_at(0) else {
        return false;
    };
    let Some(m1) = meta_at(u64::from(m0.psize())) else {
        return false;
    };
    [m0, m1].iter().all(|m| {
        m.last_pgno
            .checked_add(1)
            .and_then(|n| n.checked_mul(u64::from(m.psize())))
            .is_some_and(|n| n <= 1 << 46)
    })
}

fn to_text(path: &Path, source: Source, file_pages: u64, r: &Report) -> String {
    let mut s = String::new();
    s.push_str(&format!("Checking {}\n", path.display()));
    s.push_str(&format!(
        "  {}: txn {}, meta page {}, page size {}, last page {}, {} pages read\n",
        match source {
            Source::Snapshot => "snapshot",
            Source::File => "file as it is",
        },
        r.meta_txnid,
        r.meta_used,
        r.page_size,
        r.last_pgno,
        file_pages
    ));
    if !r.dbs.is_empty() {
        let w = r
            .dbs
            .iter()
            .map(|d| d.name.chars().count())
            .max()
            .unwrap_or(0)
            .max(8);
        s.push_str(&format!(
            "  {:<w$}  {:>5}  {:>10}  {:>10}  {:>10}  {:>12}\n",
            "database", "depth", "branch", "leaf", "overflow", "entries"
        ));
        for d in &r.dbs {
            let name: String = d
                .name
                .chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            s.push_str(&format!(
                "  {:<w$}  {:>5}  {:>10}  {:>10}  {:>10}  {:>12}\n",
                name, d.depth, d.branch_pages, d.leaf_pages, d.overflow_pages, d.entries
            ));
        }
        s.push_str(&format!("  free pages: {}\n", r.free_pages));
    }
    let line = |p: &mdb::check::Problem| -> String {
        p.to_string()
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect()
    };
    for p in &r.problems {
        s.push_str(&line(p));
        s.push('\n');
    }
    for p in &r.warnings {
        s.push_str("warning: ");
        s.push_str(&line(p));
        s.push('\n');
    }
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let (n, w) = (r.problems.len(), r.warnings.len());
    s.push_str(&match (n, w) {
        (0, 0) => "OK: no problems found\n".to_string(),
        (0, w) => format!("OK: no problems found ({})\n", plural(w, "warning")),
        (n, 0) => format!("{} found\n", plural(n, "problem")),
        (n, w) => format!(
            "{} and {} found\n",
            plural(n, "problem"),
            plural(w, "warning")
        ),
    });
    s
}

/// `s` as a JSON string literal.
pub(crate) fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn to_json(path: &Path, source: Source, file_pages: u64, r: &Report) -> String {
    let mut s = String::from("{");
    s.push_str(&format!("\"path\":{},", json_str(&path.to_string_lossy())));
    s.push_str(&format!(
        "\"source\":{},",
        json_str(match source {
            Source::Snapshot => "snapshot",
            Source::File => "file",
        })
    ));
    s.push_str(&format!("\"ok\":{},", r.is_ok()));
    s.push_str(&format!(
        "\"page_size\":{},\"meta_page\":{},\"txnid\":{},\"last_pgno\":{},\"pages_read\":{},\"free_pages\":{},",
        r.page_size, r.meta_used, r.meta_txnid, r.last_pgno, file_pages, r.free_pages
    ));
    s.push_str("\"dbs\":[");
    for (i, d) in r.dbs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            "{{\"name\":{},\"flags\":{},\"depth\":{},\"branch_pages\":{},\"leaf_pages\":{},\"overflow_pages\":{},\"entries\":{}}}",
            json_str(&d.name),
            d.flags,
            d.depth,
            d.branch_pages,
            d.leaf_pages,
            d.overflow_pages,
            d.entries
        ));
    }
    for (i, (key, list)) in [("problems", &r.problems), ("warnings", &r.warnings)]
        .into_iter()
        .enumerate()
    {
        s.push_str(if i == 0 { "]," } else { "," });
        s.push_str(&format!("{}:[", json_str(key)));
        for (j, p) in list.iter().enumerate() {
            if j > 0 {
                s.push(',');
            }
            let page = match p.pgno {
                Some(n) => n.to_string(),
                None => "null".to_string(),
            };
            s.push_str(&format!(
                "{{\"page\":{},\"db\":{},\"message\":{}}}",
                page,
                json_str(&p.db),
                json_str(&p.message)
            ));
        }
        s.push(']');
    }
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes() {
        assert_eq!(json_str("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\u0001é\"");
    }
}
