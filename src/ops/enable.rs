//! Enabling an addon (and what it needs): [`preview`] what it would do, or [`run`] it — the
//! checks before writing and the plan at once, the plan's notes and flags as progress, the
//! adoptions asked through [`Consent`], the apply, and the wait.

use std::time::Duration;

use crate::apply::StepReport;
use crate::context::{Progress, Session};
use crate::plan::{Action, EnableRequest, Plan};
use crate::Result;

use super::guard::{check_write, Command, WriteGuard};
use super::preview::{of_plan, untargeted_clusters, Preview, PreviewMode};
use super::Consent;

/// What to enable, and how.
#[derive(Debug, Clone, Default)]
pub struct EnableOp {
    /// The addon, its version, arguments and the plan's options.
    pub request: EnableRequest,
    /// Apply even though an `Addon` resource declares the addon.
    pub override_controller: bool,
    /// With the direct engine, how long a dependency may take to become ready before what
    /// needs it is applied (`None`: no wait).
    pub dependency_timeout: Option<Duration>,
    /// Wait until the addon is enabled, this long at most (`None`: return after the apply).
    pub wait: Option<Duration>,
}

/// The plan of `op`, unchecked (a dry run writes nothing).
pub async fn plan(session: &Session, op: &EnableOp) -> Result<Plan> {
    crate::plan::plan(&session.ctx().planner(), &op.request, false).await
}

/// What enabling would do, from `mode`; nothing is written.
pub async fn preview(session: &Session, op: &EnableOp, mode: PreviewMode) -> Result<Preview> {
    let ctx = session.ctx();
    let _reuse = ctx.cluster.reuse_lists();
    let plan = plan(session, op).await?;
    of_plan(session, &plan, mode).await
}

/// Enables: checks and plans at once (a refusal of the checks is said first), reports the
/// plan's notes, flags and kept dependencies, asks `consent` about adoptions, applies, and
/// waits when asked. Each report names the clusters the addon's `clusters` argument names and
/// its template does not reach.
pub async fn run(
    session: &Session,
    op: &EnableOp,
    consent: &dyn Consent,
) -> Result<Vec<StepReport>> {
    let ctx = session.ctx();
    let progress = session.progress();
    // The plan's reads of the state serve the checks until the first write (the lock).
    let _reuse = ctx.cluster.reuse_lists();
    let guard = WriteGuard {
        command: Command::Enable,
        addon: op.request.reference.clone(),
        dry_run: false,
        override_controller: op.override_controller,
    };
    let mut plan =
        crate::apply::checked_first(check_write(session, &guard), plan(session, op)).await?;
    plan.dependency_timeout = op.dependency_timeout;
    let untargeted = untargeted_clusters(session, &plan).await;
    announce(session, &plan);
    if !op.request.adopt && consent.asks() {
        plan.adopt = ask_adoptions(session, &plan, consent).await?;
    }
    for kept in &plan.kept {
        progress.step(&format!(
            "keeping `{}` {} (installed; needed by {})",
            kept.name,
            kept.version,
            kept.needed_by.join(", ")
        ));
    }
    let mut reports = crate::apply::execute(
        &ctx.applier(),
        &plan,
        op.request.override_definitions,
        progress,
    )
    .await?;
    for report in &mut reports {
        if let Some(clusters) = untargeted.get(&report.name) {
            report.untargeted_clusters.clone_from(clusters);
        }
    }
    tracing::info!(
        requests = ctx.cluster.counters().requests(),
        writes = ctx.cluster.counters().writes(),
        "API calls made by enable"
    );
    if let (Some(timeout), Some(root)) = (op.wait, plan.steps.last()) {
        crate::status::wait::until_enabled(ctx.state(), &root.rendered.name, timeout, progress)
            .await?;
    }
    Ok(reports)
}

/// The plan's notes and the flags of what it changes, as progress.
pub(super) fn announce(session: &Session, plan: &Plan) {
    let progress = session.progress();
    for note in &plan.notes {
        progress.event(&Progress::Note {
            message: note.clone(),
        });
    }
    for flag in plan
        .steps
        .iter()
        .filter(|s| s.action != Action::Keep)
        .flat_map(|s| crate::apply::review::step_flags(s, &session.ctx().namespace))
    {
        progress.step(&format!("flagged: {flag}"));
    }
}

/// The objects the plan would adopt, put to `consent`: `true` adopts them; none, `false`.
async fn ask_adoptions(session: &Session, plan: &Plan, consent: &dyn Consent) -> Result<bool> {
    let adoptions: Vec<String> = crate::apply::review::review(&session.ctx().applier(), plan)
        .await?
        .into_iter()
        .filter(|f| f.kind == crate::plan::protect::FlagKind::Adopts)
        .map(|f| format!("addon `{}`: {}", f.addon, f.object))
        .collect();
    if adoptions.is_empty() {
        return Ok(false);
    }
    super::agreed(consent, super::Question::Adopt { adoptions })?;
    Ok(true)
}
