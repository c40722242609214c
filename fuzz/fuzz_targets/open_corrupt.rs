//! A valid data file with fuzzer-chosen byte edits, opened read-only and
//! walked: errors are fine, panics and crashes are bugs.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mdb_fuzz::open_corrupt(data);
});
