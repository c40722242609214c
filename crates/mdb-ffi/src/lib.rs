//! `liblmdb.so.0` over the mdb engine: LMDB 0.9's C API (`include/lmdb.h`),
//! function for function, with LMDB's semantics and return codes
//! (docs/spec/c-api.md).
//!
//! The layer is thin: each `mdb_*` function checks its arguments the way
//! LMDB does, calls the engine's safe API, and turns the result into LMDB's
//! return code. What the engine's types tie together with lifetimes, C ties
//! together with pointers; the handle structs ([`handles`]) bridge the two:
//!
//! * [`handles::MDB_env`] holds the options until `mdb_env_open`, then the
//!   engine's `Env` in an `Arc`, the table of database handles, and pools of
//!   transaction and write-cursor structs, all freed at `mdb_env_close`. A
//!   pooled struct is reused: a pointer kept past its transaction's or
//!   cursor's end gets `EINVAL` only while its struct waits in the pool,
//!   and once the struct serves a new transaction or cursor, it reaches
//!   that one (LMDB frees it: a use after free).
//! * [`handles::MDB_txn`] owns an engine transaction together with a clone
//!   of the `Arc<Env>` it borrows from; nested C transactions are
//!   savepoints (`NestedTxn`) stacked on the top-level write transaction.
//! * [`handles::MDB_cursor`] owns a detached `CursorState`, so cursors, puts
//!   and deletes can interleave freely in one write transaction.
//!
//! The entry points (`extern "C"` functions) are grouped as lmdb.h groups
//! them: [`mod@env`], [`txn`], [`dbi`], [`data`], [`cursor`], [`ext`] (our
//! additions) and [`version`]; they use [`handles`], [`put`], [`guard`],
//! [`cmp`] and [`types`], never one another.
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
pub mod handles;
pub mod put;
pub mod txn;
pub mod types;
pub mod version;
