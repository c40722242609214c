//! Meta pages and database records (lmdb-format.md §3, §4).

use crate::error::{ErrorKind, Result};
use crate::format::flags::{DUPFIXED, DUPSORT, INTEGERDUP, REVERSEDUP};
use crate::format::page::{
    rd16, rd32, rd64, wr16, wr32, wr64, Header, HDR, MAX_KEY_SIZE, P_INVALID, P_META,
};

/// Magic number at meta page offset 16.
pub const MAGIC: u32 = 0xBEEF_C0DE;
/// Data file format version.
pub const VERSION: u32 = 1;
/// The version field of both meta pages while a write-ahead log may hold
/// commits the data file lacks: LMDB 0.9 refuses such a file
/// (`MDB_VERSION_MISMATCH`) instead of reading a stale or torn snapshot.
/// The format is otherwise [`VERSION`]'s; a clean close or a checkpoint
/// on demand writes [`VERSION`] back.
pub const VERSION_WAL: u32 = 0x5741_4C01;
/// Offset of the version field in a meta page.
pub const VERSION_OFF: u64 = 20;
/// Offset of the part of a meta page rewritten at each commit.
pub const META_WRITE_OFF: usize = 32;
/// Length of that part (mapsize through txnid).
pub const META_WRITE_LEN: usize = 120;
/// Bytes of a meta page that carry data.
pub const META_LEN: usize = 152;
/// Size of a database record.
pub const DB_RECORD_LEN: usize = 48;
/// Deepest tree a cursor can walk (LMDB's CURSOR_STACK): a record claiming
/// a deeper one is corrupt.
pub const MAX_DEPTH: usize = 32;

/// A 48-byte database record: the root and statistics of one B-tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbRecord {
    /// FREE record in the meta: page size. Otherwise 0 (DUPFIXED sub-DB: value size).
    pub pad: u32,
    /// Database flags.
    pub flags: u16,
    /// Tree height, 0 when empty.
    pub depth: u16,
    /// Branch pages.
    pub branch_pages: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Overflow pages.
    pub overflow_pages: u64,
    /// Data items.
    pub entries: u64,
    /// Root page, `P_INVALID` when empty.
    pub root: u64,
}

impl DbRecord {
    /// An empty tree with the given flags.
    pub const fn empty(flags: u16) -> DbRecord {
        DbRecord {
            pad: 0,
            flags,
            depth: 0,
            branch_pages: 0,
            leaf_pages: 0,
            overflow_pages: 0,
            entries: 0,
            root: P_INVALID,
        }
    }

    /// Decode a record from bytes that may be anything: `Corrupted` unless
    /// they are exactly [`DB_RECORD_LEN`] long and the tree they describe
    /// is no deeper than [`MAX_DEPTH`].
    pub fn read(b: &[u8]) -> Result<DbRecord> {
        match b.len() {
            DB_RECORD_LEN => {
                let r = DbRecord::decode(b);
                if r.depth as usize > MAX_DEPTH {
                    return Err(ErrorKind::Corrupted.into());
                }
                Ok(r)
            }
            _ => Err(ErrorKind::Corrupted.into()),
        }
    }

    /// Decode from 48 bytes (at least 48 long: the caller has checked the
    /// size; [`DbRecord::read`] checks it).
    pub fn decode(b: &[u8]) -> DbRecord {
        DbRecord {
            pad: rd32(b, 0),
            flags: rd16(b, 4),
            depth: rd16(b, 6),
            branch_pages: rd64(b, 8),
            leaf_pages: rd64(b, 16),
            overflow_pages: rd64(b, 24),
            entries: rd64(b, 32),
            root: rd64(b, 40),
        }
    }

    /// Whether the record's flags are a combination LMDB can read: the
    /// flags about duplicates need DUPSORT (CVE-2019-16224: DUPFIXED alone
    /// made LMDB treat leaves as LEAF2), and the tree is no deeper than a
    /// cursor can walk.
    pub fn plausible(&self) -> bool {
        let dup_only = DUPFIXED | INTEGERDUP | REVERSEDUP;
        (self.flags & dup_only == 0 || self.flags & DUPSORT != 0)
            && self.depth as usize <= MAX_DEPTH
    }

    /// The record of a key's duplicates sub-database, read from a node: as
    /// [`DbRecord::read`], and for DUPFIXED with a value size a value can
    /// have (1 to [`MAX_KEY_SIZE`]): every LEAF2 offset is a multiple of it,
    /// and a forged one would make pages hold far more than they do.
    pub fn read_sub(b: &[u8]) -> Result<DbRecord> {
        let r = DbRecord::read(b)?;
        if r.flags & DUPFIXED != 0 && !(1..=MAX_KEY_SIZE as u32).contains(&r.pad) {
            return Err(ErrorKind::Corrupted.into());
        }
        Ok(r)
    }

