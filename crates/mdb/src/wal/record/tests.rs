use super::encode::*;
use super::layout::*;
use super::parse::*;
use crate::error::{ErrorKind, Result};
use crate::format::bytes::{get32, get64};
use crate::format::patch::Patch;
use crate::wal::testutil::Rec;
use proptest::prelude::*;
use std::borrow::Cow;

fn encode(rec: &Rec, seq: u64, prev: u32) -> Vec<u8> {
    let mut buf = vec![0xee; 3]; // encoding appends
    let (len, crc) = rec
        .with(|p| encode_into(&mut buf, seq, prev, 0, p))
        .unwrap();
    assert_eq!(buf.len(), 3 + len);
    assert_eq!(len % 8, 0);
    assert_eq!(len as u64, rec.with(encoded_len).unwrap());
    let out = buf.split_off(3);
    let (v, n) = parse(&out, seq).unwrap();
    assert_eq!((n, v.crc(), v.prev_crc()), (len, crc, prev));
    out
}

fn small(rnd: &mut impl FnMut() -> u64) -> Rec {
    let mut r = Rec::random(7, 16, 3, rnd);
    r.meta.truncate(20);
    r
}

#[test]
fn round_trip_with_trailing_bytes() {
    let mut rnd = crate::format::xorshift(0x1234_5678_9abc_def1);
    for i in 0..200 {
        let rec = Rec::random(i, 64 << (i % 3), (i % 5) as usize, &mut rnd);
        let mut b = encode(&rec, i * 3, i as u32);
        let len = b.len();
        b.extend_from_slice(&[0xff; 40]);
        let (v, n) = parse(&b, i * 3).unwrap();
        assert_eq!((Rec::of(&v), n), (rec, len));
        assert!(parse(&b, i * 3 + 1).is_none(), "another segment's record");
    }
}

#[test]
fn every_byte_corruption_and_truncation_is_rejected() {
    let mut rnd = crate::format::xorshift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..4 {
        let b = encode(&small(&mut rnd), 5, 9);
        for i in 0..b.len() {
            for x in 1..=255u8 {
                let mut c = b.clone();
                c[i] ^= x;
                assert!(parse(&c, 5).is_none(), "byte {i} ^ {x:#x}");
            }
        }
        for k in 0..b.len() {
            assert!(parse(&b[..k], 5).is_none(), "cut at {k}");
        }
    }
}

#[test]
fn bad_parts_are_refused() {
    fn len(psize: u32, run: &[u8]) -> Result<u64> {
        let runs = [(1, run)];
        let n = usize::from(!run.is_empty() || psize != 0);
        let parts = RecordParts {
            txnid: 1,
            psize,
            runs: &runs[..n],
            meta_off: 0,
            meta: &[],
            trim: false,
            patches: &[],
            time_ns: 0,
        };
        let mut buf = Vec::new();
        let encoded = encode_into(&mut buf, 1, 0, 0, &parts);
        assert_eq!(encoded.is_ok(), !buf.is_empty());
        encoded_len(&parts)
    }
    let run = [0u8; 24];
    let bad = Err(ErrorKind::Os(libc::EINVAL).into());
    assert_eq!(len(16, &run), bad);
    assert_eq!(len(0, &[]), bad);
    assert_eq!(len(8, &[]), bad);
    // The run, its entry, no patches (a varint), the meta update (offset 0,
    // length 0: two varints), the time.
    assert_eq!(len(8, &run), Ok(pad8(48 + 20 + 24 + 1 + 2 + 8).unwrap()));
}

