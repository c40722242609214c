//! Key comparators selected by database flags (lmdb-format.md §7).

use std::cmp::Ordering;

/// A Rust comparator function, as [`Env::set_compare`](crate::Env::set_compare)
/// and [`Env::set_dupsort`](crate::Env::set_dupsort) take it: a `fn` or a
/// closure that captures nothing.
///
/// ```
/// use mdb::RustCmp;
/// let by_len: RustCmp = |a, b| a.len().cmp(&b.len()).then(a.cmp(b));
/// assert!(by_len(b"zz", b"aaa").is_lt());
/// ```
pub type RustCmp = fn(&[u8], &[u8]) -> Ordering;

/// LMDB's `MDB_val` as a C comparator receives it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CVal {
    /// Length in bytes.
    pub size: usize,
    /// Pointer to the bytes.
    pub data: *const std::ffi::c_void,
}

/// A C comparator (`MDB_cmp_func`), as bindings register them.
pub type CCmp = unsafe extern "C" fn(*const CVal, *const CVal) -> std::ffi::c_int;

/// A comparator: a Rust function or a C callback. `Copy`, so trees and
/// cursors carry it by value without reference counting
/// ([`Env::set_comparator`](crate::Env::set_comparator)).
///
/// ```
/// use mdb::CmpFn;
/// let newest_first = CmpFn::rust(|a, b| b.cmp(a));
/// assert!(newest_first.compare(b"2026", b"2025").is_lt());
/// ```
#[derive(Clone, Copy)]
pub struct CmpFn(Kind);

impl std::fmt::Debug for CmpFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Kind::Lexical => "CmpFn(lexical)",
            Kind::Integer => "CmpFn(integer)",
            Kind::Rust(_) => "CmpFn(rust)",
            Kind::C(_) => "CmpFn(c)",
        })
    }
}

#[derive(Clone, Copy)]
enum Kind {
    /// [`lexical`], known statically so searches can inline it.
    Lexical,
    /// [`integer`] (INTEGERKEY, INTEGERDUP), likewise: back-mdb's entry
    /// ids.
    Integer,
    Rust(RustCmp),
    C(CCmp),
}

impl CmpFn {
    /// Wrap a Rust function.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{CmpFn, Database, Env, Txn, WriteFlags};
    /// fn case_insensitive(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    ///     a.to_ascii_lowercase().cmp(&b.to_ascii_lowercase())
    /// }
    /// let env = Env::open(dir.path())?;
    /// env.set_comparator(Database::MAIN, CmpFn::rust(case_insensitive), false)?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"Key", b"v", WriteFlags::EMPTY)?;
    /// assert_eq!(w.get(Database::MAIN, b"KEY")?, Some(&b"v"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub const fn rust(f: RustCmp) -> CmpFn {
        CmpFn(Kind::Rust(f))
    }

    /// Wrap a C callback (what the C library's `mdb_set_compare` passes).
    ///
    /// ```
    /// use mdb::{CVal, CmpFn};
    /// unsafe extern "C" fn by_len(a: *const CVal, b: *const CVal) -> std::ffi::c_int {
    ///     // SAFETY: the engine passes two valid values.
    ///     let (a, b) = unsafe { ((*a).size, (*b).size) };
    ///     a.cmp(&b) as std::ffi::c_int
    /// }
    /// // SAFETY: `by_len` reads only the sizes and never unwinds.
    /// let cmp = unsafe { CmpFn::c(by_len) };
    /// assert!(cmp.compare(b"zz", b"aaa").is_lt());
    /// ```
    ///
    /// # Safety
    /// `f` must be safe to call with two valid `CVal`s for as long as the
    /// comparator is in use, and must not unwind.
    pub const unsafe fn c(f: CCmp) -> CmpFn {
        CmpFn(Kind::C(f))
    }

    /// Whether this is the default byte-wise order.
    #[inline]
    pub(crate) fn is_lexical(&self) -> bool {
        matches!(self.0, Kind::Lexical)
    }

    /// Whether this is [`integer`], LMDB's order for INTEGERKEY.
    #[inline]
    pub(crate) fn is_integer(&self) -> bool {
        matches!(self.0, Kind::Integer)
    }

    /// Compare `a` with `b`.
    ///
    /// ```
    /// use mdb::CmpFn;
    /// let rev = CmpFn::rust(|a, b| b.cmp(a));
    /// assert_eq!(rev.compare(b"a", b"b"), std::cmp::Ordering::Greater);
    /// ```
    #[inline]
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self.0 {
            Kind::Lexical => lexical(a, b),
            Kind::Integer => integer(a, b),
            Kind::Rust(f) => f(a, b),
            Kind::C(f) => {
                let (x, y) = (
                    CVal {
                        size: a.len(),
                        data: a.as_ptr().cast(),
                    },
                    CVal {
                        size: b.len(),
                        data: b.as_ptr().cast(),
                    },
                );
                // SAFETY: `CmpFn::c`'s contract: the callback accepts valid
                // values, which these are for the duration of the call.
                unsafe { f(&x, &y) }.cmp(&0)
            }
        }
    }
}

