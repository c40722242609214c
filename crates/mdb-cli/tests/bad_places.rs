//! The tools where there is no environment, and `mdb load` with a header
//! asking for a lock file too large for the disk or for reason: an error
//! and a non-zero exit, never a new environment, a signal or a huge file.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

// Shared with mdb's tests: fail, naming the Debian package, when a tool is missing.
#[path = "../../mdb/tests/debian/mod.rs"]
mod debian;

const OURS: &str = env!("CARGO_BIN_EXE_mdb");

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().unwrap()
}

/// Exit code, or 128 + the signal that ended the process.
fn code(o: &Output) -> i32 {
    o.status
        .code()
        .unwrap_or_else(|| 128 + o.status.signal().unwrap_or(0))
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn no_tool_creates_an_environment_where_there_is_none() {
    let t = tempfile::tempdir().unwrap();
    let other = t.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let o = other.to_str().unwrap();
    // Each tool on an empty directory, and with -n on a missing file.
    let cmds: &[&[&str]] = &[
        &["stat"],
        &["stat", "-e"],
        &["stat", "-rr"],
        &["stat", "-a"],
        &["dump"],
        &["dump", "-a"],
        &["copy", "-c", "@", o],
        &["copy", "@", o],
        &["check"],
        &["readers"],
        &["readers", "--check"],
        &["drop"],
        &["drop", "-d", "-s", "x"],
        &["checkpoint"],
        &["shrink"],
        &["backup", "@", &format!("{o}/b")],
    ];
    for cmd in cmds {
        for nosubdir in [false, true] {
            let env = t.path().join("env");
            std::fs::create_dir(&env).unwrap();
            let (place, opt) = if nosubdir {
                (env.join("x"), Some("-n"))
            } else {
                (env.clone(), None)
            };
            let place = place.to_str().unwrap();
            let args: Vec<&str> = std::iter::once(cmd[0])
                .chain(opt)
                .chain(cmd[1..].iter().map(|a| if *a == "@" { place } else { a }))
                .chain((!cmd.contains(&"@")).then_some(place))
                .collect();
            let out = run(Command::new(OURS).args(&args));
            let err = String::from_utf8_lossy(&out.stderr);
            assert_ne!(code(&out), 0, "mdb {args:?} succeeded: {err}");
            assert!(code(&out) < 128, "mdb {args:?}: killed by a signal");
            assert!(!err.is_empty(), "mdb {args:?}: no message");
            assert_eq!(entries(&env), Vec::<String>::new(), "mdb {args:?}");
            assert_eq!(entries(&other), Vec::<String>::new(), "mdb {args:?}");
            std::fs::remove_dir(&env).unwrap();
        }
    }
}

#[test]
fn maintenance_tools_say_why_they_refuse() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().to_str().unwrap();
    for tool in ["checkpoint", "shrink"] {
        let out = run(Command::new(OURS).args([tool, d]));
        assert_eq!(code(&out), 1);
        let want = format!(
            "mdb {tool}: {d}: not an environment ({d}/data.mdb: No such file or directory)\n"
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), want);
    }
    // mdb drop says what mdb_stat and mdb_dump say there.
    let out = run(Command::new(OURS).args(["drop", d]));
    assert_eq!(code(&out), 1);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "mdb_env_open failed, error 2 No such file or directory\n"
    );
    // An empty data file is no environment either.
    std::fs::write(t.path().join("data.mdb"), b"").unwrap();
    let out = run(Command::new(OURS).args(["shrink", d]));
    assert_eq!(code(&out), 1);
    assert!(String::from_utf8_lossy(&out.stderr).ends_with("data.mdb: empty file)\n"));
    assert_eq!(entries(t.path()), ["data.mdb"]);
}

