//! `mdb checkpoint`: roll an environment's write-ahead log forward and
//! checkpoint it.

use crate::{lib_err, Invocation};
use mdb::{EnvOptions, WalOptions};
use std::ffi::OsString;

const SYNOPSIS: &str = "[-V] [-n] [--accept-log-loss] dbpath";

const HELP: &str = "\
Usage: mdb checkpoint [-V] [-n] [--accept-log-loss] dbpath

Checkpoint an environment in write-ahead-log mode: replay onto the data file
whatever the log holds that the data file lacks (after a crash), sync the
data file, record that it holds every commit so far, and recycle the log
segments before it. Other processes may keep using the environment.

Afterwards the data file alone holds the database: LMDB's tools and library
read it, and the log directory (wal/, or <file>-wal with -n) may be removed
while no process uses the environment. Without a log, it starts one: the
environment is then in WAL mode for programs that ask for it.

Options:
  -V        print the version and exit
  -n        dbpath is the data file itself, not a directory (MDB_NOSUBDIR)
  --accept-log-loss
            the log lost commits it had acknowledged (a missing or damaged
            segment, an emptied or foreign log directory), and opening
            fails, saying what is missing: keep what is whole (the log up to
            the loss, else the data file as it is), give up the rest, and
            start the log over; run `mdb check` after

Prints the transaction id the checkpoint covers. Exit status: 0 on success,
1 on error (also where dbpath holds no environment: none is created).
";

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let accept = args.iter().any(|a| a == "--accept-log-loss");
    let args = args
        .into_iter()
        .filter(|a| a != "--accept-log-loss")
        .collect();
    let (nosubdir, dbpath) = match crate::nosubdir_and_path(prog, args, SYNOPSIS, HELP, 1) {
        Ok(v) => v,
        Err(code) => return code,
    };
    if let Err(code) = crate::require_env(prog, &dbpath, nosubdir) {
        return code;
    }
    let flags = crate::subdir_flags(nosubdir);
    let mut wal = WalOptions::default();
    wal.checkpointer = false;
    let env = match EnvOptions::new()
        .auto_grow(false)
        .accept_log_loss(accept)
        .flags(flags)
        .wal(wal)
        .open(&dbpath)
    {
        Ok(e) => e,
        Err(e) => {
            lib_err("mdb_env_open", e);
            return 1;
        }
    };
    match env.checkpoint() {
        Ok(t) => {
            println!("checkpoint at transaction {t}");
            0
        }
        Err(e) => {
            lib_err("mdb_env_checkpoint", e);
            1
        }
    }
}
