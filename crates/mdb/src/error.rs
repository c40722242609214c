//! The one error type of the engine, carrying LMDB's return codes.
//!
//! Every failure maps to an LMDB 0.9 code (`MDB_NOTFOUND`, `MDB_MAP_FULL`...)
//! or to an OS `errno`, so the C ABI can hand back exactly what LMDB would.

use std::fmt;

/// LMDB's numeric return codes (lmdb.h), kept so the C ABI and tools can print them.
///
/// ```
/// use mdb::error::code;
/// assert_eq!(mdb::Error::NotFound.code(), code::NOTFOUND);
/// assert_eq!(mdb::Error::from_code(code::MAP_FULL), mdb::Error::MapFull);
/// ```
pub mod code {
    /// Key/data pair already exists.
    pub const KEYEXIST: i32 = -30799;
    /// No matching key/data pair found.
    pub const NOTFOUND: i32 = -30798;
    /// Requested page not found.
    pub const PAGE_NOTFOUND: i32 = -30797;
    /// Located page was wrong type.
    pub const CORRUPTED: i32 = -30796;
    /// Update of meta page failed or environment had fatal error.
    pub const PANIC: i32 = -30795;
    /// Database environment version mismatch.
    pub const VERSION_MISMATCH: i32 = -30794;
    /// File is not an LMDB file.
    pub const INVALID: i32 = -30793;
    /// Environment mapsize limit reached.
    pub const MAP_FULL: i32 = -30792;
    /// Environment maxdbs limit reached.
    pub const DBS_FULL: i32 = -30791;
    /// Environment maxreaders limit reached.
    pub const READERS_FULL: i32 = -30790;
    /// Too many TLS keys in use (Windows only in LMDB).
    pub const TLS_FULL: i32 = -30789;
    /// Transaction has too many dirty pages.
    pub const TXN_FULL: i32 = -30788;
    /// Cursor stack too deep.
    pub const CURSOR_FULL: i32 = -30787;
    /// Page has not enough space.
    pub const PAGE_FULL: i32 = -30786;
    /// Database contents grew beyond environment mapsize.
    pub const MAP_RESIZED: i32 = -30785;
    /// Operation and DB incompatible, or DB flags changed.
    pub const INCOMPATIBLE: i32 = -30784;
    /// Invalid reuse of reader locktable slot.
    pub const BAD_RSLOT: i32 = -30783;
    /// Transaction must abort, has a child, or is invalid.
    pub const BAD_TXN: i32 = -30782;
    /// Unsupported size of key/DB name/data, or wrong DUPFIXED size.
    pub const BAD_VALSIZE: i32 = -30781;
    /// The specified DBI was changed unexpectedly.
    pub const BAD_DBI: i32 = -30780;
}

/// An engine error: an LMDB code or an OS error number.
///
/// Match on it to tell expected outcomes (a key already there) from
/// failures; it prints as `mdb_strerror` does.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Error, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// match w.put(Database::MAIN, b"k", b"w", WriteFlags::NO_OVERWRITE) {
///     Err(Error::KeyExist) => {} // kept the old value
///     other => panic!("{other:?}"),
/// }
/// assert_eq!(Error::KeyExist.to_string(), "MDB_KEYEXIST: Key/data pair already exists");
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// `MDB_KEYEXIST`: the key (or key/value pair) already exists.
    KeyExist,
    /// `MDB_NOTFOUND`: no matching key/data pair (or named database) found.
    NotFound,
    /// `MDB_PAGE_NOTFOUND`: a page number beyond the snapshot was reached.
    PageNotFound,
    /// `MDB_CORRUPTED`: a page of the wrong type or shape was reached.
    Corrupted,
    /// `MDB_PANIC`: the environment hit a fatal error and must be reopened.
    Panic,
    /// `MDB_VERSION_MISMATCH`: the data or lock file has another version.
    VersionMismatch,
    /// `MDB_INVALID`: the file is not an LMDB file.
    Invalid,
    /// `MDB_MAP_FULL`: the map size is exhausted; abort the transaction.
    MapFull,
    /// `MDB_DBS_FULL`: too many named databases are open.
    DbsFull,
    /// `MDB_READERS_FULL`: the reader table is full.
    ReadersFull,
    /// `MDB_TXN_FULL`: the transaction has too many dirty pages.
    TxnFull,
    /// `MDB_CURSOR_FULL`: the tree is deeper than the cursor stack.
    CursorFull,
    /// `MDB_PAGE_FULL`: internal error, a page has no more space.
    PageFull,
    /// `MDB_MAP_RESIZED`: another process grew the database past our map.
    MapResized,
    /// `MDB_INCOMPATIBLE`: operation and database flags do not agree.
    Incompatible,
    /// `MDB_BAD_RSLOT`: a second read transaction in one thread without NOTLS.
    BadRslot,
    /// `MDB_BAD_TXN`: the transaction must abort, has a child, or is finished.
    BadTxn,
    /// `MDB_BAD_VALSIZE`: empty or too long key, name or value.
    BadValSize,
    /// `MDB_BAD_DBI`: the database handle is not valid here.
    BadDbi,
    /// An operating-system error number (`errno`), e.g. `EINVAL`, `ENOSPC`.
    Os(i32),
    /// A call the engine refused as a misuse of the API: what LMDB reports
    /// as `EINVAL` (its [`Error::code`]), saying which.
    Misuse(Misuse),
}

