//! Hand-written declarations of the few LMDB 0.9 C functions the benchmark
//! calls. Values of the constants are those of `/usr/include/lmdb.h`
//! (0.9.24).

#![allow(non_camel_case_types, dead_code)]

use std::os::raw::{c_char, c_int, c_uint, c_void};

/// Opaque `MDB_env`.
#[repr(C)]
pub struct MDB_env {
    _private: [u8; 0],
}

/// Opaque `MDB_txn`.
#[repr(C)]
pub struct MDB_txn {
    _private: [u8; 0],
}

/// Opaque `MDB_cursor`.
#[repr(C)]
pub struct MDB_cursor {
    _private: [u8; 0],
}

/// `MDB_dbi`: a database handle.
pub type MDB_dbi = c_uint;

/// `MDB_val`: a byte slice owned by either side.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MDB_val {
    pub mv_size: usize,
    pub mv_data: *mut c_void,
}

/// Success.
pub const MDB_SUCCESS: c_int = 0;
/// Key or data pair not found.
pub const MDB_NOTFOUND: c_int = -30798;

/// `mdb_env_open`/`mdb_txn_begin` flag: read-only.
pub const MDB_RDONLY: c_uint = 0x20000;
/// `mdb_dbi_open` flag: create the database if missing.
pub const MDB_CREATE: c_uint = 0x40000;
/// `mdb_dbi_open` flag: sorted duplicates.
pub const MDB_DUPSORT: c_uint = 0x04;
/// `mdb_dbi_open` flag: with `MDB_DUPSORT`, duplicates of one fixed size.
pub const MDB_DUPFIXED: c_uint = 0x10;
/// `mdb_dbi_open` flag: with `MDB_DUPSORT`, duplicates are native integers.
pub const MDB_INTEGERDUP: c_uint = 0x20;

/// `MDB_cursor_op` values used here (positions in lmdb.h's enum).
pub const MDB_FIRST: c_int = 0;
pub const MDB_GET_BOTH: c_int = 2;
pub const MDB_GET_MULTIPLE: c_int = 5;
pub const MDB_NEXT: c_int = 8;
pub const MDB_NEXT_MULTIPLE: c_int = 10;
pub const MDB_SET_KEY: c_int = 16;
/// `MDB_SET_RANGE`: position at the first key >= the given one.
pub const MDB_SET_RANGE: c_int = 17;
/// `MDB_CP_COMPACT`: `mdb_env_copy2` leaves out free pages.
pub const MDB_CP_COMPACT: c_uint = 0x01;
/// `mdb_put` flag: the key sorts after every key (`MDB_APPEND`).
pub const MDB_APPEND: c_uint = 0x20000;

extern "C" {
    pub fn mdb_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int) -> *const c_char;
    pub fn mdb_strerror(err: c_int) -> *const c_char;

    pub fn mdb_env_create(env: *mut *mut MDB_env) -> c_int;
    pub fn mdb_env_set_mapsize(env: *mut MDB_env, size: usize) -> c_int;
    pub fn mdb_env_set_maxdbs(env: *mut MDB_env, dbs: MDB_dbi) -> c_int;
    pub fn mdb_env_open(env: *mut MDB_env, path: *const c_char, flags: c_uint, mode: u32) -> c_int;
    pub fn mdb_env_close(env: *mut MDB_env);

    pub fn mdb_txn_begin(
        env: *mut MDB_env,
        parent: *mut MDB_txn,
        flags: c_uint,
        txn: *mut *mut MDB_txn,
    ) -> c_int;
    pub fn mdb_txn_commit(txn: *mut MDB_txn) -> c_int;
    pub fn mdb_txn_abort(txn: *mut MDB_txn);

    pub fn mdb_dbi_open(
        txn: *mut MDB_txn,
        name: *const c_char,
        flags: c_uint,
        dbi: *mut MDB_dbi,
    ) -> c_int;
    pub fn mdb_get(txn: *mut MDB_txn, dbi: MDB_dbi, key: *mut MDB_val, data: *mut MDB_val)
        -> c_int;
    pub fn mdb_put(
        txn: *mut MDB_txn,
        dbi: MDB_dbi,
        key: *mut MDB_val,
        data: *mut MDB_val,
        flags: c_uint,
    ) -> c_int;

    pub fn mdb_cursor_open(txn: *mut MDB_txn, dbi: MDB_dbi, cursor: *mut *mut MDB_cursor) -> c_int;
    pub fn mdb_cursor_get(
        cursor: *mut MDB_cursor,
        key: *mut MDB_val,
        data: *mut MDB_val,
        op: c_int,
    ) -> c_int;
    pub fn mdb_del(txn: *mut MDB_txn, dbi: MDB_dbi, key: *mut MDB_val, data: *mut MDB_val)
        -> c_int;
    pub fn mdb_env_copy2(env: *mut MDB_env, path: *const c_char, flags: c_uint) -> c_int;
    pub fn mdb_cursor_del(cursor: *mut MDB_cursor, flags: c_uint) -> c_int;
    pub fn mdb_cursor_close(cursor: *mut MDB_cursor);
}
