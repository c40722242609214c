//! The log of a crashed WAL-mode environment with fuzzer-chosen edits,
//! rolled forward at open: refused, or exactly the state after one commit.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mdb_fuzz::open_wal_corrupt(data);
});
