"""Instructions slapd executes per search, on its bundled LMDB and on mdb:
the deterministic counterpart of slapd_bench.py's search rates, which on a
shared two-core machine move with the load more than with the library.

usage: /usr/bin/python3 slapd_instr.py --lib target/release/liblmdb.so
           [--entries N] [--searches S] [--work DIR] [--top K]

Per library, in a fresh database: `slapadd -q` of N generated entries (as
slapd_bench.py), slapd started under `valgrind --tool=callgrind`, a few
warm-up searches, then, between `callgrind_control --zero` and `--dump`:
S uid-equality searches and S/10 subtree searches of 100 entries (one
synchronous python3-ldap client, fixed seed, so both libraries serve the
same requests). Prints instructions per search for the whole slapd process
(every thread) and the functions with the most instructions (self). LMDB
is compiled into back_mdb (its functions are unnamed there), so compare
the totals; --keep leaves the dumps for callgrind_annotate.
"""

import argparse
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ldap  # noqa: E402
import slapd_bench as sb  # noqa: E402


def wait_answers(url):
    t = time.time()
    while True:
        try:
            c = ldap.initialize(url)
            c.simple_bind_s(sb.ADMIN, "secret")
            return c
        except ldap.LDAPError:
            if time.time() - t > 600:
                sys.exit("slapd under callgrind did not answer in 600 s")
            time.sleep(0.5)


def searches(c, n, count, seed):
    rnd = random.Random(seed)
    for _ in range(count):
        i = rnd.randrange(n)
        r = c.search_s(sb.SUFFIX, ldap.SCOPE_SUBTREE, f"(uid=user{i})", ["cn", "mail"])
        assert len(r) == 1, r


def subtrees(c, n, count, seed):
    rnd = random.Random(seed)
    for _ in range(count):
        g = rnd.randrange(n // 100)
        r = c.search_s(f"ou=g{g},ou=people,{sb.SUFFIX}", ldap.SCOPE_SUBTREE, "(objectClass=inetOrgPerson)")
        assert len(r) == 100, len(r)


def control(pid, what):
    subprocess.run(["callgrind_control", what, str(pid)], check=True, capture_output=True)


def totals(path):
    """(total Ir, [(Ir, function)] self cost, descending) of a callgrind dump."""
    out = subprocess.run(
        ["callgrind_annotate", "--auto=no", "--inclusive=no", "--threshold=100", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total, funcs = 0, []
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*)$", line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = ir
        else:
            funcs.append((ir, m.group(2)[-120:]))
    return total, funcs


def phase(lib, args, ldif, work):
    d = tempfile.mkdtemp(dir=work, prefix=f"{lib}-")
    os.mkdir(f"{d}/db")
    conf = sb.write_conf(d, args.entries)
    subprocess.run(["/usr/sbin/slapadd", "-q", "-f", conf, "-l", ldif], env=sb.env_for(lib, args.lib), check=True)
    url = f"ldap://127.0.0.1:{sb.free_port()}/"
    out = f"{d}/cg.out"
    log = open(f"{d}/slapd.log", "w")
    p = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "/usr/sbin/slapd", "-f", conf, "-h", url, "-d", "0"],
        env=sb.env_for(lib, args.lib),
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )
    try:
        c = wait_answers(url)
        searches(c, args.entries, 50, 7)
        subtrees(c, args.entries, 5, 7)
        control(p.pid, "--zero")
        searches(c, args.entries, args.searches, 1)
        control(p.pid, "--dump=eq")
        subtrees(c, args.entries, args.searches // 10, 1)
        control(p.pid, "--dump=sub")
        c.unbind_s()
    finally:
        p.terminate()
        p.wait(timeout=600)
        log.close()
    # The dumps asked for are numbered in order: .1 the equality searches,
    # .2 the subtree searches (the one at exit has no suffix).
    dumps = {int(x.rsplit(".", 1)[1]): x for x in glob.glob(f"{out}.*")}
    if sorted(dumps)[:2] != [1, 2]:
        sys.exit(f"callgrind dumps missing: {dumps}")
    res = {}
    for kind, count, n in (("eq", args.searches, 1), ("sub", args.searches // 10, 2)):
        f = [dumps[n]]
        total, funcs = totals(f[0])
        res[kind] = (total / count, [(ir / count, fn) for ir, fn in funcs[: args.top]])
    if not args.keep:
        shutil.rmtree(d)
    else:
        print(f"{lib}: callgrind dumps kept in {d}", flush=True)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--entries", type=int, default=20000)
    ap.add_argument("--searches", type=int, default=2000)
    ap.add_argument("--work", default=None)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--keep", action="store_true", help="keep the databases and callgrind dumps (under --work)")
    args = ap.parse_args()
    args.lib = os.path.abspath(args.lib)
    work = tempfile.mkdtemp(dir=args.work, prefix="slapd-instr-")
    ldif = f"{work}/entries.ldif"
    sb.write_ldif(ldif, args.entries)
    res = {}
    try:
        for lib in ("lmdb", "mdb"):
            res[lib] = phase(lib, args, ldif, work)
    finally:
        if not args.keep:
            shutil.rmtree(work)
    for kind in ("eq", "sub"):
        for lib in ("lmdb", "mdb"):
            per, top = res[lib][kind]
            print(f"\n{kind} search, {lib}: {per:,.0f} instructions per search; the most (self, per search):")
            for ir, fn in top:
                print(f"  {ir:>10,.0f}  {fn}")
    for kind in ("eq", "sub"):
        a, b = res["lmdb"][kind][0], res["mdb"][kind][0]
        print(f"{kind}: slapd on mdb / on LMDB, instructions per search: {b / a:.3f}")


if __name__ == "__main__":
    main()
