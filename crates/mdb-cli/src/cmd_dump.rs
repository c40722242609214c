//! `mdb dump` / `mdb_dump`: write databases in the portable text format.

use crate::dumpfmt::{encode_hex, encode_print};
use crate::getopt::{Getopt, Opt};
use crate::progress::{Progress, Unit};
use crate::{errln, lib_err, usage, Invocation};
use mdb::{Database, DbFlags, Env, EnvFlags, EnvOptions, Txn};
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

const SYNOPSIS: &str = "[-V] [-f output] [-l] [-n] [-p] [-a|-s subdb] dbpath";

const HELP: &str = "\
Usage: mdb dump [-V] [-f output] [-l] [-n] [-p] [-a|-s subdb] dbpath

Write databases of an LMDB environment in the portable text format read by
`mdb load` (same output as mdb_dump). Without -a, -l or -s the main database
is dumped.

Options:
  -V          print the version and exit
  -f FILE     write to FILE instead of standard output
  -l          list the named databases, one per line, and dump nothing
  -n          dbpath is the data file itself, not a directory (MDB_NOSUBDIR)
  -p          print format: printable bytes as themselves, `\\\\` for a backslash,
              `\\xx` (hex) for any other byte; default is plain hex
  -a          dump every named database
  -s NAME     dump the named database NAME

Exit status: 0 on success, 1 on error or when interrupted (SIGPIPE, SIGINT,
SIGTERM, SIGHUP stop the dump at the next record).
";

/// Set by the signal handler; checked before each record.
static GOT_SIGNAL: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    GOT_SIGNAL.store(true, Ordering::SeqCst);
}

