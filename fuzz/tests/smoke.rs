//! Stable-Rust smoke runner for the fuzz targets: feeds each target body
//! pseudo-random inputs from a xorshift generator (no libFuzzer, no nightly).
//!
//! `cd fuzz && cargo test --release`. Knobs (environment):
//! * `MDB_FUZZ_N`: inputs per target (default 3000; `ops_model` runs a third).
//! * `MDB_FUZZ_SEED`: base seed (default fixed, so runs are reproducible).
//!
//! * `MDB_FUZZ_IGNORE`: comma-separated substrings of `location: message`
//!   of failures not to fail on (e.g. `tree.rs:30,signal 7` while known bugs
//!   are open), so the runner can look for new ones.
//!
//! Each target's inputs run in a child process (the test binary itself),
//! which is restarted after a crash by signal (SIGBUS/SIGSEGV). Panics are
//! grouped by location; the first failing input of each group is kept as
//! `target/smoke-fail-<target>-<index>.bin` (and printed in hex when short).
//! Replay one with `cargo run --release --example repro -- <target> FILE`.

use arbitrary::{Arbitrary, Unstructured};
use std::panic::{catch_unwind, AssertUnwindSafe};

struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        XorShift(seed | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn count() -> usize {
    std::env::var("MDB_FUZZ_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000)
}

fn base_seed() -> u64 {
    std::env::var("MDB_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6d64_625f_6675_7a7a)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

thread_local! {
    /// Location and message of this thread's last panic.
    static LAST_PANIC: std::cell::RefCell<Option<(String, String)>> = const { std::cell::RefCell::new(None) };
}

/// Record panics per thread instead of printing each one.
fn quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let loc = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
                s.to_string()
            } else if let Some(s) = info.payload().downcast_ref::<String>() {
                s.clone()
            } else {
                String::from("<non-string panic>")
            };
            LAST_PANIC.with(|p| *p.borrow_mut() = Some((loc, msg)));
        }));
    });
}

const CHILD: &str = "MDB_FUZZ_SMOKE_CHILD";

fn target_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target")
}

/// A group of failures: (first input index, message, count).
type Groups = std::collections::BTreeMap<String, (usize, String, usize)>;

