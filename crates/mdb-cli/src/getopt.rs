//! A short-option parser with the behaviour of glibc's `getopt(3)`.
//!
//! * Options are single bytes and may be clustered (`-efa`).
//! * An option that takes an argument uses the rest of its word (`-sNAME`)
//!   or, if that is empty, the next word (`-s NAME`), whatever it looks like.
//! * `--` ends the options; a lone `-` is an operand.
//! * Like glibc, operands and options may be mixed (`dbpath -e`): operands are
//!   set aside and handed back, in order, by [`Getopt::operands`]. With the
//!   environment variable `POSIXLY_CORRECT` set, parsing stops at the first
//!   operand instead, as POSIX requires.
//! * Errors carry glibc's diagnostic texts (see [`GetoptError::message`]).

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// One parsed option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opt {
    /// An option without argument, e.g. `b'e'`.
    Flag(u8),
    /// An option with its argument, e.g. `(b's', "fruits")`.
    Arg(u8, OsString),
    /// The word `--help` (only when enabled with [`Getopt::with_long_help`]).
    Help,
}

/// A parse error, reported when the offending option is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetoptError {
    /// The option byte is not in the option string.
    Invalid(u8),
    /// The option needs an argument and none is left.
    MissingArg(u8),
}

impl GetoptError {
    /// glibc's message, without the trailing newline.
    pub fn message(&self, prog: &[u8]) -> Vec<u8> {
        let (text, c): (&[u8], u8) = match *self {
            GetoptError::Invalid(c) => (b": invalid option -- '", c),
            GetoptError::MissingArg(c) => (b": option requires an argument -- '", c),
        };
        let mut m = prog.to_vec();
        m.extend_from_slice(text);
        m.push(c);
        m.push(b'\'');
        m
    }
}

/// The parser. Call [`Getopt::next_opt`] until it returns `None`, then take
/// the operands.
pub struct Getopt {
    args: Vec<OsString>,
    spec: &'static [u8],
    /// Index of the word being looked at.
    pos: usize,
    /// Offset of the next option byte inside `args[pos]` (0: start a new word).
    sub: usize,
    operands: Vec<OsString>,
    permute: bool,
    long_help: bool,
    finished: bool,
}

impl Getopt {
    /// `args` excludes the program name; `spec` is a getopt option string
    /// such as `"af:lnps:V"` (a `:` after a letter means "takes an argument").
    pub fn new(args: Vec<OsString>, spec: &'static str) -> Getopt {
        let permute = std::env::var_os("POSIXLY_CORRECT").is_none();
        Getopt {
            args,
            spec: spec.as_bytes(),
            pos: 0,
            sub: 0,
            operands: Vec::new(),
            permute,
            long_help: false,
            finished: false,
        }
    }

    /// Also recognise the word `--help` as [`Opt::Help`].
    pub fn with_long_help(mut self, on: bool) -> Getopt {
        self.long_help = on;
        self
    }

    /// Force POSIX mode (stop at the first operand) or glibc's permuting mode.
    #[cfg(test)]
    pub fn permute(mut self, on: bool) -> Getopt {
        self.permute = on;
        self
    }

    /// Whether `c` is an option, and whether it takes an argument.
    fn lookup(&self, c: u8) -> Option<bool> {
        if c == b':' {
            return None;
        }
        let i = self.spec.iter().position(|&s| s == c)?;
        Some(self.spec.get(i + 1) == Some(&b':'))
    }

    /// The next option, an error, or `None` when the options are over.
    pub fn next_opt(&mut self) -> Option<Result<Opt, GetoptError>> {
        loop {
            if self.sub > 0 {
                let word = self.args[self.pos].as_bytes().to_vec();
                let c = word[self.sub];
                self.sub += 1;
                let at_end = self.sub >= word.len();
                let takes_arg = match self.lookup(c) {
                    None => {
                        if at_end {
                            self.next_word();
                        }
                        return Some(Err(GetoptError::Invalid(c)));
                    }
                    Some(t) => t,
                };
                if !takes_arg {
                    if at_end {
                        self.next_word();
                    }
                    return Some(Ok(Opt::Flag(c)));
                }
                if !at_end {
                    let val = OsString::from_vec(word[self.sub..].to_vec());
                    self.next_word();
                    return Some(Ok(Opt::Arg(c, val)));
                }
                self.next_word();
                if self.pos < self.args.len() {
                    let val = self.args[self.pos].clone();
                    self.pos += 1;
                    return Some(Ok(Opt::Arg(c, val)));
                }
                return Some(Err(GetoptError::MissingArg(c)));
            }
            if self.finished || self.pos >= self.args.len() {
                self.finished = true;
                return None;
            }
            let word = self.args[self.pos].as_bytes();
            if word == b"--" {
                self.pos += 1;
                self.finished = true;
                return None;
            }
            if self.long_help && word == b"--help" {
                self.pos += 1;
                return Some(Ok(Opt::Help));
            }
            if word.len() > 1 && word[0] == b'-' {
                self.sub = 1;
                continue;
            }
            if !self.permute {
                self.finished = true;
                return None;
            }
            self.operands.push(self.args[self.pos].clone());
            self.pos += 1;
        }
    }

