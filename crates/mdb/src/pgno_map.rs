//! A map keyed by page number with a hasher of its own: page numbers
//! are already well spread. Below the pager and the log, which both
//! use it (the pager's dirty pages, the log's young pages).

use std::collections::HashMap;

/// A fast hasher for page numbers (they are already well spread).
#[derive(Default, Clone, Copy)]
pub(crate) struct PgnoHasher(u64);

impl std::hash::Hasher for PgnoHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Map keyed by page number.
pub(crate) type PgnoMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<PgnoHasher>>;
