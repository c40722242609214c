//! Power cuts of a whole process, for tests (with the `unstable` feature):
//! `PowerCut` is a `FaultInjector` that, before each write of an
//! environment's files (the data file, log segments, the checkpoint
//! file), saves the bytes the write overwrites to a journal, and forgets
//! them once the file is synced. After the process is killed (SIGKILL:
//! the kernel keeps every write), `revert` puts the saved bytes back,
//! newest first: the files are then as a power cut would leave them when
//! the disk kept nothing that was not synced.
//!
//! What it does not undo: file creations, renames, removals and length
//! changes (the engine syncs the directory after those that matter), and
//! writes made outside the seam (the engine syncs those before it relies
//! on them). A sync counts from the moment it is announced: a kill during
//! the sync keeps the writes it covers, which a disk may do too. Only
//! environments with a sub-directory (`data.mdb`, `wal/`) are covered.

use crate::io::{FaultInjector, IoAction, IoOp};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A journal past this size is rewritten with only what is still unsynced.
const COMPACT_AT: u64 = 16 << 20;

const SAVE: u8 = b'W';
const SYNC: u8 = b'S';

/// Bytes a write overwrote, not synced since.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Undo {
    /// Path relative to the environment's directory.
    file: String,
    /// Device and inode of the file when it was written: a file replaced
    /// since (renamed over, recycled) is left alone.
    dev: u64,
    ino: u64,
    offset: u64,
    /// The file's length before the write.
    len: u64,
    /// The bytes the write overwrote (those before the old end).
    old: Vec<u8>,
}

/// Records, for one environment, what a power cut would undo.
pub struct PowerCut {
    dir: PathBuf,
    state: Mutex<Journal>,
}

struct Journal {
    path: PathBuf,
    file: File,
    bytes: u64,
    /// Unsynced writes, oldest first.
    pending: Vec<Undo>,
}

fn encode_save(u: &Undo) -> Vec<u8> {
    let mut b = vec![SAVE];
    b.extend((u.file.len() as u32).to_le_bytes());
    b.extend(u.file.as_bytes());
    for v in [u.dev, u.ino, u.offset, u.len] {
        b.extend(v.to_le_bytes());
    }
    b.extend((u.old.len() as u32).to_le_bytes());
    b.extend(&u.old);
    seal(b)
}

fn encode_sync(file: &str) -> Vec<u8> {
    let mut b = vec![SYNC];
    b.extend((file.len() as u32).to_le_bytes());
    b.extend(file.as_bytes());
    seal(b)
}

/// Prefix the record with its length and end it with its CRC32C, so that
/// a record a kill cut short is seen as the journal's end.
fn seal(body: Vec<u8>) -> Vec<u8> {
    let mut b = (body.len() as u32).to_le_bytes().to_vec();
    let crc = crc32c::crc32c(&body);
    b.extend(body);
    b.extend(crc.to_le_bytes());
    b
}

/// The records of a journal, up to the first incomplete one.
fn parse(bytes: &[u8]) -> Vec<Result<Undo, String>> {
    let mut out = Vec::new();
    let mut at = 0;
    let u32_at = |b: &[u8], i: usize| -> Option<u32> {
        Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
    };
    let u64_at = |b: &[u8], i: usize| -> Option<u64> {
        Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
    };
    while let Some(n) = u32_at(bytes, at) {
        let n = n as usize;
        let Some(body) = bytes.get(at + 4..at + 4 + n) else {
            break;
        };
        match u32_at(bytes, at + 4 + n) {
            Some(crc) if crc == crc32c::crc32c(body) => {}
            _ => break,
        }
        at += 8 + n;
        let record = (|| {
            let name_len = u32_at(body, 1)? as usize;
            let file = String::from_utf8(body.get(5..5 + name_len)?.to_vec()).ok()?;
            let p = 5 + name_len;
            if body[0] == SYNC {
                return Some(Err(file));
            }
            let old_len = u32_at(body, p + 32)? as usize;
            Some(Ok(Undo {
                file,
                dev: u64_at(body, p)?,
                ino: u64_at(body, p + 8)?,
                offset: u64_at(body, p + 16)?,
                len: u64_at(body, p + 24)?,
                old: body.get(p + 36..p + 36 + old_len)?.to_vec(),
            }))
        })();
        match record {
            Some(r) => out.push(r),
            None => break,
        }
    }
    out
}

