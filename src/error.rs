//! The crate's one error: every module's typed error as a source, the stages' own failures,
//! and whether it is the user's to fix ([`Error::is_user_error`]). A low module: it imports
//! module errors and pure data ([`crate::model`]), never a stage.

use crate::model::access::Denied;
use crate::{cluster, loader, params, render, resolve, source};

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
    Cluster(#[from] cluster::Error),
    /// A local file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// No plan satisfies the dependency constraints and system requirements.
    #[error(transparent)]
    Resolve(#[from] resolve::ResolveError),
    /// The caller may not do what the command needs on the control plane (checked before any
    /// write).
    #[error(transparent)]
    Denied(#[from] Denied),
    /// Another command holds the addon's (or registry's) lock.
    #[error(transparent)]
    Busy(#[from] Busy),
    /// The request cannot be carried out as asked (conflicts, missing addon, dependents…).
    #[error("{0}")]
    Refused(String),
    /// Workloads did not become ready in time.
    #[error("{0}")]
    NotReady(String),
    /// A request failed (the message names the cluster and what failed).
    #[error("{0}")]
    Failed(String),
    /// Some clusters failed; the others were applied. Running the command again converges.
    #[error("addon `{addon}`: {} of {} clusters failed:\n  {}\n{}", failed.len(), total, failed.join("\n  "), clusters_note(addon, failed.len(), *total))]
    Clusters {
        /// The addon.
        addon: String,
        /// `cluster: reason`, one per failed cluster.
        failed: Vec<String>,
        /// How many clusters were targeted.
        total: usize,
    },
    /// Deleting failed midway: what was done, and the command that finishes it (the record
    /// still lists everything left).
    #[error("{source}\n{}", unfinished_note(.done, .next))]
    Unfinished {
        /// The failure.
        #[source]
        source: Box<Error>,
        /// What was deleted before it.
        done: Vec<String>,
        /// The command to run next.
        next: String,
    },
    /// Applying failed midway; `applied` lists what had been applied.
    #[error("{source}\n{}", applied_note(.applied))]
    Partial {
        /// The failure.
        #[source]
        source: Box<Error>,
        /// What was applied before it, as `Kind ns/name`.
        applied: Vec<String>,
    },
}

impl Error {
    /// Whether the error is caused by input the user controls (an addon, an argument, a file they
    /// named, a request that cannot be carried out as asked) rather than by the environment or a
    /// bug. The CLI exits 2 for these, 1 otherwise.
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::Source(e) => e.is_user_error(),
            Error::Load(loader::Error::Source { source, .. }) => source.is_user_error(),
            Error::Load(_)
            | Error::Params(_)
            | Error::Render(_)
            | Error::User(_)
            | Error::Refused(_)
            | Error::Resolve(_)
            | Error::Denied(_) => true,
            Error::Cluster(e) => e.is_user_error(),
            Error::Partial { source, .. } | Error::Unfinished { source, .. } => {
                source.is_user_error()
            }
            // Refused by every failed cluster: the credentials' fault, as when refused up front.
            Error::Clusters { failed, .. } => failed.iter().all(|f| cluster::is_forbidden_text(f)),
            Error::Io(_) | Error::NotReady(_) | Error::Busy(_) | Error::Failed(_) => false,
        }
    }
}

fn applied_note(applied: &[String]) -> String {
    if applied.is_empty() {
        "nothing was applied".to_owned()
    } else {
        format!(
            "applied before the failure ({}): {}; the addon's record lists everything that may have been applied: run the same command again to finish, or `addonctl disable` the addon to undo",
            applied.len(),
            applied.join(", ")
        )
    }
}

fn clusters_note(addon: &str, failed: usize, total: usize) -> String {
    let done = if failed >= total {
        "no cluster has it".to_owned()
    } else {
        match total - failed {
            1 => "the other cluster was applied".to_owned(),
            n => format!("the other {n} clusters were applied"),
        }
    };
    format!(
        "{done}; the record lists what each cluster may hold: run the same command again to finish (an enable can also be undone with `addonctl disable {addon}`)"
    )
}

fn unfinished_note(done: &[String], next: &str) -> String {
    let done = if done.is_empty() {
        "nothing was deleted".to_owned()
    } else {
        format!(
            "deleted before the failure ({}): {}",
            done.len(),
            done.join(", ")
        )
    };
    format!("{done}; the record keeps what is left: run `{next}` again to finish")
}

/// Someone else holds the lock.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`{subject}` is being changed by {holder} since {since}; retry when it is done, or pass `--force-unlock` if that command is gone (its Lease `{lease}` expires {expires})")]
pub struct Busy {
    /// What is locked (an addon or a registry).
    pub subject: String,
    /// The Lease's name.
    pub lease: String,
    /// Who holds it.
    pub holder: String,
    /// Since when (RFC 3339).
    pub since: String,
    /// When it expires without renewal (RFC 3339).
    pub expires: String,
}

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
