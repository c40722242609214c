#!/usr/bin/env bash
# Install what building and testing mdb needs on a fresh Debian machine.
set -euo pipefail
need=()
# The benchmark matrix (mdb-bench --features matrix,rocksdb) links Debian's
# RocksDB and SQLite (bindgen needs libclang) and draws text in DejaVu Sans.
# py-lmdb's sdist suite (crates/mdb-ffi/tests/pylmdb_suite.rs) is built and
# run by Debian's python3 (its -dev headers, pip, setuptools and pytest).
# OpenLDAP runs on our library in mdb-ffi's slapd test and in mdb-bench's
# directory benchmark (slapd, ldap-utils, python3-ldap clients). mdb-raft's
# benchmark (crates/mdb-raft/examples/bench.rs) runs Debian's etcd beside it.
for p in lmdb-utils liblmdb-dev python3-lmdb python3-dev python3-pytest python3-pip \
    python3-setuptools liblmdb-file-perl gcc make pkg-config valgrind \
    librocksdb-dev libclang-dev libsqlite3-dev fonts-dejavu-core slapd ldap-utils python3-ldap \
    etcd-server; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq || true
    # slapd's package asks questions unless told not to.
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
fi