/// Byte-wise lexicographic, shorter first on a common prefix.
///
/// Keys mostly differ in their first eight bytes: comparing those as one
/// big-endian word inline beats a `memcmp` call (the search's hottest
/// instructions); the rest, when they are equal, goes to `memcmp`.
#[inline]
pub fn lexical(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some((u, ar)), Some((v, br))) = (a.split_first_chunk::<8>(), b.split_first_chunk::<8>())
    {
        let (u, v) = (u64::from_be_bytes(*u), u64::from_be_bytes(*v));
        if u != v {
            return u.cmp(&v);
        }
        return ar.cmp(br);
    }
    a.cmp(b)
}

/// Compare from the last byte backwards; shorter first on a common suffix.
pub fn reverse(a: &[u8], b: &[u8]) -> Ordering {
    a.iter().rev().cmp(b.iter().rev())
}

/// Native unsigned integers of 4 or 8 bytes, compared numerically.
pub fn integer(a: &[u8], b: &[u8]) -> Ordering {
    match (a.len(), b.len()) {
        (4, 4) => u32::from_le_bytes(a.try_into().unwrap())
            .cmp(&u32::from_le_bytes(b.try_into().unwrap())),
        (8, 8) => u64::from_le_bytes(a.try_into().unwrap())
            .cmp(&u64::from_le_bytes(b.try_into().unwrap())),
        // Mixed sizes never occur in a valid file; keep a total order anyway.
        (la, lb) => la.cmp(&lb).then_with(|| reverse(a, b)),
    }
}

/// The built-in orders LMDB derives from database flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// [`lexical`].
    Lexical,
    /// [`reverse`].
    Reverse,
    /// [`integer`].
    Integer,
}

impl Order {
    /// The order of a database's keys (REVERSEKEY before INTEGERKEY, as LMDB).
    #[inline]
    pub fn of_keys(flags: u16) -> Order {
        use crate::format::flags::{INTEGERKEY, REVERSEKEY};
        Order::first_of(
            flags,
            [(REVERSEKEY, Order::Reverse), (INTEGERKEY, Order::Integer)],
        )
    }

    /// The order of a DUPSORT database's values (INTEGERDUP before
    /// REVERSEDUP, as LMDB).
    #[inline]
    pub fn of_dups(flags: u16) -> Order {
        use crate::format::flags::{INTEGERDUP, REVERSEDUP};
        Order::first_of(
            flags,
            [(INTEGERDUP, Order::Integer), (REVERSEDUP, Order::Reverse)],
        )
    }

    /// The order of the first of `choices` whose flag is in `flags`, else lexical.
    #[inline]
    fn first_of(flags: u16, choices: [(u16, Order); 2]) -> Order {
        choices
            .into_iter()
            .find(|&(f, _)| flags & f != 0)
            .map_or(Order::Lexical, |(_, o)| o)
    }

