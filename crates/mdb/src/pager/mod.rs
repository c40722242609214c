//! The page store of a write transaction: committed pages read from the
//! map (bounded by the data file), the dirty-page table, page buffers kept
//! across transactions, and the free pages held in memory. The commit
//! hands the dirty pages to the environment's commit sink (`crate::sink`).
//!
//! The pager knows pages, not trees: choosing which free records to consume
//! and writing the free list back are the tree layer's work, since the free
//! list is itself a B-tree.

mod dirty;
mod free;
mod path;
mod sort;
mod spill;

pub(crate) use crate::pgno_map::PgnoMap;
pub(crate) use crate::young::Committed;
pub(crate) use dirty::DirtyPages;
pub(crate) use free::{FreeState, HeldRecord};
pub(crate) use path::{Path, MAX_DEPTH};
pub(crate) use sort::{merge_desc, sort_by_pgno, sort_pgnos};

use crate::env::Env;
use crate::error::{ErrorKind, Result};
use crate::format::meta::{DbRecord, Meta};
use crate::format::page::{
    flags_of, is_overflow, ov_pages, overflow_data, Page, HDR, P_BRANCH, P_LEAF,
};
use crate::mmap::Map;
use std::cell::Cell;

/// Read access to the pages of one snapshot: all the tree layer needs to
/// search and walk a tree. (Public in a private module: a supertrait of the
/// sealed `Snapshot`, never nameable outside the crate.)
pub trait PageRead {
    /// A tree page (branch or leaf), its header checked.
    fn page(&self, pgno: u64) -> Result<Page<'_>>;
    /// The raw bytes of page `pgno`, not validated (for readers that check
    /// every field they use, like [`crate::format::page::plain_item`]).
    #[inline]
    fn page_bytes(&self, pgno: u64) -> Result<&[u8]> {
        self.page(pgno).map(|p| p.bytes())
    }
    /// `len` value bytes stored in the overflow run starting at `pgno`.
    fn overflow(&self, pgno: u64, len: usize) -> Result<&[u8]>;
    /// Start loading page `pgno` into the CPU's caches, if it is a
    /// committed page of the map (a hint: nothing happens otherwise).
    #[inline]
    fn prefetch(&self, _pgno: u64) {}
    /// The same for page bytes in hand (a page already read from the map;
    /// nothing for a dirty page).
    #[inline]
    fn prefetch_bytes(&self, _b: &[u8]) {}
    /// Whether no page of this view changes while it lives (a read
    /// transaction's snapshot): a cursor's path into it then stays true,
    /// and a seek may start from the leaf it stands on.
    #[inline]
    fn frozen(&self) -> bool {
        false
    }
}

/// Page buffers kept for the next writer, at most (16 MiB of 4 KiB pages).
const PAGE_POOL_MAX: usize = 4096;

/// The pages of one write transaction.
pub(crate) struct Pager<'env> {
    pub(crate) env: &'env Env,
    /// The map generation holding the base snapshot.
    map: &'env Map,
    /// Id the transaction commits as.
    pub(crate) txnid: u64,
    /// The meta page the transaction started from.
    pub(crate) base: Meta,
    /// Pages written in this transaction, by page number (runs under their first page).
    pub(crate) dirty: DirtyPages,
    /// Committed pages below this may be read without a check (see `Env::snapshot_bound`).
    bound: Cell<u64>,
    /// First page past the used part of the file.
    pub(crate) next_pgno: u64,
    /// Pages in the map.
    pub(crate) max_pgno: u64,
    /// Free pages held in memory.
    pub(crate) free: FreeState,
    /// Record of the free database as this transaction left it.
    pub(crate) free_db: DbRecord,
    /// Page buffers to reuse.
    pub(crate) spare: Vec<Box<[u8]>>,
    /// Leaf page and index of the last insert: the next one right after it
    /// is taken as part of an ascending run when choosing a split point.
    pub(crate) last_insert: (u64, usize),
    /// Changes of page identity so far (allocations, frees, copies on write):
    /// a cached path is valid while this has not moved.
    pub(crate) moves: u64,
    /// The path to the rightmost leaf of the tree the last APPEND put went
    /// to (all dirty), valid while `moves` equals the second field.
    pub(crate) append: Option<AppendCache>,
    /// Dirty pages that have left the dirty table (freed, or rolled back by
    /// a nested abort): while this has not moved, every page once dirty
    /// still is.
    pub(crate) lost: u64,
    /// The pages of the last path made wholly dirty, so that the next
    /// copy-on-write of a path through the same pages (the next put under
    /// the same branches, the next delete at a cursor) skips their lookups.
    pub(crate) dirty_path: DirtyPath,
    /// Pages of this transaction written to the data file before commit
    /// to bound its memory (`spill`): read from the map while not dirty,
    /// made dirty again in place when changed (`unspill`), its own when
    /// freed. Never shrinks: a page once spilled stays this transaction's.
    spilled: PgnoMap<()>,
    /// Dirty bytes kept in memory at most, before spilling (0: no limit).
    spill_at: usize,
    /// Puts so far (`tree::place` runs only for transactions that put
    /// many items per page of the tree).
    pub(crate) puts: u64,
    /// Spills so far (tests).
    pub(crate) spills: u64,
    /// Page splits so far: a path a put took still leads to its key while
    /// this has not moved (`tree::insert`).
    pub(crate) splits: u64,
    /// Operations since the last `spill::evict_own`.
    since_evict: u32,
    /// A root-to-leaf path for the next put to fill: kept, not zeroed
    /// again for every put (520 bytes).
    path: Option<Box<Path>>,
    /// A second one, for a cursor's put (its path and its sub-database's).
    path2: Option<Box<Path>>,
    /// WAL mode: the committed page each dirty page was copied from on
    /// write, so that the commit's record tells the page by its
    /// differences (`format/patch.rs`). Entries of pages freed or renumbered
    /// since may be stale: their base is still a page of the base
    /// snapshot, which only makes the difference larger.
    pub(crate) bases: Option<PgnoMap<u64>>,
}