/// The misuses [`Error::Misuse`] names.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, Error, Misuse, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let r = w.put(Database::FREE, b"k", b"v", WriteFlags::EMPTY);
/// assert_eq!(r, Err(Error::Misuse(Misuse::FreeDbWrite)));
/// assert_eq!(r.unwrap_err().code(), libc::EINVAL); // what LMDB returns
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Misuse {
    /// The free-page database is read-only.
    FreeDbWrite,
    /// The handle is not open (never opened, or closed).
    UnknownHandle,
    /// The handle was opened by a write transaction that has not committed.
    UncommittedHandle,
    /// Flags that are not database flags, or not ones a database may be
    /// created with.
    BadDbFlags,
    /// Flags that are not environment flags, or not ones that may change
    /// after open.
    BadEnvFlags,
    /// The cursor has no current item.
    UnpositionedCursor,
    /// `CURRENT` with a key other than the cursor's.
    KeyNotCurrent,
    /// `RESERVE` on a DUPSORT database.
    ReserveDupSort,
    /// A fixed-address map cannot be resized.
    FixedMapResize,
}

impl Misuse {
    fn text(self) -> &'static str {
        match self {
            Misuse::FreeDbWrite => "the free-page database is read-only",
            Misuse::UnknownHandle => "the database handle is not open",
            Misuse::UncommittedHandle => {
                "the database handle belongs to a write transaction that has not committed"
            }
            Misuse::BadDbFlags => "invalid database flags",
            Misuse::BadEnvFlags => "invalid environment flags (or not changeable after open)",
            Misuse::UnpositionedCursor => "the cursor has no current item",
            Misuse::KeyNotCurrent => "CURRENT with a key other than the cursor's",
            Misuse::ReserveDupSort => "RESERVE is not allowed on a DUPSORT database",
            Misuse::FixedMapResize => "a fixed-address map cannot be resized",
        }
    }
}

/// Result alias used throughout the engine.
///
/// ```
/// fn value_len(txn: &impl mdb::Txn, key: &[u8]) -> mdb::Result<usize> {
///     Ok(txn.get(mdb::Database::MAIN, key)?.map_or(0, |v| v.len()))
/// }
/// # let dir = tempfile::tempdir().unwrap();
/// let env = mdb::Env::open(dir.path())?;
/// assert_eq!(value_len(&env.read_txn()?, b"k")?, 0);
/// # Ok::<(), mdb::Error>(())
/// ```
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The numeric code LMDB would return for this error.
    ///
    /// ```
    /// use mdb::Error;
    /// assert_eq!(Error::NotFound.code(), -30798); // MDB_NOTFOUND
    /// assert_eq!(Error::Os(libc::ENOSPC).code(), libc::ENOSPC);
    /// ```
    pub fn code(self) -> i32 {
        use code::*;
        match self {
            Error::KeyExist => KEYEXIST,
            Error::NotFound => NOTFOUND,
            Error::PageNotFound => PAGE_NOTFOUND,
            Error::Corrupted => CORRUPTED,
            Error::Panic => PANIC,
            Error::VersionMismatch => VERSION_MISMATCH,
            Error::Invalid => INVALID,
            Error::MapFull => MAP_FULL,
            Error::DbsFull => DBS_FULL,
            Error::ReadersFull => READERS_FULL,
            Error::TxnFull => TXN_FULL,
            Error::CursorFull => CURSOR_FULL,
            Error::PageFull => PAGE_FULL,
            Error::MapResized => MAP_RESIZED,
            Error::Incompatible => INCOMPATIBLE,
            Error::BadRslot => BAD_RSLOT,
            Error::BadTxn => BAD_TXN,
            Error::BadValSize => BAD_VALSIZE,
            Error::BadDbi => BAD_DBI,
            Error::Os(e) => e,
            Error::Misuse(_) => libc::EINVAL,
        }
    }

    /// Build an error from an LMDB code or errno (inverse of [`Error::code`]).
    ///
    /// ```
    /// use mdb::Error;
    /// assert_eq!(Error::from_code(-30799), Error::KeyExist);
    /// assert_eq!(Error::from_code(libc::EACCES), Error::Os(libc::EACCES));
    /// ```
    pub fn from_code(c: i32) -> Error {
        use code::*;
        match c {
            KEYEXIST => Error::KeyExist,
            NOTFOUND => Error::NotFound,
            PAGE_NOTFOUND => Error::PageNotFound,
            CORRUPTED => Error::Corrupted,
            PANIC => Error::Panic,
            VERSION_MISMATCH => Error::VersionMismatch,
            INVALID => Error::Invalid,
            MAP_FULL => Error::MapFull,
            DBS_FULL => Error::DbsFull,
            READERS_FULL => Error::ReadersFull,
            TXN_FULL => Error::TxnFull,
            CURSOR_FULL => Error::CursorFull,
            PAGE_FULL => Error::PageFull,
            MAP_RESIZED => Error::MapResized,
            INCOMPATIBLE => Error::Incompatible,
            BAD_RSLOT => Error::BadRslot,
            BAD_TXN => Error::BadTxn,
            BAD_VALSIZE => Error::BadValSize,
            BAD_DBI => Error::BadDbi,
            e => Error::Os(e),
        }
    }

    /// The last OS error (`errno`) as an [`Error`], for code that calls
    /// `libc` itself.
    ///
    /// ```
    /// // close(-1) fails with EBADF.
    /// assert_eq!(unsafe { libc::close(-1) }, -1);
    /// assert_eq!(mdb::Error::last_os(), mdb::Error::Os(libc::EBADF));
    /// ```
    pub fn last_os() -> Error {
        Error::Os(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        )
    }
}

