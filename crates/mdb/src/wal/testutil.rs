//! Test helpers of the log: a scripted fault injector and owned records.

use super::record::{RecordParts, RecordView};
use crate::io::{FaultInjector, IoAction, IoOp};
use std::sync::{Arc, Mutex};

type Decide = Box<dyn FnMut(IoOp) -> IoAction + Send>;

/// A fault injector that records every operation and lets a closure decide
/// each one's fate.
pub(crate) struct Script {
    decide: Mutex<Decide>,
    pub(crate) ops: Mutex<Vec<IoOp>>,
}

impl Script {
    pub(crate) fn new(f: impl FnMut(IoOp) -> IoAction + Send + 'static) -> Arc<Script> {
        Arc::new(Script {
            decide: Mutex::new(Box::new(f)),
            ops: Mutex::new(Vec::new()),
        })
    }

    /// Replace the deciding closure.
    pub(crate) fn set(&self, f: impl FnMut(IoOp) -> IoAction + Send + 'static) {
        *self.decide.lock().unwrap() = Box::new(f);
    }

    /// The operations seen so far.
    pub(crate) fn ops(&self) -> Vec<IoOp> {
        self.ops.lock().unwrap().clone()
    }
}

impl FaultInjector for Script {
    fn on_io(&self, op: IoOp) -> IoAction {
        self.ops.lock().unwrap().push(op);
        (self.decide.lock().unwrap())(op)
    }
}

/// A record's parts, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) txnid: u64,
    pub(crate) psize: u32,
    pub(crate) runs: Vec<(u64, Vec<u8>)>,
    pub(crate) meta_off: u64,
    pub(crate) meta: Vec<u8>,
}

impl Rec {
    /// A record of txnid `txnid` with `pages` pages of `psize` bytes in up
    /// to three runs, filled from `rnd`.
    pub(crate) fn random(
        txnid: u64,
        psize: u32,
        pages: usize,
        rnd: &mut impl FnMut() -> u64,
    ) -> Rec {
        let mut runs = Vec::new();
        let mut left = pages;
        while left > 0 {
            let n = 1 + (rnd() as usize % left.min(3));
            let bytes = (0..n * psize as usize).map(|_| rnd() as u8).collect();
            runs.push((rnd() % 1000, bytes));
            left -= n;
        }
        let meta = (0..rnd() % 130).map(|_| rnd() as u8).collect();
        Rec {
            txnid,
            psize,
            runs,
            meta_off: rnd() % 8192,
            meta,
        }
    }

    /// Run `f` with the borrowed parts.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&RecordParts<'_>) -> R) -> R {
        let runs: Vec<(u64, &[u8])> = self.runs.iter().map(|(p, b)| (*p, &b[..])).collect();
        f(&RecordParts {
            txnid: self.txnid,
            psize: self.psize,
            runs: &runs,
            meta_off: self.meta_off,
            meta: &self.meta,
            trim: false,
            patches: &[],
            time_ns: 0,
        })
    }

    /// The record a view shows.
    pub(crate) fn of(v: &RecordView<'_>) -> Rec {
        let (meta_off, meta) = v.meta();
        Rec {
            txnid: v.txnid(),
            psize: v.psize(),
            runs: {
                let mut buf = Vec::new();
                let runs = v
                    .expand(&mut buf, |_, _| {
                        Err(crate::error::ErrorKind::Corrupted.into())
                    })
                    .unwrap();
                runs.into_iter().map(|(p, b)| (p, b.to_vec())).collect()
            },
            meta_off,
            meta: meta.to_vec(),
        }
    }
}
