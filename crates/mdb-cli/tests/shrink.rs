//! `mdb shrink` on a file Debian's LMDB wrote and then emptied mostly:
//! the end is cut only while no other process has the environment open,
//! and LMDB reads the result.

use std::path::Path;
use std::process::{Command, Stdio};

const OURS: &str = env!("CARGO_BIN_EXE_mdb");

fn len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("data.mdb")).unwrap().len()
}

#[test]
fn shrink_cuts_the_free_end_when_alone() {
    assert!(
        Path::new("/usr/bin/python3").exists(),
        "needs Debian's python3-lmdb (apt-get install python3-lmdb)"
    );
    let t = tempfile::tempdir().unwrap();
    let d = t.path().to_str().unwrap();
    let script = format!(
        "import lmdb, sys\nenv = lmdb.open({d:?}, map_size=1 << 30)\n\
         with env.begin(write=True) as t:\n    for i in range(50000): t.put(b'k%08d' % i, b'v' * 200)\n\
         with env.begin(write=True) as t:\n    for i in range(1000, 50000): t.delete(b'k%08d' % i)\n\
         with env.begin(write=True) as t:\n    t.put(b'x', b'y')\n\
         if len(sys.argv) > 1:\n    print('open', flush=True)\n    sys.stdin.read()\n"
    );
    let o = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let full = len(t.path());
    // Another process (LMDB's) has it open: the end is committed, not cut.
    let mut holder = Command::new("/usr/bin/python3")
        .args(["-c", &script, "hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(holder.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "open");
    let o = Command::new(OURS).args(["shrink", d]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        len(t.path()) >= full,
        "cut while another process had it open"
    );
    drop(holder.stdin.take());
    holder.wait().unwrap();
    // Alone: cut.
    let o = Command::new(OURS).args(["shrink", d]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    let small = len(t.path());
    assert!(small * 20 < full, "{small} of {full}: {out}");
    assert!(out.ends_with(&format!("-> {small} bytes\n")), "{out}");
    let dump = Command::new("/usr/bin/mdb_dump")
        .args(["-p", d])
        .output()
        .unwrap();
    assert!(dump.status.success());
    let keys = String::from_utf8_lossy(&dump.stdout)
        .lines()
        .filter(|l| l.starts_with(" k"))
        .count();
    assert_eq!(keys, 1000);
    let check = Command::new(OURS).args(["check", d]).output().unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}
