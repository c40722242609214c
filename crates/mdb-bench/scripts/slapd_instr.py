"""Instructions slapd executes per search and per durable modify, on its
bundled LMDB and on mdb (default and write-ahead-log mode): the
deterministic counterpart of slapd_bench.py's rates, which on a shared
two-core machine move with the load more than with the library.

usage: /usr/bin/python3 slapd_instr.py --lib target/release/liblmdb.so
           [--entries N] [--searches S] [--modifies M] [--work DIR] [--top K]
           [--libs lmdb,mdb,mdb-wal]

Per library, in a fresh database: `slapadd -q` of N generated entries (as
slapd_bench.py), slapd started under `valgrind --tool=callgrind
--collect-systime=usec`, a few warm-up requests, then, between
`callgrind_control --zero` and `--dump`: S uid-equality searches, S/10
subtree searches of 100 entries, and M modifies of a random entry's
description (one synchronous python3-ldap client, fixed seed, so every
library serves the same requests; slapd's defaults: every commit durable).
Prints instructions per request for the whole slapd process (every
thread), system calls per request and the time spent in them, and the
functions with the most instructions (self). LMDB is compiled into
back_mdb (its functions are unnamed there), so compare the totals; --keep
leaves the dumps for callgrind_annotate.
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


def modifies(c, n, count, seed):
    rnd = random.Random(seed)
    for j in range(count):
        i = rnd.randrange(n)
        dn = f"uid=user{i},ou=g{i // 100},ou=people,{sb.SUFFIX}"
        c.modify_s(dn, [(ldap.MOD_REPLACE, "description", [f"m{seed}-{j}".encode()])])


def control(pid, what):
    subprocess.run(["callgrind_control", what, str(pid)], check=True, capture_output=True)


def totals(path):
    """(total Ir, system calls, µs in them, [(Ir, function)] self cost,
    descending) of a callgrind dump."""
    out = subprocess.run(
        ["callgrind_annotate", "--auto=no", "--inclusive=no", "--threshold=100", "--show=Ir", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # The dump's own summary line carries every event: Ir sysCount sysTime.
    events, summary = [], []
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:") or line.startswith("totals:"):
                summary = [int(x) for x in line.split()[1:]]
    ev = dict(zip(events, summary))
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
    return total, ev.get("sysCount", 0), ev.get("sysTime", 0), funcs


def KINDS(args):
    return (("eq", args.searches, 1), ("sub", args.searches // 10, 2), ("mod", args.modifies, 3))


def phase(lib, args, ldif, work):
    d = tempfile.mkdtemp(dir=work, prefix=f"{lib}-")
    os.mkdir(f"{d}/db")
    conf = sb.write_conf(d, args.entries)
    subprocess.run(["/usr/sbin/slapadd", "-q", "-f", conf, "-l", ldif], env=sb.env_for(lib, args.lib), check=True)
    url = f"ldap://127.0.0.1:{sb.free_port()}/"
    out = f"{d}/cg.out"
    log = open(f"{d}/slapd.log", "w")
    p = subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            "--collect-systime=usec",
            f"--callgrind-out-file={out}",
            "/usr/sbin/slapd",
            "-f",
            conf,
            "-h",
            url,
            "-d",
            "0",
        ],
        env=sb.env_for(lib, args.lib),
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )
    try:
        c = wait_answers(url)
        searches(c, args.entries, 50, 7)
        subtrees(c, args.entries, 5, 7)
        modifies(c, args.entries, 20, 7)
        control(p.pid, "--zero")
        searches(c, args.entries, args.searches, 1)
        control(p.pid, "--dump=eq")
        subtrees(c, args.entries, args.searches // 10, 1)
        control(p.pid, "--dump=sub")
        modifies(c, args.entries, args.modifies, 1)
        control(p.pid, "--dump=mod")
        c.unbind_s()
    finally:
        p.terminate()
        p.wait(timeout=600)
        log.close()
    # The dumps asked for are numbered in order: .1 the equality searches,
    # .2 the subtree searches, .3 the modifies (the one at exit has no suffix).
    dumps = {int(x.rsplit(".", 1)[1]): x for x in glob.glob(f"{out}.*")}
    if sorted(dumps)[:3] != [1, 2, 3]:
        sys.exit(f"callgrind dumps missing: {dumps}")
    res = {}
    for kind, count, n in KINDS(args):
        total, calls, us, funcs = totals(dumps[n])
        res[kind] = (total / count, calls / count, us / count, [(ir / count, fn) for ir, fn in funcs[: args.top]])
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
    ap.add_argument("--modifies", type=int, default=500)
    ap.add_argument("--libs", default="lmdb,mdb,mdb-wal", help="comma-separated, from " + ",".join(sb.LIBS))
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--keep", action="store_true", help="keep the databases and callgrind dumps (under --work)")
    args = ap.parse_args()
    args.lib = os.path.abspath(args.lib)
    work = tempfile.mkdtemp(dir=args.work, prefix="slapd-instr-")
    ldif = f"{work}/entries.ldif"
    sb.write_ldif(ldif, args.entries)
    libs = args.libs.split(",")
    if any(lib not in sb.LIBS for lib in libs):
        sys.exit(f"--libs: each of {sb.LIBS}")
    res = {}
    try:
        for lib in libs:
            res[lib] = phase(lib, args, ldif, work)
    finally:
        if not args.keep:
            shutil.rmtree(work)
    names = {"eq": "uid equality search", "sub": "subtree search of 100", "mod": "durable modify"}
    for kind, _, _ in KINDS(args):
        for lib in libs:
            per, calls, us, top = res[lib][kind]
            print(f"\n{names[kind]}, {lib}: {per:,.0f} instructions, {calls:.1f} system calls ({us:,.0f} µs in them) per request; the most (self):")
            for ir, fn in top:
                print(f"  {ir:>10,.0f}  {fn}")
    print()
    print("| per request | " + " | ".join(libs) + " |")
    print("|---|" + "---:|" * len(libs))
    for kind, _, _ in KINDS(args):
        for what, i, fmt in (("instructions", 0, "{:,.0f}"), ("system calls", 1, "{:.1f}"), ("µs in system calls", 2, "{:,.0f}")):
            cells = [fmt.format(res[lib][kind][i]) for lib in libs]
            print(f"| {names[kind]}: {what} | " + " | ".join(cells) + " |")
    if "lmdb" in libs:
        for kind, _, _ in KINDS(args):
            for lib in libs:
                if lib != "lmdb":
                    a, b = res["lmdb"][kind][0], res[lib][kind][0]
                    print(f"{names[kind]}: {lib} / lmdb, instructions: {b / a:.3f}")


if __name__ == "__main__":
    main()
