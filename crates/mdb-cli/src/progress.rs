//! A progress bar on standard error, for long operations.
//!
//! It is drawn only when standard error is a terminal, and (for tools that
//! write their data to standard output) only when standard output is not the
//! same terminal. It appears after a short delay, so quick runs never show
//! it, is redrawn at most ten times a second, and is erased when the work is
//! done, so nothing of it remains in the terminal's scroll-back. Everywhere
//! else, a `Progress` does nothing: output to pipes and files is unchanged.
//!
//! ```text
//! copy  [=================>             ]  57%   37.5/65.4 MiB  212 MiB/s  ETA 0:01
//! ```

use std::io::Write;
use std::time::{Duration, Instant};

/// What the counted units are, for the figures after the bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Bytes, shown in KiB/MiB/GiB.
    Bytes,
    /// Records (or other items), shown as plain counts.
    Items(&'static str),
}

/// Whether file descriptor `fd` is a terminal.
pub(crate) fn isatty(fd: i32) -> bool {
    // SAFETY: isatty has no memory-safety preconditions.
    unsafe { libc::isatty(fd) == 1 }
}

/// Width of the terminal on standard error, or 80.
fn term_width() -> usize {
    // SAFETY: TIOCGWINSZ fills a winsize struct that we own.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_col >= 20 {
            return ws.ws_col as usize;
        }
    }
    80
}

/// A progress bar. Cheap to update: with a stride it looks at the clock
/// only every so many calls.
pub(crate) struct Progress {
    enabled: bool,
    label: String,
    unit: Unit,
    total: u64,
    done: u64,
    start: Instant,
    delay: Duration,
    last_draw: Option<Instant>,
    calls: u32,
    stride: u32,
    shown: std::cell::Cell<bool>,
}

impl Progress {
    /// A bar on standard error if it is a terminal.
    pub(crate) fn new(label: &str, total: u64, unit: Unit) -> Progress {
        Progress::with(isatty(2), label, total, unit)
    }

    /// A bar for a tool whose output goes to standard output: drawn only if
    /// standard error is a terminal and standard output is not one.
    pub(crate) fn beside_stdout(label: &str, total: u64, unit: Unit) -> Progress {
        Progress::with(isatty(2) && !isatty(1), label, total, unit)
    }

    /// A bar that draws only if `enabled`.
    pub(crate) fn with(enabled: bool, label: &str, total: u64, unit: Unit) -> Progress {
        Progress {
            enabled,
            label: label.to_string(),
            unit,
            total,
            done: 0,
            start: Instant::now(),
            delay: Duration::from_millis(750),
            last_draw: None,
            calls: 0,
            stride: 1,
            shown: std::cell::Cell::new(false),
        }
    }

    /// A bar that does nothing.
    pub(crate) fn disabled() -> Progress {
        Progress::with(false, "", 0, Unit::Bytes)
    }

    /// Show the bar from the start instead of after the usual delay.
    pub(crate) fn immediate(mut self) -> Progress {
        self.delay = Duration::ZERO;
        self
    }

    /// Look at the clock only every `n` updates (for per-record updates).
    pub(crate) fn stride(mut self, n: u32) -> Progress {
        self.stride = n.max(1);
        self
    }

    /// Change the total (0: unknown).
    pub(crate) fn set_total(&mut self, total: u64) {
        self.total = total;
    }

    /// Seconds since the bar was created.
    pub(crate) fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Report `done` units of work; redraws when it is time to.
    pub(crate) fn update(&mut self, done: u64) {
        self.done = done;
        if !self.enabled {
            return;
        }
        self.calls += 1;
        if self.calls < self.stride {
            return;
        }
        self.calls = 0;
        let now = Instant::now();
        if now.duration_since(self.start) < self.delay {
            return;
        }
        if let Some(t) = self.last_draw {
            if now.duration_since(t) < Duration::from_millis(100) {
                return;
            }
        }
        self.last_draw = Some(now);
        self.draw(now);
    }

    /// Erase the bar for good (it is also erased on drop).
    pub(crate) fn finish(&mut self) {
        self.clear();
        self.enabled = false;
    }

    /// Erase the bar for now, before a message is printed; it comes back at
    /// the next redraw.
    pub(crate) fn clear(&self) {
        if self.shown.get() {
            let _ = std::io::stderr().write_all(b"\r\x1b[K");
            self.shown.set(false);
        }
    }

    fn draw(&mut self, now: Instant) {
        let secs = now.duration_since(self.start).as_secs_f64().max(1e-3);
        let rate = self.done as f64 / secs;
        let mut figures = match self.unit {
            Unit::Bytes if self.total > 0 => {
                format!("{}/{}", size(self.done), size(self.total))
            }
            Unit::Bytes => size(self.done),
            Unit::Items(what) if self.total > 0 => {
                format!("{}/{} {what}", self.done, self.total)
            }
            Unit::Items(what) => format!("{} {what}", self.done),
        };
        if self.total > 0 {
            figures.push_str("  ");
            figures.push_str(&match self.unit {
                Unit::Bytes => format!("{}/s", size(rate as u64)),
                Unit::Items(_) => format!("{:.0}/s", rate),
            });
        }
        let eta = if self.total > self.done && rate > 0.0 {
            let left = (self.total - self.done) as f64 / rate;
            format!("  ETA {}", clock(left))
        } else {
            format!("  {}", clock(secs))
        };
        let width = term_width();
        let line = if self.total > 0 {
            let frac = (self.done as f64 / self.total as f64).min(1.0);
            let fixed = self.label.len() + 2 + 2 + 6 + figures.len() + eta.len() + 2;
            let bar_w = width.saturating_sub(fixed).clamp(10, 50);
            let fill = ((bar_w as f64) * frac) as usize;
            let mut bar = String::with_capacity(bar_w);
            for i in 0..bar_w {
                bar.push(if i < fill {
                    '='
                } else if i == fill {
                    '>'
                } else {
                    ' '
                });
            }
            format!(
                "{} [{}] {:3.0}%  {}{}",
                self.label,
                bar,
                frac * 100.0,
                figures,
                eta
            )
        } else {
            format!("{}  {}{}", self.label, figures, eta)
        };
        let line: String = line.chars().take(width.saturating_sub(1)).collect();
        let _ = std::io::stderr().write_all(format!("\r{line}\x1b[K").as_bytes());
        self.shown.set(true);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A byte count in binary units.
pub(crate) fn size(n: u64) -> String {
    const K: f64 = 1024.0;
    let f = n as f64;
    if f < K {
        format!("{n} B")
    } else if f < K * K {
        format!("{:.1} KiB", f / K)
    } else if f < K * K * K {
        format!("{:.1} MiB", f / (K * K))
    } else {
        format!("{:.2} GiB", f / (K * K * K))
    }
}

/// Seconds as `m:ss` or `h:mm:ss`.
fn clock(secs: f64) -> String {
    let s = secs.round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_clock() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(3 << 20), "3.0 MiB");
        assert_eq!(size(5 << 30), "5.00 GiB");
        assert_eq!(clock(61.0), "1:01");
        assert_eq!(clock(3725.0), "1:02:05");
    }

    #[test]
    fn disabled_bar_is_silent_and_cheap() {
        let mut p = Progress::disabled();
        for i in 0..1000 {
            p.update(i);
        }
        assert!(!p.enabled);
        p.finish();
    }
}
