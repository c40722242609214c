"""Debian's python3-lmdb (py-lmdb 1.4) over whichever liblmdb.so.0 is loaded.

Run by tests/python_binding.rs with LD_LIBRARY_PATH pointing at our library
and EXPECT_LIB naming it: the first check is that this process really
mapped that file. The rest walks the binding's surface.

Usage: python3 py_lmdb_test.py <scratch dir>
"""
import os
import struct
import sys

import lmdb

base = sys.argv[1]
expect = os.environ.get("EXPECT_LIB")
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        raise AssertionError(what)


def raises(exc, fn, *a, **kw):
    try:
        fn(*a, **kw)
    except exc:
        return True
    except Exception as e:  # noqa: BLE001
        raise AssertionError("%s raised %r, not %s" % (fn, e, exc.__name__))
    raise AssertionError("%s did not raise %s" % (fn, exc.__name__))


def path(name):
    p = os.path.join(base, name)
    os.makedirs(p, exist_ok=True)
    return p


# --- the library really loaded -------------------------------------------
mapped = sorted({line.split()[-1] for line in open("/proc/self/maps") if "liblmdb" in line})
check(mapped, "no liblmdb mapped")
if expect:
    check(os.path.realpath(expect) in [os.path.realpath(m) for m in mapped],
          "expected %s, mapped %s" % (expect, mapped))
check(lmdb.version() == (0, 9, 24), "compile-time version")

# --- environments ----------------------------------------------------------
env = lmdb.open(path("env"), map_size=4 << 20, max_dbs=8, max_readers=20)
check(env.path() == path("env"), "path")
check(env.max_key_size() == 511, "max_key_size")
check(env.max_readers() == 20, "max_readers")
info = env.info()
check(info["map_size"] == 4 << 20 and info["last_txnid"] == 0, "info %r" % info)
check(env.stat()["entries"] == 0 and env.stat()["psize"] >= 4096, "stat")
flags = env.flags()
check(flags["subdir"] and not flags["readonly"], "flags %r" % flags)
env.sync(True)
env.set_mapsize(8 << 20)
check(env.info()["map_size"] == 8 << 20, "set_mapsize")

# --- put/get/delete/replace/pop -------------------------------------------
with env.begin(write=True) as txn:
    check(txn.put(b"a", b"1"), "put")
    check(not txn.put(b"a", b"x", overwrite=False), "put no overwrite")
    check(txn.put(b"b", b"2"), "put b")
    check(txn.put(b"z", b"26", append=True), "append")
    check(txn.get(b"a") == b"1", "get")
    check(txn.get(b"missing") is None, "get missing")
    check(txn.get(b"missing", b"dflt") == b"dflt", "get default")
    check(txn.replace(b"a", b"one") == b"1", "replace old")
    check(txn.replace(b"new", b"n") is None, "replace new")
    check(txn.pop(b"new") == b"n", "pop")
    check(txn.pop(b"new") is None, "pop missing")
    check(txn.delete(b"b"), "delete")
    check(not txn.delete(b"b"), "delete missing")
    check(txn.id() == 1, "write txn id")
    check(txn.stat(env.open_db())["entries"] == 2, "txn stat")
with env.begin() as txn:
    check(txn.get(b"a") == b"one", "committed")
    check(txn.id() == 1, "read txn id")
    check(list(txn.cursor()) == [(b"a", b"one"), (b"z", b"26")], "iteration")

# aborted transactions leave nothing
txn = env.begin(write=True)
txn.put(b"gone", b"x")
txn.abort()
with env.begin() as txn:
    check(txn.get(b"gone") is None, "abort")

# --- nested transactions ---------------------------------------------------
with env.begin(write=True) as parent:
    parent.put(b"p", b"1")
    child = env.begin(write=True, parent=parent)
    child.put(b"c1", b"x")
    check(child.get(b"p") == b"1", "child sees parent")
    child.abort()
    check(parent.get(b"c1") is None, "child abort")
    with env.begin(write=True, parent=parent) as child:
        child.put(b"c2", b"y")
        with env.begin(write=True, parent=child) as grandchild:
            grandchild.put(b"g", b"z")
    check(parent.get(b"c2") == b"y" and parent.get(b"g") == b"z", "child commit")
with env.begin() as txn:
    check(txn.get(b"g") == b"z", "nested durable")

# --- cursors ---------------------------------------------------------------
with env.begin(write=True) as txn:
    for i in range(100):
        txn.put(b"k%03d" % i, b"v%d" % i)
