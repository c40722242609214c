//! The one error type of the engine, carrying LMDB's return codes.
//!
//! Every failure maps to an LMDB 0.9 code (`MDB_NOTFOUND`, `MDB_MAP_FULL`...)
//! or to an OS `errno`, so the C ABI can hand back exactly what LMDB would.
//! [`Error`] is that [`ErrorKind`] plus, for a failed record or database
//! operation, what was being done (operation, database, key and value
//! sizes), for Rust callers and their logs.

use std::fmt;

/// LMDB's numeric return codes (lmdb.h), kept so the C ABI and tools can print them.
///
/// ```
/// use mdb::error::code;
/// assert_eq!(mdb::ErrorKind::NotFound.code(), code::NOTFOUND);
/// assert_eq!(mdb::ErrorKind::from_code(code::MAP_FULL), mdb::ErrorKind::MapFull);
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

/// What failed: an LMDB code, an OS error number or a misuse of the API.
///
/// [`Error::kind`] gives it; match on it to tell expected outcomes (a key
/// already there) from failures. It prints as `mdb_strerror` does.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, ErrorKind, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
/// match w.put(Database::MAIN, b"k", b"w", WriteFlags::NO_OVERWRITE) {
///     Err(e) if e.kind() == ErrorKind::KeyExist => {} // kept the old value
///     other => panic!("{other:?}"),
/// }
/// assert_eq!(ErrorKind::KeyExist.to_string(), "MDB_KEYEXIST: Key/data pair already exists");
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
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
    /// as `EINVAL` (its [`ErrorKind::code`]), saying which.
    Misuse(Misuse),
}

/// An engine error: what failed ([`Error::kind`], an LMDB code for the C
/// ABI) and, for failures of a record or database operation, what was
/// being done: the operation, the database and the sizes of the key and
/// value ([`Error::operation`], [`Error::database`], [`Error::key_len`],
/// [`Error::value_len`]).
///
/// The two outcomes a caller tests for in loops, [`ErrorKind::KeyExist`]
/// and [`ErrorKind::NotFound`], carry no context: they cost no allocation.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{DbFlags, EnvOptions, ErrorKind, WriteFlags};
/// let env = EnvOptions::new().max_dbs(2).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let users = w.create_db("users", DbFlags::EMPTY)?;
/// let e = w.put(users, &[7; 600], b"v", WriteFlags::EMPTY).unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::BadValSize);
/// assert_eq!(e.operation(), Some("put"));
/// assert_eq!(e.database(), Some(&b"users"[..]));
/// assert_eq!(e.key_len(), Some(600));
/// assert_eq!(
///     e.to_string(),
///     "MDB_BAD_VALSIZE: Unsupported size of key/DB name/data, or wrong DUPFIXED size \
///      (put into database \"users\", key of 600 bytes, value of 1 byte)"
/// );
/// assert_eq!(e.code(), mdb::error::code::BAD_VALSIZE); // what the C ABI returns
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Error {
    kind: ErrorKind,
    // Boxed: the common errors stay two words, and only failures pay.
    context: Option<Box<Context>>,
}

/// What an operation that failed was doing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Context {
    op: &'static str,
    db: DbLabel,
    key_len: Option<usize>,
    value_len: Option<usize>,
    /// What exactly is wrong, where the kind alone does not say (which
    /// log segment is missing...).
    detail: Option<Box<str>>,
}

/// The database an operation named, as the error reports it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum DbLabel {
    /// No database (an environment or transaction operation).
    None,
    /// The unnamed main database.
    Main,
    /// The free-page database.
    Free,
    /// A named database.
    Named(Vec<u8>),
    /// A handle that names no open database.
    Handle(u32),
}

/// The misuses [`ErrorKind::Misuse`] names.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{Database, Env, ErrorKind, Misuse, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let e = w.put(Database::FREE, b"k", b"v", WriteFlags::EMPTY).unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::Misuse(Misuse::FreeDbWrite));
/// assert_eq!(e.code(), libc::EINVAL); // what LMDB returns
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