/// Page numbers of a root-to-leaf path, every one dirty when `lost` was the
/// pager's.
#[derive(Clone, Copy)]
pub(crate) struct DirtyPath {
    pub(crate) pg: [u64; DIRTY_PATH_MAX],
    pub(crate) len: usize,
    pub(crate) lost: u64,
}

/// Deeper paths are rechecked below this many levels (trees deeper than 8
/// need billions of items).
pub(crate) const DIRTY_PATH_MAX: usize = 8;

impl DirtyPath {
    pub(crate) const NONE: DirtyPath = DirtyPath {
        pg: [0; DIRTY_PATH_MAX],
        len: 0,
        lost: u64::MAX,
    };

    /// How many leading pages of `pg` are known to be dirty.
    #[inline]
    pub(crate) fn known(&self, pg: &[u64], lost: u64) -> usize {
        if self.lost != lost {
            return 0;
        }
        let n = pg.len().min(self.len);
        pg[..n]
            .iter()
            .zip(&self.pg[..n])
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Remember the first `len` pages of `pg`, all dirty now.
    #[inline]
    pub(crate) fn set(&mut self, pg: &[u64; MAX_DEPTH], len: usize, lost: u64) {
        let n = len.min(DIRTY_PATH_MAX);
        // One fixed-size copy, not a `memcpy` call: the slots past `n`
        // mean nothing.
        self.pg.copy_from_slice(&pg[..DIRTY_PATH_MAX]);
        self.len = n;
        self.lost = lost;
    }
}

impl<'env> Pager<'env> {
    /// A pager for transaction `txnid` on top of `base`; readers may still
    /// see snapshots from `oldest` on.
    pub(crate) fn new(
        env: &'env Env,
        map: &'env Map,
        txnid: u64,
        base: Meta,
        bound: u64,
        oldest: u64,
    ) -> Self {
        Pager {
            env,
            map,
            txnid,
            base,
            dirty: DirtyPages::with_capacity(
                env.dirty_hint.load(std::sync::atomic::Ordering::Relaxed),
            ),
            bound: Cell::new(bound),
            next_pgno: base.last_pgno + 1,
            max_pgno: env.max_pgno(map),
            free: FreeState::new(oldest),
            free_db: base.free,
            spare: std::mem::take(&mut *env.page_pool.lock().unwrap()),
            last_insert: (0, usize::MAX),
            puts: 0,
            moves: 0,
            append: None,
            lost: 0,
            dirty_path: DirtyPath::NONE,
            spilled: PgnoMap::default(),
            spill_at: env.spill_at(),
            spills: 0,
            splits: 0,
            since_evict: 0,
            path: None,
            path2: None,
            bases: env.wal.is_some().then(PgnoMap::default),
        }
    }

    /// Page size.
    #[inline]
    #[allow(dead_code)]
    pub(crate) fn psize(&self) -> usize {
        self.env.psize
    }

    /// `len` bytes of the committed page run at `pgno`, straight from the
    /// map: never past the end of the data file.
    #[inline]
    pub(crate) fn committed(&self, pgno: u64, len: usize) -> Result<&[u8]> {
        let ps = self.env.psize;
        let b = self.bound.get();
        // (No division for the usual one-page read.)
        if pgno < 2 || pgno >= b || (len > ps && len.div_ceil(ps) as u64 > b - pgno) {
            let n = len.div_ceil(ps).max(1) as u64;
            reach(self.env, &self.bound, self.next_pgno - 1, pgno, n)?;
        }
        self.map.slice(pgno as usize * ps, len)
    }

