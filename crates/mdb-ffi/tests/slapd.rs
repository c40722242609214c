//! Unmodified OpenLDAP (Debian's slapd 2.5, its back_mdb carrying LMDB
//! 0.9.29) on our library: `LD_PRELOAD` of liblmdb.so with
//! `MDB_REPORT_VERSION=0.9.29` (docs/openldap.md). Everything slapd does on
//! ours is compared with what it does on its bundled LMDB: the oracle.

mod common;
mod openldap;

use openldap::*;
use std::collections::BTreeMap;
use std::path::Path;

/// The searches compared between the two servers: (arguments, entries).
fn searches() -> Vec<(Vec<String>, Option<usize>)> {
    let s = |a: &[&str], n: Option<usize>| (a.iter().map(|x| x.to_string()).collect(), n);
    let staff = format!("ou=staff,{SUFFIX}");
    let people = format!("ou=people,{SUFFIX}");
    vec![
        s(&["-b", SUFFIX, "(uid=user4321)"], Some(1)),
        s(&["-b", SUFFIX, "(uid=nosuch)"], Some(0)),
        s(&["-b", SUFFIX, "(cn=*Number 12*)", "dn"], None),
        s(&["-b", SUFFIX, "(sn=Surname99*)", "uid", "sn"], None),
        s(
            &["-b", &staff, "(objectClass=inetOrgPerson)", "uid", "cn"],
            None,
        ),
        s(
            &["-b", SUFFIX, "-s", "one", "(objectClass=*)", "dn"],
            Some(3),
        ),
        s(&["-b", &people, "-s", "one", "(mail=*)", "mail"], None),
        s(
            &[
                "-b",
                SUFFIX,
                "(&(objectClass=person)(|(uid=user1)(mail=user2@example.com)))",
            ],
            Some(2),
        ),
        s(
            &[
                "-E",
                "pr=100/noprompt",
                "-b",
                SUFFIX,
                "(sn=Surname1*)",
                "dn",
            ],
            None,
        ),
        s(&["-b", SUFFIX, "(description=*)", "dn"], None),
    ]
}

/// Run the searches on both servers: the same answers (and, on the
/// directory as loaded, the counts expected).
fn same_searches(lm: &Server, md: &Server, as_loaded: bool) {
    for (args, n) in searches() {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (x, y) = (lm.search(&a), md.search(&a));
        assert_eq!(x, y, "ldapsearch {a:?} differs");
        if let (Some(n), true) = (n, as_loaded) {
            assert_eq!(x.matches("dn: ").count(), n, "ldapsearch {a:?}: {x}");
        }
    }
    let paged = |s: &Server| s.python("paged", &[SUFFIX, "(sn=Surname5*)"]);
    let (x, y) = (paged(lm), paged(md));
    assert_eq!(x, y, "paged search differs");
    assert!(x.lines().count() > 100 && x.contains("pages "), "{x}");
}

/// A directory of 1,500 people slapadded on `lib`, and its entries.
fn loaded(lib: Lib) -> (Dir, BTreeMap<String, Vec<String>>) {
    let d = Dir::new(INDEXES);
    d.slapadd(lib, &ldif(1_500));
    let e = entries(&d.slapcat(lib));
    (d, e)
}

/// `clients` modifying clients, each on `each` people of its own, none with
/// a description of its own (every 97th has one).
fn modifiers(s: &Server, clients: usize, each: usize, work: &Path) -> Vec<Modifier> {
    (0..clients)
        .map(|c| {
            let dns = (1..)
                .map(|k| k * clients + c)
                .filter(|i| i % 97 != 0)
                .take(each)
                .map(dn_of)
                .collect();
            Modifier::start(s, &format!("c{c}"), dns, work)
        })
        .collect()
}

const INDEXES: &str = "index objectClass eq\nindex uid eq\nindex cn,sn eq,sub\n\
                       index mail pres,eq";

fn more_indexes() -> String {
    format!("{INDEXES}\nindex description,telephoneNumber eq")
}

