//! Random cursor walks over DUPSORT databases through the C API
//! (tests/c/dupwalk.c): a read cursor's `MDB_NEXT_DUP` and `MDB_NEXT` steps
//! along the page of the key's values the library kept from the call
//! before must answer what the general path answers, whatever came
//! between: every other move, MULTIPLE reads, counts, a reset snapshot,
//! renewed snapshots and cursors over changed values, write transactions.

mod common;

use common::*;
use std::process::Command;

fn walk(bin: &std::path::Path, seed: u32, mode: &str) -> String {
    let scratch = tempfile::tempdir().unwrap();
    run(Command::new(bin)
        .arg(scratch.path())
        .arg(seed.to_string())
        .arg(mode))
}

#[test]
fn kept_dup_steps_answer_as_the_general_path() {
    let dropin = dropin();
    let bin = dropin.path().join("dupwalk");
    gcc(
        &crate_dir().join("tests/c/dupwalk.c"),
        &bin,
        Some(dropin.path()),
    );
    for seed in 1..=2 {
        let kept = walk(&bin, seed, "kept");
        let general = walk(&bin, seed, "general");
        if let Some((i, (a, b))) = kept
            .lines()
            .zip(general.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
        {
            panic!("seed {seed}, line {}: kept {a:?}, general {b:?}", i + 1);
        }
        assert_eq!(kept.lines().count(), general.lines().count(), "seed {seed}");
        assert!(kept.ends_with("end\n"), "seed {seed}");
        // A reset snapshot lends nothing (LMDB fails both calls too).
        let resets: Vec<&str> = kept
            .lines()
            .filter(|l| l.starts_with("after reset"))
            .collect();
        assert_eq!(resets, ["after reset 1 1"; 12], "seed {seed}");
        // After MULTIPLE reads in a snapshot, NEXT_DUP goes on from the
        // buffer's last value.
        let multiples = kept.matches(" successor ").count();
        assert!(multiples > 50, "seed {seed}: {multiples} MULTIPLE reads");
        assert!(!kept.contains(" successor 0"), "seed {seed}");
    }
}
