//! `MDB_NORDAHEAD`: a page fault on the map reads its own page, not the
//! pages around it. Observed through the page cache (`mincore`), on disk:
//! tmpfs has no read-ahead.

use mdb::{Database, EnvFlags, EnvOptions, Txn, WriteFlags};
use std::os::unix::io::AsRawFd;
use std::path::Path;

const KEYS: u32 = 3000;

fn key(i: u32) -> [u8; 8] {
    u64::from(i).to_be_bytes()
}

/// Pages of `file` in the page cache now.
fn resident_pages(file: &std::fs::File) -> usize {
    let len = file.metadata().unwrap().len() as usize;
    // SAFETY: a fresh read-only shared mapping of a file we hold open,
    // unmapped below; only its residency is asked, nothing is read.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        let pages = len.div_ceil(4096);
        let mut v = vec![0u8; pages];
        assert_eq!(libc::mincore(p, len, v.as_mut_ptr()), 0);
        libc::munmap(p, len);
        v.iter().filter(|&&b| b & 1 == 1).count()
    }
}

/// Drop the data file's (clean, synced) pages from the page cache.
fn evict(file: &std::fs::File) {
    // SAFETY: an advice call on a descriptor we own; no memory involved.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0);
}

/// Fill a database of ~1,500 pages, closed (so synced and clean).
fn fill(dir: &Path) {
    let env = EnvOptions::new().map_size(64 << 20).open(dir).unwrap();
    let mut w = env.write_txn().unwrap();
    for i in 0..KEYS {
        w.put(
            Database::MAIN,
            &key(i),
            &[i as u8; 1800],
            WriteFlags::APPEND,
        )
        .unwrap();
    }
    w.commit().unwrap();
}

/// Pages resident after one cold `get` in the middle of the file.
fn resident_after_cold_get(dir: &Path, flags: EnvFlags) -> usize {
    let file = std::fs::File::open(dir.join("data.mdb")).unwrap();
    let env = EnvOptions::new()
        .map_size(64 << 20)
        .flags(flags)
        .open(dir)
        .unwrap();
    evict(&file);
    assert!(resident_pages(&file) < 8, "the page cache kept the file");
    let r = env.read_txn().unwrap();
    let v = r.get(Database::MAIN, &key(KEYS / 2)).unwrap().unwrap();
    assert_eq!(v[0], (KEYS / 2) as u8);
    resident_pages(&file)
}

#[test]
fn no_readahead_reads_only_the_pages_a_get_touches() {
    // On disk, not /dev/shm.
    let tmp = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    fill(tmp.path());
    // A root, a branch or two, a leaf, an overflow value of one page, and
    // the meta pages: a handful. Read-around would bring tens.
    let n = resident_after_cold_get(tmp.path(), EnvFlags::NO_READAHEAD);
    assert!(
        n <= 8,
        "{n} pages resident after one get under NO_READAHEAD"
    );
}
