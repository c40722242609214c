use super::*;

#[test]
fn refers_out_sees_overflow_and_sub_databases_and_bad_pointers() {
    let rec = [7u8; 48];
    let leaf = |data: NodeData<'_>| {
        let mut b = vec![0u8; 256];
        edit::init(&mut b, 3, P_LEAF);
        assert!(edit::insert_leaf(&mut b, 0, b"a", NodeData::Inline(b"x")));
        assert!(edit::insert_leaf(&mut b, 1, b"b", data));
        b
    };
    let plain = leaf(NodeData::Inline(b"value"));
    assert!(!Page::new(&plain).unwrap().refers_out().unwrap());
    assert!(!Page::new(&leaf(NodeData::SubPage(b"subpage!")))
        .unwrap()
        .refers_out()
        .unwrap());
    for data in [
        NodeData::Overflow(9, 70_000),
        NodeData::SubDb(&rec),
        NodeData::DupDb(&rec),
    ] {
        assert!(Page::new(&leaf(data)).unwrap().refers_out().unwrap());
    }
    let mut b = vec![0u8; 256];
    edit::init(&mut b, 3, P_BRANCH);
    assert!(edit::insert_branch(&mut b, 0, b"", 0x0002_0000_0001));
    assert!(!Page::new(&b).unwrap().refers_out().unwrap());
    // A node pointer into the pointer array, or too near the end.
    for bad in [HDR as u16, 250] {
        let mut b = plain.clone();
        wr16(&mut b, HDR + 2, bad);
        let r = Page::new(&b).unwrap().refers_out();
        assert_eq!(r.err().map(|e| e.kind()), Some(ErrorKind::Corrupted));
    }
}

#[test]
fn encode_leaf_matches_the_node_insert_leaf_writes() {
    let rec = [7u8; 48];
    for data in [
        NodeData::Inline(b"value"),
        NodeData::Inline(b""),
        NodeData::Reserve(5),
        NodeData::Overflow(0x1234_5678_9abc, 70_000),
        NodeData::SubDb(&rec),
        NodeData::SubPage(b"subpage!"),
        NodeData::DupDb(&rec),
    ] {
        let mut b = vec![0u8; 256];
        edit::init(&mut b, 3, P_LEAF);
        assert!(edit::insert_leaf(&mut b, 0, b"key", data));
        let p = Page::new(&b).unwrap();
        assert_eq!(encode_leaf(b"key", data), p.node(0).unwrap().raw());
    }
    let mut b = vec![0u8; 256];
    edit::init(&mut b, 3, P_BRANCH);
    assert!(edit::insert_branch(&mut b, 0, b"sep", 0x0102_0304_0506));
    let p = Page::new(&b).unwrap();
    assert_eq!(
        encode_branch(b"sep", 0x0102_0304_0506),
        p.node(0).unwrap().raw()
    );
}

fn cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.cmp(b)
}

#[test]
fn limits() {
    assert_eq!(node_max(4096), 2038);
    assert_eq!(node_max(8192), 4086);
    assert_eq!(ov_pages(4096, 4080), 1);
    assert_eq!(ov_pages(4096, 4081), 2);
}

#[test]
fn insert_remove_search() {
    let mut b = vec![0u8; 4096];
    edit::init(&mut b, 2, P_LEAF);
    assert!(edit::insert_leaf(
        &mut b,
        0,
        b"banana",
        NodeData::Inline(b"yellow!")
    ));
    assert!(edit::insert_leaf(
        &mut b,
        0,
        b"apple",
        NodeData::Inline(b"red")
    ));
    assert!(edit::insert_leaf(
        &mut b,
        2,
        b"cherry",
        NodeData::Inline(b"dark-red")
    ));
    let p = Page::new(&b).unwrap();
    assert_eq!(p.len(), 3);
    assert_eq!(p.lower(), 22);
    assert_eq!(p.node(1).unwrap().data(), b"yellow!");
    assert_eq!(
        search(&p, b"banana", crate::format::cmp::CmpFn::rust(cmp)).unwrap(),
        (1, true)
    );
    assert_eq!(
        search(&p, b"b", crate::format::cmp::CmpFn::rust(cmp)).unwrap(),
        (1, false)
    );
    assert_eq!(
        search(&p, b"z", crate::format::cmp::CmpFn::rust(cmp)).unwrap(),
        (3, false)
    );
    edit::remove(&mut b, 0);
    let p = Page::new(&b).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!(p.key(0).unwrap(), b"banana");
    assert_eq!(p.node(1).unwrap().data(), b"dark-red");
    assert_eq!(p.upper() as usize, 4096 - 22 - 22);
}