/// The ldapmodify batch: adds (a new OU and children), modifies, modrdn
/// within and across OUs, deletes.
fn modify_batch() -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "dn: ou=new,{SUFFIX}\nchangetype: add\nobjectClass: organizationalUnit\nou: new\n\n"
    ));
    for i in 0..5 {
        s.push_str(&format!(
            "dn: uid=n{i},ou=new,{SUFFIX}\nchangetype: add\nobjectClass: inetOrgPerson\n\
             uid: n{i}\ncn: New {i}\nsn: Newcomer\n\n"
        ));
    }
    for i in [3, 4, 5] {
        s.push_str(&format!(
            "dn: {}\nchangetype: modify\nreplace: mail\nmail: m{i}@example.org\n-\n\
             add: description\ndescription: modified {i}\n-\ndelete: cn\ncn: U{i}\n\n",
            dn_of(i)
        ));
    }
    s.push_str(&format!(
        "dn: {}\nchangetype: modrdn\nnewrdn: uid=user10x\ndeleteoldrdn: 1\n\n",
        dn_of(10)
    ));
    s.push_str(&format!(
        "dn: {}\nchangetype: modrdn\nnewrdn: uid=user11\ndeleteoldrdn: 1\n\
         newsuperior: ou=new,{SUFFIX}\n\n",
        dn_of(11)
    ));
    s.push_str(&format!(
        "dn: uid=n4,ou=new,{SUFFIX}\nchangetype: delete\n\n"
    ));
    s.push_str(&format!("dn: {}\nchangetype: delete\n\n", dn_of(12)));
    s
}

/// slapadd -q of 10,004 entries, searches of every kind, ldapmodify and
/// python3-ldap changes, slapindex: slapd on ours does exactly what it does
/// on its bundled LMDB (slapcat, search answers, every index database), and
/// each side's database opens and serves on the other.
#[test]
fn slapd_on_mdb_does_what_it_does_on_lmdb() {
    need_openldap();
    let data = ldif(10_000);
    let lm = Dir::new(INDEXES);
    let md = Dir::new(INDEXES);
    lm.slapadd(Lib::Bundled, &data);
    md.slapadd(Lib::Ours, &data);
    let cat = lm.slapcat(Lib::Bundled);
    assert_eq!(cat.matches("\ndn: ").count() + 1, 10_004);
    assert!(
        cat == md.slapcat(Lib::Ours),
        "slapcat differs after slapadd"
    );
    assert_eq!(
        lm.slapcat(Lib::Ours),
        cat,
        "ours reads the bundled LMDB's file"
    );
    // Every database (DN tree, each index) holds the same items. Not id2e
    // byte for byte: slapd leaves the padding at the end of an encoded
    // entry unwritten in MDB_RESERVE space, where LMDB leaves whatever the
    // page held and ours zeros (slapcat above compares the entries).
    assert_eq!(lm.names(), md.names());
    let names: Vec<String> = lm.names().into_iter().filter(|n| n != "id2e").collect();
    assert!(
        names.contains(&"dn2i".to_string()) && names.len() >= 8,
        "{names:?}"
    );
    for n in &names {
        assert!(
            lm.dump(n) == md.dump(n),
            "mdb_dump -s {n} differs after slapadd"
        );
    }
    md.check();

    let (s_lm, s_md) = (lm.serve(Lib::Bundled), md.serve(Lib::Ours));
    same_searches(&s_lm, &s_md, true);
    for s in [&s_lm, &s_md] {
        s.modify(&modify_batch());
        assert!(s.python("ops", &[]).contains("ops done"));
    }
    same_searches(&s_lm, &s_md, false);
    let moved = "(|(uid=user11)(uid=user10x)(uid=moved63)(uid=pyr5)(cn=Renamed 7))";
    let found = s_md.search(&["-b", SUFFIX, moved, "dn"]);
    assert_eq!(found.matches("dn: ").count(), 5, "{found}");
    assert_eq!(found, s_lm.search(&["-b", SUFFIX, moved, "dn"]));
    s_lm.stop();
    s_md.stop();

    // The same entries in the same order; stamps and new entries' UUIDs
    // differ by nature.
    let volatile = ["entryUUID:", "createTimestamp:"];
    let strip = |cat: &str| -> Vec<(String, Vec<String>)> {
        let order: Vec<String> = cat
            .lines()
            .filter_map(|l| l.strip_prefix("dn: ").map(str::to_string))
            .collect();
        let e = entries(cat);
        order
            .into_iter()
            .map(|dn| {
                let l = without_stamps(&e[&dn], &volatile);
                (dn, l)
            })
            .collect()
    };
    let (a, b) = (
        strip(&lm.slapcat(Lib::Bundled)),
        strip(&md.slapcat(Lib::Ours)),
    );
    assert_eq!(
        a.len(),
        10_004 + 6 + 20 - 1 - 1 - 4 - 10,
        "entries after the changes"
    );
    assert!(a == b, "slapcat differs after the changes");
    for n in &names {
        assert!(
            lm.dump(n) == md.dump(n),
            "mdb_dump -s {n} differs after changes"
        );
    }
    md.check();

    // slapindex of two new indexes.
    for (d, lib) in [(&lm, Lib::Bundled), (&md, Lib::Ours)] {
        d.configure(&more_indexes());
        d.tool(lib, "slapindex", &["-q", "description", "telephoneNumber"]);
    }
    // Items: one per description (each 97th person and a few modified),
    // one per telephone number.
    for (n, least) in [("description", 100), ("telephoneNumber", 10_000)] {
        let x = lm.dump(n);
        assert!(
            x.lines().count() > least,
            "{n} index: {} lines",
            x.lines().count()
        );
        assert!(x == md.dump(n), "mdb_dump -s {n} differs after slapindex");
    }
    md.check();

    // Each side's database serves on the other, and back.
    let phone = "(telephoneNumber=+1 555 0042)";
    for (d, from, to, tag) in [
        (&lm, Lib::Bundled, Lib::Ours, "cross1"),
        (&md, Lib::Ours, Lib::Bundled, "cross2"),
    ] {
        let s = d.serve(to);
        assert_eq!(
            s.search(&["-b", SUFFIX, phone, "dn"])
                .matches("dn: ")
                .count(),
            1
        );
        s.modify(&format!(
            "dn: {}\nchangetype: modify\nreplace: description\ndescription: {tag}\n",
            dn_of(7)
        ));
        s.stop();
        let s = d.serve(from);
        let f = s.search(&["-b", SUFFIX, &format!("(description={tag})"), "dn"]);
        assert_eq!(f.trim(), format!("dn: {}", dn_of(7)));
        s.stop();
        d.check();
    }
}