    /// A page buffer (contents undefined).
    pub(crate) fn take_buf(&mut self) -> Box<[u8]> {
        match self.spare.pop() {
            Some(b) => b,
            None => vec![0u8; self.env.psize].into_boxed_slice(),
        }
    }

    /// Dirty pages changed numbers (`tree::place`): every cached path and
    /// position holding page numbers is stale.
    pub(crate) fn forget_paths(&mut self) {
        self.moves += 1;
        self.lost += 1;
        self.append = None;
        self.dirty_path = DirtyPath::NONE;
        self.last_insert = (0, usize::MAX);
    }

    /// Free `n` pages starting at `pg`.
    pub(crate) fn free_pages(&mut self, pg: u64, n: usize) {
        self.moves += 1;
        if let Some(buf) = self.dirty.remove(&pg) {
            self.lost += 1;
            if buf.len() == self.env.psize {
                self.spare.push(buf);
            }
            self.free.loose.extend(pg..pg + n as u64);
        } else if self.spilled.contains_key(&pg) {
            // Written by this transaction: no snapshot can see it.
            self.free.loose.extend(pg..pg + n as u64);
        } else {
            self.free.freed.extend(pg..pg + n as u64);
        }
    }

    /// The kept path (see `path`), or a new one.
    #[inline]
    pub(crate) fn take_path(&mut self) -> Box<Path> {
        self.path.take().unwrap_or_else(|| Box::new(Path::new()))
    }

    /// Keep `p` for the next put.
    #[inline]
    pub(crate) fn give_path(&mut self, p: Box<Path>) {
        self.path = Some(p);
    }

    /// Two kept paths (see `path2`), or new ones.
    #[inline]
    pub(crate) fn take_paths(&mut self) -> (Box<Path>, Box<Path>) {
        let second = self.path2.take().unwrap_or_else(|| Box::new(Path::new()));
        (self.take_path(), second)
    }

    /// Keep both for the next cursor put.
    #[inline]
    pub(crate) fn give_paths(&mut self, (p, q): (Box<Path>, Box<Path>)) {
        self.path = Some(p);
        self.path2 = Some(q);
    }

    /// End of the transaction: keep page buffers for the next writer, so it
    /// allocates and faults in none of them.
    pub(crate) fn release_buffers(&mut self) {
        let ps = self.env.psize;
        (self.env.dirty_hint).store(
            self.dirty.len().min(1 << 20),
            std::sync::atomic::Ordering::Relaxed,
        );
        let mut pool = std::mem::take(&mut self.spare);
        pool.extend(self.dirty.drain().filter(|b| b.len() == ps));
        pool.truncate(PAGE_POOL_MAX);
        *self.env.page_pool.lock().unwrap() = pool;
    }

    /// A nested transaction begins: what its abort restores. The dirty
    /// pages are not copied; each keeps its state before the child changes
    /// it (`DirtyPages`).
    pub(crate) fn save(&mut self) -> Saved {
        self.dirty.begin_child();
        Saved {
            next_pgno: self.next_pgno,
            free: self.free.clone(),
            free_db: self.free_db,
        }
    }

    /// The nested transaction of `s` aborts: go back to `s`.
    pub(crate) fn restore(&mut self, s: Saved) {
        self.append = None;
        self.lost += 1;
        self.dirty.abort_child();
        self.next_pgno = s.next_pgno;
        self.free = s.free;
        self.free_db = s.free_db;
    }

