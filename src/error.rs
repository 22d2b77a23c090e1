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

/// An error and its causes on one line (`a: b: c`), skipping a cause whose text the line already
/// holds (libraries often repeat their source in their own message).
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = cause.source();
    }
    text
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
