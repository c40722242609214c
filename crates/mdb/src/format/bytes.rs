//! Checked little-endian reads, for bytes that may be corrupt (a data file
//! read by the checker, a page a copy has not validated): every read is
//! bounds-checked and gives `None` past the end, never a panic.
//!
//! The views of `page.rs` validate a page once and then read it with the
//! unchecked `rd16`/`rd32`/`rd64`.

/// `len` bytes of `b` at `off`, if they are all there.
#[inline]
pub fn sub(b: &[u8], off: usize, len: usize) -> Option<&[u8]> {
    b.get(off..off.checked_add(len)?)
}

/// The `N` bytes of `b` at `off`, if they are all there.
#[inline]
fn array<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    sub(b, off, N)?.try_into().ok()
}

/// The little-endian `u16` at `off`.
#[inline]
pub fn get16(b: &[u8], off: usize) -> Option<u16> {
    array(b, off).map(u16::from_le_bytes)
}

/// The little-endian `u32` at `off`.
#[inline]
pub fn get32(b: &[u8], off: usize) -> Option<u32> {
    array(b, off).map(u32::from_le_bytes)
}

/// The little-endian `u64` at `off`.
#[inline]
pub fn get64(b: &[u8], off: usize) -> Option<u64> {
    array(b, off).map(u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_within_bounds_only() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(get16(&b, 0), Some(0x0201));
        assert_eq!(get32(&b, 5), Some(0x0908_0706));
        assert_eq!(get64(&b, 1), Some(0x0908_0706_0504_0302));
        assert_eq!(get64(&b, 2), None);
        assert_eq!(get16(&b, 8), None);
        assert_eq!(get16(&b, usize::MAX), None);
        assert_eq!(sub(&b, usize::MAX, 2), None);
        assert_eq!(sub(&b, 9, 0), Some(&[][..]));
    }
}