    /// Encode into 48 bytes.
    pub fn encode(&self) -> [u8; 48] {
        let mut b = [0u8; 48];
        wr32(&mut b, 0, self.pad);
        wr16(&mut b, 4, self.flags);
        wr16(&mut b, 6, self.depth);
        wr64(&mut b, 8, self.branch_pages);
        wr64(&mut b, 16, self.leaf_pages);
        wr64(&mut b, 24, self.overflow_pages);
        wr64(&mut b, 32, self.entries);
        wr64(&mut b, 40, self.root);
        b
    }
}

/// What makes a page a meta page, read as it is (the checker judges it
/// field by field; [`Meta::decode`] accepts or refuses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaHeader {
    /// Page number field (0 or 1).
    pub pgno: u64,
    /// Page flags ([`P_META`]).
    pub flags: u16,
    /// [`MAGIC`] in a meta page of this byte order.
    pub magic: u32,
    /// Data file format ([`VERSION`]).
    pub version: u32,
}

impl MetaHeader {
    /// The header of the meta page `b`, if `b` holds a whole meta page's
    /// data ([`META_LEN`] bytes).
    pub fn read(b: &[u8]) -> Option<MetaHeader> {
        Some(MetaHeader::of(b.first_chunk()?))
    }

    fn of(b: &[u8; META_LEN]) -> MetaHeader {
        let h = Header::read(b).unwrap_or_default();
        MetaHeader {
            pgno: h.pgno,
            flags: h.flags,
            magic: rd32(b, 16),
            version: rd32(b, 20),
        }
    }
}

/// The decoded content of one meta page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Fixed map address (FIXEDMAP), usually 0.
    pub address: u64,
    /// Map size in bytes (advisory).
    pub mapsize: u64,
    /// The free-page database.
    pub free: DbRecord,
    /// The main database.
    pub main: DbRecord,
    /// Highest page number allocated.
    pub last_pgno: u64,
    /// Transaction that wrote this meta.
    pub txnid: u64,
}

impl Meta {
    /// Page size recorded in the FREE record's pad.
    pub fn psize(&self) -> u32 {
        self.free.pad
    }

    /// Decode and validate the first [`META_LEN`] bytes of a meta page:
    /// its header ([`Meta::check_header`]) and the fields a commit writes
    /// ([`Meta::implausible`]), both `Invalid` when wrong.
    pub fn decode(b: &[u8]) -> Result<Meta> {
        let b = Meta::check_header(b)?;
        let m = Meta::fields(b);
        if m.implausible().is_some() {
            return Err(ErrorKind::Invalid.into());
        }
        Ok(m)
    }

    /// What both meta pages of a file must have for it to be opened, as
    /// LMDB requires of both: the META flag, [`MAGIC`], a known version
    /// (else `VersionMismatch`) and a page size of a power of two in
    /// 512..=32768 (a 32-bit LMDB file, with 4-byte fields, shows an
    /// implausible one here). The rest is judged on the meta read.
    pub fn check_header(b: &[u8]) -> Result<&[u8; META_LEN]> {
        let Some(b) = b.first_chunk::<META_LEN>() else {
            return Err(ErrorKind::Invalid.into());
        };
        let h = MetaHeader::of(b);
        if h.flags & P_META == 0 || h.magic != MAGIC {
            return Err(ErrorKind::Invalid.into());
        }
        if h.version != VERSION && h.version != VERSION_WAL {
            return Err(ErrorKind::VersionMismatch.into());
        }
        let ps = Meta::fields(b).psize();
        if !(512..=32768).contains(&ps) || !ps.is_power_of_two() {
            return Err(ErrorKind::Invalid.into());
        }
        Ok(b)
    }

    /// Why the fields a commit writes cannot be a snapshot (`None` when they
    /// can): no page past the metas counted, a free or main record that is
    /// not [`DbRecord::plausible`], or a main record whose value size does
    /// not fit a page. Such a meta is never read (the other
    /// one is, as LMDB reads the other one of an inactive meta with these
    /// fields); `mdb check` names the same reasons.
    pub fn implausible(&self) -> Option<&'static str> {
        if self.last_pgno < 1 {
            Some("last_pgno is 0")
        } else if !self.free.plausible() {
            Some("the free database's record has flags or a depth LMDB never writes")
        } else if !self.main.plausible() {
            Some("the main database's record has flags or a depth LMDB never writes")
        } else if self.main.pad > self.psize().saturating_sub(HDR as u32) {
            // A DUPFIXED value size (LMDB writes 0 here) past a page.
            Some("the main database's record has a value size (md_pad) larger than a page")
        } else {
            None
        }
    }

    /// The fields of a meta page's first [`META_LEN`] bytes, unjudged.
    pub(crate) fn fields(b: &[u8; META_LEN]) -> Meta {
        Meta {
            address: rd64(b, 24),
            mapsize: rd64(b, 32),
            free: DbRecord::decode(&b[40..88]),
            main: DbRecord::decode(&b[88..136]),
            last_pgno: rd64(b, 136),
            txnid: rd64(b, 144),
        }
    }

    /// The 120 bytes written at page offset 32 by a commit.
    pub fn encode_update(&self) -> [u8; META_WRITE_LEN] {
        let mut b = [0u8; META_WRITE_LEN];
        wr64(&mut b, 0, self.mapsize);
        b[8..56].copy_from_slice(&self.free.encode());
        b[56..104].copy_from_slice(&self.main.encode());
        wr64(&mut b, 104, self.last_pgno);
        wr64(&mut b, 112, self.txnid);
        b
    }

    /// A whole meta page for page number `pgno` (used when creating a file).
    pub fn encode_page(&self, pgno: u64, psize: usize) -> Vec<u8> {
        let mut b = vec![0u8; psize];
        wr64(&mut b, 0, pgno);
        wr16(&mut b, 10, P_META);
        wr32(&mut b, 16, MAGIC);
        wr32(&mut b, 20, VERSION);
        wr64(&mut b, 24, self.address);
        b[META_WRITE_OFF..META_WRITE_OFF + META_WRITE_LEN].copy_from_slice(&self.encode_update());
        b
    }

    /// The meta of a brand-new environment.
    pub fn new_env(psize: u32, mapsize: u64, env_flags: u16) -> Meta {
        let mut free = DbRecord::empty(0x08 | env_flags);
        free.pad = psize;
        Meta {
            address: 0,
            mapsize,
            free,
            main: DbRecord::empty(0),
            last_pgno: 1,
            txnid: 0,
        }
    }
}

