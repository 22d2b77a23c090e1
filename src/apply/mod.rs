//! Applying a plan: `enable` and `upgrade` ([`execute`]), `disable` ([`disable`]), cluster
//! membership ([`clusters`]); the pending revision and control-plane objects
//! (`control_plane`), the direct engine ([`direct`]), pruning and deletion rules
//! ([`deletion`]), the disable guard (`guard`), permissions ([`access`]) and review of what a
//! plan would adopt ([`review`]).
//!
//! Expected flow of `enable`:
//! 1. plan: find the addon, resolve its missing dependencies (dependencies first), check system
//!    requirements, render every addon of the plan;
//! 2. check definition conflicts for every addon of the plan (a definition owned by another addon
//!    or by nobody), listing every clash;
//! 3. for each addon, dependencies first: ensure the system namespace; with the direct engine,
//!    survey the target clusters ([`direct::prepare`]); write the record (with the direct engine,
//!    a pending revision listing every control-plane and cluster object about to be applied);
//!    apply the Application (when KubeVela's CRD is served); apply definitions (skipped with a
//!    note when their CRD is not served), ConfigMaps, views, auxiliary outputs with an owner
//!    reference to the Application (or to the record without KubeVela); apply or delete the
//!    argument Secret; delete objects the previous version (or an interrupted enable) applied and
//!    this one does not; dispatch to the clusters; write the final record (the pending revision
//!    promoted, or kept with what the failed clusters may hold).
//!
//! Guarantees: server-side apply only (field manager `addonctl`), so an unchanged re-enable changes
//! nothing on the server; the record's content is deterministic; a failure midway reports what was
//! applied, and a process killed midway leaves a record that lists everything it may have applied;
//! nothing is applied when an addon renders addonctl's or KubeVela's state
//! ([`crate::plan::protect`]) or would
//! adopt an existing object without `--adopt` ([`review`]); disable removes what the record (and
//! its pending revision) lists, in reverse order, without relying on garbage collection, by the
//! rules of [`deletion`] (what another addon lists, the system namespace and namespaces holding
//! anything else are kept; adopted objects are given back); a disable that fails midway says
//! what was deleted and what to run next, and the record keeps what is left.

pub mod access;
pub mod clusters;
mod control_plane;
pub mod deletion;
pub mod direct;
mod disable;
mod guard;
mod handover;
mod overrides;
pub mod review;
mod rollback;
#[cfg(test)]
mod tests;
mod upgrade;

use std::collections::BTreeSet;

use serde::Serialize;

use crate::cluster::Cluster;
use crate::context::{Context, EngineChoice, LockOptions, Reporter};
use crate::plan::{
    definition_conflicts, plan, release_definitions, Action, EnableRequest, Plan, Step,
};
use crate::state::lease;
use crate::state::Store;
use crate::status::wait;
use crate::{Error, Result};
pub use disable::{
    disable, disable_all, disable_all_with, disable_with, DisableOptions, DisableReport,
};
pub use rollback::{rollback, RollbackReport, RollbackRequest};
pub use upgrade::{upgrade, upgrade_plan, UpgradeRequest};
// The pieces of applying that a dry run (`crate::diff`) reuses.
pub(crate) use control_plane::{apply_order, owner_reference, stale, uses_vela, with_owner};
pub(crate) use disable::control_plane_listing;

/// What applying works with: the control plane, the system namespace, the engine choice and
/// how locks are taken. Borrowed from a [`Context`] ([`Context::applier`]) or built by a front
/// end from its own parts; applying never reaches the catalogue or the renderer (planning
/// did that).
#[derive(Debug, Clone, Copy)]
pub struct Applier<'a> {
    /// The control plane.
    pub cluster: &'a Cluster,
    /// The system namespace.
    pub namespace: &'a str,
    /// Which engine deploys the Application's components.
    pub engine: EngineChoice,
    /// How locks are taken.
    pub lock: &'a LockOptions,
}

tokio::task_local! {
    /// Within [`guarded`]'s work: the server's revision when its locks were taken.
    static LOCKED_AT: u64;
}

impl Applier<'_> {
    /// Within [`guarded`]'s work, the server's revision when its locks were taken: an object
    /// with a higher resourceVersion was written since (by this command, or by someone
    /// ignoring the locks).
    #[must_use]
    pub fn locked_at(&self) -> Option<u64> {
        LOCKED_AT.try_with(|revision| *revision).ok()
    }

    /// What `state/` reads: the control plane and the system namespace.
    #[must_use]
    pub fn state(&self) -> Store<'_> {
        Store {
            cluster: self.cluster,
            namespace: self.namespace,
        }
    }
}

