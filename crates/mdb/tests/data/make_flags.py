"""Helper for tests/flags_interop.rs: applies a list of operations to an LMDB
environment with python3-lmdb (Debian's liblmdb 0.9.24) and dumps every named
database in LMDB's order.

usage: make_flags.py create|modify ENVDIR OPSFILE OUTFILE [EXPECTED]

OPSFILE lines (hex fields may be empty):
  B name flags           declare a database (flags: LMDB DB flag bits)
  T                      commit the current transaction, begin the next
  P name khex vhex       put (adds a duplicate in DUPSORT databases)
  M name khex size vhex  put each size-byte slice of vhex under khex
  D name khex            delete the key with all its values
  X name khex vhex       delete one (key, value) pair

create: databases whose flags python3-lmdb cannot express (REVERSEDUP, and
INTEGERDUP without DUPFIXED, which python3-lmdb always adds) are created empty
by /usr/bin/mdb_load first; the rest by Environment.open_db.
modify: the databases exist; if EXPECTED is given, every database must hold
exactly the content listed there (same format as OUTFILE) before the ops run.

OUTFILE: for each database a line "= name", then one "khex vhex" line per item.
"""
import subprocess
import sys

import lmdb

REVERSEKEY, DUPSORT, INTEGERKEY = 0x02, 0x04, 0x08
DUPFIXED, INTEGERDUP, REVERSEDUP = 0x10, 0x20, 0x40
MAP_SIZE = 256 << 20


def expressible(flags):
    if flags & REVERSEDUP:
        return False
    if flags & INTEGERDUP and not flags & DUPFIXED:
        return False
    return True


def precreate(envdir, dbs):
    text = ""
    for name, flags in dbs:
        if expressible(flags):
            continue
        text += "VERSION=3\nformat=bytevalue\ndatabase=%s\ntype=btree\n" % name
        text += "mapsize=%d\n" % MAP_SIZE
        for bit, word in [(REVERSEKEY, "reversekey"), (DUPSORT, "dupsort"),
                          (INTEGERKEY, "integerkey"), (DUPFIXED, "dupfixed"),
                          (INTEGERDUP, "integerdup"), (REVERSEDUP, "reversedup")]:
            if flags & bit:
                text += "%s=1\n" % word
        text += "HEADER=END\nDATA=END\n"
    if text:
        subprocess.run(["/usr/bin/mdb_load", envdir], input=text.encode(), check=True)


def dump(env, dbs, handles):
    out = {}
    with env.begin() as t:
        for name, _ in dbs:
            out[name] = [(k.hex(), v.hex()) for k, v in t.cursor(db=handles[name])]
    return out


def write_dump(path, content):
    with open(path, "w") as f:
        for name, items in content.items():
            f.write("= %s\n" % name)
            for k, v in items:
                f.write("%s %s\n" % (k, v))


def read_dump(path):
    content = {}
    cur = None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("= "):
            cur = content.setdefault(line[2:], [])
        else:
            k, v = line.split(" ")
            cur.append((k, v))
    return content


def main():
    mode, envdir, opsfile, outfile = sys.argv[1:5]
    expected = sys.argv[5] if len(sys.argv) > 5 else None
    lines = [l.rstrip("\n").split(" ") for l in open(opsfile)]
    dbs = [(l[1], int(l[2])) for l in lines if l[0] == "B"]
    if mode == "create":
        precreate(envdir, dbs)
    env = lmdb.open(envdir, max_dbs=64, map_size=MAP_SIZE)
    handles = {}
    with env.begin(write=True) as t:
        for name, flags in dbs:
            handles[name] = env.open_db(
                name.encode(), txn=t,
                reverse_key=bool(flags & REVERSEKEY), dupsort=bool(flags & DUPSORT),
                integerkey=bool(flags & INTEGERKEY), dupfixed=bool(flags & DUPFIXED),
                integerdup=bool(flags & INTEGERDUP))
            got = handles[name].flags(t)
            for word, bit in [("reverse_key", REVERSEKEY), ("dupsort", DUPSORT),
                              ("integerkey", INTEGERKEY), ("dupfixed", DUPFIXED),
                              ("integerdup", INTEGERDUP)]:
                assert got[word] == bool(flags & bit), (name, flags, got)
    if expected is not None:
        want = read_dump(expected)
        have = dump(env, dbs, handles)
        for name, _ in dbs:
            assert have[name] == want[name], "database %s differs from the expected content" % name

    t = env.begin(write=True)
    for l in lines:
        op = l[0]
        if op == "B":
            continue
        if op == "T":
            t.commit()
            t = env.begin(write=True)
            continue
        db = handles[l[1]]
        k = bytes.fromhex(l[2])
        if op == "P":
            assert t.put(k, bytes.fromhex(l[3]), db=db), l
        elif op == "M":
            size, vals = int(l[3]), bytes.fromhex(l[4])
            for i in range(0, len(vals), size):
                assert t.put(k, vals[i:i + size], db=db), l[:4]
        elif op == "D":
            assert t.delete(k, db=db), l
        elif op == "X":
            assert t.delete(k, bytes.fromhex(l[3]), db=db), l
        else:
            raise ValueError(l)
    t.commit()
    write_dump(outfile, dump(env, dbs, handles))
    env.close()


main()
