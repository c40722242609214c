//! The lock file against its layout, other processes, dead owners and
//! LMDB's own tools.

use super::file::{byte_lock, current_tid, getpid, open_file};
use super::layout::*;
use super::*;
use crate::error::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn lock_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("lock.mdb")
}

/// Run `f` in a forked child and return its exit code. The child never returns.
fn in_child(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: fork in a test; the child only runs `f` and then `_exit`s without
    // running destructors or atexit handlers.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(101);
        // SAFETY: terminate the child immediately.
        unsafe { libc::_exit(code) };
    }
    wait_child(pid)
}

fn wait_child(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(rc, pid);
    assert!(libc::WIFEXITED(status), "child did not exit normally");
    libc::WEXITSTATUS(status)
}

fn u32_le(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

fn u64_le(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

#[test]
#[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
fn layout_constants_match_lmdb_x86_64() {
    assert_eq!(MUTEX_SIZE, 40);
    assert_eq!(OFF_TXNID, 48);
    assert_eq!(OFF_NUMREADERS, 56);
    assert_eq!(OFF_WMUTEX, 64);
    assert_eq!(HEADER, 128);
}

#[test]
fn init_layout() {
    let dir = tempfile::tempdir().unwrap();
    let p = lock_path(&dir);
    let l = LockFile::open(&p, 126, 0o664).unwrap();
    assert!(l.is_first());
    assert_eq!(l.max_readers(), 126);
    assert_eq!(l.num_readers(), 0);
    l.finish_open(7).unwrap();
    assert_eq!(l.txnid(), 7);
    {
        let b = l.raw();
        assert_eq!(b.len(), HEADER + 126 * 64);
        assert_eq!(u32_le(b, 0), 0xBEEF_C0DE);
        assert_eq!(u32_le(b, 4), 0x0001_0001);
        assert_eq!(u64_le(b, OFF_TXNID), 7);
        assert_eq!(u32_le(b, OFF_NUMREADERS), 0);
        #[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
        {
            assert_eq!(b.len(), 8192);
            // glibc kind word: robust | pshared.
            assert_eq!(u32_le(b, 8 + 16), 0x90);
            assert_eq!(u32_le(b, 64 + 16), 0x90);
        }
    }
    drop(l);
    // Only now may the file be opened a second time (closing any fd drops our locks).
    let b = std::fs::read(&p).unwrap();
    assert_eq!(b.len(), HEADER + 126 * 64);
    assert_eq!(&b[0..8], &[0xde, 0xc0, 0xef, 0xbe, 0x01, 0x00, 0x01, 0x00]);

    let dir2 = tempfile::tempdir().unwrap();
    let p2 = lock_path(&dir2);
    let l2 = LockFile::open(&p2, 10, 0o600).unwrap();
    l2.finish_open(0).unwrap();
    assert_eq!(std::fs::metadata(&p2).unwrap().len(), HEADER as u64 + 640);
}

/// Run `f` in a forked child with a 64 KiB tmpfs mounted on `dir` (in a
/// mount namespace of its own; a user namespace too when not root) and
/// return its exit code; 90-95 mean the namespace could not be set up.
fn on_tiny_fs(dir: &Path, f: impl FnOnce() -> i32) -> i32 {
    use std::ffi::CString;
    let target = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    in_child(move || {
        // SAFETY: plain syscalls in a single-threaded forked child, with
        // NUL-terminated strings that outlive the calls.
        unsafe {
            let (uid, gid) = (libc::geteuid(), libc::getegid());
            let userns = if uid == 0 { 0 } else { libc::CLONE_NEWUSER };
            if libc::unshare(libc::CLONE_NEWNS | userns) != 0 {
                return 90;
            }
            if userns != 0 {
                let maps = [
                    ("/proc/self/setgroups", "deny".to_string()),
                    ("/proc/self/uid_map", format!("0 {uid} 1")),
                    ("/proc/self/gid_map", format!("0 {gid} 1")),
                ];
                for (file, text) in maps {
                    if std::fs::write(file, text).is_err() {
                        return 91;
                    }
                }
            }
            let root = c"/".as_ptr();
            let none = std::ptr::null();
            // Keep the mount out of the parent's namespace.
            if libc::mount(
                none,
                root,
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                none.cast(),
            ) != 0
            {
                return 92;
            }
            let opts = c"size=64k";
            let tmpfs = c"tmpfs".as_ptr();
            if libc::mount(tmpfs, target.as_ptr(), tmpfs, 0, opts.as_ptr().cast()) != 0 {
                return 93;
            }
        }
        f()
    })
}

#[test]
fn full_file_system_gives_enospc_not_sigbus() {
    let dir = tempfile::tempdir().unwrap();
    let p = lock_path(&dir);
    let code = on_tiny_fs(dir.path(), || {
        // 100000 slots (6.4 MB) do not fit; before the file was
        // allocated, zeroing it through the map raised SIGBUS.
        match LockFile::open(&p, 100_000, 0o664) {
            Err(e) if e == ErrorKind::Os(libc::ENOSPC) => {}
            Err(_) => return 2,
            Ok(_) => return 3,
        }
        // Nothing half-made is left, and a table that fits still opens.
        if std::fs::metadata(&p).map(|m| m.len()).ok() != Some(0) {
            return 4;
        }
        match LockFile::open(&p, 126, 0o664) {
            Ok(l) if l.is_first() && l.max_readers() == 126 => 0,
            _ => 5,
        }
    });
    assert_eq!(
        code, 0,
        "90-93: no mount namespace with a tmpfs could be set up"
    );
}

#[test]
fn first_opener_reinitialises_stale_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = lock_path(&dir);
    {
        let l = LockFile::open(&p, 4, 0o664).unwrap();
        l.finish_open(9).unwrap();
        // A child takes a slot and dies without releasing it.
        let code = in_child(|| match l.acquire_slot() {
            Ok(s) => {
                l.set_slot_txnid(s, 9);
                0
            }
            Err(_) => 1,
        });
        assert_eq!(code, 0);
        assert_eq!(l.readers().len(), 1);
    }
    // Nobody holds the file: the next opener is first, re-sizes and wipes the table.
    let l = LockFile::open(&p, 8, 0o664).unwrap();
    assert!(l.is_first());
    assert_eq!(l.max_readers(), 8);
    assert_eq!(l.num_readers(), 0);
    assert_eq!(l.txnid(), 0);
    assert!(l.readers().is_empty());
}

/// Whether a process waits for an fcntl lock on the file with inode `ino`.
fn lock_waiter(ino: u64) -> bool {
    let locks = std::fs::read_to_string("/proc/locks").unwrap();
    let inode = format!(":{ino} ");
    locks
        .lines()
        .any(|l| l.contains("->") && l.contains(&inode))
}

#[test]
fn opener_remakes_a_table_whose_maker_was_killed() {
    // The maker dies after cutting the file, or with the header unwritten.
    for len in [0, HEADER as u64 + SLOT_SIZE as u64] {
        let dir = tempfile::tempdir().unwrap();
        let p = lock_path(&dir);
        let f = open_file(&p, 0o664).unwrap();
        let ino = f.metadata().unwrap().ino();
        let mut pipe = [0; 2];
        // SAFETY: `pipe` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        // SAFETY: fork in a test; the child makes only async-signal-safe
        // calls (fcntl, ftruncate, write, pause) until it is killed.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let fd = f.as_raw_fd();
            let ok = byte_lock(fd, libc::F_SETLK, libc::F_WRLCK, 0).is_ok()
                // SAFETY: ftruncate and write on descriptors the child
                // owns; `pause` waits for the kill, `_exit` ends it.
                && unsafe { libc::ftruncate(fd, len as libc::off_t) } == 0
                && unsafe { libc::write(pipe[1], b"x".as_ptr().cast(), 1) } == 1;
            // SAFETY: see above.
            unsafe {
                if !ok {
                    libc::_exit(1);
                }
                loop {
                    libc::pause();
                }
            }
        }
        let mut b = [0u8; 1];
        // SAFETY: reading one byte into `b`.
        assert_eq!(unsafe { libc::read(pipe[0], b.as_mut_ptr().cast(), 1) }, 1);
        // SAFETY: closing the pipe's descriptors, used no more.
        unsafe {
            libc::close(pipe[0]);
            libc::close(pipe[1]);
        }
        // Our descriptor goes before the opener takes its locks (closing
        // it would drop them).
        drop(f);
        let q = p.clone();
        let opener = std::thread::spawn(move || {
            LockFile::open(&q, 8, 0o664).map(|l| {
                let made = (l.is_first(), l.max_readers(), l.txnid());
                l.finish_open(7).unwrap();
                (made, l.txnid())
            })
        });
        // Kill the maker only once the opener waits for it.
        while !lock_waiter(ino) && !opener.is_finished() {
            std::thread::sleep(Duration::from_millis(1));
        }
        // SAFETY: killing and reaping our own child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        let got = opener.join().unwrap().map_err(|e| e.kind());
        assert_eq!(got, Ok(((true, 8, 0), 7)), "table cut to {len} bytes");
    }
}