    /// Compare `a` with `b`.
    #[inline]
    pub fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            Order::Lexical => lexical(a, b),
            Order::Reverse => reverse(a, b),
            Order::Integer => integer(a, b),
        }
    }

    /// This order as a comparator.
    #[inline]
    pub fn cmp_fn(self) -> CmpFn {
        match self {
            Order::Lexical => CmpFn(Kind::Lexical),
            Order::Reverse => CmpFn::rust(reverse),
            Order::Integer => CmpFn(Kind::Integer),
        }
    }
}

/// The key comparator LMDB derives from a database's flags.
#[inline]
pub fn for_flags(flags: u16) -> CmpFn {
    Order::of_keys(flags).cmp_fn()
}

/// The duplicate-value comparator LMDB derives from a DUPSORT database's flags.
#[inline]
pub fn dup_for_flags(flags: u16) -> CmpFn {
    Order::of_dups(flags).cmp_fn()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders() {
        let mut v: Vec<&[u8]> = vec![b"ac", b"ab", b"ca", b"ba"];
        v.sort_by(|a, b| reverse(a, b));
        assert_eq!(v, vec![b"ba" as &[u8], b"ca", b"ab", b"ac"]);
        let k = |x: u64| x.to_le_bytes();
        assert_eq!(integer(&k(2), &k(65536)), Ordering::Less);
        assert_eq!(
            integer(&3u32.to_le_bytes(), &2u32.to_le_bytes()),
            Ordering::Greater
        );
        assert_eq!(lexical(b"a", b"ab"), Ordering::Less);
        let (rk, ik, id, rd) = (0x02, 0x08, 0x20, 0x40);
        assert_eq!(Order::of_keys(rk | ik), Order::Reverse);
        assert_eq!(Order::of_keys(ik | id), Order::Integer);
        assert_eq!(Order::of_keys(rd), Order::Lexical);
        assert_eq!(Order::of_dups(id | rd), Order::Integer);
        assert_eq!(Order::of_dups(rd | rk), Order::Reverse);
        assert_eq!(Order::of_dups(ik), Order::Lexical);
        assert_eq!(Order::Reverse.compare(b"ab", b"ba"), Ordering::Greater);
        assert!(Order::Lexical.cmp_fn().is_lexical());
    }

    /// The word-at-a-time compare is exactly slice order: common prefixes
    /// of every length around the 8-byte word, equal words, different
    /// lengths (a fixed xorshift sequence, small enough for Miri).
    #[test]
    fn lexical_is_slice_order() {
        let mut next = crate::format::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..600 {
            let prefix: Vec<u8> = (0..next() % 20).map(|_| (next() % 3) as u8).collect();
            let mut tail = || -> Vec<u8> { (0..next() % 12).map(|_| (next() % 3) as u8).collect() };
            let a = [&prefix[..], &tail()[..]].concat();
            let b = [&prefix[..], &tail()[..]].concat();
            assert_eq!(lexical(&a, &b), a.cmp(&b), "{a:?} {b:?}");
            assert_eq!(lexical(&b, &a), b.cmp(&a), "{b:?} {a:?}");
            assert_eq!(lexical(&a, &a), Ordering::Equal);
        }
    }

    /// A C comparator as a binding registers it: reads both values through
    /// the raw pointers (under Miri this checks the `CVal`s handed over).
    unsafe extern "C" fn c_reverse(a: *const CVal, b: *const CVal) -> std::ffi::c_int {
        // SAFETY: `compare` passes pointers to live `CVal`s whose data
        // pointers cover `size` bytes.
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts((*a).data.cast::<u8>(), (*a).size),
                std::slice::from_raw_parts((*b).data.cast::<u8>(), (*b).size),
            )
        };
        reverse(a, b) as std::ffi::c_int
    }

    #[test]
    fn c_comparator_sees_the_values() {
        // SAFETY: `c_reverse` reads only the values it is given and never unwinds.
        let c = unsafe { CmpFn::c(c_reverse) };
        for (a, b) in [
            (&b"ab"[..], &b"ba"[..]),
            (b"", b"x"),
            (b"xa", b"xa"),
            (b"a", b""),
        ] {
            assert_eq!(c.compare(a, b), reverse(a, b), "{a:?} {b:?}");
        }
    }
}