/// Modifies from four python3-ldap clients on slapd in WAL mode (slapadd
/// and slapcat in WAL mode too), slapd SIGKILLed among them: after a
/// restart every modify a client saw succeed is there, the one each client
/// had in flight may or may not be, and nothing else changed.
#[test]
fn slapd_in_wal_mode_keeps_every_acknowledged_modify_through_sigkill() {
    need_openldap();
    let (d, before) = loaded(Lib::OursWal);
    let work = tempfile::tempdir().unwrap();
    let s = d.serve(Lib::OursWal);
    let clients = modifiers(&s, 4, 25, work.path());
    wait_acked(&clients, &[0; 4], 50);
    s.kill();
    // What each entry may hold now: the last acknowledged value, or the one
    // in flight.
    let mut allowed: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
    for cl in clients {
        let (id, dns) = (cl.id.clone(), cl.dns.clone());
        let (last, how) = cl.finish();
        assert_eq!(how, "down", "client {id} ended with {how:?}");
        assert!(last > 0, "client {id} had no modify acknowledged");
        let at = |seq: u64| dns[seq as usize % dns.len()].clone();
        for dn in &dns {
            let acked = (1..=last).rev().find(|&q| at(q) == *dn);
            let v = acked.map(|q| format!("{id}-{q}"));
            allowed.insert(dn.clone(), vec![v]);
        }
        let next = last + 1;
        allowed
            .get_mut(&at(next))
            .unwrap()
            .push(Some(format!("{id}-{next}")));
    }
    let s = d.serve(Lib::OursWal);
    let served = s.search(&["-b", SUFFIX, "(description=c*)", "description"]);
    s.stop();
    let after = entries(&d.slapcat(Lib::OursWal));
    assert_eq!(before.len(), after.len());
    let mut served_n = 0;
    for (dn, lines) in &before {
        let now = after.get(dn).unwrap_or_else(|| panic!("{dn} is gone"));
        let Some(ok) = allowed.get(dn) else {
            assert_eq!(lines, now, "{dn} changed");
            continue;
        };
        let v = value(now, "description").map(str::to_string);
        assert!(
            ok.contains(&v),
            "{dn}: description {v:?}, expected one of {ok:?}"
        );
        if let Some(v) = &v {
            served_n += 1;
            assert!(
                served.contains(&format!("dn: {dn}\ndescription: {v}\n")),
                "{dn}"
            );
        }
        let keep = |l: &[String]| without_stamps(l, &["description:"]);
        assert_eq!(
            keep(lines),
            keep(now),
            "{dn}: more than its description changed"
        );
    }
    assert_eq!(served.matches("dn: ").count(), served_n);
    d.check();
}

