//! The compacting copy: the live pages of a snapshot walked in post-order
//! and renumbered densely, built in two buffers in turn as LMDB's
//! `mdb_copy -c` builds them (see `mod.rs`).

use super::progress::{CopyStats, ProgressFn};
use super::snapshot::CopySnapshot;
use super::writer::{Chunk, CHUNK};
use crate::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::format::bytes::get64;
use crate::format::meta::{DbRecord, Meta};
use crate::format::page::{
    edit, Header, Page, F_BIGDATA, F_DUPDATA, F_SUBDATA, HDR, P_INVALID, P_LEAF2, P_OVERFLOW,
};
use crate::mmap::Map;
use crate::tree::MAX_DEPTH;
use std::io::Write;
use std::sync::mpsc;

/// Sub-database nesting: MAIN, then a named DB, then a duplicate sub-DB.
const MAX_NESTING: usize = 2;

impl Env {
    pub(super) fn copy_compact<W: Write + ?Sized>(
        &self,
        snap: &CopySnapshot<'_>,
        w: &mut W,
        progress: ProgressFn<'_>,
    ) -> Result<CopyStats> {
        let ps = self.psize;
        let src = snap.meta;
        let file_pages = snap.file_len / ps as u64;
        let map = self.map_for(&src)?;
        // As LMDB's copy: one thread walks the tree and fills a buffer while
        // this one writes the other, so the walk and the writes overlap.
        // The two buffers still alternate strictly, so each page's unused
        // gap keeps what it kept before (byte-identical to `mdb_copy -c`).
        let (to_writer, chunks) = mpsc::sync_channel::<Chunk>(2);
        let (give_back, free) = mpsc::sync_channel::<Vec<u8>>(2);
        give_back
            .send(vec![0u8; CHUNK])
            .expect("room for one buffer");
        let mut c = Compactor {
            map,
            ps,
            last: src.last_pgno.min(file_pages.saturating_sub(1)),
            snap_last: src.last_pgno,
            out: to_writer,
            free,
            buf: vec![0u8; CHUNK],
            wlen: 0,
            next: 2,
            limit: 1,
        };
        let root = self.compact_metas(&mut c, snap)?;
        std::thread::scope(|scope| {
            let walker = scope.spawn(move || {
                if c.walk(src.main.root, true, 0)? != root {
                    // Page leak or corrupt source: the live pages did not add up.
                    return Err(ErrorKind::Incompatible.into());
                }
                c.switch()?;
                Ok(c.next)
            });
            let written = self.write_chunks(map, chunks, give_back, w, progress);
            // The channels are gone with `write_chunks`: a walker still
            // waiting for a buffer stops with an error.
            let walked: Result<u64> = walker.join().map_err(|_| Error::from(ErrorKind::Panic))?;
            // A failed write makes the walker fail too: the write's error
            // is the one that explains it.
            written?;
            let pages = walked?;
            w.flush()?;
            Ok(CopyStats {
                snapshot_txnid: src.txnid,
                source_last_pgno: src.last_pgno,
                pages,
                page_size: ps,
            })
        })
    }

    /// The start of a compacting copy: the two meta pages, in the first
    /// buffer, and the copy's size sent to the writer. Returns the main
    /// root the walk must end on.
    fn compact_metas(&self, c: &mut Compactor<'_>, snap: &CopySnapshot<'_>) -> Result<u64> {
        let (ps, src) = (c.ps, snap.meta);
        // Page 0: an empty environment; page 1: the data, as a new file would
        // have them after its first commit.
        let env_flags = (self.flags().bits() & 0xffff) as u16;
        let mut m0 = Meta::new_env(ps as u32, self.mapsize_for(src.mapsize, 0), env_flags);
        m0.address = snap.metas_address();
        let mut m1 = m0;
        if src.main.root != P_INVALID {
            // Everything in 2..=last_pgno that is not free holds live data,
            // and the main root will be the last of those pages.
            let free = c.count_free(&src.free)?;
            let live_last = src
                .last_pgno
                .checked_sub(free)
                .filter(|&l| l >= 2)
                .ok_or(ErrorKind::Incompatible)?;
            m1.last_pgno = live_last;
            m1.main = src.main;
            m1.main.root = live_last;
            c.limit = live_last;
        } else {
            // An empty main DB: keep only its flags (this also drops pages an
            // old LMDB bug may have leaked).
            m1.main.flags = src.main.flags;
        }
        if src.main.root != P_INVALID || m1.main.flags != 0 {
            m1.txnid = 1;
        }
        c.send(Chunk::Total(m1.last_pgno + 1))?;
        c.buf[..ps].copy_from_slice(&m0.encode_page(0, ps));
        c.buf[ps..2 * ps].copy_from_slice(&m1.encode_page(1, ps));
        c.wlen = 2 * ps;
        Ok(m1.main.root)
    }
}