#[test]
fn second_process_waits_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let p = lock_path(&dir);
    let l = LockFile::open(&p, 20, 0o664).unwrap();
    assert!(l.is_first());
    // SAFETY: fork in a test; the child only opens the lock file and _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = match LockFile::open(&p, 999, 0o664) {
            Ok(c) if c.is_first() => 2,
            Ok(c) if c.max_readers() != 20 => 3,
            Ok(c) if c.txnid() != 42 => 4,
            Ok(c) => match c.acquire_slot() {
                Ok(s) => {
                    c.set_slot_txnid(s, 42);
                    c.release_slot(s);
                    0
                }
                Err(_) => 5,
            },
            Err(_) => 6,
        };
        // SAFETY: terminate the child immediately.
        unsafe { libc::_exit(code) };
    }
    // The child blocks on the shared byte-0 lock until we downgrade: wait
    // until the kernel lists it as waiting (or it exits, having not waited).
    let ino = std::fs::metadata(&p).unwrap().ino();
    let mut status = 0;
    // SAFETY: polling our own child without reaping anyone else.
    while !lock_waiter(ino) && unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == 0 {
        std::thread::sleep(Duration::from_millis(1)); // a poll, not a guess
    }
    l.finish_open(42).unwrap();
    assert_eq!(wait_child(pid), 0, "the child did not wait for byte 0");
    assert_eq!(l.num_readers(), 1);
    assert!(l.readers().is_empty());
}

