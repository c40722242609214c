//! Replay one input file through a target body, outside any harness:
//! `cargo run --release --example repro -- <check_file|open_corrupt|open_wal_corrupt|ops_model> FILE [--print]`
//! (`--print` shows the decoded `ops_model` input).
use arbitrary::{Arbitrary, Unstructured};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!(
            "usage: repro <check_file|open_corrupt|open_wal_corrupt|ops_model> FILE [--print]"
        );
        std::process::exit(2);
    }
    let data = std::fs::read(&args[2]).expect("read input");
    match args[1].as_str() {
        "check_file" => mdb_fuzz::check_file(&data),
        "open_corrupt" => mdb_fuzz::open_corrupt(&data),
        "open_wal_corrupt" => mdb_fuzz::open_wal_corrupt(&data),
        "ops_model" => {
            let input = mdb_fuzz::ops::Input::arbitrary_take_rest(Unstructured::new(&data))
                .expect("decode input");
            if args.iter().any(|a| a == "--print") {
                eprintln!("{input:#?}");
            }
            mdb_fuzz::ops::run(input);
        }
        t => panic!("unknown target {t}"),
    }
    eprintln!("no panic");
}