impl ErrorKind {
    /// The numeric code LMDB would return for this error.
    ///
    /// ```
    /// use mdb::ErrorKind;
    /// assert_eq!(ErrorKind::NotFound.code(), -30798); // MDB_NOTFOUND
    /// assert_eq!(ErrorKind::Os(libc::ENOSPC).code(), libc::ENOSPC);
    /// ```
    pub fn code(self) -> i32 {
        use code::*;
        match self {
            ErrorKind::KeyExist => KEYEXIST,
            ErrorKind::NotFound => NOTFOUND,
            ErrorKind::PageNotFound => PAGE_NOTFOUND,
            ErrorKind::Corrupted => CORRUPTED,
            ErrorKind::Panic => PANIC,
            ErrorKind::VersionMismatch => VERSION_MISMATCH,
            ErrorKind::Invalid => INVALID,
            ErrorKind::MapFull => MAP_FULL,
            ErrorKind::DbsFull => DBS_FULL,
            ErrorKind::ReadersFull => READERS_FULL,
            ErrorKind::TxnFull => TXN_FULL,
            ErrorKind::CursorFull => CURSOR_FULL,
            ErrorKind::PageFull => PAGE_FULL,
            ErrorKind::MapResized => MAP_RESIZED,
            ErrorKind::Incompatible => INCOMPATIBLE,
            ErrorKind::BadRslot => BAD_RSLOT,
            ErrorKind::BadTxn => BAD_TXN,
            ErrorKind::BadValSize => BAD_VALSIZE,
            ErrorKind::BadDbi => BAD_DBI,
            ErrorKind::Os(e) => e,
            ErrorKind::Misuse(_) => libc::EINVAL,
        }
    }

    /// Whether a write that failed with this kind left its transaction as
    /// it was, still usable: a missing or existing key, a bad size or
    /// argument, an incompatible database, misuse of the API. Any other
    /// failure may have stopped halfway through its change, and the
    /// transaction can then only abort.
    ///
    /// ```
    /// use mdb::ErrorKind;
    /// assert!(ErrorKind::KeyExist.leaves_txn_usable());
    /// assert!(!ErrorKind::MapFull.leaves_txn_usable());
    /// ```
    pub fn leaves_txn_usable(self) -> bool {
        matches!(
            self,
            ErrorKind::KeyExist
                | ErrorKind::NotFound
                | ErrorKind::BadValSize
                | ErrorKind::Incompatible
                | ErrorKind::Os(libc::EINVAL)
                | ErrorKind::Misuse(_)
        )
    }

    /// Build an error from an LMDB code or errno (inverse of [`ErrorKind::code`]).
    ///
    /// ```
    /// use mdb::ErrorKind;
    /// assert_eq!(ErrorKind::from_code(-30799), ErrorKind::KeyExist);
    /// assert_eq!(ErrorKind::from_code(libc::EACCES), ErrorKind::Os(libc::EACCES));
    /// ```
    pub fn from_code(c: i32) -> ErrorKind {
        use code::*;
        match c {
            KEYEXIST => ErrorKind::KeyExist,
            NOTFOUND => ErrorKind::NotFound,
            PAGE_NOTFOUND => ErrorKind::PageNotFound,
            CORRUPTED => ErrorKind::Corrupted,
            PANIC => ErrorKind::Panic,
            VERSION_MISMATCH => ErrorKind::VersionMismatch,
            INVALID => ErrorKind::Invalid,
            MAP_FULL => ErrorKind::MapFull,
            DBS_FULL => ErrorKind::DbsFull,
            READERS_FULL => ErrorKind::ReadersFull,
            TXN_FULL => ErrorKind::TxnFull,
            CURSOR_FULL => ErrorKind::CursorFull,
            PAGE_FULL => ErrorKind::PageFull,
            MAP_RESIZED => ErrorKind::MapResized,
            INCOMPATIBLE => ErrorKind::Incompatible,
            BAD_RSLOT => ErrorKind::BadRslot,
            BAD_TXN => ErrorKind::BadTxn,
            BAD_VALSIZE => ErrorKind::BadValSize,
            BAD_DBI => ErrorKind::BadDbi,
            e => ErrorKind::Os(e),
        }
    }