impl Context {
    /// What applying works with, borrowed from this context.
    #[must_use]
    pub fn applier(&self) -> Applier<'_> {
        Applier {
            cluster: &self.cluster,
            namespace: &self.namespace,
            engine: self.engine,
            lock: &self.lock,
        }
    }
}

/// Runs `work` control plane first: checks `needs` (refusing with every missing permission
/// before any write), takes the lock of every addon in `addons` (in name order; refusing when
/// another command holds one), runs `work`, and releases the locks whatever its outcome.
pub async fn guarded<T, F>(
    ctx: &Applier<'_>,
    command: &str,
    needs: &[access::Need],
    addons: &[String],
    work: F,
) -> Result<T>
where
    F: std::future::Future<Output = Result<T>>,
{
    access::check(ctx.cluster, command, needs).await?;
    let mut names: Vec<&String> = addons.iter().collect();
    names.sort();
    names.dedup();
    let mut locks = Vec::new();
    for name in names {
        let taken = lease::acquire(
            ctx.cluster,
            ctx.namespace,
            &lease::addon_lease(name),
            name,
            &ctx.lock.holder,
            ctx.lock.force,
        )
        .await;
        match taken {
            Ok(lock) => locks.push(lock),
            Err(e) => {
                release_all(locks).await;
                return Err(e);
            }
        }
    }
    // The revision the last lock was taken at: what the work writes from now on is newer.
    let taken_at = locks.iter().filter_map(lease::Lock::revision).max();
    let result = match taken_at {
        Some(revision) => LOCKED_AT.scope(revision, work).await,
        None => work.await,
    };
    // A lock taken over meanwhile (this command stalled past the lease, or `--force-unlock`):
    // another command may have written at the same time, so success is not claimed.
    let lost = locks.iter().find_map(|lock| lock.ensure_held().err());
    release_all(locks).await;
    match (result, lost) {
        (Ok(_), Some(lost)) => Err(lost),
        (result, _) => result,
    }
}

/// Runs `check` and `work` at once (a permission check and the reads that need no permission
/// of their own): a refusal of `check` is returned as soon as it comes, and before any error
/// of `work`, so that a user without rights learns what is missing, not merely that a read was
/// refused; otherwise `work`'s outcome.
pub async fn checked_first<T, E>(
    check: impl std::future::Future<Output = std::result::Result<(), E>>,
    work: impl std::future::Future<Output = std::result::Result<T, E>>,
) -> std::result::Result<T, E> {
    use futures::future::{select, Either};
    match select(Box::pin(check), Box::pin(work)).await {
        Either::Left((checked, work)) => {
            checked?;
            work.await
        }
        Either::Right((worked, check)) => {
            check.await?;
            worked
        }
    }
}

/// Releases locks; a lock that cannot be released expires on its own.
async fn release_all(locks: Vec<lease::Lock>) {
    for lock in locks {
        if let Err(e) = lock.release().await {
            tracing::debug!("a lock was left to expire: {e}");
        }
    }
}

/// What one applied addon changed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepReport {
    /// The addon.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What was done.
    pub action: Action,
    /// Objects applied.
    pub applied: Vec<String>,
    /// Of the control-plane objects applied (and the record), those the server wrote: empty
    /// when an enable changed nothing there.
    pub changed: Vec<String>,
    /// Objects deleted (no longer rendered, or the argument Secret without arguments).
    pub deleted: Vec<String>,
    /// Notes (skipped definitions, no KubeVela).
    pub notes: Vec<String>,
    /// The engine that deployed the components.
    pub engine: EngineChoice,
    /// Direct engine: each cluster's outcome.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<direct::ClusterOutcome>,
    /// `NOTES.rhai`, masked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addon_notes: Option<String>,
    /// Clusters of its `clusters` argument that its rendered topology does not reach (see
    /// [`crate::status::phase::untargeted_clusters`]; the CLI fills it in and warns).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub untargeted_clusters: Vec<String>,
}

impl StepReport {
    /// Whether the enable wrote nothing: no control-plane object (nor the record) changed,
    /// nothing was deleted, and no cluster of the direct engine had an object changed.
    pub fn unchanged(&self) -> bool {
        self.changed.is_empty()
            && self.deleted.is_empty()
            && self
                .clusters
                .iter()
                .all(|c| c.changed == 0 && c.deleted == 0 && c.error.is_none())
    }
}

