//! `mdb-bench instr`: instructions per operation under callgrind.
//!
//! Hardware counters do not work on the machines we run on, and wall-clock
//! time is noisy there; callgrind's instruction counts are deterministic.
//! Three drivers run the same phases on the same data:
//!
//! - `c/phases.c` built against Debian's `lmdb.h` and `-llmdb` (LMDB),
//! - the same source built against our `lmdb.h` and our cdylib (C ABI),
//! - `mdb-bench __phases` (src/phases.rs, our Rust API).
//!
//! Each phase is bracketed by client requests (zero, then dump), so every
//! callgrind dump holds one phase; this module reads the dumps' `summary:`
//! lines and divides by the operation count each driver prints.

use crate::workloads::Res;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The phases, in the drivers' order, with what one operation is.
const PHASES: [(&str, &str); 12] = [
    ("put_random", "random puts, 1000 per txn"),
    ("put_append", "sorted puts with APPEND, 1000 per txn"),
    ("get", "random gets, one read txn"),
    ("scan", "cursor NEXT over every item"),
    (
        "range_10",
        "SET_RANGE at a random key + 9 NEXT, one read txn",
    ),
    ("read_txn", "read txn begin + one get + abort"),
    (
        "large_get",
        "gets of 100 KB values (N/100 of them), one read txn",
    ),
    (
        "dupsort_put",
        "random DUPSORT puts, ~100 ids per key, 1000 per txn",
    ),
    (
        "dupsort_walk",
        "NEXT_NODUP to each key, NEXT_DUP along its values, one read txn",
    ),
    ("delete", "random deletes, 1000 per txn"),
    ("cursor_delete", "cursor del + NEXT, 1000 per txn"),
    ("first_delete", "FIRST + cursor del, 1000 per txn"),
];

const USAGE: &str = "\
usage: mdb-bench instr [--n N] [--lib PATH] [--keep] [--markdown]

Instructions per operation (callgrind) of LMDB through its C API, of mdb
through the same C driver (our liblmdb.so swapped in), and of mdb through
its Rust API, on the same phases and data.

  --n N       keys (default 100000)
  --lib PATH  our cdylib (default: target/release/liblmdb.so next to this
              binary's target directory; build it with
              `cargo build --release -p mdb-ffi`)
  --keep      keep the work directory (drivers, databases, callgrind dumps)
  --markdown  print the table as markdown

Needs valgrind, gcc and Debian's liblmdb-dev.";

struct Args {
    n: usize,
    lib: Option<PathBuf>,
    keep: bool,
    markdown: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        n: 100_000,
        lib: None,
        keep: false,
        markdown: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--n" => {
                let s = value("--n")?.replace('_', "");
                a.n = match s.parse::<usize>() {
                    Ok(v) if (100..=u32::MAX as usize).contains(&v) => v,
                    _ => return Err(format!("--n: not a number from 100 to 2^32-1: {s}")),
                };
            }
            "--lib" => a.lib = Some(PathBuf::from(value("--lib")?)),
            "--keep" => a.keep = true,
            "--markdown" => a.markdown = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(a)
}

/// One driver's result: Ir and operation count per phase.
#[derive(Default)]
struct Counts(BTreeMap<String, (u64, u64)>);

impl Counts {
    fn per_op(&self, phase: &str) -> f64 {
        let (ir, ops) = self.0[phase];
        ir as f64 / ops as f64
    }
}

/// Run `cmd`, returning stdout; the error names the command and shows
/// the end of its stderr.
fn output(cmd: &mut Command) -> Res<String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("{cmd:?} failed ({}):\n{}", out.status, tail.join("\n")).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Everything the mode needs, checked up front with a message that says
/// what to install or build.
fn check_tools(lib: &Path) -> Res<String> {
    let valgrind = output(Command::new("valgrind").arg("--version"))
        .map_err(|e| format!("valgrind is needed (Debian: apt-get install valgrind): {e}"))?;
    output(Command::new("gcc").arg("--version"))
        .map_err(|e| format!("gcc is needed (Debian: apt-get install gcc): {e}"))?;
    if !Path::new("/usr/include/valgrind/callgrind.h").exists()
        || !crate::phases::callgrind_available()
    {
        return Err(
            "valgrind's <valgrind/callgrind.h> is needed (Debian: apt-get install \
                    valgrind; then rebuild mdb-bench)"
                .into(),
        );
    }
    if !Path::new("/usr/include/lmdb.h").exists() {
        return Err(
            "Debian's liblmdb-dev is needed (/usr/include/lmdb.h is missing; \
                    scripts/setup.sh installs it)"
                .into(),
        );
    }
    if !lib.is_file() {
        return Err(format!(
            "our cdylib {} is missing: build it with `cargo build --release -p mdb-ffi`",
            lib.display()
        )
        .into());
    }
    Ok(valgrind.trim().to_string())
}

