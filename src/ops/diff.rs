//! `diff`: what enabling an addon — upgrading it, when it is installed — would change, from the
//! API servers' dry runs ([`diff`]); and the words of a plan for the command that made it
//! ([`Verb`]): the planner words its hints for an enable (`pass --skip-version-check to enable
//! it anyway`), and a plan of an installed addon is an upgrade, so a preview's notes and
//! messages ([`word`]) and a plan's errors ([`worded`]) are said here for the verb.

use serde::Serialize;

use crate::context::Session;
use crate::plan::{Action, EnableRequest};
use crate::resolve::ResolveError;
use crate::Error;

use super::enable::EnableOp;
use super::preview::{Preview, PreviewMode};
use super::status::installed_names;

pub use crate::diff::{Change, Diff, ObjectChange, ParamChange, ParamChangeKind};

/// What a plan does to the addon asked for, as its texts word it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verb {
    /// `enable`: the addon is not installed.
    Enable,
    /// `upgrade`: the addon is installed.
    Upgrade,
}

/// The phrases the planner and the dry runs write for an enable, and the same for an upgrade.
const UPGRADE_PHRASES: [(&str, &str); 5] = [
    ("to enable it anyway", "to upgrade it anyway"),
    ("to enable anyway", "to upgrade anyway"),
    ("(enabling anyway:", "(upgrading anyway:"),
    ("`enable` refuses it", "`upgrade` refuses it"),
    ("cannot enable `", "cannot upgrade `"),
];

impl Verb {
    /// The verb of a preview's root (the addon asked for, the last step): an addon planned for
    /// install is enabled, any other upgraded.
    pub fn of(preview: &Preview) -> Verb {
        match preview.plan.last().map(|s| s.action) {
            Some(Action::Install) | None => Verb::Enable,
            Some(_) => Verb::Upgrade,
        }
    }

    /// The command's name.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Enable => "enable",
            Verb::Upgrade => "upgrade",
        }
    }

    /// `text`, written for an enable, as said for this verb.
    fn say(self, text: &str) -> String {
        match self {
            Verb::Enable => text.to_owned(),
            Verb::Upgrade => UPGRADE_PHRASES
                .iter()
                .fold(text.to_owned(), |text, (from, to)| text.replace(from, to)),
        }
    }
}

/// A preview's notes, its addons' notes and its objects' messages said for `verb`.
pub fn word(preview: &mut Preview, verb: Verb) {
    for note in &mut preview.notes {
        *note = verb.say(note);
    }
    for addon in preview.diff.iter_mut().flat_map(|d| d.addons.iter_mut()) {
        for note in &mut addon.notes {
            *note = verb.say(note);
        }
        for object in &mut addon.objects {
            if let Some(message) = &mut object.message {
                *message = verb.say(message);
            }
        }
    }
}

/// An error of a plan, with its text for the command that made the plan.
#[derive(Debug)]
pub struct WordedError {
    /// The library's error (its kind is the failure's).
    pub error: Error,
    /// Its text for the verb, when that is not the error's own.
    pub text: Option<String>,
}

impl std::fmt::Display for WordedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.text {
            Some(text) => f.write_str(text),
            None => self.error.fmt(f),
        }
    }
}

impl std::error::Error for WordedError {}

impl From<Error> for WordedError {
    fn from(error: Error) -> Self {
        WordedError { error, text: None }
    }
}

/// `error`, made by a plan for the command `verb` names, said for that command. Only the
/// planner's refusals word a verb (no plan found, a platform requirement, APIs nobody serves);
/// a requirement of an addon that is not installed (a new dependency) stays an enable.
pub async fn worded(session: &Session, error: Error, verb: Verb) -> WordedError {
    if verb == Verb::Enable {
        return error.into();
    }
    let installed = match &error {
        Error::Resolve(ResolveError::System { .. }) => installed_names(session).await,
        _ => Vec::new(),
    };
    worded_with(error, verb, &installed)
}

