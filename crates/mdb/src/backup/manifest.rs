//! The backup directory's manifest (`manifest.json`): the chain of full and
//! incremental backups, each file's size and CRC32C, and the page hashes
//! the next incremental backup compares against (`hashes.bin`).
//!
//! Format 2 carries its own CRC32C (`manifest_crc32c`, over the manifest's
//! compact JSON without it), so that a flipped bit cannot relabel a backup
//! (its transaction, its kind). Format 1 (no checksum) is still read.

use super::out::{write_replace, Fault};
use super::BackupError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Manifest format version written.
pub(super) const FORMAT: u32 = 2;
/// The format before the manifest carried a checksum: read, never written.
const FORMAT_UNCHECKED: u32 = 1;
pub(super) use super::out::{HASHES, MANIFEST};

/// What a backup directory holds (its `manifest.json`;
/// [`verify`](crate::verify) reads and checks it).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// let env = mdb::Env::open(dir.path())?;
/// env.backup(dest.path(), false, None)?;
/// env.backup(dest.path(), true, None)?;
/// let m = mdb::verify(dest.path())?.manifest;
/// assert_eq!(m.backups.len(), 2);
/// assert_eq!(m.page_size as usize, env.page_size());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// Manifest format (2; 1 lacks the checksum).
    pub format: u32,
    /// Page size of the backed-up environment.
    pub page_size: u32,
    /// The backups, oldest first.
    pub backups: Vec<BackupEntry>,
    /// CRC32C of `hashes.bin`.
    pub hashes_crc32c: u32,
}

/// Whether a backup holds the whole file or the pages changed since the
/// one before.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// use mdb::BackupKind;
/// let env = mdb::Env::open(dir.path())?;
/// assert_eq!(env.backup(dest.path(), true, None)?.kind, BackupKind::Full); // the first
/// assert_eq!(env.backup(dest.path(), true, None)?.kind, BackupKind::Incremental);
/// assert_eq!(env.backup(dest.path(), false, None)?.kind, BackupKind::Full); // asked for
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BackupKind {
    /// A plain LMDB data file of the snapshot.
    Full,
    /// The pages that differ from the previous backup, and the meta pages.
    Incremental,
    /// Only the log records since the previous entry (write-ahead-log
    /// mode, `Env::archive_log`, `mdb backup --continuous`).
    Log,
}

/// One backup of the chain, as [`Env::backup`](crate::Env::backup) returns
/// it and the manifest records it.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let dest = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// w.commit()?;
/// let b = env.backup(dest.path(), false, None)?;
/// assert_eq!((b.seq, b.txnid, b.file.as_str()), (0, 1, "000000-full.mdb"));
/// assert_eq!(b.bytes, std::fs::metadata(dest.path().join(&b.file))?.len());
/// assert_eq!(b.pages, b.pages_written);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BackupEntry {
    /// Position in the chain (0, 1, ...).
    pub seq: u64,
    /// Full or incremental.
    pub kind: BackupKind,
    /// The transaction the backup is a snapshot of.
    pub txnid: u64,
    /// File name in the backup directory.
    pub file: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// CRC32C of the whole file.
    pub crc32c: u32,
    /// Pages of the data file at this snapshot (`last_pgno + 1`).
    pub pages: u64,
    /// Pages the file carries (all for a full backup).
    pub pages_written: u64,
    /// Seconds since the Unix epoch when the backup ended.
    pub created: u64,
    /// Nanoseconds since the Unix epoch when the snapshot was taken (read
    /// just after it: every commit it holds was made at or before); what
    /// [`RestorePoint::Time`](crate::RestorePoint::Time) compares.
    /// `None` in manifests of earlier versions, and in log-only entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_ns: Option<u64>,
    /// CRC32C of the snapshot's meta (both trees' records, last page,
    /// txnid): a later backup of an environment at the same transaction
    /// must have the same. `None` in manifests of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_crc32c: Option<u32>,
    /// The source was in write-ahead-log mode (the snapshot is of a
    /// durable, published commit either way).
    pub wal: bool,
    /// The log records since the previous backup, archived (write-ahead-
    /// log mode): a restore reaches every transaction in between.
    #[serde(default)]
    pub log: Option<super::log::LogArchive>,
}