impl PowerCut {
    /// Start recording for the environment in `dir`, into a new journal
    /// at `journal` (outside `dir`; an old one is replaced: [`revert`] it
    /// first). Install it with
    /// [`EnvOptions::fault_injector`](crate::EnvOptions::fault_injector).
    pub fn record(dir: &Path, journal: &Path) -> std::io::Result<Arc<PowerCut>> {
        let file = File::create(journal)?;
        Ok(Arc::new(PowerCut {
            dir: dir.to_path_buf(),
            state: Mutex::new(Journal {
                path: journal.to_path_buf(),
                file,
                bytes: 0,
                pending: Vec::new(),
            }),
        }))
    }

    /// Save what writing `len` bytes at `offset` of `file` overwrites.
    fn save(&self, file: &str, offset: u64, len: usize) -> std::io::Result<()> {
        let mut j = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let f = File::open(self.dir.join(file))?;
        let meta = f.metadata()?;
        let avail = meta.len().saturating_sub(offset).min(len as u64) as usize;
        let mut old = vec![0; avail];
        f.read_exact_at(&mut old, offset)?;
        let u = Undo {
            file: file.to_string(),
            dev: meta.dev(),
            ino: meta.ino(),
            offset,
            len: meta.len(),
            old,
        };
        j.append(&encode_save(&u))?;
        j.pending.push(u);
        Ok(())
    }

    /// `file` is being synced: its writes so far stay.
    fn synced(&self, file: &str) -> std::io::Result<()> {
        let mut j = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if !j.pending.iter().any(|u| u.file == file) {
            return Ok(());
        }
        j.pending.retain(|u| u.file != file);
        j.append(&encode_sync(file))?;
        if j.bytes > COMPACT_AT {
            j.compact()?;
        }
        Ok(())
    }
}

impl Journal {
    fn append(&mut self, rec: &[u8]) -> std::io::Result<()> {
        self.file.write_all(rec)?;
        self.bytes += rec.len() as u64;
        Ok(())
    }

    /// Rewrite the journal with the pending writes only (a rename: a kill
    /// leaves the old journal or the new one, each whole).
    fn compact(&mut self) -> std::io::Result<()> {
        let tmp = self.path.with_extension("compacting");
        let mut f = File::create(&tmp)?;
        let mut bytes = 0;
        for u in &self.pending {
            let rec = encode_save(u);
            f.write_all(&rec)?;
            bytes += rec.len() as u64;
        }
        std::fs::rename(&tmp, &self.path)?;
        self.file = OpenOptions::new().append(true).open(&self.path)?;
        self.bytes = bytes;
        Ok(())
    }
}

impl FaultInjector for PowerCut {
    fn on_io(&self, op: IoOp) -> IoAction {
        let seg = |seq: u64| format!("wal/{seq:016x}.wal");
        let ckpt = format!("wal/{}", crate::wal::checkpoint::FILE_NAME);
        let r = match op {
            IoOp::WritePages { offset, len } | IoOp::WriteMeta { offset, len } => {
                self.save("data.mdb", offset, len)
            }
            IoOp::LogWrite { seq, offset, len } => self.save(&seg(seq), offset, len),
            IoOp::CheckpointWrite { offset, len } => self.save(&ckpt, offset, len),
            IoOp::SyncData => self.synced("data.mdb"),
            // Preparing and retiring a segment sync it.
            IoOp::LogSync { seq } | IoOp::LogPrepare { seq, .. } | IoOp::LogRetire { seq } => {
                self.synced(&seg(seq))
            }
            IoOp::CheckpointSync => self.synced(&ckpt),
            _ => Ok(()),
        };
        match r {
            Ok(()) => IoAction::Proceed,
            // Recording failed: fail the write rather than let it go
            // unrecorded (the test then sees an I/O error, not a lie).
            Err(e) => IoAction::Fail(e.raw_os_error().unwrap_or(libc::EIO)),
        }
    }
}

