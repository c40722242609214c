//! The meta pages: each one decoded and judged, and the one in use chosen
//! as LMDB chooses it (the larger txnid, meta 0 on a tie), passing over a
//! meta whose snapshot cannot be read as open does.

use super::report::{Problem, Report};
use super::source::Source;
use crate::format::meta::{Meta, MetaHeader, MAGIC, META_LEN, VERSION, VERSION_WAL};
use crate::format::page::P_META;

/// Largest map a process can have (2^56 bytes: the user address space of
/// 5-level paging; LMDB only records a size it mapped).
const MAX_MAPSIZE: u64 = 1 << 56;

/// Read and judge both meta pages of `src` into `rep` (page size, problems,
/// warnings, the meta in use); the meta in use and its slot, or `None` when
/// no meta can be used (the problem is in `rep`).
pub(super) fn pick(src: &Source<'_>, rep: &mut Report) -> Option<(u8, Meta)> {
    let file_problem = |rep: &mut Report, pgno: Option<u64>, msg: String| {
        rep.problems.push(Problem {
            pgno,
            db: String::new(),
            message: msg,
        })
    };
    let Some(meta0) = src
        .at(0, META_LEN)
        .and_then(|m| m.first_chunk::<META_LEN>())
    else {
        file_problem(
            rep,
            if src.len() == 0 { None } else { Some(0) },
            format!(
                "file is {} bytes long, too short for meta page 0",
                src.len()
            ),
        );
        return None;
    };
    let psize = Meta::fields(meta0).psize();
    if !(psize.is_power_of_two() && (512..=32768).contains(&psize)) {
        file_problem(
            rep,
            Some(0),
            format!("meta page 0 gives page size {psize}, expected a power of two in 512..=32768"),
        );
        return None;
    }
    rep.page_size = psize;
    let ps = psize as usize;
    rep.file_pages = (src.len() / ps) as u64;
    let mut metas = [None, None];
    for (idx, slot) in metas.iter_mut().enumerate() {
        let mut msgs = Vec::new();
        *slot = read_meta(src, idx, ps, &mut msgs);
        for m in msgs {
            file_problem(rep, Some(idx as u64), m);
        }
    }
    // A meta whose snapshot cannot be read is passed over by open, as LMDB
    // passes over an inactive one: a problem when it is the newer one (its
    // commit is lost), a warning otherwise.
    let plausible = metas.map(|m| m.filter(|m| m.implausible().is_none()));
    if plausible[0].is_some() || plausible[1].is_some() {
        for idx in 0..2 {
            let Some((m, why)) = metas[idx].and_then(|m| Some((m, m.implausible()?))) else {
                continue;
            };
            let newer = metas[1 - idx].is_none_or(|o| m.txnid > o.txnid);
            let p = Problem {
                pgno: Some(idx as u64),
                db: String::new(),
                message: format!(
                    "meta page {idx} (txnid {}): {why}; its snapshot is not read",
                    m.txnid
                ),
            };
            if newer {
                rep.problems.push(p);
            } else {
                rep.warnings.push(p);
            }
        }
        metas = plausible;
    }
    let (used, meta) = match (metas[0], metas[1]) {
        (Some(a), Some(b)) => {
            if b.txnid > a.txnid {
                (1u8, b)
            } else {
                (0u8, a)
            }
        }
        (Some(a), None) => (0, a),
        (None, Some(b)) => (1, b),
        (None, None) => {
            file_problem(rep, Some(0), "no valid meta page".to_string());
            return None;
        }
    };
    rep.meta_used = used;
    rep.meta_txnid = meta.txnid;
    rep.last_pgno = meta.last_pgno;
    if metas[0].is_some() && metas[1].is_some() && u64::from(used) != meta.txnid & 1 {
        file_problem(
            rep,
            Some(u64::from(used)),
            format!(
                "meta page {used} is current with txnid {}, but txnid {} is written to meta page {}",
                meta.txnid,
                meta.txnid,
                meta.txnid & 1
            ),
        );
    }
    if let Some(why) = meta.implausible() {
        file_problem(rep, Some(u64::from(used)), why.to_string());
    }
    if meta.mapsize > MAX_MAPSIZE {
        file_problem(
            rep,
            Some(u64::from(used)),
            format!(
                "map size {} is larger than any 64-bit address space: LMDB \
                 (and an open without a map size or auto-grow) fails (ENOMEM)",
                meta.mapsize
            ),
        );
    }

    Some((used, meta))
}

/// Decode meta page `idx`; `None` when it is unusable (problems in `msgs`).
fn read_meta(src: &Source<'_>, idx: usize, psize: usize, msgs: &mut Vec<String>) -> Option<Meta> {
    let m = match src.at(idx * psize, META_LEN).and_then(|m| m.first_chunk()) {
        Some(m) => m,
        None => {
            msgs.push(format!(
                "meta page {idx} is missing: file is {} bytes long",
                src.len()
            ));
            return None;
        }
    };
    let MetaHeader {
        pgno,
        flags,
        magic,
        version,
    } = MetaHeader::read(m)?;
    if flags & P_META == 0 {
        msgs.push(format!(
            "meta page {idx} lacks the META flag (flags 0x{flags:04x})"
        ));
        return None;
    }
    if magic != MAGIC {
        let hint = if magic == MAGIC.swap_bytes() {
            " (byte-swapped: big-endian file)"
        } else {
            ""
        };
        msgs.push(format!(
            "meta page {idx} has magic 0x{magic:08x}, expected 0x{MAGIC:08x}{hint}"
        ));
        return None;
    }
    if version != VERSION && version != VERSION_WAL {
        msgs.push(format!(
            "meta page {idx} has data version {version}, expected {VERSION}"
        ));
        return None;
    }
    if flags != P_META {
        msgs.push(format!(
            "meta page {idx} has page flags 0x{flags:04x}, expected 0x0008"
        ));
    }
    if pgno != idx as u64 {
        msgs.push(format!("meta page {idx} has pgno field {pgno}"));
    }
    let meta = Meta::fields(m);
    let pad = meta.psize();
    if pad as usize != psize {
        msgs.push(format!(
            "meta page {idx} gives page size {pad}, meta page 0 gives {psize}"
        ));
    }
    Some(meta)
}
