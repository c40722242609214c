//! C comparators (`MDB_cmp_func`) as engine comparators.

use crate::types::MDB_cmp_func;
use mdb::cmp::{CCmp, CmpFn};

/// The engine comparator calling `f`.
pub fn c_comparator(f: MDB_cmp_func) -> CmpFn {
    // SAFETY: MDB_val and mdb::cmp::CVal have the same C layout (size_t,
    // pointer), so the two function pointer types share one ABI. The caller
    // of mdb_set_compare promises a comparator that accepts any two values;
    // like LMDB we cannot stop a C callback from longjmp-ing out.
    unsafe { CmpFn::c(std::mem::transmute::<MDB_cmp_func, CCmp>(f)) }
}
