//! Unbinding cursors from a transaction that ends or resets.

use super::structs::MDB_cursor;

/// Drop cursor `c`'s kept leaf: its read snapshot is ending.
///
/// # Safety
/// `c` is a live cursor.
pub(crate) unsafe fn forget_leaf(c: *mut MDB_cursor) {
    // SAFETY: per the caller's contract.
    unsafe { (*c).forget_kept() };
}

/// Unbind cursor `c` from its ending transaction.
///
/// # Safety
/// `c` is a live cursor.
pub(crate) unsafe fn detach(c: *mut MDB_cursor) {
    // SAFETY: per the caller's contract.
    let cur = unsafe { &mut *c };
    cur.txn = std::ptr::null_mut();
    cur.forget_kept();
    if cur.write {
        cur.live = false;
        cur.st = None;
        // SAFETY: the env outlives its cursors' transactions.
        unsafe { &*cur.env }
            .cursors
            .lock()
            .unwrap_or_else(|x| x.into_inner())
            .give_back(c);
    }
}
