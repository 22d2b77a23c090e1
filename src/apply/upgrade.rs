//! `upgrade`: an installed addon planned again with new arguments over the stored ones.

use super::{execute, StepReport};
use crate::context::{Context, Reporter};
use crate::plan::{plan, EnableRequest, Plan};
use crate::{Error, Result};

/// What to upgrade.
#[derive(Debug, Clone, Default)]
pub struct UpgradeRequest {
    /// The installed addon.
    pub name: String,
    /// A version to move to.
    pub version: Option<String>,
    /// Move to the newest version.
    pub latest: bool,
    /// Arguments merged over the stored ones, as the user gave them (parsed once against the
    /// schema of the version upgraded to; a typed map converts with `.into()`).
    pub args: crate::params::Input,
    /// Skip the `system` requirement checks.
    pub skip_version_check: bool,
    /// Take over definitions owned by another addon or by nobody.
    pub override_definitions: bool,
    /// Adopt existing objects addonctl did not create (otherwise the upgrade is refused).
    pub adopt: bool,
    /// Upgrade even when APIs the addons use are served by nobody yet.
    pub skip_api_check: bool,
    /// Start from the defaults instead of the stored arguments and clusters.
    pub reset_values: bool,
    /// Revisions to keep (`--history-max`; `None`: the default).
    pub history_max: Option<usize>,
}

/// Upgrades an installed addon: new arguments over the stored ones; the version stays unless
/// `version` or `latest` asks; objects the new render no longer has are deleted.
pub async fn upgrade(
    ctx: &Context,
    request: &UpgradeRequest,
    reporter: &dyn Reporter,
) -> Result<Vec<StepReport>> {
    let plan = upgrade_plan(ctx, request).await?;
    for note in &plan.notes {
        reporter.step(&format!("note: {note}"));
    }
    execute(
        &ctx.applier(),
        &plan,
        request.override_definitions,
        reporter,
    )
    .await
}

/// The plan of an upgrade (writes nothing): the installed addon at its version (unless
/// `version` or `latest`), new arguments over the stored ones.
pub async fn upgrade_plan(ctx: &Context, request: &UpgradeRequest) -> Result<Plan> {
    let all = ctx.state().installed().await?;
    let Some(current) = all.get(&request.name) else {
        return Err(Error::NotEnabledToUpgrade {
            addon: request.name.clone(),
        });
    };
    let version = match (&request.version, request.latest) {
        (Some(v), _) => Some(v.clone()),
        (None, true) => None,
        (None, false) => Some(current.version.clone()),
    };
    let reference = if current.registry.is_empty()
        || current.registry == crate::source::local::LOCAL_REGISTRY
    {
        request.name.clone()
    } else {
        format!("{}/{}", current.registry, request.name)
    };
    let enable_request = EnableRequest {
        reference,
        version,
        args: request.args.clone(),
        skip_version_check: request.skip_version_check,
        override_definitions: request.override_definitions,
        adopt: request.adopt,
        skip_api_check: request.skip_api_check,
        reset_values: request.reset_values,
        history: crate::state::revisions::History {
            max: request.history_max,
            description: None,
        },
        revision_package: None,
        overrides: crate::plan::Overrides::default(),
    };
    plan(&ctx.planner(), &enable_request, true).await
}