/// A branch page being copied (its header checked when it was read; only
/// its children's numbers change), its node count, and the child to visit
/// next.
struct Frame {
    img: Vec<u8>,
    len: usize,
    next: usize,
}

impl Frame {
    /// Child page of node `i`.
    fn child(&self, i: usize) -> Result<u64> {
        Page::edited(&self.img).child(i)
    }

    /// Point node `i` at `pgno`.
    fn set_child(&mut self, i: usize, pgno: u64) -> Result<()> {
        Page::edited(&self.img).child(i)?;
        edit::set_child(&mut self.img, i, pgno);
        Ok(())
    }
}

/// Copy page `src` into `dst` as LMDB's page copy does: the header and
/// pointer array up to `lower` rounded up to 8 bytes, and the nodes from
/// `upper` rounded down to 8; the bytes between keep what `dst` held. A
/// LEAF2 page, or one whose gap is under 8 bytes, is copied up to `psize`
/// minus the gap rounded down to 8.
fn page_copy(dst: &mut [u8], src: &[u8]) {
    let ps = src.len();
    let h = Header::read(src).unwrap_or_default();
    let (lower, upper) = (h.lower as usize, h.upper as usize);
    if lower > upper || upper > ps {
        // Not a sane page: keep it whole.
        dst.copy_from_slice(src);
        return;
    }
    let gap = (upper - lower) & !7;
    if gap != 0 && h.flags & P_LEAF2 == 0 {
        let head = ((lower + 7) & !7).min(ps);
        let tail = upper & !7;
        dst[..head].copy_from_slice(&src[..head]);
        dst[tail..].copy_from_slice(&src[tail..]);
    } else {
        let n = ps - gap;
        dst[..n].copy_from_slice(&src[..n]);
    }
}

/// The compacting walk: emits pages in post-order with new numbers.
struct Compactor<'a> {
    /// A map generation holding the snapshot.
    map: &'a Map,
    ps: usize,
    /// Highest source page that may be read (snapshot's last_pgno, within the file).
    last: u64,
    /// The snapshot's last_pgno: pages up to it but past `last` are missing
    /// from a truncated file.
    snap_last: u64,
    /// To the writer, and the buffers it hands back.
    out: mpsc::SyncSender<Chunk>,
    free: mpsc::Receiver<Vec<u8>>,
    /// The buffer being filled, and how much of it is.
    buf: Vec<u8>,
    wlen: usize,
    /// Next page number of the copy.
    next: u64,
    /// Highest page number the copy may use: the new main root.
    limit: u64,
}

