//! `mdb shrink`: give the free pages at the end of a data file back to the
//! file system, in place.

use crate::{lib_err, Invocation};
use mdb::EnvOptions;
use std::ffi::OsString;

const SYNOPSIS: &str = "[-V] [-n] dbpath";

const HELP: &str = "\
Usage: mdb shrink [-V] [-n] dbpath

Shrink a data file in place: move the pages that lie where the file could
end if it were packed down into free pages, commit, and cut the free pages
off the end. Readers keep reading meanwhile (pages a reader can still see
are neither moved nor cut). The file is cut only if no other process has
the environment open; otherwise the end is committed and a later shrink
(or the last close, with auto-grow) cuts it. mdb copy -c compacts fully
into a new file.

Options:
  -V        print the version and exit
  -n        dbpath is the data file itself, not a directory (MDB_NOSUBDIR)

Prints the file's length before and after. Exit status: 0 on success, 1 on
error (also where dbpath holds no environment: none is created).
";

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let (nosubdir, dbpath) = match crate::nosubdir_and_path(prog, args, SYNOPSIS, HELP, 1) {
        Ok(v) => v,
        Err(code) => return code,
    };
    if let Err(code) = crate::require_env(prog, &dbpath, nosubdir) {
        return code;
    }
    let flags = crate::subdir_flags(nosubdir);
    let data = crate::data_file(&dbpath, nosubdir);
    let before = std::fs::metadata(&data).map_or(0, |m| m.len());
    let env = match EnvOptions::new()
        .auto_grow(false)
        .flags(flags)
        .open(&dbpath)
    {
        Ok(e) => e,
        Err(e) => {
            lib_err("mdb_env_open", e);
            return 1;
        }
    };
    match env.shrink() {
        Ok(after) => {
            println!("{}: {before} -> {after} bytes", data.display());
            0
        }
        Err(e) => {
            lib_err("mdb shrink", e);
            1
        }
    }
}