/// Warn when `lib` is older than a source file of the engine or the C ABI:
/// cargo does not rebuild it for `mdb-bench`.
fn warn_if_stale(lib: &Path) {
    let Some(crates) = Path::new(env!("CARGO_MANIFEST_DIR")).parent() else {
        return;
    };
    let Ok(built) = lib.metadata().and_then(|m| m.modified()) else {
        return;
    };
    let mut dirs = vec![crates.join("mdb/src"), crates.join("mdb-ffi/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t > built)
            {
                eprintln!(
                    "warning: {} is older than {}: rebuild it with \
                     `cargo build --release -p mdb-ffi`",
                    lib.display(),
                    path.display()
                );
                return;
            }
        }
    }
}

/// Compile `c/phases.c`: against Debian's LMDB, or (`ours` = a directory
/// where our library answers to `liblmdb.so` and `liblmdb.so.0`) against
/// our header and library.
fn build_driver(out: &Path, ours: Option<&Path>) -> Res<()> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut c = Command::new("gcc");
    c.args(["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(out)
        .arg(crate_dir.join("c/phases.c"));
    if let Some(dir) = ours {
        c.arg("-I")
            .arg(crate_dir.join("../mdb-ffi/include"))
            .arg("-L")
            .arg(dir)
            .arg(format!("-Wl,-rpath,{}", dir.display()));
    }
    c.arg("-llmdb");
    output(&mut c)?;
    Ok(())
}

/// Run `driver` (with `args`, then the database directory and N) under
/// callgrind, dumps going to `work/<tag>.cg.*`, and collect its counts.
fn measure(work: &Path, tag: &str, driver: &Path, args: &[&str], n: usize) -> Res<Counts> {
    let db = work.join(format!("{tag}-db"));
    std::fs::create_dir_all(&db)?;
    eprintln!("running {tag} under callgrind...");
    let stdout = output(
        Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!(
                "--callgrind-out-file={}",
                work.join(format!("{tag}.cg")).display()
            ))
            .arg(driver)
            .args(args)
            .arg(&db)
            .arg(n.to_string()),
    )?;
    let mut ops = BTreeMap::new();
    for line in stdout.lines() {
        if let ["phase", name, count] = line.split_whitespace().collect::<Vec<_>>()[..] {
            ops.insert(name.to_string(), count.parse::<u64>()?);
        }
    }
    let mut counts = Counts::default();
    for entry in std::fs::read_dir(work)? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if !name.starts_with(&format!("{tag}.cg.")) {
            continue;
        }
        let (phase, ir) = parse_dump(&std::fs::read_to_string(&path)?);
        if let (Some(phase), Some(ir)) = (phase, ir) {
            let n_ops = *ops.get(&phase).ok_or(format!(
                "{tag}: a dump for phase {phase} that it did not report"
            ))?;
            if counts.0.insert(phase.clone(), (ir, n_ops)).is_some() {
                return Err(format!("{tag}: two dumps for phase {phase}").into());
            }
        }
    }
    for (phase, _) in PHASES {
        match counts.0.get(phase) {
            Some(&(ir, ops)) if ir > 0 && ops > 0 => {}
            Some(_) => return Err(format!("{tag}: phase {phase} counted nothing").into()),
            None => return Err(format!("{tag}: no callgrind dump for phase {phase}").into()),
        }
    }
    Ok(counts)
}

/// The phase (client request name) and total Ir of one callgrind dump.
fn parse_dump(text: &str) -> (Option<String>, Option<u64>) {
    let (mut phase, mut ir) = (None, None);
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("desc: Trigger: Client Request: ") {
            phase = Some(p.trim().to_string());
        } else if let Some(v) = line
            .strip_prefix("summary:")
            .or(line.strip_prefix("totals:"))
        {
            // The first number is Ir (the only event without cache simulation).
            ir = v.split_whitespace().next().and_then(|s| s.parse().ok());
        }
    }
    (phase, ir)
}

/// A work directory removed when dropped (unless kept).
struct Work(PathBuf, bool);