/// Run target `name` (test function `test_fn`) on inputs `0..n` from `gen`.
///
/// The inputs run in a child process (this test binary re-executed), so a
/// crash by signal is recorded (its input kept as
/// `target/smoke-fail-<name>-<index>.bin`) and the run resumes after it.
/// Panics are grouped by location, the first input of each group kept. The
/// test fails if any group is left after `MDB_FUZZ_IGNORE` (comma-separated
/// substrings of `location: message`, or of `signal N`) is applied.
fn drive(
    name: &str,
    test_fn: &str,
    n: usize,
    gen: impl FnMut(&mut XorShift, usize) -> Vec<u8>,
    f: impl Fn(&[u8]),
) {
    if let Ok(start) = std::env::var(CHILD) {
        run_inputs(name, start.parse().unwrap(), n, gen, f);
        return;
    }
    let t0 = std::time::Instant::now();
    let progress = target_dir().join(format!("smoke-progress-{name}"));
    let last = target_dir().join(format!("smoke-last-{name}.bin"));
    let mut groups = Groups::new();
    let mut start = 0usize;
    let mut crashes = 0usize;
    loop {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([test_fn, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, start.to_string())
            .output()
            .expect("spawn child");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for line in stderr.lines() {
            if let Some(rest) = line.strip_prefix("GROUP\t") {
                let f: Vec<&str> = rest.splitn(4, '\t').collect();
                let (loc, first, count, msg) = (
                    f[0],
                    f[1].parse().unwrap(),
                    f[2].parse::<usize>().unwrap(),
                    f[3],
                );
                groups
                    .entry(loc.to_string())
                    .or_insert((first, msg.to_string(), 0))
                    .2 += count;
            } else if line.starts_with(name) || line.starts_with("  ") {
                eprintln!("{line}");
            }
        }
        use std::os::unix::process::ExitStatusExt;
        let Some(sig) = out.status.signal() else {
            break;
        };
        // Died by a signal: the progress file names the input.
        crashes += 1;
        let i: usize = std::fs::read_to_string(&progress)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let input = std::fs::read(&last).unwrap_or_default();
        let loc = format!("signal {sig}");
        let g = groups
            .entry(loc.clone())
            .or_insert((i, String::from("process killed"), 0));
        g.2 += 1;
        if g.2 == 1 {
            let keep = target_dir().join(format!("smoke-fail-{name}-{i}.bin"));
            let _ = std::fs::write(&keep, &input);
            eprintln!(
                "{name}: input {i} killed the process ({loc}); {} bytes saved to {}{}",
                input.len(),
                keep.display(),
                if input.len() <= 512 {
                    format!(": {}", hex(&input))
                } else {
                    String::new()
                }
            );
        }
        start = i + 1;
        if start >= n || crashes >= 200 {
            break;
        }
    }
    eprintln!(
        "{name}: {n} inputs in {:.1}s, {} distinct failure locations",
        t0.elapsed().as_secs_f64(),
        groups.len()
    );
    let ignore: Vec<String> = std::env::var("MDB_FUZZ_IGNORE")
        .map(|s| {
            s.split(',')
                .filter(|x| !x.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let mut bad = 0;
    for (loc, (i, msg, c)) in &groups {
        let ignored = ignore
            .iter()
            .any(|x| format!("{loc}: {msg}").contains(x.as_str()));
        eprintln!(
            "  {c:>6}x {loc}: {msg} (first: input {i}){}",
            if ignored { " [ignored]" } else { "" }
        );
        if !ignored {
            bad += 1;
        }
    }
    assert!(bad == 0, "{name}: {bad} failure locations (see above)");
}

/// The child's side of [`drive`]: run inputs `start..n` in this process.
fn run_inputs(
    name: &str,
    start: usize,
    n: usize,
    mut gen: impl FnMut(&mut XorShift, usize) -> Vec<u8>,
    f: impl Fn(&[u8]),
) {
    quiet_hook();
    let last = target_dir().join(format!("smoke-last-{name}.bin"));
    let progress = target_dir().join(format!("smoke-progress-{name}"));
    let seed = base_seed();
    let mut groups = Groups::new();
    for i in start..n {
        let mut rng = XorShift::new(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let input = gen(&mut rng, i);
        let _ = std::fs::write(&last, &input);
        let _ = std::fs::write(&progress, i.to_string());
        if catch_unwind(AssertUnwindSafe(|| f(&input))).is_err() {
            let (loc, msg) = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_default();
            let msg = msg.replace(['\n', '\t'], " ");
            // Reported at once: a later crash by signal must not lose it.
            eprintln!("GROUP\t{loc}\t{i}\t1\t{msg}");
            let g = groups.entry(loc.clone()).or_insert((i, msg.clone(), 0));
            g.2 += 1;
            if g.2 == 1 {
                let keep = target_dir().join(format!("smoke-fail-{name}-{i}.bin"));
                let _ = std::fs::write(&keep, &input);
                eprintln!(
                    "{name}: input {i} (seed {seed}) panicked at {loc}: {msg}\n  {} bytes saved to {}{}",
                    input.len(),
                    keep.display(),
                    if input.len() <= 512 { format!(": {}", hex(&input)) } else { String::new() }
                );
            }
        }
    }
}

#[test]
fn check_file_smoke() {
    let seed = mdb_fuzz::seed::seed_file();
    drive(
        "check_file",
        "check_file_smoke",
        count(),
        |rng, i| match i % 4 {
            // Random bytes, sometimes with a plausible meta page 0 header.
            0 => {
                let len = rng.below(9000);
                let mut b = rng.bytes(len);
                if b.len() >= 48 && rng.below(2) == 0 {
                    b[16..20].copy_from_slice(&0xBEEF_C0DEu32.to_le_bytes());
                    b[20..24].copy_from_slice(&1u32.to_le_bytes());
                    b[40..44].copy_from_slice(&[512u32, 1024, 4096][rng.below(3)].to_le_bytes());
                }
                b
            }
            // The seed file, truncated anywhere.
            1 => {
                let mut b = seed.bytes.clone();
                b.truncate(rng.below(b.len() + 1));
                b
            }
            // The seed file with edits (open_corrupt's encoding).
            _ => {
                let mut b = seed.bytes.clone();
                let n = 1 + rng.below(24);
                let edits = rng.bytes(5 * n);
                mdb_fuzz::apply_edits(&mut b, seed.psize, &edits);
                b
            }
        },
        mdb_fuzz::check_file,
    );
}

#[test]
fn open_corrupt_smoke() {
    drive(
        "open_corrupt",
        "open_corrupt_smoke",
        count(),
        |rng, _| {
            let max = if rng.below(4) == 0 { 40 } else { 6 };
            let n = 1 + rng.below(max);
            rng.bytes(5 * n)
        },
        mdb_fuzz::open_corrupt,
    );
}

#[test]
fn open_wal_corrupt_smoke() {
    drive(
        "open_wal_corrupt",
        "open_wal_corrupt_smoke",
        count() / 3,
        |rng, _| {
            let n = 1 + rng.below(6);
            rng.bytes(5 * n)
        },
        mdb_fuzz::open_wal_corrupt,
    );
}

#[test]
fn ops_model_smoke() {
    drive(
        "ops_model",
        "ops_model_smoke",
        count() / 3,
        |rng, _| {
            let n = 64 + rng.below(4096);
            rng.bytes(n)
        },
        |data| {
            if let Ok(input) = mdb_fuzz::ops::Input::arbitrary_take_rest(Unstructured::new(data)) {
                mdb_fuzz::ops::run(input);
            }
        },
    );
}

/// The pristine seed file opens and walks without an error (the seed builder
/// asserts this too).
#[test]
fn pristine_seed_walks() {
    mdb_fuzz::open_corrupt(&[]);
    let seed = mdb_fuzz::seed::seed_file();
    assert!(mdb::check::check_bytes(&seed.bytes).is_ok());
}
