//! Sorting page numbers. A commit sorts its dirty pages (to write them in
//! file order) and the pages it freed (a free record holds them in
//! descending order): about a thousand numbers per thousand puts. They are
//! small integers below the file's last page, so a byte-wise radix sort
//! needs two or three passes where a comparison sort needs ten compares
//! per number (a third of the instructions, measured with `mdb-bench
//! instr`).

/// Below this a comparison sort is cheaper than clearing the counters.
const SMALL: usize = 64;

/// Sort `v` ascending (`desc` false) or descending.
pub(crate) fn sort_pgnos(v: &mut [u64], desc: bool) {
    sort_by_pgno(v, |&x| x, desc);
}

/// Sort `v` by the page number `pgno` gives of each item (not stable).
pub(crate) fn sort_by_pgno<T: Copy>(v: &mut [T], pgno: impl Fn(&T) -> u64, desc: bool) {
    if v.len() < SMALL {
        if desc {
            v.sort_unstable_by_key(|x| std::cmp::Reverse(pgno(x)));
        } else {
            v.sort_unstable_by_key(|x| pgno(x));
        }
        return;
    }
    let max = v.iter().fold(0, |m, x| m | pgno(x));
    let bytes = (u64::BITS - max.leading_zeros()).div_ceil(8) as usize;
    let mut tmp = vec![v[0]; v.len()];
    let (mut src, mut dst) = (&mut *v, &mut tmp[..]);
    let mut in_tmp = false;
    for b in 0..bytes {
        let shift = 8 * b;
        let mut count = [0usize; 256];
        for x in src.iter() {
            count[(pgno(x) >> shift) as usize & 0xff] += 1;
        }
        if count.contains(&src.len()) {
            // Every number has this byte in common: nothing to reorder.
            continue;
        }
        // Where each digit's run starts, in the order asked for.
        let mut at = 0;
        let mut fill = |d: usize| {
            let c = count[d];
            count[d] = at;
            at += c;
        };
        if desc {
            (0..256).rev().for_each(&mut fill);
        } else {
            (0..256).for_each(&mut fill);
        }
        for &x in src.iter() {
            let d = (pgno(&x) >> shift) as usize & 0xff;
            dst[count[d]] = x;
            count[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
        in_tmp = !in_tmp;
    }
    if in_tmp {
        // The last pass wrote into `tmp`, which `src` now names.
        dst.copy_from_slice(src);
    }
}

/// Merge `add` into `v`, both descending: what sorting them together
/// gives, in one pass. Allocation consumes free records one by one into
/// a list that may hold thousands of pages; sorting it anew each time cost
/// more than the puts that asked for the pages.
pub(crate) fn merge_desc(v: &mut Vec<u64>, add: &[u64]) {
    debug_assert!(v.is_sorted_by(|a, b| a >= b) && add.is_sorted_by(|a, b| a >= b));
    let (mut i, mut j) = (v.len(), add.len());
    v.resize(i + j, 0);
    // From the back (the lowest numbers): the slot written is always at or
    // past the next unread one of `v`.
    while j > 0 {
        let k = i + j - 1;
        if i > 0 && v[i - 1] < add[j - 1] {
            v[k] = v[i - 1];
            i -= 1;
        } else {
            v[k] = add[j - 1];
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{merge_desc, sort_pgnos};

    /// Pseudo-random numbers from `x` (not zero).
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn merging_gives_what_sorting_gives() {
        let mut rng = xorshift(0x2545_f491_4f6c_dd1d);
        let mut next = move |m: u64| rng() % m;
        let rounds = if cfg!(miri) { 3 } else { 300 };
        for _ in 0..rounds {
            let (na, nb, range) = (next(40), next(40), 1 + next(100));
            let mut a: Vec<u64> = (0..na).map(|_| next(range)).collect();
            let mut b: Vec<u64> = (0..nb).map(|_| next(range)).collect();
            sort_pgnos(&mut a, true);
            sort_pgnos(&mut b, true);
            let mut want = [&a[..], &b[..]].concat();
            sort_pgnos(&mut want, true);
            merge_desc(&mut a, &b);
            assert_eq!(a, want);
        }
    }

    fn check(mut v: Vec<u64>, desc: bool) {
        let mut want = v.clone();
        want.sort_unstable();
        if desc {
            want.reverse();
        }
        sort_pgnos(&mut v, desc);
        assert_eq!(v, want);
    }

    #[test]
    fn sorts_like_the_standard_sort() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for &(n, bits) in &[
            (0, 8),
            (1, 8),
            (63, 16),
            (64, 16),
            (1000, 13),
            (5000, 24),
            (300, 64),
        ] {
            let v: Vec<u64> = (0..n).map(|_| next() >> (64 - bits)).collect();
            check(v.clone(), false);
            check(v, true);
        }
        // Shared low bytes, repeated values, already sorted either way.
        check((0..500).map(|i| i << 16).collect(), true);
        check((0..500).map(|i| i % 7).collect(), false);
        check((0..500).collect(), true);
        check((0..500).rev().collect(), false);
    }
}
