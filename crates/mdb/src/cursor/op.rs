//! LMDB's cursor operations (`MDB_cursor_op`) and [`apply`], the single
//! place their rules live, shared by every cursor.

use super::position::Position;
use crate::db::Database;
use crate::error::{Error, ErrorKind, Result};
use crate::format::meta::DbRecord;
use crate::snapshot::Snapshot;
use crate::tree::check_key;
use crate::tree::Item;

/// A cursor operation for [`Cursor::op`](super::nav::Cursor::op), [`RwCursor::op`](crate::RwCursor::op)
/// and [`CursorState::get`](super::CursorState::get) (LMDB's `MDB_cursor_op`), for code that
/// chooses the move at run time; the cursors' methods name each one.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mdb::{CursorOp, Database, Env, Txn, WriteFlags};
/// let env = Env::open(dir.path())?;
/// let mut w = env.write_txn()?;
/// for k in [b"a", b"b", b"c"] {
///     w.put(Database::MAIN, k, b"", WriteFlags::EMPTY)?;
/// }
/// let backwards = true;
/// let (start, step) = if backwards {
///     (CursorOp::Last, CursorOp::Prev)
/// } else {
///     (CursorOp::First, CursorOp::Next)
/// };
/// let mut c = w.cursor(Database::MAIN)?;
/// let mut keys = Vec::new();
/// let mut item = c.op(start)?;
/// while let Some((k, _)) = item {
///     keys.push(k);
///     item = c.op(step)?;
/// }
/// assert_eq!(keys, [b"c", b"b", b"a"]);
/// # Ok::<(), mdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorOp<'k> {
    /// `MDB_FIRST`.
    First,
    /// `MDB_LAST`.
    Last,
    /// `MDB_NEXT`.
    Next,
    /// `MDB_PREV`.
    Prev,
    /// `MDB_NEXT_DUP`.
    NextDup,
    /// `MDB_PREV_DUP`.
    PrevDup,
    /// `MDB_NEXT_NODUP`.
    NextNodup,
    /// `MDB_PREV_NODUP`.
    PrevNodup,
    /// `MDB_FIRST_DUP`.
    FirstDup,
    /// `MDB_LAST_DUP`.
    LastDup,
    /// `MDB_GET_CURRENT`.
    GetCurrent,
    /// `MDB_SET`: exactly this key.
    Set(&'k [u8]),
    /// `MDB_SET_KEY`: exactly this key, returning the stored key.
    SetKey(&'k [u8]),
    /// `MDB_SET_RANGE`: the first key >= this one.
    SetRange(&'k [u8]),
    /// `MDB_GET_BOTH`: exactly this key and value.
    GetBoth(&'k [u8], &'k [u8]),
    /// `MDB_GET_BOTH_RANGE`: this key, first value >= this one.
    GetBothRange(&'k [u8], &'k [u8]),
    /// `MDB_GET_MULTIPLE`: the page of packed values (DUPFIXED) as the value.
    GetMultiple,
    /// `MDB_NEXT_MULTIPLE`.
    NextMultiple,
    /// `MDB_PREV_MULTIPLE`.
    PrevMultiple,
}

impl CursorOp<'_> {
    /// Whether more steps among the key's values are likely to follow the
    /// operation (a walk's), so a cursor keeps the page of those values.
    pub(crate) fn steps(&self) -> bool {
        matches!(
            self,
            CursorOp::Next
                | CursorOp::NextDup
                | CursorOp::NextNodup
                | CursorOp::First
                | CursorOp::FirstDup
        )
    }

    /// Whether the operation places the cursor from the root, whatever its
    /// position was: a cursor whose item moved need not re-find it first.
    pub(crate) fn repositions(&self) -> bool {
        use CursorOp::*;
        matches!(
            self,
            First | Last | Set(_) | SetKey(_) | SetRange(_) | GetBoth(..) | GetBothRange(..)
        )
    }

    /// `e`, saying that this operation on `db` failed.
    #[cold]
    pub(crate) fn failed(&self, e: Error, env: &crate::env::Env, db: Database) -> Error {
        let (name, key, val) = self.described();
        env.failed(e, name, db, key, val)
    }

    /// What an error says was being done, and the sizes of the key and
    /// value the operation was given.
    pub(super) fn described(&self) -> (&'static str, Option<usize>, Option<usize>) {
        use CursorOp::*;
        let (k, v) = match *self {
            Set(k) | SetKey(k) | SetRange(k) => (Some(k.len()), None),
            GetBoth(k, v) | GetBothRange(k, v) => (Some(k.len()), Some(v.len())),
            _ => (None, None),
        };
        let name = match self {
            First => "cursor first",
            Last => "cursor last",
            Next => "cursor next",
            Prev => "cursor prev",
            NextDup => "cursor next dup",
            PrevDup => "cursor prev dup",
            NextNodup => "cursor next nodup",
            PrevNodup => "cursor prev nodup",
            FirstDup => "cursor first dup",
            LastDup => "cursor last dup",
            GetCurrent => "cursor get current",
            Set(_) => "cursor set",
            SetKey(_) => "cursor set key",
            SetRange(_) => "cursor set range",
            GetBoth(_, _) => "cursor get both",
            GetBothRange(_, _) => "cursor get both range",
            GetMultiple => "cursor get multiple",
            NextMultiple => "cursor next multiple",
            PrevMultiple => "cursor prev multiple",
        };
        (name, k, v)
    }
}

/// One cursor operation on a position: the single place where LMDB's cursor
/// op rules live (used by [`Cursor`], [`RwCursor`] and [`CursorState`]).
pub(super) fn apply<'t, T: Snapshot>(
    pos: &mut Position,
    txn: &'t T,
    rec: &DbRecord,
    flags: u16,
    op: CursorOp<'_>,
) -> Result<Option<Item<'t>>> {
    let dups = pos.dcmp.is_some();
    let fixed = dups && flags & crate::format::flags::DUPFIXED != 0;
    let need_pos = |p: &Position| {
        if p.unset() {
            Err(Error::from(crate::error::Misuse::UnpositionedCursor))
        } else {
            Ok(())
        }
    };
    let need = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(Error::from(ErrorKind::Incompatible))
        }
    };
    // As LMDB, every op but the forward steps (which return the item a
    // delete left the cursor on) forgets that a key was deleted, failed
    // ones too.
    if !matches!(op, CursorOp::Next | CursorOp::NextDup | CursorOp::NextNodup) {
        pos.just_deleted = false;
    }
    Ok(match op {
        CursorOp::First => pos.first(txn, rec)?,
        CursorOp::Last => pos.last(txn, rec)?,
        CursorOp::Next => pos.next(txn, rec)?,
        CursorOp::Prev => pos.prev(txn, rec)?,
        CursorOp::NextNodup => pos.next_nodup(txn, rec)?,
        CursorOp::PrevNodup => pos.prev_nodup(txn, rec)?,
        // LMDB 0.9.24 moves like NEXT/PREV on a database without
        // duplicates (c-api.md §13.2 says NOTFOUND; the library disagrees).
        // After a delete, NOTFOUND (and the next NEXT moves on).
        CursorOp::NextDup if !dups => {
            if std::mem::take(&mut pos.just_deleted) {
                None
            } else {
                pos.next(txn, rec)?
            }
        }
        CursorOp::PrevDup if !dups => pos.prev(txn, rec)?,
        CursorOp::NextDup => {
            if pos.unset() {
                pos.first(txn, rec)?
            } else {
                pos.next_dup(txn)?
            }
        }
        CursorOp::PrevDup => {
            if pos.unset() {
                pos.last(txn, rec)?
            } else {
                pos.prev_dup(txn)?
            }
        }
        CursorOp::FirstDup | CursorOp::LastDup => {
            need_pos(pos)?;
            need(dups)?;
            pos.edge_dup(txn, op == CursorOp::LastDup)?
        }
        CursorOp::GetCurrent => {
            need_pos(pos)?;
            pos.get_current(txn)?
        }
        CursorOp::Set(k) | CursorOp::SetKey(k) => {
            check_key(k)?;
            match pos.seek_item(txn, rec, k)? {
                (true, item) => item,
                (false, _) => None,
            }
        }
        CursorOp::SetRange(k) => {
            check_key(k)?;
            pos.seek_item(txn, rec, k)?.1
        }
        CursorOp::GetBoth(k, v) | CursorOp::GetBothRange(k, v) => {
            need(dups)?;
            check_key(k)?;
            let exact = matches!(op, CursorOp::GetBoth(..));
            pos.seek_both(txn, rec, k, v, exact)?
        }
        CursorOp::GetMultiple => {
            need(fixed)?;
            need_pos(pos)?;
            let key = pos.current(txn)?.map(|kv| kv.0);
            match (key, pos.multiple(txn)?) {
                (Some(k), Some(b)) => Some((k, b)),
                _ => None,
            }
        }
        CursorOp::NextMultiple | CursorOp::PrevMultiple => {
            need(fixed)?;
            let b = if op == CursorOp::NextMultiple {
                pos.next_multiple(txn, rec)?
            } else {
                pos.prev_multiple(txn, rec)?
            };
            match (b, pos.current(txn)?) {
                (Some(b), Some((k, _))) => Some((k, b)),
                _ => None,
            }
        }
    })
}

/// `mdb_cursor_count`: values of the current key.
pub(super) fn count<T: Snapshot>(pos: &Position, txn: &T) -> Result<u64> {
    if pos.dcmp.is_none() {
        return Err(ErrorKind::Incompatible.into());
    }
    if pos.unset() {
        return Err(ErrorKind::Misuse(crate::error::Misuse::UnpositionedCursor).into());
    }
    pos.count(txn)
}
