//! `mdb copy`, `mdb drop`, `mdb check` and `mdb readers`.
//!
//! * copy and drop are compared with Debian's `mdb_copy` (LMDB 0.9.24) and
//!   with tools.md §5's recorded `mdb_drop` behaviour, and their results are
//!   read back with Debian's `mdb_dump` and `mdb_stat`;
//! * check passes on every file made here and fails, naming the page, on ten
//!   kinds of damage;
//! * readers --check clears the slot of a reader killed with SIGKILL.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

// Shared with mdb's tests: fail, naming the Debian package, when a tool is missing.
#[path = "../../mdb/tests/debian/mod.rs"]
mod debian;

const OURS: &str = env!("CARGO_BIN_EXE_mdb");

#[derive(Debug, Clone, PartialEq, Eq)]
struct Run {
    out: Vec<u8>,
    err: String,
    code: i32,
}

impl Run {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.out).into_owned()
    }
}

fn exec(mut cmd: Command) -> Run {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let o = cmd.output().expect("spawn");
    use std::os::unix::process::ExitStatusExt;
    Run {
        out: o.stdout,
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
        code: o
            .status
            .code()
            .unwrap_or_else(|| 128 + o.status.signal().unwrap_or(0)),
    }
}

/// Debian's tool, with `argv[0]` = its plain name.
fn deb<S: AsRef<OsStr>>(tool: &str, args: &[S]) -> Run {
    let mut c = Command::new(format!("/usr/bin/{tool}"));
    c.arg0(tool).args(args);
    exec(c)
}

/// Our binary under the LMDB tool's name (busybox style).
fn ours<S: AsRef<OsStr>>(tool: &str, args: &[S]) -> Run {
    let mut c = Command::new(OURS);
    c.arg0(tool).args(args);
    exec(c)
}

/// Our binary as `mdb <cmd> ...`.
fn mdb<S: AsRef<OsStr>>(cmd: &str, args: &[S]) -> Run {
    let mut c = Command::new(OURS);
    c.arg(cmd).args(args);
    exec(c)
}

