#!/usr/bin/env bash
# The whole test suite, as CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# The suite writes a few GiB (target/, a 2 GiB load in TMPDIR): say what
# there is, so that a full disk is told from a failure of ours.
df -h . "${TMPDIR:-/tmp}" || true
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p mdb-bench --all-targets --features matrix,rocksdb -- -D warnings
# The C, Python and Perl suites load the cdylib (target/debug/liblmdb.so);
# the slapd test also runs the mdb CLI (target/debug/mdb).
cargo build -p mdb-ffi -p mdb-cli
cargo test --workspace
# The benchmark matrix against redb, RocksDB, SQLite, fjall and sled, at a
# tiny size: every engine runs every workload and the charts are drawn.
cargo test -p mdb-bench --features matrix,rocksdb --test matrix
# The Rust API's examples run (they check what they print about).
for e in quick_start typed_tables bulk_load secondary_index multi_process_reader; do
    cargo run -q -p mdb --example "$e" >/dev/null
done
# Docs build without warnings (broken or private links).
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
# The public API against the newest release tag (nothing before the first).
scripts/semver.sh
# The fuzz crate (a workspace of its own): the fixed fuzz-found bugs, and a
# bounded smoke run of each target with the fixed default seed. libFuzzer
# itself is not built (--no-default-features).
(cd fuzz && env -u MDB_FUZZ_SEED -u MDB_FUZZ_IGNORE MDB_FUZZ_N=3000 \
    cargo test --release --no-default-features)
# Miri on the pure layers (the on-disk format and the pager's free lists):
# undefined behaviour, overflows and panics in the code that parses
# untrusted bytes, including the call of a C comparator.
if ! rustup toolchain list | grep '^nightly' >/dev/null; then
    rustup toolchain install nightly --profile minimal
fi
rustup component add --toolchain nightly miri rust-src
cargo +nightly miri test -p mdb --lib -- format:: pager::
