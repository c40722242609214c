//! Live interop (c-api.md §16 step 6): a process on Debian's liblmdb and a
//! process on ours share one environment at the same time. Commits of
//! either are seen by readers of the other, snapshots stay stable, and the
//! writer lock excludes across both.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// One interop process, driven line by line.
struct Side {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    name: &'static str,
}

impl Side {
    fn start(bin: &Path, env_dir: &Path, dropin: Option<&Path>, name: &'static str) -> Side {
        let mut c = Command::new(bin);
        c.arg(env_dir).stdin(Stdio::piped()).stdout(Stdio::piped());
        if let Some(d) = dropin {
            c.env("LD_LIBRARY_PATH", d);
        }
        let mut child = c.spawn().unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut s = Side {
            child,
            input,
            output,
            name,
        };
        assert_eq!(s.line(), "ready", "{name} did not start");
        s
    }
    fn line(&mut self) -> String {
        let mut l = String::new();
        self.output.read_line(&mut l).unwrap();
        l.trim_end().to_string()
    }
    fn send(&mut self, cmd: &str) {
        writeln!(self.input, "{cmd}").unwrap();
        self.input.flush().unwrap();
    }
    fn ask(&mut self, cmd: &str) -> String {
        self.send(cmd);
        self.line()
    }
    fn expect(&mut self, cmd: &str, want: &str) {
        let got = self.ask(cmd);
        assert_eq!(got, want, "{}: {cmd}", self.name);
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        let _ = writeln!(self.input, "quit");
        let _ = self.child.wait();
    }
}

#[test]
fn debian_and_our_library_share_an_environment_live() {
    let dropin = dropin();
    let src = crate_dir().join("tests/c/interop.c");
    let deb_bin = dropin.path().join("interop_debian");
    let our_bin = dropin.path().join("interop_ours");
    gcc(&src, &deb_bin, None);
    gcc(&src, &our_bin, Some(dropin.path()));
    let env_dir = tempfile::tempdir().unwrap();

    let mut deb = Side::start(&deb_bin, env_dir.path(), None, "debian");
    let mut ours = Side::start(&our_bin, env_dir.path(), Some(dropin.path()), "ours");

    // Writes of each are seen by the other.
    deb.expect("put a 1", "ok");
    ours.expect("get a", "1");
    ours.expect("put b 2", "ok");
    deb.expect("get b", "2");

    // A reader's snapshot is stable while the other side commits.
    deb.expect("rbegin", "ok");
    ours.expect("rbegin", "ok");
    ours.expect("put a 10", "ok");
    deb.expect("put b 20", "ok");
    deb.expect("rget a", "1");
    ours.expect("rget b", "2");
    deb.expect("get a", "10");
    ours.expect("get b", "20");
    deb.expect("rend", "ok");
    ours.expect("rend", "ok");

    // The writer lock excludes across both, in both directions.
    for deb_holds in [true, false] {
        let (holder, waiter) = if deb_holds {
            (&mut deb, &mut ours)
        } else {
            (&mut ours, &mut deb)
        };
        let key = if deb_holds {
            "held_by_debian"
        } else {
            "held_by_ours"
        };
        holder.expect("wbegin", "ok");
        holder.expect(&format!("wput {key} 1"), "ok");
        waiter.expect(&format!("tput waited_{key} 1 300"), "blocked");
        holder.expect("wcommit", "ok");
        assert_eq!(waiter.line(), "finished ok", "{}", waiter.name);
        holder.expect(&format!("get waited_{key}"), "1");
        waiter.expect(&format!("get {key}"), "1");
    }

    // Many commits interleaved.
    for i in 0..50 {
        let (w, r) = if i % 2 == 0 {
            (&mut deb, &mut ours)
        } else {
            (&mut ours, &mut deb)
        };
        w.expect(&format!("put k{i} v{i}"), "ok");
        r.expect(&format!("get k{i}"), &format!("v{i}"));
    }
    drop(deb);
    drop(ours);

    // Debian's own (statically linked) mdb_stat reads the result.
    debian::lmdb_utils();
    let out = run(Command::new("/usr/bin/mdb_stat").arg(env_dir.path()));
    assert!(out.contains("Entries: 56"), "{out}");
}