fn tmpdir() -> tempfile::TempDir {
    if Path::new("/dev/shm").is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("mdbcc")
            .tempdir_in("/dev/shm")
        {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

fn p(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One section of a dump in bytevalue format.
fn section(name: Option<&str>, extra: &[&str], recs: &[(Vec<u8>, Vec<u8>)]) -> String {
    let mut s = String::from("VERSION=3\nformat=bytevalue\n");
    if let Some(n) = name {
        s += &format!("database={n}\n");
    }
    s += "type=btree\n";
    for e in extra {
        s += e;
        s += "\n";
    }
    s += "HEADER=END\n";
    for (k, v) in recs {
        s += &format!(" {}\n {}\n", hex(k), hex(v));
    }
    s + "DATA=END\n"
}

fn rec(k: impl AsRef<[u8]>, v: impl AsRef<[u8]>) -> (Vec<u8>, Vec<u8>) {
    (k.as_ref().to_vec(), v.as_ref().to_vec())
}

/// Load `text` with Debian's mdb_load into `dir` (created if needed).
fn deb_load(dir: &Path, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let mut c = Command::new("/usr/bin/mdb_load");
    c.arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut i = child.stdin.take().unwrap();
    let data = text.as_bytes().to_vec();
    let t = std::thread::spawn(move || {
        use std::io::Write;
        let _ = i.write_all(&data);
    });
    let o = child.wait_with_output().unwrap();
    t.join().unwrap();
    assert!(
        o.status.success(),
        "mdb_load failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// tools.md §8's sample, bigger: main `mainkey`; `fruits` (plain), `nums`
/// (INTEGERKEY), `tags` (DUPSORT, one key with a sub-DB), `fixed`
/// (DUPSORT|DUPFIXED|INTEGERDUP|REVERSEKEY, one key with a LEAF2 sub-DB),
/// `alpha` (3000 keys, overflow values, depth 2) and `beta` (REVERSEKEY);
/// then update transactions, so the free list is not empty.
fn rich(dir: &Path) {
    let mut t = section(
        Some("fruits"),
        &["mapsize=16777216"],
        &[
            rec("apple", "red"),
            rec("back\\slash", "tab\there\nnewline"),
            rec("banana", "yellow fruit"),
            rec("binary", [0u8, 1, 0x7f, 0x80, 0xff, b'A']),
            rec("empty", ""),
        ],
    );
    t += &section(
        Some("nums"),
        &["integerkey=1"],
        &(1u32..=3)
            .map(|i| rec(i.to_ne_bytes(), format!("n{i}")))
            .collect::<Vec<_>>(),
    );
    let mut tags = vec![
        rec("color", "blue"),
        rec("color", "green"),
        rec("shape", "round"),
    ];
    tags.extend((0..500).map(|i| rec("many", format!("v{i:05}"))));
    t += &section(Some("tags"), &["dupsort=1"], &tags);
    let mut fixed: Vec<_> = (10u32..13).map(|v| rec("key", v.to_ne_bytes())).collect();
    fixed.extend((0u32..800).map(|v| rec("lots", v.to_ne_bytes())));
    t += &section(
        Some("fixed"),
        &["dupsort=1", "dupfixed=1", "integerdup=1", "reversekey=1"],
        &fixed,
    );
    let alpha: Vec<_> = (0..3000)
        .map(|i| {
            let v = if i % 97 == 5 {
                vec![b'a' + (i % 26) as u8; 3000 + i % 500]
            } else {
                format!("value {i}").into_bytes()
            };
            (format!("key{i:08}").into_bytes(), v)
        })
        .collect();
    t += &section(Some("alpha"), &[], &alpha);
    let beta: Vec<_> = (0..2000)
        .map(|i| rec(format!("b{i:06}"), format!("beta value {i}")))
        .collect();
    t += &section(Some("beta"), &["reversekey=1"], &beta);
    deb_load(dir, &t);
    deb_load(dir, &section(None, &[], &[rec("mainkey", "mainval")]));
    for i in 0..3 {
        let t = section(
            Some("alpha"),
            &[],
            &(0..40)
                .map(|k| rec(format!("key{:08}", k * 71 + i), format!("new {i}")))
                .collect::<Vec<_>>(),
        );
        deb_load(dir, &t);
    }
}

fn dump_all(dir: &Path) -> Run {
    deb("mdb_dump", &["-a", p(dir)])
}

// ---------------------------------------------------------------------------
// copy

#[test]
fn copy_matches_mdb_copy() {
    debian::lmdb_utils();
    let t = tmpdir();
    let src = t.path().join("src");
    rich(&src);
    let sp = p(&src);
    let want_dump = dump_all(&src);
    assert_eq!(want_dump.code, 0);
    for compact in [false, true] {
        let flag: &[&str] = if compact { &["-c"] } else { &[] };
        // To a directory, in all three forms.
        let mut files = Vec::new();
        for (i, form) in ["deb", "busybox", "sub"].iter().enumerate() {
            let d = t.path().join(format!("c{compact}{i}"));
            std::fs::create_dir(&d).unwrap();
            let mut args: Vec<&str> = flag.to_vec();
            args.extend([sp, p(&d)]);
            let r = match *form {
                "deb" => deb("mdb_copy", &args),
                "busybox" => ours("mdb_copy", &args),
                _ => mdb("copy", &args),
            };
            assert_eq!((r.code, r.err.as_str(), r.out.len()), (0, "", 0), "{form}");
            assert!(!d.join("lock.mdb").exists());
            files.push(std::fs::read(d.join("data.mdb")).unwrap());
            // The copy reads back the same, with Debian's tools.
            assert_eq!(dump_all(&d), want_dump, "{form} compact={compact}");
            let st = deb("mdb_stat", &["-efa", p(&d)]);
            assert_eq!(st.code, 0);
            if compact {
                assert!(st.text().contains("  Free pages: 0\n"));
            }
            assert_eq!(mdb("check", &[p(&d)]).code, 0);
        }
        assert!(files[0] == files[1], "busybox copy differs from mdb_copy");
        assert!(files[0] == files[2], "`mdb copy` differs from mdb_copy");
        // To standard output.
        let mut args: Vec<&str> = flag.to_vec();
        args.push(sp);
        let d = deb("mdb_copy", &args);
        let o = mdb("copy", &args);
        assert_eq!(d.code, 0);
        assert_eq!(o, d, "stdout copy differs");
        assert!(o.out == files[0]);
    }
}

#[test]
fn copy_errors_and_options_like_mdb_copy() {
    debian::lmdb_utils();
    let t = tmpdir();
    let src = t.path().join("src");
    rich(&src);
    let sp = p(&src);
    let dst = t.path().join("dst");
    std::fs::create_dir(&dst).unwrap();
    let dp = p(&dst);
    let missing = t.path().join("nope");
    let mp = p(&missing);
    let mut cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["-x", sp],
        vec!["-"],
        vec![sp, dp, "third"],
        vec!["-c", "-n"],
        vec![mp],
        vec![mp, dp],
        vec![sp, mp],
        vec!["-c", sp, mp],
        vec!["-v", sp, dp],
    ];
    // Exists after the first copy: EEXIST, in both modes.
    cases.push(vec![sp, dp]);
    cases.push(vec!["-c", sp, dp]);
    deb("mdb_copy", &[sp, dp]);
    for c in &cases {
        let d = deb("mdb_copy", c);
        let o = ours("mdb_copy", c);
        assert_eq!(o, d, "mdb_copy {c:?}");
        assert_eq!(d.code, 1, "{c:?}");
    }
    let r = deb("mdb_copy", &[sp, dp]);
    assert_eq!(r.err, "mdb_copy: copying failed, error 17 (File exists)\n");
    // `mdb copy` names itself mdb_copy, and knows -v and --help.
    let r = mdb("copy", &[sp, dp]);
    assert_eq!(r.err, "mdb_copy: copying failed, error 17 (File exists)\n");
    let r = mdb("copy", &["-x"]);
    assert_eq!(
        r.err,
        "usage: mdb_copy [-V] [-c] [-n] [-v] srcpath [dstpath]\n"
    );
    let r = mdb("copy", &["--help"]);
    assert_eq!(r.code, 0);
    assert!(r.text().starts_with("Usage: mdb copy "));
    for form in [ours("mdb_copy", &["-V"]), mdb("copy", &["-V", "x", "y"])] {
        assert_eq!(form.code, 0);
        assert!(form.text().starts_with("mdb "));
    }
    // -v: a summary on stderr (no bar: stderr is not a terminal).
    let d2 = t.path().join("d2");
    std::fs::create_dir(&d2).unwrap();
    let r = mdb("copy", &["-v", "-c", sp, p(&d2)]);
    assert_eq!(r.code, 0);
    assert!(r.err.starts_with("mdb_copy: copied "), "{}", r.err);
    assert!(!r.err.contains('\r'));
    // Without -v, nothing at all.
    let d3 = t.path().join("d3");
    std::fs::create_dir(&d3).unwrap();
    assert_eq!(
        mdb("copy", &["-c", sp, p(&d3)]),
        Run {
            out: vec![],
            err: String::new(),
            code: 0
        }
    );

    // NOSUBDIR: file to file.
    let single = t.path().join("single.mdb");
    std::fs::copy(src.join("data.mdb"), &single).unwrap();
    for (i, c) in [false, true].into_iter().enumerate() {
        let (a, b) = (
            t.path().join(format!("n{i}d.mdb")),
            t.path().join(format!("n{i}o.mdb")),
        );
        let mut da = vec!["-n"];
        if c {
            da.push("-c");
        }
        let mut db = da.clone();
        da.extend([p(&single), p(&a)]);
        db.extend([p(&single), p(&b)]);
        assert_eq!(deb("mdb_copy", &da).code, 0);
        assert_eq!(ours("mdb_copy", &db).code, 0);
        assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap());
        assert!(!Path::new(&format!("{}-lock", p(&b))).exists());
    }
}

/// A closed pipe ends the copy with EPIPE, reported as mdb_copy does.
#[test]
fn copy_to_closed_pipe() {
    debian::lmdb_utils();
    let t = tmpdir();
    let src = t.path().join("src");
    rich(&src);
    for mine in [false, true] {
        let mut c = if mine {
            Command::new(OURS)
        } else {
            Command::new("/usr/bin/mdb_copy")
        };
        c.arg0("mdb_copy")
            .arg(&src)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut first = [0u8; 100];
        out.read_exact(&mut first).unwrap();
        drop(out);
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let st = child.wait().unwrap();
        assert_eq!(
            err, "mdb_copy: copying failed, error 32 (Broken pipe)\n",
            "ours={mine}"
        );
        assert_eq!(st.code(), Some(1), "ours={mine}");
    }
}

/// On a terminal, `mdb copy -v` draws a progress bar on stderr and erases it.
#[test]
fn copy_progress_bar_on_a_terminal() {
    debian::lmdb_utils();
    debian::need("/usr/bin/script", "bsdutils");
    let t = tmpdir();
    let src = t.path().join("src");
    rich(&src);
    let dst = t.path().join("dst");
    std::fs::create_dir(&dst).unwrap();
    let cmd = format!("{OURS} copy -v -c {} {}", p(&src), p(&dst));
    let mut c = Command::new("/usr/bin/script");
    c.args(["-qec", &cmd, "/dev/null"]);
    let r = exec(c);
    assert_eq!(r.code, 0, "{r:?}");
    let s = r.text();
    assert!(s.contains("\rcompact copy ["), "{s:?}");
    assert!(s.contains("\r\x1b[K"), "{s:?}");
    assert!(s.contains("mdb_copy: copied "), "{s:?}");
}

// ---------------------------------------------------------------------------
// drop

#[test]
fn drop_and_delete_round_trip_with_lmdb_tools() {
    debian::lmdb_utils();
    let t = tmpdir();
    let d = t.path().join("e");
    rich(&d);
    let dp = p(&d);
    let check_ok = |what: &str| {
        let r = mdb("check", &[dp]);
        assert_eq!(r.code, 0, "after {what}: {}", r.text());
    };
    for db in ["fruits", "tags", "fixed", "alpha"] {
        let saved = deb("mdb_dump", &["-s", db, dp]);
        assert_eq!(saved.code, 0);
        // Empty it: the DB stays, with no records and its flags.
        let r = if db == "tags" {
            ours("mdb_drop", &["-s", db, dp])
        } else {
            mdb("drop", &["-s", db, dp])
        };
        assert_eq!((r.code, r.err.as_str(), r.out.len()), (0, "", 0));
        let after = deb("mdb_dump", &["-s", db, dp]);
        assert_eq!(after.code, 0);
        let header_end = saved.text().find("HEADER=END\n").unwrap() + 11;
        assert_eq!(
            after.text(),
            format!("{}DATA=END\n", &saved.text()[..header_end])
        );
        assert!(deb("mdb_stat", &["-s", db, dp])
            .text()
            .contains("  Entries: 0\n"));
        check_ok("emptying");
        // Delete it: the name is gone.
        let r = mdb("drop", &["-d", "-s", db, dp]);
        assert_eq!(r.code, 0, "{}", r.err);
        let list = deb("mdb_dump", &["-l", dp]).text();
        assert!(!list.lines().any(|l| l == db), "{list}");
        check_ok("deleting");
        // Load the saved dump back: the same dump again.
        deb_load(&d, &saved.text());
        assert_eq!(deb("mdb_dump", &["-s", db, dp]), saved, "{db}");
        check_ok("reloading");
    }
    // Errors, as recorded for LMDB's mdb_drop.
    let r = mdb("drop", &["-s", "nosuch", dp]);
    assert_eq!(
        (r.code, r.err.as_str()),
        (
            1,
            "mdb_open failed, error -30798 MDB_NOTFOUND: No matching key/data pair found\n"
        )
    );
    let r = mdb("drop", &["-s", "mainkey", dp]);
    assert_eq!(
        (r.code, r.err.as_str()),
        (
            1,
            "mdb_open failed, error -30784 MDB_INCOMPATIBLE: Operation and DB incompatible, or DB flags changed\n"
        )
    );
    let r = ours("mdb_drop", &[p(&t.path().join("nonexist"))]);
    assert_eq!(
        (r.code, r.err.as_str()),
        (
            1,
            "mdb_env_open failed, error 2 No such file or directory\n"
        )
    );
    for args in [&[][..], &["-x", dp], &[dp, dp]] {
        let r = ours("mdb_drop", args);
        assert_eq!(r.code, 1);
        assert!(
            r.err
                .ends_with("usage: mdb_drop [-V] [-n] [-d] [-s subdb] dbpath\n"),
            "{}",
            r.err
        );
    }
    // Emptying the main DB removes the named DBs too, and frees their pages:
    // nothing leaks, so LMDB's compacting copy still works afterwards.
    let pages_before = deb("mdb_stat", &["-e", dp]).text();
    let r = mdb("drop", &[dp]);
    assert_eq!(r.code, 0, "{}", r.err);
    let r = deb("mdb_dump", &["-a", dp]);
    assert_eq!(
        (r.code, r.err.clone()),
        (
            1,
            format!("mdb_dump: {dp} does not contain multiple databases\n")
        )
    );
    check_ok("emptying main");
    let c = t.path().join("c");
    std::fs::create_dir(&c).unwrap();
    let r = deb("mdb_copy", &["-c", dp, p(&c)]);
    assert_eq!(r.code, 0, "{} / {pages_before}", r.err);
    assert_eq!(
        std::fs::metadata(c.join("data.mdb")).unwrap().len(),
        2 * 4096
    );
    // -d on the main DB only empties it.
    assert_eq!(mdb("drop", &["-d", dp]).code, 0);
    check_ok("main again");
}

#[test]
fn drop_nosubdir() {
    debian::lmdb_utils();
    let t = tmpdir();
    let d = t.path().join("e");
    rich(&d);
    let f = t.path().join("file.mdb");
    std::fs::copy(d.join("data.mdb"), &f).unwrap();
    let r = ours("mdb_drop", &["-n", "-d", "-s", "beta", p(&f)]);
    assert_eq!(r.code, 0, "{}", r.err);
    let list = deb("mdb_dump", &["-n", "-l", p(&f)]).text();
    assert!(!list.contains("beta"));
    assert!(list.contains("alpha"));
    assert_eq!(mdb("check", &["-n", p(&f)]).code, 0);
}

// ---------------------------------------------------------------------------
// check

/// Raw access to a data file, for finding pages to damage.
struct Raw {
    b: Vec<u8>,
}

const PS: usize = 4096;

impl Raw {
    fn u16(&self, off: usize) -> usize {
        u16::from_le_bytes([self.b[off], self.b[off + 1]]) as usize
    }
    fn u64(&self, off: usize) -> u64 {
        u64::from_le_bytes(self.b[off..off + 8].try_into().unwrap())
    }
    fn put64(&mut self, off: usize, v: u64) {
        self.b[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }
    fn put16(&mut self, off: usize, v: usize) {
        self.b[off..off + 2].copy_from_slice(&(v as u16).to_le_bytes());
    }
    /// Index of the node at the lowest offset of leaf `pg`, and its offset.
    fn lowest_node(&self, pg: u64) -> (usize, usize) {
        (0..self.nkeys(pg))
            .map(|i| (i, self.node(pg, i)))
            .min_by_key(|&(_, o)| o)
            .unwrap()
    }
    /// File offset of the current meta page.
    fn meta(&self) -> usize {
        if self.u64(PS + 144) > self.u64(144) {
            PS
        } else {
            0
        }
    }
    fn flags(&self, pg: u64) -> usize {
        self.u16(pg as usize * PS + 10)
    }
    fn nkeys(&self, pg: u64) -> usize {
        (self.u16(pg as usize * PS + 12) - 16) / 2
    }
    fn node(&self, pg: u64, i: usize) -> usize {
        pg as usize * PS + self.u16(pg as usize * PS + 16 + 2 * i)
    }
    fn key(&self, pg: u64, i: usize) -> &[u8] {
        let n = self.node(pg, i);
        &self.b[n + 8..n + 8 + self.u16(n + 6)]
    }
    fn data_off(&self, pg: u64, i: usize) -> usize {
        let n = self.node(pg, i);
        n + 8 + self.u16(n + 6)
    }
    fn child(&self, pg: u64, i: usize) -> u64 {
        let n = self.node(pg, i);
        self.u16(n) as u64 | (self.u16(n + 2) as u64) << 16 | (self.u16(n + 4) as u64) << 32
    }
    fn set_child(&mut self, pg: u64, i: usize, c: u64) {
        let n = self.node(pg, i);
        self.b[n..n + 2].copy_from_slice(&(c as u16).to_le_bytes());
        self.b[n + 2..n + 4].copy_from_slice(&((c >> 16) as u16).to_le_bytes());
        self.b[n + 4..n + 6].copy_from_slice(&((c >> 32) as u16).to_le_bytes());
    }
    fn main_root(&self) -> u64 {
        self.u64(self.meta() + 128)
    }
    fn free_root(&self) -> u64 {
        self.u64(self.meta() + 80)
    }
    /// (page of the MAIN leaf holding the record, offset of the record).
    fn named(&self, name: &str) -> (u64, usize) {
        let leaf = self.main_root();
        assert_eq!(self.flags(leaf), 2, "MAIN is one leaf");
        let i = (0..self.nkeys(leaf))
            .find(|&i| self.key(leaf, i) == name.as_bytes())
            .unwrap();
        (leaf, self.data_off(leaf, i))
    }
    fn root_of(&self, name: &str) -> u64 {
        let (_, rec) = self.named(name);
        self.u64(rec + 40)
    }
    fn first_leaf(&self, mut pg: u64) -> u64 {
        while self.flags(pg) & 1 != 0 {
            pg = self.child(pg, 0);
        }
        pg
    }
}

/// Run `mdb check` on `bytes` (as a NOSUBDIR file); returns text and JSON runs.
fn check_bytes(dir: &Path, name: &str, bytes: &[u8]) -> (Run, Run) {
    let f = dir.join(name);
    std::fs::write(&f, bytes).unwrap();
    let text = mdb("check", &["-n", p(&f)]);
    let json = mdb("check", &["--json", "-n", p(&f)]);
    (text, json)
}

fn assert_names_page(what: &str, runs: &(Run, Run), pg: u64) {
    let (text, json) = runs;
    assert_eq!(text.code, 1, "{what}: {}", text.text());
    assert_eq!(json.code, 1, "{what}");
    let t = text.text();
    assert!(
        t.lines()
            .any(|l| l.starts_with(&format!("page {pg} ")) || l.starts_with(&format!("page {pg}:"))),
        "{what}: page {pg} not named:\n{t}"
    );
    let j = json.text();
    assert!(j.contains("\"ok\":false"), "{what}: {j}");
    assert!(j.contains(&format!("{{\"page\":{pg},")), "{what}: {j}");
    assert!(t.trim_end().ends_with("found"), "{what}: {t}");
}

fn valid_json(s: &str) -> bool {
    debian::need("/usr/bin/python3", "python3");
    let mut c = Command::new("/usr/bin/python3");
    c.args(["-c", "import json,sys; json.load(sys.stdin)"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut ch = c.spawn().unwrap();
    {
        use std::io::Write;
        ch.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    ch.wait().unwrap().success()
}

#[test]
fn check_passes_on_sound_files() {
    debian::lmdb_utils();
    let t = tmpdir();
    let d = t.path().join("e");
    rich(&d);
    let r = mdb("check", &[p(&d)]);
    assert_eq!(r.code, 0, "{}", r.text());
    let s = r.text();
    assert!(s.ends_with("OK: no problems found\n"), "{s}");
    for db in [
        "FREE", "MAIN", "alpha", "beta", "fixed", "fruits", "nums", "tags",
    ] {
        assert!(
            s.lines().any(|l| l.trim_start().starts_with(db)),
            "{db}: {s}"
        );
    }
    let j = mdb("check", &["--json", p(&d)]);
    assert_eq!(j.code, 0);
    assert!(j.text().contains("\"ok\":true"));
    assert!(j.text().contains("\"source\":\"snapshot\""));
    assert!(j.text().contains("\"problems\":[]"));
    assert!(valid_json(&j.text()));
    // A data file given directly, and an empty environment.
    assert_eq!(mdb("check", &["-n", p(&d.join("data.mdb"))]).code, 0);
    let e = t.path().join("empty");
    deb_load(&e, &section(None, &[], &[]));
    assert_eq!(mdb("check", &[p(&e)]).code, 0);
    // Usage and missing files: status 2.
    assert_eq!(mdb("check", &[] as &[&str]).code, 2);
    assert_eq!(mdb("check", &["-x", p(&d)]).code, 2);
    let r = mdb("check", &[p(&t.path().join("missing"))]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("No such file or directory"), "{}", r.err);
    assert_eq!(mdb("check", &["--help"]).code, 0);
}

#[test]
fn check_names_the_page_of_ten_kinds_of_damage() {
    debian::lmdb_utils();
    let t = tmpdir();
    let d = t.path().join("e");
    rich(&d);
    let good = Raw {
        b: std::fs::read(d.join("data.mdb")).unwrap(),
    };
    let (ok, okj) = check_bytes(t.path(), "good.mdb", &good.b);
    assert_eq!(ok.code, 0, "{}", ok.text());
    assert!(valid_json(&okj.text()));
    let alpha = good.root_of("alpha");
    assert_eq!(good.flags(alpha), 1, "alpha's root is a branch");
    let beta = good.root_of("beta");
    let alpha_leaf = good.first_leaf(alpha);
    let beta_leaf = good.first_leaf(beta);
    let m = good.meta();
    let mut kinds = 0;

    // 1. Flipped bytes in a branch page: its flags.
    let mut c = Raw { b: good.b.clone() };
    c.b[alpha as usize * PS + 10] ^= 0x41;
    assert_names_page("branch flags", &check_bytes(t.path(), "1.mdb", &c.b), alpha);
    kinds += 1;

    // 2. Flipped bytes in a leaf: a key's first byte.
    let mut c = Raw { b: good.b.clone() };
    let n = c.node(alpha_leaf, 3);
    c.b[n + 8] ^= 0x7f;
    assert_names_page(
        "leaf key",
        &check_bytes(t.path(), "2.mdb", &c.b),
        alpha_leaf,
    );
    kinds += 1;

    // 3. Flipped bytes in an overflow page's header.
    let mut c = Raw { b: good.b.clone() };
    let (leaf, i) = (0..c.nkeys(alpha_leaf))
        .find(|&i| c.u16(c.node(alpha_leaf, i) + 4) & 1 != 0)
        .map(|i| (alpha_leaf, i))
        .expect("an overflow value in alpha's first leaf");
    let ov = c.u64(c.data_off(leaf, i));
    c.b[ov as usize * PS + 10] ^= 0x06;
    assert_names_page("overflow header", &check_bytes(t.path(), "3.mdb", &c.b), ov);
    kinds += 1;

    // 4. Flipped bytes in the current meta page: its magic.
    let mut c = Raw { b: good.b.clone() };
    c.b[m + 17] ^= 0xff;
    let r = check_bytes(t.path(), "4.mdb", &c.b);
    assert_names_page("meta magic", &r, (m / PS) as u64);
    assert!(r.1.text().contains("\"source\":\"file\""));
    kinds += 1;

    // 5. An orphan page: one more page than anything accounts for.
    let mut c = Raw { b: good.b.clone() };
    let last = c.u64(m + 136);
    c.put64(m + 136, last + 1);
    c.b.resize((last as usize + 2) * PS, 0);
    assert_names_page("orphan", &check_bytes(t.path(), "5.mdb", &c.b), last + 1);
    kinds += 1;

    // 6. A page in two trees: alpha's root also points at beta's first leaf.
    let mut c = Raw { b: good.b.clone() };
    c.set_child(alpha, 1, beta_leaf);
    assert_names_page(
        "two trees",
        &check_bytes(t.path(), "6.mdb", &c.b),
        beta_leaf,
    );
    kinds += 1;

    // 7. A free page still in use: a free-list entry names beta's first leaf.
    let mut c = Raw { b: good.b.clone() };
    let fl = c.first_leaf(c.free_root());
    assert_eq!(c.u16(c.node(fl, 0) + 4), 0, "inline free record");
    let rec = c.data_off(fl, 0);
    assert!(c.u64(rec) >= 1);
    c.put64(rec + 8, beta_leaf);
    assert_names_page(
        "free and used",
        &check_bytes(t.path(), "7.mdb", &c.b),
        beta_leaf,
    );
    kinds += 1;

    // 8. Out-of-order keys: two pointers of a leaf swapped.
    let mut c = Raw { b: good.b.clone() };
    let o = beta_leaf as usize * PS + 16;
    let (a, b) = (c.b[o + 2..o + 4].to_vec(), c.b[o + 4..o + 6].to_vec());
    c.b[o + 2..o + 4].copy_from_slice(&b);
    c.b[o + 4..o + 6].copy_from_slice(&a);
    assert_names_page(
        "key order",
        &check_bytes(t.path(), "8.mdb", &c.b),
        beta_leaf,
    );
    kinds += 1;

    // 9. A wrong entry count in a DB record (stored in a MAIN leaf).
    let mut c = Raw { b: good.b.clone() };
    let (leaf, rec) = c.named("alpha");
    let e = c.u64(rec + 32);
    c.put64(rec + 32, e + 1);
    let r = check_bytes(t.path(), "9.mdb", &c.b);
    assert_names_page("entries", &r, leaf);
    assert!(r.0.text().contains("entries"));
    kinds += 1;

    // 10. A cycle: alpha's root points at itself.
    let mut c = Raw { b: good.b.clone() };
    c.set_child(alpha, 1, alpha);
    assert_names_page("cycle", &check_bytes(t.path(), "10.mdb", &c.b), alpha);
    kinds += 1;

    assert_eq!(kinds, 10);

    // And an absurd last page number (the map size would overflow): still
    // a report, not a crash.
    for last in [1u64 << 40, u64::MAX] {
        let mut c = Raw { b: good.b.clone() };
        c.put64(m + 136, last);
        let (text, json) = check_bytes(t.path(), "absurd.mdb", &c.b);
        assert_eq!((text.code, json.code), (1, 1), "{}", text.err);
        assert!(!text.err.contains("panicked"), "{}", text.err);
        assert!(text.text().contains("past the end of the file"));
    }
}

/// What LMDB misreads though every page is sound: named DBs beside a MAIN
/// with INTEGERKEY (mdb_dbi_open finds none), and a DUPFIXED sub-DB record
/// with value size 0 (LMDB reads each of its values as empty).
#[test]
fn check_flags_what_lmdb_would_misread() {
    debian::lmdb_utils();
    let t = tmpdir();
    let d = t.path().join("e");
    rich(&d);
    let good = Raw {
        b: std::fs::read(d.join("data.mdb")).unwrap(),
    };
    // MAIN flags INTEGERKEY; the only main key is a 4-byte named-DB name,
    // so the key sizes suit INTEGERKEY and only the named DB is at fault.
    let e = t.path().join("ik");
    deb_load(&e, &section(Some("sub1"), &[], &[rec("k", "v")]));
    let mut c = Raw {
        b: std::fs::read(e.join("data.mdb")).unwrap(),
    };
    let im = c.meta();
    let flags = c.u16(im + 88 + 4);
    c.put16(im + 88 + 4, flags | 0x08);
    let r = check_bytes(t.path(), "ik.mdb", &c.b);
    assert_names_page("INTEGERKEY main", &r, (im / PS) as u64);
    assert!(r.0.text().contains("MAIN has INTEGERKEY"), "{}", r.0.text());
    // LMDB: the named DB is gone.
    let f = t.path().join("ik.mdb");
    let ok = deb("mdb_dump", &["-n", "-s", "sub1", p(&e.join("data.mdb"))]);
    assert_eq!(ok.code, 0, "{}", ok.err);
    let lost = deb("mdb_dump", &["-n", "-s", "sub1", p(&f)]);
    assert_eq!(lost.code, 1);
    assert!(lost.err.contains("MDB_NOTFOUND"), "{}", lost.err);

    // `fixed`'s key "lots" has a LEAF2 sub-DB of 4-byte values: value size 0.
    let mut c = Raw { b: good.b.clone() };
    let fixed = c.root_of("fixed");
    assert_eq!(c.flags(fixed), 2, "fixed is one leaf");
    let i = (0..c.nkeys(fixed))
        .find(|&i| c.key(fixed, i) == b"lots")
        .unwrap();
    assert_eq!(c.u16(c.node(fixed, i) + 4), 6, "lots has a sub-DB");
    let sub_rec = c.data_off(fixed, i);
    assert_eq!(c.u16(sub_rec), 4, "md_pad holds the value size");
    c.b[sub_rec..sub_rec + 4].fill(0);
    let r = check_bytes(t.path(), "pad.mdb", &c.b);
    assert_names_page("md_pad 0", &r, fixed);
    assert!(r.0.text().contains("(md_pad) 0"), "{}", r.0.text());
    // LMDB: 800 values of 4 bytes read as 800 empty ones.
    let f = t.path().join("pad.mdb");
    let dump = deb("mdb_dump", &["-n", "-s", "fixed", p(&f)]).text();
    let lots = format!(" {}\n", hex(b"lots"));
    assert_eq!(dump.matches(&format!("{lots} \n")).count(), 800, "{dump}");
}

/// Nodes of a page that overlap are a problem; bytes between nodes that
/// belong to none (LMDB packs nodes) are a warning: data intact, space lost.
#[test]
fn check_finds_overlapping_nodes_and_gaps() {
    debian::lmdb_utils();
    let t = tmpdir();
    let d = t.path().join("e");
    rich(&d);
    let good = Raw {
        b: std::fs::read(d.join("data.mdb")).unwrap(),
    };
    let beta_leaf = good.first_leaf(good.root_of("beta"));
    let base = beta_leaf as usize * PS;
    let (low, off) = good.lowest_node(beta_leaf);
    assert_eq!(off - base, good.u16(base + 14), "nodes packed from upper");
    let size = 8 + good.u16(off + 6) + good.u16(off);
    let size = size + (size & 1);
    assert!(
        good.u16(base + 14) - good.u16(base + 12) >= 8,
        "room to move"
    );

    // A gap: the lowest node moved 8 bytes down, upper with it.
    let mut c = Raw { b: good.b.clone() };
    c.b.copy_within(off..off + size, off - 8);
    c.put16(base + 16 + 2 * low, off - 8 - base);
    c.put16(base + 14, off - 8 - base);
    let (text, json) = check_bytes(t.path(), "gap.mdb", &c.b);
    assert_eq!(text.code, 0, "{}", text.text());
    let tx = text.text();
    assert!(
        tx.lines().any(
            |l| l.starts_with(&format!("warning: page {beta_leaf} [beta]: 8 bytes"))
                && l.contains("belong to no node")
        ),
        "{tx}"
    );
    assert!(tx.ends_with("OK: no problems found (1 warning)\n"), "{tx}");
    let j = json.text();
    assert!(j.contains("\"ok\":true"), "{j}");
    assert!(j.contains("\"problems\":[],"), "{j}");
    assert!(
        j.contains(&format!("\"warnings\":[{{\"page\":{beta_leaf},")),
        "{j}"
    );
    assert!(valid_json(&j), "{j}");
    // LMDB reads the page as before.
    let f = t.path().join("gap.mdb");
    assert_eq!(
        deb("mdb_dump", &["-n", "-s", "beta", p(&f)]).out,
        deb("mdb_dump", &["-s", "beta", p(&d)]).out
    );

    // An overlap: the lowest node's value grows 2 bytes into its neighbour.
    let mut c = Raw { b: good.b.clone() };
    let dsize = c.u16(off);
    c.put16(off, dsize + 2);
    let r = check_bytes(t.path(), "overlap.mdb", &c.b);
    assert_names_page("overlap", &r, beta_leaf);
    assert!(r.0.text().contains("overlap"), "{}", r.0.text());
}

/// `mdb stat --json` carries the figures `mdb_stat -efa` prints.
#[test]
fn stat_json_agrees_with_mdb_stat() {
    debian::lmdb_utils();
    let t = tmpdir();
    let d = t.path().join("e");
    rich(&d);
    let j = mdb("stat", &["--json", p(&d)]);
    assert_eq!(j.code, 0, "{}", j.err);
    let j = j.text();
    assert!(valid_json(&j), "{j}");
    let st = deb("mdb_stat", &["-efa", p(&d)]).text();
    let field = |name: &str| -> String {
        st.lines()
            .find_map(|l| l.trim_start().strip_prefix(name))
            .unwrap()
            .trim()
            .to_string()
    };
    assert!(j.contains(&format!("\"free_pages\":{}", field("Free pages:"))));
    assert!(j.contains(&format!("\"last_txnid\":{}", field("Last transaction ID:"))));
    assert!(j.contains(&format!(
        "\"pages_used\":{}",
        field("Number of pages used:")
    )));
    for db in ["alpha", "beta", "fixed", "fruits", "nums", "tags"] {
        assert!(j.contains(&format!("{{\"name\":\"{db}\",")), "{db}: {j}");
    }
    assert!(j.contains("{\"name\":null,"));
    let one = mdb("stat", &["--json", "-s", "tags", p(&d)]).text();
    assert!(one.contains("\"databases\":[{\"name\":\"tags\","), "{one}");
    // Not in the LMDB-named form.
    assert_eq!(ours("mdb_stat", &["--json", p(&d)]).code, 1);
}

// ---------------------------------------------------------------------------
// readers

const READER_CHILD: &str = "MDB_TEST_READER_CHILD";

/// The reader process of `readers_check_clears_a_killed_reader` (this test
/// binary re-run with `READER_CHILD` set): it opens the environment, begins a
/// read transaction, says so on stdout, and sleeps until killed.
fn reader_child(path: &OsStr) {
    let env = mdb::EnvOptions::new()
        .flags(mdb::EnvFlags::READ_ONLY)
        .open(PathBuf::from(path))
        .unwrap();
    let txn = env.read_txn().unwrap();
    println!("ready {}", mdb::Txn::id(&txn));
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    // Bounded, in case the parent fails before it kills us.
    std::thread::sleep(std::time::Duration::from_secs(120));
    drop(txn);
}

#[test]
fn readers_check_clears_a_killed_reader() {
    if let Some(path) = std::env::var_os(READER_CHILD) {
        return reader_child(&path);
    }
    debian::lmdb_utils();
    let t = tmpdir();
    let d = t.path().join("e");
    deb_load(&d, &section(None, &[], &[rec("a", "b")]));
    // This process keeps the environment open (and writes to it), so the
    // lock file is not reset when the other processes come and go.
    let env = mdb::EnvOptions::new().open(&d).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "readers_check_clears_a_killed_reader",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(READER_CHILD, &d)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let snap: u64 = loop {
        let l = lines.next().expect("child ended").unwrap();
        // The harness prints "test readers_check_... ... " before it.
        if let Some(i) = l.find("ready ") {
            break l[i + 6..].trim().parse().unwrap();
        }
    };
    // Three commits: the reader falls three transactions behind.
    for i in 0..3u8 {
        let mut w = env.write_txn().unwrap();
        w.put(mdb::Database::MAIN, b"k", &[i], mdb::WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
    }
    let row = |s: &str| {
        s.lines()
            .find(|l| l.split_whitespace().next() == Some(&pid.to_string()))
            .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
    };
    let r = mdb("readers", &[p(&d)]);
    assert_eq!(r.code, 0);
    let cols = row(&r.text()).unwrap_or_else(|| panic!("no row for {pid}:\n{}", r.text()));
    assert_eq!(cols[2], snap.to_string());
    assert_eq!(cols[3], "3");
    assert_eq!(cols[4], "reading");
    let j = mdb("readers", &["--json", p(&d)]).text();
    assert!(j.contains(&format!("\"pid\":{pid},")), "{j}");
    assert!(j.contains("\"behind\":3,"), "{j}");
    assert!(valid_json(&j));

    // SIGKILL: the slot stays behind, stale.
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
    child.wait().unwrap();
    let r = mdb("readers", &[p(&d)]);
    assert_eq!(row(&r.text()).unwrap()[4], "dead", "{}", r.text());
    assert!(deb("mdb_stat", &["-r", p(&d)])
        .text()
        .contains(&format!("{pid:10} ")));
    // --check clears it.
    let r = mdb("readers", &["--check", p(&d)]);
    assert_eq!(r.code, 0);
    let s = r.text();
    assert!(s.contains("1 stale reader cleared\n"), "{s}");
    assert!(row(&s).is_none(), "{s}");
    assert!(s.ends_with("(no active readers)\n"), "{s}");
    assert!(deb("mdb_stat", &["-r", p(&d)])
        .text()
        .contains("(no active readers)"));
    let r = mdb("readers", &["--check", "--json", p(&d)]);
    assert!(r.text().contains("\"cleared\":0,"), "{}", r.text());
    drop(env);
}

/// A handle in WAL mode holds its last checkpoint's snapshot in a reader
/// slot of thread 0: `mdb readers` calls it `wal-hold`, Debian's
/// `mdb_stat -r` lists it as a reader of that txnid.
#[test]
fn readers_show_a_wal_handle_hold_at_its_checkpoint() {
    debian::lmdb_utils();
    let t = tmpdir();
    let d = t.path().join("e");
    std::fs::create_dir(&d).unwrap();
    let mut wo = mdb::WalOptions::default();
    wo.checkpointer = false;
    let env = mdb::EnvOptions::new().wal(wo).open(&d).unwrap();
    for i in 0..3u8 {
        let mut w = env.write_txn().unwrap();
        w.put(mdb::Database::MAIN, b"k", &[i], mdb::WriteFlags::EMPTY)
            .unwrap();
        w.commit().unwrap();
    }
    let c = env.checkpoint().unwrap();
    let me = std::process::id().to_string();
    let r = mdb("readers", &[p(&d)]);
    assert_eq!(r.code, 0);
    let text = r.text();
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&me))
        .unwrap_or_else(|| panic!("no row for {me}:\n{text}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[1..], ["0", &c.to_string(), "0", "wal-hold"], "{text}");
    let j = mdb("readers", &["--json", p(&d)]).text();
    assert!(j.contains("\"state\":\"wal-hold\""), "{j}");
    let st = deb("mdb_stat", &["-r", p(&d)]).text();
    let line = format!("{me:>10} 0 {c}");
    assert!(st.lines().any(|l| l == line), "{st}");
    drop(env);
    let r = mdb("readers", &[p(&d)]).text();
    assert!(r.contains("(no active readers)"), "{r}");
}
