//! The pool of one kind of handle struct.

/// Structs handed out as raw pointers and freed together at `mdb_env_close`,
/// so that a pointer kept past its object's end still points at a (dead) struct.
pub(crate) struct Slab<T> {
    pub(crate) all: Vec<*mut T>,
    pub(crate) free: Vec<*mut T>,
}

impl<T> Slab<T> {
    pub(crate) const fn new() -> Self {
        Slab {
            all: Vec::new(),
            free: Vec::new(),
        }
    }
    /// Store `v` in a free struct, or in a new one.
    pub(crate) fn take(&mut self, v: T) -> *mut T {
        match self.free.pop() {
            Some(p) => {
                // SAFETY: p came from Box::into_raw below and is not in use (it is on the free list).
                unsafe { *p = v };
                p
            }
            None => {
                let p = Box::into_raw(Box::new(v));
                self.all.push(p);
                p
            }
        }
    }
    pub(crate) fn give_back(&mut self, p: *mut T) {
        self.free.push(p);
    }
}
