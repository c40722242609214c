"""WAL mode from unchanged LMDB programs: python3-lmdb on our library with
MDB_WAL=1, and the lmdb_ext.h calls through ctypes.

usage: py_wal.py write DIR N   commit N single-put txns, then exit without closing
       py_wal.py read DIR N    check the N keys, close
       py_wal.py ext DIR LIB   mdb_env_set_wal + mdb_env_checkpoint via ctypes
"""
import ctypes, os, sys

def write(d, n):
    import lmdb
    env = lmdb.open(d, map_size=64 << 20)
    for i in range(n):
        with env.begin(write=True) as t:
            t.put(b"key%06d" % i, b"value%06d" % i)
    assert os.path.isdir(os.path.join(d, "wal")), "MDB_WAL=1 made no log"
    sys.stdout.flush()
    os._exit(0)  # no close: no last checkpoint

def read(d, n):
    import lmdb
    env = lmdb.open(d, map_size=64 << 20)
    with env.begin() as t:
        got = list(t.cursor())
    assert len(got) == n, len(got)
    for i, (k, v) in enumerate(got):
        assert k == b"key%06d" % i and v == b"value%06d" % i, (k, v)
    env.close()
    print("read ok")

def ext(d, lib):
    L = ctypes.CDLL(lib)
    env = ctypes.c_void_p()
    assert L.mdb_env_create(ctypes.byref(env)) == 0
    assert L.mdb_env_set_wal(env, 1) == 0
    assert L.mdb_env_open(env, d.encode(), 0, 0o644) == 0
    assert L.mdb_env_set_wal(env, 0) != 0, "set_wal after open must fail"
    txn = ctypes.c_void_p()
    assert L.mdb_txn_begin(env, None, 0, ctypes.byref(txn)) == 0
    dbi = ctypes.c_uint()
    assert L.mdb_dbi_open(txn, None, 0, ctypes.byref(dbi)) == 0

    class Val(ctypes.Structure):
        _fields_ = [("mv_size", ctypes.c_size_t), ("mv_data", ctypes.c_void_p)]

    k, v = b"ctypes-key", b"ctypes-value"
    kv = Val(len(k), ctypes.cast(ctypes.c_char_p(k), ctypes.c_void_p))
    vv = Val(len(v), ctypes.cast(ctypes.c_char_p(v), ctypes.c_void_p))
    assert L.mdb_put(txn, dbi, ctypes.byref(kv), ctypes.byref(vv), 0) == 0
    assert L.mdb_txn_commit(txn) == 0
    covered = ctypes.c_uint64()
    assert L.mdb_env_checkpoint(env, ctypes.byref(covered)) == 0
    assert covered.value >= 1, covered.value
    assert os.path.exists(os.path.join(d, "wal", "checkpoint"))
    L.mdb_env_close(env)
    # Outside WAL mode the call is refused with MDB_INCOMPATIBLE (-30784).
    env = ctypes.c_void_p()
    assert L.mdb_env_create(ctypes.byref(env)) == 0
    os.environ.pop("MDB_WAL", None)
    other = d + "-plain"
    os.mkdir(other)
    assert L.mdb_env_open(env, other.encode(), 0, 0o644) == 0
    assert L.mdb_env_checkpoint(env, None) == -30784
    L.mdb_env_close(env)
    relaxed(d + "-relaxed", L, Val)
    print("ext ok")

def relaxed(d, L, Val):
    # mdb_env_set_wal_sync: commits return before the log sync (an hour
    # here); another handle sees them only once mdb_env_sync made them
    # durable, this one at once.
    os.mkdir(d)
    def open_env(ms):
        env = ctypes.c_void_p()
        assert L.mdb_env_create(ctypes.byref(env)) == 0
        if ms is None:
            assert L.mdb_env_set_wal(env, 1) == 0
        else:
            assert L.mdb_env_set_wal_sync(env, ms) == 0
        assert L.mdb_env_open(env, d.encode(), 0, 0o644) == 0
        return env
    def val(b):
        return Val(len(b), ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p))
    def get(env, k):
        txn = ctypes.c_void_p()
        assert L.mdb_txn_begin(env, None, 0x20000, ctypes.byref(txn)) == 0
        out = Val()
        rc = L.mdb_get(txn, 1, ctypes.byref(val(k)), ctypes.byref(out))
        L.mdb_txn_abort(txn)
        return rc
    other = open_env(None)
    env = open_env(3600 * 1000)
    assert L.mdb_env_set_wal_sync(env, 5) != 0, "after open must fail"
    txn = ctypes.c_void_p()
    assert L.mdb_txn_begin(env, None, 0, ctypes.byref(txn)) == 0
    dbi = ctypes.c_uint()
    assert L.mdb_dbi_open(txn, None, 0, ctypes.byref(dbi)) == 0
    assert dbi.value == 1
    assert L.mdb_put(txn, dbi, ctypes.byref(val(b"soft")), ctypes.byref(val(b"1")), 0) == 0
    assert L.mdb_txn_commit(txn) == 0
    assert get(env, b"soft") == 0, "its own handle sees it"
    assert get(other, b"soft") == -30798, "not durable yet: not published"
    assert L.mdb_env_sync(env, 0) == 0
    assert get(other, b"soft") == 0
    L.mdb_env_close(env)
    L.mdb_env_close(other)

if __name__ == "__main__":
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == "write":
        write(d, int(sys.argv[3]))
    elif cmd == "read":
        read(d, int(sys.argv[3]))
    else:
        ext(d, sys.argv[3])
