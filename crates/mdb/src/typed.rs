//! Typed databases: keys and values through codecs, decoded without a
//! copy where the bytes allow it (byte slices, strings), the key order
//! following the encoding.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use mdb::typed::{Str, TypedDb, U64};
//! use mdb::{DbFlags, Env};
//! let env = mdb::EnvOptions::new().max_dbs(1).open(dir.path())?;
//! let mut w = env.write_txn()?;
//! let ages: TypedDb<Str, U64> = TypedDb::create(&mut w, "ages", DbFlags::EMPTY)?;
//! ages.put(&mut w, "ada", &36)?;
//! ages.put(&mut w, "alan", &41)?;
//! ages.put(&mut w, "grace", &85)?;
//! w.commit()?;
//!
//! let r = env.read_txn()?;
//! assert_eq!(ages.get(&r, "alan")?, Some(41));
//! let a: Vec<(&str, u64)> = ages.prefix(&r, "a")?.collect::<mdb::Result<_>>()?;
//! assert_eq!(a, [("ada", 36), ("alan", 41)]);
//! let last = ages.range(&r, "b"..)?.next_back().unwrap()?;
//! assert_eq!(last, ("grace", 85));
//! # Ok::<(), mdb::Error>(())
//! ```

use crate::db::Database;
use crate::entries::Entries;
use crate::error::{DbLabel, ErrorKind, Result};
use crate::snapshot::Snapshot;
use crate::tree::WriteFlags;
use crate::txn::{RwTxn, Txn};
use std::borrow::{Borrow, Cow};
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

/// How a key or value type becomes bytes and back. Implement it for your
/// own key layouts; the encoding's byte order is the key order.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::typed::{Codec, Str, TypedDb};
/// use mdb::{DbFlags, EnvOptions, ErrorKind};
/// use std::borrow::Cow;
///
/// /// Grid cells as 8 big-endian bytes: ordered by row, then column.
/// struct Cell;
/// impl Codec for Cell {
///     type In = (u32, u32);
///     type Out<'a> = (u32, u32);
///     fn encode(&(row, col): &(u32, u32)) -> Cow<'_, [u8]> {
///         Cow::Owned([row.to_be_bytes(), col.to_be_bytes()].concat())
///     }
///     fn decode(b: &[u8]) -> mdb::Result<(u32, u32)> {
///         let b: [u8; 8] = b.try_into().map_err(|_| ErrorKind::Incompatible)?;
///         let half = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
///         Ok((half(0), half(4)))
///     }
/// }
///
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let sheet: TypedDb<Cell, Str> = TypedDb::create(&mut w, "sheet", DbFlags::EMPTY)?;
/// sheet.put(&mut w, &(2, 1), "c")?;
/// sheet.put(&mut w, &(1, 300), "b")?;
/// sheet.put(&mut w, &(1, 2), "a")?;
/// let row1: Vec<_> = sheet.range(&w, (1, 0)..(2, 0))?.collect::<mdb::Result<_>>()?;
/// assert_eq!(row1, [((1, 2), "a"), ((1, 300), "b")]);
/// # Ok::<(), mdb::Error>(())
/// ```
pub trait Codec {
    /// What puts and lookups take.
    type In: ?Sized;
    /// What reads give back, borrowing from the transaction where it can.
    type Out<'a>;
    /// The bytes of `v`.
    ///
    /// ```
    /// use mdb::typed::{Codec, I64, Str, U32};
    /// assert_eq!(&*U32::encode(&258), [0, 0, 1, 2]);
    /// assert_eq!(&*Str::encode("hi"), b"hi"); // borrowed, no copy
    /// assert!(I64::encode(&-1) < I64::encode(&0)); // byte order is numeric order
    /// ```
    fn encode(v: &Self::In) -> Cow<'_, [u8]>;
    /// The value of stored bytes; `Incompatible` if they are not one.
    ///
    /// ```
    /// use mdb::typed::{Codec, Str, U32};
    /// assert_eq!(U32::decode(&[0, 0, 1, 2]), Ok(258));
    /// assert_eq!(U32::decode(&[1, 2]).map_err(|e| e.kind()), Err(mdb::ErrorKind::Incompatible)); // wrong length
    /// assert_eq!(Str::decode(&[0xff]).map_err(|e| e.kind()), Err(mdb::ErrorKind::Incompatible)); // not UTF-8
    /// ```
    fn decode(b: &[u8]) -> Result<Self::Out<'_>>;
}