#[test]
fn slots_and_oldest() {
    let dir = tempfile::tempdir().unwrap();
    let l = LockFile::open(&lock_path(&dir), 8, 0o664).unwrap();
    l.finish_open(1).unwrap();
    assert_eq!(l.reader_list_text(), "(no active readers)\n");
    assert_eq!(l.oldest_reader(20), 20);
    let a = l.acquire_slot().unwrap();
    let b = l.acquire_slot().unwrap();
    assert_eq!((a, b), (0, 1));
    assert_eq!(l.num_readers(), 2);
    // Idle slots do not hold anything back.
    assert_eq!(l.oldest_reader(20), 20);
    l.set_slot_txnid(a, 10);
    l.set_slot_txnid(b, 5);
    assert_eq!(l.oldest_reader(20), 5);
    assert_eq!(l.oldest_reader(3), 3);
    let me = getpid();
    let tid = current_tid();
    assert_eq!(
        l.readers(),
        vec![
            ReaderInfo {
                pid: me,
                tid,
                txnid: Some(10)
            },
            ReaderInfo {
                pid: me,
                tid,
                txnid: Some(5)
            },
        ]
    );
    l.set_slot_txnid(a, u64::MAX);
    l.set_slot_tid(a, 0xabc);
    assert_eq!(
        l.reader_list_text(),
        format!("    pid     thread     txnid\n{me:10} abc -\n{me:10} {tid:x} 5\n")
    );
    l.release_slot(b);
    assert_eq!(l.oldest_reader(20), 20);
    assert_eq!(l.num_readers(), 2);
    assert_eq!(l.readers().len(), 1);
    // The freed slot is reused before the table grows.
    assert_eq!(l.acquire_slot().unwrap(), 1);
    assert_eq!(l.num_readers(), 2);
    l.release_slot(a);
    l.release_slot(1);
    assert!(l.readers().is_empty());
}

