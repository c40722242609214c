//! The dirty-page table of a write transaction, with what nested
//! transactions need: a child begins in O(1) and keeps, per page it changes,
//! the page as its parent left it, so that an abort puts back exactly those
//! (LMDB's child copies a parent's dirty page when it first touches it, too).

use super::PgnoMap;

/// Dirty pages by page number; see the module documentation.
#[derive(Default)]
pub(crate) struct DirtyPages {
    map: PgnoMap<Box<[u8]>>,
    /// One table per open child transaction, innermost last: each page the
    /// child changed, as it was before (`None`: not dirty then).
    undo: Vec<PgnoMap<Option<Box<[u8]>>>>,
    /// Bytes of the buffers in `map`.
    bytes: usize,
}

impl DirtyPages {
    pub(crate) fn with_capacity(n: usize) -> DirtyPages {
        DirtyPages {
            map: PgnoMap::with_capacity_and_hasher(n, Default::default()),
            undo: Vec::new(),
            bytes: 0,
        }
    }

    /// Bytes of the dirty buffers (overflow runs count whole).
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    fn put(&mut self, pg: u64, buf: Box<[u8]>) {
        self.bytes += buf.len();
        if let Some(old) = self.map.insert(pg, buf) {
            self.bytes -= old.len();
        }
    }

    fn take(&mut self, pg: &u64) -> Option<Box<[u8]>> {
        let b = self.map.remove(pg)?;
        self.bytes -= b.len();
        Some(b)
    }

    /// Remember page `pg` as it is now, if the innermost child has not yet.
    #[cold]
    #[inline(never)]
    fn note(&mut self, pg: u64) {
        if let Some(u) = self.undo.last_mut() {
            u.entry(pg).or_insert_with(|| self.map.get(&pg).cloned());
        }
    }

    #[inline]
    pub(crate) fn get(&self, pg: &u64) -> Option<&[u8]> {
        self.map.get(pg).map(|b| &b[..])
    }

    #[inline(always)]
    pub(crate) fn get_mut(&mut self, pg: &u64) -> Option<&mut Box<[u8]>> {
        if !self.undo.is_empty() {
            self.note(*pg);
        }
        self.map.get_mut(pg)
    }

    /// Two different pages at once.
    pub(crate) fn get_disjoint_mut(&mut self, pgs: [&u64; 2]) -> [Option<&mut Box<[u8]>>; 2] {
        if !self.undo.is_empty() {
            self.note(*pgs[0]);
            self.note(*pgs[1]);
        }
        self.map.get_disjoint_mut(pgs)
    }

    pub(crate) fn insert(&mut self, pg: u64, buf: Box<[u8]>) {
        if !self.undo.is_empty() {
            self.note(pg);
        }
        self.put(pg, buf);
    }

    pub(crate) fn remove(&mut self, pg: &u64) -> Option<Box<[u8]>> {
        if !self.undo.is_empty() {
            self.note(*pg);
        }
        self.take(pg)
    }

    #[inline]
    pub(crate) fn contains_key(&self, pg: &u64) -> bool {
        self.map.contains_key(pg)
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&u64, &[u8])> {
        self.map.iter().map(|(k, b)| (k, &b[..]))
    }

    /// Every buffer, to change in place where no child transaction can
    /// undo it (a commit of the outermost transaction).
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut [u8]> {
        debug_assert!(self.undo.is_empty());
        self.map.values_mut().map(|b| &mut b[..])
    }

    /// Whether a nested transaction is open.
    pub(crate) fn in_child(&self) -> bool {
        !self.undo.is_empty()
    }

    /// Every buffer, the table left empty (the end of the transaction).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Box<[u8]>> + '_ {
        self.undo.clear();
        self.bytes = 0;
        self.map.drain().map(|(_, b)| b)
    }

    /// A child transaction begins.
    pub(crate) fn begin_child(&mut self) {
        self.undo.push(PgnoMap::default());
    }

    /// The innermost child aborts: its pages go back to how it found them.
    pub(crate) fn abort_child(&mut self) {
        for (pg, before) in self.undo.pop().unwrap_or_default() {
            match before {
                Some(b) => self.put(pg, b),
                None => drop(self.take(&pg)),
            };
        }
    }

    /// The innermost child commits: its parent, if a child itself, keeps
    /// what an abort of its own must put back.
    pub(crate) fn commit_child(&mut self) {
        let done = self.undo.pop().unwrap_or_default();
        if let Some(parent) = self.undo.last_mut() {
            for (pg, before) in done {
                parent.entry(pg).or_insert(before);
            }
        }
    }
}

impl std::ops::Index<&u64> for DirtyPages {
    type Output = Box<[u8]>;
    fn index(&self, pg: &u64) -> &Box<[u8]> {
        &self.map[pg]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(x: u8) -> Box<[u8]> {
        vec![x; 8].into_boxed_slice()
    }

    fn state(d: &DirtyPages) -> Vec<(u64, u8)> {
        let mut v: Vec<(u64, u8)> = d.map.iter().map(|(k, b)| (*k, b[0])).collect();
        v.sort();
        v
    }

    #[test]
    fn children_abort_to_what_they_found_and_commit_into_their_parent() {
        let mut d = DirtyPages::with_capacity(4);
        d.insert(1, page(1));
        d.insert(2, page(2));
        d.begin_child();
        d.get_mut(&1).unwrap()[0] = 10;
        d.remove(&2);
        d.insert(3, page(3));
        d.begin_child();
        d.get_mut(&3).unwrap()[0] = 30;
        d.insert(2, page(20));
        let [a, b] = d.get_disjoint_mut([&1, &2]);
        a.unwrap()[0] = 11;
        b.unwrap()[0] = 21;
        assert_eq!(state(&d), [(1, 11), (2, 21), (3, 30)]);
        d.abort_child();
        assert_eq!(state(&d), [(1, 10), (3, 3)]);
        d.begin_child();
        d.get_mut(&1).unwrap()[0] = 12;
        d.insert(4, page(4));
        d.commit_child();
        assert_eq!(state(&d), [(1, 12), (3, 3), (4, 4)]);
        // The outer child's abort undoes its grandchild's commit too.
        d.abort_child();
        assert_eq!(state(&d), [(1, 1), (2, 2)]);
        d.begin_child();
        d.get_mut(&2).unwrap()[0] = 22;
        d.commit_child();
        assert_eq!(state(&d), [(1, 1), (2, 22)]);
        assert_eq!(d.drain().count(), 2);
        assert!(d.is_empty());
    }
}
