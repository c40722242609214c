//! Key comparators selected by database flags (lmdb-format.md §7).

use std::cmp::Ordering;

/// A key comparator.
pub type CmpFn = fn(&[u8], &[u8]) -> Ordering;

/// Byte-wise lexicographic, shorter first on a common prefix.
pub fn lexical(a: &[u8], b: &[u8]) -> Ordering {
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

/// The key comparator LMDB derives from a database's flags.
pub fn for_flags(flags: u16) -> CmpFn {
    if flags & crate::db::REVERSEKEY != 0 {
        reverse
    } else if flags & crate::db::INTEGERKEY != 0 {
        integer
    } else {
        lexical
    }
}

/// The duplicate-value comparator LMDB derives from a DUPSORT database's flags.
pub fn dup_for_flags(flags: u16) -> CmpFn {
    if flags & crate::db::INTEGERDUP != 0 {
        integer
    } else if flags & crate::db::REVERSEDUP != 0 {
        reverse
    } else {
        lexical
    }
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
    }
}