/// Undo, newest first, the writes `journal` recorded for the environment
/// in `dir` that were not synced, and remove the journal. Call it after
/// the recording process was killed and before the environment is opened
/// again. Returns how many writes were undone (0 without a journal).
pub fn revert(dir: &Path, journal: &Path) -> std::io::Result<usize> {
    let mut bytes = Vec::new();
    match File::open(journal) {
        Ok(mut f) => f.read_to_end(&mut bytes)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut pending: Vec<Undo> = Vec::new();
    for r in parse(&bytes) {
        match r {
            Ok(u) => pending.push(u),
            Err(file) => pending.retain(|u| u.file != file),
        }
    }
    let mut undone = 0;
    for u in pending.iter().rev() {
        let path = dir.join(&u.file);
        let Ok(f) = OpenOptions::new().write(true).open(&path) else {
            continue; // removed since
        };
        let meta = f.metadata()?;
        if (meta.dev(), meta.ino()) != (u.dev, u.ino) {
            continue; // another file under that name
        }
        f.write_all_at(&u.old, u.offset)?;
        if meta.len() > u.len {
            f.set_len(u.len)?;
        }
        undone += 1;
    }
    for u in &pending {
        if let Ok(f) = File::open(dir.join(&u.file)) {
            f.sync_all()?;
        }
    }
    std::fs::remove_file(journal)?;
    Ok(undone)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory holding a journal's path and an environment directory
    /// (with `wal/`) whose data file holds `data`.
    fn setup(data: &[u8]) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (journal, env) = (dir.path().join("journal"), dir.path().join("env"));
        std::fs::create_dir_all(env.join("wal")).unwrap();
        std::fs::write(env.join("data.mdb"), data).unwrap();
        (dir, journal, env)
    }

    fn write(pc: &PowerCut, dir: &Path, off: u64, bytes: &[u8]) {
        let op = IoOp::WritePages {
            offset: off,
            len: bytes.len(),
        };
        assert_eq!(pc.on_io(op), IoAction::Proceed);
        let f = OpenOptions::new()
            .write(true)
            .open(dir.join("data.mdb"))
            .unwrap();
        f.write_all_at(bytes, off).unwrap();
    }

    #[test]
    fn revert_undoes_the_writes_since_the_last_sync_newest_first() {
        let (_dir, journal, env) = setup(b"aaaaaaaa");
        let pc = PowerCut::record(&env, &journal).unwrap();
        write(&pc, &env, 0, b"bb");
        assert_eq!(pc.on_io(IoOp::SyncData), IoAction::Proceed);
        write(&pc, &env, 1, b"cc");
        write(&pc, &env, 2, b"dd");
        write(&pc, &env, 6, b"eeee"); // grows the file
                                      // A record a kill cut short is ignored.
        let mut j = OpenOptions::new().append(true).open(&journal).unwrap();
        j.write_all(&encode_sync("data.mdb")[..7]).unwrap();
        drop(pc);
        assert_eq!(std::fs::read(env.join("data.mdb")).unwrap(), b"bcddaaeeee");
        assert_eq!(revert(&env, &journal).unwrap(), 3);
        assert_eq!(std::fs::read(env.join("data.mdb")).unwrap(), b"bbaaaaaa");
        assert!(!journal.exists());
        assert_eq!(revert(&env, &journal).unwrap(), 0);
    }

    #[test]
    fn a_file_replaced_since_is_left_alone() {
        let (_dir, journal, env) = setup(b"aaaa");
        let pc = PowerCut::record(&env, &journal).unwrap();
        write(&pc, &env, 0, b"bb");
        std::fs::write(env.join("new"), b"cccc").unwrap();
        std::fs::rename(env.join("new"), env.join("data.mdb")).unwrap();
        assert_eq!(revert(&env, &journal).unwrap(), 0);
        assert_eq!(std::fs::read(env.join("data.mdb")).unwrap(), b"cccc");
    }

    #[test]
    fn compaction_keeps_only_the_unsynced_writes() {
        let (_dir, journal, env) = setup(b"aaaa");
        std::fs::write(env.join("wal/0000000000000001.wal"), b"zzzz").unwrap();
        let pc = PowerCut::record(&env, &journal).unwrap();
        let op = IoOp::LogWrite {
            seq: 1,
            offset: 0,
            len: 2,
        };
        assert_eq!(pc.on_io(op), IoAction::Proceed);
        let seg = OpenOptions::new()
            .write(true)
            .open(env.join("wal/0000000000000001.wal"))
            .unwrap();
        seg.write_all_at(b"yy", 0).unwrap();
        write(&pc, &env, 0, b"bb");
        pc.state.lock().unwrap().compact().unwrap();
        assert_eq!(pc.on_io(IoOp::SyncData), IoAction::Proceed);
        assert_eq!(revert(&env, &journal).unwrap(), 1);
        assert_eq!(std::fs::read(env.join("data.mdb")).unwrap(), b"bbaa");
        let seg = std::fs::read(env.join("wal/0000000000000001.wal")).unwrap();
        assert_eq!(seg, b"zzzz");
    }
}
