//! `mdb load` / `mdb_load`: read the portable text format into an environment.

use crate::dumpfmt::{decode_hex, decode_print};
use crate::getopt::{Getopt, Opt};
use crate::progress::{Progress, Unit};
use crate::{errln, lib_err, usage, Invocation};
use mdb::{Database, DbFlags, Env, EnvFlags, EnvOptions, ErrorKind, RwTxn, Txn, WriteFlags};
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;

const SYNOPSIS: &str = "[-V] [-a] [-f input] [-n] [-s name] [-N] [-T] dbpath";

const HELP: &str = "\
Usage: mdb load [-V] [-a] [-f input] [-n] [-s name] [-N] [-T] dbpath

Load data in the portable text format written by `mdb dump` into an LMDB
environment (same behaviour and messages as mdb_load). The directory dbpath
must exist; an empty one gets a new environment.

Options:
  -V          print the version and exit
  -a          append: the input is already in key order; store it with
              MDB_APPEND (faster; out-of-order keys are an error)
  -f FILE     read FILE instead of standard input
  -n          dbpath is the data file itself, not a directory (MDB_NOSUBDIR)
  -s NAME     load into the named database NAME (a database= header wins)
  -N          do not overwrite: keep existing records, skip those in the input
  -T          plain text input: no header, no leading spaces, lines taken in
              pairs (key, value), `\\\\` for a backslash and `\\xx` for a byte

Records are committed in batches of 100.

Exit status: 0 on success, 1 on error. As in LMDB, a malformed key line ends
the input: what was read before it is committed and the status is 0.
";

/// What the header of a section says.
struct Header {
    print: bool,
    name: Option<Vec<u8>>,
    flags: u16,
    map_size: usize,
    max_readers: u32,
    map_addr: usize,
}

impl Header {
    fn new(name: Option<Vec<u8>>) -> Header {
        Header {
            print: false,
            name,
            flags: 0,
            map_size: 0,
            max_readers: 0,
            map_addr: 0,
        }
    }
}

/// The input and its position.
struct Input {
    r: Box<dyn BufRead>,
    /// Number of the last line read (1-based).
    lineno: u64,
    /// Input exhausted, or ended by an error in a key line.
    eof: bool,
    line: Vec<u8>,
    /// Longest record line that can be stored: one whose data is as large
    /// as the map (escapes take up to 3 bytes per byte). Longer input is an
    /// error, not an unbounded buffer.
    max_record_line: usize,
    /// Bytes read so far, and the progress bar they feed (`mdb load` on a terminal).
    bytes: u64,
    bar: Progress,
}

/// LMDB reads header lines with `fgets` into a 4096-byte buffer: a longer
/// line comes as several, each counted.
const HEADER_CHUNK: usize = 4095;

/// Outcome of reading one record line.
enum Rec {
    /// Decoded data is in the caller's buffer.
    Data,
    /// A `DATA=END` line: the section is over.
    End,
    /// End of input (no message).
    Eof,
    /// Malformed line; the message is printed and the input is over.
    Bad,
    /// A line too long to be stored (read no further; no message yet).
    TooLong,
}

