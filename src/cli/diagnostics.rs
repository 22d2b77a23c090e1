//! Error reporting: the full chain on stderr, and the exit code. Every error has an
//! [`ErrorKind`]; this is the one place that maps a kind to an exit code: 2 for the user's
//! (`invalid`, `notfound`, `denied`, `conflict`), 1 otherwise (`unavailable`, `internal`).

use std::io::Write;
use std::process::ExitCode;

use addonctl::ErrorKind;

/// Prints an error with its causes and returns the exit code for it.
pub fn report(error: &anyhow::Error) -> ExitCode {
    // The reader of our output went away (`addonctl list | head`): not an error.
    if error.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    }) {
        return ExitCode::SUCCESS;
    }
    let mut stderr = std::io::stderr().lock();
    let mut shown = error.to_string();
    let _ = writeln!(stderr, "error: {shown}");
    for cause in error.chain().skip(1) {
        let text = cause.to_string();
        if !shown.contains(&text) {
            let _ = writeln!(stderr, "  caused by: {text}");
            shown.push_str(&text);
        }
    }
    if let Some(hint) = forbidden_hint(error) {
        let _ = writeln!(stderr, "  hint: {hint}");
    }
    exit_code(error)
}

/// The exit code of the user's errors: [`ErrorKind::Invalid`], [`ErrorKind::NotFound`],
/// [`ErrorKind::Denied`], [`ErrorKind::Conflict`].
pub const USER_ERROR: u8 = 2;
/// The exit code of every other failure: [`ErrorKind::Unavailable`], [`ErrorKind::Internal`].
pub const FAILURE: u8 = 1;

/// The one mapping of a kind of failure to the CLI's exit code.
fn code_of(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::Invalid | ErrorKind::NotFound | ErrorKind::Denied | ErrorKind::Conflict => {
            USER_ERROR
        }
        ErrorKind::Unavailable | ErrorKind::Internal => FAILURE,
    }
}

/// The exit code for an error: the code of its [`kind`].
fn exit_code(error: &anyhow::Error) -> ExitCode {
    ExitCode::from(code_of(kind(error)))
}

/// For a control plane's refusal: the shipped role that would allow the request.
fn forbidden_hint(error: &anyhow::Error) -> Option<String> {
    error.chain().find_map(|cause| {
        let forbidden = cause
            .downcast_ref::<addonctl::cluster::Error>()
            .or_else(|| match cause.downcast_ref::<addonctl::Error>() {
                Some(addonctl::Error::Cluster(e)) => Some(e),
                _ => None,
            });
        match forbidden {
            Some(addonctl::cluster::Error::Forbidden { cluster, message })
                if cluster == addonctl::cluster::set::LOCAL =>
            {
                addonctl::apply::access::hint(message)
            }
            _ => None,
        }
    })
}

/// The kind of an error: that of the outermost cause that knows its kind (a [`UserError`], the
/// library's error, a cluster's); [`ErrorKind::Internal`] when none does.
fn kind(error: &anyhow::Error) -> ErrorKind {
    error
        .chain()
        .find_map(|cause| {
            if let Some(e) = cause.downcast_ref::<UserError>() {
                Some(e.kind)
            } else if let Some(e) = cause.downcast_ref::<addonctl::Error>() {
                Some(e.kind())
            } else {
                cause
                    .downcast_ref::<addonctl::cluster::Error>()
                    .map(addonctl::cluster::Error::kind)
            }
        })
        .unwrap_or(ErrorKind::Internal)
}

/// An error the CLI itself finds in what the user asked for, with its kind
/// ([`ErrorKind::Invalid`] unless said otherwise).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct UserError {
    /// What is wrong.
    pub message: String,
    /// Its kind.
    pub kind: ErrorKind,
}

