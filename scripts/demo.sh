#!/usr/bin/env bash
# The main job: a short demo of the engine (1,000,000 keys in a temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo run --release -q -p mdb-cli -- demo