#[test]
fn debian_tools_create_nothing_either() {
    debian::lmdb_utils();
    let t = tempfile::tempdir().unwrap();
    let env = t.path().join("env");
    std::fs::create_dir(&env).unwrap();
    let e = env.to_str().unwrap();
    let out_dir = t.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let runs: &[&[&str]] = &[
        &["mdb_stat", e],
        &["mdb_stat", "-r", e],
        &["mdb_dump", e],
        &["mdb_copy", e, out_dir.to_str().unwrap()],
    ];
    for args in runs {
        let theirs = run(Command::new(format!("/usr/bin/{}", args[0]))
            .arg0(args[0])
            .args(&args[1..]));
        assert_eq!(code(&theirs), 1, "{args:?}");
        let ours = run(Command::new(OURS).arg0(args[0]).args(&args[1..]));
        assert_eq!(code(&ours), 1, "{args:?}");
        assert_eq!(ours.stderr, theirs.stderr, "{args:?}");
        assert_eq!(entries(&env), Vec::<String>::new(), "{args:?}");
    }
}

fn dump_with(header_line: &str) -> String {
    format!(
        "VERSION=3\nformat=bytevalue\ntype=btree\n{header_line}\nHEADER=END\n 61\n 62\nDATA=END\n"
    )
}

#[test]
fn load_bounds_maxreaders() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("in");
    let env = t.path().join("env");
    std::fs::create_dir(&env).unwrap();
    let load = |header: &str| {
        std::fs::write(&input, dump_with(header)).unwrap();
        run(Command::new(OURS)
            .arg("load")
            .arg("-f")
            .arg(&input)
            .arg(&env))
    };
    // LMDB sizes the lock file to match: 256 GiB (sparse) for 2^32-1, and
    // ours wrote that many zeros.
    for n in ["4294967295", "-1", "4194305"] {
        let out = load(&format!("maxreaders={n}"));
        let want = format!(
            "mdb_load: line 4: maxreaders {} exceeds the limit of 4194304\n",
            if n == "-1" { "4294967295" } else { n }
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), want);
        assert_eq!(code(&out), 1);
        assert_eq!(entries(&env), Vec::<String>::new());
    }
    // Within the bound: the lock file has that many slots (128 + 64 each,
    // as LMDB's), and LMDB reads them off its size.
    let out = load("maxreaders=1000");
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let lock = std::fs::metadata(env.join("lock.mdb")).unwrap().len();
    assert_eq!(lock, 128 + 64 * 1000);
}

/// `mdb load` of `dump` into a 256 KiB tmpfs, in mount and user namespaces
/// of its own (`unshare`, util-linux), so that it works as root or not.
fn load_on_tiny_fs(dir: &Path, dump: &str) -> Output {
    let input = dir.join("in");
    std::fs::write(&input, dump).unwrap();
    let mnt = dir.join("fs");
    std::fs::create_dir(&mnt).unwrap();
    debian::need("/usr/bin/unshare", "util-linux");
    let script =
        r#"mount -t tmpfs -o size=256k tmpfs "$1" || exit 99; exec "$2" load -f "$3" "$1""#;
    run(Command::new("/usr/bin/unshare")
        .args(["-Urm", "sh", "-c", script, "sh"])
        .arg(&mnt)
        .arg(OURS)
        .arg(&input))
}