    /// The last OS error (`errno`) as an [`ErrorKind`], for code that calls
    /// `libc` itself.
    ///
    /// ```
    /// // close(-1) fails with EBADF.
    /// assert_eq!(unsafe { libc::close(-1) }, -1);
    /// assert_eq!(mdb::ErrorKind::last_os(), mdb::ErrorKind::Os(libc::EBADF));
    /// ```
    pub fn last_os() -> ErrorKind {
        ErrorKind::Os(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        )
    }
}

impl Error {
    /// What failed.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, ErrorKind, Misuse, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let e = w.put(Database::FREE, b"k", b"v", WriteFlags::EMPTY).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::Misuse(Misuse::FreeDbWrite));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    #[inline]
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The numeric code LMDB would return for this error (the C ABI's).
    ///
    /// ```
    /// use mdb::{Error, ErrorKind};
    /// assert_eq!(Error::from(ErrorKind::NotFound).code(), -30798); // MDB_NOTFOUND
    /// ```
    pub fn code(&self) -> i32 {
        self.kind.code()
    }

    /// Build an error from an LMDB code or errno (inverse of [`Error::code`]).
    ///
    /// ```
    /// use mdb::{Error, ErrorKind};
    /// assert_eq!(Error::from_code(-30799).kind(), ErrorKind::KeyExist);
    /// ```
    pub fn from_code(c: i32) -> Error {
        ErrorKind::from_code(c).into()
    }

    /// The last OS error (`errno`), for code that calls `libc` itself.
    ///
    /// ```
    /// // close(-1) fails with EBADF.
    /// assert_eq!(unsafe { libc::close(-1) }, -1);
    /// assert_eq!(mdb::Error::last_os().kind(), mdb::ErrorKind::Os(libc::EBADF));
    /// ```
    pub fn last_os() -> Error {
        ErrorKind::last_os().into()
    }

    /// The operation that failed (`"put"`, `"get"`, `"del"`, `"commit"`,
    /// `"open database"`...), when the error came from one that records it.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, ErrorKind, Misuse, Txn};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db("new", DbFlags::EMPTY)?;
    /// let r = env.read_txn()?;
    /// let e = r.get(db, b"k").unwrap_err(); // the handle is not committed yet
    /// assert_eq!(e.kind(), ErrorKind::Misuse(Misuse::UncommittedHandle));
    /// assert_eq!(e.operation(), Some("get"));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn operation(&self) -> Option<&'static str> {
        self.context.as_ref().map(|c| c.op)
    }

