//! Debian's OpenLDAP (slapd and its tools) on LMDB 0.9.29 inside
//! back_mdb, or on our library: `LD_PRELOAD` takes back_mdb's calls of the
//! lmdb.h functions, `MDB_REPORT_VERSION` passes its version check.

#![allow(dead_code)]

use crate::common::{debian, library, run};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The suffix of the generated directory, and its administrator.
pub const SUFFIX: &str = "dc=example,dc=com";
pub const ADMIN: &str = "cn=admin,dc=example,dc=com";
/// The LMDB version Debian's back_mdb was built with (it refuses others).
pub const BUNDLED_VERSION: &str = "0.9.29";
/// The organisational units the generated people are spread over.
pub const OUS: [&str; 3] = ["people", "staff", "guests"];

/// Which LMDB slapd runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lib {
    /// The LMDB compiled into back_mdb.
    Bundled,
    /// Ours, default mode.
    Ours,
    /// Ours, write-ahead-log mode.
    OursWal,
}

impl Lib {
    /// Set up `c`'s environment to run on this library.
    pub fn apply(self, c: &mut Command) {
        c.env_remove("LD_PRELOAD")
            .env_remove("MDB_WAL")
            .env_remove("MDB_REPORT_VERSION");
        if self != Lib::Bundled {
            c.env("LD_PRELOAD", library())
                .env("MDB_REPORT_VERSION", BUNDLED_VERSION);
        }
        if self == Lib::OursWal {
            c.env("MDB_WAL", "1");
        }
    }
}

/// Fails unless slapd, the LDAP tools and python3-ldap are installed.
pub fn need_openldap() {
    debian::need("/usr/sbin/slapd", "slapd");
    debian::need("/usr/lib/ldap/back_mdb.so", "slapd");
    debian::need("/usr/bin/ldapsearch", "ldap-utils");
    debian::need("/usr/bin/python3", "python3");
    let ok = Command::new("/usr/bin/python3")
        .args(["-c", "import ldap"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python module ldap is missing: apt-get install python3-ldap"
    );
}

/// Our `mdb` CLI, next to the test's profile directory.
pub fn mdb_cli() -> PathBuf {
    let lib = library();
    let cli = lib.parent().unwrap().join("mdb");
    assert!(
        cli.exists(),
        "{} is missing: build it with `cargo build -p mdb-cli`",
        cli.display()
    );
    cli
}

/// The generated directory: the suffix, three OUs and `n` inetOrgPersons,
/// with their operational attributes given (so slapcat's output depends on
/// nothing but the LDIF); every 97th person has a description long enough
/// to take overflow pages.
pub fn ldif(n: usize) -> String {
    let mut s = String::with_capacity(n * 420);
    let op = |s: &mut String, i: usize| {
        s.push_str(&format!(
            "entryUUID: {:08x}-1111-4222-8333-{:012x}\n\
             creatorsName: {ADMIN}\ncreateTimestamp: 20260101000000Z\n\
             entryCSN: 20260101000000.000000Z#000000#000#000000\n\
             modifiersName: {ADMIN}\nmodifyTimestamp: 20260101000000Z\n\n",
            i, i
        ));
    };
    s.push_str(&format!(
        "dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n"
    ));
    op(&mut s, 0);
    for (k, ou) in OUS.iter().enumerate() {
        s.push_str(&format!(
            "dn: ou={ou},{SUFFIX}\nobjectClass: organizationalUnit\nou: {ou}\n"
        ));
        op(&mut s, 1 + k);
    }
    for i in 0..n {
        s.push_str(&format!(
            "dn: {}\nobjectClass: inetOrgPerson\nuid: user{i}\ncn: User Number {i}\n\
             cn: U{i}\nsn: Surname{}\nmail: user{i}@example.com\n\
             telephoneNumber: +1 555 {:04}\n",
            dn_of(i),
            i % 997,
            i % 10000
        ));
        if i % 97 == 0 {
            s.push_str(&format!("description: {}\n", "long ".repeat(1000)));
        }
        op(&mut s, 100 + i);
    }
    s
}

/// The DN of generated person `i`.
pub fn dn_of(i: usize) -> String {
    format!("uid=user{i},ou={},{SUFFIX}", OUS[i % 3])
}

/// A slapd configuration and its database directory.
pub struct Dir {
    pub tmp: tempfile::TempDir,
}

impl Dir {
    /// A fresh configuration, indexes as `indexes` (slapd.conf lines).
    pub fn new(indexes: &str) -> Dir {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("db")).unwrap();
        let d = Dir { tmp };
        d.configure(indexes);
        d
    }

    /// The same configuration over another database directory.
    pub fn over(db: &Path, indexes: &str) -> Dir {
        let tmp = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(db, tmp.path().join("db")).unwrap();
        let d = Dir { tmp };
        d.configure(indexes);
        d
    }

    /// Rewrite slapd.conf with other indexes.
    pub fn configure(&self, indexes: &str) {
        let p = self.tmp.path();
        let conf = format!(
            "include /etc/ldap/schema/core.schema\n\
             include /etc/ldap/schema/cosine.schema\n\
             include /etc/ldap/schema/inetorgperson.schema\n\
             modulepath /usr/lib/ldap\nmoduleload back_mdb\n\
             pidfile {pid}\n\
             sizelimit unlimited\n\
             database mdb\nsuffix \"{SUFFIX}\"\nrootdn \"{ADMIN}\"\nrootpw secret\n\
             directory {db}\nmaxsize 1073741824\n{indexes}\n",
            pid = p.join("slapd.pid").display(),
            db = p.join("db").display(),
        );
        std::fs::write(p.join("slapd.conf"), conf).unwrap();
    }

    pub fn conf(&self) -> PathBuf {
        self.tmp.path().join("slapd.conf")
    }

    pub fn db(&self) -> PathBuf {
        self.tmp.path().join("db")
    }

    /// Run one of slapd's offline tools (slapadd, slapcat, slapindex) on
    /// `lib`; returns its stdout.
    pub fn tool(&self, lib: Lib, tool: &str, args: &[&str]) -> String {
        let mut c = Command::new("timeout");
        c.arg("600")
            .arg(format!("/usr/sbin/{tool}"))
            .arg("-f")
            .arg(self.conf());
        c.args(args);
        lib.apply(&mut c);
        run(&mut c)
    }

    /// `slapadd -q` of `ldif`.
    pub fn slapadd(&self, lib: Lib, ldif: &str) {
        let f = self.tmp.path().join("add.ldif");
        std::fs::write(&f, ldif).unwrap();
        self.tool(lib, "slapadd", &["-q", "-l", f.to_str().unwrap()]);
    }

    pub fn slapcat(&self, lib: Lib) -> String {
        self.tool(lib, "slapcat", &[])
    }

    /// `mdb check` of the database: must be clean.
    pub fn check(&self) {
        let out = run(Command::new(mdb_cli()).arg("check").arg(self.db()));
        assert!(out.contains("no problems found"), "{out}");
    }

    /// Debian's `mdb_dump` of the named database `name` (an index, dn2i).
    pub fn dump(&self, name: &str) -> String {
        debian::lmdb_utils();
        run(Command::new("mdb_dump").arg("-s").arg(name).arg(self.db()))
    }

    /// The names of the environment's named databases.
    pub fn names(&self) -> Vec<String> {
        debian::lmdb_utils();
        let out = run(Command::new("mdb_dump").arg("-l").arg(self.db()));
        out.lines().map(str::to_string).collect()
    }

    /// Start slapd on `lib` serving this directory.
    pub fn serve(&self, lib: Lib) -> Server {
        Server::start(self, lib)
    }
}

