//! The one vocabulary of failures: every error of the library says which [`ErrorKind`] it is,
//! and each front end maps the kind once (the CLI to its exit code, an HTTP server to its
//! status). It sits with the pure data so that the lowest modules (sources, clusters) can name
//! their kinds without importing the crate's error.

use serde::Serialize;

/// What kind of failure an error is: whose it is to fix, and whether trying again may help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// What was given or asked for cannot be used as it stands: a bad argument, flag, file,
    /// addon or stored value, or a request refused for what it would do until the flag the
    /// message names is given. The caller changes the request.
    Invalid,
    /// Something named does not exist: an addon (or its version), a registry, a cluster, an
    /// addon's record or one of its revisions.
    NotFound,
    /// A permission was refused: by the API server (401, 403), by a registry's credentials, or
    /// by addonctl's own checks (the rights a command needs, what an addon or an `Addon`'s
    /// author may do).
    Denied,
    /// What is there conflicts with the request: another command holds the lock or wrote first
    /// (a busy or contended lock, a write that kept changing, HTTP 409), or what would be
    /// changed belongs to someone else (objects addonctl did not create, a definition another
    /// addon owns, an endpoint joined under another name, addons that still use it).
    Conflict,
    /// A server or registry cannot serve now: unreachable, timed out, 5xx, rate limiting, or
    /// what it was asked to do did not finish in time. Trying again later may succeed.
    Unavailable,
    /// Anything else: a local file that cannot be read or written, a damaged record, a bug.
    Internal,
}

impl ErrorKind {
    /// Whether the user can fix it by changing the request, their rights or what they named
    /// (`Invalid`, `NotFound`, `Denied`, `Conflict`), rather than the environment or addonctl
    /// failing (`Unavailable`, `Internal`).
    pub fn is_user(self) -> bool {
        match self {
            ErrorKind::Invalid | ErrorKind::NotFound | ErrorKind::Denied | ErrorKind::Conflict => {
                true
            }
            ErrorKind::Unavailable | ErrorKind::Internal => false,
        }
    }

    /// The HTTP status an API answers with for this kind.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::Invalid => 400,
            ErrorKind::Denied => 403,
            ErrorKind::NotFound => 404,
            ErrorKind::Conflict => 409,
            ErrorKind::Internal => 500,
            ErrorKind::Unavailable => 503,
        }
    }

    /// Its name, as JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "invalid",
            ErrorKind::NotFound => "notfound",
            ErrorKind::Denied => "denied",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [ErrorKind; 6] = [
        ErrorKind::Invalid,
        ErrorKind::NotFound,
        ErrorKind::Denied,
        ErrorKind::Conflict,
        ErrorKind::Unavailable,
        ErrorKind::Internal,
    ];

    #[test]
    fn each_kind_has_its_http_status() {
        let statuses: Vec<u16> = ALL.iter().map(|k| k.http_status()).collect();
        assert_eq!(statuses, [400, 404, 403, 409, 503, 500]);
    }

    #[test]
    fn the_users_kinds_are_the_four_a_request_can_fix() {
        let user: Vec<ErrorKind> = ALL.into_iter().filter(|k| k.is_user()).collect();
        assert_eq!(
            user,
            [
                ErrorKind::Invalid,
                ErrorKind::NotFound,
                ErrorKind::Denied,
                ErrorKind::Conflict
            ]
        );
    }

    #[test]
    fn a_kind_serializes_lowercase_as_it_displays() {
        for kind in ALL {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::String(kind.to_string())
            );
        }
        assert_eq!(ErrorKind::NotFound.to_string(), "notfound");
    }
}