/// A record whose CRC matches but whose shape lies: as a forger (or a
/// writer's bug) would make it (version 2: no commit time).
fn forge(nruns: u32, run_len: u32, meta_len: u32, body: usize) -> Vec<u8> {
    let mut b = vec![0u8; HEADER + body];
    b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    b[4..6].copy_from_slice(&2u16.to_le_bytes());
    b[24..28].copy_from_slice(&8u32.to_le_bytes());
    b[28..32].copy_from_slice(&nruns.to_le_bytes());
    b[32..40].copy_from_slice(&(body as u64).to_le_bytes());
    let mut at = HEADER + 8;
    if nruns > 0 && body >= RUN_ENTRY {
        b[HEADER + 8..HEADER + 12].copy_from_slice(&run_len.to_le_bytes());
        at += RUN_ENTRY + run_len as usize;
    }
    if at + 4 <= b.len() {
        b[at..at + 4].copy_from_slice(&meta_len.to_le_bytes());
    }
    b.resize(pad8(b.len() as u64).unwrap() as usize, 0);
    let crc = crc32c::crc32c(&b[..HEADER + body]);
    b[CRC_OFF..CRC_OFF + 4].copy_from_slice(&crc.to_le_bytes());
    b
}

#[test]
fn forged_shapes_with_good_crc_are_rejected() {
    assert!(
        parse(&forge(1, 8, 0, RUN_ENTRY + 8 + 12), 0).is_some(),
        "the honest one"
    );
    assert!(
        parse(&forge(1, 8, 1, RUN_ENTRY + 8 + 12), 0).is_none(),
        "meta past the end"
    );
    assert!(
        parse(&forge(1, 8, 0, RUN_ENTRY + 8 + 13), 0).is_none(),
        "bytes left over"
    );
    assert!(
        parse(&forge(1, 7, 0, RUN_ENTRY + 7 + 12), 0).is_none(),
        "part of a page"
    );
    assert!(
        parse(&forge(1, 0, 0, RUN_ENTRY + 12), 0).is_none(),
        "empty run"
    );
    assert!(
        parse(&forge(u32::MAX, 8, 0, 64), 0).is_none(),
        "run table too long"
    );
    assert!(
        parse(&forge(1, u32::MAX, 0, 64), 0).is_none(),
        "run too long"
    );
    assert!(parse(&forge(0, 0, 0, 12), 0).is_some(), "no runs");
    assert!(
        parse(&forge(0, 0, u32::MAX, 12), 0).is_none(),
        "meta too long"
    );
}

#[test]
fn the_commit_time_round_trips_and_version_2_records_have_none() {
    let page = [7u8; 64];
    let runs: Vec<(u64, &[u8])> = vec![(3, &page)];
    let parts = RecordParts {
        txnid: 9,
        psize: 64,
        runs: &runs,
        meta_off: 8,
        meta: &[1, 2],
        trim: false,
        patches: &[],
        time_ns: 1_700_000_000_123_456_789,
    };
    let mut b = Vec::new();
    encode_into(&mut b, 2, 0, 0, &parts).unwrap();
    let v = parse(&b, 2).unwrap().0;
    assert_eq!(v.commit_time(), Some(1_700_000_000_123_456_789));
    assert_eq!(v.meta(), (8, Cow::Borrowed(&[1u8, 2][..])));
    let v2 = forge(1, 8, 0, RUN_ENTRY + 8 + 12);
    assert_eq!(parse(&v2, 0).unwrap().0.commit_time(), None);
}

/// A leaf page of `psize` bytes with `n` 100-byte nodes, its free gap
/// full of 0xab.
fn leaf(psize: usize, n: usize) -> Vec<u8> {
    use crate::format::page::{HDR, P_LEAF};
    let mut p = vec![0xab; psize];
    p[..HDR].fill(0);
    p[10..12].copy_from_slice(&P_LEAF.to_le_bytes());
    let (lower, upper) = (HDR + 2 * n, psize - 100 * n);
    p[12..14].copy_from_slice(&(lower as u16).to_le_bytes());
    p[14..16].copy_from_slice(&(upper as u16).to_le_bytes());
    for i in 0..n {
        let off = (upper + 100 * i) as u16;
        p[HDR + 2 * i..HDR + 2 * i + 2].copy_from_slice(&off.to_le_bytes());
        p[upper + 100 * i..upper + 100 * (i + 1)].fill(i as u8 + 1);
    }
    p
}