#[test]
fn fills_up() {
    let mut b = vec![0u8; 4096];
    edit::init(&mut b, 2, P_LEAF);
    let v = [7u8; 100];
    let mut n = 0;
    while edit::insert_leaf(&mut b, n, &(n as u32).to_be_bytes(), NodeData::Inline(&v)) {
        n += 1;
    }
    // 4080 / (2 + 112) = 35
    assert_eq!(n, 35);
}

/// Moving a run of nodes to the end of another page keeps them in order;
/// a run that does not fit leaves the target's nodes as they were.
#[test]
fn append_nodes_moves_runs_in_order() {
    let mut src = vec![0u8; 512];
    edit::init(&mut src, 1, P_LEAF);
    let mut model = Vec::new();
    for i in 0..12usize {
        let (k, v) = (
            format!("key{i:02}").into_bytes(),
            vec![b'a' + i as u8; i * 3],
        );
        assert!(edit::insert_leaf(&mut src, i, &k, NodeData::Inline(&v)));
        model.push((k, v));
    }
    let mut dst = vec![0u8; 512];
    edit::init(&mut dst, 2, P_LEAF);
    let s = Page::new(&src).unwrap();
    assert!(edit::append_nodes(&mut dst, &s, 0..5).unwrap());
    assert!(edit::append_nodes(&mut dst, &s, 5..9).unwrap());
    let before = dst.clone();
    let mut small = vec![0u8; 256];
    edit::init(&mut small, 3, P_LEAF);
    assert!(!edit::append_nodes(&mut small, &s, 0..12).unwrap());
    assert_eq!(Page::new(&small).unwrap().len(), 0);
    let d = Page::new(&dst).unwrap();
    assert_eq!(d.len(), 9);
    for (j, (k, v)) in model[..9].iter().enumerate() {
        let n = d.node(j).unwrap();
        assert_eq!((n.key(), n.data()), (&k[..], &v[..]));
    }
    assert_eq!(
        d.used(),
        (0..9)
            .map(|j| s.node(j).unwrap().footprint() + 2)
            .sum::<usize>()
    );
    assert_eq!(before, dst);
}

/// Removing a page's first nodes in place works when they fill the top
/// of its node area (a page in key order) and leaves the rest as they
/// were; a page in another order is left alone, for the caller's rebuild.
#[test]
fn remove_first_in_place_only_from_the_top_of_the_node_area() {
    let node = |i: usize| {
        (
            format!("key{i:02}").into_bytes(),
            vec![b'a' + i as u8; i * 3 + 1],
        )
    };
    // In key order: appended one after another.
    let mut b = vec![0u8; 512];
    edit::init(&mut b, 1, P_LEAF);
    for i in 0..10 {
        let (k, v) = node(i);
        assert!(edit::insert_leaf(&mut b, i, &k, NodeData::Inline(&v)));
    }
    let used = Page::new(&b).unwrap().used();
    let gone: usize = (0..4)
        .map(|j| Page::new(&b).unwrap().node(j).unwrap().footprint() + 2)
        .sum();
    assert!(!edit::remove_first(&mut b, 11));
    assert!(edit::remove_first(&mut b, 4));
    let p = Page::new(&b).unwrap();
    assert_eq!((p.len(), p.used()), (6, used - gone));
    assert_eq!(p.upper() as usize, 512 - (used - gone - 2 * 6));
    for j in 0..6 {
        let (k, v) = node(j + 4);
        let n = p.node(j).unwrap();
        assert_eq!((n.key(), n.data()), (&k[..], &v[..]));
    }
    // Inserted back to front: the first nodes are the lowest.
    let mut b = vec![0u8; 512];
    edit::init(&mut b, 1, P_LEAF);
    for i in (0..10).rev() {
        let (k, v) = node(i);
        assert!(edit::insert_leaf(&mut b, 0, &k, NodeData::Inline(&v)));
    }
    let before = b.clone();
    assert!(!edit::remove_first(&mut b, 3));
    assert_eq!(b, before);
}

