//! The files a backup or a restore writes: every write and sync through
//! the I/O seam ([`IoOp::BackupWrite`], [`IoOp::BackupSync`]), so that
//! tests can inject ENOSPC or EIO; temporary files removed when the step
//! fails, and those a killed process left removed by the next backup or
//! restore into the directory, which holds the directory's lock meanwhile.

use super::BackupError;
use crate::io::{FaultInjector, IoAction, IoOp};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The manifest's file name in a backup directory.
pub(super) const MANIFEST: &str = "manifest.json";
/// Page hashes of the newest backup's state (little-endian u64 per page).
pub(super) const HASHES: &str = "hashes.bin";

/// The injector of a backup or restore, if any.
pub(super) type Fault = Option<Arc<dyn FaultInjector>>;

/// A file written through the seam: positioned writes, or sequential ones
/// (`Write`) from where the last ended.
pub(super) struct SeamFile {
    pub(super) file: File,
    fault: Fault,
    pos: u64,
}

fn os(e: i32) -> std::io::Error {
    std::io::Error::from_raw_os_error(e)
}

impl SeamFile {
    /// A file of `path` opened for writing (created, or truncated, when
    /// `create`).
    pub(super) fn open(path: &Path, create: bool, fault: Fault) -> std::io::Result<SeamFile> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(create)
            .open(path)?;
        Ok(SeamFile {
            file,
            fault,
            pos: 0,
        })
    }

    fn ask(&self, op: IoOp) -> IoAction {
        self.fault
            .as_ref()
            .map_or(IoAction::Proceed, |f| f.on_io(op))
    }

    /// Write all of `b` at `offset`.
    pub(super) fn write_at(&self, b: &[u8], offset: u64) -> std::io::Result<()> {
        let op = IoOp::BackupWrite {
            offset,
            len: b.len(),
        };
        match self.ask(op) {
            IoAction::Proceed => self.file.write_all_at(b, offset),
            IoAction::Fail(e) => Err(os(e)),
            IoAction::Tear(n) => {
                self.file.write_all_at(&b[..n.min(b.len())], offset)?;
                Err(os(libc::EIO))
            }
        }
    }

    /// fsync the file.
    pub(super) fn sync(&self) -> std::io::Result<()> {
        match self.ask(IoOp::BackupSync) {
            IoAction::Proceed => self.file.sync_all(),
            IoAction::Fail(e) => Err(os(e)),
            IoAction::Tear(_) => Err(os(libc::EIO)),
        }
    }
}

impl Write for SeamFile {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.write_at(b, self.pos)?;
        self.pos += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A temporary file removed on drop unless [`TmpPath::keep`] was called
/// (it has been renamed into place).
pub(super) struct TmpPath(Option<PathBuf>);

impl TmpPath {
    pub(super) fn new(path: PathBuf) -> TmpPath {
        TmpPath(Some(path))
    }
    pub(super) fn path(&self) -> &Path {
        self.0.as_deref().expect("a temporary path until kept")
    }
    /// The file is in place: nothing to remove.
    pub(super) fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for TmpPath {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Write `bytes` to `path` through the seam, atomically: a temporary file
/// synced, then renamed over `path` (the directory sync is the caller's).
pub(super) fn write_replace(path: &Path, bytes: &[u8], fault: &Fault) -> Result<(), BackupError> {
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy().into_owned());
    let tmp = TmpPath::new(path.with_file_name(format!(".{name}.tmp")));
    write_synced(tmp.path(), bytes, fault).map_err(|e| e.with_path(path))?;
    std::fs::rename(tmp.path(), path).map_err(|e| BackupError::io(path, e))?;
    tmp.keep();
    Ok(())
}

/// Write `bytes` as the whole of the file `path` through the seam, and
/// sync it.
pub(super) fn write_synced(path: &Path, bytes: &[u8], fault: &Fault) -> Result<(), BackupError> {
    let f = SeamFile::open(path, true, fault.clone()).map_err(|e| BackupError::io(path, e))?;
    f.write_at(bytes, 0)
        .and_then(|_| f.sync())
        .map_err(|e| BackupError::io(path, e))
}

/// Whether `name` is a temporary file this module's writers make: `.NAME.tmp`
/// of a backup file (`NNNNNN-...`), of the manifest or of the hashes, or a
/// restore's `.data.mdb.restoring`.
fn is_leftover(name: &str) -> bool {
    // (`manifest.json.tmp`: as versions before this one named it.)
    if name == RESTORING || name == "manifest.json.tmp" {
        return true;
    }
    let Some(inner) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    let numbered = inner.len() > 7
        && inner.as_bytes()[..6].iter().all(u8::is_ascii_digit)
        && inner.as_bytes()[6] == b'-';
    numbered || inner == MANIFEST || inner == HASHES
}

/// The file a restore writes before renaming it to `data.mdb`.
pub(super) const RESTORING: &str = ".data.mdb.restoring";

/// The exclusive lock of a backup directory or a restore's output
/// directory (`flock` on the directory), released on drop.
pub(super) struct DirLock(File);

impl Drop for DirLock {
    fn drop(&mut self) {
        // Unlocked explicitly: a child forked meanwhile by another thread
        // shares the descriptor until it execs, and closing ours alone
        // would leave the directory locked until then.
        // SAFETY: flock on a descriptor this lock owns; no memory involved.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

impl DirLock {
    /// Lock `dir`, then remove the temporary files a failed or killed
    /// backup or restore left in it (they may fill a disk that is full).
    pub(super) fn take(dir: &Path) -> Result<DirLock, BackupError> {
        let f = File::open(dir).map_err(|e| BackupError::io(dir, e))?;
        // SAFETY: flock on a descriptor this function owns; no memory involved.
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(BackupError {
                    code: crate::error::ErrorKind::Os(libc::EBUSY).into(),
                    path: Some(dir.to_path_buf()),
                    message: "another backup or restore is writing here".into(),
                });
            }
            return Err(BackupError::io(dir, e));
        }
        for e in std::fs::read_dir(dir).map_err(|e| BackupError::io(dir, e))? {
            let e = e.map_err(|e| BackupError::io(dir, e))?;
            if is_leftover(&e.file_name().to_string_lossy()) {
                let p = e.path();
                std::fs::remove_file(&p).map_err(|e| BackupError::io(&p, e))?;
            }
        }
        Ok(DirLock(f))
    }
}

#[cfg(test)]
mod tests {
    use super::is_leftover;

    #[test]
    fn only_our_temporary_files_are_leftovers() {
        for n in [
            ".000003-full.mdb.tmp",
            ".000012-incr.pages.tmp",
            ".000001-log.records.tmp",
            ".manifest.json.tmp",
            ".hashes.bin.tmp",
            ".data.mdb.restoring",
            "manifest.json.tmp",
        ] {
            assert!(is_leftover(n), "{n}");
        }
        for n in [
            "000003-full.mdb",
            "manifest.json",
            ".00003-full.mdb.tmp",
            ".abcdef-x.tmp",
            ".mine.tmp",
            "data.mdb",
            ".000003-full.mdb",
        ] {
            assert!(!is_leftover(n), "{n}");
        }
    }
}