#[test]
fn free_gaps_of_tree_pages_are_left_out_and_read_back_as_zeros() {
    let psize = 4096;
    let page = leaf(psize, 5);
    let mut ov = page.clone(); // overflow flags: kept whole
    ov[10..12].copy_from_slice(&crate::format::page::P_OVERFLOW.to_le_bytes());
    let two = [page.clone(), page.clone()].concat(); // a run of two pages: whole
    let runs: Vec<(u64, &[u8])> = vec![(3, &page), (4, &ov), (9, &two)];
    let mut parts = RecordParts {
        txnid: 7,
        psize: psize as u32,
        runs: &runs,
        meta_off: 24,
        meta: &[1, 2, 3],
        trim: false,
        patches: &[],
        time_ns: 0,
    };
    let (whole, _) = sizes(&parts, VERSION).unwrap();
    parts.trim = true;
    let gap = (psize - 500) - (16 + 10);
    let trimmed = pad8(HEADER as u64 + whole - gap as u64).unwrap();
    assert_eq!(encoded_len(&parts).unwrap(), trimmed);
    let mut b = Vec::new();
    encode_into(&mut b, 1, 0, 0, &parts).unwrap();
    assert_eq!(b.len() as u64, trimmed);
    let (v, _) = parse(&b, 1).unwrap();
    let mut zeroed = page.clone();
    zeroed[26..psize - 500].fill(0);
    let mut buf = Vec::new();
    let got = v.expand(&mut buf, |_, _| unreachable!()).unwrap();
    let want: Vec<(u64, &[u8])> = vec![(3, &zeroed), (4, &ov), (9, &two)];
    assert_eq!(got, want);
}

#[test]
fn version_1_records_are_read() {
    // Version 1: 12-byte run entries, no gaps.
    let (page, meta) = (vec![0x5a; 64], [9u8; 10]);
    let body = 12 + page.len() + 12 + meta.len();
    let mut b = vec![0u8; HEADER];
    b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    b[4..6].copy_from_slice(&1u16.to_le_bytes());
    b[8..16].copy_from_slice(&3u64.to_le_bytes());
    b[16..24].copy_from_slice(&11u64.to_le_bytes());
    b[24..28].copy_from_slice(&32u32.to_le_bytes());
    b[28..32].copy_from_slice(&1u32.to_le_bytes());
    b[32..40].copy_from_slice(&(body as u64).to_le_bytes());
    b.extend_from_slice(&5u64.to_le_bytes());
    b.extend_from_slice(&64u32.to_le_bytes());
    b.extend_from_slice(&page);
    b.extend_from_slice(&40u64.to_le_bytes());
    b.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    b.extend_from_slice(&meta);
    let crc = crc32c::crc32c(&b);
    b[CRC_OFF..CRC_OFF + 4].copy_from_slice(&crc.to_le_bytes());
    b.resize(pad8(b.len() as u64).unwrap() as usize, 0);
    let (v, n) = parse(&b, 3).unwrap();
    assert_eq!(n, b.len());
    let rec = Rec::of(&v);
    assert_eq!(
        (rec.txnid, rec.runs, rec.meta_off),
        (11, vec![(5, page)], 40)
    );
    assert_eq!(rec.meta, meta);
}

