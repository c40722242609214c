//! `mdb`: the LMDB-compatible command-line tools of the mdb engine.
//!
//! * `mdb stat ...`, `mdb dump ...`, `mdb load ...` behave like LMDB's
//!   `mdb_stat`, `mdb_dump` and `mdb_load` (Debian 12, LMDB 0.9.24, with the
//!   0.9.25+ fixes listed in docs/tools.md), and name themselves `mdb_stat`
//!   etc. in messages so that their output is byte-identical.
//! * `mdb copy ...` and `mdb drop ...` behave like `mdb_copy` and `mdb_drop`.
//! * `mdb check` (structural check of a data file), `mdb readers` (the
//!   reader table, clearing stale slots) and `mdb checkpoint` (write-ahead
//!   log mode) have no LMDB counterpart.
//! * Invoked through a link named `mdb_stat`, `mdb_dump`, `mdb_load`,
//!   `mdb_copy` or `mdb_drop` (busybox style), the binary is that tool, and
//!   uses `argv[0]` as given in its messages, exactly as LMDB's tools do.

mod cmd_backup;
mod cmd_check;
mod cmd_checkpoint;
mod cmd_cluster;
mod cmd_copy;
mod cmd_demo;
mod cmd_drop;
mod cmd_dump;
mod cmd_load;
mod cmd_readers;
mod cmd_shrink;
mod cmd_stat;
mod dumpfmt;
mod getopt;
mod progress;

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

/// The tools: LMDB's five, and seven of our own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Stat,
    Dump,
    Load,
    Copy,
    Drop,
    Check,
    Checkpoint,
    Readers,
    Backup,
    Restore,
    Shrink,
    Cluster,
}

impl Tool {
    fn from_subcommand(s: &[u8]) -> Option<Tool> {
        match s {
            b"stat" => Some(Tool::Stat),
            b"dump" => Some(Tool::Dump),
            b"load" => Some(Tool::Load),
            b"copy" => Some(Tool::Copy),
            b"drop" => Some(Tool::Drop),
            b"check" => Some(Tool::Check),
            b"checkpoint" => Some(Tool::Checkpoint),
            b"readers" => Some(Tool::Readers),
            b"backup" => Some(Tool::Backup),
            b"restore" => Some(Tool::Restore),
            b"shrink" => Some(Tool::Shrink),
            b"cluster" => Some(Tool::Cluster),
            _ => None,
        }
    }

    /// The LMDB tool a link name stands for.
    fn from_program(base: &[u8]) -> Option<Tool> {
        match base {
            b"mdb_stat" => Some(Tool::Stat),
            b"mdb_dump" => Some(Tool::Dump),
            b"mdb_load" => Some(Tool::Load),
            b"mdb_copy" => Some(Tool::Copy),
            b"mdb_drop" => Some(Tool::Drop),
            _ => None,
        }
    }

    /// The name used in messages for `mdb <cmd>`: LMDB's for its tools.
    fn lmdb_name(self) -> &'static [u8] {
        match self {
            Tool::Stat => b"mdb_stat",
            Tool::Dump => b"mdb_dump",
            Tool::Load => b"mdb_load",
            Tool::Copy => b"mdb_copy",
            Tool::Drop => b"mdb_drop",
            Tool::Check => b"mdb check",
            Tool::Checkpoint => b"mdb checkpoint",
            Tool::Readers => b"mdb readers",
            Tool::Backup => b"mdb backup",
            Tool::Restore => b"mdb restore",
            Tool::Shrink => b"mdb shrink",
            Tool::Cluster => b"mdb cluster",
        }
    }

    fn run(self, inv: &Invocation, args: Vec<OsString>) -> i32 {
        match self {
            Tool::Stat => cmd_stat::run(inv, args),
            Tool::Dump => cmd_dump::run(inv, args),
            Tool::Load => cmd_load::run(inv, args),
            Tool::Copy => cmd_copy::run(inv, args),
            Tool::Drop => cmd_drop::run(inv, args),
            Tool::Check => cmd_check::run(inv, args),
            Tool::Checkpoint => cmd_checkpoint::run(inv, args),
            Tool::Readers => cmd_readers::run(inv, args),
            Tool::Backup => cmd_backup::run_backup(inv, args),
            Tool::Restore => cmd_backup::run_restore(inv, args),
            Tool::Shrink => cmd_shrink::run(inv, args),
            Tool::Cluster => cmd_cluster::run(inv, args),
        }
    }
}

/// How a tool was started.
pub(crate) struct Invocation {
    /// Program name for messages and the usage line.
    pub prog: Vec<u8>,
    /// Started as `mdb <cmd>`: `--help` is understood. (As `mdb_stat` etc.,
    /// the options are exactly LMDB's.)
    pub long_help: bool,
}