impl Drop for Work {
    fn drop(&mut self) {
        if self.1 {
            eprintln!("kept {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn fmt_ir(x: f64) -> String {
    if x >= 1000.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn run(a: &Args) -> Res<()> {
    let exe = std::env::current_exe()?;
    // target/<profile>/mdb-bench: the release cdylib is in target/release.
    let lib = match &a.lib {
        Some(l) => l.clone(),
        None => exe
            .parent()
            .and_then(Path::parent)
            .ok_or("cannot locate the target directory; pass --lib")?
            .join("release/liblmdb.so"),
    };
    let valgrind = check_tools(&lib)?;
    warn_if_stale(&lib);
    let lib = lib.canonicalize()?;

    let work = Work(
        std::env::temp_dir().join(format!("mdb-bench-instr-{}", std::process::id())),
        a.keep,
    );
    std::fs::create_dir_all(&work.0)?;
    let dropin = work.0.join("lib");
    std::fs::create_dir_all(&dropin)?;
    for name in ["liblmdb.so", "liblmdb.so.0"] {
        std::os::unix::fs::symlink(&lib, dropin.join(name))?;
    }
    let (lmdb_bin, ours_bin) = (work.0.join("phases-lmdb"), work.0.join("phases-mdb"));
    build_driver(&lmdb_bin, None)?;
    build_driver(&ours_bin, Some(&dropin))?;
    // A silent fallback to the system library would compare LMDB with itself.
    let ldd = output(Command::new("ldd").arg(&ours_bin))?;
    if !ldd.contains(&*dropin.to_string_lossy()) {
        return Err(format!("{} does not load our library:\n{ldd}", ours_bin.display()).into());
    }

    let lmdb = measure(&work.0, "lmdb", &lmdb_bin, &[], a.n)?;
    let ours = measure(&work.0, "mdb-c", &ours_bin, &[], a.n)?;
    let rust = measure(&work.0, "mdb-rust", &exe, &["__phases"], a.n)?;
    for (phase, _) in PHASES {
        let o = [&lmdb, &ours, &rust].map(|c| c.0[phase].1);
        if o[0] != o[1] || o[0] != o[2] {
            return Err(format!("{phase}: the drivers disagree on the op count: {o:?}").into());
        }
    }

    let mut header = vec![
        format!("commit: {}", crate::common::git_commit()),
        format!(
            "callgrind ({valgrind}): user-space instructions (Ir) per operation, N = {} keys of 16 B, values of {} B, MDB_NOSYNC",
            a.n,
            crate::workloads::VAL_LEN
        ),
        format!("LMDB: Debian's liblmdb ({}); mdb (C ABI): {}", crate::lmdb::version(), lib.display()),
        "ratio = mdb / LMDB (> 1: mdb executes more instructions)".to_string(),
    ];
    if cfg!(debug_assertions) {
        header
            .push("WARNING: mdb-bench is a debug build: the Rust API column is unoptimised".into());
    }
    for l in &header {
        println!("{}{l}", if a.markdown { "- " } else { "" });
    }
    println!();
    if a.markdown {
        println!("| phase | LMDB (C ABI) Ir/op | mdb (C ABI) Ir/op | ratio | mdb (Rust API) Ir/op | ratio to LMDB |");
        println!("|---|---:|---:|---:|---:|---:|");
    } else {
        println!(
            "{:<14} {:>8} {:>12} {:>12} {:>6} {:>12} {:>6}",
            "phase", "ops", "LMDB C", "mdb C", "ratio", "mdb Rust", "ratio"
        );
    }
    for (phase, what) in PHASES {
        let (l, o, r) = (lmdb.per_op(phase), ours.per_op(phase), rust.per_op(phase));
        let ops = lmdb.0[phase].1;
        if a.markdown {
            println!(
                "| `{phase}` ({what}; {ops} ops) | {} | {} | {:.2} | {} | {:.2} |",
                fmt_ir(l),
                fmt_ir(o),
                o / l,
                fmt_ir(r),
                r / l
            );
        } else {
            println!(
                "{phase:<14} {ops:>8} {:>12} {:>12} {:>6.2} {:>12} {:>6.2}",
                fmt_ir(l),
                fmt_ir(o),
                o / l,
                fmt_ir(r),
                r / l
            );
        }
    }
    Ok(())
}

/// `mdb-bench instr ARGS`.
pub fn main(args: &[String]) -> i32 {
    let a = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mdb-bench instr: {e}");
            return 2;
        }
    };
    match run(&a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mdb-bench instr: {e}");
            1
        }
    }
}
