//! MDB_MAP_FULL on a 64-page map, against Debian's liblmdb (tests/c/mapfull.c,
//! same source, library swapped): once puts fail with MAP_FULL, a transaction
//! of 100 fewer puts must commit (LMDB's own gap is larger only where its
//! commit needs a whole page more), and a map holds exactly as many pages as
//! in LMDB: its last page is never used.

mod common;

use common::*;
use std::process::Command;

fn run_driver(bin: &std::path::Path, vlen: u32, prefill: u32, order: &str) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let out = run(Command::new(bin)
        .arg(dir.path().join("env"))
        .arg(vlen.to_string())
        .arg(prefill.to_string())
        .arg(order));
    let f: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(f.len(), 4, "{out}");
    (f[1].parse().unwrap(), f[3].parse().unwrap())
}

#[test]
fn commit_fits_where_lmdb_fits() {
    let dropin = dropin();
    let src = crate_dir().join("tests/c/mapfull.c");
    let theirs = dropin.path().join("mapfull_debian");
    let ours = dropin.path().join("mapfull_ours");
    gcc(&src, &theirs, None);
    gcc(&src, &ours, Some(dropin.path()));
    for (vlen, prefill, order) in [
        (8, 0, "random"),
        (3000, 0, "random"),
        (8, 5, "random"),
        (100, 50, "random"),
        (0, 5, "seq"),
        (8, 5, "seq"),
        (100, 5, "seq"),
    ] {
        let (lf, lc) = run_driver(&theirs, vlen, prefill, order);
        let (mf, mc) = run_driver(&ours, vlen, prefill, order);
        eprintln!(
            "values {vlen} B, {prefill} prefill txns, {order}: LMDB puts fail at {lf}, \
             commits {lc}; ours {mf}, {mc}"
        );
        let (lgap, mgap) = (lf - lc, mf - mc);
        assert!(
            mgap <= lgap.max(100),
            "{vlen}/{prefill}/{order}: {mf} puts fit but only {mc} commit (LMDB: {lf}, {lc})"
        );
        if prefill == 0 && order == "random" {
            // Same pages, same count: the last page is off limits in both.
            assert_eq!(mf, lf, "{vlen}/{order}: puts before MAP_FULL");
        }
    }
}
