//! `mdb checkpoint`: roll an environment's write-ahead log forward and
//! checkpoint it.

use crate::getopt::{Getopt, Opt};
use crate::{errln, lib_err, usage, Invocation};
use mdb::{EnvFlags, EnvOptions, WalOptions};
use std::ffi::OsString;

const SYNOPSIS: &str = "[-V] [-n] dbpath";

const HELP: &str = "\
Usage: mdb checkpoint [-V] [-n] dbpath

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

Prints the transaction id the checkpoint covers. Exit status: 0 on success,
1 on error.
";

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let mut nosubdir = false;
    let mut g = Getopt::new(args, "nV").with_long_help(inv.long_help);
    while let Some(r) = g.next_opt() {
        match r {
            Err(e) => {
                errln(&[&e.message(prog)]);
                usage(prog, SYNOPSIS);
                return 1;
            }
            Ok(Opt::Help) => {
                crate::print_help(HELP);
                return 0;
            }
            Ok(Opt::Flag(b'V')) => {
                crate::print_version();
                return 0;
            }
            Ok(Opt::Flag(b'n')) => nosubdir = true,
            Ok(_) => unreachable!("option string and match disagree"),
        }
    }
    let ops = g.operands();
    if ops.len() != 1 {
        usage(prog, SYNOPSIS);
        return 1;
    }
    let flags = if nosubdir {
        EnvFlags::NO_SUB_DIR
    } else {
        EnvFlags::EMPTY
    };
    let mut wal = WalOptions::default();
    wal.checkpointer = false;
    let env = match EnvOptions::new().flags(flags).wal(wal).open(&ops[0]) {
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
