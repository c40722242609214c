//! `mdb readers`: the reader table, and clearing stale slots.

use crate::cmd_check::json_str;

use crate::{lib_err, Invocation};
use mdb::{EnvFlags, EnvOptions, ReaderInfo};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

const SYNOPSIS: &str = "[-V] [-n] [--check] [--json] dbpath";

const HELP: &str = "\
Usage: mdb readers [-V] [-n] [--check] [--json] dbpath

List the reader slots of an LMDB environment: for each, the process id, the
thread, the transaction (snapshot) it reads, and how many transactions
behind the newest one that is. A reader far behind keeps every page freed
since its snapshot from being reused, so the file grows; a reader whose
process is gone (marked dead) does the same until its slot is cleared.

Options:
  -V        print the version and exit
  -n        dbpath is the data file itself, not a directory (MDB_NOSUBDIR)
  --check   first clear the slots of processes that no longer exist (as
            mdb_reader_check and `mdb_stat -rr` do), and say how many
  --json    print one JSON object instead of the table

Columns: pid; thread (pthread id, hex); txnid (`-` for a slot that holds no
read transaction); behind (newest txn id minus txnid); state: reading, idle
(the slot holds no transaction), wal-hold (thread 0: a write-ahead-log
handle holding its last checkpoint's snapshot for writers outside WAL
mode), or dead when its process no longer holds its
lock on the lock file, i.e. has ended: a stale slot that --check clears.

Exit status: 0 on success, 1 on error.
";

/// Tells live readers from stale ones the way the stale-reader check does:
/// a live process holds a lock on the lock file's byte at offset = its pid.
struct Liveness {
    lock: Option<std::fs::File>,
}

impl Liveness {
    fn new(path: &Path, nosubdir: bool) -> Liveness {
        let lp = if nosubdir {
            let mut s = path.as_os_str().to_owned();
            s.push("-lock");
            PathBuf::from(s)
        } else {
            path.join("lock.mdb")
        };
        let lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&lp)
            .or_else(|_| std::fs::File::open(&lp))
            .ok();
        Liveness { lock }
    }

    /// Whether process `pid` is alive and using the environment.
    fn alive(&self, pid: u32) -> bool {
        if let Some(f) = &self.lock {
            // SAFETY: F_GETLK fills a flock struct that we own.
            unsafe {
                let mut fl: libc::flock = std::mem::zeroed();
                fl.l_type = libc::F_WRLCK as libc::c_short;
                fl.l_whence = libc::SEEK_SET as libc::c_short;
                fl.l_start = pid as libc::off_t;
                fl.l_len = 1;
                if libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut fl) == 0 {
                    return fl.l_type != libc::F_UNLCK as libc::c_short;
                }
            }
        }
        // No lock file to ask: does the process exist at all?
        // SAFETY: kill with signal 0 only checks for the process.
        let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }

    fn state(&self, r: &ReaderInfo) -> &'static str {
        if !self.alive(r.pid) {
            "dead"
        } else if r.is_wal_hold() {
            "wal-hold"
        } else if r.txnid.is_some() {
            "reading"
        } else {
            "idle"
        }
    }
}

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let mut args = args;
    let [json, check] = crate::take_long(&mut args, ["--json", "--check"]);
    let (nosubdir, dbpath) = match crate::nosubdir_and_path(prog, args, SYNOPSIS, HELP, 1) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let mut flags = EnvFlags::READ_ONLY;
    if nosubdir {
        flags = flags | EnvFlags::NO_SUB_DIR;
    }
    let env = match EnvOptions::new()
        .auto_grow(false)
        .flags(flags)
        .mode(0o664)
        .open(&dbpath)
    {
        Ok(e) => e,
        Err(e) => {
            lib_err("mdb_env_open", e);
            return 1;
        }
    };
    let cleared = if check {
        match env.reader_check() {
            Ok(n) => Some(n),
            Err(e) => {
                lib_err("mdb_reader_check", e);
                return 1;
            }
        }
    } else {
        None
    };
    let info = match env.info() {
        Ok(i) => i,
        Err(e) => {
            lib_err("mdb_env_info", e);
            return 1;
        }
    };
    let readers = env.readers();
    let live = Liveness::new(Path::new(&dbpath), nosubdir);
    let text = if json {
        to_json(&dbpath, &info, cleared, &readers, &live)
    } else {
        to_text(&dbpath, &info, cleared, &readers, &live)
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    0
}

fn to_text(
    path: &OsString,
    info: &mdb::EnvInfo,
    cleared: Option<usize>,
    rs: &[ReaderInfo],
    live: &Liveness,
) -> String {
    let mut s = format!(
        "Readers of {}: newest txn {}, reader slots used: {} of {}\n",
        path.to_string_lossy(),
        info.last_txnid,
        info.num_readers,
        info.max_readers
    );
    if let Some(n) = cleared {
        s.push_str(&format!(
            "{n} stale reader{} cleared\n",
            if n == 1 { "" } else { "s" }
        ));
    }
    if rs.is_empty() {
        s.push_str("(no active readers)\n");
        return s;
    }
    s.push_str(&format!(
        "{:>10}  {:>16}  {:>12}  {:>8}  state\n",
        "pid", "thread", "txnid", "behind"
    ));
    let mut dead = 0;
    for r in rs {
        let (txn, behind) = match r.txnid {
            Some(t) => (t.to_string(), info.last_txnid.saturating_sub(t).to_string()),
            None => ("-".to_string(), "-".to_string()),
        };
        let st = live.state(r);
        dead += usize::from(st == "dead");
        s.push_str(&format!(
            "{:>10}  {:>16x}  {:>12}  {:>8}  {}\n",
            r.pid, r.tid, txn, behind, st
        ));
    }
    if dead > 0 {
        s.push_str(&format!(
            "{dead} slot{} of dead processes: clear with --check\n",
            if dead == 1 { "" } else { "s" }
        ));
    }
    s
}

fn to_json(
    path: &OsString,
    info: &mdb::EnvInfo,
    cleared: Option<usize>,
    rs: &[ReaderInfo],
    live: &Liveness,
) -> String {
    let mut s = format!(
        "{{\"path\":{},\"last_txnid\":{},\"max_readers\":{},\"num_readers\":{},\"cleared\":{},\"readers\":[",
        json_str(&path.to_string_lossy()),
        info.last_txnid,
        info.max_readers,
        info.num_readers,
        cleared.map_or("null".to_string(), |n| n.to_string())
    );
    for (i, r) in rs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let (txn, behind) = match r.txnid {
            Some(t) => (t.to_string(), info.last_txnid.saturating_sub(t).to_string()),
            None => ("null".to_string(), "null".to_string()),
        };
        s.push_str(&format!(
            "{{\"pid\":{},\"thread\":\"{:x}\",\"txnid\":{},\"behind\":{},\"state\":\"{}\"}}",
            r.pid,
            r.tid,
            txn,
            behind,
            live.state(r)
        ));
    }
    s.push_str("]}\n");
    s
}
