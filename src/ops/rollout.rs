//! The one-shot staged rollout: each batch enabled with the clusters so far, then its gate
//! awaited (see [`crate::rollout::engine`]); refused first when the caller may not write the
//! addon's state.

use crate::context::Session;

pub use crate::rollout::engine::{RunReport, RunRequest};
pub use crate::rollout::{Error, Result, Rollout};

/// Rolls the addon out stage by stage, reporting each batch to the session's progress; the
/// report says where it ended (every stage done, or the gate that failed and why).
pub async fn run(session: &Session, request: &RunRequest) -> Result<RunReport> {
    super::guard::check_state(
        session.ctx(),
        &format!("`addonctl rollout run {}`", request.reference),
    )
    .await?;
    crate::rollout::engine::run(session.ctx(), request, session.progress()).await
}