/// Shorthand for a user error of kind [`ErrorKind::Invalid`] (exit code 2).
pub fn user(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UserError {
        message: message.into(),
        kind: ErrorKind::Invalid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_errors_and_the_others_are_told_apart() {
        let cases: [(anyhow::Error, ErrorKind); 6] = [
            (user("bad flag"), ErrorKind::Invalid),
            (
                addonctl::Error::from(addonctl::loader::LocateError::ManyAddons {
                    reference: "addons".to_owned(),
                    names: vec!["a".to_owned(), "b".to_owned()],
                })
                .into(),
                ErrorKind::Invalid,
            ),
            (
                addonctl::Error::from(addonctl::params::Error::Clusters).into(),
                ErrorKind::Invalid,
            ),
            (
                anyhow::Error::from(addonctl::Error::from(addonctl::params::Error::Clusters))
                    .context("while planning"),
                ErrorKind::Invalid,
            ),
            (anyhow::anyhow!("the server hung up"), ErrorKind::Internal),
            (
                std::io::Error::other("disk full").into(),
                ErrorKind::Internal,
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(kind(&error), expected, "{error:#}");
        }
    }

    #[test]
    fn each_kind_has_one_exit_code() {
        for (kind, code) in [
            (ErrorKind::Invalid, USER_ERROR),
            (ErrorKind::NotFound, USER_ERROR),
            (ErrorKind::Denied, USER_ERROR),
            (ErrorKind::Conflict, USER_ERROR),
            (ErrorKind::Unavailable, FAILURE),
            (ErrorKind::Internal, FAILURE),
        ] {
            assert_eq!(code_of(kind), code, "{kind}");
            assert_eq!(code_of(kind) == USER_ERROR, kind.is_user(), "{kind}");
        }
    }

    /// The stages' errors keep the exit codes they had before they joined the crate's error;
    /// a lock another command holds is a conflict, the user's to wait for or force (2).
    #[test]
    fn the_stages_errors_keep_their_exit_codes() {
        use addonctl::Error;
        let refused = || Error::NotEnabled {
            addon: "a".to_owned(),
        };
        let cases: Vec<(Error, ErrorKind)> = vec![
            (refused(), ErrorKind::NotFound),
            (Error::VelaMissing, ErrorKind::Invalid),
            (
                Error::CrdNotEstablished {
                    crd: "c".to_owned(),
                    cluster: "m".to_owned(),
                    seconds: 1,
                },
                ErrorKind::Invalid,
            ),
            (
                Error::NotReady {
                    addon: "a".to_owned(),
                    phase: "enabling".to_owned(),
                    seconds: 1,
                    wanted: "enabled".to_owned(),
                    why: String::new(),
                },
                ErrorKind::Unavailable,
            ),
            (
                Error::DeleteFailed {
                    reason: "Secret `ns/x`: gone".to_owned(),
                },
                ErrorKind::Unavailable,
            ),
            (
                Error::Unfinished {
                    source: Box::new(Error::DeletionFailed {
                        addon: "a".to_owned(),
                        failed: vec!["m: gone".to_owned()],
                        total: 2,
                    }),
                    done: Vec::new(),
                    next: "addonctl disable a".to_owned(),
                },
                ErrorKind::Unavailable,
            ),
            (
                Error::Partial {
                    source: Box::new(refused()),
                    applied: Vec::new(),
                },
                ErrorKind::NotFound,
            ),
            (busy(), ErrorKind::Conflict),
        ];
        for (error, expected) in cases {
            let error = anyhow::Error::from(error).context("while enabling");
            assert_eq!(kind(&error), expected, "{error:#}");
            let code = exit_code(&error);
            let wanted = ExitCode::from(if expected.is_user() {
                USER_ERROR
            } else {
                FAILURE
            });
            assert_eq!(code, wanted, "{error:#}");
        }
    }

    fn busy() -> addonctl::Error {
        addonctl::Error::Busy(addonctl::state::lease::Busy {
            subject: "a".to_owned(),
            lease: "l".to_owned(),
            holder: "h".to_owned(),
            since: "s".to_owned(),
            expires: "e".to_owned(),
        })
    }

    /// A lock held by another command, a lock or a Secret or ConfigMap that kept changing, a
    /// lock taken over, a write the API server refused for a newer one: one kind, one exit code,
    /// whichever path found it.
    #[test]
    fn every_contention_is_a_conflict_and_exits_2() {
        use addonctl::Error;
        let cluster_conflict = || addonctl::cluster::Error::Conflict {
            cluster: "local".to_owned(),
            message: "the object has been modified".to_owned(),
        };
        let cases: Vec<anyhow::Error> = vec![
            busy().into(),
            Error::LockContended {
                subject: "a".to_owned(),
                lease: "vela-system/addonctl-lock-a".to_owned(),
            }
            .into(),
            Error::LockTakenOver {
                lease: "vela-system/addonctl-lock-a".to_owned(),
                seconds: 60,
            }
            .into(),
            Error::ClusterSecretContended {
                cluster: "m".to_owned(),
            }
            .into(),
            Error::from(addonctl::error::RegistryError::StoreContended {
                namespace: "vela-system".to_owned(),
                attempts: 5,
            })
            .into(),
            Error::from(cluster_conflict()).into(),
            cluster_conflict().into(),
            anyhow::Error::from(busy()).context("while disabling `a`"),
        ];
        for error in cases {
            assert_eq!(kind(&error), ErrorKind::Conflict, "{error:#}");
            assert_eq!(exit_code(&error), ExitCode::from(USER_ERROR), "{error:#}");
        }
    }
}
