//! B+tree updates inside the write transaction: copy-on-write of the path,
//! insertion with page splits, deletion with rebalancing and merging.

use crate::cursor::check_key;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::format::cmp::CmpFn;
use crate::format::meta::DbRecord;
use crate::format::page::{
    self, edit, encode_branch, footprint, node_max, ov_pages, raw_key, rekey_branch, NodeData,
    Page, F_BIGDATA, F_SUBDATA, HDR, P_BRANCH, P_INVALID, P_LEAF, P_LEAF2, P_OVERFLOW,
};
use crate::pager::PageRead;
use crate::tree::{descend, Path};
use crate::txn::RwTxn;
use std::cmp::Ordering;

/// Flags of a put (LMDB's `MDB_*` write flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct WriteFlags(pub u32);

impl WriteFlags {
    /// Insert or replace.
    pub const EMPTY: WriteFlags = WriteFlags(0);
    /// `MDB_NOOVERWRITE`: fail with `KeyExist` if the key exists.
    pub const NO_OVERWRITE: WriteFlags = WriteFlags(0x10);
    /// `MDB_NODUPDATA`: (DUPSORT only) fail if the pair exists.
    pub const NO_DUP_DATA: WriteFlags = WriteFlags(0x20);
    /// `MDB_CURRENT`: replace the item at the cursor.
    pub const CURRENT: WriteFlags = WriteFlags(0x40);
    /// `MDB_RESERVE`: reserve space for the value (see [`RwTxn::reserve`]).
    pub const RESERVE: WriteFlags = WriteFlags(0x10000);
    /// `MDB_APPEND`: the key is greater than every key (fast path, no split copying);
    /// `KeyExist` otherwise.
    pub const APPEND: WriteFlags = WriteFlags(0x20000);
    /// `MDB_APPENDDUP`: (DUPSORT only) append a duplicate.
    pub const APPEND_DUP: WriteFlags = WriteFlags(0x40000);

    /// Whether every flag of `o` is set.
    pub fn contains(self, o: WriteFlags) -> bool {
        self.0 & o.0 == o.0
    }
}

impl std::ops::BitOr for WriteFlags {
    type Output = WriteFlags;
    fn bitor(self, o: WriteFlags) -> WriteFlags {
        WriteFlags(self.0 | o.0)
    }
}

/// Below this many used bytes (per mille of the page) a page is rebalanced.
const FILL_THRESHOLD: usize = 250;

/// A B+tree being modified: its record and how its keys compare. Named
/// databases, the main and free databases, and DUPSORT sub-databases are all
/// trees; the caller stores `rec` back where it came from.
#[derive(Clone, Copy)]
pub(crate) struct Tree {
    pub(crate) rec: DbRecord,
    pub(crate) cmp: CmpFn,
    /// For DUPSORT databases: how duplicate values compare.
    pub(crate) dups: Option<CmpFn>,
    /// Key size of a tree with LEAF2 leaves (DUPFIXED sub-databases), else 0.
    pub(crate) fixed: usize,
}

impl<'env> RwTxn<'env> {
    fn check_usable(&self, db: Database) -> Result<DbRecord> {
        if self.broken.get() {
            return Err(Error::BadTxn);
        }
        // Every public change passes here: detached cursors must re-sync.
        self.gen.set(self.gen.get() + 1);
        if db == Database::FREE {
            return Err(Error::Os(libc::EINVAL));
        }
        self.rec(db)
    }

    /// The tree of `db` as of now.
    pub(crate) fn tree(&self, db: Database) -> Result<Tree> {
        let rec = self.rec(db)?;
        let (cmp, dups) = self.env.comparators(db, rec.flags);
        Ok(Tree {
            rec,
            cmp,
            dups,
            fixed: 0,
        })
    }