/// Raw bytes, as stored.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::typed::{Bytes, Str, TypedDb};
/// use mdb::{DbFlags, EnvOptions};
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let blobs: TypedDb<Str, Bytes> = TypedDb::create(&mut w, "blobs", DbFlags::EMPTY)?;
/// blobs.put(&mut w, "logo.png", &[0x89, b'P', b'N', b'G'])?;
/// assert_eq!(blobs.get(&w, "logo.png")?, Some(&[0x89, b'P', b'N', b'G'][..]));
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Bytes;

impl Codec for Bytes {
    type In = [u8];
    type Out<'a> = &'a [u8];
    fn encode(v: &[u8]) -> Cow<'_, [u8]> {
        Cow::Borrowed(v)
    }
    fn decode(b: &[u8]) -> Result<&[u8]> {
        Ok(b)
    }
}

/// UTF-8 strings, ordered byte-wise (so by code point), read without a copy.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::typed::{Str, TypedDb};
/// use mdb::{DbFlags, EnvOptions};
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let words: TypedDb<Str, Str> = TypedDb::create(&mut w, "words", DbFlags::EMPTY)?;
/// for (k, v) in [("b", "beta"), ("Z", "zeta"), ("a", "alpha")] {
///     words.put(&mut w, k, v)?;
/// }
/// let all: Vec<(&str, &str)> = words.iter(&w)?.collect::<mdb::Result<_>>()?;
/// assert_eq!(all, [("Z", "zeta"), ("a", "alpha"), ("b", "beta")]); // upper case first
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Str;

impl Codec for Str {
    type In = str;
    type Out<'a> = &'a str;
    fn encode(v: &str) -> Cow<'_, [u8]> {
        Cow::Borrowed(v.as_bytes())
    }
    fn decode(b: &[u8]) -> Result<&str> {
        std::str::from_utf8(b).map_err(|_| ErrorKind::Incompatible.into())
    }
}