    /// The name of the named database the failed operation used (`None`
    /// for the main database, or when no database was involved).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, Txn};
    /// let env = EnvOptions::new().max_dbs(2).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db("ids", DbFlags::EMPTY)?;
    /// let e = w.del(db, b"").unwrap_err(); // empty key
    /// assert_eq!(e.database(), Some(&b"ids"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn database(&self) -> Option<&[u8]> {
        match self.context.as_deref().map(|c| &c.db) {
            Some(DbLabel::Named(n)) => Some(n),
            _ => None,
        }
    }

    /// The length of the key the failed operation was given.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Database, Env, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let e = w.put(Database::MAIN, &[0; 512], b"v", WriteFlags::EMPTY).unwrap_err();
    /// assert_eq!(e.key_len(), Some(512));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn key_len(&self) -> Option<usize> {
        self.context.as_ref().and_then(|c| c.key_len)
    }

    /// The length of the value the failed operation was given.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{DbFlags, EnvOptions, WriteFlags};
    /// let env = EnvOptions::new().max_dbs(2).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let tags = w.create_db("tags", DbFlags::DUP_SORT)?;
    /// let e = w.put(tags, b"k", &[0; 600], WriteFlags::EMPTY).unwrap_err();
    /// assert_eq!(e.value_len(), Some(600)); // too long for a sorted duplicate
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn value_len(&self) -> Option<usize> {
        self.context.as_ref().and_then(|c| c.value_len)
    }

    /// What exactly is wrong, where the kind alone does not say: for a
    /// write-ahead log that lost records, which segment and which
    /// transactions. It is part of what the error prints.
    pub fn detail(&self) -> Option<&str> {
        self.context.as_ref().and_then(|c| c.detail.as_deref())
    }

    /// This error, saying what exactly is wrong ([`Error::detail`]).
    #[cold]
    pub(crate) fn with_detail(mut self, text: impl Into<String>) -> Error {
        let detail = Some(text.into().into_boxed_str());
        match &mut self.context {
            Some(c) => c.detail = detail,
            None => {
                self.context = Some(Box::new(Context {
                    op: "",
                    db: DbLabel::None,
                    key_len: None,
                    value_len: None,
                    detail,
                }))
            }
        }
        self
    }

    /// [`Error::during`] for an operation on no database and without a
    /// key or value (opening, beginning, committing).
    #[cold]
    pub(crate) fn during_op(self, op: &'static str) -> Error {
        self.during(op, || DbLabel::None, None, None)
    }

    /// Record what the failing operation was doing, unless the error is an
    /// expected outcome (`KeyExist`, `NotFound`). An operation the caller
    /// called replaces what one it called in turn recorded (a cursor put
    /// that failed in a put is reported as the cursor put).
    #[cold]
    pub(crate) fn during(
        mut self,
        op: &'static str,
        db: impl FnOnce() -> DbLabel,
        key_len: Option<usize>,
        value_len: Option<usize>,
    ) -> Error {
        if !matches!(self.kind, ErrorKind::KeyExist | ErrorKind::NotFound) {
            let detail = self.context.take().and_then(|c| c.detail);
            self.context = Some(Box::new(Context {
                op,
                db: db(),
                key_len,
                value_len,
                detail,
            }));
        }
        self
    }
}

impl From<ErrorKind> for Error {
    #[inline]
    fn from(kind: ErrorKind) -> Error {
        Error {
            kind,
            context: None,
        }
    }
}

impl From<Misuse> for Error {
    fn from(m: Misuse) -> Error {
        ErrorKind::Misuse(m).into()
    }
}

/// An error compares equal to its kind, whatever its context:
/// `assert_eq!(e, ErrorKind::NotFound)`.
impl PartialEq<ErrorKind> for Error {
    fn eq(&self, k: &ErrorKind) -> bool {
        self.kind == *k
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

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Misuse(m) => write!(f, "{}: {}", strerror(libc::EINVAL), m.text()),
            e => f.write_str(&strerror(e.code())),
        }
    }
}

/// The kind's text, then what was being done: `MDB_MAP_FULL: ... (put into
/// database "users", key of 16 bytes, value of 100 bytes)`.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        let Some(c) = &self.context else {
            return Ok(());
        };
        let prep = if c.op.starts_with("put") {
            "into"
        } else {
            "on"
        };
        write!(f, " ({}", c.op)?;
        if let Some(d) = &c.detail {
            let sep = if c.op.is_empty() { "" } else { ": " };
            write!(f, "{sep}{d}")?;
        }
        match &c.db {
            DbLabel::None => {}
            DbLabel::Main => write!(f, " {prep} the main database")?,
            DbLabel::Free => write!(f, " {prep} the free-page database")?,
            DbLabel::Named(n) => write!(f, " {prep} database {:?}", String::from_utf8_lossy(n))?,
            DbLabel::Handle(h) => write!(f, " {prep} database handle {h}")?,
        }
        let bytes = |n: usize| if n == 1 { "byte" } else { "bytes" };
        if let Some(k) = c.key_len {
            write!(f, ", key of {k} {}", bytes(k))?;
        }
        if let Some(v) = c.value_len {
            write!(f, ", value of {v} {}", bytes(v))?;
        }
        f.write_str(")")
    }
}