    /// The nested transaction of `s` commits: its changes stay.
    pub(crate) fn keep(&mut self, s: Saved) {
        drop(s);
        self.dirty.commit_child();
    }
}

/// Where the last APPEND put went: the tree (root and depth) and its last
/// leaf, every page of the path dirty when `moves` was the pager's.
#[derive(Clone, Copy)]
pub(crate) struct AppendCache {
    pub(crate) root: u64,
    pub(crate) depth: usize,
    pub(crate) leaf: u64,
    pub(crate) moves: u64,
}

/// The pager's state when a nested transaction began.
pub(crate) struct Saved {
    next_pgno: u64,
    free: FreeState,
    free_db: DbRecord,
}

impl PageRead for Pager<'_> {
    #[inline]
    fn prefetch_bytes(&self, b: &[u8]) {
        self.map.prefetch_slice(b);
    }
    #[inline]
    fn prefetch(&self, pgno: u64) {
        // (A dirty page's committed image may load for nothing: cheaper
        // than looking it up.)
        prefetch_page(self.map, self.env.psize, &self.bound, pgno);
    }
    #[inline]
    fn page(&self, pgno: u64) -> Result<Page<'_>> {
        // A dirty tree page was checked as it became dirty (`copy_to_new`,
        // `unspill`) or made here, and is kept well-formed by the edits:
        // no second header check at every read (a descent reads each of
        // its pages so); an overflow run is still no tree page.
        if let Some(b) = self.dirty.get(&pgno) {
            return if flags_of(b) & (P_BRANCH | P_LEAF) != 0 {
                Ok(Page::edited(b))
            } else {
                Err(ErrorKind::Corrupted.into())
            };
        }
        Page::new(self.committed(pgno, self.env.psize)?)
    }
    // Always inlined: a descent's cost then does not depend on how the
    // crate's code happens to be split into codegen units (`mdb-bench
    // instr` moved by 20 instructions a put or a FIRST with it).
    #[inline(always)]
    fn page_bytes(&self, pgno: u64) -> Result<&[u8]> {
        if let Some(b) = self.dirty.get(&pgno) {
            return Ok(b);
        }
        self.committed(pgno, self.env.psize)
    }
    fn overflow(&self, pgno: u64, len: usize) -> Result<&[u8]> {
        if let Some(b) = self.dirty.get(&pgno) {
            return overflow_data(b)
                .get(..len)
                .ok_or(ErrorKind::Corrupted.into());
        }
        let b = self.committed(pgno, HDR + len)?;
        if !is_overflow(b) {
            return Err(ErrorKind::Corrupted.into());
        }
        Ok(overflow_data(b))
    }
}

/// [`PageRead::prefetch`] of a committed page: only below `bound`, the
/// pages known to lie in the data file.
#[inline]
fn prefetch_page(map: &Map, ps: usize, bound: &Cell<u64>, pgno: u64) {
    if pgno >= 2 && pgno < bound.get() {
        map.prefetch(pgno as usize * ps, ps);
    }
}

/// Committed pages of a read snapshot at `meta`, bounded by the data file.
pub(crate) struct MapView<'env> {
    pub(crate) env: &'env Env,
    /// The map generation holding the snapshot.
    pub(crate) map: &'env Map,
    /// Pages below this may be read without a check.
    pub(crate) bound: Cell<u64>,
    /// Last page of the snapshot.
    pub(crate) last: u64,
}

impl PageRead for MapView<'_> {
    #[inline]
    fn prefetch_bytes(&self, b: &[u8]) {
        self.map.prefetch_slice(b);
    }
    #[inline]
    fn prefetch(&self, pgno: u64) {
        prefetch_page(self.map, self.env.psize, &self.bound, pgno);
    }
    #[inline]
    fn page(&self, pgno: u64) -> Result<Page<'_>> {
        if pgno >= self.bound.get() || pgno < 2 {
            reach(self.env, &self.bound, self.last, pgno, 1)?;
        }
        let ps = self.env.psize;
        Page::new(self.map.slice(pgno as usize * ps, ps)?)
    }
    #[inline(always)]
    fn page_bytes(&self, pgno: u64) -> Result<&[u8]> {
        if pgno >= self.bound.get() || pgno < 2 {
            reach(self.env, &self.bound, self.last, pgno, 1)?;
        }
        let ps = self.env.psize;
        self.map.slice(pgno as usize * ps, ps)
    }
    fn overflow(&self, pgno: u64, len: usize) -> Result<&[u8]> {
        let ps = self.env.psize;
        let need = ov_pages(ps, len) as u64;
        let b = self.bound.get();
        if pgno < 2 || pgno >= b || need > b - pgno {
            reach(self.env, &self.bound, self.last, pgno, need)?;
        }
        let b = self.map.slice(pgno as usize * ps, HDR + len)?;
        if !is_overflow(b) {
            return Err(ErrorKind::Corrupted.into());
        }
        Ok(overflow_data(b))
    }
}

/// The slow path of a page access at or past `bound`: `PageNotFound` unless
/// pages `pgno..pgno + n` are in `2..=last`; `Corrupted` if they are not
/// all in the data file, whose length is re-read first (another process's
/// writer may have extended it). Raises `bound` to what the file now holds.
#[cold]
#[inline(never)]
fn reach(env: &Env, bound: &Cell<u64>, last: u64, pgno: u64, n: u64) -> Result<()> {
    let end = pgno.checked_add(n).ok_or(ErrorKind::PageNotFound)?;
    if pgno < 2 || end > last.saturating_add(1) {
        return Err(ErrorKind::PageNotFound.into());
    }
    let b = env.refresh_file_pages()?.min(last.saturating_add(1));
    bound.set(b);
    if end > b {
        return Err(ErrorKind::Corrupted.into());
    }
    Ok(())
}
