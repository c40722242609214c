//! Operation sequences on MAIN and a DUPSORT database checked against a
//! `BTreeMap` model.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: mdb_fuzz::ops::Input| {
    mdb_fuzz::ops::run(input);
});
