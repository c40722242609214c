//! Typed databases: the codecs' order is the values' order, ranges over
//! typed bounds from both ends, values decoded (JSON via serde), and bytes
//! that are not a codec's value are `Incompatible`, never a panic.

use mdb::typed::{Bytes, Json, Str, TypedDb, I64, U32, U64};
use mdb::{DbFlags, EnvOptions, WriteFlags};

#[test]
fn integer_keys_keep_numeric_order() {
    let tmp = tempfile::tempdir().unwrap();
    let env = EnvOptions::new().max_dbs(4).open(tmp.path()).unwrap();
    let mut w = env.write_txn().unwrap();
    let u: TypedDb<U64, Str> = TypedDb::create(&mut w, "u", DbFlags::EMPTY).unwrap();
    let i: TypedDb<I64, U32> = TypedDb::create(&mut w, "i", DbFlags::EMPTY).unwrap();
    let nums = [0u64, 1, 255, 256, 65535, 65536, 1 << 40, u64::MAX];
    for n in nums.iter().rev() {
        u.put(&mut w, n, &n.to_string()).unwrap();
    }
    let signed = [i64::MIN, -70_000, -1, 0, 1, 300, i64::MAX];
    for (j, n) in signed.iter().enumerate().rev() {
        i.put(&mut w, n, &(j as u32)).unwrap();
    }
    let keys: Vec<u64> = u.iter(&w).unwrap().map(|kv| kv.unwrap().0).collect();
    assert_eq!(keys, nums);
    let got: Vec<(i64, u32)> = i.iter(&w).unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(
        got,
        signed
            .iter()
            .enumerate()
            .map(|(j, n)| (*n, j as u32))
            .collect::<Vec<_>>()
    );
    // Typed bounds, both ends.
    let mid: Vec<u64> = u
        .range(&w, 255..=65536)
        .unwrap()
        .map(|kv| kv.unwrap().0)
        .collect();
    assert_eq!(mid, [255, 256, 65535, 65536]);
    let down: Vec<u64> = u
        .range(&w, ..256)
        .unwrap()
        .rev()
        .map(|kv| kv.unwrap().0)
        .collect();
    assert_eq!(down, [255, 1, 0]);
    let neg: Vec<i64> = i.range(&w, ..0).unwrap().map(|kv| kv.unwrap().0).collect();
    assert_eq!(neg, [i64::MIN, -70_000, -1]);
    assert_eq!(u.get(&w, &65536).unwrap(), Some("65536"));
    assert!(u.delete(&mut w, &65536).unwrap());
    assert_eq!(u.get(&w, &65536).unwrap(), None);
    w.commit().unwrap();
}

#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq, Clone)]
struct User {
    name: String,
    langs: Vec<String>,
}

#[test]
fn serde_values_and_bad_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let env = EnvOptions::new().max_dbs(4).open(tmp.path()).unwrap();
    let mut w = env.write_txn().unwrap();
    let users: TypedDb<Str, Json<User>> = TypedDb::create(&mut w, "users", DbFlags::EMPTY).unwrap();
    let ada = User {
        name: "Ada".into(),
        langs: vec!["Analytical Engine".into()],
    };
    users.put(&mut w, "ada", &ada).unwrap();
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    let users: TypedDb<Str, Json<User>> = TypedDb::open(&r, "users").unwrap();
    assert_eq!(users.get(&r, "ada").unwrap(), Some(ada));
    drop(r);
    // The same database read with the wrong codecs.
    let mut w = env.write_txn().unwrap();
    let raw: TypedDb<Bytes, Bytes> = TypedDb::open(&w, "users").unwrap();
    raw.put(&mut w, b"\xff\xfe", b"not json").unwrap();
    let users: TypedDb<Str, Json<User>> = TypedDb::new(raw.database());
    assert_eq!(users.get(&w, "ada").unwrap().unwrap().name, "Ada");
    let bad: Vec<mdb::Result<_>> = users.iter(&w).unwrap().collect();
    assert_eq!(bad.len(), 2);
    assert_eq!(
        bad[1].as_ref().err().map(|e| e.kind()),
        Some(mdb::ErrorKind::Incompatible)
    );
    let e = bad[1].as_ref().unwrap_err();
    assert_eq!((e.operation(), e.key_len()), (Some("decode key"), Some(2)));
    let as_u32: TypedDb<Str, U32> = TypedDb::new(raw.database());
    let e = as_u32.get(&w, "ada").unwrap_err();
    assert_eq!(
        (e.operation(), e.database()),
        (Some("decode value"), Some(&b"users"[..]))
    );
    let json = raw.get(&w, b"ada").unwrap().unwrap();
    assert_eq!(e.value_len(), Some(json.len())); // JSON, not a 4-byte integer
    assert!(
        e.to_string()
            .contains("(decode value on database \"users\", value of"),
        "{e}"
    );
    assert_eq!(
        as_u32.get(&w, "ada").err().map(|e| e.kind()),
        Some(mdb::ErrorKind::Incompatible)
    );
    // Plain puts are visible typed, and the other way round.
    w.put(
        raw.database(),
        b"grace",
        br#"{"name":"Grace","langs":["COBOL"]}"#,
        WriteFlags::EMPTY,
    )
    .unwrap();
    assert_eq!(users.get(&w, "grace").unwrap().unwrap().langs, ["COBOL"]);
    let names: Vec<&str> = users
        .prefix(&w, "a")
        .unwrap()
        .map(|kv| kv.unwrap().0)
        .collect();
    assert_eq!(names, ["ada"]);
}