macro_rules! big_endian {
    ($($(#[$doc:meta])* $name:ident $t:ty, $flip:expr;)*) => {$(
        $(#[$doc])*
        pub struct $name;

        impl Codec for $name {
            type In = $t;
            type Out<'a> = $t;
            fn encode(v: &$t) -> Cow<'_, [u8]> {
                Cow::Owned((*v ^ $flip).to_be_bytes().to_vec())
            }
            fn decode(b: &[u8]) -> Result<$t> {
                let a = b.try_into().map_err(|_| ErrorKind::Incompatible)?;
                Ok(<$t>::from_be_bytes(a) ^ $flip)
            }
        }
    )*};
}

big_endian! {
    /// `u32`, big-endian: the byte order is the numeric order.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U32};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let ports: TypedDb<U32, Str> = TypedDb::create(&mut w, "ports", DbFlags::EMPTY)?;
    /// for (port, name) in [(443, "https"), (22, "ssh"), (8080, "http-alt")] {
    ///     ports.put(&mut w, &port, name)?;
    /// }
    /// let low: Vec<(u32, &str)> = ports.range(&w, ..1024)?.collect::<mdb::Result<_>>()?;
    /// assert_eq!(low, [(22, "ssh"), (443, "https")]); // numeric order
    /// # Ok::<(), mdb::Error>(())
    /// ```
    U32 u32, 0;
    /// `u64`, big-endian: the byte order is the numeric order.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U64};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let events: TypedDb<U64, Str> = TypedDb::create(&mut w, "events", DbFlags::EMPTY)?;
    /// events.put(&mut w, &1_700_000_300, "stop")?;
    /// events.put(&mut w, &1_700_000_000, "start")?;
    /// let newest = events.iter(&w)?.next_back().unwrap()?;
    /// assert_eq!(newest, (1_700_000_300, "stop"));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    U64 u64, 0;
    /// `i64`, big-endian with the sign bit flipped: negative numbers first.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{I64, Str, TypedDb};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let temps: TypedDb<I64, Str> = TypedDb::create(&mut w, "temps", DbFlags::EMPTY)?;
    /// for (t, what) in [(5, "cool"), (-40, "frozen"), (0, "freezing")] {
    ///     temps.put(&mut w, &t, what)?;
    /// }
    /// let all: Vec<(i64, &str)> = temps.iter(&w)?.collect::<mdb::Result<_>>()?;
    /// assert_eq!(all, [(-40, "frozen"), (0, "freezing"), (5, "cool")]);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    I64 i64, i64::MIN;
}

/// Any serde type, as JSON (ordered by its JSON text, which rarely means
/// anything for keys: use it for values).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::typed::{Json, Str, TypedDb};
/// use mdb::{DbFlags, EnvOptions};
/// #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct User {
///     name: String,
///     admin: bool,
/// }
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let users: TypedDb<Str, Json<User>> = TypedDb::create(&mut w, "users", DbFlags::EMPTY)?;
/// users.put(&mut w, "ada", &User { name: "Ada".into(), admin: true })?;
/// assert_eq!(users.get(&w, "ada")?, Some(User { name: "Ada".into(), admin: true }));
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct Json<T>(PhantomData<T>);

impl<T: serde::Serialize + serde::de::DeserializeOwned> Codec for Json<T> {
    type In = T;
    type Out<'a> = T;
    fn encode(v: &T) -> Cow<'_, [u8]> {
        Cow::Owned(serde_json::to_vec(v).expect("a serde value serialises to JSON"))
    }
    fn decode(b: &[u8]) -> Result<T> {
        serde_json::from_slice(b).map_err(|_| ErrorKind::Incompatible.into())
    }
}

/// A database whose keys and values go through codecs `K` and `V`. The
/// handle is the untyped [`Database`] underneath ([`TypedDb::database`]).
/// `Copy`, like [`Database`]: keep it beside the `Env`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::typed::{Str, TypedDb, U64};
/// use mdb::{DbFlags, EnvOptions};
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let hits: TypedDb<Str, U64> = TypedDb::create(&mut w, "hits", DbFlags::EMPTY)?;
/// for page in ["/", "/about", "/"] {
///     let n = hits.get(&w, page)?.unwrap_or(0);
///     hits.put(&mut w, page, &(n + 1))?;
/// }
/// w.commit()?;
/// assert_eq!(hits.get(&env.read_txn()?, "/")?, Some(2));
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct TypedDb<K, V> {
    db: Database,
    _codecs: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for TypedDb<K, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K, V> Copy for TypedDb<K, V> {}

/// The items of a typed database, decoded, from either end
/// ([`TypedDb::iter`], [`TypedDb::range`], [`TypedDb::prefix`]).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::typed::{Str, TypedDb, U32};
/// use mdb::{DbFlags, EnvOptions};
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let scores: TypedDb<U32, Str> = TypedDb::create(&mut w, "scores", DbFlags::EMPTY)?;
/// for (s, who) in [(70, "ann"), (95, "bob"), (88, "cy")] {
///     scores.put(&mut w, &s, who)?;
/// }
/// let top2: Vec<(u32, &str)> = scores.iter(&w)?.rev().take(2).collect::<mdb::Result<_>>()?;
/// assert_eq!(top2, [(95, "bob"), (88, "cy")]);
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct TypedEntries<'t, T: Snapshot, K, V> {
    inner: Entries<'t, T>,
    _codecs: PhantomData<fn() -> (K, V)>,
}

