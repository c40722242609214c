//! Shrink an `ops_model` input at the operation level while the panic
//! message still contains NEEDLE:
//! `cargo run --release --example minimize_ops -- FILE NEEDLE`
//! Prints the smallest `Input` found (Debug).
use arbitrary::{Arbitrary, Unstructured};
use mdb_fuzz::ops::{Input, Op};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

static MSG: Mutex<String> = Mutex::new(String::new());

fn fails(input: &Input, needle: &str) -> bool {
    MSG.lock().unwrap().clear();
    let r = catch_unwind(AssertUnwindSafe(|| mdb_fuzz::ops::run(input.clone())));
    r.is_err() && MSG.lock().unwrap().contains(needle)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).unwrap();
    let needle = &args[2];
    std::panic::set_hook(Box::new(|info| {
        *MSG.lock().unwrap() = format!("{info}");
    }));
    let mut cur = Input::arbitrary_take_rest(Unstructured::new(&data)).unwrap();
    assert!(
        fails(&cur, needle),
        "does not reproduce: {}",
        MSG.lock().unwrap()
    );
    loop {
        let mut changed = false;
        // Drop whole operations.
        let mut i = 0;
        while i < cur.ops.0.len() {
            let mut t = cur.clone();
            t.ops.0.remove(i);
            if fails(&t, needle) {
                cur = t;
                changed = true;
            } else {
                i += 1;
            }
        }
        // Drop cursor moves and nested changes.
        for j in 0..cur.ops.0.len() {
            let mut k = 0;
            loop {
                let mut t = cur.clone();
                let removed = match &mut t.ops.0[j] {
                    Op::Cursor(_, m) if k < m.0.len() => {
                        m.0.remove(k);
                        true
                    }
                    Op::Nested(c, _) if k < c.0.len() => {
                        c.0.remove(k);
                        true
                    }
                    _ => false,
                };
                if !removed {
                    break;
                }
                if fails(&t, needle) {
                    cur = t;
                    changed = true;
                } else {
                    k += 1;
                }
            }
        }
        if !changed {
            break;
        }
    }
    fails(&cur, needle);
    println!("{cur:#?}\npanic: {}", MSG.lock().unwrap());
}
