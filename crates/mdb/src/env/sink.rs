//! Which commit sink an environment commits through: the write-ahead log
//! in WAL mode, else LMDB's own commit (to the file, or under WRITEMAP
//! through the writable map). A [`Sink`] is made per use from the
//! environment's parts, on the stack: no allocation, and a `match` where
//! a boxed sink took a call through a vtable.

use super::{Env, EnvFlags};
use crate::error::Result;
use crate::format::meta::Meta;
use crate::sink::{Commit, CommitFailure, CommitSink, LmdbSink, Pending};
use crate::wal::checkpointer::WalEnv;

/// The environment's commit sink (see [`CommitSink`]). A sink of another
/// kind (a replicated log, say) is one more variant.
pub(crate) enum Sink<'a> {
    Lmdb(LmdbSink<'a>),
    /// The log; `true` under WRITEMAP with MAPASYNC, which relaxes
    /// durability as NO_SYNC does (its commits write their pages with
    /// `pwrite` under WRITEMAP too: `wal/sink.rs`).
    Wal(&'a WalEnv, bool),
}

impl Env {
    /// Where commits go and who holds the writer lock.
    #[inline]
    pub(crate) fn sink(&self) -> Sink<'_> {
        let f = self.flags();
        let map = f
            .contains(EnvFlags::WRITE_MAP)
            .then(|| (self.map(), f.contains(EnvFlags::MAP_ASYNC)));
        match &self.wal {
            Some(w) => Sink::Wal(w, map.is_some_and(|m| m.1)),
            None => Sink::Lmdb(LmdbSink {
                lock: &self.lock,
                file: &self.file,
                psize: self.psize,
                map,
            }),
        }
    }
}

/// Each method goes to the variant's own.
macro_rules! each {
    ($s:expr, $x:ident => $e:expr) => {
        match $s {
            Sink::Lmdb($x) => $e,
            Sink::Wal($x, _) => $e,
        }
    };
}

impl CommitSink for Sink<'_> {
    #[inline]
    fn lock(&self) -> Result<Option<Meta>> {
        each!(self, s => s.lock())
    }
    #[inline]
    fn unlock(&self) {
        each!(self, s => s.unlock())
    }
    #[inline]
    fn chain(&self, base: &Meta, txnid: u64) -> Result<()> {
        each!(self, s => s.chain(base, txnid))
    }
    #[inline]
    fn oldest_bound(&self) -> Option<u64> {
        each!(self, s => s.oldest_bound())
    }
    #[inline]
    fn young(&self) -> Option<std::sync::Arc<crate::young::Young>> {
        each!(self, s => s.young())
    }
    #[inline]
    fn commit(&self, c: &Commit<'_>) -> std::result::Result<Option<Pending>, CommitFailure> {
        match self {
            Sink::Lmdb(s) => s.commit(c),
            Sink::Wal(w, map_async) => w.commit_via(c, *map_async),
        }
    }
    #[inline]
    fn wait(&self, p: Pending) -> Result<()> {
        each!(self, s => s.wait(p))
    }
    #[inline]
    fn flush(&self) -> Result<()> {
        each!(self, s => s.flush())
    }
    #[inline]
    fn visible(&self, published: u64) -> Option<Meta> {
        each!(self, s => s.visible(published))
    }
    #[inline]
    fn sync(&self, force: bool, no_sync: bool) -> Result<()> {
        each!(self, s => s.sync(force, no_sync))
    }
    #[inline]
    fn settle(&self) -> Result<()> {
        each!(self, s => s.settle())
    }
}