    /// Store `val` under `key`. In a DUPSORT database, add `val` to the
    /// key's sorted values.
    ///
    /// In a DUPSORT database an empty value may be a key's only value, as
    /// in LMDB; an empty value beside other values is refused with
    /// [`Error::BadValSize`] in both orders (LMDB refuses adding it to a key
    /// with values, but silently drops it when a value is added to it).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Env, Database, Error, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"one", WriteFlags::EMPTY)?;
    /// assert_eq!(w.put(Database::MAIN, b"k", b"two", WriteFlags::NO_OVERWRITE), Err(Error::KeyExist));
    /// assert_eq!(w.get(Database::MAIN, b"k")?, Some(&b"one"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn put(&mut self, db: Database, key: &[u8], val: &[u8], flags: WriteFlags) -> Result<()> {
        if flags.contains(WriteFlags::RESERVE) {
            self.reserve(db, key, val.len(), flags)?
                .copy_from_slice(val);
            return Ok(());
        }
        self.put_value(db, key, Value::Bytes(val), flags)
    }

    /// Insert `key` only if it is absent (`MDB_NOOVERWRITE`). Returns the
    /// existing value (the first one, for DUPSORT), untouched, when the key
    /// is already there.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Env, Database};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// assert_eq!(w.put_new(Database::MAIN, b"k", b"one")?, None);
    /// assert_eq!(w.put_new(Database::MAIN, b"k", b"two")?, Some(&b"one"[..]));
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn put_new(&mut self, db: Database, key: &[u8], val: &[u8]) -> Result<Option<&[u8]>> {
        match self.put(db, key, val, WriteFlags::NO_OVERWRITE) {
            Ok(()) => Ok(None),
            Err(Error::KeyExist) => {
                let t = self.tree(db)?;
                crate::tree::get(&*self, &t.rec, t.cmp, key)
            }
            Err(e) => Err(e),
        }
    }

    /// Reserve `len` bytes for the value of `key` and hand them back to fill
    /// in (`MDB_RESERVE`). Not allowed on DUPSORT databases (`EINVAL`).
    pub fn reserve(
        &mut self,
        db: Database,
        key: &[u8],
        len: usize,
        flags: WriteFlags,
    ) -> Result<&mut [u8]> {
        self.put_value(db, key, Value::Reserve(len), flags)?;
        self.value_mut(db, key)
    }

    /// Mutable access to the (dirty) value of `key`, right after a put.
    pub(crate) fn value_mut(&mut self, db: Database, key: &[u8]) -> Result<&mut [u8]> {
        let t = self.tree(db)?;
        let mut path = Path::new();
        let (i, exact) = descend(&*self, &t.rec, t.cmp, key, &mut path)?;
        if !exact {
            return Err(Error::NotFound);
        }
        let leaf = path.pg[path.leaf()];
        let n = self.page(leaf)?.node(i)?;
        if n.flags() & F_BIGDATA != 0 {
            let (pg, len) = (n.ov_pgno(), n.dsize());
            let run = self.pg.dirty.get_mut(&pg).ok_or(Error::Corrupted)?;
            return Ok(&mut run[HDR..HDR + len]);
        }
        let buf = self.pg.dirty.get_mut(&leaf).ok_or(Error::Corrupted)?;
        Ok(edit::data_mut(buf, i))
    }

    fn put_value(
        &mut self,
        db: Database,
        key: &[u8],
        val: Value<'_>,
        flags: WriteFlags,
    ) -> Result<()> {
        self.check_usable(db)?;
        check_key(key)?;
        let mut t = self.tree(db)?;
        let r = if t.dups.is_some() {
            match val {
                Value::Bytes(v) => self.dup_put(&mut t, key, v, flags),
                Value::Reserve(_) => Err(Error::Os(libc::EINVAL)),
            }
        } else {
            self.put_in_tree(&mut t, key, val, flags)
        };
        self.set_rec(db, t.rec);
        self.fail_on_fatal(r)
    }

    /// Put into a plain (not DUPSORT) tree, placing large values in overflow pages.
    pub(crate) fn put_in_tree(
        &mut self,
        t: &mut Tree,
        key: &[u8],
        val: Value<'_>,
        flags: WriteFlags,
    ) -> Result<()> {
        check_key(key)?;
        let len = val.len();
        if len > u32::MAX as usize {
            return Err(Error::BadValSize);
        }
        if t.rec.flags & crate::format::flags::INTEGERKEY != 0 && key.len() != 4 && key.len() != 8 {
            return Err(Error::BadValSize);
        }
        let ps = self.env.psize;
        let data = if page::NODE_HDR + key.len() + len > node_max(ps) {
            // Find the insert point first so a KeyExist failure allocates nothing.
            self.precheck(t, key, flags)?;
            let n = ov_pages(ps, len);
            let pg = self.alloc(n)?;
            let mut run = vec![0u8; n * ps].into_boxed_slice();
            page::wr64(&mut run, 0, pg);
            page::wr16(&mut run, 10, P_OVERFLOW);
            page::wr32(&mut run, 12, n as u32);
            if let Value::Bytes(v) = val {
                run[HDR..HDR + len].copy_from_slice(v);
            }
            self.pg.dirty.insert(pg, run);
            t.rec.overflow_pages += n as u64;
            NodeData::Overflow(pg, len)
        } else {
            match val {
                Value::Bytes(v) => NodeData::Inline(v),
                Value::Reserve(n) => NodeData::Reserve(n),
            }
        };
        self.tree_put(t, key, data, flags)
    }

    /// Mark the transaction broken on errors that may leave it half-done.
    pub(crate) fn fail_on_fatal<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            if !matches!(
                e,
                Error::KeyExist
                    | Error::NotFound
                    | Error::BadValSize
                    | Error::Incompatible
                    | Error::Os(libc::EINVAL)
            ) {
                self.broken.set(true);
            }
        }
        r
    }

    /// Fail early with `KeyExist` for NOOVERWRITE/APPEND conflicts.
    fn precheck(&self, t: &Tree, key: &[u8], flags: WriteFlags) -> Result<()> {
        let mut path = Path::new();
        let (i, exact) = descend(self, &t.rec, t.cmp, key, &mut path)?;
        if exact && flags.contains(WriteFlags::NO_OVERWRITE) {
            return Err(Error::KeyExist);
        }
        if flags.contains(WriteFlags::APPEND) && path.len > 0 && !self.is_append(&path, i, exact)? {
            return Err(Error::KeyExist);
        }
        Ok(())
    }

    /// Whether inserting at leaf index `i` appends past the last key of the tree.
    pub(crate) fn is_append(&self, path: &Path, i: usize, exact: bool) -> Result<bool> {
        if exact {
            return Ok(false);
        }
        for l in 0..path.len {
            let p = self.page(path.pg[l])?;
            let last = if l == path.leaf() {
                p.len()
            } else {
                p.len() - 1
            };
            let at = if l == path.leaf() { i } else { path.ix[l] };
            if at != last {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Insert or replace a leaf node (the value is already placed if it is an overflow run).
    pub(crate) fn tree_put(
        &mut self,
        t: &mut Tree,
        key: &[u8],
        data: NodeData<'_>,
        flags: WriteFlags,
    ) -> Result<()> {
        if t.rec.root == P_INVALID {
            let pg = self.new_page(P_LEAF)?;
            let buf = self.pg.dirty.get_mut(&pg).unwrap();
            if t.fixed > 0 {
                edit::init_leaf2(buf, pg, P_LEAF | P_LEAF2, t.fixed);
                if !edit::insert_leaf2(buf, 0, key) {
                    return Err(Error::BadValSize);
                }
            } else {
                edit::insert_leaf(buf, 0, key, data);
            }
            t.rec.root = pg;
            t.rec.depth = 1;
            t.rec.leaf_pages = 1;
            t.rec.entries = 1;
            return Ok(());
        }
        let mut path = Path::new();
        let append = flags.contains(WriteFlags::APPEND);
        let (i, exact) = if append && t.fixed == 0 {
            match self.descend_last(t, key, &mut path)? {
                Some(found) => found,
                None => {
                    self.free_new_overflow(t, data)?;
                    return Err(Error::KeyExist);
                }
            }
        } else {
            descend(&*self, &t.rec, t.cmp, key, &mut path)?
        };
        if t.fixed > 0 {
            // LEAF2 trees hold keys only (the values of a DUPFIXED key).
            if exact {
                return Err(Error::KeyExist);
            }
            self.touch_path(t, &mut path)?;
            let leaf = path.pg[path.leaf()];
            t.rec.entries += 1;
            if edit::insert_leaf2(self.pg.dirty.get_mut(&leaf).unwrap(), i, key) {
                self.pg.last_insert = (leaf, i);
                return Ok(());
            }
            let rightmost = append || self.is_append(&path, i, false)?;
            let seq = self.ascending(leaf, i);
            let hint = Hint {
                rightmost,
                ascending: seq,
            };
            return self.insert(t, &path, path.leaf(), i, key, hint);
        }
        if exact {
            let n = self.page(path.pg[path.leaf()])?.node(i)?;
            if flags.contains(WriteFlags::NO_OVERWRITE) || append {
                self.free_new_overflow(t, data)?;
                return Err(Error::KeyExist);
            }
            if (n.flags() & F_SUBDATA != 0) != matches!(data, NodeData::SubDb(_)) {
                self.free_new_overflow(t, data)?;
                return Err(Error::Incompatible);
            }
        }
        self.touch_path(t, &mut path)?;
        let leaf = path.pg[path.leaf()];
        if exact {
            let (old_fp, old_big, old_dsize, old_ov) = {
                let n = self.page(leaf)?.node(i)?;
                let big = n.flags() & F_BIGDATA != 0;
                (
                    n.footprint(),
                    big,
                    n.dsize(),
                    if big { n.ov_pgno() } else { 0 },
                )
            };
            if old_big {
                self.free_overflow(t, old_ov)?;
            }
            let new_fp = footprint(key.len(), data.stored());
            let same_kind = !old_big && matches!(data, NodeData::Inline(_) | NodeData::Reserve(_));
            if same_kind && new_fp == old_fp && old_dsize == data.stored() {
                let buf = self.pg.dirty.get_mut(&leaf).unwrap();
                let d = edit::data_mut(buf, i);
                match data {
                    NodeData::Inline(v) => d.copy_from_slice(v),
                    NodeData::Reserve(_) => d.fill(0),
                    _ => unreachable!(),
                }
                return Ok(());
            }
            if let NodeData::SubDb(r) = data {
                let buf = self.pg.dirty.get_mut(&leaf).unwrap();
                edit::data_mut(buf, i).copy_from_slice(r);
                return Ok(());
            }
            edit::remove(self.pg.dirty.get_mut(&leaf).unwrap(), i);
        } else {
            t.rec.entries += 1;
        }
        // Common case: the node fits, no encoding or allocation needed.
        let buf = self.pg.dirty.get_mut(&leaf).unwrap();
        if edit::insert_leaf(buf, i, key, data) {
            self.pg.last_insert = (leaf, i);
            return Ok(());
        }
        let rightmost = append || (!exact && self.is_append(&path, i, false)?);
        let seq = !exact && self.ascending(leaf, i);
        let raw = encode_leaf(key, data);
        let hint = Hint {
            rightmost: rightmost || append,
            ascending: seq,
        };
        self.insert(t, &path, path.leaf(), i, &raw, hint)
    }

    /// APPEND: walk the rightmost path, with no search, to the end of the
    /// last leaf. `None` when `key` sorts before the tree's last key; an
    /// exact match is reported on that last key.
    fn descend_last(&self, t: &Tree, key: &[u8], path: &mut Path) -> Result<Option<(usize, bool)>> {
        path.len = 0;
        let mut pgno = t.rec.root;
        loop {
            if path.len >= crate::tree::MAX_DEPTH {
                return Err(Error::CursorFull);
            }
            let p = self.page(pgno)?;
            let n = p.len();
            path.pg[path.len] = pgno;
            path.len += 1;
            if p.is_leaf() {
                if path.len != t.rec.depth as usize {
                    return Err(Error::Corrupted);
                }
                path.ix[path.len - 1] = n;
                if n == 0 {
                    return Ok(Some((0, false)));
                }
                return Ok(match t.cmp.compare(key, p.key(n - 1)?) {
                    Ordering::Greater => Some((n, false)),
                    Ordering::Equal => {
                        path.ix[path.len - 1] = n - 1;
                        Some((n - 1, true))
                    }
                    Ordering::Less => None,
                });
            }
            if n == 0 {
                return Err(Error::Corrupted);
            }
            path.ix[path.len - 1] = n - 1;
            pgno = p.node(n - 1)?.child();
        }
    }

    /// Whether an insert at index `i` of `leaf` continues an ascending run
    /// (the previous insert went to `i - 1` of the same page); records it.
    fn ascending(&mut self, leaf: u64, i: usize) -> bool {
        let seq = self.pg.last_insert == (leaf, i.wrapping_sub(1));
        self.pg.last_insert = (leaf, i);
        seq
    }

    /// Replace leaf node `i` of the (dirty) path with a new node, splitting if needed.
    pub(crate) fn replace_node(
        &mut self,
        t: &mut Tree,
        path: &Path,
        i: usize,
        key: &[u8],
        data: NodeData<'_>,
    ) -> Result<()> {
        let leaf = path.pg[path.leaf()];
        let buf = self.pg.dirty.get_mut(&leaf).ok_or(Error::Corrupted)?;
        edit::remove(buf, i);
        if edit::insert_leaf(buf, i, key, data) {
            return Ok(());
        }
        let raw = encode_leaf(key, data);
        self.insert(t, path, path.leaf(), i, &raw, Hint::NONE)
    }

    fn free_new_overflow(&mut self, t: &mut Tree, data: NodeData<'_>) -> Result<()> {
        if let NodeData::Overflow(pg, _) = data {
            self.free_overflow(t, pg)?;
        }
        Ok(())
    }

    /// Free the overflow run at `pg`, adjusting the count of `db`.
    fn free_overflow(&mut self, t: &mut Tree, pg: u64) -> Result<()> {
        let n = self.run_len(pg)?;
        t.rec.overflow_pages = t
            .rec
            .overflow_pages
            .checked_sub(n as u64)
            .ok_or(Error::Corrupted)?;
        self.pg.free_pages(pg, n);
        Ok(())
    }

    /// Make every page on `path` dirty (copy-on-write), fixing parent pointers.
    pub(crate) fn touch_path(&mut self, t: &mut Tree, path: &mut Path) -> Result<()> {
        for l in 0..path.len {
            let old = path.pg[l];
            if self.pg.dirty.contains_key(&old) {
                continue;
            }
            let new = self.alloc(1)?;
            let mut buf = self.pg.take_buf();
            let ps = self.env.psize;
            buf.copy_from_slice(self.pg.committed(old, ps)?);
            edit::set_pgno(&mut buf, new);
            self.pg.dirty.insert(new, buf);
            self.pg.free_pages(old, 1);
            path.pg[l] = new;
            if l == 0 {
                t.rec.root = new;
            } else {
                let parent = self.pg.dirty.get_mut(&path.pg[l - 1]).unwrap();
                edit::set_child(parent, path.ix[l - 1], new);
            }
        }
        Ok(())
    }

    /// Allocate and initialise an empty page.
    pub(crate) fn new_page(&mut self, flags: u16) -> Result<u64> {
        let pg = self.alloc(1)?;
        let mut buf = self.pg.take_buf();
        // A recycled buffer holds an old page: never let it reach the file.
        buf.fill(0);
        edit::init(&mut buf, pg, flags);
        self.pg.dirty.insert(pg, buf);
        Ok(pg)
    }

    /// Insert encoded node `raw` at index `i` of the page at `lvl` of `path`
    /// (all dirty), splitting pages up the path as needed.
    fn insert(
        &mut self,
        t: &mut Tree,
        path: &Path,
        lvl: usize,
        i: usize,
        raw: &[u8],
        hint: Hint,
    ) -> Result<()> {
        let pg = path.pg[lvl];
        let buf = self.pg.dirty.get_mut(&pg).unwrap();
        let fits = if Page::new(buf)?.is_leaf2() {
            edit::insert_leaf2(buf, i, raw)
        } else {
            edit::insert_raw(buf, i, raw)
        };
        if fits {
            return Ok(());
        }
        // Split: the entries, with the new one in place, as slices of a
        // copy of the page (the rebuild overwrites the page itself).
        let mut copy = self.pg.take_buf();
        copy.copy_from_slice(self.page(pg)?.bytes());
        let r = self.split(t, path, lvl, i, raw, hint, &copy);
        self.pg.spare.push(copy);
        r
    }

    /// Split page `lvl` of `path` (its bytes as they were in `copy`) with
    /// `raw` inserted at `i`, and file the new page in the parent.
    #[allow(clippy::too_many_arguments)]
    fn split(
        &mut self,
        t: &mut Tree,
        path: &Path,
        lvl: usize,
        i: usize,
        raw: &[u8],
        hint: Hint,
        copy: &[u8],
    ) -> Result<()> {
        let pg = path.pg[lvl];
        let p = Page::new(copy)?;
        let flags = p.flags();
        let branch = p.is_branch();
        let leaf2 = p.is_leaf2();
        let pad = p.pad();
        let mut nodes: Vec<&[u8]> = Vec::with_capacity(p.len() + 1);
        for j in 0..p.len() {
            if j == i {
                nodes.push(raw);
            }
            nodes.push(p.raw_entry(j)?);
        }
        if i == p.len() {
            nodes.push(raw);
        }
        let cap = self.env.psize - HDR;
        let s = split_at(&nodes, i, branch, leaf2, cap, hint).ok_or(Error::PageFull)?;
        let sep = if leaf2 {
            nodes[s].to_vec()
        } else {
            raw_key(nodes[s]).to_vec()
        };
        // A branch page's first node carries no key.
        let keyless;
        if branch {
            keyless = rekey_branch(nodes[s], &[]);
            nodes[s] = &keyless;
        }
        let right = self.new_page(flags)?;
        {
            let (left, rnodes) = nodes.split_at(s);
            let ok = if leaf2 {
                edit::init_leaf2(self.pg.dirty.get_mut(&right).unwrap(), right, flags, pad);
                edit::rebuild_leaf2(self.pg.dirty.get_mut(&pg).unwrap(), flags, left)
                    && edit::rebuild_leaf2(self.pg.dirty.get_mut(&right).unwrap(), flags, rnodes)
            } else {
                edit::rebuild(self.pg.dirty.get_mut(&pg).unwrap(), flags, left)
                    && edit::rebuild(self.pg.dirty.get_mut(&right).unwrap(), flags, rnodes)
            };
            if !ok {
                return Err(Error::PageFull);
            }
        }
        if branch {
            t.rec.branch_pages += 1;
        } else {
            t.rec.leaf_pages += 1;
        }
        if lvl == 0 {
            let root = self.new_page(P_BRANCH)?;
            let b = self.pg.dirty.get_mut(&root).unwrap();
            edit::insert_branch(b, 0, &[], pg);
            edit::insert_branch(b, 1, &sep, right);
            t.rec.root = root;
            t.rec.depth += 1;
            t.rec.branch_pages += 1;
            return Ok(());
        }
        let node = encode_branch(&sep, right);
        let up = Hint {
            rightmost: hint.rightmost,
            ascending: false,
        };
        self.insert(t, path, lvl - 1, path.ix[lvl - 1] + 1, &node, up)
    }

    /// Delete `key` (with every duplicate value in a DUPSORT database);
    /// returns whether it existed.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use mdb::{Env, Database, Txn, WriteFlags};
    /// let env = Env::open(dir.path())?;
    /// let mut w = env.write_txn()?;
    /// w.put(Database::MAIN, b"k", b"v", WriteFlags::EMPTY)?;
    /// assert!(w.del(Database::MAIN, b"k")?);
    /// assert!(!w.del(Database::MAIN, b"k")?);
    /// assert_eq!(w.get(Database::MAIN, b"k")?, None);
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn del(&mut self, db: Database, key: &[u8]) -> Result<bool> {
        self.check_usable(db)?;
        check_key(key)?;
        let mut t = self.tree(db)?;
        if db == Database::MAIN {
            // A named database's record goes with `delete_db`, never alone
            // (that would leak its pages).
            if let Some(n) = crate::tree::get_node(&*self, &t.rec, t.cmp, key)? {
                if n.flags() & F_SUBDATA != 0 {
                    return Err(Error::Incompatible);
                }
            }
        }
        let r = if t.dups.is_some() {
            self.dup_del(&mut t, key, None)
        } else {
            self.tree_del(&mut t, key)
        };
        self.set_rec(db, t.rec);
        self.fail_on_fatal(r)
    }

    /// DUPFIXED: store the values packed in `vals` (each `size` bytes) under
    /// `key` (`MDB_MULTIPLE`); returns how many were stored.
    pub fn put_multiple(
        &mut self,
        db: Database,
        key: &[u8],
        vals: &[u8],
        size: usize,
        flags: WriteFlags,
    ) -> Result<usize> {
        let rec = self.check_usable(db)?;
        if rec.flags & crate::format::flags::DUPFIXED == 0 {
            return Err(Error::Incompatible);
        }
        if size == 0 || !vals.len().is_multiple_of(size) {
            return Err(Error::BadValSize);
        }
        let mut n = 0;
        for v in vals.chunks(size) {
            match self.put(db, key, v, flags) {
                Ok(()) => n += 1,
                Err(Error::KeyExist) if flags.contains(WriteFlags::NO_DUP_DATA) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    /// Delete one value of a DUPSORT key (or the key if `val` is its value in
    /// another database); returns whether the pair existed.
    pub fn del_dup(&mut self, db: Database, key: &[u8], val: &[u8]) -> Result<bool> {
        self.check_usable(db)?;
        check_key(key)?;
        let mut t = self.tree(db)?;
        let r = if t.dups.is_some() {
            self.dup_del(&mut t, key, Some(val))
        } else {
            match crate::tree::get(&*self, &t.rec, t.cmp, key)? {
                Some(v) if v == val => self.tree_del(&mut t, key),
                _ => Ok(false),
            }
        };
        self.set_rec(db, t.rec);
        self.fail_on_fatal(r)
    }

    pub(crate) fn tree_del(&mut self, t: &mut Tree, key: &[u8]) -> Result<bool> {
        let mut path = Path::new();
        let (i, exact) = descend(&*self, &t.rec, t.cmp, key, &mut path)?;
        if !exact {
            return Ok(false);
        }
        self.remove_at(t, &mut path, i)?;
        Ok(true)
    }

    /// Remove the item at leaf index `i` of `path` (a position in `t` as it
    /// is now), then rebalance. Returns whether the tree kept its shape, so
    /// that `path` (made dirty) still leads to the leaf, now with the
    /// following item at `i`.
    fn remove_at(&mut self, t: &mut Tree, path: &mut Path, i: usize) -> Result<bool> {
        self.touch_path(t, path)?;
        let leaf = path.pg[path.leaf()];
        if self.page(leaf)?.is_leaf2() {
            edit::remove_leaf2(self.pg.dirty.get_mut(&leaf).unwrap(), i);
        } else {
            let n = self.page(leaf)?.node(i)?;
            if n.flags() & F_BIGDATA != 0 {
                let pg = n.ov_pgno();
                self.free_overflow(t, pg)?;
            }
            edit::remove(self.pg.dirty.get_mut(&leaf).unwrap(), i);
        }
        t.rec.entries -= 1;
        if !self.needs_rebalance(path, path.leaf())? {
            return Ok(true);
        }
        self.rebalance(t, path, path.leaf())?;
        Ok(false)
    }

    /// Delete the item a cursor of a plain (not DUPSORT) database is on,
    /// with no search from the root: `path` is its position in the tree as
    /// it is now. Returns the position of the following item when it is on
    /// the same leaf and the tree kept its shape (else the caller searches).
    pub(crate) fn del_at(&mut self, db: Database, path: &Path) -> Result<Option<Path>> {
        self.check_usable(db)?;
        let mut t = self.tree(db)?;
        if t.dups.is_some() || path.len == 0 || path.len != t.rec.depth as usize {
            return Err(Error::Os(libc::EINVAL));
        }
        let mut p = *path;
        let i = p.ix[p.leaf()];
        {
            let leaf = self.page(p.pg[p.leaf()])?;
            if i >= leaf.len() {
                return Err(Error::NotFound);
            }
            if db == Database::MAIN && !leaf.is_leaf2() && leaf.node(i)?.flags() & F_SUBDATA != 0 {
                // A named database's record goes with `delete_db` (see `del`).
                return Err(Error::Incompatible);
            }
        }
        let r = self.remove_at(&mut t, &mut p, i);
        self.set_rec(db, t.rec);
        let kept = self.fail_on_fatal(r)?;
        let on_leaf = kept && i < self.page(p.pg[p.leaf()])?.len();
        Ok(on_leaf.then_some(p))
    }

    /// Whether the page at `lvl` of `path` breaks the fill rules that
    /// [`RwTxn::rebalance`] restores (if not, it would change nothing).
    fn needs_rebalance(&self, path: &Path, lvl: usize) -> Result<bool> {
        let p = self.page(path.pg[lvl])?;
        let (len, branch) = (p.len(), p.is_branch());
        if lvl == 0 {
            return Ok(if branch { len == 1 } else { len == 0 });
        }
        let min_keys = if branch { 2 } else { 1 };
        Ok(p.used() * 1000 < FILL_THRESHOLD * (self.env.psize - HDR) || len < min_keys)
    }

    /// Restore fill rules after a removal at level `lvl` of `path`.
    fn rebalance(&mut self, t: &mut Tree, path: &Path, lvl: usize) -> Result<()> {
        let pg = path.pg[lvl];
        let (len, used, branch) = {
            let p = self.page(pg)?;
            (p.len(), p.used(), p.is_branch())
        };
        if lvl == 0 {
            if !branch && len == 0 {
                self.pg.free_pages(pg, 1);
                t.rec.root = P_INVALID;
                t.rec.depth = 0;
                t.rec.leaf_pages = 0;
            } else if branch && len == 1 {
                let child = self.page(pg)?.node(0)?.child();
                self.pg.free_pages(pg, 1);
                t.rec.root = child;
                t.rec.depth -= 1;
                t.rec.branch_pages -= 1;
            }
            return Ok(());
        }
        let min_keys = if branch { 2 } else { 1 };
        if used * 1000 >= FILL_THRESHOLD * (self.env.psize - HDR) && len >= min_keys {
            return Ok(());
        }
        let parent = path.pg[lvl - 1];
        let pi = path.ix[lvl - 1];
        let plen = self.page(parent)?.len();
        if plen < 2 {
            // A lone child under a non-root branch: let the parent level handle it.
            return self.rebalance(t, path, lvl - 1);
        }
        // Pair the page with a sibling: (left index, right index) in the parent.
        let (li, ri) = if pi > 0 { (pi - 1, pi) } else { (0, 1) };
        self.touch_child(parent, if pi > 0 { pi - 1 } else { 1 })?;
        let lpg = self.page(parent)?.node(li)?.child();
        let rpg = self.page(parent)?.node(ri)?.child();
        let sep = self.page(parent)?.key(ri)?.to_vec();
        // Both pages' nodes as slices of copies (the rebuild overwrites them).
        let mut lcopy = self.pg.take_buf();
        let mut rcopy = self.pg.take_buf();
        lcopy.copy_from_slice(self.page(lpg)?.bytes());
        rcopy.copy_from_slice(self.page(rpg)?.bytes());
        let r = self.merge_or_share(t, path, lvl, (li, ri), &sep, (&lcopy, &rcopy));
        self.pg.spare.push(lcopy);
        self.pg.spare.push(rcopy);
        r
    }

    /// Rebalance step for siblings `li`, `ri` of the parent at `lvl - 1`
    /// (copies of their bytes in `copies`, `sep` the right one's separator):
    /// merge them if they fit in one page, else share their nodes evenly.
    fn merge_or_share(
        &mut self,
        t: &mut Tree,
        path: &Path,
        lvl: usize,
        (li, ri): (usize, usize),
        sep: &[u8],
        copies: (&[u8], &[u8]),
    ) -> Result<()> {
        let parent = path.pg[lvl - 1];
        let lpg = self.page(parent)?.node(li)?.child();
        let rpg = self.page(parent)?.node(ri)?.child();
        let (l, r) = (Page::new(copies.0)?, Page::new(copies.1)?);
        let (flags, branch, leaf2) = (l.flags(), l.is_branch(), l.is_leaf2());
        let mut nodes: Vec<&[u8]> = Vec::with_capacity(l.len() + r.len());
        for j in 0..l.len() {
            nodes.push(l.raw_entry(j)?);
        }
        // The right page's keyless first branch node takes the separator.
        let rekeyed = match branch && !r.is_empty() {
            true => Some(rekey_branch(r.raw_entry(0)?, sep)),
            false => None,
        };
        for j in 0..r.len() {
            match &rekeyed {
                Some(k) if j == 0 => nodes.push(k),
                _ => nodes.push(r.raw_entry(j)?),
            }
        }
        let cap = self.env.psize - HDR;
        let total: usize = nodes.iter().map(|v| entry_cost(v, leaf2)).sum();
        if total <= cap {
            // Merge right into left and drop the right page.
            if !rebuild_any(self.pg.dirty.get_mut(&lpg).unwrap(), flags, leaf2, &nodes) {
                return Err(Error::PageFull);
            }
            self.pg.free_pages(rpg, 1);
            if branch {
                t.rec.branch_pages -= 1;
            } else {
                t.rec.leaf_pages -= 1;
            }
            edit::remove(self.pg.dirty.get_mut(&parent).unwrap(), ri);
            return self.rebalance(t, path, lvl - 1);
        }
        // Redistribute the nodes evenly between the two pages.
        let s = split_point(&nodes, branch, leaf2, cap).ok_or(Error::PageFull)?;
        let new_sep = if leaf2 {
            nodes[s].to_vec()
        } else {
            raw_key(nodes[s]).to_vec()
        };
        let keyless;
        if branch {
            keyless = rekey_branch(nodes[s], &[]);
            nodes[s] = &keyless;
        }
        let (left, right) = nodes.split_at(s);
        if !rebuild_any(self.pg.dirty.get_mut(&lpg).unwrap(), flags, leaf2, left)
            || !rebuild_any(self.pg.dirty.get_mut(&rpg).unwrap(), flags, leaf2, right)
        {
            return Err(Error::PageFull);
        }
        if new_sep != sep {
            // Replace the separator; a longer key may split the parent.
            edit::remove(self.pg.dirty.get_mut(&parent).unwrap(), ri);
            let node = encode_branch(&new_sep, rpg);
            self.insert(t, path, lvl - 1, ri, &node, Hint::NONE)?;
        }
        Ok(())
    }

    /// Copy-on-write the child `i` of dirty branch `parent`.
    fn touch_child(&mut self, parent: u64, i: usize) -> Result<u64> {
        let old = self.page(parent)?.node(i)?.child();
        if self.pg.dirty.contains_key(&old) {
            return Ok(old);
        }
        let new = self.alloc(1)?;
        let mut buf = self.pg.take_buf();
        let ps = self.env.psize;
        buf.copy_from_slice(self.pg.committed(old, ps)?);
        edit::set_pgno(&mut buf, new);
        self.pg.dirty.insert(new, buf);
        self.pg.free_pages(old, 1);
        edit::set_child(self.pg.dirty.get_mut(&parent).unwrap(), i, new);
        Ok(new)
    }

    /// Delete every item of `db`; with `delete` also remove a named database's record.
    pub fn clear_db(&mut self, db: Database) -> Result<()> {
        self.check_usable(db)?;
        let mut t = self.tree(db)?;
        let r = self.drop_tree(&mut t);
        self.set_rec(db, t.rec);
        self.fail_on_fatal(r)
    }

    /// Delete a named database: empty it and remove its record from the main database.
    pub fn delete_db(&mut self, db: Database) -> Result<()> {
        if db.0 < 2 {
            return self.clear_db(db);
        }
        self.check_usable(db)?;
        let r = (|| {
            let mut t = self.tree(db)?;
            self.drop_tree(&mut t)?;
            self.set_rec(db, t.rec);
            let name = self.env.dbi_info(db)?.name.ok_or(Error::BadDbi)?;
            let mut m = self.tree(Database::MAIN)?;
            let r = self.tree_del(&mut m, &name);
            self.set_rec(Database::MAIN, m.rec);
            r?;
            let mut d = self.dbs.borrow_mut();
            if let Some(slot) = d.get_mut(db.0 as usize) {
                *slot = None;
            }
            Ok(())
        })();
        self.fail_on_fatal(r)
    }

    /// Free every page of `db`'s tree (and of named trees it holds) and reset its record.
    pub(crate) fn drop_tree(&mut self, t: &mut Tree) -> Result<()> {
        let mut trees = vec![(t.rec.root, t.rec.depth)];
        while let Some((root, depth)) = trees.pop() {
            if root == P_INVALID {
                continue;
            }
            let mut stack = vec![(root, 1u16)];
            while let Some((pg, d)) = stack.pop() {
                if d > depth || stack.len() > 1 << 24 {
                    return Err(Error::Corrupted);
                }
                let p = self.page(pg)?;
                let mut runs = Vec::new();
                for j in 0..if p.is_leaf2() { 0 } else { p.len() } {
                    let n = p.node(j)?;
                    if p.is_branch() {
                        stack.push((n.child(), d + 1));
                    } else if n.flags() & F_BIGDATA != 0 {
                        runs.push(n.ov_pgno());
                    } else if n.flags() & F_SUBDATA != 0 && n.dsize() == 48 {
                        let r = DbRecord::decode(n.data());
                        trees.push((r.root, r.depth));
                    }
                }
                for r in runs {
                    let len = self.run_len(r)?;
                    self.pg.free_pages(r, len);
                }
                self.pg.free_pages(pg, 1);
            }
        }
        let mut empty = DbRecord::empty(t.rec.flags);
        empty.pad = t.rec.pad;
        t.rec = empty;
        Ok(())
    }

    /// Length in pages of the overflow run starting at `pg`.
    fn run_len(&self, pg: u64) -> Result<usize> {
        let b = match self.pg.dirty.get(&pg) {
            Some(b) => &b[..HDR],
            None => self.pg.committed(pg, HDR)?,
        };
        if page::rd16(b, 10) & P_OVERFLOW == 0 {
            return Err(Error::Corrupted);
        }
        Ok(page::rd32(b, 12) as usize)
    }
}

/// The value source of a put.
#[derive(Clone, Copy)]
pub(crate) enum Value<'a> {
    Bytes(&'a [u8]),
    Reserve(usize),
}

impl Value<'_> {
    fn len(&self) -> usize {
        match self {
            Value::Bytes(b) => b.len(),
            Value::Reserve(n) => *n,
        }
    }
}

/// Encode a leaf node.
fn encode_leaf(key: &[u8], data: NodeData<'_>) -> Vec<u8> {
    let mut b = vec![0u8; HDR + footprint(key.len(), data.stored()) + 2];
    edit::init(&mut b, 0, P_LEAF);
    edit::insert_leaf(&mut b, 0, key, data);
    let p = Page::new(&b).unwrap();
    p.node(0).unwrap().raw().to_vec()
}

/// Index at which to split `nodes` into two pages of capacity `cap`, as
/// balanced by bytes as possible. For branch pages the first node of the
/// right page loses its key.
/// Page bytes an entry costs: a node with its pointer, or a LEAF2 key.
fn entry_cost(raw: &[u8], leaf2: bool) -> usize {
    if leaf2 {
        raw.len()
    } else {
        ((raw.len() + 1) & !1) + 2
    }
}

/// Rebuild a node page or a LEAF2 page from its entries.
fn rebuild_any(b: &mut [u8], flags: u16, leaf2: bool, entries: &[&[u8]]) -> bool {
    if leaf2 {
        edit::rebuild_leaf2(b, flags, entries)
    } else {
        edit::rebuild(b, flags, entries)
    }
}

/// What the insert that splits a page tells about the load pattern.
#[derive(Clone, Copy)]
struct Hint {
    /// The insert is past the last key of the whole tree.
    rightmost: bool,
    /// The insert follows the previous one on the same leaf.
    ascending: bool,
}

impl Hint {
    const NONE: Hint = Hint {
        rightmost: false,
        ascending: false,
    };
}

/// Where to split a full page whose entries, with the new one at index `i`,
/// are `nodes`: index of the first entry of the right page.
///
/// A new leaf entry at either end goes alone to its own page and the old
/// page stays full, so ascending or descending loads pack pages full (as
/// LMDB does at the end; we also do it at the start). In an ascending run
/// through the middle of a page (`ascending`), the new entry ends the left page,
/// so the run goes on at that page's end. Otherwise the split balances the
/// two pages by bytes. At the end of the whole tree (`rightmost`), branch
/// pages also keep all but their last entries.
fn split_at(
    nodes: &[&[u8]],
    i: usize,
    branch: bool,
    leaf2: bool,
    cap: usize,
    hint: Hint,
) -> Option<usize> {
    let last = nodes.len() - 1;
    // Pages of a few large nodes (sub-pages that grow in place) split evenly.
    if !branch && nodes.len() >= 8 {
        if i == last {
            return Some(last);
        }
        if i == 0 {
            return Some(1);
        }
        if hint.ascending {
            let left: usize = nodes[..=i].iter().map(|r| entry_cost(r, leaf2)).sum();
            if left <= cap {
                return Some(i + 1);
            }
        }
    }
    if branch && hint.rightmost && i == last && nodes.len() > 3 {
        return Some(last - 1);
    }
    split_point(nodes, branch, leaf2, cap)
}

fn split_point(nodes: &[&[u8]], branch: bool, leaf2: bool, cap: usize) -> Option<usize> {
    let sizes: Vec<usize> = nodes.iter().map(|r| entry_cost(r, leaf2)).collect();
    let total: usize = sizes.iter().sum();
    let mut best: Option<(usize, usize)> = None;
    let mut left = 0;
    for s in 1..nodes.len() {
        left += sizes[s - 1];
        let mut right = total - left;
        if branch {
            right -= ((nodes[s].len() + 1) & !1) - ((page::NODE_HDR + 1) & !1);
        }
        if left <= cap && right <= cap {
            let worst = left.max(right);
            if best.is_none_or(|(_, w)| worst < w) {
                best = Some((s, worst));
            }
        }
    }
    best.map(|(s, _)| s)
}