#[test]
fn readers_full() {
    let dir = tempfile::tempdir().unwrap();
    let l = LockFile::open(&lock_path(&dir), 2, 0o664).unwrap();
    l.finish_open(0).unwrap();
    let a = l.acquire_slot().unwrap();
    let _b = l.acquire_slot().unwrap();
    assert_eq!(
        l.acquire_slot().map_err(|e| e.kind()),
        Err(ErrorKind::ReadersFull)
    );
    l.release_slot(a);
    assert_eq!(l.acquire_slot().unwrap(), a);
    assert_eq!(
        l.acquire_slot().map_err(|e| e.kind()),
        Err(ErrorKind::ReadersFull)
    );
}

#[test]
fn writer_lock_excludes() {
    let dir = tempfile::tempdir().unwrap();
    let l = LockFile::open(&lock_path(&dir), 4, 0o664).unwrap();
    l.finish_open(0).unwrap();
    assert_eq!(l.lock_writer(), Ok(false));
    l.unlock_writer();
    assert_eq!(l.lock_writer(), Ok(false));
    let got = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(l.lock_writer(), Ok(false));
            got.store(true, Ordering::SeqCst);
            l.unlock_writer();
        });
        // Wait until the thread waits for the mutex: glibc marks the lock
        // word of a robust mutex (owner tid, in its first 4 bytes) with
        // FUTEX_WAITERS before a waiter sleeps.
        // SAFETY: the lock word is an aligned u32 of the live mapping,
        // which glibc updates atomically.
        let word = unsafe { &*(l.wmutex() as *const std::sync::atomic::AtomicU32) };
        while word.load(Ordering::SeqCst) & libc::FUTEX_WAITERS == 0 && !got.load(Ordering::SeqCst)
        {
            std::thread::yield_now();
        }
        assert!(!got.load(Ordering::SeqCst));
        l.unlock_writer();
    });
    assert!(got.load(Ordering::SeqCst));
    // Another process is excluded too.
    assert_eq!(l.lock_writer(), Ok(false));
    let code = in_child(|| {
        // SAFETY: test-only probe of the shared writer mutex.
        let rc = unsafe { libc::pthread_mutex_trylock(l.wmutex()) };
        if rc == libc::EBUSY {
            0
        } else {
            1
        }
    });
    assert_eq!(code, 0);
    l.unlock_writer();
}

#[test]
fn writer_owner_death_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let l = LockFile::open(&lock_path(&dir), 4, 0o664).unwrap();
    l.finish_open(3).unwrap();
    let code = in_child(|| match l.lock_writer() {
        Ok(false) => {
            l.set_txnid(99);
            0
        }
        _ => 1,
    });
    assert_eq!(code, 0);
    // The child died holding the mutex: we get it, flagged as recovered.
    assert_eq!(l.lock_writer(), Ok(true));
    l.set_txnid(3);
    l.unlock_writer();
    assert_eq!(l.lock_writer(), Ok(false));
    l.unlock_writer();
}

#[test]
fn reader_mutex_owner_death_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let l = LockFile::open(&lock_path(&dir), 4, 0o664).unwrap();
    l.finish_open(0).unwrap();
    let code = in_child(|| {
        let s = match l.acquire_slot() {
            Ok(s) => s,
            Err(_) => return 1,
        };
        l.set_slot_txnid(s, 1);
        // SAFETY: test-only: die while holding the shared reader mutex.
        unsafe { libc::pthread_mutex_lock(l.rmutex()) }
    });
    assert_eq!(code, 0);
    assert_eq!(l.readers().len(), 1);
    // Locking the abandoned reader mutex runs the stale check, which frees the child's slot.
    let s = l.acquire_slot().unwrap();
    assert_eq!(s, 0);
    assert_eq!(l.readers().len(), 1);
    assert_eq!(l.readers()[0].pid, getpid());
    assert_eq!(l.reader_check(), Ok(0));
}

