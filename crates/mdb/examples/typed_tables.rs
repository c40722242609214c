//! Typed tables: string keys, integer keys in numeric order, serde values.
//!
//! `cargo run -p mdb --example typed_tables`

use mdb::typed::{Json, Str, TypedDb, U64};
use mdb::{DbFlags, EnvOptions};

#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct Order {
    customer: String,
    total_cents: u64,
}

fn main() -> mdb::Result<()> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let env = EnvOptions::new().max_dbs(2).open(dir.path())?;

    let mut w = env.write_txn()?;
    let orders: TypedDb<U64, Json<Order>> = TypedDb::create(&mut w, "orders", DbFlags::EMPTY)?;
    let stock: TypedDb<Str, U64> = TypedDb::create(&mut w, "stock", DbFlags::EMPTY)?;
    for id in [7u64, 300, 12, 4096] {
        let o = Order {
            customer: format!("c{id}"),
            total_cents: id * 100,
        };
        orders.put(&mut w, &id, &o)?;
    }
    stock.put(&mut w, "bolt", &120)?;
    stock.put(&mut w, "nut", &75)?;
    w.commit()?;

    let r = env.read_txn()?;
    // Integer keys come back in numeric order, from either end.
    let ids: Vec<u64> = orders
        .iter(&r)?
        .map(|kv| kv.map(|(id, _)| id))
        .collect::<mdb::Result<_>>()?;
    assert_eq!(ids, [7, 12, 300, 4096]);
    let (newest, order) = orders.iter(&r)?.next_back().expect("orders")?;
    println!("newest order {newest}: {order:?}");
    for kv in orders.range(&r, 10..=300)? {
        let (id, o) = kv?;
        println!("order {id} of {} for {} cents", o.customer, o.total_cents);
    }
    assert_eq!(stock.get(&r, "nut")?, Some(75));
    Ok(())
}