/// Keys with their decoded values as nested iterators (see
/// [`TypedDb::groups`]).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::typed::{Str, TypedDb};
/// use mdb::{DbFlags, EnvOptions};
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let tags: TypedDb<Str, Str> = TypedDb::create(&mut w, "tags", DbFlags::DUP_SORT)?;
/// for (post, tag) in [("p1", "rust"), ("p2", "db"), ("p1", "db")] {
///     tags.put(&mut w, post, tag)?;
/// }
/// let counts: Vec<(&str, usize)> = tags
///     .groups(&w)?
///     .map(|g| g.map(|(post, tags)| (post, tags.count())))
///     .collect::<mdb::Result<_>>()?;
/// assert_eq!(counts, [("p1", 2), ("p2", 1)]);
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct TypedGroups<'t, T: Snapshot, K, V> {
    inner: crate::entries::Groups<'t, T>,
    _codecs: PhantomData<fn() -> (K, V)>,
}

/// The decoded values of one key, from either end.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::typed::{Str, TypedDb, U32};
/// use mdb::{DbFlags, EnvOptions};
/// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
/// let mut w = env.write_txn()?;
/// let visits: TypedDb<Str, U32> = TypedDb::create(&mut w, "visits", DbFlags::DUP_SORT)?;
/// for day in [3, 1, 2] {
///     visits.put(&mut w, "ada", &day)?;
/// }
/// let (_, mut days) = visits.groups(&w)?.next().unwrap()?;
/// assert_eq!(days.next_back().transpose()?, Some(3)); // the last value
/// assert_eq!(days.next().transpose()?, Some(1));
/// # Ok::<(), mdb::Error>(())
/// ```
pub struct TypedValues<'t, T: Snapshot, V> {
    inner: crate::entries::Values<'t, T>,
    _codec: PhantomData<fn() -> V>,
}

impl<'t, T: Snapshot, K: Codec, V: Codec> Iterator for TypedGroups<'t, T, K, V> {
    type Item = Result<(K::Out<'t>, TypedValues<'t, T, V>)>;
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|r| {
            let (k, vals) = r?;
            Ok((
                key_of::<K>(k)?,
                TypedValues {
                    inner: vals,
                    _codec: PhantomData,
                },
            ))
        })
    }
}

impl<'t, T: Snapshot, V: Codec> Iterator for TypedValues<'t, T, V> {
    type Item = Result<V::Out<'t>>;
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|r| value_of::<V>(r?))
    }
}

impl<'t, T: Snapshot, V: Codec> DoubleEndedIterator for TypedValues<'t, T, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|r| value_of::<V>(r?))
    }
}

type Pair<'t, K, V> = (<K as Codec>::Out<'t>, <V as Codec>::Out<'t>);

fn decode_pair<'t, K: Codec, V: Codec>(r: Result<crate::tree::Item<'t>>) -> Result<Pair<'t, K, V>> {
    let (k, v) = r?;
    Ok((key_of::<K>(k)?, value_of::<V>(v)?))
}

/// `K::decode`, an error saying that a stored key did not decode.
fn key_of<K: Codec>(b: &[u8]) -> Result<K::Out<'_>> {
    K::decode(b).map_err(|e| e.during("decode key", || DbLabel::None, Some(b.len()), None))
}

/// `V::decode`, an error saying that a stored value did not decode.
fn value_of<V: Codec>(b: &[u8]) -> Result<V::Out<'_>> {
    V::decode(b).map_err(|e| e.during("decode value", || DbLabel::None, None, Some(b.len())))
}

impl<'t, T: Snapshot, K: Codec, V: Codec> Iterator for TypedEntries<'t, T, K, V> {
    type Item = Result<Pair<'t, K, V>>;
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(decode_pair::<K, V>)
    }
}

impl<'t, T: Snapshot, K: Codec, V: Codec> DoubleEndedIterator for TypedEntries<'t, T, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(decode_pair::<K, V>)
    }
}

