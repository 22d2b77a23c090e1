//! The front ends' API: one function per use case, each taking the [`Session`] of one command
//! or request and returning a report a front end prints or serialises. Everything a front end
//! would otherwise decide lives here: the checks before a write, the refusal of an addon an
//! `Addon` resource declares ([`guard`]), the review of adoptions (asked through [`Consent`]),
//! the plan's preview ([`Preview`]: what `--dry-run`, `diff` and a server's plans return) and the
//! wait after an apply. A front end keeps its flags, its questions and its printing.
//!
//! The CLI (`src/cli/commands/`) calls these; so will the app store's HTTP server.

pub mod cluster;
pub mod declare;
pub mod diff;
pub mod disable;
pub mod enable;
pub mod guard;
pub mod preview;
pub mod rbac;
pub mod registry;
pub mod rollback;
pub mod rollout;
pub mod status;
pub mod upgrade;
pub mod version;

pub use crate::apply::clusters::{parse_labels, ClusterRow, JoinLabels};
pub use crate::apply::deletion::Entry as RemovedObject;
pub use crate::apply::{DisableOptions, RollbackRequest, StepReport, UpgradeRequest};
pub use crate::context::Session;
pub use crate::plan::Action;
pub use diff::Verb;
pub use preview::{Preview, PreviewMode};

use crate::Result;

/// What an operation asks before a change the person may not expect.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(
    tag = "question",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Question {
    /// Objects exist that addonctl did not create: enabling adopts them (overwrites their
    /// fields; `disable` gives them back). One line each: the addon and the object.
    Adopt {
        /// The objects.
        adoptions: Vec<String>,
    },
    /// Detaching a cluster deletes what addons applied there, then forgets the cluster.
    Detach {
        /// The cluster.
        cluster: String,
        /// Objects deleted.
        deleted: usize,
        /// Adopted objects given back.
        given_back: usize,
        /// One line per addon affected.
        addons: Vec<String>,
    },
    /// Joining a cluster again this way drops labels it has (selectors stop matching it).
    Rejoin {
        /// The cluster.
        cluster: String,
        /// The labels dropped (`key=value`).
        dropped: Vec<String>,
    },
}

/// The answer to a [`Question`]: the CLI asks the person at the terminal; a server answers
/// from the request.
pub trait Consent: Send + Sync {
    /// Whether questions are asked at all (else the reads that would find what to ask about are
    /// skipped: adoptions are refused by the apply, naming `--adopt`; a detach or re-join goes
    /// ahead as asked).
    fn asks(&self) -> bool;

    /// The answer: `true` goes ahead; `false` stops the operation before any write, with the
    /// question's own error ([`crate::Error::Declined`]).
    fn agree(&self, question: &Question) -> Result<bool>;
}

/// Never asks.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoConsent;

impl Consent for NoConsent {
    fn asks(&self) -> bool {
        false
    }

    fn agree(&self, _question: &Question) -> Result<bool> {
        Ok(true)
    }
}

/// `consent`'s answer to `question`: `Ok(())` to go ahead, else the refusal naming it.
pub(crate) fn agreed(consent: &dyn Consent, question: Question) -> Result<()> {
    if consent.agree(&question)? {
        Ok(())
    } else {
        Err(crate::Error::Declined(question))
    }
}

#[cfg(test)]
mod tests;
