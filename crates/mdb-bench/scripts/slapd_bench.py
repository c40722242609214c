"""The directory benchmark: Debian's slapd 2.5 on its bundled LMDB 0.9.29,
on mdb (LD_PRELOAD of our liblmdb.so, MDB_REPORT_VERSION=0.9.29), and on
mdb in write-ahead-log mode (MDB_WAL=1), interleaved round by round.

usage: /usr/bin/python3 slapd_bench.py --lib target/release/liblmdb.so
           [--entries N] [--rounds R] [--seconds S] [--clients 1,8,32]
           [--work DIR] [--json OUT]

Per round and library, in a fresh database:
  - slapadd -q of N generated inetOrgPersons (groups of 100 under
    ou=gK,ou=people; indexes objectClass eq, uid eq, cn/sn eq,sub,
    mail pres,eq): seconds, CPU seconds (user + system, from the
    children's rusage), and the database's size (used pages);
  - slapd on a loopback port, then for each client count, S seconds each:
      eq:  search (uid=userI) from the suffix, I random (one entry back);
      sub: subtree search (objectClass=inetOrgPerson) under a random
           ou=gK (100 entries back);
      mod: modify replace description of a random entry, durable (slapd's
           default: every commit synced; no dbnosync);
    clients are python3-ldap connections (Debian's python3-ldap), one
    process each, synchronous operations; the rate is operations finished
    by all clients in the S seconds, divided by S.
Prints one line per measure, the medians and spread at the end, and
writes all samples as JSON (--json).
"""

import argparse
import json
import multiprocessing as mp
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import ldap

SUFFIX = "dc=example,dc=com"
ADMIN = "cn=admin,dc=example,dc=com"
BUNDLED_VERSION = "0.9.29"
LIBS = ["lmdb", "mdb", "mdb-wal"]


def env_for(lib, ours):
    e = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "MDB_WAL", "MDB_REPORT_VERSION")}
    if lib != "lmdb":
        e["LD_PRELOAD"] = ours
        e["MDB_REPORT_VERSION"] = BUNDLED_VERSION
    if lib == "mdb-wal":
        e["MDB_WAL"] = "1"
    return e