impl<'a> Compactor<'a> {
    /// Source page `pgno` from the map.
    fn src(&self, pgno: u64, pages: u64) -> Result<&'a [u8]> {
        if pgno < 2 || pages == 0 || pgno > self.last || pages - 1 > self.last - pgno {
            let in_snapshot = pgno >= 2
                && pages > 0
                && pgno <= self.snap_last
                && pages - 1 <= self.snap_last - pgno;
            return Err(if in_snapshot {
                ErrorKind::Corrupted
            } else {
                ErrorKind::PageNotFound
            }
            .into());
        }
        self.map
            .slice(pgno as usize * self.ps, pages as usize * self.ps)
    }

    /// Reserve `n` page numbers of the copy.
    fn alloc(&mut self, n: u64) -> Result<u64> {
        let pg = self.next;
        if n == 0 || pg > self.limit || n - 1 > self.limit - pg {
            // More live pages than the free list leaves room for.
            return Err(ErrorKind::Incompatible.into());
        }
        self.next += n;
        Ok(pg)
    }

    /// Pass a chunk to the writer; it is gone (a write failed) if it has
    /// hung up, and the copy stops.
    fn send(&self, c: Chunk) -> Result<()> {
        self.out
            .send(c)
            .map_err(|_| Error::from(ErrorKind::Os(libc::EIO)))
    }

    /// Hand the current buffer to the writer and take the other one back
    /// (which it has written by then).
    fn switch(&mut self) -> Result<()> {
        let next = self
            .free
            .recv()
            .map_err(|_| Error::from(ErrorKind::Os(libc::EIO)))?;
        let buf = std::mem::replace(&mut self.buf, next);
        let (len, done) = (self.wlen, self.next);
        self.wlen = 0;
        self.send(Chunk::Pages { buf, len, done })
    }

    /// Make room for one page in the current buffer; returns its offset there.
    fn room(&mut self) -> Result<usize> {
        if self.wlen >= CHUNK {
            self.switch()?;
        }
        Ok(self.wlen)
    }

    /// Pages in the free list plus the free DB's own pages, as LMDB counts them.
    fn count_free(&self, free: &crate::format::meta::DbRecord) -> Result<u64> {
        let mut n = free
            .branch_pages
            .saturating_add(free.leaf_pages)
            .saturating_add(free.overflow_pages);
        if free.root == P_INVALID {
            return Ok(n);
        }
        let mut stack = vec![(free.root, 1usize)];
        let mut visited = 0u64;
        while let Some((pg, depth)) = stack.pop() {
            visited += 1;
            if depth > MAX_DEPTH || visited > self.last {
                return Err(ErrorKind::Corrupted.into());
            }
            let p = Page::new(self.src(pg, 1)?)?;
            if p.is_branch() {
                for i in (0..p.len()).rev() {
                    stack.push((p.child(i)?, depth + 1));
                }
            } else {
                for i in 0..p.len() {
                    let nd = p.node(i)?;
                    let ids = if nd.flags() & F_BIGDATA != 0 {
                        &self.src(nd.ov_pgno(), 1)?[HDR..]
                    } else {
                        nd.data()
                    };
                    n = n.saturating_add(get64(ids, 0).ok_or(ErrorKind::Corrupted)?);
                }
            }
        }
        Ok(n)
    }

    /// Copy the tree at `root`; returns its root in the copy. `scan` says
    /// whether leaf nodes may carry overflow runs and sub-databases (not in
    /// a duplicate sub-DB, whose values are its keys).
    fn walk(&mut self, root: u64, scan: bool, nesting: usize) -> Result<u64> {
        if root == P_INVALID {
            return Ok(P_INVALID);
        }
        let mut stack: Vec<Frame> = Vec::new();
        let mut pg = root;
        loop {
            // Go down to the leftmost leaf below `pg`.
            let raw = self.src(pg, 1)?;
            let p = Page::new(raw)?;
            let mut done = if p.is_branch() {
                if stack.len() >= MAX_DEPTH || p.is_empty() {
                    return Err(ErrorKind::Corrupted.into());
                }
                pg = p.child(0)?;
                stack.push(Frame {
                    img: raw.to_vec(),
                    len: p.len(),
                    next: 0,
                });
                continue;
            } else if scan && p.refers_out()? {
                let mut img = raw.to_vec();
                self.leaf_children(&mut img, nesting)?;
                self.emit(&img)?
            } else {
                // Most leaves go out as they are, straight from the map.
                self.emit(raw)?
            };
            // Climb while the parents are finished, emitting them.
            loop {
                let Some(f) = stack.last_mut() else {
                    return Ok(done);
                };
                f.set_child(f.next, done)?;
                f.next += 1;
                if f.next < f.len {
                    pg = f.child(f.next)?;
                    break;
                }
                let f = stack.pop().expect("frame");
                done = self.emit(&f.img)?;
            }
        }
    }

    /// Copy what the nodes of a leaf point to, updating the leaf image.
    fn leaf_children(&mut self, img: &mut [u8], nesting: usize) -> Result<()> {
        let n = Page::new(img)?.len();
        for i in 0..n {
            let nd = Page::new(img)?.node(i)?;
            let nf = nd.flags();
            let data = if nf & F_BIGDATA != 0 {
                let new = self.copy_overflow(nd.ov_pgno())?;
                new.to_le_bytes().to_vec()
            } else if nf & F_SUBDATA != 0 {
                let mut r = DbRecord::read(nd.data())?;
                if nesting >= MAX_NESTING {
                    return Err(ErrorKind::Corrupted.into());
                }
                r.root = self.walk(r.root, nf & F_DUPDATA == 0, nesting + 1)?;
                r.encode().to_vec()
            } else {
                continue;
            };
            edit::data_mut(img, i).copy_from_slice(&data);
        }
        Ok(())
    }

    /// Add a branch or leaf page under the next page number.
    fn emit(&mut self, img: &[u8]) -> Result<u64> {
        let off = self.room()?;
        let pg = self.alloc(1)?;
        let ps = self.ps;
        let dst = &mut self.buf[off..off + ps];
        page_copy(dst, img);
        edit::set_pgno(dst, pg);
        self.wlen += ps;
        Ok(pg)
    }

    /// Copy the overflow run starting at source page `ov`; returns its new number.
    fn copy_overflow(&mut self, ov: u64) -> Result<u64> {
        let first = self.src(ov, 1)?;
        let h = Header::read(first).ok_or(ErrorKind::Corrupted)?;
        let n = u64::from(h.overflow_pages());
        if h.flags & P_OVERFLOW == 0 || n == 0 {
            return Err(ErrorKind::Corrupted.into());
        }
        // Check the whole run before writing any of it.
        self.src(ov, n)?;
        let off = self.room()?;
        let pg = self.alloc(n)?;
        let ps = self.ps;
        let dst = &mut self.buf[off..off + ps];
        dst.copy_from_slice(first);
        edit::set_pgno(dst, pg);
        self.wlen += ps;
        if n > 1 {
            // The rest of the run goes out straight from the map, and the
            // next pages go to the other buffer (as in LMDB).
            self.switch()?;
            self.send(Chunk::Run {
                from: ov + 1,
                end: ov + n,
            })?;
        }
        Ok(pg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::page::P_LEAF;

    #[test]
    fn page_copy_keeps_the_gap_like_lmdb() {
        let mut img = vec![0xAAu8; 4096];
        img[10..12].copy_from_slice(&P_LEAF.to_le_bytes());
        img[12..14].copy_from_slice(&22u16.to_le_bytes());
        img[14..16].copy_from_slice(&4000u16.to_le_bytes());
        let mut out = vec![0x55u8; 4096];
        page_copy(&mut out, &img);
        assert!(out[..24].iter().skip(16).all(|&b| b == 0xAA));
        assert!(out[24..4000].iter().all(|&b| b == 0x55));
        assert!(out[4000..].iter().all(|&b| b == 0xAA));
        // A gap under 8 bytes: the whole page.
        img[14..16].copy_from_slice(&28u16.to_le_bytes());
        page_copy(&mut out, &img);
        assert_eq!(out, img);
        // LEAF2: everything but the rounded gap at the end.
        let mut out = vec![0x55u8; 4096];
        img[10..12].copy_from_slice(&(P_LEAF | P_LEAF2).to_le_bytes());
        img[14..16].copy_from_slice(&(22u16 + 100).to_le_bytes());
        page_copy(&mut out, &img);
        assert!(out[..4096 - 96].iter().skip(16).all(|&b| b == 0xAA));
        assert!(out[4096 - 96..].iter().all(|&b| b == 0x55));
    }
}