#[test]
fn load_on_a_full_file_system_fails_with_enospc_not_sigbus() {
    let t = tempfile::tempdir().unwrap();
    // 1000000 slots: a 64 MB lock file. Zeroing it through the map of a
    // sparse file raised SIGBUS where the disk had no room.
    let out = load_on_tiny_fs(t.path(), &dump_with("maxreaders=1000000"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(code(&out), 99, "no tmpfs could be mounted: {err}");
    assert_eq!(
        (code(&out), err.as_ref()),
        (1, "mdb_env_open failed, error 28 No space left on device\n")
    );
    // What fits loads.
    let t = tempfile::tempdir().unwrap();
    let out = load_on_tiny_fs(t.path(), &dump_with("maxreaders=1000"));
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn load_huge_mapsize_fails_as_lmdb_does() {
    debian::lmdb_utils();
    for size in [
        "18446744073709551615",
        "18446744073709551000",
        "140737488355328",
    ] {
        let t = tempfile::tempdir().unwrap();
        let input = t.path().join("in");
        std::fs::write(&input, dump_with(&format!("mapsize={size}"))).unwrap();
        let mut files = Vec::new();
        for (prog, arg0) in [("/usr/bin/mdb_load", "mdb_load"), (OURS, "mdb_load")] {
            let env = t.path().join(files.len().to_string());
            std::fs::create_dir(&env).unwrap();
            let out = run(Command::new(prog)
                .arg0(arg0)
                .arg("-f")
                .arg(&input)
                .arg(&env));
            assert_eq!(
                (code(&out), String::from_utf8_lossy(&out.stderr).as_ref()),
                (1, "mdb_env_open failed, error 12 Cannot allocate memory\n"),
                "{prog} mapsize={size}"
            );
            files.push(std::fs::read(env.join("data.mdb")).unwrap());
        }
        // The new file records the size asked for, as LMDB's does.
        assert!(files[0] == files[1], "mapsize={size}: data files differ");
    }
}

#[test]
fn load_reads_long_header_lines_as_lmdb_does() {
    debian::lmdb_utils();
    // LMDB reads a header line in pieces of 4095 bytes, each a line: a
    // longer one ends in a piece without `=`.
    for n in [4090, 4091, 10000] {
        let t = tempfile::tempdir().unwrap();
        let input = t.path().join("in");
        let long = format!("foo={}", "x".repeat(n));
        std::fs::write(&input, dump_with(&long)).unwrap();
        let mut runs = Vec::new();
        for prog in ["/usr/bin/mdb_load", OURS] {
            let env = t.path().join(runs.len().to_string());
            std::fs::create_dir(&env).unwrap();
            let out = run(Command::new(prog)
                .arg0("mdb_load")
                .arg("-f")
                .arg(&input)
                .arg(&env));
            runs.push((
                code(&out),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        assert_eq!(runs[1], runs[0], "foo= and {n} bytes: ours vs Debian");
    }
}

#[test]
fn load_of_endless_input_stops() {
    debian::lmdb_utils();
    // No newline ever: a header line (as LMDB: 4095 bytes without `=`).
    // Ours runs in 1 GB of address space, so that a regression fails
    // rather than takes the machine's memory.
    let t = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for ours in [false, true] {
        let env = t.path().join(runs.len().to_string());
        std::fs::create_dir(&env).unwrap();
        let out = if ours {
            let script = r#"ulimit -v 1000000; exec "$0" load -f /dev/zero "$1""#;
            run(Command::new("sh").args(["-c", script, OURS]).arg(&env))
        } else {
            run(Command::new("/usr/bin/mdb_load")
                .arg0("mdb_load")
                .args(["-f", "/dev/zero"])
                .arg(&env))
        };
        runs.push((
            code(&out),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    assert_eq!(runs[1], runs[0]);
    assert_eq!(runs[1], (1, "mdb_load: line 1: unexpected format\n".into()));
    // A record line that never ends (LMDB's buffer grows until memory runs
    // out): longer than any record the map can hold, it fails as that put
    // would, after 3 MiB or so, in 1 GB of address space.
    for (before, err) in [
        (
            "",
            "line 3: mdb_cursor_put failed, error -30781 MDB_BAD_VALSIZE",
        ),
        (
            " 61\\n",
            "line 4: mdb_cursor_put failed, error -30792 MDB_MAP_FULL",
        ),
    ] {
        let env = t.path().join("endless");
        std::fs::create_dir(&env).unwrap();
        let script = format!(
            r#"ulimit -v 1000000; {{ printf 'VERSION=3\nHEADER=END\n{before} '; tr '\0' a < /dev/zero; }} | "$0" load "$1""#
        );
        let out = run(Command::new("sh").args(["-c", &script, OURS]).arg(&env));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 1, "{stderr}");
        assert!(stderr.starts_with(&format!("mdb_load: {err}")), "{stderr}");
        std::fs::remove_dir_all(&env).unwrap();
    }
}