/// Catch SIGPIPE, SIGHUP, SIGINT and SIGTERM: the dump then stops at the next
/// record and reports EINTR, as LMDB's tool does.
fn catch_signals() {
    for sig in [libc::SIGPIPE, libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe;
        // the sigaction struct is fully initialised (zeroed, then filled in).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The output stream: standard output or the `-f` file, buffered like stdio
/// (a buffer of the file's block size). Write errors are remembered, not
/// returned, so the dump loop can decide what to do with them.
struct Out {
    file: ManuallyDrop<File>,
    owned: bool,
    name: Vec<u8>,
    buf: Vec<u8>,
    cap: usize,
    err: Option<i32>,
}

impl Out {
    fn new(file: File, owned: bool, name: &[u8]) -> Out {
        let cap = file
            .metadata()
            .map(|m| m.blksize() as usize)
            .unwrap_or(4096)
            .clamp(1024, 1 << 20);
        Out {
            file: ManuallyDrop::new(file),
            owned,
            name: name.to_vec(),
            buf: Vec::with_capacity(cap * 2),
            cap,
            err: None,
        }
    }

    fn stdout() -> Out {
        // SAFETY: fd 1 stays open for the life of the process; ManuallyDrop
        // keeps it from being closed when this Out goes away.
        Out::new(unsafe { File::from_raw_fd(1) }, false, b"stdout")
    }

    fn put(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= self.cap {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        if self.err.is_none() {
            if let Err(e) = (&*self.file).write_all(&self.buf) {
                self.err = Some(e.raw_os_error().unwrap_or(libc::EIO));
            }
        }
        self.buf.clear();
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        self.flush();
        if self.owned {
            // SAFETY: dropped exactly once, here.
            unsafe { ManuallyDrop::drop(&mut self.file) };
        }
    }
}

#[derive(Default)]
struct Opts {
    all: bool,
    list: bool,
    no_subdir: bool,
    print: bool,
    sub: Option<OsString>,
    /// Show a progress bar on a terminal (`mdb dump`, not `mdb_dump`).
    progress: bool,
}

/// Why a dump ended with failure.
enum Stop {
    /// A library call failed and its message is already printed.
    Reported,
    /// Reported as `<prog>: <path>: <mdb_strerror(code)>` (EINTR after a signal).
    Code(i32),
    /// `-a`/`-l` on an environment whose main database is empty.
    NotMultiple,
    /// Writing the output failed (errno).
    Write(i32),
}

/// Print LMDB's `<func> failed, error ...` message.
fn reported(func: &str, e: mdb::Error) -> Stop {
    lib_err(func, e);
    Stop::Reported
}

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let mut o = Opts {
        progress: inv.long_help,
        ..Opts::default()
    };
    let mut out = Out::stdout();
    let g = Getopt::new(args, "af:lnps:V").with_long_help(inv.long_help);
    let mut g = crate::ToolOpts::new(g, prog, (SYNOPSIS, HELP), 1, false);
    for opt in &mut g {
        match opt {
            Opt::Flag(b'V') => {
                // Like LMDB, this goes to the current output (a -f file if one came first).
                out.put(mdb::VERSION_STRING.as_bytes());
                out.put(b"\n");
                return 0;
            }
            Opt::Flag(c @ (b'a' | b'l')) => {
                if o.sub.is_some() {
                    usage(prog, SYNOPSIS);
                    return 1;
                }
                o.all = true;
                o.list |= c == b'l';
            }
            Opt::Arg(b'f', file) => {
                // Opened at once, as LMDB's freopen does: the file is created
                // even if a later error stops the tool.
                match File::create(&file) {
                    Ok(f) => {
                        out.flush();
                        out = Out::new(f, true, file.as_bytes());
                    }
                    Err(e) => {
                        let text = crate::os_strerror(&e);
                        errln(&[prog, b": ", file.as_bytes(), b": reopen: ", text.as_bytes()]);
                        return 1;
                    }
                }
            }
            Opt::Flag(b'n') => o.no_subdir = true,
            Opt::Flag(b'p') => o.print = true,
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
    let path = &ops[0];
    catch_signals();
    let rc = dump(&o, path, &mut out);
    out.flush();
    let rc = match rc {
        Ok(()) => match out.err {
            // A pipe closed after the last record: LMDB does not notice either.
            Some(e) if e != libc::EPIPE => Err(Stop::Write(e)),
            _ => Ok(()),
        },
        Err(s) => Err(s),
    };
    match rc {
        Ok(()) => 0,
        Err(Stop::Reported) => 1,
        Err(Stop::Code(c)) => {
            let text = mdb::error::strerror(c);
            errln(&[prog, b": ", path.as_bytes(), b": ", text.as_bytes()]);
            1
        }
        Err(Stop::NotMultiple) => {
            errln(&[
                prog,
                b": ",
                path.as_bytes(),
                b" does not contain multiple databases",
            ]);
            1
        }
        Err(Stop::Write(e)) => {
            let text = mdb::error::strerror(e);
            errln(&[prog, b": ", &out.name, b": write: ", text.as_bytes()]);
            1
        }
    }
}

/// Open the environment and dump what was asked.
fn dump(o: &Opts, path: &OsString, out: &mut Out) -> Result<(), Stop> {
    let mut eo = EnvOptions::new();
    // LMDB's fixed map, as its tools open it.
    eo.auto_grow(false);
    let mut flags = EnvFlags::READ_ONLY;
    if o.no_subdir {
        flags = flags | EnvFlags::NO_SUB_DIR;
    }
    eo.flags(flags).mode(0o664);
    if o.all || o.sub.is_some() {
        eo.max_dbs(2);
    }
    let env = eo.open(path).map_err(|e| reported("mdb_env_open", e))?;
    let txn = env.read_txn().map_err(|e| reported("mdb_txn_begin", e))?;

    if !o.all {
        let (db, name) = match &o.sub {
            Some(n) => (
                txn.open_db(n.as_bytes())
                    .map_err(|e| reported("mdb_open", e))?,
                Some(n.as_bytes()),
            ),
            None => (Database::MAIN, None),
        };
        dump_db(&env, &txn, db, name, o, out)?;
        return Ok(());
    }

    let names = crate::cmd_stat::named_db_candidates(&txn).map_err(|e| Stop::Code(e.code()))?;
    if names.is_empty() {
        return Err(Stop::NotMultiple);
    }
    crate::cmd_stat::for_each_named_db(&env, txn, &names, |txn, db, name| {
        if o.list {
            out.put(name);
            out.put(b"\n");
            Ok(())
        } else {
            dump_db(&env, txn, db, Some(name), o, out)
        }
    })
}

/// The flag keywords of the header, in LMDB's order.
const FLAG_NAMES: [(DbFlags, &str); 6] = [
    (DbFlags::REVERSE_KEY, "reversekey"),
    (DbFlags::DUP_SORT, "dupsort"),
    (DbFlags::INTEGER_KEY, "integerkey"),
    (DbFlags::DUP_FIXED, "dupfixed"),
    (DbFlags::INTEGER_DUP, "integerdup"),
    (DbFlags::REVERSE_DUP, "reversedup"),
];

/// One section: header, records, `DATA=END`.
fn dump_db<T: Txn>(
    env: &Env,
    txn: &T,
    db: Database,
    name: Option<&[u8]>,
    o: &Opts,
    out: &mut Out,
) -> Result<(), Stop> {
    let print = o.print;
    let flags = txn.db_flags(db).map_err(|e| Stop::Code(e.code()))?;
    let st = txn.stat(db).map_err(|e| Stop::Code(e.code()))?;
    let info = env.info().map_err(|e| Stop::Code(e.code()))?;
    let mut h = String::with_capacity(256);
    h.push_str("VERSION=3\n");
    h.push_str(if print {
        "format=print\n"
    } else {
        "format=bytevalue\n"
    });
    out.put(h.as_bytes());
    if let Some(n) = name {
        out.put(b"database=");
        out.put(n);
        out.put(b"\n");
    }
    h.clear();
    h.push_str("type=btree\n");
    h.push_str(&format!("mapsize={}\n", info.map_size));
    if info.map_addr != 0 {
        h.push_str(&format!("mapaddr={:#x}\n", info.map_addr));
    }
    h.push_str(&format!("maxreaders={}\n", info.max_readers));
    if flags.contains(DbFlags::DUP_SORT) {
        h.push_str("duplicates=1\n");
    }
    for (f, kw) in FLAG_NAMES {
        if flags.contains(f) {
            h.push_str(kw);
            h.push_str("=1\n");
        }
    }
    h.push_str(&format!("db_pagesize={}\nHEADER=END\n", st.page_size));
    out.put(h.as_bytes());

    let encode = if print { encode_print } else { encode_hex };
    let mut rc = Ok(());
    let mut line = Vec::with_capacity(1024);
    let cursor = txn.cursor(db).map_err(|e| reported("mdb_cursor_open", e))?;
    let label = match name {
        Some(n) => format!("dump {}", String::from_utf8_lossy(n)),
        None => "dump".to_string(),
    };
    // Only on a terminal, and not over the dump itself when it goes there.
    let mut bar = match (o.progress, out.owned) {
        (false, _) => Progress::disabled(),
        (true, true) => Progress::new(&label, st.entries, Unit::Items("records")),
        (true, false) => Progress::beside_stdout(&label, st.entries, Unit::Items("records")),
    }
    .stride(256);
    let mut n = 0u64;
    for item in cursor {
        n += 1;
        bar.update(n);
        let (k, v) = match item {
            Ok(kv) => kv,
            Err(e) => {
                rc = Err(Stop::Code(e.code()));
                break;
            }
        };
        if GOT_SIGNAL.load(Ordering::SeqCst) || out.err == Some(libc::EPIPE) {
            rc = Err(Stop::Code(libc::EINTR));
            break;
        }
        if let Some(e) = out.err {
            rc = Err(Stop::Write(e));
            break;
        }
        line.clear();
        line.push(b' ');
        encode(&mut line, k);
        line.extend_from_slice(b"\n ");
        encode(&mut line, v);
        line.push(b'\n');
        out.put(&line);
    }
    bar.finish();
    out.put(b"DATA=END\n");
    rc
}
