//! The crate-level error: every module's error, and whether it is the user's to fix.

use crate::{loader, params, render, source};

/// Any error the library returns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading from a registry failed.
    #[error(transparent)]
    Source(#[from] source::Error),
    /// An addon's files could not be loaded into a package.
    #[error(transparent)]
    Load(#[from] loader::Error),
    /// Parameters were declared or given wrongly.
    #[error(transparent)]
    Params(#[from] params::Error),
    /// Rendering an addon failed.
    #[error(transparent)]
    Render(#[from] render::Error),
    /// A user-facing problem described by a message (for example a bad command-line argument).
    #[error("{0}")]
    User(String),
    /// Talking to a cluster failed.
    #[error(transparent)]
    Cluster(#[from] crate::cluster::Error),
    /// A local file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Error {
    /// Whether the error is caused by input the user controls (an addon, an argument, a file they
    /// named) rather than by the environment or a bug. The CLI exits 2 for these, 1 otherwise.
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::Source(e) => e.is_user_error(),
            Error::Load(loader::Error::Source { source, .. }) => source.is_user_error(),
            Error::Load(_) | Error::Params(_) | Error::Render(_) | Error::User(_) => true,
            Error::Cluster(e) => e.is_user_error(),
            Error::Io(_) => false,
        }
    }
}

/// Kept here for callers of the old path; the function lives in the leaf [`crate::chain`].
pub(crate) use crate::chain::chain;

impl From<source::catalog::Error> for Error {
    fn from(error: source::catalog::Error) -> Self {
        match error {
            source::catalog::Error::NoAddon(message) => Error::User(message),
            source::catalog::Error::Source(e) => Error::Source(e),
        }
    }
}

impl From<crate::model::registry::InvalidRegistry> for Error {
    fn from(error: crate::model::registry::InvalidRegistry) -> Self {
        Error::User(error.0)
    }
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
