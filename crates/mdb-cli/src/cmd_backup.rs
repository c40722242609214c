//! `mdb backup` and `mdb restore`: hot full and incremental backups, their
//! verification, and restoring any backup of a chain as a plain LMDB
//! environment.

use crate::progress::{Progress, Unit};
use crate::{errln, print_help, print_version, usage, Invocation};
use mdb::{BackupEntry, BackupError, EnvFlags, EnvOptions, RestorePoint};
use std::ffi::OsString;
use std::path::PathBuf;

const BACKUP_SYNOPSIS: &str =
    "[-V] [-n] [--incremental | --continuous [--interval MS] [--for S]] [--json] dbpath dest | --verify [--json] dest";

const BACKUP_HELP: &str = "\
Usage: mdb backup [-V] [-n] [--incremental] [--json] dbpath dest
       mdb backup [-V] [-n] --continuous [--interval MS] [--for S] [--json] dbpath dest
       mdb backup --verify [--json] dest

Back up a live environment into the directory dest while other processes
keep reading and writing it. The first backup in dest (or any without
--incremental) is full: a plain LMDB data file of one snapshot. With
--incremental, only the pages that changed since the newest backup in dest
are stored (found by page hashes, since LMDB pages carry no transaction
id), so a small change costs a small backup. dest/manifest.json lists the
chain: kind, transaction, file, size, CRC32C and time of every backup (and
carries its own CRC32C). A backup that cannot continue the chain in dest is
refused before anything is written: an environment at an older transaction
than the chain's newest (compacted with mdb copy -c, restored, or another
environment), or at the same one with other contents. A failed backup
leaves no file behind; those a killed one left are removed by the next.
Environments in write-ahead-log mode are backed up the same way; each
backup then also archives the log records since the previous one, so that
a restore reaches any transaction in between, and holds the log (the file
wal/archive-hold; delete it to stop) until the next backup has them.

--continuous (write-ahead-log mode only: refused otherwise, before anything
is written) takes a full backup if dest has none,
then archives the log every MS milliseconds (default 1000) as it grows,
each time the records committed since, until stopped (or for S seconds).

