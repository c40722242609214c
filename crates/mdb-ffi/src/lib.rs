//! `liblmdb.so.0` over the mdb engine: LMDB 0.9's C API (`include/lmdb.h`),
//! function for function, with LMDB's semantics and return codes
//! (docs/spec/c-api.md).
//!
//! The layer is thin: each `mdb_*` function checks its arguments the way
//! LMDB does, calls the engine's safe API, and turns the result into LMDB's
//! return code. What the engine's types tie together with lifetimes, C ties
//! together with pointers; the handle structs here bridge the two:
//!
//! * [`env::MDB_env`] holds the options until `mdb_env_open`, then the
//!   engine's `Env` in an `Arc`, the table of database handles, and pools of
//!   transaction and write-cursor structs (freed at `mdb_env_close`, so a
//!   stale pointer to one reads a dead struct and gets `EINVAL`).
//! * [`txn::MDB_txn`] owns an engine transaction together with a clone of the
//!   `Arc<Env>` it borrows from; nested C transactions are savepoints
//!   (`NestedTxn`) stacked on the top-level write transaction.
//! * [`cursor::MDB_cursor`] owns a detached `CursorState`, so cursors, puts
//!   and deletes can interleave freely in one write transaction.
//!
//! No Rust panic crosses the boundary: every function runs under
//! [`guard::guard`] and reports a panic as `MDB_PANIC`.
#![allow(non_camel_case_types)]
// Every exported function's contract is the one lmdb.h documents for it.
#![allow(clippy::missing_safety_doc)]

pub mod cmp;
pub mod cursor;
pub mod data;
pub mod dbi;
pub mod env;
pub mod ext;
pub mod guard;
pub mod txn;
pub mod types;
pub mod version;