#[test]
fn bad_magic_and_format() {
    let dir = tempfile::tempdir().unwrap();
    let p = lock_path(&dir);
    let mut bytes = vec![0u8; HEADER + 64 * 4];
    bytes[0..4].copy_from_slice(&0x1234_5678u32.to_le_bytes());
    std::fs::write(&p, &bytes).unwrap();
    // Another "process" must hold byte 0 shared, or the opener would simply re-initialise.
    let holder = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&p)
        .unwrap();
    byte_lock(holder.as_raw_fd(), libc::F_SETLK, libc::F_RDLCK, 0).unwrap();
    let probe = |p: &Path| {
        in_child(|| match LockFile::open(p, 4, 0o664).map_err(|e| e.kind()) {
            Err(ErrorKind::Invalid) => 10,
            Err(ErrorKind::VersionMismatch) => 11,
            Err(_) => 12,
            Ok(_) => 13,
        })
    };
    assert_eq!(probe(&p), 10);

    // Right magic, wrong format.
    bytes[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    bytes[4..8].copy_from_slice(&0x0000_0001u32.to_le_bytes());
    let q = dir.path().join("lock2.mdb");
    std::fs::write(&q, &bytes).unwrap();
    let holder2 = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&q)
        .unwrap();
    byte_lock(holder2.as_raw_fd(), libc::F_SETLK, libc::F_RDLCK, 0).unwrap();
    assert_eq!(probe(&q), 11);

    // Too short to hold the header.
    let r = dir.path().join("lock3.mdb");
    std::fs::write(&r, [0u8; 16]).unwrap();
    let holder3 = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&r)
        .unwrap();
    byte_lock(holder3.as_raw_fd(), libc::F_SETLK, libc::F_RDLCK, 0).unwrap();
    assert_eq!(probe(&r), 10);
    drop((holder, holder2, holder3));
}

#[test]
fn reader_check_clears_dead_child() {
    let dir = tempfile::tempdir().unwrap();
    let l = LockFile::open(&lock_path(&dir), 8, 0o664).unwrap();
    l.finish_open(4).unwrap();
    let mine = l.acquire_slot().unwrap();
    l.set_slot_txnid(mine, 4);

    // A live child holding a slot is left alone.
    let mut to_child = [0 as libc::c_int; 2];
    let mut from_child = [0 as libc::c_int; 2];
    // SAFETY: creating two pipes into valid arrays.
    unsafe {
        assert_eq!(libc::pipe(to_child.as_mut_ptr()), 0);
        assert_eq!(libc::pipe(from_child.as_mut_ptr()), 0);
    }
    // SAFETY: fork in a test; the child uses only the lock file, the pipes, and _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = match l.acquire_slot() {
            Ok(s) => {
                l.set_slot_txnid(s, 2);
                0
            }
            Err(_) => 1,
        };
        let mut b = [code as u8];
        // SAFETY: the pipe fds are valid in the child; 1-byte buffers.
        unsafe {
            libc::write(from_child[1], b.as_ptr().cast(), 1);
            libc::read(to_child[0], b.as_mut_ptr().cast(), 1);
            libc::_exit(code);
        }
    }
    let mut b = [9u8];
    // SAFETY: valid pipe fd and 1-byte buffer.
    unsafe { libc::read(from_child[0], b.as_mut_ptr().cast(), 1) };
    assert_eq!(b[0], 0);
    assert_eq!(l.readers().len(), 2);
    assert_eq!(l.oldest_reader(10), 2);
    assert_eq!(l.reader_check(), Ok(0));
    assert_eq!(l.readers().len(), 2);

    // Once it exits without releasing, its slot is stale and gets cleared.
    // SAFETY: valid pipe fd and 1-byte buffer; then close our pipe ends.
    unsafe {
        libc::write(to_child[1], b.as_ptr().cast(), 1);
    }
    assert_eq!(wait_child(pid), 0);
    for fd in to_child.iter().chain(from_child.iter()) {
        // SAFETY: closing pipe fds we created and no longer use.
        unsafe { libc::close(*fd) };
    }
    assert_eq!(l.readers().len(), 2);
    assert_eq!(l.reader_check(), Ok(1));
    assert_eq!(
        l.readers(),
        vec![ReaderInfo {
            pid: getpid(),
            tid: current_tid(),
            txnid: Some(4)
        }]
    );
    assert_eq!(l.num_readers(), 2);
    assert_eq!(l.oldest_reader(10), 4);

    // A child that exits straight away (the plain case).
    let code = in_child(|| match l.acquire_slot() {
        Ok(s) => {
            l.set_slot_txnid(s, 1);
            0
        }
        Err(_) => 1,
    });
    assert_eq!(code, 0);
    assert_eq!(l.readers().len(), 2);
    assert_eq!(l.reader_check(), Ok(1));
    assert_eq!(l.readers().len(), 1);
}