/// The current meta of a file from its two meta pages, and its slot. A
/// commit writes txnid `t` into meta page `t & 1`, so a meta in the other
/// slot is damaged: the newer of the metas in their own slot wins, and only
/// if neither is, the newer of the two (meta 0 on a tie). LMDB, which does
/// not check, reads the same meta with a lock file in every case but the
/// last.
pub(crate) fn pick_meta(m0: Result<Meta>, m1: Result<Meta>) -> Result<(usize, Meta)> {
    let rank = |slot: u64, m: &Meta| (m.txnid & 1 == slot, m.txnid);
    match (m0, m1) {
        (Ok(a), Ok(b)) if rank(1, &b) > rank(0, &a) => Ok((1, b)),
        (Ok(a), _) => Ok((0, a)),
        (Err(_), Ok(b)) => Ok((1, b)),
        (Err(e), Err(_)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_meta_bytes() {
        let m = Meta::new_env(4096, 64 << 20, 0);
        let p = m.encode_page(0, 4096);
        assert_eq!(&p[16..20], &[0xde, 0xc0, 0xef, 0xbe]);
        assert_eq!(&p[0x28..0x30], &[0, 0x10, 0, 0, 8, 0, 0, 0]);
        assert_eq!(rd64(&p, 80), P_INVALID);
        assert_eq!(rd64(&p, 128), P_INVALID);
        assert_eq!(rd64(&p, 136), 1);
        assert_eq!(Meta::decode(&p).unwrap(), m);
    }

    #[test]
    fn records_of_any_length() {
        let r = DbRecord::empty(0x04);
        assert_eq!(DbRecord::read(&r.encode()), Ok(r));
        assert_eq!(
            DbRecord::read(&r.encode()[..47]).map_err(|e| e.kind()),
            Err(ErrorKind::Corrupted)
        );
        assert_eq!(
            DbRecord::read(&[0u8; 49]).map_err(|e| e.kind()),
            Err(ErrorKind::Corrupted)
        );
        assert_eq!(
            DbRecord::read(&[]).map_err(|e| e.kind()),
            Err(ErrorKind::Corrupted)
        );
        assert_eq!(MetaHeader::read(&[0u8; META_LEN - 1]), None);
        let h = MetaHeader::read(&Meta::new_env(4096, 1 << 20, 0).encode_page(1, 4096)).unwrap();
        assert_eq!(
            (h.pgno, h.flags, h.magic, h.version),
            (1, P_META, MAGIC, VERSION)
        );
    }

    #[test]
    fn implausible_judges_a_page_size_below_the_header() {
        // Found by the fuzz smoke run: a meta whose page size (the free
        // record's pad) is under 16 made the value-size check underflow.
        for ps in [0u32, 1, 15] {
            let mut m = Meta::new_env(4096, 1 << 20, 0);
            m.free.pad = ps;
            m.main.pad = 8;
            assert!(m.implausible().is_some(), "{ps}");
        }
    }

    #[test]
    fn rejects_bad_meta() {
        let m = Meta::new_env(4096, 1 << 20, 0);
        let mut p = m.encode_page(0, 4096);
        p[20] = 2;
        assert_eq!(
            Meta::decode(&p).map_err(|e| e.kind()),
            Err(ErrorKind::VersionMismatch)
        );
        let mut p = m.encode_page(0, 4096);
        p[16..20].copy_from_slice(&MAGIC.to_be_bytes());
        assert_eq!(
            Meta::decode(&p).map_err(|e| e.kind()),
            Err(ErrorKind::Invalid)
        );
        let mut p = m.encode_page(0, 4096);
        p[40..44].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            Meta::decode(&p).map_err(|e| e.kind()),
            Err(ErrorKind::Invalid)
        );
    }
}
