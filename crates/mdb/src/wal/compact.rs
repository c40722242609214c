//! The compact encodings of a version 5 record (`record/`): unsigned
//! LEB128 varints, zigzag for signed deltas, and the meta update as
//! varints of its little-endian 64-bit words (its counts and page numbers
//! are small: 120 bytes take about 35).
//!
//! Decoding never panics: a varint that runs past the bytes, takes more
//! than 10 bytes or overflows 64 bits is `None`.

/// Append `v` as an unsigned LEB128 varint.
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes [`put`] takes for `v`.
pub(crate) fn len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// The varint at `*at` of `b`, moving `*at` past it.
pub(crate) fn get(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let byte = *b.get(*at + i)?;
        let bits = u64::from(byte & 0x7f);
        if i == 9 && bits > 1 {
            return None;
        }
        v |= bits << (7 * i);
        if byte & 0x80 == 0 {
            // The shortest form only, so that one value has one encoding.
            if i > 0 && byte == 0 {
                return None;
            }
            *at += i + 1;
            return Some(v);
        }
    }
    None
}

/// `to - from` as a zigzag varint value.
pub(crate) fn delta(from: u64, to: u64) -> u64 {
    let d = to.wrapping_sub(from) as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

/// The inverse of [`delta`]: `from` moved by the zigzag value `z`.
pub(crate) fn undelta(from: u64, z: u64) -> u64 {
    let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
    from.wrapping_add(d as u64)
}

/// The words of `meta`, zero-padded to whole words.
fn words(meta: &[u8]) -> impl Iterator<Item = u64> + '_ {
    meta.chunks(8).map(|c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(w)
    })
}

/// Append the meta update `meta`: its length, then its words.
pub(crate) fn put_meta(out: &mut Vec<u8>, meta: &[u8]) {
    put(out, meta.len() as u64);
    for w in words(meta) {
        put(out, w);
    }
}

/// Bytes [`put_meta`] takes.
pub(crate) fn meta_len(meta: &[u8]) -> usize {
    len(meta.len() as u64) + words(meta).map(len).sum::<usize>()
}

/// The meta update at `*at` into `out` (cleared first), moving `*at` past
/// it; `None` when it does not fit or a last partial word has bytes past
/// the length.
pub(crate) fn get_meta(b: &[u8], at: &mut usize, out: &mut Vec<u8>) -> Option<()> {
    let n = usize::try_from(get(b, at)?).ok()?;
    // Each word takes a byte at least: a forged length cannot allocate.
    if n.div_ceil(8) > b.len().saturating_sub(*at) {
        return None;
    }
    out.clear();
    for i in 0..n.div_ceil(8) {
        let w = get(b, at)?.to_le_bytes();
        let take = (n - i * 8).min(8);
        if w[take..].iter().any(|&x| x != 0) {
            return None;
        }
        out.extend_from_slice(&w[..take]);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varints_round_trip(v in any::<u64>(), from in any::<u64>(), to in any::<u64>()) {
            let mut b = Vec::new();
            put(&mut b, v);
            prop_assert_eq!(b.len(), len(v));
            let mut at = 0;
            prop_assert_eq!(get(&b, &mut at), Some(v));
            prop_assert_eq!(at, b.len());
            prop_assert_eq!(undelta(from, delta(from, to)), to);
        }

        #[test]
        fn metas_round_trip(meta in proptest::collection::vec(any::<u8>(), 0..130)) {
            let mut b = Vec::new();
            put_meta(&mut b, &meta);
            prop_assert_eq!(b.len(), meta_len(&meta));
            let (mut at, mut out) = (0, Vec::new());
            prop_assert_eq!(get_meta(&b, &mut at, &mut out), Some(()));
            prop_assert_eq!((at, out), (b.len(), meta));
            for k in 0..b.len() {
                let mut at = 0;
                prop_assert!(get_meta(&b[..k], &mut at, &mut Vec::new()).is_none());
            }
        }
    }

    #[test]
    fn overlong_and_overflowing_varints_are_refused() {
        let mut at = 0;
        assert_eq!(get(&[0x80, 0x00], &mut at), None);
        assert_eq!(
            get(
                &[0xff; 9].iter().chain(&[0x02]).copied().collect::<Vec<_>>(),
                &mut at
            ),
            None
        );
        assert_eq!(get(&[0xff; 11], &mut at), None);
        assert_eq!(at, 0);
    }
}
