//! docs/tools.md against the tools: every usage line that a command's
//! `--help` prints is in the document, as a SYNOPSIS or in the Invocation
//! block (which leaves `-V` out), so a changed option shows up as a failure
//! here rather than as a stale page.

use std::process::Command;

const OURS: &str = env!("CARGO_BIN_EXE_mdb");

fn help(args: &[&str]) -> String {
    let o = Command::new(OURS).args(args).output().unwrap();
    assert!(o.status.success(), "mdb {args:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// The commands `mdb --help` lists (the `demo` benchmark aside).
fn commands() -> Vec<String> {
    let text = help(&["--help"]);
    let list = text
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands: list")
        .split("\n\n")
        .next()
        .unwrap();
    let names: Vec<String> = list
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "demo")
        .map(str::to_string)
        .collect();
    assert!(names.len() >= 11, "{names:?}");
    names
}

#[test]
fn every_usage_line_is_in_tools_md() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/tools.md"))
        .unwrap();
    let mut missing = Vec::new();
    for cmd in commands() {
        let text = help(&[&cmd, "--help"]);
        let usage = text.split("\n\n").next().unwrap();
        for line in usage.lines() {
            let line = line.trim_start_matches("Usage:").trim();
            let short = line.replacen(" [-V]", "", 1);
            if !doc.contains(line) && !doc.contains(&short) {
                missing.push(line.to_string());
            }
        }
    }
    assert!(missing.is_empty(), "not in docs/tools.md: {missing:#?}");
}
