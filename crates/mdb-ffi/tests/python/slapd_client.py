"""LDAP client of the slapd tests (Debian's python3-ldap).

  slapd_client.py ops URL            adds, modifies, renames, deletes (fixed set)
  slapd_client.py paged URL BASE FILTER
                                     a paged search (pages of 7), the DNs in order
  slapd_client.py modify URL ID DNFILE STOPFILE
                                     modifies the entries of DNFILE in turn, setting
                                     description to "ID-SEQ"; prints "SEQ DN" once each
                                     result is received; stops when STOPFILE exists
                                     (prints "stopped") or the server goes away
                                     (prints "down")
"""

import os
import sys

import ldap
from ldap.controls import SimplePagedResultsControl

ADMIN = "cn=admin,dc=example,dc=com"
SUFFIX = "dc=example,dc=com"


def connect(url):
    c = ldap.initialize(url)
    c.set_option(ldap.OPT_NETWORK_TIMEOUT, 30)
    c.set_option(ldap.OPT_TIMEOUT, 60)
    c.simple_bind_s(ADMIN, "secret")
    return c


def ops(url):
    c = connect(url)
    for i in range(20):
        c.add_s(
            f"uid=py{i},ou=people,{SUFFIX}",
            [
                ("objectClass", [b"inetOrgPerson"]),
                ("uid", [f"py{i}".encode()]),
                ("cn", [f"Python Person {i}".encode()]),
                ("sn", [b"Python"]),
                ("mail", [f"py{i}@example.com".encode()]),
            ],
        )
    for i in range(0, 20, 2):
        c.modify_s(
            f"uid=py{i},ou=people,{SUFFIX}",
            [
                (ldap.MOD_REPLACE, "mail", [f"even{i}@example.com".encode()]),
                (ldap.MOD_ADD, "description", [b"even"]),
                (ldap.MOD_DELETE, "sn", [b"Python"]),
                (ldap.MOD_ADD, "sn", [f"Even{i}".encode()]),
            ],
        )
    for i in range(1, 20, 4):
        c.rename_s(f"uid=py{i},ou=people,{SUFFIX}", f"uid=pyr{i}", f"ou=staff,{SUFFIX}")
    for i in range(3, 20, 4):
        c.rename_s(f"uid=py{i},ou=people,{SUFFIX}", f"cn=Renamed {i}", None, delold=0)
    for i in range(0, 20, 6):
        c.delete_s(f"uid=py{i},ou=people,{SUFFIX}")
    # Entries slapadd loaded: modify, move across OUs, delete.
    for i in range(30, 60, 3):
        dn = dn_of(i)
        c.modify_s(dn, [(ldap.MOD_REPLACE, "cn", [f"Changed {i}".encode()])])
    for i in range(60, 90, 3):
        c.rename_s(dn_of(i), f"uid=moved{i}", f"ou=guests,{SUFFIX}")
    for i in range(90, 120, 3):
        c.delete_s(dn_of(i))
    c.unbind_s()
    print("ops done")


def dn_of(i):
    ou = ["people", "staff", "guests"][i % 3]
    return f"uid=user{i},ou={ou},{SUFFIX}"


def paged(url, base, filt):
    c = connect(url)
    page = SimplePagedResultsControl(True, size=7, cookie="")
    pages = 0
    while True:
        msgid = c.search_ext(base, ldap.SCOPE_SUBTREE, filt, ["uid"], serverctrls=[page])
        _, data, _, ctrls = c.result3(msgid)
        pages += 1
        for dn, _ in data:
            print(dn)
        cookie = [x for x in ctrls if x.controlType == SimplePagedResultsControl.controlType]
        if not cookie or not cookie[0].cookie:
            break
        page.cookie = cookie[0].cookie
    print(f"pages {pages}")


def modify(url, ident, dnfile, stopfile):
    dns = open(dnfile).read().split("\n")
    dns = [d for d in dns if d]
    try:
        c = connect(url)
        seq = 0
        while not os.path.exists(stopfile):
            seq += 1
            dn = dns[seq % len(dns)]
            c.modify_s(dn, [(ldap.MOD_REPLACE, "description", [f"{ident}-{seq}".encode()])])
            print(f"{seq} {dn}", flush=True)
        print("stopped", flush=True)
    except (ldap.SERVER_DOWN, ldap.CONNECT_ERROR, ldap.TIMEOUT):
        print("down", flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "ops":
        ops(a[1])
    elif a[0] == "paged":
        paged(a[1], a[2], a[3])
    elif a[0] == "modify":
        modify(a[1], a[2], a[3], a[4])
    else:
        sys.exit(f"unknown mode {a[0]}")
