//! Rolling an installed addon back to one of its revisions, refused (unless overridden) when
//! an `Addon` resource declares it.

use crate::apply::{RollbackReport, RollbackRequest};
use crate::context::Session;
use crate::Result;

use super::guard::{check_state, refuse_if_declared, Command};

/// What to roll back, and how.
#[derive(Debug, Clone, Default)]
pub struct RollbackOp {
    /// The addon and the revision.
    pub request: RollbackRequest,
    /// Apply even though an `Addon` resource declares the addon.
    pub override_controller: bool,
}

/// Rolls back: the permission's refusal first, then the refusal of a declared addon, then the
/// revision applied again.
pub async fn run(session: &Session, op: &RollbackOp) -> Result<RollbackReport> {
    let name = &op.request.name;
    crate::apply::checked_first(
        check_state(session.ctx(), &format!("`addonctl rollback {name}`")),
        refuse_if_declared(session, name, Command::Rollback, op.override_controller),
    )
    .await?;
    crate::apply::rollback(session.ctx(), &op.request, session.progress()).await
}