/// `mdb backup` while slapd serves modifies (full backup under load, an
/// incremental one after): restoring the newest gives exactly what slapd
/// left, restoring the full one gives a state each client's modifies reach
/// in order, and slapd serves both restored databases.
#[test]
fn mdb_backup_while_slapd_serves_restores_what_slapd_wrote() {
    need_openldap();
    let (d, before) = loaded(Lib::Ours);
    let work = tempfile::tempdir().unwrap();
    let dest = work.path().join("backups");
    let s = d.serve(Lib::Ours);
    let clients = modifiers(&s, 2, 30, work.path());
    wait_acked(&clients, &[0; 2], 20);
    let mdb = mdb_cli();
    let full = common::run(
        std::process::Command::new(&mdb)
            .args(["backup", "--json"])
            .arg(d.db())
            .arg(&dest),
    );
    assert!(full.contains("\"kind\":\"full\""), "{full}");
    let full_txn = full.split("\"txnid\":").nth(1).unwrap();
    let full_txn: String = full_txn.chars().take_while(char::is_ascii_digit).collect();
    let seen: Vec<usize> = clients.iter().map(Modifier::acked).collect();
    wait_acked(&clients, &seen, 20);
    std::fs::write(work.path().join("stop"), "").unwrap();
    let mut ends = Vec::new();
    for cl in clients {
        let (id, dns) = (cl.id.clone(), cl.dns.clone());
        let (last, how) = cl.finish();
        assert_eq!(how, "stopped", "client {id}");
        ends.push((id, dns, last));
    }
    common::run(
        std::process::Command::new(&mdb)
            .args(["backup", "--incremental"])
            .arg(d.db())
            .arg(&dest),
    );
    let live = d.slapcat(Lib::Ours);
    s.stop();
    assert_eq!(d.slapcat(Lib::Ours), live);

    let restore = |args: &[&str]| {
        let r = Dir::new(INDEXES);
        common::run(
            std::process::Command::new(&mdb)
                .arg("restore")
                .args(args)
                .arg(&dest)
                .arg(r.db()),
        );
        r.check();
        r
    };
    let newest = restore(&[]);
    assert!(
        newest.slapcat(Lib::Ours) == live,
        "restored slapcat differs"
    );
    let s = newest.serve(Lib::Ours);
    let n = s.search(&["-b", SUFFIX, "(description=c*)", "dn"]);
    let touched: usize = ends
        .iter()
        .map(|(_, d, last)| d.len().min(*last as usize))
        .sum();
    assert_eq!(n.matches("dn: ").count(), touched, "{n}");
    s.stop();

    // The full backup: each client's first k modifies, for some k.
    let old = restore(&["--to-txn", &full_txn]);
    let s = old.serve(Lib::Ours);
    assert_eq!(
        s.search(&["-b", SUFFIX, "(uid=user42)", "uid"])
            .matches("dn: ")
            .count(),
        1
    );
    s.stop();
    let got = entries(&old.slapcat(Lib::Ours));
    assert_eq!(got.len(), before.len());
    for (id, dns, last) in ends {
        let at = |q: u64| &dns[q as usize % dns.len()];
        let k = dns
            .iter()
            .filter_map(|dn| value(&got[dn], "description"))
            .filter_map(|v| v.strip_prefix(&format!("{id}-"))?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        assert!(k <= last, "{id}: modify {k} of {last}");
        for dn in &dns {
            let want = (1..=k)
                .rev()
                .find(|&q| at(q) == dn)
                .map(|q| format!("{id}-{q}"));
            let v = value(&got[dn], "description").map(str::to_string);
            assert_eq!(v, want, "{dn} in the full backup (client {id} at {k})");
        }
    }
    for (dn, lines) in &before {
        let keep = |l: &[String]| without_stamps(l, &["description:"]);
        assert_eq!(keep(lines), keep(&got[dn]), "{dn}");
    }
}
