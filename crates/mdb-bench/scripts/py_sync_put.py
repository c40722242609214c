"""N single-put durable commits through python3-lmdb (Debian's package).

usage: /usr/bin/python3 py_sync_put.py DIR N

Opens an environment in DIR with sync=True (every commit durable) and runs
N write transactions of one put each (`with env.begin(write=True)`), keys
in a random-looking order, values of 100 bytes. Prints one line:

    <seconds of the commit loop> <liblmdb file loaded> wal=<0|1>

The library is whichever liblmdb.so.0 the dynamic loader found (Debian's,
or ours through LD_LIBRARY_PATH); with ours, MDB_WAL=1 in the environment
turns on write-ahead-log mode at open, which `wal=1` confirms (the log
directory exists). `mdb-bench --only py_sync` runs this script with each
library in turn; it can also be run by hand.
"""

import os
import sys
import time

import lmdb


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    d, n = sys.argv[1], int(sys.argv[2])
    env = lmdb.open(d, map_size=1 << 30, sync=True, metasync=True)
    val = bytes(range(100))
    mask = (1 << 64) - 1
    keys = [b"%016x" % ((i * 0x9E3779B97F4A7C15) & mask) for i in range(n)]
    t = time.perf_counter()
    for k in keys:
        with env.begin(write=True) as txn:
            txn.put(k, val)
    el = time.perf_counter() - t
    with env.begin() as txn:
        assert txn.stat()["entries"] == n, txn.stat()
    lib = "?"
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "liblmdb" in line:
                lib = line.split()[-1]
                break
    wal = int(os.path.isdir(os.path.join(d, "wal")))
    env.close()
    print(f"{el:.6f} {lib} wal={wal}")


if __name__ == "__main__":
    main()