impl Input {
    /// Read one line, with its newline if it has one, but at most `max`
    /// bytes of it (the rest is read as the next line); `false` at end of
    /// input. A read error ends the input.
    fn raw_line(&mut self, max: usize) -> bool {
        self.line.clear();
        while self.line.len() < max {
            let buf = match self.r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            if buf.is_empty() {
                break;
            }
            let room = &buf[..buf.len().min(max - self.line.len())];
            let (n, newline) = match room.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (room.len(), false),
            };
            self.line.extend_from_slice(&room[..n]);
            self.r.consume(n);
            if newline {
                break;
            }
        }
        self.bytes += self.line.len() as u64;
        self.bar.update(self.bytes);
        !self.line.is_empty()
    }

    fn bad(&mut self, prog: &[u8]) -> Rec {
        self.eof = true;
        self.bar.clear();
        errln(&[
            prog,
            b": line ",
            self.lineno.to_string().as_bytes(),
            b": unexpected end of input",
        ]);
        Rec::Bad
    }

    /// Read a record line (key or value) and decode it into `out`.
    fn record(&mut self, prog: &[u8], text: bool, print: bool, out: &mut Vec<u8>) -> Rec {
        let max = self.max_record_line;
        if !self.raw_line(max.saturating_add(1)) {
            self.eof = true;
            return Rec::Eof;
        }
        if self.line.len() > max {
            self.lineno += 1;
            self.eof = true;
            return Rec::TooLong;
        }
        let start = if text {
            0
        } else if self.line[0] != b' ' {
            self.lineno += 1;
            if self.line.starts_with(b"DATA=END") {
                return Rec::End;
            }
            return self.bad(prog);
        } else if self.line.len() == 1 {
            // A lone space at the very end of the input: plain end of input.
            self.eof = true;
            return Rec::Eof;
        } else {
            1
        };
        self.lineno += 1;
        if self.line.last() != Some(&b'\n') {
            return self.bad(prog);
        }
        let body = &self.line[start..self.line.len() - 1];
        let r = if print {
            decode_print(body, out)
        } else {
            decode_hex(body, out)
        };
        match r {
            Ok(()) => Rec::Data,
            Err(_) => self.bad(prog),
        }
    }

    fn msg(&self, prog: &[u8], parts: &[&[u8]]) {
        self.bar.clear();
        let n = self.lineno.to_string();
        let mut all: Vec<&[u8]> = vec![prog, b": line ", n.as_bytes(), b": "];
        all.extend_from_slice(parts);
        errln(&all);
    }

    /// Read a header up to `HEADER=END` (or the end of input) into `h`.
    /// `Err` means a fatal error, already reported.
    fn header(&mut self, prog: &[u8], h: &mut Header) -> Result<(), ()> {
        loop {
            if !self.raw_line(HEADER_CHUNK) {
                self.eof = true;
                return Ok(());
            }
            self.lineno += 1;
            let line = std::mem::take(&mut self.line);
            let r = self.header_line(prog, h, &line);
            self.line = line;
            match r {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(()) => return Err(()),
            }
        }
    }

    /// One header line; `Ok(true)` at `HEADER=END`.
    fn header_line(&self, prog: &[u8], h: &mut Header, line: &[u8]) -> Result<bool, ()> {
        // Values end at the newline, as LMDB strips it before using them.
        let chomp = |v: &[u8]| -> Vec<u8> {
            match v.iter().position(|&b| b == b'\n') {
                Some(i) => v[..i].to_vec(),
                None => v.to_vec(),
            }
        };
        if let Some(v) = line.strip_prefix(b"VERSION=") {
            let version = c_atoi(v);
            if version > 3 {
                self.msg(
                    prog,
                    &[b"unsupported VERSION ", version.to_string().as_bytes()],
                );
                return Err(());
            }
        } else if line.starts_with(b"HEADER=END") {
            return Ok(true);
        } else if let Some(v) = line.strip_prefix(b"format=") {
            if v.starts_with(b"print") {
                h.print = true;
            } else if v.starts_with(b"bytevalue") {
                h.print = false;
            } else {
                // LMDB prints the rest of the line with its newline, then another one.
                self.msg(prog, &[b"unsupported FORMAT ", v]);
                return Err(());
            }
        } else if let Some(v) = line.strip_prefix(b"database=") {
            let mut name = chomp(v);
            if let Some(i) = name.iter().position(|&b| b == 0) {
                name.truncate(i);
            }
            h.name = Some(name);
        } else if let Some(v) = line.strip_prefix(b"type=") {
            if !v.starts_with(b"btree") {
                self.msg(prog, &[b"unsupported type ", v]);
                return Err(());
            }
        } else if let Some(v) = line.strip_prefix(b"mapaddr=") {
            let v = chomp(v);
            match scan_pointer(&v) {
                Some(a) => h.map_addr = a as usize,
                None => {
                    self.msg(prog, &[b"invalid mapaddr ", &v]);
                    return Err(());
                }
            }
        } else if let Some(v) = line.strip_prefix(b"mapsize=") {
            let v = chomp(v);
            match scan_unsigned(&v) {
                Some(n) => h.map_size = n as usize,
                None => {
                    self.msg(prog, &[b"invalid mapsize ", &v]);
                    return Err(());
                }
            }
        } else if let Some(v) = line.strip_prefix(b"maxreaders=") {
            let v = chomp(v);
            // `%u`: the low 32 bits; 0 leaves the default.
            match scan_unsigned(&v).map(|n| n as u32) {
                Some(n) if n > mdb::MAX_READERS => {
                    // LMDB takes it and sizes the lock file to match: a
                    // 256 GiB lock file for 2^32-1.
                    let (n, max) = (n.to_string(), mdb::MAX_READERS.to_string());
                    let parts: [&[u8]; 4] = [
                        b"maxreaders ",
                        n.as_bytes(),
                        b" exceeds the limit of ",
                        max.as_bytes(),
                    ];
                    self.msg(prog, &parts);
                    return Err(());
                }
                Some(n) => h.max_readers = n,
                None => {
                    self.msg(prog, &[b"invalid maxreaders ", &v]);
                    return Err(());
                }
            }
        } else if let Some(f) = flag_keyword(line) {
            // The value is not looked at: `dupsort=0` sets DUPSORT too.
            h.flags |= f.bits();
        } else {
            let body = chomp(line);
            match body.iter().position(|&b| b == b'=') {
                Some(i) => self.msg(prog, &[b"unrecognized keyword ignored: ", &body[..i]]),
                None => {
                    self.msg(prog, &[b"unexpected format"]);
                    return Err(());
                }
            }
        }
        Ok(false)
    }
}

