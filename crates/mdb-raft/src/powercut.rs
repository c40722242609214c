//! Power cuts of a node, for tests (feature `powercut`, which the tests
//! turn on): a node started with `MDB_RAFT_POWERCUT=1` in its environment
//! records, for its data and Raft environments, the bytes each write
//! overwrites until the file is synced (`mdb::powercut`), and at its next
//! start undoes the unsynced ones before it opens them. So kill -9 then a
//! restart is a power cut: the node comes back with only what it had
//! synced. Without the feature the variable is ignored. With
//! `MDB_RAFT_POWERCUT_KEEP` set too, the files as the kill left them are
//! copied to `<dir>.before-cut/` (with the journal) before the undo, for a
//! post-mortem.

use std::path::Path;

/// The variable that turns the recording on.
#[cfg(feature = "powercut")]
pub const VAR: &str = "MDB_RAFT_POWERCUT";

/// If power cuts are simulated: undo what the last run of this process
/// had not synced in the environment at `dir` (`at_start` only: a data
/// environment replaced by a snapshot starts a new journal), and record
/// from now on into `<dir>.powercut`.
#[cfg(feature = "powercut")]
pub fn prepare(dir: &Path, at_start: bool, opts: &mut mdb::EnvOptions) -> mdb::Result<()> {
    if std::env::var_os(VAR).is_none_or(|v| v != "1") {
        return Ok(());
    }
    let journal = dir.with_extension("powercut");
    if at_start {
        if std::env::var_os("MDB_RAFT_POWERCUT_KEEP").is_some() && journal.exists() {
            // For a post-mortem: the files as the kill left them.
            let keep = dir.with_extension("before-cut");
            let _ = std::fs::remove_dir_all(&keep);
            std::process::Command::new("cp")
                .arg("-a")
                .arg(dir)
                .arg(&keep)
                .status()?;
            std::fs::copy(&journal, keep.join("powercut.journal"))?;
        }
        let n = mdb::powercut::revert(dir, &journal)?;
        eprintln!(
            "mdb-raft: power cut: {n} unsynced writes undone in {}",
            dir.display()
        );
    }
    opts.fault_injector(mdb::powercut::PowerCut::record(dir, &journal)?);
    Ok(())
}

/// Without the feature: nothing.
#[cfg(not(feature = "powercut"))]
pub fn prepare(_dir: &Path, _at_start: bool, _opts: &mut mdb::EnvOptions) -> mdb::Result<()> {
    Ok(())
}