/// Applies one step of a plan; the clusters of `hold` keep what they run (see
/// [`Plan::hold`]).
pub async fn apply_step(
    ctx: &Applier<'_>,
    step: &Step,
    adopt: bool,
    hold: &BTreeSet<String>,
    reporter: &dyn Reporter,
) -> Result<StepReport> {
    let rendered = &step.rendered;
    let mut report = StepReport {
        name: rendered.name.clone(),
        version: rendered.version.clone(),
        action: step.action,
        applied: Vec::new(),
        changed: Vec::new(),
        deleted: Vec::new(),
        notes: Vec::new(),
        engine: EngineChoice::Auto,
        clusters: Vec::new(),
        untargeted_clusters: Vec::new(),
        addon_notes: rendered.masked_notes(),
    };
    if step.action == Action::Keep {
        return Ok(report);
    }
    reporter.event(&crate::context::Progress::Applying {
        addon: rendered.name.clone(),
        version: rendered.version.clone(),
    });
    let result = control_plane::apply_rendered(ctx, step, adopt, hold, &mut report, reporter).await;
    match result {
        Ok(()) => Ok(report),
        Err(e @ Error::Clusters { .. }) => Err(e),
        Err(e) => Err(Error::Partial {
            source: Box::new(e),
            applied: report.applied,
        }),
    }
}

/// Enables an addon and its missing dependencies.
pub async fn enable(
    ctx: &Context,
    request: &EnableRequest,
    reporter: &dyn Reporter,
) -> Result<Vec<StepReport>> {
    // The plan's reads of the state serve the checks until the first write (the lock).
    let _reuse = ctx.cluster.reuse_lists();
    let plan = plan(&ctx.planner(), request, false).await?;
    execute_planned(ctx, &plan, request, reporter).await
}

/// [`execute`]s `plan`, planned from `request`, through the context's applier.
async fn execute_planned(
    ctx: &Context,
    plan: &Plan,
    request: &EnableRequest,
    reporter: &dyn Reporter,
) -> Result<Vec<StepReport>> {
    execute(&ctx.applier(), plan, request.override_definitions, reporter).await
}

/// Checks the caller's permissions on the control plane, takes the lock of every addon the plan
/// changes, checks conflicts and applies every step of a plan.
pub async fn execute(
    ctx: &Applier<'_>,
    plan: &Plan,
    override_definitions: bool,
    reporter: &dyn Reporter,
) -> Result<Vec<StepReport>> {
    let addons: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| s.action != Action::Keep)
        .map(|s| s.rendered.name.clone())
        .collect();
    let command = match plan.steps.last() {
        Some(root) => format!("`addonctl enable {}`", root.rendered.name),
        None => return Ok(Vec::new()),
    };
    let needs = access::plan_needs(ctx, plan).await?;
    guarded(
        ctx,
        &command,
        &needs,
        &addons,
        Box::pin(execute_locked(ctx, plan, override_definitions, reporter)),
    )
    .await
}

async fn execute_locked(
    ctx: &Applier<'_>,
    plan: &Plan,
    override_definitions: bool,
    reporter: &dyn Reporter,
) -> Result<Vec<StepReport>> {
    if override_definitions {
        release_definitions(ctx.cluster, ctx.namespace, plan).await?;
    } else {
        let clashes = definition_conflicts(ctx.cluster, ctx.namespace, plan).await?;
        if !clashes.is_empty() {
            return Err(Error::DefinitionConflicts { clashes });
        }
    }
    let mut reports: Vec<StepReport> = Vec::new();
    let none = BTreeSet::new();
    for (i, step) in plan.steps.iter().enumerate() {
        // Only the addon asked for holds clusters: its dependencies go everywhere it does.
        let hold = if i + 1 == plan.steps.len() {
            &plan.hold
        } else {
            &none
        };
        let report = apply_step(ctx, step, plan.adopt, hold, reporter).await?;
        // The direct engine deployed it and later layers need it: wait until it is healthy.
        let gate = report.engine == EngineChoice::Direct && !step.needed_by.is_empty();
        reports.push(report);
        if let (true, Some(timeout)) = (gate, plan.dependency_timeout) {
            reporter.event(&crate::context::Progress::WaitingForDependency {
                addon: step.rendered.name.clone(),
                needed_by: step.needed_by.clone(),
            });
            if let Err(e) =
                wait::until_enabled(ctx.state(), &step.rendered.name, timeout, reporter).await
            {
                return Err(Error::Partial {
                    source: Box::new(e),
                    applied: reports
                        .iter()
                        .map(|r| format!("addon `{}` {}", r.name, r.version))
                        .collect(),
                });
            }
        }
    }
    Ok(reports)
}
