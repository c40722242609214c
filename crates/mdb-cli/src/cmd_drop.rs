//! `mdb drop` / `mdb_drop`: empty or delete a database.

use crate::getopt::{Getopt, Opt};
use crate::{lib_err, usage, Invocation};
use mdb::{Database, EnvFlags, EnvOptions, ErrorKind, Txn};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

const SYNOPSIS: &str = "[-V] [-n] [-d] [-s subdb] dbpath";

const HELP: &str = "\
Usage: mdb drop [-V] [-n] [-d] [-s subdb] dbpath

Empty a database of an LMDB environment, or delete it (same behaviour as
mdb_drop). All its pages go back to the free list in one write transaction.

Options:
  -V        print the version and exit
  -n        dbpath is the data file itself, not a directory (MDB_NOSUBDIR)
  -d        delete the database: its name disappears from the environment.
            Without -d the database is only emptied and keeps its flags
  -s NAME   operate on the named database NAME instead of the main database

Emptying the main database also removes every named database, since their
records live in it; their pages are freed too (LMDB leaks them). -d on the
main database only empties it.

Exit status: 0 on success, 1 on error (for instance
`mdb_open failed, error -30798 MDB_NOTFOUND: ...` for an unknown name, or
where dbpath holds no environment: none is created, unlike mdb_drop).
";

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let mut delete = false;
    let mut nosubdir = false;
    let mut sub: Option<OsString> = None;
    let g = Getopt::new(args, "dns:V").with_long_help(inv.long_help);
    let mut g = crate::ToolOpts::new(g, prog, (SYNOPSIS, HELP), 1, true);
    for opt in &mut g {
        match opt {
            Opt::Flag(b'd') => delete = true,
            Opt::Flag(b'n') => nosubdir = true,
            Opt::Arg(b's', v) => sub = Some(v),
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
    // mdb_drop catches these signals but never looks at the flag: ignoring
    // them has the same effect.
    for sig in [libc::SIGPIPE, libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
        // SAFETY: setting a disposition to SIG_IGN has no preconditions.
        unsafe {
            libc::signal(sig, libc::SIG_IGN);
        }
    }

    if crate::no_env(&ops[0], nosubdir).is_some() {
        // What mdb_stat and mdb_dump say there (mdb_drop would create one).
        lib_err("mdb_env_open", ErrorKind::Os(libc::ENOENT).into());
        return 1;
    }
    let mut flags = EnvFlags::EMPTY;
    if nosubdir {
        flags = flags | EnvFlags::NO_SUB_DIR;
    }
    let env = match EnvOptions::new()
        .auto_grow(false)
        .flags(flags)
        .mode(0o664)
        .max_dbs(2)
        .open(&ops[0])
    {
        Ok(e) => e,
        Err(e) => {
            lib_err("mdb_env_open", e);
            return 1;
        }
    };
    let mut txn = match env.write_txn() {
        Ok(t) => t,
        Err(e) => {
            lib_err("mdb_txn_begin", e);
            return 1;
        }
    };
    let db = match &sub {
        Some(name) => match txn.open_db(name.as_bytes()) {
            Ok(db) => db,
            Err(e) => {
                lib_err("mdb_open", e);
                return 1;
            }
        },
        None => Database::MAIN,
    };
    let r = if delete {
        txn.delete_db(db)
    } else {
        txn.clear_db(db)
    };
    if let Err(e) = r {
        lib_err("mdb_drop", e);
        return 1;
    }
    if let Err(e) = txn.commit() {
        lib_err("mdb_txn_commit", e);
        return 1;
    }
    0
}
