//! Client histories of a key-value cluster, checked for linearizability
//! with stateright's `LinearizabilityTester`: one register per key (the
//! value, `None` when absent), so each key's history is checked on its own
//! (linearizability is compositional).
//!
//! Clients record an invocation before they send a request and its
//! outcome after the answer, under one lock, so the recorded order is
//! consistent with real time. An operation that failed for sure (a write
//! refused by a follower) is left out; one whose outcome is unknown (a
//! timeout, a 503, a reset connection) stays in flight for ever: a write
//! may then have taken effect at any point after its invocation or not at
//! all, and its client continues as a new thread (a thread has one
//! operation in flight at most). A read that failed constrains nothing.

use stateright::semantics::register::{Register, RegisterOp, RegisterRet};
use stateright::semantics::{ConsistencyTester, LinearizabilityTester};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A register's value: `None` for an absent key.
pub type Value = Option<String>;

/// An operation on one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// PUT (`Some`) or DELETE (`None`).
    Write(Value),
    /// A linearizable GET.
    Read,
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A write acknowledged.
    Written,
    /// A read's answer.
    Read(Value),
    /// Failed without taking effect.
    Failed,
    /// Unknown (timeout, 503, connection lost).
    Unknown,
}

#[derive(Debug, Clone)]
enum Event {
    Invoke {
        id: usize,
        thread: u64,
        key: String,
        op: Op,
    },
    Return {
        id: usize,
        outcome: Outcome,
    },
}

/// A shared, append-only record of invocations and outcomes.
#[derive(Clone, Default)]
pub struct History {
    events: Arc<Mutex<Vec<Event>>>,
}

impl History {
    /// Record that `thread` invokes `op` on `key`; returns the operation's
    /// id for [`History::end`].
    pub fn begin(&self, thread: u64, key: &str, op: Op) -> usize {
        let mut ev = self.events.lock().unwrap();
        let id = ev.len();
        ev.push(Event::Invoke {
            id,
            thread,
            key: key.to_string(),
            op,
        });
        id
    }

    /// Record how operation `id` ended.
    pub fn end(&self, id: usize, outcome: Outcome) {
        self.events
            .lock()
            .unwrap()
            .push(Event::Return { id, outcome });
    }

    /// Every acknowledged write: key -> values written.
    pub fn acknowledged(&self) -> BTreeMap<String, Vec<Value>> {
        let ev = self.events.lock().unwrap();
        let mut ops = BTreeMap::new();
        let mut acked: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for e in ev.iter() {
            match e {
                Event::Invoke { id, key, op, .. } => {
                    ops.insert(*id, (key.clone(), op.clone()));
                }
                Event::Return {
                    id,
                    outcome: Outcome::Written,
                } => {
                    let (key, op) = &ops[id];
                    if let Op::Write(v) = op {
                        acked.entry(key.clone()).or_default().push(v.clone());
                    }
                }
                Event::Return { .. } => {}
            }
        }
        acked
    }

    /// Counts of the outcomes: (acknowledged writes, reads, failed, unknown).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let ev = self.events.lock().unwrap();
        let mut c = (0, 0, 0, 0);
        for e in ev.iter() {
            match e {
                Event::Return { outcome, .. } => match outcome {
                    Outcome::Written => c.0 += 1,
                    Outcome::Read(_) => c.1 += 1,
                    Outcome::Failed => c.2 += 1,
                    Outcome::Unknown => c.3 += 1,
                },
                Event::Invoke { .. } => {}
            }
        }
        c
    }

    /// Check every key's history, followed by a read of `final_state`
    /// (the state every node holds once they have converged, read after
    /// every operation) for each key. `Err` names a key whose history is
    /// not linearizable and prints it.
    pub fn check(&self, final_state: &BTreeMap<String, String>) -> Result<usize, String> {
        let ev = self.events.lock().unwrap();
        let mut outcome: BTreeMap<usize, &Outcome> = BTreeMap::new();
        for e in ev.iter() {
            if let Event::Return { id, outcome: o } = e {
                outcome.insert(*id, o);
            }
        }
        // Per key, the events to replay (failed operations and failed or
        // unknown reads left out).
        let mut per_key: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
        let mut key_of: BTreeMap<usize, &str> = BTreeMap::new();
        for e in ev.iter() {
            match e {
                Event::Invoke { id, key, op, .. } => {
                    let keep = match (op, outcome.get(id)) {
                        (_, Some(Outcome::Failed)) => false,
                        (Op::Read, Some(Outcome::Read(_))) => true,
                        (Op::Read, _) => false,
                        (Op::Write(_), _) => true,
                    };
                    if keep {
                        key_of.insert(*id, key);
                        per_key.entry(key).or_default().push(e);
                    }
                }
                Event::Return { id, outcome: o } => {
                    if *o != Outcome::Unknown {
                        if let Some(k) = key_of.get(id) {
                            per_key.get_mut(k).unwrap().push(e);
                        }
                    }
                }
            }
        }
        // A key no operation touched must be absent at the end.
        for k in final_state.keys() {
            per_key.entry(k).or_default();
        }
        let mut checked = 0;
        for (key, events) in per_key {
            let mut t = LinearizabilityTester::new(Register::<Value>(None));
            let mut thread_of = BTreeMap::new();
            for e in &events {
                match e {
                    Event::Invoke { id, thread, op, .. } => {
                        thread_of.insert(*id, *thread);
                        let op = match op {
                            Op::Write(v) => RegisterOp::Write(v.clone()),
                            Op::Read => RegisterOp::Read,
                        };
                        t.on_invoke(*thread, op)
                            .map_err(|e| format!("{key}: {e}"))?;
                    }
                    Event::Return { id, outcome } => {
                        let ret = match outcome {
                            Outcome::Written => RegisterRet::WriteOk,
                            Outcome::Read(v) => RegisterRet::ReadOk(v.clone()),
                            o => unreachable!("{o:?} is not replayed"),
                        };
                        t.on_return(thread_of[id], ret)
                            .map_err(|e| format!("{key}: {e}"))?;
                    }
                }
            }
            // The converged state, read after everything else.
            let last = u64::MAX;
            t.on_invoke(last, RegisterOp::Read).unwrap();
            t.on_return(last, RegisterRet::ReadOk(final_state.get(key).cloned()))
                .unwrap();
            if t.serialized_history().is_none() {
                let lines: Vec<String> = events.iter().map(|e| format!("  {e:?}")).collect();
                return Err(format!(
                    "the history of {key} is not linearizable (final value {:?}):\n{}",
                    final_state.get(key),
                    lines.join("\n")
                ));
            }
            checked += 1;
        }
        Ok(checked)
    }
}
