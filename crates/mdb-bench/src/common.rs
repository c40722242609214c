//! What every report shares: scratch directories, the host it ran on, and
//! the statistics and formatting of timings.

use crate::workloads::Res;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory removed when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf, bool);

impl TempDir {
    pub(crate) fn new(base: &Path, tag: &str, keep: bool) -> Res<TempDir> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let p = base.join(format!("mdb-bench-{}-{seq}-{tag}", std::process::id()));
        std::fs::create_dir_all(&p)?;
        Ok(TempDir(p, keep))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.1 {
            eprintln!("  kept {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub(crate) fn git_commit() -> String {
    let run = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match run(&["rev-parse", "--short", "HEAD"]) {
        Some(c) => {
            let dirty = run(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{c} (with uncommitted changes)")
            } else {
                c
            }
        }
        None => "unknown".into(),
    }
}

pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

pub(crate) fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The file system type of `p`, as `df -T` prints it ("ext4", "tmpfs").
pub(crate) fn fs_type(p: &Path) -> String {
    Command::new("df")
        .arg("--output=fstype,source")
        .arg(p)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            let s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.lines()
                .nth(1)
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" on "))
        })
        .unwrap_or_else(|| "file system unknown".into())
}

pub(crate) fn fmt_time(d: f64) -> String {
    if d < 1e-6 {
        format!("{:.0} ns", d * 1e9)
    } else if d < 1e-3 {
        format!("{:.2} µs", d * 1e6)
    } else {
        format!("{:.2} ms", d * 1e3)
    }
}

pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let m = s.len() / 2;
    match s.len() {
        0 => None,
        n if n % 2 == 1 => Some(s[m]),
        _ => Some((s[m - 1] + s[m]) / 2.0),
    }
}

/// Smallest and largest of `v`.
pub(crate) fn range(v: &[f64]) -> Option<(f64, f64)> {
    let lo = v.iter().copied().reduce(f64::min)?;
    let hi = v.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}

/// Median per op and the range of a sample, e.g. `1.52 µs (1.50-1.61)`.
pub(crate) fn time_range(v: &[f64]) -> String {
    match (median(v), range(v)) {
        (Some(m), Some((lo, hi))) => format!("{} ({}-{})", fmt_time(m), fmt_time(lo), fmt_time(hi)),
        _ => "-".into(),
    }
}
