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
use crate::error::{Error, Result};
use crate::snapshot::Snapshot;
use crate::tree::WriteFlags;
use crate::txn::{RwTxn, Txn};
use std::borrow::{Borrow, Cow};
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

/// How a key or value type becomes bytes and back.
pub trait Codec {
    /// What puts and lookups take.
    type In: ?Sized;
    /// What reads give back, borrowing from the transaction where it can.
    type Out<'a>;
    /// The bytes of `v`.
    fn encode(v: &Self::In) -> Cow<'_, [u8]>;
    /// The value of stored bytes; `Incompatible` if they are not one.
    fn decode(b: &[u8]) -> Result<Self::Out<'_>>;
}

/// Raw bytes, as stored.
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
pub struct Str;

impl Codec for Str {
    type In = str;
    type Out<'a> = &'a str;
    fn encode(v: &str) -> Cow<'_, [u8]> {
        Cow::Borrowed(v.as_bytes())
    }
    fn decode(b: &[u8]) -> Result<&str> {
        std::str::from_utf8(b).map_err(|_| Error::Incompatible)
    }
}

macro_rules! big_endian {
    ($(#[$doc:meta] $name:ident $t:ty, $flip:expr;)*) => {$(
        #[$doc]
        pub struct $name;

        impl Codec for $name {
            type In = $t;
            type Out<'a> = $t;
            fn encode(v: &$t) -> Cow<'_, [u8]> {
                Cow::Owned((*v ^ $flip).to_be_bytes().to_vec())
            }
            fn decode(b: &[u8]) -> Result<$t> {
                let a = b.try_into().map_err(|_| Error::Incompatible)?;
                Ok(<$t>::from_be_bytes(a) ^ $flip)
            }
        }
    )*};
}

big_endian! {
    /// `u32`, big-endian: the byte order is the numeric order.
    U32 u32, 0;
    /// `u64`, big-endian: the byte order is the numeric order.
    U64 u64, 0;
    /// `i64`, big-endian with the sign bit flipped: negative numbers first.
    I64 i64, i64::MIN;
}

/// Any serde type, as JSON (ordered by its JSON text, which rarely means
/// anything for keys: use it for values).
pub struct Json<T>(PhantomData<T>);

impl<T: serde::Serialize + serde::de::DeserializeOwned> Codec for Json<T> {
    type In = T;
    type Out<'a> = T;
    fn encode(v: &T) -> Cow<'_, [u8]> {
        Cow::Owned(serde_json::to_vec(v).expect("a serde value serialises to JSON"))
    }
    fn decode(b: &[u8]) -> Result<T> {
        serde_json::from_slice(b).map_err(|_| Error::Incompatible)
    }
}

/// A database whose keys and values go through codecs `K` and `V`. The
/// handle is the untyped [`Database`] underneath ([`TypedDb::database`]).
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

/// The items of a typed database, decoded, from either end.
pub struct TypedEntries<'t, T: Snapshot, K, V> {
    inner: Entries<'t, T>,
    _codecs: PhantomData<fn() -> (K, V)>,
}

/// Keys with their decoded values as nested iterators (see
/// [`TypedDb::groups`]).
pub struct TypedGroups<'t, T: Snapshot, K, V> {
    inner: crate::entries::Groups<'t, T>,
    _codecs: PhantomData<fn() -> (K, V)>,
}

/// The decoded values of one key, from either end.
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
                K::decode(k)?,
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
        self.inner.next().map(|r| V::decode(r?))
    }
}

impl<'t, T: Snapshot, V: Codec> DoubleEndedIterator for TypedValues<'t, T, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|r| V::decode(r?))
    }
}

type Pair<'t, K, V> = (<K as Codec>::Out<'t>, <V as Codec>::Out<'t>);

fn decode_pair<'t, K: Codec, V: Codec>(r: Result<crate::tree::Item<'t>>) -> Result<Pair<'t, K, V>> {
    let (k, v) = r?;
    Ok((K::decode(k)?, V::decode(v)?))
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
    pub fn new(db: Database) -> Self {
        TypedDb {
            db,
            _codecs: PhantomData,
        }
    }

    /// Open (creating it with `flags` if absent) the named database `name`.
    pub fn create(w: &mut RwTxn<'_>, name: &str, flags: crate::DbFlags) -> Result<Self> {
        Ok(Self::new(w.create_db(name, flags)?))
    }

    /// Open the existing named database `name`.
    pub fn open<T: Txn>(txn: &T, name: &str) -> Result<Self> {
        Ok(Self::new(txn.open_db(name)?))
    }

    /// The untyped handle.
    pub fn database(&self) -> Database {
        self.db
    }

    /// The value of `key` (the first one, for DUPSORT).
    pub fn get<'t, T: Txn>(&self, txn: &'t T, key: &K::In) -> Result<Option<V::Out<'t>>> {
        match txn.get(self.db, &K::encode(key))? {
            Some(b) => Ok(Some(V::decode(b)?)),
            None => Ok(None),
        }
    }

    /// Store `val` under `key` (replacing it; for DUPSORT, adding it).
    pub fn put(&self, w: &mut RwTxn<'_>, key: &K::In, val: &V::In) -> Result<()> {
        w.put(self.db, &K::encode(key), &V::encode(val), WriteFlags::EMPTY)
    }

    /// Delete `key` (every value of it); whether it was there.
    pub fn delete(&self, w: &mut RwTxn<'_>, key: &K::In) -> Result<bool> {
        w.del(self.db, &K::encode(key))
    }

    /// Every item, in key order, from either end.
    pub fn iter<'t, T: Txn>(&self, txn: &'t T) -> Result<TypedEntries<'t, T, K, V>> {
        self.wrap(txn.range(self.db, ..)?)
    }

    /// The items whose keys lie in `range` (`"a".."m"`, `10..=20`...),
    /// from either end: `.rev()` gives them in descending order.
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
