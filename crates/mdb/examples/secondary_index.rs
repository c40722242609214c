//! A secondary index with sorted duplicates: users by id, and an index
//! from city to user ids (DUPSORT), kept in step in one transaction.
//!
//! `cargo run -p mdb --example secondary_index`

use mdb::typed::{Str, TypedDb, U32};
use mdb::{DbFlags, EnvOptions, Txn};

fn main() -> mdb::Result<()> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let env = EnvOptions::new().max_dbs(2).open(dir.path())?;
    let mut w = env.write_txn()?;
    let users: TypedDb<U32, Str> = TypedDb::create(&mut w, "users", DbFlags::EMPTY)?;
    let by_city: TypedDb<Str, U32> = TypedDb::create(&mut w, "by_city", DbFlags::DUP_SORT)?;
    for (id, name, city) in [
        (1, "ada", "london"),
        (2, "alan", "london"),
        (3, "grace", "new york"),
        (4, "edsger", "austin"),
    ] {
        users.put(&mut w, &id, name)?;
        by_city.put(&mut w, city, &id)?; // one more duplicate under the city
    }
    w.commit()?;

    let r = env.read_txn()?;
    // Every duplicate of one key: a range over exactly that key.
    let ids: Vec<u32> = by_city
        .range(&r, "london"..="london")?
        .map(|kv| kv.map(|(_, id)| id))
        .collect::<mdb::Result<_>>()?;
    assert_eq!(ids, [1, 2]);
    for id in ids {
        println!("london: {}", users.get(&r, &id)?.expect("indexed user"));
    }
    let c = r.cursor(by_city.database())?;
    let mut c = c;
    c.set_key(b"london")?;
    println!("users in london: {}", c.count()?);
    // Every city with its users, as a nested iterator per key.
    for g in by_city.groups(&r)? {
        let (city, ids) = g?;
        let names: Vec<&str> = ids
            .map(|id| Ok(users.get(&r, &id?)?.expect("indexed user")))
            .collect::<mdb::Result<_>>()?;
        println!("{city}: {}", names.join(", "));
    }
    Ok(())
}