#[test]
fn a_gap_outside_its_run_is_rejected() {
    let page = leaf(4096, 3);
    let runs: Vec<(u64, &[u8])> = vec![(2, &page)];
    let parts = RecordParts {
        txnid: 1,
        psize: 4096,
        runs: &runs,
        meta_off: 0,
        meta: &[],
        trim: true,
        patches: &[],
        time_ns: 0,
    };
    let mut good = Vec::new();
    encode_into(&mut good, 0, 0, 0, &parts).unwrap();
    let gap_len = get32(&good, HEADER + 16).unwrap();
    for (off, ok) in [
        (26, true),
        (0, true),
        (4096 - gap_len, true),
        (4097 - gap_len, false),
        (u32::MAX, false),
    ] {
        let mut b = good.clone();
        b[HEADER + 12..HEADER + 16].copy_from_slice(&off.to_le_bytes());
        let end = HEADER + get64(&b, 32).unwrap() as usize;
        b[CRC_OFF..CRC_OFF + 4].fill(0);
        let crc = crc32c::crc32c(&b[..end]);
        b[CRC_OFF..CRC_OFF + 4].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(parse(&b, 0).is_some(), ok, "gap at {off}");
    }
}

proptest! {
    #[test]
    fn random_parts_round_trip(
        seq in any::<u64>(),
        prev in any::<u32>(),
        txnid in any::<u64>(),
        runs in prop::collection::vec((any::<u64>(), 1usize..4, any::<u8>()), 0..5),
        meta_off in any::<u64>(),
        meta in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let rec = Rec {
            txnid,
            psize: 32,
            runs: runs.iter().map(|&(p, n, fill)| (p, vec![fill; n * 32])).collect(),
            meta_off,
            meta,
        };
        let b = encode(&rec, seq, prev);
        prop_assert_eq!(Rec::of(&parse(&b, seq).unwrap().0), rec);
    }

    /// Version 6, 5 and 4 records of the same parts (patches included,
    /// page numbers anywhere) read back alike: a log written before still
    /// rolls forward.
    #[test]
    fn patched_records_read_back_in_versions_4_5_and_6(
        pgnos in prop::collection::vec((any::<u64>(), 2u64..u64::MAX), 0..6),
        meta_off in any::<u64>(),
        meta in prop::collection::vec(any::<u8>(), 0..130),
        time_ns in any::<u64>(),
    ) {
        let ranges = [4u8, 0, 2, 0, 0xaa, 0xbb];
        let patches: Vec<Patch<'_>> = pgnos
            .iter()
            .map(|&(pgno, base)| Patch { pgno, base, ranges: &ranges })
            .collect();
        let parts = RecordParts {
            txnid: 9,
            psize: 64,
            runs: &[],
            patches: &patches,
            meta_off,
            meta: &meta,
            trim: false,
            time_ns,
        };
        let (mut v6, mut v5, mut v4) = (Vec::new(), Vec::new(), Vec::new());
        encode_into(&mut v6, 3, 7, 0, &parts).unwrap();
        encode_as(&mut v5, 3, 7, &parts, V5).unwrap();
        encode_as(&mut v4, 3, 7, &parts, V4).unwrap();
        prop_assert_eq!(v6.len() as u64, encoded_len(&parts).unwrap());
        // Only the version differs (and the CRC over it).
        prop_assert_eq!(&v6[6..CRC_OFF], &v5[6..CRC_OFF]);
        prop_assert_eq!(&v6[HEADER..], &v5[HEADER..]);
        for b in [&v6, &v5, &v4] {
            let (v, n) = parse(b, 3).unwrap();
            prop_assert_eq!(n, b.len());
            prop_assert_eq!(v.patches().collect::<Vec<_>>(), patches.clone());
            let (off, m) = v.meta();
            prop_assert_eq!((off, &*m), (meta_off, &meta[..]));
            prop_assert_eq!(v.commit_time(), Some(time_ns));
        }
    }

    #[test]
    fn garbage_never_panics(b in prop::collection::vec(any::<u8>(), 0..300), seq in 0u64..2) {
        let _ = parse(&b, seq);
    }

    #[test]
    fn garbage_behind_a_good_prefix_never_panics(
        mut b in prop::collection::vec(any::<u8>(), 48..300),
        body in any::<u64>(),
    ) {
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
        b[8..16].copy_from_slice(&0u64.to_le_bytes());
        b[32..40].copy_from_slice(&(body % 512).to_le_bytes());
        let _ = parse(&b, 0);
    }
}