/// The options of the tools that take only `-n`, `-V` and `--help` and one
/// dbpath (`mdb check`, `mdb readers`, `mdb checkpoint`): whether `-n` was
/// given, and the path; or the exit status (0 after `-V` or `--help`,
/// `bad` after a usage message).
/// A tool's options, as it reads them: `--help` and, if `version`, `-V`
/// are answered here (help text, version), as is a bad option (its message
/// and the usage line); the iteration then ends with `exit` set to the
/// status to exit with.
pub(crate) struct ToolOpts<'a> {
    g: getopt::Getopt,
    prog: &'a [u8],
    synopsis: &'a str,
    help: &'a str,
    /// Exit status of bad usage.
    bad: i32,
    version: bool,
    /// Set when the tool is to exit with this status.
    pub(crate) exit: Option<i32>,
}

impl<'a> ToolOpts<'a> {
    pub(crate) fn new(
        g: getopt::Getopt,
        prog: &'a [u8],
        (synopsis, help): (&'a str, &'a str),
        bad: i32,
        version: bool,
    ) -> ToolOpts<'a> {
        ToolOpts {
            g,
            prog,
            synopsis,
            help,
            bad,
            version,
            exit: None,
        }
    }

    /// The operands after the options.
    pub(crate) fn operands(self) -> Vec<OsString> {
        self.g.operands()
    }
}

impl Iterator for ToolOpts<'_> {
    type Item = getopt::Opt;

    fn next(&mut self) -> Option<getopt::Opt> {
        if self.exit.is_some() {
            return None;
        }
        let status = match self.g.next_opt()? {
            Err(e) => {
                errln(&[&e.message(self.prog)]);
                usage(self.prog, self.synopsis);
                self.bad
            }
            Ok(getopt::Opt::Help) => {
                print_help(self.help);
                0
            }
            Ok(getopt::Opt::Flag(b'V')) if self.version => {
                print_version();
                0
            }
            Ok(o) => return Some(o),
        };
        self.exit = Some(status);
        None
    }
}

/// Take the long options `names` out of `args` (those before a `--`);
/// which of them were given.
pub(crate) fn take_long<const N: usize>(args: &mut Vec<OsString>, names: [&str; N]) -> [bool; N] {
    let mut given = [false; N];
    let mut after_dd = false;
    args.retain(|a| {
        if !after_dd {
            if let Some(i) = names.iter().position(|n| a.as_bytes() == n.as_bytes()) {
                given[i] = true;
                return false;
            }
        }
        after_dd |= a.as_bytes() == b"--";
        true
    });
    given
}

pub(crate) fn nosubdir_and_path(
    prog: &[u8],
    args: Vec<OsString>,
    synopsis: &str,
    help: &str,
    bad: i32,
) -> Result<(bool, OsString), i32> {
    let mut nosubdir = false;
    let g = getopt::Getopt::new(args, "nV").with_long_help(true);
    let mut g = ToolOpts::new(g, prog, (synopsis, help), bad, true);
    for opt in &mut g {
        match opt {
            getopt::Opt::Flag(b'n') => nosubdir = true,
            _ => unreachable!("option string and match disagree"),
        }
    }
    if let Some(code) = g.exit {
        return Err(code);
    }
    let mut ops = g.operands();
    if ops.len() != 1 {
        usage(prog, synopsis);
        return Err(bad);
    }
    Ok((nosubdir, ops.remove(0)))
}

/// NO_SUB_DIR if `-n` was given.
pub(crate) fn subdir_flags(nosubdir: bool) -> mdb::EnvFlags {
    if nosubdir {
        mdb::EnvFlags::NO_SUB_DIR
    } else {
        mdb::EnvFlags::EMPTY
    }
}

/// The data file of the environment at `dbpath`.
pub(crate) fn data_file(dbpath: &OsStr, nosubdir: bool) -> std::path::PathBuf {
    if nosubdir {
        std::path::PathBuf::from(dbpath)
    } else {
        std::path::Path::new(dbpath).join("data.mdb")
    }
}

/// Why `dbpath` holds no environment (no data file, or an empty one), if
/// it does not. The tools that open read-write to change an environment,
/// not to make one (`checkpoint`, `shrink`, `drop`), ask first: such an
/// open makes a new environment where there is none.
pub(crate) fn no_env(dbpath: &OsStr, nosubdir: bool) -> Option<(std::path::PathBuf, String)> {
    let data = data_file(dbpath, nosubdir);
    let why = match std::fs::metadata(&data) {
        Ok(m) if m.is_file() && m.len() > 0 => return None,
        Ok(m) if m.is_file() => "empty file".to_string(),
        Ok(_) => "not a regular file".to_string(),
        Err(e) => os_strerror(&e),
    };
    Some((data, why))
}

/// [`no_env`] for our own tools: exit status 1, after saying why, unless
/// `dbpath` holds an environment.
pub(crate) fn require_env(prog: &[u8], dbpath: &OsStr, nosubdir: bool) -> Result<(), i32> {
    let Some((data, why)) = no_env(dbpath, nosubdir) else {
        return Ok(());
    };
    errln(&[
        prog,
        b": ",
        dbpath.as_bytes(),
        b": not an environment (",
        data.as_os_str().as_bytes(),
        b": ",
        why.as_bytes(),
        b")",
    ]);
    Err(1)
}

