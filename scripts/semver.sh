#!/usr/bin/env bash
# API compatibility of the `mdb` crate against the newest release tag
# (`v*`), with cargo-semver-checks. Before the first release there is
# nothing to compare with: it says so and succeeds, so CI checks semver
# from the first tag on without anyone turning it on.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=$(git tag --list 'v*' --sort=-v:refname | head -n1)
if [ -z "$tag" ]; then
    echo "semver: no release tag (v*) yet: nothing to compare with"
    exit 0
fi
if ! cargo semver-checks --version >/dev/null 2>&1; then
    # 0.46.0 reads the rustdoc JSON of Rust 1.95 (format v57; 0.45 and
    # earlier refuse it) and builds with it from its lock file.
    cargo install cargo-semver-checks --version 0.46.0 --locked
fi
cargo semver-checks check-release -p mdb --baseline-rev "$tag"