/// The exact text `mdb_strerror` returns for `code` (0.9.31+ for unknown negatives).
///
/// ```
/// use mdb::error::{code, strerror};
/// assert_eq!(strerror(code::NOTFOUND), "MDB_NOTFOUND: No matching key/data pair found");
/// assert_eq!(strerror(libc::ENOENT), "No such file or directory");
/// ```
pub fn strerror(code: i32) -> String {
    let fixed = match code {
        0 => "Successful return: 0",
        code::KEYEXIST => "MDB_KEYEXIST: Key/data pair already exists",
        code::NOTFOUND => "MDB_NOTFOUND: No matching key/data pair found",
        code::PAGE_NOTFOUND => "MDB_PAGE_NOTFOUND: Requested page not found",
        code::CORRUPTED => "MDB_CORRUPTED: Located page was wrong type",
        code::PANIC => "MDB_PANIC: Update of meta page failed or environment had fatal error",
        code::VERSION_MISMATCH => "MDB_VERSION_MISMATCH: Database environment version mismatch",
        code::INVALID => "MDB_INVALID: File is not an LMDB file",
        code::MAP_FULL => "MDB_MAP_FULL: Environment mapsize limit reached",
        code::DBS_FULL => "MDB_DBS_FULL: Environment maxdbs limit reached",
        code::READERS_FULL => "MDB_READERS_FULL: Environment maxreaders limit reached",
        code::TLS_FULL => {
            "MDB_TLS_FULL: Thread-local storage keys full - too many environments open"
        }
        code::TXN_FULL => {
            "MDB_TXN_FULL: Transaction has too many dirty pages - transaction too big"
        }
        code::CURSOR_FULL => "MDB_CURSOR_FULL: Internal error - cursor stack limit reached",
        code::PAGE_FULL => "MDB_PAGE_FULL: Internal error - page has no more space",
        code::MAP_RESIZED => "MDB_MAP_RESIZED: Database contents grew beyond environment mapsize",
        code::INCOMPATIBLE => {
            "MDB_INCOMPATIBLE: Operation and DB incompatible, or DB flags changed"
        }
        code::BAD_RSLOT => "MDB_BAD_RSLOT: Invalid reuse of reader locktable slot",
        code::BAD_TXN => "MDB_BAD_TXN: Transaction must abort, has a child, or is invalid",
        code::BAD_VALSIZE => {
            "MDB_BAD_VALSIZE: Unsupported size of key/DB name/data, or wrong DUPFIXED size"
        }
        code::BAD_DBI => "MDB_BAD_DBI: The specified DBI handle was closed/changed unexpectedly",
        c if c < 0 => "Invalid error code",
        c => return std::io::Error::from_raw_os_error(c).to_string_without_suffix(),
    };
    fixed.to_string()
}

/// `std::io::Error`'s Display appends " (os error N)"; LMDB prints bare strerror.
trait BareStrerror {
    fn to_string_without_suffix(&self) -> String;
}

impl BareStrerror for std::io::Error {
    fn to_string_without_suffix(&self) -> String {
        let s = self.to_string();
        match s.find(" (os error ") {
            Some(i) => s[..i].to_string(),
            None => s,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Misuse(m) => write!(f, "{}: {}", strerror(libc::EINVAL), m.text()),
            e => f.write_str(&strerror(e.code())),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Os(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for c in -30799..=-30780 {
            if c == code::TLS_FULL {
                continue;
            }
            assert_eq!(Error::from_code(c).code(), c);
        }
        assert_eq!(Error::from_code(libc::ENOSPC), Error::Os(libc::ENOSPC));
    }

    #[test]
    fn strerror_texts() {
        assert_eq!(strerror(0), "Successful return: 0");
        assert_eq!(strerror(2), "No such file or directory");
        assert_eq!(strerror(-1), "Invalid error code");
        assert_eq!(
            Error::NotFound.to_string(),
            "MDB_NOTFOUND: No matching key/data pair found"
        );
    }
}