/// Write the concatenation of `parts` and a newline to stderr, in one write.
pub(crate) fn errln(parts: &[&[u8]]) {
    let mut m = Vec::with_capacity(parts.iter().map(|p| p.len()).sum::<usize>() + 1);
    for p in parts {
        m.extend_from_slice(p);
    }
    m.push(b'\n');
    let _ = std::io::stderr().write_all(&m);
}

/// LMDB's library-failure message: `<func> failed, error <code> <mdb_strerror>`
/// (the kind's text: LMDB's tools print no context).
pub(crate) fn lib_err(func: &str, e: mdb::Error) {
    errln(&[
        func.as_bytes(),
        b" failed, error ",
        e.code().to_string().as_bytes(),
        b" ",
        e.kind().to_string().as_bytes(),
    ]);
    // What exactly is wrong (a write-ahead log's lost segment), where the
    // code alone does not say; LMDB's errors carry none.
    if let Some(d) = e.detail() {
        errln(&[b"  ", d.as_bytes()]);
    }
}

/// `strerror(errno)` text (what LMDB's tools print for system errors).
pub(crate) fn os_strerror(e: &std::io::Error) -> String {
    mdb::error::strerror(e.raw_os_error().unwrap_or(libc::EIO))
}

/// Print `usage: <prog> <synopsis>` to stderr; the caller exits 1.
pub(crate) fn usage(prog: &[u8], synopsis: &str) {
    errln(&[b"usage: ", prog, b" ", synopsis.as_bytes()]);
}

/// Print a help text to stdout; the caller exits 0.
pub(crate) fn print_help(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

/// Print the version string to stdout.
pub(crate) fn print_version() {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{}", mdb::VERSION_STRING);
    let _ = o.flush();
}

/// Restore the default SIGPIPE action (Rust ignores it), so a tool writing to
/// a closed pipe ends the way a C program does.
pub(crate) fn default_sigpipe() {
    // SAFETY: setting a signal disposition to SIG_DFL has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

const TOP_HELP: &str = "\
Usage: mdb <command> [options] dbpath

LMDB-compatible tools for mdb environments. stat, dump, load, copy and drop
take the options of the LMDB tool of the same name and print what it prints.

Commands:
  stat     show environment, free-list, reader and database statistics (mdb_stat)
  dump     write databases in the portable text format (mdb_dump)
  load     read the portable text format into an environment (mdb_load)
  copy     back up a live environment, optionally compacted (mdb_copy)
  drop     empty or delete a database (mdb_drop)
  check    check the structure of a data file, page by page
  readers  list reader slots and how far behind they are; clear stale ones
  checkpoint
           write-ahead-log mode: roll the log forward, sync the data file,
           recycle the log
  backup   hot full or incremental backup into a directory; --verify checks one
  restore  rebuild an environment from a backup directory, at any backup
  shrink   give the free pages at the end of a data file back, in place
  cluster  status of a replicated cluster (mdb-raft-node): members, leader,
           each node's applied log index and lag
  demo     load and read back a million keys in a temporary directory

  mdb <command> --help   options of one command
  mdb -V, --version      print the version

The binary also acts as mdb_stat, mdb_dump, mdb_load, mdb_copy or mdb_drop
when invoked under that name (for instance through a symbolic link).
";

fn run(args: Vec<OsString>) -> i32 {
    let argv0 = args
        .first()
        .cloned()
        .unwrap_or_else(|| OsString::from("mdb"));
    let base = std::path::Path::new(&argv0)
        .file_name()
        .map(|b| b.as_bytes().to_vec())
        .unwrap_or_default();
    let rest: Vec<OsString> = args.into_iter().skip(1).collect();
    if let Some(tool) = Tool::from_program(&base) {
        let inv = Invocation {
            prog: argv0.as_bytes().to_vec(),
            long_help: false,
        };
        return tool.run(&inv, rest);
    }
    let Some(first) = rest.first() else {
        let _ = std::io::stderr().write_all(TOP_HELP.as_bytes());
        return 1;
    };
    match first.as_bytes() {
        b"--help" | b"-h" | b"help" => {
            if first.as_bytes() == b"help" {
                if let Some(tool) = rest
                    .get(1)
                    .and_then(|c| Tool::from_subcommand(c.as_bytes()))
                {
                    return tool.run(
                        &Invocation {
                            prog: tool.lmdb_name().to_vec(),
                            long_help: true,
                        },
                        vec![OsString::from("--help")],
                    );
                }
            }
            print_help(TOP_HELP);
            0
        }
        b"-V" | b"--version" => {
            print_version();
            0
        }
        b"demo" => {
            let args: Vec<String> = rest[1..]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            cmd_demo::run(&args)
        }
        name => match Tool::from_subcommand(name) {
            Some(tool) => {
                let inv = Invocation {
                    prog: tool.lmdb_name().to_vec(),
                    long_help: true,
                };
                tool.run(&inv, rest[1..].to_vec())
            }
            None => {
                errln(&[b"mdb: unknown command '", name, b"'"]);
                errln(&[b"Try 'mdb --help' for the list of commands."]);
                1
            }
        },
    }
}

fn main() {
    let code = run(std::env::args_os().collect());
    std::process::exit(code);
}
