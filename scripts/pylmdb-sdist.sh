#!/usr/bin/env bash
# Fetch py-lmdb 3.0.0's source distribution (its tests/ and its pure-Python
# verifier lmdb/verify.py) into target/pylmdb-3.0.0, once; print that
# directory. The tarball's digest is pinned. Idempotent and safe to run
# concurrently: the unpacked tree is renamed into place whole, so the
# directory is either absent or complete.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="$PWD/target/pylmdb-3.0.0"
sha=06dda0723545e14d56ac7dcd6f582d9922c2ed5e16f1c3f8d0e670a96ec2ee65
if [ ! -f "$dest/lmdb/verify.py" ] || [ ! -f "$dest/setup.py" ]; then
    mkdir -p target
    tmp=$(mktemp -d "$PWD/target/pylmdb.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    /usr/bin/python3 -m pip download -q --no-deps --no-binary :all: \
        --no-build-isolation -d "$tmp" lmdb==3.0.0 >&2
    echo "$sha  $tmp/lmdb-3.0.0.tar.gz" | sha256sum -c --quiet >&2
    tar -xzf "$tmp/lmdb-3.0.0.tar.gz" -C "$tmp"
    # Another run may have won the race: its copy is as good as ours.
    mv -T "$tmp/lmdb-3.0.0" "$dest" 2>/dev/null || [ -f "$dest/lmdb/verify.py" ]
fi
echo "$dest"
