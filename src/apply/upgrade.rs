//! `upgrade`: an installed addon planned again with new arguments over the stored ones.

use super::{execute_planned, StepReport};
use crate::context::{Context, Reporter};
use crate::plan::{plan, EnableRequest, Plan};
use crate::{Error, Result};

/// What to upgrade: the installed addon, and what an enable of it is asked for.
#[derive(Debug, Clone, Default)]
pub struct UpgradeRequest {
    /// The installed addon.
    pub name: String,
    /// Move to the newest version (unless `enable.version` names one).
    pub latest: bool,
    /// The version to move to (`None`: the installed one, unless `latest`), the arguments merged
    /// over the stored ones (parsed once against the schema of the version upgraded to), the
    /// checks and what the history keeps, as for an enable. Its `reference` is not read: the
    /// installed addon's registry and `name` are.
    pub enable: EnableRequest,
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
        reporter.event(&crate::context::Progress::Note {
            message: note.clone(),
        });
    }
    execute_planned(ctx, &plan, &request.enable, reporter).await
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
    let version = match (&request.enable.version, request.latest) {
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
        ..request.enable.clone()
    };
    plan(&ctx.planner(), &enable_request, true).await
}