with env.begin() as txn:
    cur = txn.cursor()
    check(cur.first() and cur.key() == b"a", "first")
    check(cur.last() and cur.key() == b"z", "last")
    check(cur.set_key(b"k050") and cur.value() == b"v50", "set_key")
    check(not cur.set_key(b"k050x"), "set_key miss")
    check(cur.set_range(b"k0505") and cur.key() == b"k051", "set_range")
    check(cur.next() and cur.key() == b"k052", "next")
    check(cur.prev() and cur.prev() and cur.key() == b"k050", "prev")
    check(cur.get(b"k010") == b"v10", "cursor get")
    keys = [k for k, _ in cur.iternext(keys=True, values=True)]
    check(keys[0] == b"k010" and keys[-1] == b"z", "iternext from position")
    check(len(list(txn.cursor().iterprev())) == 105, "iterprev")
    check(len(list(txn.cursor().iternext(values=False))) == 105, "keys only")
    rng = [k for k, v in txn.cursor() if b"k020" <= k < b"k025"]
    check(len(rng) == 5, "range")
with env.begin(write=True) as txn:
    cur = txn.cursor()
    check(cur.set_key(b"k000"), "set")
    check(cur.delete() and cur.key() == b"k001", "cursor delete moves on")
    check(cur.put(b"k000", b"again"), "cursor put")
    check(cur.replace(b"k001", b"R") == b"v1", "cursor replace")
    check(cur.pop(b"k002") == b"v2", "cursor pop")
    n = 0
    for k, v in txn.cursor():
        if k.startswith(b"k09"):
            txn.delete(k)
            n += 1
    check(n == 10, "delete while iterating")
with env.begin() as txn:
    check(txn.get(b"k095") is None and txn.get(b"k001") == b"R", "cursor writes")

# --- dupsort / dupfixed / integerkey ---------------------------------------
dups = env.open_db(b"dups", dupsort=True)
with env.begin(write=True, db=dups) as txn:
    for v in (b"c", b"a", b"b"):
        txn.put(b"k", v)
    txn.put(b"j", b"1")
    check(not txn.put(b"k", b"a", dupdata=False), "dupdata=False")
    cur = txn.cursor()
    check(cur.set_key(b"k") and cur.count() == 3, "count")
    check(list(cur.iternext_dup()) == [b"a", b"b", b"c"], "iternext_dup")
    check(cur.set_key_dup(b"k", b"b") and cur.value() == b"b", "set_key_dup")
    check(cur.set_range_dup(b"k", b"bb") and cur.value() == b"c", "set_range_dup")
    check(cur.first_dup() and cur.value() == b"a", "first_dup")
    check(cur.last_dup() and cur.value() == b"c", "last_dup")
    check(cur.prev_dup() and cur.value() == b"b", "prev_dup")
    check(cur.next_nodup() is False or cur.key() != b"k", "next_nodup")
    check(list(txn.cursor().iternext_nodup()) == [b"j", b"k"], "iternext_nodup")
    check(txn.delete(b"k", b"b"), "delete one dup")
    check(cur.set_key(b"k") and cur.delete(dupdata=True), "delete all dups")
    check(txn.get(b"k") is None, "dups gone")
with env.begin(db=dups) as txn:
    check(txn.stat(dups)["entries"] == 1, "dup entries")

