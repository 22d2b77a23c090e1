//! Overrides that give target clusters other parameters need the direct engine: KubeVela's one
//! Application puts the same components on every cluster. There such an `Addon` is refused as a
//! staged upgrade is (`Degraded`, reason `OverridesUnsupported`, nothing applied) until its
//! overrides select every target or none, or the engine changes.

use super::crd::{condition, now, AddonStatus};
use super::engine;
use super::Result;
use crate::context::Context;
use crate::plan::Overrides;

/// The reason of the conditions of a refused `Addon`.
pub(super) const REASON: &str = "OverridesUnsupported";

/// Whether `overrides` set clusters apart while KubeVela deploys the addons; if so, the
/// conditions say why and what to do. Only what is `applying` is looked at: an unchanged
/// `Addon` reads nothing more.
pub(super) async fn refused(
    ctx: &Context,
    addon: &str,
    overrides: &Overrides,
    applying: bool,
    status: &mut AddonStatus,
) -> Result<bool> {
    if !applying || overrides.groups.is_empty() || !engine::uses_vela(ctx).await? {
        return Ok(false);
    }
    let mut clusters: Vec<String> = overrides
        .groups
        .iter()
        .flat_map(|g| g.clusters.iter().cloned())
        .collect();
    clusters.sort();
    clusters.dedup();
    let message = crate::Error::OverridesNeedDirectEngine {
        addon: addon.to_owned(),
        clusters,
    }
    .to_string();
    let generation = status.observed_generation;
    let now = now();
    for (type_, value) in [("Degraded", true), ("Progressing", false), ("Ready", false)] {
        status.set_condition(condition(type_, value, REASON, &message, generation), &now);
    }
    tracing::warn!(addon, "{message}");
    Ok(true)
}
