#!/usr/bin/env bash
# Fetch py-lmdb 3.0.0's source distribution (its pure-Python verifier
# lmdb/verify.py and its tests) into target/pylmdb-3.0.0, once; print that
# directory. Idempotent and safe to run concurrently: the unpacked tree is
# renamed into place whole, so the directory is either absent or complete.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="$PWD/target/pylmdb-3.0.0"
if [ ! -f "$dest/lmdb/verify.py" ]; then
    mkdir -p target
    tmp=$(mktemp -d "$PWD/target/pylmdb.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip download --quiet --no-deps --no-binary :all: lmdb==3.0.0 -d "$tmp" >&2
    tar -xzf "$tmp/lmdb-3.0.0.tar.gz" -C "$tmp"
    # Another run may have won the race: its copy is as good as ours.
    mv -T "$tmp/lmdb-3.0.0" "$dest" 2>/dev/null || [ -f "$dest/lmdb/verify.py" ]
fi
echo "$dest"
