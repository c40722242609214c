//! The phases of `mdb-bench instr` through our Rust API: the twin of
//! `c/phases.c`, on the same data, with the same callgrind client requests
//! (through `c/callgrind_shim.c`). Run as the hidden subcommand
//! `mdb-bench __phases DIR N` under callgrind by [`crate::instr`].

use crate::workloads::{key, mix, shuffled, Res, BATCH, IDS_PER_KEY, VAL_LEN};

/// Items per range of `range_10`.
const RANGE_LEN: usize = 10;
/// Size of a `large_get` value, and how many are put per transaction.
const LARGE_LEN: usize = 100_000;
const LARGE_BATCH: usize = 10;
use mdb::{Database, DbFlags, EnvFlags, Txn as _, WriteFlags};
use std::ffi::CString;
use std::path::Path;

mod shim {
    use std::os::raw::{c_char, c_int};
    extern "C" {
        pub fn mdb_bench_cg_available() -> c_int;
        pub fn mdb_bench_cg_zero();
        pub fn mdb_bench_cg_dump(name: *const c_char);
    }
}

/// Whether the shim was built with `<valgrind/callgrind.h>` (otherwise its
/// client requests are no-ops and there is nothing to measure).
pub fn callgrind_available() -> bool {
    // SAFETY: a C function without arguments that returns a constant.
    unsafe { shim::mdb_bench_cg_available() != 0 }
}

/// Zero callgrind's counters (a no-op outside callgrind).
pub fn cg_zero() {
    // SAFETY: client requests only talk to valgrind (no-ops outside it).
    unsafe { shim::mdb_bench_cg_zero() };
}

/// Dump callgrind's counters as part `name` (a no-op outside callgrind).
pub fn cg_dump(name: &str) {
    let cname = CString::new(name).unwrap_or_default();
    // SAFETY: as above; `cname` is a NUL-terminated string alive for the call.
    unsafe { shim::mdb_bench_cg_dump(cname.as_ptr()) };
}

/// Run `f` as phase `name`: counters zeroed before, dumped after.
fn phase<T>(name: &str, ops: usize, f: impl FnOnce() -> Res<T>) -> Res<T> {
    cg_zero();
    let r = f();
    cg_dump(name);
    let r = r.map_err(|e| format!("{name}: {e}"))?;
    println!("phase {name} {ops}");
    Ok(r)
}

/// The inputs, made exactly as `c/phases.c` makes them.
struct Data {
    keys: Vec<[u8; 16]>,
    sorted: Vec<[u8; 16]>,
    get_order: Vec<u32>,
    del_order: Vec<u32>,
    /// DUPSORT pairs in put order: key and big-endian id.
    pairs: Vec<([u8; 16], [u8; 8])>,
}

impl Data {
    fn new(n: usize) -> Data {
        let keys: Vec<[u8; 16]> = (0..n as u64).map(key).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        let nkeys = n.div_ceil(IDS_PER_KEY);
        let dkeys: Vec<[u8; 16]> = (0..nkeys as u64).map(|i| key(i ^ 0x1D1D_1D1D)).collect();
        let pairs = shuffled(n, 0x0F1E_2D3C_4B5A_6978)
            .into_iter()
            .map(|p| {
                let id = mix(p as u64 ^ 0x0123_4567_89AB_CDEF).to_be_bytes();
                (dkeys[p as usize % nkeys], id)
            })
            .collect();
        Data {
            keys,
            sorted,
            get_order: shuffled(n, 0x1234_5678_9ABC_DEF0),
            del_order: shuffled(n, 0x0DE1_E7E0_DE1E_7E00),
            pairs,
        }
    }
}

/// Put `keys` in order, BATCH per transaction; the value of `keys[i]`
/// carries `i` in its first 8 bytes.
fn load(
    env: &mdb::Env,
    db: Database,
    flags: WriteFlags,
    keys: &[[u8; 16]],
    val: &mut [u8; VAL_LEN],
) -> Res<()> {
    for (c, chunk) in keys.chunks(BATCH).enumerate() {
        let mut w = env.write_txn()?;
        for (j, k) in chunk.iter().enumerate() {
            val[..8].copy_from_slice(&((c * BATCH + j) as u64).to_le_bytes());
            w.put(db, k, val, flags)?;
        }
        w.commit()?;
    }
    Ok(())
}

