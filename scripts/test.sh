#!/usr/bin/env bash
# The whole test suite, as CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The C, Python and Perl suites load the cdylib (target/debug/liblmdb.so).
cargo build -p mdb-ffi
cargo test --workspace
