//! The one error type of a replicated environment.

use crate::types::NodeId;

/// Why a replicated operation failed.
#[derive(Debug)]
pub enum Error {
    /// This node is not the leader: writes (and linearizable reads, when
    /// the leader cannot be asked) go to the node named here, if one is
    /// known (its id and address).
    NotLeader {
        /// The leader this node knows of: id and `host:port`.
        leader: Option<(NodeId, String)>,
    },
    /// The engine refused the write set (every node refused it the same
    /// way, so nothing of it was applied anywhere).
    Refused(String),
    /// The engine failed on this node.
    Engine(mdb::Error),
    /// No quorum answered, the node is shutting down, or the transport
    /// failed: the operation may or may not have taken effect.
    Unavailable(String),
    /// Bad configuration.
    Config(String),
    /// A node's data is not a state of this cluster (seeded from a backup
    /// of another cluster, or ahead of or off the leader's log): it is
    /// not added.
    Incompatible(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotLeader {
                leader: Some((id, addr)),
            } => {
                write!(f, "not the leader: node {id} at {addr} is")
            }
            Error::NotLeader { leader: None } => f.write_str("not the leader: no leader known"),
            Error::Refused(e) => write!(f, "write set refused: {e}"),
            Error::Engine(e) => write!(f, "engine: {e}"),
            Error::Unavailable(e) => write!(f, "unavailable: {e}"),
            Error::Config(e) => write!(f, "configuration: {e}"),
            Error::Incompatible(e) => write!(f, "incompatible data: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Engine(e) => Some(e),
            _ => None,
        }
    }
}

impl From<mdb::Error> for Error {
    fn from(e: mdb::Error) -> Self {
        Error::Engine(e)
    }
}

/// Result of a replicated operation.
pub type Result<T> = std::result::Result<T, Error>;
