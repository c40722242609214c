//! Opening an environment's write-ahead log: which log is the data
//! file's (`wal/tie.rs`), what becomes of one that is not, and rolling the
//! data file's log forward when the environment is opened alone.
//!
//! | the data file | the log directory | WAL mode | otherwise |
//! |---|---|---|---|
//! | plain | absent | a new log | nothing to do |
//! | plain | the file's | rolled forward if alone | rolled forward if alone |
//! | plain | another's, or no checkpoint | set aside, a new log | set aside (ignored read-only) |
//! | waits for a log | the file's | rolled forward if alone | rolled forward if alone |
//! | waits for a log | absent, another's, or no checkpoint | refused, unless the loss is accepted | the same |
//!
//! A data file *waits for a log* when it carries `VERSION_WAL`. Setting a
//! log aside deletes it when its data file holds every record in it (it was
//! closed cleanly), else keeps it as `wal.orphan-<identity>/`.

use super::options::EnvFlags;
use crate::env::EnvOptions;
use crate::error::{ErrorKind, Result};
use crate::format::meta::VERSION;
use crate::io::DataFile;
use crate::lock::LockFile;
use crate::wal::checkpoint::{self, CheckpointState};
use crate::wal::mode::{dir_for, marked, page_size, set_version, Wal};
use crate::wal::tie;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The log of the environment at `path`, for WAL mode (`o.wal`); also, when
/// this process opens the environment alone and the data file's log exists,
/// roll it forward onto the data file first (after a crash it may hold
/// commits the data file lacks), whether or not WAL mode is asked for now.
/// Opened outside WAL mode, the file is left a plain LMDB 0.9 file. A
/// read-only opener alone rolls a pending log forward through a descriptor
/// of its own, or refuses (`VersionMismatch`) where it cannot write. For a
/// new data file (`flen` 0) the returned log's identity goes into its meta
/// pages (`Wal::ident`).
pub(crate) fn open_wal(
    o: &EnvOptions,
    (path, data_path): (&Path, &Path),
    flags: EnvFlags,
    df: &DataFile,
    lock: &LockFile,
    flen: u64,
) -> Result<Option<Wal>> {
    let dir = dir_for(path, flags.contains(EnvFlags::NO_SUB_DIR));
    let rdonly = flags.contains(EnvFlags::READ_ONLY);
    let marked = flen > 0 && marked(df)?;
    let psize = if flen > 0 { page_size(df)? } else { 0 };
    let ident = if flen > 0 { tie::read(df, psize)? } else { 0 };
    let alone = lock.opening_alone() && flen > 0;
    let accept = o.accepts_log_loss();
    if !rdonly && !dir.exists() {
        tie::tidy(&dir)?;
    }
    let found = if dir.is_dir() {
        Some(checkpoint::peek(&dir)?)
    } else {
        None
    };
    // A new data file has no log yet, whatever the directory holds.
    let ours = flen > 0 && matches!(&found, Some(Some(cp)) if cp.ident == ident);
    if !ours {
        if marked && !accept {
            return Err(missing_log(&dir, found.as_ref()));
        }
        if !rdonly && (o.wal.is_some() || alone) {
            // Under the writer lock unless alone (another process may be
            // opening the environment too).
            let _held = (!alone).then(|| WriterHeld::take(lock, df)).transpose()?;
            if let Some(cp) = &found {
                // Not this data file's log: out of the way.
                let keep = marked || may_hold_commits(&dir, cp.as_ref());
                let id = cp.as_ref().map_or(0, |c| c.ident);
                tie::set_aside(&dir, id, keep)?;
            }
            if marked {
                // The loss is accepted: the data file is taken as it is.
                set_version(df, psize, VERSION)?;
            }
        }
        let Some(wo) = o.wal.filter(|_| !rdonly) else {
            return Ok(None);
        };
        let id = if ident != 0 { ident } else { tie::new_ident() };
        let _held = (!alone).then(|| WriterHeld::take(lock, df)).transpose()?;
        if flen > 0 && ident == 0 {
            tie::write(df, psize, id)?;
        }
        let w = Wal::open(&dir, wo, (id, false), o.fault.clone())?;
        if flen > 0 {
            // The log starts at the data file as it is: its first
            // checkpoint. Without one, the next open (after a crash before
            // any checkpoint) found records starting past txnid 1 and took
            // the older ones for lost (`MDB_CORRUPTED`).
            let m = df.newest_meta(psize)?;
            df.sync_data()?;
            w.checkpoint(&m, true)?;
        }
        return Ok(Some(w));
    }
    if rdonly {
        if marked && alone && !flags.contains(EnvFlags::NO_LOCK) {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(data_path)
                .map_err(|_| ErrorKind::VersionMismatch)?;
            let own = DataFile::new(file, None, o.fault.clone());
            let w = Wal::open_replay(&dir, (ident, accept), o.fault.clone())?;
            roll_forward(&w, &own, true)?;
        }
        return Ok(None);
    }
    if o.wal.is_none() && !alone {
        // Another process has the environment: it keeps the log.
        return Ok(None);
    }
    let open = || match o.wal {
        Some(wo) => Wal::open(&dir, wo, (ident, accept), o.fault.clone()),
        None => Wal::open_replay(&dir, (ident, accept), o.fault.clone()),
    };
    let w = if alone || lock.writer_is_this_thread() {
        open()?
    } else {
        // Opening a log tidies its directory (spare and leftover segments,
        // the next segment): not while another process's writer uses it.
        let _held = WriterHeld::take(lock, df)?;
        open()?
    };
    if alone {
        roll_forward(&w, df, o.wal.is_none())?;
        if o.wal.is_some() && ident == 0 {
            // A log from before identities: the data file holds all of
            // it now; from here on both carry one.
            let id = tie::new_ident();
            tie::write(df, psize, id)?;
            w.retie(id)?;
        }
    }
    Ok(o.wal.is_some().then_some(w))
}