/// Random inserts and removes on a leaf page against a sorted model,
/// then every single-byte corruption of the result: views fail with
/// `Corrupted`, never panic (small enough for Miri).
#[test]
fn edits_match_a_model_and_corruption_never_panics() {
    let mut next = crate::format::xorshift(0x2545_f491_4f6c_dd1d);
    let mut b = vec![0u8; 512];
    edit::init(&mut b, 3, P_LEAF);
    let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for _ in 0..200 {
        // Short keys, keys sharing their first eight bytes, and keys
        // of eight and more that differ there (the lexical search
        // compares first words).
        let key = match next() % 3 {
            0 => format!("k{:03}", next() % 60),
            1 => format!("shared__{:0w$}", next() % 30, w = (next() % 3) as usize),
            _ => format!("{:010}", (next() % 30) * 7_919_113),
        }
        .into_bytes();
        let val = vec![b'v'; (next() % 24) as usize];
        let p = Page::new(&b).unwrap();
        let (i, exact) = search(&p, &key, crate::format::cmp::CmpFn::rust(cmp)).unwrap();
        assert_eq!(exact, model.binary_search_by(|(k, _)| k.cmp(&key)).is_ok());
        // The default order's own search agrees.
        let lexical = crate::format::cmp::Order::Lexical.cmp_fn();
        assert_eq!(search(&p, &key, lexical).unwrap(), (i, exact));
        if exact {
            edit::remove(&mut b, i);
            model.remove(i);
        } else if edit::insert_leaf(&mut b, i, &key, NodeData::Inline(&val)) {
            model.insert(i, (key, val));
        }
        let p = Page::new(&b).unwrap();
        assert_eq!(p.len(), model.len());
        for (j, (k, v)) in model.iter().enumerate() {
            let n = p.node(j).unwrap();
            assert_eq!((n.key(), n.data()), (&k[..], &v[..]));
            assert_eq!(plain_item(&b, j), Some((&k[..], &v[..])));
            assert_eq!(Leaf::of(p).unwrap().item(j), Some((&k[..], &v[..])));
        }
        assert_eq!(plain_item(&b, model.len()), None);
        assert_eq!(Leaf::of(p).unwrap().item(model.len()), None);
        assert_eq!(Leaf::of(p).unwrap().len(), model.len());
    }
    for at in 0..HDR + 2 * model.len().max(1) + 16 {
        let mut c = b.clone();
        c[at] ^= 0xa5;
        if let Ok(p) = Page::new(&c) {
            for j in 0..p.len().min(64) {
                if let Ok(n) = p.node(j) {
                    let _ = (n.key(), n.data(), n.flags());
                }
                let _ = p.node_key(j);
            }
            let _ = search(&p, b"k030", crate::format::cmp::CmpFn::rust(cmp));
            let _ = search(&p, b"k030", crate::format::cmp::Order::Lexical.cmp_fn());
            let _ = search(
                &p,
                b"shared__12",
                crate::format::cmp::Order::Lexical.cmp_fn(),
            );
        }
        for j in 0..model.len() + 2 {
            let item = plain_item(&c, j);
            // What the scan step reads is what the checked node view
            // reads, whenever the header passes `Page::new`.
            if let (Some((k, v)), Ok(p)) = (item, Page::new(&c)) {
                let n = p.node(j).unwrap();
                assert_eq!((n.key(), n.data()), (k, v));
            }
        }
    }
}

/// `insert_leaf2` against a sorted `Vec` model, for the sizes it stores
/// without a `memcpy` (4, 8) and others, appending and inserting within:
/// the packed keys, the count and LMDB's lower/upper accounting, and a
/// full page refusing a key with nothing changed.
#[test]
fn insert_leaf2_matches_a_model() {
    for size in [1usize, 4, 6, 8, 12] {
        let mut b = vec![0u8; 512];
        edit::init_leaf2(&mut b, 3, P_LEAF2 | P_LEAF, size);
        let up0 = u16::from_le_bytes([b[14], b[15]]) as usize;
        let mut model: Vec<Vec<u8>> = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in 0.. {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key: Vec<u8> = (0..size).map(|j| (x >> (8 * (j % 8))) as u8).collect();
            // Every third key appended (past all), the others where they sort.
            let i = if n % 3 == 0 {
                model.len()
            } else {
                model.partition_point(|k| k < &key)
            };
            let before = b.clone();
            if !edit::insert_leaf2(&mut b, i, &key) {
                assert_eq!(b, before, "size {size}: a refused key changed the page");
                assert!(HDR + (model.len() + 1) * size > b.len());
                break;
            }
            model.insert(i, key);
            let p = Page::new(&b).unwrap();
            assert_eq!(p.len(), model.len(), "size {size}");
            for (j, k) in model.iter().enumerate() {
                assert_eq!(p.key(j).unwrap(), &k[..], "size {size}, key {j}");
            }
            assert_eq!(p.lower() as usize, HDR + 2 * model.len());
            let up = up0 as i64 - model.len() as i64 * (size as i64 - 2);
            assert_eq!(p.upper() as i64, up, "size {size}");
        }
        assert!(model.len() > 10, "size {size}: {} keys", model.len());
    }
}