/// A running slapd on a loopback port, killed when dropped.
pub struct Server {
    child: Option<Child>,
    pub url: String,
    log: PathBuf,
}

impl Server {
    fn start(dir: &Dir, lib: Lib) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("ldap://127.0.0.1:{port}/");
        let log = dir.tmp.path().join(format!("slapd-{port}.log"));
        let logf = std::fs::File::create(&log).unwrap();
        let mut c = Command::new("/usr/sbin/slapd");
        c.arg("-f")
            .arg(dir.conf())
            .args(["-h", &url, "-d", "0"])
            .stdin(Stdio::null())
            .stdout(logf.try_clone().unwrap())
            .stderr(logf);
        lib.apply(&mut c);
        let child = c.spawn().expect("cannot start slapd");
        let mut s = Server {
            child: Some(child),
            url,
            log,
        };
        let start = Instant::now();
        loop {
            if let Some(st) = s.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("slapd on {lib:?} exited ({st}) at start:\n{}", s.log_text());
            }
            let up = Command::new("ldapsearch")
                .args(["-x", "-LLL", "-H", &s.url, "-b", "", "-s", "base", "-o"])
                .arg("nettimeout=5")
                .arg("1.1")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|st| st.success());
            if up {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "slapd on {lib:?} did not answer within 120 s:\n{}",
                s.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    /// SIGTERM and wait: slapd closes its database cleanly.
    pub fn stop(mut self) {
        self.signal_and_wait(libc::SIGTERM);
    }

    /// SIGKILL and wait: nothing is closed.
    pub fn kill(mut self) {
        self.signal_and_wait(libc::SIGKILL);
    }

    fn signal_and_wait(&mut self, sig: i32) {
        // SAFETY: signalling our own child, which has not been reaped.
        unsafe { libc::kill(self.pid(), sig) };
        let start = Instant::now();
        let mut child = self.child.take().unwrap();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                if sig == libc::SIGTERM {
                    assert!(st.success(), "slapd exited with {st}:\n{}", self.log_text());
                }
                return;
            }
            if start.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("slapd did not stop within 120 s:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `ldapsearch -LLL` with `args` (after the connection's); its output.
    pub fn search(&self, args: &[&str]) -> String {
        let mut c = Command::new("timeout");
        c.args(["300", "ldapsearch", "-x", "-LLL", "-o", "ldif-wrap=no"])
            .args(["-H", &self.url, "-D", ADMIN, "-w", "secret"])
            .args(args);
        run(&mut c)
    }

    /// `ldapmodify` of `ldif`.
    pub fn modify(&self, ldif: &str) -> String {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), ldif).unwrap();
        let mut c = Command::new("timeout");
        c.args([
            "300",
            "ldapmodify",
            "-x",
            "-H",
            &self.url,
            "-D",
            ADMIN,
            "-w",
            "secret",
        ])
        .arg("-f")
        .arg(f.path());
        run(&mut c)
    }

    /// The python3-ldap client (tests/python/slapd_client.py) in `mode`.
    pub fn python(&self, mode: &str, args: &[&str]) -> String {
        let mut c = Command::new("timeout");
        c.args(["300", "/usr/bin/python3"])
            .arg(client_script())
            .args([mode, &self.url])
            .args(args);
        run(&mut c)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn client_script() -> PathBuf {
    crate::common::crate_dir().join("tests/python/slapd_client.py")
}

/// A python3-ldap client modifying its entries in a loop (mode `modify`),
/// its acknowledged modifies gathered by a thread.
pub struct Modifier {
    pub id: String,
    pub dns: Vec<String>,
    child: Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Modifier {
    pub fn start(server: &Server, id: &str, dns: Vec<String>, work: &Path) -> Modifier {
        let dnfile = work.join(format!("{id}.dns"));
        std::fs::write(&dnfile, dns.join("\n")).unwrap();
        let mut child = Command::new("/usr/bin/python3")
            .arg(client_script())
            .args(["modify", &server.url, id])
            .arg(&dnfile)
            .arg(work.join("stop"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let l2 = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                l2.lock().unwrap().push(line.unwrap());
            }
        });
        Modifier {
            id: id.to_string(),
            dns,
            child,
            lines,
            reader: Some(reader),
        }
    }

    /// How many modifies were acknowledged so far.
    pub fn acked(&self) -> usize {
        let l = self.lines.lock().unwrap();
        l.iter().filter(|x| x.contains(' ')).count()
    }

    /// Wait for the client to end (a stop file, or the server gone); its
    /// last acknowledged sequence number and how it ended.
    pub fn finish(mut self) -> (u64, String) {
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if start.elapsed() > Duration::from_secs(120) {
                let _ = self.child.kill();
                panic!("client {} did not stop within 120 s", self.id);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.reader.take().unwrap().join().unwrap();
        let lines = self.lines.lock().unwrap();
        let last = lines
            .iter()
            .filter_map(|l| l.split(' ').next()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        let end = lines.last().cloned().unwrap_or_default();
        (last, end)
    }

    /// The DN modify number `seq` of this client targets.
    pub fn dn_at(&self, seq: u64) -> &str {
        &self.dns[seq as usize % self.dns.len()]
    }
}

/// Wait until each client has `n` more modifies acknowledged than it had
/// in `from` (120 s at most); returns the counts reached.
pub fn wait_acked(clients: &[Modifier], from: &[usize], n: usize) -> Vec<usize> {
    let start = Instant::now();
    loop {
        let now: Vec<usize> = clients.iter().map(Modifier::acked).collect();
        if now.iter().zip(from).all(|(a, b)| *a >= b + n) {
            return now;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "clients acknowledged {now:?} modifies in 120 s, {n} more than {from:?} wanted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// slapcat's output as entries: DN -> the entry's lines (sorted).
pub fn entries(slapcat: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut m = std::collections::BTreeMap::new();
    for block in slapcat.split("\n\n").filter(|b| !b.trim().is_empty()) {
        // Unfold continuation lines first.
        let text = block.replace("\n ", "");
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let dn = lines[0].strip_prefix("dn: ").expect("dn line").to_string();
        lines.sort();
        m.insert(dn, lines);
    }
    m
}

/// `lines` without the attributes each modify changes by itself.
pub fn without_stamps(lines: &[String], also: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| {
            !["modifyTimestamp:", "modifiersName:", "entryCSN:"]
                .iter()
                .chain(also)
                .any(|p| l.starts_with(p))
        })
        .cloned()
        .collect()
}

/// The value of `attr` in an entry's lines.
pub fn value<'a>(lines: &'a [String], attr: &str) -> Option<&'a str> {
    let p = format!("{attr}: ");
    lines.iter().find_map(|l| l.strip_prefix(&p))
}