impl<K: Codec, V: Codec> TypedDb<K, V> {
    /// A typed view of `db`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb};
    /// use mdb::{Database, Env};
    /// let env = Env::open(dir.path())?;
    /// let main: TypedDb<Str, Str> = TypedDb::new(Database::MAIN);
    /// let mut w = env.write_txn()?;
    /// main.put(&mut w, "greeting", "hello")?;
    /// assert_eq!(main.get(&w, "greeting")?, Some("hello"));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn new(db: Database) -> Self {
        TypedDb {
            db,
            _codecs: PhantomData,
        }
    }

    /// Open (creating it with `flags` if absent) the named database `name`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U64};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let ages: TypedDb<Str, U64> = TypedDb::create(&mut w, "ages", DbFlags::EMPTY)?;
    /// ages.put(&mut w, "ada", &36)?;
    /// w.commit()?;
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn create(w: &mut RwTxn<'_>, name: &str, flags: crate::DbFlags) -> Result<Self> {
        Ok(Self::new(w.create_db(name, flags)?))
    }

    /// Open the existing named database `name`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U64};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// TypedDb::<Str, U64>::create(&mut w, "ages", DbFlags::EMPTY)?.put(&mut w, "ada", &36)?;
    /// w.commit()?;
    /// let r = env.read_txn()?;
    /// let ages: TypedDb<Str, U64> = TypedDb::open(&r, "ages")?;
    /// assert_eq!(ages.get(&r, "ada")?, Some(36));
    /// assert!(TypedDb::<Str, U64>::open(&r, "none").is_err());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn open<T: Txn>(txn: &T, name: &str) -> Result<Self> {
        Ok(Self::new(txn.open_db(name)?))
    }

    /// The untyped handle.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U64};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// use mdb::Txn;
    /// let ages: TypedDb<Str, U64> = TypedDb::create(&mut w, "ages", DbFlags::EMPTY)?;
    /// ages.put(&mut w, "ada", &36)?;
    /// let raw = w.get(ages.database(), b"ada")?; // the encoded bytes
    /// assert_eq!(raw, Some(&36u64.to_be_bytes()[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn database(&self) -> Database {
        self.db
    }

    /// The value of `key` (the first one, for DUPSORT).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U64};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let ages: TypedDb<Str, U64> = TypedDb::create(&mut w, "ages", DbFlags::EMPTY)?;
    /// ages.put(&mut w, "ada", &36)?;
    /// assert_eq!(ages.get(&w, "ada")?, Some(36));
    /// assert_eq!(ages.get(&w, "bob")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn get<'t, T: Txn>(&self, txn: &'t T, key: &K::In) -> Result<Option<V::Out<'t>>> {
        match txn.get(self.db, &K::encode(key))? {
            Some(b) => V::decode(b).map(Some).map_err(|e| {
                txn.env()
                    .failed(e, "decode value", self.db, None, Some(b.len()))
            }),
            None => Ok(None),
        }
    }

    /// Store `val` under `key` (replacing it; for DUPSORT, adding it).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U64};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let ages: TypedDb<Str, U64> = TypedDb::create(&mut w, "ages", DbFlags::EMPTY)?;
    /// ages.put(&mut w, "ada", &36)?;
    /// ages.put(&mut w, "ada", &37)?; // replaces
    /// assert_eq!(ages.get(&w, "ada")?, Some(37));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn put(&self, w: &mut RwTxn<'_>, key: &K::In, val: &V::In) -> Result<()> {
        w.put(self.db, &K::encode(key), &V::encode(val), WriteFlags::EMPTY)
    }

    /// Delete `key` (every value of it); whether it was there.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U64};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let ages: TypedDb<Str, U64> = TypedDb::create(&mut w, "ages", DbFlags::EMPTY)?;
    /// ages.put(&mut w, "ada", &36)?;
    /// assert!(ages.delete(&mut w, "ada")?);
    /// assert!(!ages.delete(&mut w, "ada")?);
    /// assert_eq!(ages.get(&w, "ada")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn delete(&self, w: &mut RwTxn<'_>, key: &K::In) -> Result<bool> {
        w.del(self.db, &K::encode(key))
    }

    /// Every item, in key order, from either end.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U64};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let ages: TypedDb<Str, U64> = TypedDb::create(&mut w, "ages", DbFlags::EMPTY)?;
    /// ages.put(&mut w, "bob", &41)?;
    /// ages.put(&mut w, "ada", &36)?;
    /// let all: Vec<(&str, u64)> = ages.iter(&w)?.collect::<mdb::Result<_>>()?;
    /// assert_eq!(all, [("ada", 36), ("bob", 41)]);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn iter<'t, T: Txn>(&self, txn: &'t T) -> Result<TypedEntries<'t, T, K, V>> {
        self.wrap(txn.range(self.db, ..)?)
    }

    /// The items whose keys lie in `range` (`"a".."m"`, `10..=20`...),
    /// from either end: `.rev()` gives them in descending order.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U64};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let sizes: TypedDb<U64, Str> = TypedDb::create(&mut w, "sizes", DbFlags::EMPTY)?;
    /// for (n, name) in [(10, "a"), (20, "b"), (30, "c"), (40, "d")] {
    ///     sizes.put(&mut w, &n, name)?;
    /// }
    /// let mid: Vec<(u64, &str)> = sizes.range(&w, 20..=30)?.collect::<mdb::Result<_>>()?;
    /// assert_eq!(mid, [(20, "b"), (30, "c")]);
    /// let desc: Vec<(u64, &str)> = sizes.range(&w, 25..)?.rev().collect::<mdb::Result<_>>()?;
    /// assert_eq!(desc, [(40, "d"), (30, "c")]);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn range<'t, T: Txn, B: Borrow<K::In>, R: RangeBounds<B>>(
        &self,
        txn: &'t T,
        range: R,
    ) -> Result<TypedEntries<'t, T, K, V>> {
        let enc = |b: Bound<&B>| b.map(|k| K::encode(k.borrow()).into_owned());
        let (lo, hi) = (enc(range.start_bound()), enc(range.end_bound()));
        let bounds = (
            lo.as_ref().map(Vec::as_slice),
            hi.as_ref().map(Vec::as_slice),
        );
        self.wrap(txn.range(self.db, bounds)?)
    }

    /// The items whose encoded keys start with the encoding of `prefix`
    /// (for [`Str`] and [`Bytes`] keys, the usual prefix).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U64};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let files: TypedDb<Str, U64> = TypedDb::create(&mut w, "files", DbFlags::EMPTY)?;
    /// for (path, size) in [("src/lib.rs", 10), ("src/main.rs", 20), ("README", 5)] {
    ///     files.put(&mut w, path, &size)?;
    /// }
    /// let mut total = 0;
    /// for item in files.prefix(&w, "src/")? {
    ///     let (_path, size) = item?;
    ///     total += size;
    /// }
    /// assert_eq!(total, 30);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn prefix<'t, T: Txn>(
        &self,
        txn: &'t T,
        prefix: &K::In,
    ) -> Result<TypedEntries<'t, T, K, V>> {
        self.wrap(txn.prefix(self.db, &K::encode(prefix))?)
    }

    /// Every key with its values decoded, as a nested iterator per key
    /// (the duplicates of a DUPSORT database).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::typed::{Str, TypedDb, U32};
    /// use mdb::{DbFlags, EnvOptions};
    /// let env = EnvOptions::new().max_dbs(1).open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// let by_city: TypedDb<Str, U32> = TypedDb::create(&mut w, "by_city", DbFlags::DUP_SORT)?;
    /// for (city, id) in [("oslo", 3), ("lima", 1), ("oslo", 2)] {
    ///     by_city.put(&mut w, city, &id)?;
    /// }
    /// let mut out = Vec::new();
    /// for g in by_city.groups(&w)? {
    ///     let (city, ids) = g?;
    ///     out.push((city, ids.collect::<mdb::Result<Vec<u32>>>()?));
    /// }
    /// assert_eq!(out, [("lima", vec![1]), ("oslo", vec![2, 3])]);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn groups<'t, T: Txn>(&self, txn: &'t T) -> Result<TypedGroups<'t, T, K, V>> {
        Ok(TypedGroups {
            inner: txn.groups(self.db)?,
            _codecs: PhantomData,
        })
    }

    fn wrap<'t, T: Txn>(&self, inner: Entries<'t, T>) -> Result<TypedEntries<'t, T, K, V>> {
        Ok(TypedEntries {
            inner,
            _codecs: PhantomData,
        })
    }
}
