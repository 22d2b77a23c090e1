//! Disabling an installed addon (and, asked, the dependencies nothing needs any more), refused
//! when an `Addon` resource declares it; the wait until it is gone.

use std::time::{Duration, Instant};

use crate::apply::{DisableOptions, DisableReport};
use crate::context::Session;
use crate::Result;

use super::guard::{refuse_if_declared, Command};

/// What to disable, and how.
#[derive(Debug, Clone, Default)]
pub struct DisableOp {
    /// The addon.
    pub addon: String,
    /// `force`, `prune_dependencies`, `dry_run`.
    pub options: DisableOptions,
    /// Wait until each disabled addon is gone, this long at most in all (`None`: return after
    /// the deletions).
    pub wait: Option<Duration>,
}

/// Disables: refused for a declared addon (unless a dry run); the library checks permissions
/// and takes the locks (none for a dry run). The addon's report comes first, then those of the
/// dependencies pruned.
pub async fn run(session: &Session, op: &DisableOp) -> Result<Vec<DisableReport>> {
    if !op.options.dry_run {
        refuse_if_declared(session, &op.addon, Command::Disable, false).await?;
    }
    let ctx = session.ctx();
    let reports =
        crate::apply::disable_all_with(&ctx.applier(), &op.addon, &op.options, session.progress())
            .await?;
    if let Some(timeout) = op.wait {
        // Gone from the records and KubeVela's Applications (whose finalizers may still run).
        let deadline = Instant::now() + timeout;
        for report in &reports {
            let left = deadline.saturating_duration_since(Instant::now());
            crate::status::wait::until(
                ctx.state(),
                &report.name,
                crate::status::Phase::Disabled,
                left.max(Duration::from_secs(1)),
                session.progress(),
            )
            .await?;
        }
    }
    Ok(reports)
}