/// `<flag>=` keywords of the header.
fn flag_keyword(line: &[u8]) -> Option<DbFlags> {
    const KW: [(&[u8], DbFlags); 6] = [
        (b"reversekey=", DbFlags::REVERSE_KEY),
        (b"dupsort=", DbFlags::DUP_SORT),
        (b"integerkey=", DbFlags::INTEGER_KEY),
        (b"dupfixed=", DbFlags::DUP_FIXED),
        (b"integerdup=", DbFlags::INTEGER_DUP),
        (b"reversedup=", DbFlags::REVERSE_DUP),
    ];
    KW.iter()
        .find(|(k, _)| line.starts_with(k))
        .map(|&(_, f)| f)
}

fn skip_space(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .take_while(|&&b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .count();
    &s[n..]
}

/// C `atoi` (through `strtol`, then truncated to `int`).
fn c_atoi(s: &[u8]) -> i32 {
    let s = skip_space(s);
    let (neg, s) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i128 = 0;
    for &b in s.iter().take_while(|b| b.is_ascii_digit()) {
        v = (v * 10 + (b - b'0') as i128).min(i64::MAX as i128 + 1);
    }
    let v = if neg { -v } else { v };
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64 as i32
}

/// `sscanf("%zu")` / `"%u"`: optional sign, at least one decimal digit,
/// saturating, a minus sign negates modulo 2^64. Trailing text is ignored.
fn scan_unsigned(s: &[u8]) -> Option<u64> {
    scan_number(s, 10, false)
}

/// `sscanf("%p")`: a hexadecimal number with an optional `0x`.
fn scan_pointer(s: &[u8]) -> Option<u64> {
    scan_number(s, 16, true)
}

fn scan_number(s: &[u8], radix: u32, hex_prefix: bool) -> Option<u64> {
    let s = skip_space(s);
    let (neg, mut s) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if hex_prefix
        && s.len() > 2
        && s[0] == b'0'
        && (s[1] | 0x20) == b'x'
        && s[2].is_ascii_hexdigit()
    {
        s = &s[2..];
    }
    let digits: Vec<u32> = s
        .iter()
        .map_while(|&b| (b as char).to_digit(radix))
        .collect();
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for d in digits {
        v = match v
            .checked_mul(radix as u64)
            .and_then(|x| x.checked_add(d as u64))
        {
            Some(x) => x,
            None => return Some(u64::MAX),
        };
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

#[derive(Default)]
struct Opts {
    append: bool,
    no_subdir: bool,
    sub: Option<Vec<u8>>,
    no_overwrite: bool,
    text: bool,
}

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, args: Vec<OsString>) -> i32 {
    crate::default_sigpipe();
    let prog = &inv.prog[..];
    let mut o = Opts::default();
    let mut input: Option<File> = None;
    let g = Getopt::new(args, "af:ns:NTV").with_long_help(inv.long_help);
    let mut g = crate::ToolOpts::new(g, prog, (SYNOPSIS, HELP), 1, true);
    for opt in &mut g {
        match opt {
            Opt::Flag(b'a') => o.append = true,
            Opt::Arg(b'f', file) => match File::open(&file) {
                Ok(f) => input = Some(f),
                Err(e) => {
                    let text = crate::os_strerror(&e);
                    errln(&[prog, b": ", file.as_bytes(), b": reopen: ", text.as_bytes()]);
                    return 1;
                }
            },
            Opt::Flag(b'n') => o.no_subdir = true,
            Opt::Arg(b's', v) => o.sub = Some(v.as_bytes().to_vec()),
            Opt::Flag(b'N') => o.no_overwrite = true,
            Opt::Flag(b'T') => o.text = true,
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
    // `mdb load` (not the LMDB-named form) shows a progress bar on a terminal.
    let bar = if inv.long_help {
        let total = match &input {
            Some(f) => input_size(f.as_raw_fd()),
            None => input_size(0),
        };
        Progress::new("load", total, Unit::Bytes).stride(64)
    } else {
        Progress::disabled()
    };
    let r: Box<dyn BufRead> = match input {
        Some(f) => Box::new(BufReader::with_capacity(1 << 16, f)),
        None => Box::new(BufReader::with_capacity(1 << 16, std::io::stdin())),
    };
    let mut inp = Input {
        r,
        lineno: 0,
        eof: false,
        line: Vec::with_capacity(4096),
        // Set from the map size once the environment is open.
        max_record_line: usize::MAX,
        bytes: 0,
        bar,
    };
    load(prog, &o, &ops[0], &mut inp)
}

/// Size of the input if it is a regular file (0: unknown).
fn input_size(fd: i32) -> u64 {
    // SAFETY: fstat fills a stat struct that we own.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFREG {
            return st.st_size as u64;
        }
    }
    0
}

fn load(prog: &[u8], o: &Opts, path: &OsString, inp: &mut Input) -> i32 {
    let mut hdr = Header::new(o.sub.clone());
    if o.text {
        hdr.print = true;
    } else if inp.header(prog, &mut hdr).is_err() {
        return 1;
    }

    let mut flags = EnvFlags::NO_SYNC;
    if o.no_subdir {
        flags = flags | EnvFlags::NO_SUB_DIR;
    }
    if hdr.map_addr != 0 {
        flags = flags | EnvFlags::FIXED_MAP;
    }
    let mut eo = EnvOptions::new();
    // LMDB's fixed map, as its tools open it.
    eo.auto_grow(false);
    eo.max_dbs(2).flags(flags).mode(0o664);
    if hdr.max_readers != 0 {
        eo.max_readers(hdr.max_readers);
    }
    if hdr.map_size != 0 {
        // As given, even past what can be mapped: the new file records it
        // and the open fails with ENOMEM, as in LMDB.
        eo.map_size(hdr.map_size);
    }
    let env = match eo.open(path) {
        Ok(e) => e,
        Err(e) => {
            lib_err("mdb_env_open", e);
            return 1;
        }
    };
    // A line holds a record's data once, with up to 3 bytes per byte
    // (print format's escapes), plus the leading space and the newline.
    let map_size = env.info().map_or(usize::MAX, |i| i.map_size);
    inp.max_record_line = map_size.saturating_mul(3).saturating_add(2);

    let mut status = 0;
    while !inp.eof {
        if section(prog, o, &env, &hdr, inp).is_err() {
            status = 1;
            break;
        }
        if o.text || inp.eof {
            break;
        }
        // Each section starts from the defaults: bytevalue, no flags, the -s name.
        hdr = Header::new(o.sub.clone());
        if inp.header(prog, &mut hdr).is_err() {
            status = 1;
            break;
        }
    }
    inp.bar.finish();
    // Commits ran with MDB_NOSYNC; make everything durable once, at the end.
    if let Err(e) = env.sync(true) {
        lib_err("mdb_env_sync", e);
        status = 1;
    }
    status
}

/// Open (or create) the section's database, as `mdb_dbi_open(name, flags|MDB_CREATE)`.
fn open_db(txn: &mut RwTxn<'_>, hdr: &Header) -> mdb::Result<Database> {
    match &hdr.name {
        Some(name) => txn.create_db(name, DbFlags(hdr.flags)),
        None => {
            // LMDB ORs the header's flags into the main DB's.
            let cur = txn.db_flags(Database::MAIN)?;
            let want = cur.bits() | hdr.flags;
            if want != cur.bits() {
                txn.set_main_flags(DbFlags(want))?;
            }
            Ok(Database::MAIN)
        }
    }
}

/// Load the records of one section. `Err` means failure (already reported).
fn section(prog: &[u8], o: &Opts, env: &Env, hdr: &Header, inp: &mut Input) -> Result<(), ()> {
    let begin = || {
        env.write_txn().map_err(|e| {
            lib_err("mdb_txn_begin", e);
        })
    };
    let mut txn = begin()?;
    let db = open_db(&mut txn, hdr).map_err(|e| lib_err("mdb_open", e))?;
    let mut put_flags = WriteFlags::EMPTY;
    if o.no_overwrite {
        put_flags = put_flags | WriteFlags::NO_OVERWRITE | WriteFlags::NO_DUP_DATA;
    }
    if o.append {
        put_flags = put_flags | WriteFlags::APPEND;
    }
    let mut key = Vec::with_capacity(1024);
    let mut val = Vec::with_capacity(4096);
    let mut batch = 0;
    // DATA=END, the end of input, or a malformed key line (which ends the
    // input like EOF) all end the section: commit what we have.
    loop {
        // A line too long for the map fails as its put would: LMDB reads
        // it whole first (and runs out of memory on endless input).
        match inp.record(prog, o.text, hdr.print, &mut key) {
            Rec::Data => {}
            Rec::TooLong => return put_failed(prog, inp, ErrorKind::BadValSize.into()),
            Rec::End | Rec::Eof | Rec::Bad => break,
        }
        match inp.record(prog, o.text, hdr.print, &mut val) {
            Rec::Data => {}
            Rec::TooLong => return put_failed(prog, inp, ErrorKind::MapFull.into()),
            _ => {
                inp.msg(prog, &[b"failed to read key value"]);
                return Err(());
            }
        }
        match txn.put(db, &key, &val, put_flags) {
            Ok(()) => {}
            Err(e)
                if e == ErrorKind::KeyExist
                    && o.no_overwrite
                    && (!o.append || key_exists(&txn, db, &key)) =>
            {
                continue;
            }
            Err(e) => return put_failed(prog, inp, e),
        }
        batch += 1;
        if batch == 100 {
            commit(prog, inp, txn)?;
            txn = begin()?;
            batch = 0;
        }
    }
    commit(prog, inp, txn)?;
    env.close_db(db);
    Ok(())
}

/// Report a failed put, as LMDB 0.9.25+ does; the section fails.
fn put_failed(prog: &[u8], inp: &Input, e: mdb::Error) -> Result<(), ()> {
    inp.msg(
        prog,
        &[
            b"mdb_cursor_put failed, error ",
            e.code().to_string().as_bytes(),
            b" ",
            e.kind().to_string().as_bytes(),
        ],
    );
    Err(())
}

fn key_exists(txn: &RwTxn<'_>, db: Database, key: &[u8]) -> bool {
    matches!(txn.get(db, key), Ok(Some(_)))
}

fn commit(prog: &[u8], inp: &Input, txn: RwTxn<'_>) -> Result<(), ()> {
    txn.commit().map_err(|e| {
        inp.msg(prog, &[b"txn_commit: ", e.kind().to_string().as_bytes()]);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scanf_like_numbers() {
        assert_eq!(scan_unsigned(b"2097152"), Some(2097152));
        assert_eq!(scan_unsigned(b" 12abc"), Some(12));
        assert_eq!(scan_unsigned(b"abc"), None);
        assert_eq!(scan_unsigned(b""), None);
        assert_eq!(scan_unsigned(b"-1"), Some(u64::MAX));
        assert_eq!(scan_unsigned(b"99999999999999999999999"), Some(u64::MAX));
        assert_eq!(scan_pointer(b"0x7f0000000000"), Some(0x7f00_0000_0000));
        assert_eq!(scan_pointer(b"abc"), Some(0xabc));
        assert_eq!(scan_pointer(b"zz"), None);
        assert_eq!(c_atoi(b"3"), 3);
        assert_eq!(c_atoi(b" 4x"), 4);
        assert_eq!(c_atoi(b"abc"), 0);
        assert_eq!(c_atoi(b"-7"), -7);
    }

    #[test]
    fn flag_keywords() {
        assert_eq!(flag_keyword(b"dupsort=0\n"), Some(DbFlags::DUP_SORT));
        assert_eq!(flag_keyword(b"integerkey=1\n"), Some(DbFlags::INTEGER_KEY));
        assert_eq!(flag_keyword(b"dupsort\n"), None);
        assert_eq!(flag_keyword(b"duplicates=1\n"), None);
    }
}
