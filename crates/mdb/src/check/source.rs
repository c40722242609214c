//! Where a check reads its bytes: bytes in memory, or a map (of a file, or
//! of an open environment) that it reads page by page and gives back to the
//! kernel as it goes, so that a file larger than memory is checked in a
//! bounded resident set.

use std::cell::Cell;

use crate::format::bytes::sub;
use crate::mmap::Map;

/// Bytes read from a map before its pages are unmapped from the process
/// again. A read page counts as [`FAULT_AROUND`] bytes at least: a fault
/// maps that much of the page cache around it.
const EVICT_AFTER: usize = 32 << 20;
/// What one fault may map (the kernel's default `fault_around_bytes`).
const FAULT_AROUND: usize = 64 << 10;

/// The image a check reads: the data file's bytes from offset 0, with the
/// meta pages possibly taken from elsewhere (a snapshot's, copied when it
/// was taken, since a writer rewrites them in place).
pub(super) struct Source<'a> {
    /// Pages 0 and 1 when they come from elsewhere (else empty).
    metas: &'a [u8],
    /// The image, from offset 0; its length is the image's.
    body: &'a [u8],
    /// The map `body` lies in, to give its pages back to the kernel.
    map: Option<&'a Map>,
    /// Bytes read since the map's pages were last given back.
    read: Cell<usize>,
}

impl<'a> Source<'a> {
    /// Bytes in memory.
    pub(super) fn bytes(file: &'a [u8]) -> Source<'a> {
        Source {
            metas: &[],
            body: file,
            map: None,
            read: Cell::new(0),
        }
    }

    /// `len` bytes of `map` from offset 0, with pages 0 and 1 from `metas`
    /// when it is not empty.
    pub(super) fn map(map: &'a Map, len: usize, metas: &'a [u8]) -> Option<Source<'a>> {
        Some(Source {
            metas,
            body: map.slice(0, len).ok()?,
            map: Some(map),
            read: Cell::new(0),
        })
    }

    /// Length of the image in bytes.
    pub(super) fn len(&self) -> usize {
        self.body.len()
    }

    /// `len` bytes at `off`, or `None` past the end of the image. The
    /// slice stays valid (and unchanged) when the map's pages are given
    /// back: the next access maps the same file pages again.
    pub(super) fn at(&self, off: usize, len: usize) -> Option<&'a [u8]> {
        if off < self.metas.len() {
            return sub(self.metas, off, len);
        }
        let b = sub(self.body, off, len)?;
        if let Some(map) = self.map {
            let read = self.read.get() + len.max(FAULT_AROUND);
            if read >= EVICT_AFTER {
                map.evict(0, self.body.len());
                self.read.set(0);
            } else {
                self.read.set(read);
            }
        }
        Some(b)
    }
}
