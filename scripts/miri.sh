#!/usr/bin/env bash
# Run the engine's unit tests that need no file, map or lock under Miri
# (page and node edits, meta encoding, comparators, free-list runs, errors).
# Needs a nightly toolchain with the miri component:
#   rustup component add --toolchain nightly miri rust-src
set -euo pipefail
cd "$(dirname "$0")/.."
cargo +nightly miri test -p mdb --lib -- page:: meta:: cmp:: freelist:: error::
