#!/usr/bin/env bash
# Download py-lmdb 3.0.0's sdist (its tests/ and lmdb/verify.py) once into
# target/pylmdb-3.0.0 and print that directory. Idempotent: a cached tree is
# reused. The tarball's digest is pinned.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/target/pylmdb-3.0.0"
sha=06dda0723545e14d56ac7dcd6f582d9922c2ed5e16f1c3f8d0e670a96ec2ee65
if [ ! -f "$dest/setup.py" ]; then
    dl="$(mktemp -d)"
    trap 'rm -rf "$dl"' EXIT
    /usr/bin/python3 -m pip download -q --no-deps --no-binary :all: \
        --no-build-isolation -d "$dl" lmdb==3.0.0 >&2
    echo "$sha  $dl/lmdb-3.0.0.tar.gz" | sha256sum -c --quiet >&2
    tar -xzf "$dl/lmdb-3.0.0.tar.gz" -C "$dl"
    mkdir -p "$root/target"
    rm -rf "$dest"
    mv "$dl/lmdb-3.0.0" "$dest"
fi
echo "$dest"
