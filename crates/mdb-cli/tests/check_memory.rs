//! `mdb check` reads a database page by page from a map it gives back to the
//! kernel as it goes: its peak resident set stays a fraction of the file's
//! size, through an open environment's snapshot and for a file read as it is.
//! The peak is the kernel's count for that child (`wait4`'s rusage). It
//! includes the resident set of the process that spawned it (the kernel
//! keeps the larger high-water mark across `exec`), so the database is built
//! by another child: this test's own process stays small.

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Command, Stdio};

const OURS: &str = env!("CARGO_BIN_EXE_mdb");

/// The data file's size: each of its leaf pages is read by the check.
const FILE_BYTES: usize = 384 << 20;
/// The resident set a check may reach: a third of the file.
const PEAK_BOUND: u64 = (FILE_BYTES / 3) as u64;

/// Run `mdb check <args>`: its exit status, standard output, and peak
/// resident set in bytes.
// The child is reaped by `wait4`, which `Child::wait` cannot stand in for.
#[allow(clippy::zombie_processes)]
fn check_peak(args: &[&str]) -> (i32, String, u64) {
    let mut child = Command::new(OURS)
        .arg("check")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mdb");
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child (not reaped yet: `child` is never
    // waited on) and fills the two out-parameters we own.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(libc::WIFEXITED(status), "mdb check died: status {status}");
    eprintln!("mdb check {args:?}: peak resident set {} KiB", ru.ru_maxrss);
    // ru_maxrss is in KiB on Linux.
    (libc::WEXITSTATUS(status), out, ru.ru_maxrss as u64 * 1024)
}

/// A database of `FILE_BYTES`: 1300-byte values, three to a leaf page, in
/// several commits (so the older meta page is not the only one).
fn build(dir: &Path) {
    let mut opts = mdb::EnvOptions::new();
    opts.map_size(2 * FILE_BYTES);
    let env = opts.open(dir).unwrap();
    let val = vec![0x5a_u8; 1300];
    let per_txn = 50_000u64;
    let total = (FILE_BYTES / 4096 * 3) as u64;
    let mut k = 0u64;
    while k < total {
        let mut w = env.write_txn().unwrap();
        for _ in 0..per_txn.min(total - k) {
            w.put(
                mdb::Database::MAIN,
                &k.to_be_bytes(),
                &val,
                mdb::WriteFlags::APPEND,
            )
            .unwrap();
            k += 1;
        }
        w.commit().unwrap();
    }
}

/// Set in the child that builds the database: the directory to build it in.
const BUILD_IN: &str = "MDB_CHECK_MEMORY_BUILD_IN";

#[test]
fn check_of_a_large_file_keeps_a_small_resident_set() {
    if let Some(dir) = std::env::var_os(BUILD_IN) {
        build(Path::new(&dir));
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let st = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "check_of_a_large_file_keeps_a_small_resident_set",
            "--test-threads=1",
        ])
        .env(BUILD_IN, dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "building the database: {st}");
    let data = dir.join("data.mdb");
    let len = std::fs::metadata(&data).unwrap().len();
    assert!(
        len >= FILE_BYTES as u64 * 9 / 10,
        "data file of {len} bytes"
    );

    // Through the environment: a snapshot read from its map.
    let (code, out, peak) = check_peak(&[dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("  snapshot: "), "{out}");
    assert!(
        peak < PEAK_BOUND,
        "peak resident set {peak} bytes, file {len} bytes\n{out}"
    );

    // The file as it is (meta page 1, the older one, damaged: the
    // environment is not opened).
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&data)
        .unwrap();
    let txnid = |meta: u64| {
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, meta + 144).unwrap();
        u64::from_le_bytes(b)
    };
    let older = if txnid(4096) < txnid(0) { 4096 } else { 0 };
    let mut magic = [0u8; 4];
    f.read_exact_at(&mut magic, older + 16).unwrap();
    magic[0] ^= 0xff;
    f.write_all_at(&magic, older + 16).unwrap();
    drop(f);
    let (code, out, peak) = check_peak(&["-n", data.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("  file as it is: "), "{out}");
    assert!(out.contains(" has magic "), "{out}");
    assert!(
        peak < PEAK_BOUND,
        "peak resident set {peak} bytes, file {len} bytes\n{out}"
    );
}