fn run(cmd: &str, args: &[&str], stdin: Option<&str>) -> (i32, String) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut c = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = c.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    let out = c.wait_with_output().unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn interop_with_lmdb_tools() {
    for tool in ["/usr/bin/mdb_stat", "/usr/bin/mdb_load"] {
        assert!(
            Path::new(tool).exists(),
            "{tool} is missing: this test needs Debian's lmdb-utils"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let empty = "VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\nDATA=END\n";
    let (rc, out) = run("/usr/bin/mdb_load", &[&d], Some(empty));
    assert_eq!(rc, 0, "mdb_load: {out}");
    let (_, out) = run("/usr/bin/mdb_stat", &["-e", &d], None);
    let last: u64 = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Last transaction ID: "))
        .expect("mdb_stat -e output")
        .trim()
        .parse()
        .unwrap();

    // From here on LMDB shares our lock file live.
    let l = LockFile::open(&dir.path().join("lock.mdb"), 126, 0o664).unwrap();
    assert!(l.is_first());
    l.finish_open(last).unwrap();
    let s = l.acquire_slot().unwrap();
    l.set_slot_txnid(s, 5);
    let me = getpid();
    let line = format!("{:10} {:x} 5\n", me, current_tid());

    let (_, out) = run("/usr/bin/mdb_stat", &["-r", &d], None);
    assert!(out.contains("    pid     thread     txnid\n"), "{out}");
    assert!(out.contains(&line), "{out}");
    // LMDB's stale-reader check must see our pid lock and leave us alone.
    let (_, out) = run("/usr/bin/mdb_stat", &["-rr", &d], None);
    assert!(out.contains("0 stale readers cleared"), "{out}");
    assert!(out.contains(&line), "{out}");
    assert_eq!(l.readers().len(), 1);

    // An LMDB writer uses our writer mutex and publishes its txnid in our map.
    let one = "VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\n 6b6579\n 76616c\nDATA=END\n";
    let (rc, out) = run("/usr/bin/mdb_load", &[&d], Some(one));
    assert_eq!(rc, 0, "mdb_load: {out}");
    assert_eq!(l.txnid(), last + 1);
    assert_eq!(l.lock_writer(), Ok(false));
    l.unlock_writer();

    // A dead child's slot is cleared by LMDB's check too.
    let code = in_child(|| match l.acquire_slot() {
        Ok(s) => {
            l.set_slot_txnid(s, 1);
            0
        }
        Err(_) => 1,
    });
    assert_eq!(code, 0);
    let (_, out) = run("/usr/bin/mdb_stat", &["-rr", &d], None);
    assert!(out.contains("1 stale readers cleared"), "{out}");
    assert_eq!(l.readers().len(), 1);
    assert_eq!(l.num_readers(), 2);
    l.release_slot(s);
    let (_, out) = run("/usr/bin/mdb_stat", &["-r", &d], None);
    assert!(out.contains("(no active readers)"), "{out}");
}
