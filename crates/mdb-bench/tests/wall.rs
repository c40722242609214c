//! The wall-clock mode keeps working: at a tiny size every workload, and
//! every size of `--scale`, yields a time for both engines. Times are what
//! the mode measures, never what a test asserts.

use std::process::Command;

fn bench(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mdb-bench"))
        .args(args)
        .output()
        .expect("cannot run mdb-bench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "mdb-bench {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `bench` with `--dir` a fresh directory `tag` under `base`, removed after.
fn bench_in(base: &std::path::Path, tag: &str, args: &[&str]) -> String {
    let dir = base.join(format!("{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut all = args.to_vec();
    all.extend(["--dir", dir.to_str().unwrap()]);
    let out = bench(&all);
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// The cells of the markdown row whose first cell contains `name`.
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    let line = table
        .lines()
        .find(|l| l.starts_with('|') && l.split('|').nth(1).is_some_and(|c| c.contains(name)))
        .unwrap_or_else(|| panic!("no row for {name}:\n{table}"));
    line.trim_matches('|').split('|').map(str::trim).collect()
}

/// A time cell: "1.23 µs (1.20 µs-1.30 µs)".
fn is_time(cell: &str) -> bool {
    ["ns", "µs", "ms"].iter().any(|u| cell.contains(u))
}

#[test]
fn every_workload_yields_times_for_both_engines() {
    let workloads = [
        "load",
        "get",
        "scan",
        "file_read",
        "file_pread",
        "scan_ordered",
        "file_read_ordered",
        "bulk_load",
        "bulk_scan",
        "bulk_file_read",
        "append_load",
        "cursor_delete",
    ];
    let out = bench(&[
        "--n",
        "2000",
        "--reps",
        "2",
        "--markdown",
        "--only",
        &workloads.join(","),
    ]);
    for w in workloads {
        let cells = row(&out, &format!("`{w}`"));
        assert_eq!(cells.len(), 5, "{cells:?}");
        assert!(is_time(cells[1]) && is_time(cells[2]), "{w}: {cells:?}");
        assert!(cells[3].parse::<f64>().is_ok(), "{w}: ratio {:?}", cells[3]);
    }
    for line in [
        "Full scan against summing the mapped data file",
        "Full scan against read(2) of the data file",
        "Full scan of a compacted copy (leaves in key order)",
        "Full scan of a database loaded in one transaction",
    ] {
        assert!(out.contains(line), "{line}:\n{out}");
    }
}

/// `cold_scan` drops the file from the page cache (on the disk of the
/// build directory: tmpfs pages cannot be dropped) and times both engines.
#[test]
fn cold_scan_times_both_engines() {
    let out = bench_in(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        "mdb-bench-cold",
        &[
            "--only",
            "cold_scan",
            "--disk-n",
            "3000",
            "--reps",
            "2",
            "--markdown",
        ],
    );
    let cells = row(&out, "`cold_scan`");
    assert_eq!(cells.len(), 5, "{cells:?}");
    assert!(is_time(cells[1]) && is_time(cells[2]), "{cells:?}");
}

#[test]
fn scale_reports_each_size_and_the_growth() {
    let out = bench(&["--scale", "1000,3000", "--reps", "1"]);
    for n in ["1000", "3000"] {
        let cells = row(&out, n);
        assert!(is_time(cells[1]) && is_time(cells[2]), "{n}: {cells:?}");
    }
    assert!(
        out.contains("Cost per key from 1000 to 3000 keys: mdb "),
        "{out}"
    );
}

/// The on-disk comparisons: every contender of `sync_put`, `batch_put` and
/// `disk_get` yields a time and a rate, and the rate ratios are printed.
#[test]
fn disk_workloads_yield_every_contender() {
    let out = bench_in(
        &std::env::temp_dir(),
        "mdb-bench-wall",
        &[
            "--only",
            "sync_put,batch_put,disk_get",
            "--sync-n",
            "20",
            "--disk-n",
            "3000",
            "--reps",
            "2",
            "--markdown",
        ],
    );
    for w in ["`sync_put`", "`batch_put`", "`disk_get`"] {
        assert!(out.contains(w), "{w} missing:\n{out}");
    }
    for c in ["LMDB", "mdb", "mdb WAL", "limit"] {
        let cells = row(&out, c);
        assert_eq!(cells.len(), 3, "{cells:?}");
        assert!(is_time(cells[1]), "{c}: {cells:?}");
    }
    for r in [
        "mdb WAL / limit",
        "mdb WAL / LMDB",
        "mdb / LMDB",
        "mdb WAL / mdb",
    ] {
        let cells = row(&out, r);
        assert!(cells[1].parse::<f64>().is_ok(), "{r}: {cells:?}");
    }
}

/// `py_sync` runs the python3-lmdb script on each library: it needs our
/// library beside the benchmark (`cargo build -p mdb-ffi`, as
/// scripts/test.sh does) and Debian's python3-lmdb, and fails without
/// them; mdb-ffi's own tests cover the binding itself.
#[test]
fn py_sync_runs_the_script_on_each_library() {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_mdb-bench"));
    let lib = exe.with_file_name("liblmdb.so");
    assert!(
        lib.exists(),
        "{} is missing: build it with `cargo build -p mdb-ffi`",
        lib.display()
    );
    let has_py = Command::new("/usr/bin/python3")
        .args(["-c", "import lmdb"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        has_py,
        "/usr/bin/python3 cannot import lmdb: this test needs Debian's python3-lmdb"
    );
    let out = bench_in(
        &std::env::temp_dir(),
        "mdb-bench-py",
        &[
            "--only",
            "py_sync",
            "--py-n",
            "20",
            "--reps",
            "1",
            "--markdown",
        ],
    );
    for c in ["Debian liblmdb", "ours", "ours MDB_WAL=1"] {
        assert!(is_time(row(&out, c)[1]), "{c}:\n{out}");
    }
}
