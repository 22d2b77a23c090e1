//! Error reporting: the full chain on stderr, and the exit code (2 for the user's errors, 1 otherwise).

use std::io::Write;
use std::process::ExitCode;

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

/// The exit code of the user's errors.
pub const USER_ERROR: u8 = 2;
/// The exit code of every other failure.
pub const FAILURE: u8 = 1;

/// The exit code for an error: [`USER_ERROR`] when the user can fix it, else [`FAILURE`].
fn exit_code(error: &anyhow::Error) -> ExitCode {
    ExitCode::from(if is_user_error(error) {
        USER_ERROR
    } else {
        FAILURE
    })
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

/// User errors: anything the library classifies as such, and every [`UserError`].
fn is_user_error(error: &anyhow::Error) -> bool {
    // The outermost error that knows its class decides.
    error
        .chain()
        .find_map(|cause| {
            if cause.downcast_ref::<UserError>().is_some() {
                Some(true)
            } else if let Some(e) = cause.downcast_ref::<addonctl::Error>() {
                Some(e.is_user_error())
            } else {
                cause
                    .downcast_ref::<addonctl::cluster::Error>()
                    .map(addonctl::cluster::Error::is_user_error)
            }
        })
        .unwrap_or(false)
}

/// An error caused by what the user asked for (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UserError(pub String);

/// Shorthand for a user error.
pub fn user(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UserError(message.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_errors_and_the_others_are_told_apart() {
        let cases: [(anyhow::Error, bool); 6] = [
            (user("bad flag"), true),
            (
                addonctl::Error::from(addonctl::loader::LocateError::ManyAddons {
                    reference: "addons".to_owned(),
                    names: vec!["a".to_owned(), "b".to_owned()],
                })
                .into(),
                true,
            ),
            (
                addonctl::Error::from(addonctl::params::Error::Clusters).into(),
                true,
            ),
            (
                anyhow::Error::from(addonctl::Error::from(addonctl::params::Error::Clusters))
                    .context("while planning"),
                true,
            ),
            (anyhow::anyhow!("the server hung up"), false),
            (std::io::Error::other("disk full").into(), false),
        ];
        for (error, expected) in cases {
            assert_eq!(is_user_error(&error), expected, "{error:#}");
        }
    }

    /// The stages' errors keep the exit codes they had before they joined the crate's error.
    #[test]
    fn the_stages_errors_keep_their_exit_codes() {
        use addonctl::Error;
        let refused = || Error::NotEnabled {
            addon: "a".to_owned(),
        };
        let cases: Vec<(Error, bool)> = vec![
            (refused(), true),
            (Error::VelaMissing, true),
            (
                Error::CrdNotEstablished {
                    crd: "c".to_owned(),
                    cluster: "m".to_owned(),
                    seconds: 1,
                },
                true,
            ),
            (
                Error::NotReady {
                    addon: "a".to_owned(),
                    phase: "enabling".to_owned(),
                    seconds: 1,
                    wanted: "enabled".to_owned(),
                    why: String::new(),
                },
                false,
            ),
            (
                Error::DeleteFailed {
                    reason: "Secret `ns/x`: gone".to_owned(),
                },
                false,
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
                false,
            ),
            (
                Error::Partial {
                    source: Box::new(refused()),
                    applied: Vec::new(),
                },
                true,
            ),
            (
                Error::Busy(addonctl::state::lease::Busy {
                    subject: "a".to_owned(),
                    lease: "l".to_owned(),
                    holder: "h".to_owned(),
                    since: "s".to_owned(),
                    expires: "e".to_owned(),
                }),
                false,
            ),
        ];
        for (error, expected) in cases {
            let error = anyhow::Error::from(error).context("while enabling");
            assert_eq!(is_user_error(&error), expected, "{error:#}");
            let code = exit_code(&error);
            let wanted = ExitCode::from(if expected { USER_ERROR } else { FAILURE });
            assert_eq!(code, wanted, "{error:#}");
        }
    }
}