/// The error for a data file that waits for a log it does not have.
fn missing_log(dir: &Path, found: Option<&Option<CheckpointState>>) -> crate::error::Error {
    let d = dir.display();
    let (kind, what) = match found {
        None => (
            ErrorKind::VersionMismatch,
            format!("the data file waits for its write-ahead log, and {d} is missing"),
        ),
        Some(None) => (
            ErrorKind::Corrupted,
            format!(
                "the data file waits for its write-ahead log, and {d} holds none \
                 (no checkpoint file)"
            ),
        ),
        Some(Some(cp)) => (
            ErrorKind::Corrupted,
            format!(
                "the data file waits for its write-ahead log, and {d} holds another \
                 data file's log (identity {:016x})",
                cp.ident
            ),
        ),
    };
    crate::error::Error::from(kind).with_detail(format!(
        "{what}; commits since the last checkpoint are lost unless that log is put \
         back (`mdb checkpoint --accept-log-loss` takes the data file as it is)"
    ))
}

/// Whether the log in `dir` may hold commits past its checkpoint `cp`
/// (when unsure, it may).
fn may_hold_commits(dir: &Path, cp: Option<&CheckpointState>) -> bool {
    let Some(cp) = cp else {
        return true;
    };
    match Wal::open_replay(dir, (cp.ident, false), None) {
        Ok(w) => w.last_txnid().is_some_and(|t| t > cp.txnid),
        Err(_) => true,
    }
}

/// The writer lock, held for a step at open; released on drop.
pub(crate) struct WriterHeld<'a>(&'a LockFile);

impl<'a> WriterHeld<'a> {
    pub(crate) fn take(lock: &'a LockFile, df: &DataFile) -> Result<WriterHeld<'a>> {
        if lock.lock_writer()? {
            // A writer died: its uncommitted pages are unreferenced.
            if let Ok(m) = page_size(df).and_then(|p| df.newest_meta(p)) {
                lock.set_txnid(m.txnid.max(lock.txnid()));
            }
        }
        Ok(WriterHeld(lock))
    }
}

impl Drop for WriterHeld<'_> {
    fn drop(&mut self) {
        self.0.unlock_writer();
    }
}

/// Replay the log's records past its checkpoint onto the data file, and
/// checkpoint; `plain` also writes LMDB 0.9's version back. The caller
/// opens the environment alone.
fn roll_forward(w: &Wal, df: &DataFile, plain: bool) -> Result<()> {
    let psize = page_size(df)?;
    if let Some(r) = w.reconcile(df, psize, true)? {
        r.write_alone(df)?;
    }
    let m = df.newest_meta(psize)?;
    if m.txnid > w.checkpointed() {
        // Replayed records, or commits made without the log.
        df.sync_data()?;
        w.checkpoint(&m, true)?;
    }
    if plain {
        w.unmark(df, psize)?;
    }
    Ok(())
}