    fn next_word(&mut self) {
        self.pos += 1;
        self.sub = 0;
    }

    /// The operands: those set aside while parsing, then every word not yet
    /// looked at (everything after `--`, or after the first operand in POSIX mode).
    pub fn operands(mut self) -> Vec<OsString> {
        let start = self.pos.min(self.args.len());
        let rest = self.args.split_off(start);
        self.operands.extend(rest);
        self.operands
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], spec: &'static str, permute: bool) -> (Vec<String>, Vec<String>) {
        let mut g = Getopt::new(args.iter().map(OsString::from).collect(), spec)
            .permute(permute)
            .with_long_help(true);
        let mut opts = Vec::new();
        while let Some(o) = g.next_opt() {
            opts.push(match o {
                Ok(Opt::Flag(c)) => format!("{}", c as char),
                Ok(Opt::Arg(c, v)) => format!("{}={}", c as char, v.to_string_lossy()),
                Ok(Opt::Help) => "help".to_string(),
                Err(GetoptError::Invalid(c)) => format!("?{}", c as char),
                Err(GetoptError::MissingArg(c)) => format!(":{}", c as char),
            });
        }
        let ops = g
            .operands()
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        (opts, ops)
    }

    #[test]
    fn clusters_and_arguments() {
        let (o, p) = parse(&["-efa", "-sNAME", "-s", "X", "db"], "aefs:", true);
        assert_eq!(o, ["e", "f", "a", "s=NAME", "s=X"]);
        assert_eq!(p, ["db"]);
        let (o, _) = parse(&["-es", "-a"], "aes:", true);
        assert_eq!(o, ["e", "s=-a"]);
        let (o, p) = parse(&["-ffs", "a", "b"], "fs:", true);
        assert_eq!(o, ["f", "f", "s=a"]);
        assert_eq!(p, ["b"]);
    }

    #[test]
    fn errors() {
        let (o, _) = parse(&["-qe", "-s"], "es:", true);
        assert_eq!(o, ["?q", "e", ":s"]);
        let (o, _) = parse(&["-:"], "es:", true);
        assert_eq!(o, ["?:"]);
        assert_eq!(
            GetoptError::Invalid(b'q').message(b"mdb_stat"),
            b"mdb_stat: invalid option -- 'q'"
        );
        assert_eq!(
            GetoptError::MissingArg(b's').message(b"p"),
            b"p: option requires an argument -- 's'"
        );
    }

    #[test]
    fn permutation_and_double_dash() {
        let (o, p) = parse(&["db", "-e", "x"], "e", true);
        assert_eq!(o, ["e"]);
        assert_eq!(p, ["db", "x"]);
        let (o, p) = parse(&["db", "-e"], "e", false);
        assert!(o.is_empty());
        assert_eq!(p, ["db", "-e"]);
        let (o, p) = parse(&["-e", "--", "-x", "-"], "e", true);
        assert_eq!(o, ["e"]);
        assert_eq!(p, ["-x", "-"]);
        let (o, p) = parse(&["-", "-e"], "e", true);
        assert_eq!(o, ["e"]);
        assert_eq!(p, ["-"]);
    }

    #[test]
    fn long_help() {
        let (o, _) = parse(&["-e", "--help"], "e", true);
        assert_eq!(o, ["e", "help"]);
        let mut g = Getopt::new(vec!["--help".into()], "e");
        assert_eq!(g.next_opt(), Some(Err(GetoptError::Invalid(b'-'))));
    }
}
