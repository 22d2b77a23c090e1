//! The front ends' API: one function per use case, each taking the [`Session`] of one command
//! or request and returning a report a front end prints or serialises. Everything a front end
//! would otherwise decide lives here: the checks before a write, the refusal of an addon an
//! `Addon` resource declares ([`guard`]), the review of adoptions (asked through [`Consent`]),
//! the plan's preview ([`Preview`]: what `--dry-run`, `diff` and a server's plans return) and the
//! wait after an apply. A front end keeps its flags, its questions and its printing.
//!
//! The CLI (`src/cli/commands/`) calls these; so will the app store's HTTP server.

pub mod disable;
pub mod enable;
pub mod guard;
pub mod preview;
pub mod rollback;
pub mod upgrade;

pub use crate::context::Session;
pub use preview::{Preview, PreviewMode};

use crate::Result;

/// The answer to "may these objects, which exist and addonctl did not create, be adopted?":
/// the CLI asks the person at the terminal; a server answers from the request.
pub trait Consent: Send + Sync {
    /// Whether the question is asked at all (else the review that finds them is skipped, and
    /// the apply refuses adoptions naming `--adopt`).
    fn asks(&self) -> bool;

    /// The answer for `adoptions` (one line each: the addon and the object): `true` adopts
    /// them; `false` declines, and the operation stops before any write
    /// ([`crate::Error::AdoptionDeclined`]).
    fn adopt(&self, adoptions: &[String]) -> Result<bool>;
}

/// Never asks: adoptions are refused unless the request says `adopt`.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoConsent;

impl Consent for NoConsent {
    fn asks(&self) -> bool {
        false
    }

    fn adopt(&self, _adoptions: &[String]) -> Result<bool> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests;