/// `Error { kind: BadValSize, op: "put", db: "users", key_len: 600, value_len: 1 }`:
/// what `unwrap` prints, with the database name as text.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind);
        if let Some(c) = &self.context {
            d.field("op", &c.op);
            match &c.db {
                DbLabel::None => {}
                DbLabel::Main => _ = d.field("db", &"(main)"),
                DbLabel::Free => _ = d.field("db", &"(free pages)"),
                DbLabel::Named(n) => _ = d.field("db", &String::from_utf8_lossy(n)),
                DbLabel::Handle(h) => _ = d.field("db_handle", h),
            }
            if let Some(k) = c.key_len {
                d.field("key_len", &k);
            }
            if let Some(v) = c.value_len {
                d.field("value_len", &v);
            }
            if let Some(t) = &c.detail {
                d.field("detail", t);
            }
        }
        d.finish()
    }
}

impl std::error::Error for Error {}

/// For `?` in code that returns `std::io::Result`: a bare OS error keeps
/// its errno, one with context its I/O kind and our text; anything else
/// becomes an `Other` I/O error that wraps ours.
///
/// ```
/// use mdb::{Error, ErrorKind};
/// let io = std::io::Error::from(Error::from(ErrorKind::Os(libc::ENOSPC)));
/// assert_eq!(io.raw_os_error(), Some(libc::ENOSPC));
/// let io = std::io::Error::from(Error::from(ErrorKind::MapFull));
/// assert_eq!(io.kind(), std::io::ErrorKind::Other);
/// assert!(io.to_string().starts_with("MDB_MAP_FULL"));
/// ```
impl From<Error> for std::io::Error {
    fn from(e: Error) -> std::io::Error {
        match e.kind {
            ErrorKind::Os(errno) if e.context.is_none() => std::io::Error::from_raw_os_error(errno),
            ErrorKind::Os(errno) => {
                std::io::Error::new(std::io::Error::from_raw_os_error(errno).kind(), e)
            }
            _ => std::io::Error::other(e),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        ErrorKind::Os(e.raw_os_error().unwrap_or(libc::EIO)).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_names_the_outermost_operation_never_an_outcome() {
        let label = || DbLabel::Named(b"users".to_vec());
        let e = Error::from(ErrorKind::MapFull).during("put", label, Some(16), Some(100));
        let outer = e
            .clone()
            .during("cursor put", || DbLabel::Main, Some(2), None);
        assert_eq!(
            outer.operation(),
            Some("cursor put"),
            "the outermost one wins"
        );
        assert_eq!((outer.database(), outer.value_len()), (None, None));
        assert_eq!(
            e.to_string(),
            "MDB_MAP_FULL: Environment mapsize limit reached \
             (put into database \"users\", key of 16 bytes, value of 100 bytes)"
        );
        let main = Error::from(ErrorKind::BadTxn).during("del", || DbLabel::Main, Some(1), None);
        assert!(main
            .to_string()
            .ends_with("(del on the main database, key of 1 byte)"));
        assert_eq!(main.database(), None);
        assert_eq!(
            format!("{e:?}"),
            r#"Error { kind: MapFull, op: "put", db: "users", key_len: 16, value_len: 100 }"#
        );
        assert_eq!(
            format!("{:?}", Error::from(ErrorKind::NotFound)),
            "Error { kind: NotFound }"
        );
        for k in [ErrorKind::KeyExist, ErrorKind::NotFound] {
            let e = Error::from(k).during("put", label, Some(1), Some(1));
            assert_eq!(e.operation(), None);
            assert_eq!(e.to_string(), k.to_string());
        }
    }

    #[test]
    fn codes_round_trip() {
        for c in -30799..=-30780 {
            if c == code::TLS_FULL {
                continue;
            }
            assert_eq!(Error::from_code(c).code(), c);
        }
        assert_eq!(Error::from_code(libc::ENOSPC), ErrorKind::Os(libc::ENOSPC));
    }

    #[test]
    fn strerror_texts() {
        assert_eq!(strerror(0), "Successful return: 0");
        assert_eq!(strerror(2), "No such file or directory");
        assert_eq!(strerror(-1), "Invalid error code");
        assert_eq!(
            Error::from(ErrorKind::NotFound).to_string(),
            "MDB_NOTFOUND: No matching key/data pair found"
        );
    }
}