impl Manifest {
    /// Parse a manifest's JSON text (its format and chain unchecked).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let dest = tempfile::tempdir().unwrap();
    /// use mdb::Manifest;
    /// let env = mdb::Env::open(dir.path())?;
    /// let entry = env.backup(dest.path(), false, None)?;
    /// let text = std::fs::read_to_string(dest.path().join("manifest.json"))?;
    /// let m = Manifest::from_json(&text)?;
    /// assert_eq!(m.backups, [entry]);
    /// assert!(Manifest::from_json("{}").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Manifest, String> {
        let s: Stored = serde_json::from_str(text).map_err(|e| e.to_string())?;
        match s.manifest_crc32c {
            Some(c) if c != s.manifest.crc32c() => {
                Err("checksum mismatch: the manifest is damaged".into())
            }
            None if s.manifest.format != FORMAT_UNCHECKED => Err(format!(
                "no checksum, which format {} has: the manifest is damaged",
                s.manifest.format
            )),
            _ => Ok(s.manifest),
        }
    }

    /// CRC32C of the manifest's compact JSON.
    fn crc32c(&self) -> u32 {
        crc32c::crc32c(
            serde_json::to_string(self)
                .expect("a manifest serialises")
                .as_bytes(),
        )
    }

    /// The manifest as JSON text, as `manifest.json` holds it (with its
    /// checksum).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let dest = tempfile::tempdir().unwrap();
    /// use mdb::Manifest;
    /// let env = mdb::Env::open(dir.path())?;
    /// env.backup(dest.path(), false, None)?;
    /// let m = mdb::verify(dest.path())?.manifest;
    /// assert!(m.to_json().contains("\"kind\": \"full\""));
    /// assert_eq!(Manifest::from_json(&m.to_json())?, m);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_json(&self) -> String {
        let s = StoredRef {
            manifest: self,
            manifest_crc32c: self.crc32c(),
        };
        serde_json::to_string_pretty(&s).expect("a manifest serialises")
    }

    /// Read `dir/manifest.json`; `Ok(None)` if there is none.
    pub(super) fn load(dir: &Path) -> Result<Option<Manifest>, BackupError> {
        let path = dir.join(MANIFEST);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(BackupError::io(&path, e)),
        };
        let m = Manifest::from_json(&text)
            .map_err(|e| BackupError::bad(&path, format!("not a backup manifest: {e}")))?;
        if m.format != FORMAT && m.format != FORMAT_UNCHECKED {
            return Err(BackupError::bad(
                &path,
                format!(
                    "manifest format {} (this version reads {FORMAT_UNCHECKED} and {FORMAT})",
                    m.format
                ),
            ));
        }
        m.check_chain(&path)?;
        Ok(Some(m))
    }

    /// Write the manifest atomically (a new file renamed over the old), in
    /// the current format.
    pub(super) fn save(&mut self, dir: &Path, fault: &Fault) -> Result<(), BackupError> {
        self.format = FORMAT;
        write_replace(&dir.join(MANIFEST), self.to_json().as_bytes(), fault)?;
        sync_dir(dir)
    }

    /// The chain's shape: numbered in order, starting with a full backup,
    /// transactions never going back.
    fn check_chain(&self, path: &Path) -> Result<(), BackupError> {
        for (i, b) in self.backups.iter().enumerate() {
            if b.seq != i as u64 {
                return Err(BackupError::bad(
                    path,
                    format!("backup {i} is numbered {}: the chain has a gap", b.seq),
                ));
            }
            if i == 0 && b.kind != BackupKind::Full {
                return Err(BackupError::bad(
                    path,
                    "the chain does not start with a full backup",
                ));
            }
            let log_name = b.log.as_ref().map(|l| l.file.as_str()).unwrap_or("x");
            if [b.file.as_str(), log_name]
                .iter()
                .any(|f| f.contains('/') || f.starts_with('.'))
            {
                return Err(BackupError::bad(
                    path,
                    format!("bad file name {:?}", b.file),
                ));
            }
            if i > 0 && b.txnid < self.backups[i - 1].txnid {
                return Err(BackupError::bad(
                    path,
                    format!("backup {i} (txn {}) is older than the one before", b.txnid),
                ));
            }
        }
        Ok(())
    }

    /// Path of backup `b`'s file in `dir`.
    pub(super) fn file(dir: &Path, b: &BackupEntry) -> PathBuf {
        dir.join(&b.file)
    }
}

/// `manifest.json` as read: the manifest and its checksum.
#[derive(Deserialize)]
struct Stored {
    #[serde(flatten)]
    manifest: Manifest,
    #[serde(default)]
    manifest_crc32c: Option<u32>,
}

/// `manifest.json` as written.
#[derive(Serialize)]
struct StoredRef<'a> {
    #[serde(flatten)]
    manifest: &'a Manifest,
    manifest_crc32c: u32,
}

/// Make a rename or a new file in `dir` durable.
pub(super) fn sync_dir(dir: &Path) -> Result<(), BackupError> {
    crate::io::sync_dir(dir).map_err(|e| BackupError::io(dir, e))
}