def write_ldif(path, n):
    with open(path, "w") as f:
        f.write(f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n")
        f.write(f"dn: ou=people,{SUFFIX}\nobjectClass: organizationalUnit\nou: people\n\n")
        for g in range((n + 99) // 100):
            f.write(f"dn: ou=g{g},ou=people,{SUFFIX}\nobjectClass: organizationalUnit\nou: g{g}\n\n")
            for i in range(g * 100, min(n, g * 100 + 100)):
                f.write(
                    f"dn: uid=user{i},ou=g{g},ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\n"
                    f"uid: user{i}\ncn: User Number {i}\nsn: Surname{i % 9973}\n"
                    f"givenName: Given{i % 1009}\nmail: user{i}@example.com\n"
                    f"telephoneNumber: +1 555 {i % 10000:04}\n"
                    f"description: person {i} of the generated directory\n\n"
                )


def write_conf(d, n):
    mapsize = max(1 << 30, n * 8192)
    conf = f"""include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {d}/slapd.pid
sizelimit unlimited
threads 16
database mdb
suffix "{SUFFIX}"
rootdn "{ADMIN}"
rootpw secret
directory {d}/db
maxsize {mapsize}
index objectClass eq
index uid eq
index cn,sn eq,sub
index mail pres,eq
"""
    with open(f"{d}/slapd.conf", "w") as f:
        f.write(conf)
    return f"{d}/slapd.conf"


def db_size(db):
    """Bytes of used pages (last page + 1) * page size, from Debian's mdb_stat."""
    out = subprocess.run(["mdb_stat", "-e", db], capture_output=True, text=True, check=True).stdout
    last = psize = None
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Number of pages used:"):
            last = int(line.split(":")[1])
        if line.startswith("Page size:"):
            psize = int(line.split(":")[1])
    return last * psize


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_slapd(conf, lib, ours, logf):
    url = f"ldap://127.0.0.1:{free_port()}/"
    p = subprocess.Popen(
        ["/usr/sbin/slapd", "-f", conf, "-h", url, "-d", "0"],
        env=env_for(lib, ours),
        stdout=logf,
        stderr=logf,
        stdin=subprocess.DEVNULL,
    )
    t = time.time()
    while True:
        if p.poll() is not None:
            sys.exit(f"slapd on {lib} exited at start (log {logf.name})")
        try:
            c = ldap.initialize(url)
            c.simple_bind_s(ADMIN, "secret")
            c.unbind_s()
            return p, url
        except ldap.LDAPError:
            if time.time() - t > 300:
                p.kill()
                sys.exit(f"slapd on {lib} did not answer in 300 s")
            time.sleep(0.1)


def stop_slapd(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=600)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        sys.exit("slapd did not stop in 600 s")


def client(url, kind, n, seed, t0, t1, out):
    rnd = random.Random(seed)
    c = ldap.initialize(url)
    c.simple_bind_s(ADMIN, "secret")
    full = n // 100  # groups of exactly 100
    done = 0
    while time.time() < t0:
        time.sleep(0.001)
    while time.time() < t1:
        if kind == "eq":
            i = rnd.randrange(n)
            r = c.search_s(SUFFIX, ldap.SCOPE_SUBTREE, f"(uid=user{i})", ["cn", "mail"])
            assert len(r) == 1, r
        elif kind == "sub":
            g = rnd.randrange(full)
            r = c.search_s(f"ou=g{g},ou=people,{SUFFIX}", ldap.SCOPE_SUBTREE, "(objectClass=inetOrgPerson)")
            assert len(r) == 100, len(r)
        else:
            i = rnd.randrange(n)
            dn = f"uid=user{i},ou=g{i // 100},ou=people,{SUFFIX}"
            c.modify_s(dn, [(ldap.MOD_REPLACE, "description", [f"m{seed}-{done}".encode()])])
        done += 1
    c.unbind_s()
    out.put(done)


def rate(url, kind, n, clients, seconds, seed):
    q = mp.Queue()
    t0 = time.time() + 1.0 + 0.05 * clients
    t1 = t0 + seconds
    ps = [mp.Process(target=client, args=(url, kind, n, seed * 1000 + k, t0, t1, q)) for k in range(clients)]
    for p in ps:
        p.start()
    total, got = 0, 0
    while got < len(ps):
        try:
            total += q.get(timeout=1)
            got += 1
        except Exception:  # queue.Empty: see whether a client died
            if any(p.exitcode not in (None, 0) for p in ps):
                for p in ps:
                    p.kill()
                sys.exit(f"a {kind} client failed")
    for p in ps:
        p.join()
    return total / seconds


def one(lib, args, ldif, work, rnd, samples):
    d = tempfile.mkdtemp(dir=work, prefix=f"{lib}-")
    os.mkdir(f"{d}/db")
    conf = write_conf(d, args.entries)
    t = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["/usr/sbin/slapadd", "-q", "-f", conf, "-l", ldif], env=env_for(lib, args.lib), check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    add = time.perf_counter() - t
    # CPU time too: on a shared machine the wall clock mostly measures the
    # other load.
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    size = db_size(f"{d}/db")
    rec = lambda m, v: samples.setdefault(lib, {}).setdefault(m, []).append(v)  # noqa: E731
    rec("slapadd_s", add)
    rec("slapadd_cpu_s", cpu)
    rec("size_mb", size / 1e6)
    print(f"{lib:8} slapadd -q {add:8.2f} s ({cpu:.2f} s CPU)   size {size / 1e6:9.1f} MB", flush=True)
    with open(f"{d}/slapd.log", "w") as logf:
        p, url = start_slapd(conf, lib, args.lib, logf)
        try:
            for kind in ["eq", "sub", "mod"]:
                for c in args.clients:
                    r = rate(url, kind, args.entries, c, args.seconds, rnd.randrange(1 << 30))
                    rec(f"{kind}_{c}", r)
                    print(f"{lib:8} {kind:4} {c:3} clients {r:10.1f} /s", flush=True)
        finally:
            stop_slapd(p)
    shutil.rmtree(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="our liblmdb.so (release build)")
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--clients", default="1,8,32")
    ap.add_argument("--work", default=None, help="directory for databases (default: a temporary one)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    args.lib = os.path.abspath(args.lib)
    args.clients = [int(x) for x in args.clients.split(",")]
    work = tempfile.mkdtemp(dir=args.work, prefix="slapd-bench-")
    ldif = f"{work}/entries.ldif"
    write_ldif(ldif, args.entries)
    rnd = random.Random(1)
    samples = {}
    try:
        for r in range(args.rounds):
            order = LIBS[r % 3 :] + LIBS[: r % 3]
            print(f"round {r + 1}: {' '.join(order)}", flush=True)
            for lib in order:
                one(lib, args, ldif, work, rnd, samples)
    finally:
        shutil.rmtree(work)
    print(f"\n{args.entries} entries, {args.rounds} rounds, {args.seconds} s per rate: median (min-max)")
    print(f"{'measure':12}" + "".join(f"{lib:>26}" for lib in LIBS) + f"{'mdb/lmdb':>10}{'wal/lmdb':>10}")
    for m in samples["lmdb"]:
        med = {lib: statistics.median(samples[lib][m]) for lib in LIBS}
        cells = "".join(
            f"{med[lib]:>10.1f} ({min(samples[lib][m]):.1f}-{max(samples[lib][m]):.1f})".rjust(26) for lib in LIBS
        )
        # Ratios as "better is higher": time and size are inverted.
        inv = m in ("slapadd_s", "slapadd_cpu_s", "size_mb")
        ratio = lambda x: (med["lmdb"] / x if inv else x / med["lmdb"])  # noqa: E731
        print(f"{m:12}{cells}{ratio(med['mdb']):>9.2f}x{ratio(med['mdb-wal']):>9.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"entries": args.entries, "rounds": args.rounds, "seconds": args.seconds, "samples": samples}, f, indent=1)


if __name__ == "__main__":
    main()