--verify checks a chain end to end without restoring it: the manifest and
its checksum, the order of the chain, and every file's size, CRC32C and
header (a full backup's meta pages: its transaction); the first
problem is reported with the file it concerns.

Options:
  -V              print the version and exit
  -n              dbpath is the data file itself, not a directory (MDB_NOSUBDIR)
  --incremental   store only the pages changed since the newest backup in dest
  --continuous    archive the log as it grows (write-ahead-log mode)
  --interval MS   with --continuous: milliseconds between archives (1000)
  --for S         with --continuous: stop after S seconds
  --verify        check the backup chain in dest instead of backing up
  --json          print the result as JSON (for scripts)

Exit status: 0 on success, 1 on error.
";

const RESTORE_SYNOPSIS: &str = "[-V] [--to-txn N | --to-time T] [--json] dest out";

const RESTORE_HELP: &str = "\
Usage: mdb restore [-V] [--to-txn N | --to-time T] [--json] dest out

Rebuild an environment from the backup chain in dest, in directory out
(created if needed; out/data.mdb must not exist): at the newest backup, at
the newest backup of a transaction at or before N (--to-txn), or at the
newest commit made at or before T (--to-time, seconds since the Unix epoch,
a fraction allowed): in write-ahead-log mode the newest archived commit
stamped at or before T, otherwise the newest backup whose snapshot was
taken at or before T; never a commit made after T. The result is a plain
LMDB 0.9 environment: Debian's mdb_dump and mdb_stat read it. Every file
used is checked against the manifest first, and the result against what
the manifest claims: a missing, truncated or damaged file is an error
naming it, never a shorter or mislabelled restore. A failed restore leaves
nothing in out.

Options:
  -V              print the version and exit
  --to-txn N      restore the newest backup of transaction N or earlier
  --to-time T     restore the newest commit made at T or earlier
  --json          print the result as JSON

Exit status: 0 on success, 1 on error.
";

/// Parsed options.
struct Opts {
    flags: Vec<&'static str>,
    values: Vec<(&'static str, String)>,
    operands: Vec<OsString>,
}

/// Parse `-V`, `-n`, `--help` and the long options in `long` (names ending
/// in `=` take a value).
fn parse(
    prog: &[u8],
    args: Vec<OsString>,
    long: &[&'static str],
    synopsis: &str,
    help: &str,
) -> Result<Opts, i32> {
    let mut o = Opts {
        flags: Vec::new(),
        values: Vec::new(),
        operands: Vec::new(),
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let s = a.to_string_lossy().into_owned();
        if s == "--help" {
            print_help(help);
            return Err(0);
        } else if s == "-V" {
            print_version();
            return Err(0);
        } else if s == "-n" && long.contains(&"-n") {
            o.flags.push("-n");
        } else if let Some(name) = s.strip_prefix("--") {
            let (name, inline) = match name.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (name, None),
            };
            if let Some(f) = long.iter().find(|l| **l == name) {
                o.flags.push(f);
            } else if let Some(f) = long.iter().find(|l| l.strip_suffix('=') == Some(name)) {
                let v = match inline.or_else(|| it.next().map(|v| v.to_string_lossy().into_owned()))
                {
                    Some(v) => v,
                    None => {
                        errln(&[prog, b": --", name.as_bytes(), b" needs a value"]);
                        usage(prog, synopsis);
                        return Err(1);
                    }
                };
                o.values.push((f.trim_end_matches('='), v));
            } else {
                errln(&[prog, b": unknown option ", s.as_bytes()]);
                usage(prog, synopsis);
                return Err(1);
            }
        } else if s.starts_with('-') && s.len() > 1 {
            errln(&[prog, b": unknown option ", s.as_bytes()]);
            usage(prog, synopsis);
            return Err(1);
        } else {
            o.operands.push(a);
        }
    }
    Ok(o)
}

impl Opts {
    fn has(&self, f: &str) -> bool {
        self.flags.contains(&f)
    }
    fn value(&self, f: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| *n == f)
            .map(|(_, v)| v.as_str())
    }
}

/// Report a backup failure (with the file it concerns) on stderr.
fn fail(prog: &[u8], e: &BackupError) -> i32 {
    errln(&[prog, b": ", e.to_string().as_bytes()]);
    1
}

fn entry_json(e: &BackupEntry) -> String {
    serde_json::to_string(e).unwrap_or_default()
}

/// `mdb backup`.
pub(crate) fn run_backup(inv: &Invocation, args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let o = match parse(
        prog,
        args,
        &[
            "-n",
            "incremental",
            "verify",
            "json",
            "continuous",
            "interval=",
            "for=",
        ],
        BACKUP_SYNOPSIS,
        BACKUP_HELP,
    ) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let json = o.has("json");
    if o.has("verify") {
        if o.operands.len() != 1 || o.has("incremental") {
            usage(prog, BACKUP_SYNOPSIS);
            return 1;
        }
        let dest = PathBuf::from(&o.operands[0]);
        return match mdb::verify(&dest) {
            Ok(r) => {
                if json {
                    println!(
                        "{{\"ok\":true,\"backups\":{},\"bytes\":{}}}",
                        r.manifest.backups.len(),
                        r.bytes
                    );
                } else {
                    println!(
                        "{}: {} backups, {} bytes, all files intact",
                        dest.display(),
                        r.manifest.backups.len(),
                        r.bytes
                    );
                }
                0
            }
            Err(e) => {
                if json {
                    println!(
                        "{{\"ok\":false,\"error\":{}}}",
                        serde_json::to_string(&e.to_string()).unwrap_or_default()
                    );
                }
                fail(prog, &e)
            }
        };
    }
    if o.operands.len() != 2 {
        usage(prog, BACKUP_SYNOPSIS);
        return 1;
    }
    let flags = if o.has("-n") {
        EnvFlags::NO_SUB_DIR
    } else {
        EnvFlags::EMPTY
    };
    let env = match EnvOptions::new()
        .auto_grow(false)
        .flags(flags | EnvFlags::READ_ONLY)
        .open(&o.operands[0])
    {
        Ok(e) => e,
        Err(e) => {
            crate::lib_err("mdb_env_open", e);
            return 1;
        }
    };
    let dest = PathBuf::from(&o.operands[1]);
    if o.has("continuous") {
        return continuous(prog, &env, &dest, &o, json);
    }
    let mut bar = Progress::new("backup", 0, Unit::Bytes);
    let mut cb = |done: u64, total: u64| {
        bar.set_total(total);
        bar.update(done);
    };
    let r = env.backup(&dest, o.has("incremental"), Some(&mut cb));
    bar.finish();
    match r {
        Ok(b) => {
            if json {
                println!("{}", entry_json(&b));
            } else {
                println!(
                    "{} {} of transaction {}: {} ({} of {} pages, {} bytes)",
                    kind_name(b.kind),
                    b.seq,
                    b.txnid,
                    dest.join(&b.file).display(),
                    b.pages_written,
                    b.pages,
                    b.bytes
                );
            }
            0
        }
        Err(e) => fail(prog, &e),
    }
}

/// `mdb backup --continuous`: a full backup if `dest` has no chain, then
/// the log archived every interval.
fn continuous(prog: &[u8], env: &mdb::Env, dest: &std::path::Path, o: &Opts, json: bool) -> i32 {
    let num = |name: &str, dflt: u64| -> Option<u64> {
        match o.value(name) {
            None => Some(dflt),
            Some(v) => v.parse().ok(),
        }
    };
    let (Some(interval), Some(limit)) = (num("interval", 1000), num("for", u64::MAX)) else {
        usage(prog, BACKUP_SYNOPSIS);
        return 1;
    };
    let report = |b: &BackupEntry| {
        if json {
            println!("{}", entry_json(b));
        } else {
            println!(
                "{} {} of transaction {}: {}",
                kind_name(b.kind),
                b.seq,
                b.txnid,
                b.file
            );
        }
    };
    if !env.wal_mode() {
        // Before anything is written.
        errln(&[
            prog,
            b": --continuous needs an environment in write-ahead-log mode (MDB_WAL=1): \
              it archives the log",
        ]);
        return 1;
    }
    if !dest.join("manifest.json").exists() {
        match env.backup(dest, false, None) {
            Ok(b) => report(&b),
            Err(e) => return fail(prog, &e),
        }
    }
    let start = std::time::Instant::now();
    loop {
        let left = limit
            .saturating_mul(1000)
            .saturating_sub(start.elapsed().as_millis() as u64);
        std::thread::sleep(std::time::Duration::from_millis(interval.min(left)));
        match env.archive_log(dest) {
            Ok(Some(b)) => report(&b),
            Ok(None) => {}
            Err(e) => return fail(prog, &e),
        }
        if start.elapsed().as_secs() >= limit {
            return 0;
        }
    }
}

/// `SECONDS[.FRACTION]` since the Unix epoch, to the nanosecond.
fn parse_time(v: &str) -> Option<std::time::SystemTime> {
    let (secs, frac) = v.split_once('.').unwrap_or((v, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if secs.is_empty() || !digits(secs) || !digits(frac) || frac.len() > 9 {
        return None;
    }
    let nanos: u32 = format!("{frac:0<9}").parse().ok()?;
    let d = std::time::Duration::new(secs.parse().ok()?, nanos);
    std::time::UNIX_EPOCH.checked_add(d)
}

fn kind_name(k: mdb::BackupKind) -> &'static str {
    match k {
        mdb::BackupKind::Full => "full backup",
        mdb::BackupKind::Incremental => "incremental backup",
        mdb::BackupKind::Log => "log archive",
    }
}

/// `mdb restore`.
pub(crate) fn run_restore(inv: &Invocation, args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let o = match parse(
        prog,
        args,
        &["to-txn=", "to-time=", "json"],
        RESTORE_SYNOPSIS,
        RESTORE_HELP,
    ) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if o.operands.len() != 2 || (o.value("to-txn").is_some() && o.value("to-time").is_some()) {
        usage(prog, RESTORE_SYNOPSIS);
        return 1;
    }
    let num = |name: &str| -> Result<Option<u64>, i32> {
        match o.value(name) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                errln(&[
                    prog,
                    b": --",
                    name.as_bytes(),
                    b" wants a number, not ",
                    v.as_bytes(),
                ]);
                1
            }),
        }
    };
    let time = match o.value("to-time").map(|v| (v, parse_time(v))) {
        None => None,
        Some((_, Some(t))) => Some(t),
        Some((v, None)) => {
            errln(&[
                prog,
                b": --to-time wants seconds since the Unix epoch (a fraction allowed), not ",
                v.as_bytes(),
            ]);
            return 1;
        }
    };
    let point = match (num("to-txn"), time) {
        (Err(c), _) => return c,
        (Ok(Some(t)), _) => RestorePoint::Txn(t),
        (_, Some(t)) => RestorePoint::Time(t),
        _ => RestorePoint::Newest,
    };
    let (dest, out) = (PathBuf::from(&o.operands[0]), PathBuf::from(&o.operands[1]));
    let mut bar = Progress::new("restore", 0, Unit::Bytes);
    let mut cb = |done: u64, total: u64| {
        bar.set_total(total);
        bar.update(done);
    };
    let t0 = std::time::Instant::now();
    let r = mdb::restore(&dest, &out, point, Some(&mut cb));
    bar.finish();
    match r {
        Ok(r) => {
            let secs = t0.elapsed().as_secs_f64();
            if o.has("json") {
                println!(
                    "{{\"txnid\":{},\"applied\":{},\"bytes\":{},\"seconds\":{secs:.3},\"backup\":{}}}",
                    r.txnid,
                    r.applied,
                    r.bytes,
                    entry_json(&r.entry)
                );
            } else {
                println!(
                    "restored transaction {} into {} ({} backup files, {} bytes)",
                    r.txnid,
                    out.join("data.mdb").display(),
                    r.applied,
                    r.bytes
                );
            }
            0
        }
        Err(e) => fail(prog, &e),
    }
}
