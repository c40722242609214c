//! The C handles: the structs behind `MDB_env *`, `MDB_txn *` and
//! `MDB_cursor *` (`structs.rs`), the pools they are taken from and freed
//! with at `mdb_env_close` (`slab.rs`), the lookups that check a pointer C
//! passes back, the database-handle table (`dbi_table.rs`, `dbi.rs`), a
//! transaction's engine state (`txn_state.rs`, `txn.rs`) and the unbinding
//! of cursors (`cursor.rs`). The entry points (`extern "C"` functions, in
//! the crate's other files) use these and nothing above them.

mod cursor;
mod dbi;
mod dbi_table;
mod env;
mod slab;
mod structs;
mod txn;
mod txn_state;

pub(crate) use cursor::{detach, forget_leaf};
pub(crate) use dbi_table::{DbiEntry, UNSHARED};
pub(crate) use env::{close, configure};
pub(crate) use structs::{cursor_ref, env_ref, txn_ref, Config, Leaf};
pub use structs::{MDB_assert_func, MDB_cursor, MDB_env, MDB_txn};
pub(crate) use txn::{alloc, finish};
pub(crate) use txn_state::{Kind, View, WriteRoot};
