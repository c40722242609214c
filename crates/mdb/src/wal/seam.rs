//! The log's writes and syncs, each announced to the [`FaultInjector`]
//! first, so tests can fail or tear them as they do the data file's.

use crate::error::Result;
use crate::io::{FaultInjector, IoAction, IoOp};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// The fault injector of a log directory, if any.
#[derive(Clone, Default)]
pub(crate) struct Seam(pub(crate) Option<Arc<dyn FaultInjector>>);

impl Seam {
    /// What the injector wants done with `op`.
    pub(crate) fn ask(&self, op: IoOp) -> IoAction {
        match &self.0 {
            Some(f) => f.on_io(op),
            None => IoAction::Proceed,
        }
    }

    /// Ask about a step that cannot be torn: a tear fails it as EIO.
    pub(crate) fn check(&self, op: IoOp) -> Result<()> {
        self.ask(op).untorn()
    }

    /// Write `bytes` at `offset` as `op` decides (a tear writes a prefix
    /// and fails with EIO).
    pub(crate) fn write_at(&self, op: IoOp, file: &File, bytes: &[u8], offset: u64) -> Result<()> {
        self.ask(op)
            .write(bytes.len(), |n| Ok(file.write_all_at(&bytes[..n], offset)?))
    }

    /// fdatasync `file` unless `op` is failed.
    pub(crate) fn sync(&self, op: IoOp, file: &File) -> Result<()> {
        self.check(op)?;
        Ok(file.sync_data()?)
    }
}

/// The log's directory syncs are the engine's one `sync_dir`.
pub(crate) use crate::io::sync_dir;
