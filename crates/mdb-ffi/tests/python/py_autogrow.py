"""A map that grows by itself, for unchanged python3-lmdb programs: run on
our library with MDB_AUTOGROW=1.

usage: py_autogrow.py create DIR         a stock 1 MiB map refuses 2 MiB
       py_autogrow.py write DIR COMMITS  256 values of 64 KiB per commit
       py_autogrow.py read DIR COMMITS   read until DIR/writer-done, check all
"""
import os, sys, time

VAL = 64 << 10
PER = 256

def value(i):
    b = i.to_bytes(4, "little")
    return b + bytes([i % 251]) * (VAL - 8) + b

def create(d):
    import lmdb
    env = lmdb.open(d, map_size=1 << 20)
    try:
        with env.begin(write=True) as t:
            t.put(b"big", b"x" * (2 << 20))
        raise SystemExit("a 1 MiB map took 2 MiB")
    except lmdb.MapFullError:
        pass
    env.close()
    print("create ok")

def write(d, commits):
    import lmdb
    env = lmdb.open(d, sync=False)  # python3-lmdb's default 10 MiB map
    for c in range(commits):
        with env.begin(write=True) as t:
            for i in range(c * PER, (c + 1) * PER):
                t.put(i.to_bytes(4, "big"), value(i), append=True)
    with env.begin() as t:
        assert t.stat()["entries"] == commits * PER
    env.close()
    print("write ok")

def check(t):
    n = 0
    cur = t.cursor()
    for k in cur.iternext(values=False):
        assert bytes(k) == n.to_bytes(4, "big"), (bytes(k), n)
        n += 1
    assert n % PER == 0, n
    for i in range(0, n, 97):
        v = t.get(i.to_bytes(4, "big"))
        assert len(v) == VAL and v[:4] == v[-4:] == i.to_bytes(4, "little"), i
        assert v[VAL // 2] == i % 251, i
    return n

def read(d, commits):
    import lmdb
    while not os.path.exists(os.path.join(d, "data.mdb")):
        time.sleep(0.01)
    env = lmdb.open(d, readonly=True, lock=True)
    open(os.path.join(d, "reader-ready"), "w").close()
    last, snapshots = 0, 0
    while True:
        done = os.path.exists(os.path.join(d, "writer-done"))
        with env.begin(buffers=True) as t:
            n = check(t)
        assert n >= last, (n, last)
        last, snapshots = n, snapshots + 1
        if done:
            break
        time.sleep(0.02)
    assert last == commits * PER, last
    print("read ok", snapshots, env.info()["map_size"])

if __name__ == "__main__":
    mode, d = sys.argv[1], sys.argv[2]
    if mode == "create":
        create(d)
    elif mode == "write":
        write(d, int(sys.argv[3]))
    else:
        read(d, int(sys.argv[3]))
