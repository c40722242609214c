//! The lock file (`lock.mdb`): reader table, writer mutex and the fcntl
//! byte-range protocol of LMDB 0.9 (lock format `0x00010001`).
//!
//! Layout on x86-64 glibc (offsets follow from the size of
//! `pthread_mutex_t`, exactly as LMDB's C structs do):
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `0xBEEFC0DE` |
//! | 4 | 4 | format `0x00010001` |
//! | 8 | 40 | reader-table mutex (process-shared, robust) |
//! | 48 | 8 | last committed txnid |
//! | 56 | 4 | numreaders (high-water mark) |
//! | 64 | 40 | writer mutex, padded to 128 |
//! | 128 + 64*i | 64 | reader slot i: txnid @0, pid @8, tid @16 |
//!
//! Protocol: byte 0 is locked exclusively by the process that initialises
//! the file and shared by every process that has it open; each process that
//! reads locks the byte at offset = its pid, which is how the stale-reader
//! check tells live processes from dead ones. These are POSIX record locks
//! (per process): closing *any* descriptor of the lock file drops them, so
//! the file is opened exactly once per process: every `Env` on it shares one
//! [`LockFile`] through the [`Registry`], keyed by device and inode.
//!
//! Without a lock file (NO_LOCK) the same table lives in private memory
//! ([`LockFile::in_memory`]), so the readers of this process still hold back
//! the pages they can see.
//!
//! `layout.rs` the header and slot offsets and the shared mapping;
//! `file.rs` opening and initialising the file (the byte-0 protocol);
//! `registry.rs` the one table per environment in this process;
//! `readers.rs` reader slots, the oldest reader, the stale-reader check;
//! `writer.rs` the writer mutex.

mod file;
mod layout;
mod readers;
mod registry;
#[cfg(test)]
mod tests;
mod writer;

pub(crate) use file::LockFile;
pub use layout::MAX_READERS;
pub use readers::ReaderInfo;
pub(crate) use readers::ThreadSlots;
pub(crate) use registry::registry;