/// `mdb-bench __phases DIR N`.
pub fn run(dir: &Path, n: usize) -> Res<()> {
    if !(100..=u32::MAX as usize).contains(&n) {
        return Err("N must be between 100 and 2^32-1".into());
    }
    let d = Data::new(n);
    let mut val = [0u8; VAL_LEN];
    for (j, b) in val.iter_mut().enumerate() {
        *b = mix(j as u64 + 1000) as u8;
    }
    let env = mdb::EnvOptions::new()
        .map_size((n * 4096).max(1 << 30))
        .max_dbs(6)
        .flags(EnvFlags::NO_SYNC)
        .open(dir)?;
    let mut w = env.write_txn()?;
    let rnd = w.create_db("random", DbFlags::EMPTY)?;
    let app = w.create_db("append", DbFlags::EMPTY)?;
    let dup = w.create_db("dupsort", DbFlags::DUP_SORT)?;
    let large = w.create_db("large", DbFlags::EMPTY)?;
    let front = w.create_db("front", DbFlags::EMPTY)?;
    w.commit()?;

    phase("put_random", n, || {
        load(&env, rnd, WriteFlags::EMPTY, &d.keys, &mut val)
    })?;
    phase("put_append", n, || {
        load(&env, app, WriteFlags::APPEND, &d.sorted, &mut val)
    })?;

    let found = phase("get", n, || {
        let r = env.read_txn()?;
        let mut found = 0;
        for &x in &d.get_order {
            let v = r.get(rnd, &d.keys[x as usize])?.ok_or("missing key")?;
            found += (v.len() == VAL_LEN && v[..8] == (x as u64).to_le_bytes()) as usize;
        }
        Ok(found)
    })?;
    if found != n {
        return Err("get: wrong values".into());
    }

    let (count, bytes) = phase("scan", n, || {
        let r = env.read_txn()?;
        let mut c = r.cursor(rnd)?;
        let (mut count, mut bytes) = (0, 0);
        while let Some((_, v)) = c.next()? {
            count += 1;
            bytes += v.len();
        }
        Ok((count, bytes))
    })?;
    if count != n || bytes != n * VAL_LEN {
        return Err("scan: wrong items".into());
    }

    // Ranges through the idiomatic API: `range(key..)`, RANGE_LEN items
    // taken (fewer at the end of the database). The C twin does the same
    // with SET_RANGE and NEXT.
    let count = phase("range_10", n / 10, || {
        let r = env.read_txn()?;
        let mut count = 0;
        for &x in &d.get_order[..n / 10] {
            for item in r.range(rnd, &d.keys[x as usize][..]..)?.take(RANGE_LEN) {
                item?;
                count += 1;
            }
        }
        Ok(count)
    })?;
    if count < n / 10 || count > n / 10 * RANGE_LEN {
        return Err("range_10: wrong items".into());
    }

    let bytes = phase("read_txn", n / 10, || {
        let mut bytes = 0;
        for &x in &d.get_order[..n / 10] {
            let r = env.read_txn()?;
            bytes += r.get(rnd, &d.keys[x as usize])?.ok_or("missing key")?.len();
        }
        Ok(bytes)
    })?;
    if bytes != n / 10 * VAL_LEN {
        return Err("read_txn: wrong values".into());
    }

    // Values of 100 KB (overflow pages): n/100 of them, read back in a
    // scattered order in one read transaction.
    let nlarge = n / 100;
    let mut big: Vec<u8> = (0..LARGE_LEN).map(|j| mix(j as u64) as u8).collect();
    for (c, chunk) in d.keys[..nlarge].chunks(LARGE_BATCH).enumerate() {
        let mut w = env.write_txn()?;
        for (j, k) in chunk.iter().enumerate() {
            big[..8].copy_from_slice(&((c * LARGE_BATCH + j) as u64).to_le_bytes());
            w.put(large, k, &big, WriteFlags::EMPTY)?;
        }
        w.commit()?;
    }
    let found = phase("large_get", nlarge, || {
        let r = env.read_txn()?;
        let mut found = 0;
        for i in 0..nlarge {
            let x = (i * 7919) % nlarge;
            let v = r.get(large, &d.keys[x])?.ok_or("missing key")?;
            found += (v.len() == LARGE_LEN && v[..8] == (x as u64).to_le_bytes()) as usize;
        }
        Ok(found)
    })?;
    if found != nlarge {
        return Err("large_get: wrong values".into());
    }

    phase("dupsort_put", n, || {
        for chunk in d.pairs.chunks(BATCH) {
            let mut w = env.write_txn()?;
            for (k, id) in chunk {
                w.put(dup, k, id, WriteFlags::EMPTY)?;
            }
            w.commit()?;
        }
        Ok(())
    })?;

    let walked = phase("dupsort_walk", n, || {
        let r = env.read_txn()?;
        let mut c = r.cursor(dup)?;
        let mut count = 0;
        while c.next_nodup()?.is_some() {
            count += 1;
            while c.next_dup()?.is_some() {
                count += 1;
            }
        }
        Ok(count)
    })?;
    if walked != n {
        return Err("dupsort_walk: wrong count".into());
    }

    phase("delete", n, || {
        for chunk in d.del_order.chunks(BATCH) {
            let mut w = env.write_txn()?;
            for &x in chunk {
                if !w.del(rnd, &d.keys[x as usize])? {
                    return Err("missing key".into());
                }
            }
            w.commit()?;
        }
        Ok(())
    })?;

    // Per step: delete at the cursor, then `next` to what followed.
    let count = phase("cursor_delete", n, || {
        let mut count = 0;
        loop {
            let mut w = env.write_txn()?;
            let mut c = w.write_cursor(app)?;
            let mut more = c.first()?.is_some();
            for _ in 0..BATCH {
                if !more {
                    break;
                }
                c.del(false)?;
                count += 1;
                more = c.next()?.is_some();
            }
            drop(c);
            w.commit()?;
            if !more {
                return Ok(count);
            }
        }
    })?;
    if count != n {
        return Err("cursor_delete: wrong count".into());
    }

    // Per step: `first`, then delete there (a queue drained from its
    // head). The database is loaded with APPEND outside the phase.
    load(&env, front, WriteFlags::APPEND, &d.sorted, &mut val)?;
    let count = phase("first_delete", n, || {
        let mut count = 0;
        loop {
            let mut w = env.write_txn()?;
            let mut c = w.write_cursor(front)?;
            for _ in 0..BATCH {
                if c.first()?.is_none() {
                    drop(c);
                    w.commit()?;
                    return Ok(count);
                }
                c.del(false)?;
                count += 1;
            }
            drop(c);
            w.commit()?;
        }
    })?;
    if count != n {
        return Err("first_delete: wrong count".into());
    }

    let r = env.read_txn()?;
    if r.stat(rnd)?.entries != 0 || r.stat(app)?.entries != 0 {
        return Err("the deletes left entries".into());
    }
    if r.stat(dup)?.entries != n as u64 {
        return Err("dupsort_put: wrong entry count".into());
    }
    Ok(())
}
