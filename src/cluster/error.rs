//! What can go wrong talking to an API server, and kube's errors mapped to it.

use super::Cluster;
use crate::model::ErrorKind;

/// A request to the API server failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The credentials may not do this.
    #[error("cluster `{cluster}` refused: {message}")]
    Forbidden {
        /// The cluster's name.
        cluster: String,
        /// The server's message (names the user, the verb and the resource).
        message: String,
    },
    /// The object (or kind) does not exist.
    #[error("cluster `{cluster}`: {message}")]
    NotFound {
        /// The cluster's name.
        cluster: String,
        /// What is missing.
        message: String,
    },
    /// A write conflicted with another writer.
    #[error("cluster `{cluster}`: conflict: {message}")]
    Conflict {
        /// The cluster's name.
        cluster: String,
        /// The server's message.
        message: String,
    },
    /// The server rejected an object as invalid.
    #[error("cluster `{cluster}` rejected {object}: {message}")]
    Invalid {
        /// The cluster's name.
        cluster: String,
        /// The object, as `Kind namespace/name`.
        object: String,
        /// The server's message.
        message: String,
    },
    /// The server cannot be reached.
    #[error("cannot reach cluster `{cluster}` at {server}: {message}")]
    Unreachable {
        /// The cluster's name.
        cluster: String,
        /// Its address.
        server: String,
        /// Why.
        message: String,
    },
    /// The kubeconfig cannot be used.
    #[error("kubeconfig: {0}")]
    Config(String),
    /// Any other failure of the API server.
    #[error("cluster `{cluster}`: {message}")]
    Api {
        /// The cluster's name.
        cluster: String,
        /// What failed.
        message: String,
    },
}

impl Error {
    /// What kind of failure it is: a refusal of the credentials is [`ErrorKind::Denied`], a
    /// missing object [`ErrorKind::NotFound`], a write another writer won (409)
    /// [`ErrorKind::Conflict`], an object the server rejects or a kubeconfig that cannot be used
    /// [`ErrorKind::Invalid`], a server that cannot be reached or failed otherwise
    /// [`ErrorKind::Unavailable`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Forbidden { .. } => ErrorKind::Denied,
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Conflict { .. } => ErrorKind::Conflict,
            Error::Invalid { .. } | Error::Config(_) => ErrorKind::Invalid,
            Error::Unreachable { .. } | Error::Api { .. } => ErrorKind::Unavailable,
        }
    }
}

/// Whether a failure already turned into text (a cluster's outcome) was an
/// [`Error::Forbidden`]: its message has the form `cluster `x` refused: …`.
pub fn is_forbidden_text(text: &str) -> bool {
    text.contains("` refused: ")
}

/// `Result` with the cluster [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Cluster {
    pub(super) fn map_error(&self, error: kube::Error, object: &str) -> Error {
        let cluster = self.name.clone();
        match error {
            kube::Error::Api(response) => match response.code {
                401 => Error::Forbidden {
                    cluster,
                    message: format!(
                        "the credentials were not accepted (401 Unauthorized): {}",
                        response.message
                    ),
                },
                403 => Error::Forbidden {
                    cluster,
                    message: response.message,
                },
                404 => Error::NotFound {
                    cluster,
                    message: format!("{object} not found: {}", response.message),
                },
                409 => Error::Conflict {
                    cluster,
                    message: response.message,
                },
                400 | 422 => Error::Invalid {
                    cluster,
                    object: object.to_owned(),
                    message: response.message,
                },
                code => Error::Api {
                    cluster,
                    message: format!(
                        "{object}: {} ({code} {})",
                        response.message, response.reason
                    ),
                },
            },
            kube::Error::HyperError(e) => Error::Unreachable {
                cluster,
                server: self.server.clone(),
                message: crate::chain::chain(&e),
            },
            kube::Error::Service(e) => Error::Unreachable {
                cluster,
                server: self.server.clone(),
                message: crate::chain::chain(e.as_ref()),
            },
            kube::Error::Auth(e) => Error::Forbidden {
                cluster,
                message: format!("cannot authenticate: {e}"),
            },
            other => Error::Api {
                cluster,
                message: format!("{object}: {}", crate::chain::chain(&other)),
            },
        }
    }
}
