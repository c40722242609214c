//! What a cursor needs from a transaction: pages, database records, and
//! whether the transaction changed since the cursor last looked. Read and
//! write transactions implement it; cursors and the `Txn` trait build on it.
//! (The trait is public in a private module: sealed, never implemented or
//! named outside the crate.)

use crate::db::Database;
use crate::env::Env;
use crate::error::Result;
use crate::format::meta::DbRecord;
use crate::pager::PageRead;

/// Page access shared by read and write transactions.
pub trait Snapshot: PageRead {
    /// The environment.
    fn env(&self) -> &Env;
    /// The current record of a database.
    fn db(&self, db: Database) -> Result<DbRecord>;
    /// Transaction id.
    fn txn_id(&self) -> u64;
    /// Remember `rec` as the record of `db` in this transaction.
    fn cache_db(&self, db: Database, rec: DbRecord);
    /// Changes made so far (write transactions): detached cursors
    /// re-find their item when it moved.
    fn generation(&self) -> u64 {
        0
    }
    /// The changes a cursor of `db` must re-find its item after: equal to
    /// what it saw last while none happened (`txn::changes`).
    fn generation_of(&self, _db: Database) -> u64 {
        self.generation()
    }
    /// A cursor re-finds its item (counted by write transactions, tests).
    fn note_refind(&self) {}
    /// Nesting level of a write transaction (`None` for readers): who
    /// may use a handle not committed yet (see `DbiInfo::pending`).
    fn write_level(&self) -> Option<u32> {
        None
    }
}
