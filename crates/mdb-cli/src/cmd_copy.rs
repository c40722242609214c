//! `mdb copy` / `mdb_copy`: hot backup of an environment, plain or compacted.

use crate::progress::{Progress, Unit};
use crate::{errln, Invocation};
use mdb::{CopyProgress, EnvFlags, EnvOptions};
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// LMDB's usage line (mdb_copy 0.9).
const SYNOPSIS: &str = "[-V] [-c] [-n] srcpath [dstpath]";
/// Ours as `mdb copy`, which also has -v.
const SYNOPSIS_V: &str = "[-V] [-c] [-n] [-v] srcpath [dstpath]";

const HELP: &str = "\
Usage: mdb copy [-V] [-c] [-n] [-v] srcpath [dstpath]

Copy an LMDB environment (same behaviour as mdb_copy). The copy is taken from
one read transaction, so it is consistent even while other processes keep
writing; it is the environment as of the moment the copy started.

With dstpath, the copy is written to dstpath/data.mdb (dstpath must be an
existing directory without a data.mdb; with -n, dstpath is the new file's
name). No lock file is made. Without dstpath, the copy goes to standard
output, and can be used as a data file of its own (open it with -n).

Options:
  -V        print the version and exit
  -c        compact: write only the pages in use, renumbered, with an empty
            free list (MDB_CP_COMPACT). Slower, but the copy is as small as
            the data allows. Fails on an environment that leaks pages
  -n        srcpath (and dstpath) are data files, not directories (MDB_NOSUBDIR)
  -v        show a progress bar on a terminal and, when done, a summary line
            (pages, size, snapshot transaction, time) on standard error

Options must come before the paths, each in its own word.

Exit status: 0 on success, 1 on error. Errors read
`mdb_copy: copying failed, error 17 (File exists)`, as LMDB's tool prints them.
";

/// Set by SIGINT, SIGTERM or SIGHUP: the copy stops at its next piece.
static GOT_SIGNAL: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    GOT_SIGNAL.store(true, Ordering::SeqCst);
}

/// mdb_copy catches these signals; we also stop the copy cleanly on them
/// (LMDB ignores them and goes on). The handler is one-shot: a second signal
/// ends the process at once, for a copy stuck waiting for the writer lock.
/// SIGPIPE stays ignored, as in every Rust program, so a closed pipe becomes
/// an EPIPE error.
fn catch_signals() {
    for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe);
        // the sigaction struct is zeroed, then filled in.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART | libc::SA_RESETHAND;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    // SAFETY: setting a disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// `<prog>: <action> failed, error <n> (<mdb_strerror>)`.
fn failed(prog: &[u8], action: &str, e: mdb::Error) {
    errln(&[
        prog,
        b": ",
        action.as_bytes(),
        b" failed, error ",
        e.code().to_string().as_bytes(),
        b" (",
        e.kind().to_string().as_bytes(),
        b")",
    ]);
}

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let synopsis = if inv.long_help { SYNOPSIS_V } else { SYNOPSIS };
    let mut compact = false;
    let mut nosubdir = false;
    let mut verbose = false;
    // Options are parsed by hand, as mdb_copy does: whole words, before the paths.
    let mut i = 0;
    while i < args.len() && args[i].as_bytes().first() == Some(&b'-') {
        match args[i].as_bytes() {
            b"-n" => nosubdir = true,
            b"-c" => compact = true,
            b"-V" => {
                crate::print_version();
                return 0;
            }
            b"-v" if inv.long_help => verbose = true,
            b"--help" if inv.long_help => {
                crate::print_help(HELP);
                return 0;
            }
            _ => {
                crate::usage(prog, synopsis);
                return 1;
            }
        }
        i += 1;
    }
    let paths = &args[i..];
    if paths.is_empty() || paths.len() > 2 {
        crate::usage(prog, synopsis);
        return 1;
    }
    catch_signals();

    let mut flags = EnvFlags::READ_ONLY;
    if nosubdir {
        flags = flags | EnvFlags::NO_SUB_DIR;
    }
    let env = match EnvOptions::new()
        .auto_grow(false)
        .flags(flags)
        .mode(0o600)
        .open(&paths[0])
    {
        Ok(e) => e,
        Err(e) => {
            failed(prog, "opening environment", e);
            return 1;
        }
    };

    let to_stdout = paths.len() == 1;
    let show = verbose && crate::progress::isatty(2) && !(to_stdout && crate::progress::isatty(1));
    let label = if compact { "compact copy" } else { "copy" };
    let mut bar = Progress::with(show, label, 0, Unit::Bytes).immediate();
    let mut on_progress = |p: CopyProgress| {
        bar.set_total(p.pages_total * p.page_size as u64);
        bar.update(p.pages_done * p.page_size as u64);
        !GOT_SIGNAL.load(Ordering::SeqCst)
    };
    let r = if to_stdout {
        // SAFETY: fd 1 stays open for the life of the process; ManuallyDrop
        // keeps this File from closing it. Nothing else writes to stdout.
        let out = ManuallyDrop::new(unsafe { File::from_raw_fd(1) });
        let mut w: &File = &out;
        env.copy_to_writer_with(&mut w, compact, &mut on_progress)
    } else {
        env.copy_to_path_with(paths[1].as_ref(), compact, &mut on_progress)
    };
    let elapsed = bar.elapsed();
    bar.finish();
    match r {
        Ok(st) => {
            if verbose {
                let secs = elapsed.as_secs_f64();
                let line = format!(
                    "{}: copied {} pages ({}) of txn {}{} in {:.2} s, {}/s",
                    String::from_utf8_lossy(prog),
                    st.pages,
                    crate::progress::size(st.bytes()),
                    st.snapshot_txnid,
                    if compact {
                        format!(", compacted from {} pages", st.source_last_pgno + 1)
                    } else {
                        String::new()
                    },
                    secs,
                    crate::progress::size((st.bytes() as f64 / secs.max(1e-6)) as u64),
                );
                let _ = writeln!(std::io::stderr(), "{line}");
            }
            0
        }
        Err(e) => {
            failed(prog, "copying", e);
            1
        }
    }
}