fixed = env.open_db(b"fixed", dupsort=True, dupfixed=True, integerdup=True)
with env.begin(write=True, db=fixed) as txn:
    cur = txn.cursor()
    items = [(b"key", struct.pack("=I", i)) for i in range(1, 1001)]
    consumed, added = cur.putmulti(items)
    check(consumed == 1000 and added == 1000, "putmulti %r" % ((consumed, added),))
    check(cur.set_key(b"key") and cur.count() == 1000, "dupfixed count")
    got = cur.getmulti([b"key"], dupdata=True, dupfixed_bytes=4)
    vals = struct.unpack("=%dI" % (len(got) // 4), got) if isinstance(got, (bytes, bytearray, memoryview)) else None
    if vals is None:
        vals = [struct.unpack("=I", v)[0] for _, v in got]
    check(list(vals) == list(range(1, 1001)), "getmulti dupfixed")
with env.begin(db=fixed) as txn:
    pairs = txn.cursor().getmulti([b"key"], dupdata=True)
    check(len(pairs) == 1000, "getmulti pairs")

ints = env.open_db(b"ints", integerkey=True)
with env.begin(write=True, db=ints) as txn:
    for n in (256, 1, 65536, 2):
        txn.put(struct.pack("=I", n), b"")
    keys = [struct.unpack("=I", k)[0] for k in txn.cursor().iternext(values=False)]
    check(keys == [1, 2, 256, 65536], "integerkey order %r" % keys)

multi = env.open_db(b"multi")
with env.begin(write=True, db=multi) as txn:
    c, a = txn.cursor().putmulti([(b"m%d" % i, b"x") for i in range(10)])
    check((c, a) == (10, 10), "putmulti plain")
    got = txn.cursor().getmulti([b"m1", b"m5", b"nope"])
    check(got == [(b"m1", b"x"), (b"m5", b"x")], "getmulti %r" % got)

# --- drop -----------------------------------------------------------------
tmp = env.open_db(b"tmp")
with env.begin(write=True) as txn:
    txn.put(b"x", b"y", db=tmp)
    txn.drop(tmp, delete=False)
    check(txn.get(b"x", db=tmp) is None, "drop empties")
    txn.drop(tmp, delete=True)
with env.begin() as txn:
    check(txn.get(b"tmp") is None, "drop deletes the record")

# --- copy ------------------------------------------------------------------
for compact in (False, True):
    dst = path("copy-%d" % compact)
    env.copy(dst, compact=compact)
    with lmdb.open(dst, readonly=True, max_dbs=8) as cenv:
        with cenv.begin() as txn:
            check(txn.get(b"a") == b"one", "copy %s" % compact)
        d = cenv.open_db(b"dups", create=False)
        with cenv.begin(db=d) as txn:
            check(txn.get(b"j") == b"1", "copy named %s" % compact)
with open(os.path.join(base, "copy.mdb"), "wb") as f:
    env.copyfd(f.fileno())
check(os.path.getsize(os.path.join(base, "copy.mdb")) > 8192, "copyfo")

# --- readers -----------------------------------------------------------------
r = env.begin()
text = env.readers()
check("pid" in text and str(os.getpid()) in text, "readers %r" % text)
check(env.reader_check() == 0, "reader_check")
r.abort()

# --- errors ----------------------------------------------------------------
small = lmdb.open(path("small"), map_size=64 << 10)
def fill():
    with small.begin(write=True) as txn:
        for i in range(10000):
            txn.put(b"%08d" % i, b"x" * 100)
raises(lmdb.MapFullError, fill)
small.set_mapsize(16 << 20)
fill()
small.close()

with env.begin(write=True) as txn:
    raises(lmdb.BadValsizeError, txn.put, b"", b"v")
    raises(lmdb.BadValsizeError, txn.put, b"k" * 512, b"v")
    raises(lmdb.BadValsizeError, txn.put, b"k", b"v" * 512, db=dups)
    raises(lmdb.NotFoundError, env.open_db, b"absent", txn=txn, create=False)
env.close()

ro = lmdb.open(path("env"), readonly=True, max_dbs=8)
raises(lmdb.ReadonlyError, ro.begin, write=True)
with ro.begin() as txn:
    check(txn.get(b"a") == b"one", "readonly read")
    raises(lmdb.ReadonlyError, txn.put, b"k", b"v")
ro.close()
raises(lmdb.Error, lmdb.open, path("nonexist") + "/sub/x", create=False)

# NOTLS (py-lmdb's default): many read transactions in one thread
env = lmdb.open(path("env"), max_dbs=8)
txns = [env.begin() for _ in range(5)]
check(all(t.get(b"a") == b"one" for t in txns), "many readers")
for t in txns:
    t.abort()
env.close()

# A handle opened in a read transaction is that transaction's until it ends
# (py-lmdb's crash_test.py BadCursorTest): another may not use it.
env = lmdb.open(path("env"), max_dbs=8)
t1 = env.begin()
d = env.open_db(b"dups", txn=t1, create=False)
t2 = env.begin()
raises(lmdb.InvalidParameterError, t2.cursor, d)
raises(lmdb.InvalidParameterError, t2.get, b"j", db=d)
raises(lmdb.InvalidParameterError, t2.stat, d)
check(t1.get(b"j", db=d) == b"1", "the opener uses it")
t2.abort()
t1.abort()
env.close()

# NOTLS: an ended read transaction frees its reader slot, so another process
# (the same binding and library) can take it. py-lmdb keeps one ended read
# transaction reset, holding its slot, to renew on the next begin().
TAKE = """import lmdb, sys
env = lmdb.open(sys.argv[1], max_readers=3)
got = []
try:
    while len(got) < 3:
        got.append(env.begin())
except lmdb.ReadersFullError:
    pass
print(len(got))
"""


def other_process_takes():
    import subprocess

    out = subprocess.run([sys.executable, "-c", TAKE, path("slots")],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


env = lmdb.open(path("slots"), max_readers=3)
for _ in range(10):
    env.begin().abort()
    env.begin().get(b"a")
held = env.readers().strip().splitlines()[1:]
check(len(held) == 1 and held[0].endswith(" -"), "ended txns hold slots: %r" % held)
check(other_process_takes() == 2, "slots of ended txns are free")
a, b = env.begin(), env.begin()
check(other_process_takes() == 1, "live txns hold their slots")
a.abort()
b.abort()
del a, b  # one is kept as the spare, the other ends
check(other_process_takes() == 2, "ended txns free their slots")
env.close()

print("python: %d checks passed" % checks)
