//! mdb: a memory-mapped, copy-on-write B+tree database engine that reads and
//! writes LMDB 0.9 data files.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use mdb::{Database, EnvOptions, Txn, WriteFlags};
//! let env = EnvOptions::new().map_size(64 << 20).open(dir.path())?;
//! let mut w = env.write_txn()?;
//! w.put(Database::MAIN, b"hello", b"world", WriteFlags::EMPTY)?;
//! w.commit()?;
//! let r = env.read_txn()?;
//! assert_eq!(r.get(Database::MAIN, b"hello")?, Some(&b"world"[..]));
//! # Ok::<(), mdb::Error>(())
//! ```
//!
//! Every fallible call returns an [`Error`] whose [`Error::kind`] is what
//! LMDB would have returned ([`ErrorKind`]); a failed operation also says
//! what it was doing, and prints it:
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use mdb::{Database, Env, ErrorKind, WriteFlags};
//! let env = Env::open(dir.path())?;
//! let mut w = env.write_txn()?;
//! let e = w.put(Database::MAIN, b"", b"v", WriteFlags::EMPTY).unwrap_err();
//! assert_eq!(e.kind(), ErrorKind::BadValSize);
//! assert!(e.to_string().ends_with("(put into the main database, key of 0 bytes, value of 1 byte)"));
//! # Ok::<(), mdb::Error>(())
//! ```
#![deny(missing_docs)]

mod backup;
pub mod check;
mod copy;
mod cursor;
mod db;
mod entries;
mod env;
pub mod error;
/// The on-disk format: page, node and meta views, flags, key orders
/// (internals: with the `unstable` feature only).
#[cfg(feature = "unstable")]
pub mod format;
#[cfg(not(feature = "unstable"))]
#[allow(dead_code)]
mod format;
/// The I/O seam every write and sync goes through, and fault injection
/// (internals: with the `unstable` feature only).
#[cfg(feature = "unstable")]
pub mod io;
#[cfg(not(feature = "unstable"))]
#[allow(dead_code)]
mod io;
pub(crate) mod lock;
mod mmap;
mod pager;
mod pgno_map;
/// Simulated power cuts of a process (tests: with the `unstable` feature
/// only).
#[cfg(feature = "unstable")]
pub mod powercut;
mod sink;
mod snapshot;
mod tree;
mod txn;
pub mod typed;
mod wal;
mod young;

/// Version string printed by the tools' `-V`.
///
/// ```
/// assert!(mdb::VERSION_STRING.starts_with("mdb "));
/// assert!(mdb::VERSION_STRING.contains("LMDB 0.9"));
/// ```
pub const VERSION_STRING: &str = concat!(
    "mdb ",
    env!("CARGO_PKG_VERSION"),
    " (LMDB 0.9.24 compatible)"
);

#[cfg(feature = "unstable")]
pub use backup::restore_with_faults;
pub use backup::{
    restore, verify, BackupEntry, BackupError, BackupKind, BackupProgress, BackupResult,
    LogArchive, Manifest, RestorePoint, RestoreReport, VerifyReport,
};
pub use copy::{CopyProgress, CopyStats, ProgressFn};
pub use cursor::{Cursor, CursorOp, CursorState, Iter, Range, SeekLeaf};
pub use db::{Database, Stat};
pub use entries::{Entries, Groups, Values};
pub use env::{
    Env, EnvFlags, EnvInfo, EnvOptions, DEFAULT_CEILING, DEFAULT_MAPSIZE, DEFAULT_TXN_MEMORY,
    MAX_KEY_SIZE,
};
pub use error::{Error, ErrorKind, Misuse, Result};
pub use format::cmp::{CCmp, CVal, CmpFn, RustCmp};
pub use format::flags::DbFlags;
/// Former paths of the format modules (with the `unstable` feature).
#[cfg(feature = "unstable")]
pub use format::{cmp, meta, page};
pub use lock::{ReaderInfo, MAX_READERS};
pub use tree::Item;
pub use tree::WriteFlags;
pub use txn::{CursorWork, NestedTxn, OwnSlot, RoTxn, RwCursor, RwTxn, SlotMode, ThreadSlot, Txn};
pub use wal::mode::{WalInfo, WalOptions};