/// [`worded`], knowing the installed addons.
fn worded_with(error: Error, verb: Verb, installed: &[String]) -> WordedError {
    let verb = match &error {
        Error::Resolve(ResolveError::System { addon, .. }) => {
            if installed.contains(addon) {
                verb
            } else {
                Verb::Enable
            }
        }
        Error::Resolve(ResolveError::NoSolution { .. }) | Error::MissingApis { .. } => verb,
        _ => Verb::Enable,
    };
    let own = error.to_string();
    let text = verb.say(&own);
    WordedError {
        text: (text != own).then_some(text),
        error,
    }
}

/// What `diff` compares: the addon and what it would be given.
#[derive(Debug, Clone, Default)]
pub struct DiffRequest {
    /// `name`, `registry/name` or a directory.
    pub reference: String,
    /// A version; `None`: the newest (an installed addon: the installed one).
    pub version: Option<String>,
    /// Arguments given now.
    pub args: crate::params::Input,
    /// Skip the `system` requirement checks.
    pub skip_version_check: bool,
    /// Plan even when APIs the addons use are served by nobody yet.
    pub skip_api_check: bool,
    /// Start from the addon's defaults instead of its stored arguments.
    pub reset_values: bool,
}

/// What enabling the addon would change, from the API servers' dry runs, said as an upgrade
/// when it is installed; nothing is written. A planning error is said the same way.
pub async fn diff(session: &Session, request: &DiffRequest) -> Result<Preview, WordedError> {
    let op = EnableOp {
        request: EnableRequest {
            reference: request.reference.clone(),
            version: request.version.clone(),
            args: request.args.clone(),
            skip_version_check: request.skip_version_check,
            skip_api_check: request.skip_api_check,
            reset_values: request.reset_values,
            ..EnableRequest::default()
        },
        ..EnableOp::default()
    };
    match super::enable::preview(session, &op, PreviewMode::Server).await {
        Ok(mut preview) => {
            let verb = Verb::of(&preview);
            word(&mut preview, verb);
            Ok(preview)
        }
        Err(error) => {
            let installed = installed_names(session).await;
            let name = request
                .reference
                .rsplit('/')
                .next()
                .unwrap_or(&request.reference);
            let verb = if installed.iter().any(|i| i == name) {
                Verb::Upgrade
            } else {
                Verb::Enable
            };
            Err(worded_with(error, verb, &installed))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{worded_with, Verb};
    use crate::resolve::{ResolveError, SystemRequirement};
    use crate::Error;

    fn requirement(addon: &str) -> Error {
        Error::Resolve(ResolveError::System {
            addon: addon.to_owned(),
            version: "1.0.0".to_owned(),
            requirement: SystemRequirement::Kubernetes,
            constraint: ">=1.31".to_owned(),
            actual: Some("v1.30.0".to_owned()),
        })
    }

    #[test]
    fn an_upgrades_refusals_say_upgrade_and_a_new_dependencys_keep_enable() {
        let installed = ["a".to_owned()];
        let worded = worded_with(requirement("a"), Verb::Upgrade, &installed);
        let text = worded.text.expect("worded for an upgrade");
        assert!(text.ends_with("to upgrade it anyway"), "{text}");
        assert_eq!(worded.error.kind(), requirement("a").kind());

        let new = worded_with(requirement("b"), Verb::Upgrade, &installed);
        assert!(new.text.is_none());
        assert!(new.to_string().ends_with("to enable it anyway"), "{new}");

        let none = Error::Resolve(ResolveError::NoSolution {
            root: "a".to_owned(),
            explanation: "`a 2.0.0` needs `x >=3`".to_owned(),
        });
        assert_eq!(
            worded_with(none, Verb::Upgrade, &[]).to_string(),
            "cannot upgrade `a`: `a 2.0.0` needs `x >=3`"
        );
    }

    #[test]
    fn other_errors_and_enables_keep_their_own_text() {
        let worded = worded_with(requirement("a"), Verb::Enable, &["a".to_owned()]);
        assert!(worded.text.is_none());
        let other = Error::NotEnabled {
            addon: "a".to_owned(),
        };
        assert!(worded_with(other, Verb::Upgrade, &[]).text.is_none());
    }
}
