//! Arbitrary bytes as a data file: the checker must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mdb_fuzz::check_file(data);
});
