//! Drift checks from a [`Context`]: the record, the desired objects and the clients, found
//! through the stages (every call into `plan`, `apply` and `state` of this module is here).

use std::collections::BTreeSet;

use serde_json::Value;

use super::detect::{detect, DetectRequest, Target};
use super::{DriftCache, DriftSpec, Error, Policy, Report, Result};
use crate::context::Context;
use crate::plan::{plan, EnableRequest};
use crate::state::record::{ObjectRef, Record};

/// Checks an addon's objects on every cluster its record lists (policy `ignore`: nothing is
/// read), re-rendering the addon from its record's version and stored arguments.
pub async fn check(
    ctx: &Context,
    addon: &str,
    spec: &DriftSpec,
    cache: &mut DriftCache,
) -> Result<Report> {
    spec.validate()?;
    if spec.policy == Policy::Ignore {
        return Ok(Report {
            policy: Policy::Ignore,
            ..Report::default()
        });
    }
    let record = record(ctx, addon).await?;
    let desired = desired_objects(ctx, &record).await?;
    check_with(ctx, &record, &desired, spec, cache).await
}

/// [`check`] with the record and desired objects given (a controller keeps them per
/// revision, so that an unchanged addon is not planned again on every resync).
pub async fn check_with(
    ctx: &Context,
    record: &Record,
    desired: &[Value],
    spec: &DriftSpec,
    cache: &mut DriftCache,
) -> Result<Report> {
    spec.validate()?;
    let names: BTreeSet<String> = record.dispatched.keys().cloned().collect();
    let clients = ctx.state().clients(&names).await?;
    let targets = record
        .dispatched
        .iter()
        .map(|(name, inventory)| Target {
            name: name.clone(),
            cluster: clients
                .get(name)
                .cloned()
                .unwrap_or_else(|| Err(format!("no client for cluster `{name}`"))),
            objects: inventory
                .objects
                .iter()
                .filter_map(|o| Some((o.object.clone(), matching(desired, &o.object)?.clone())))
                .collect(),
        })
        .collect();
    let request = DetectRequest {
        addon: record.name.clone(),
        spec: spec.clone(),
        targets,
    };
    Ok(detect(&request, cache).await)
}

/// The addon's record.
pub async fn record(ctx: &Context, addon: &str) -> Result<Record> {
    ctx.state()
        .record(addon)
        .await?
        .ok_or_else(|| Error::NotEnabled {
            addon: addon.to_owned(),
            namespace: ctx.namespace.clone(),
        })
}

/// The objects the direct engine sends for the addon at its recorded version with its stored
/// arguments (each labelled `addons.oam.dev/name`, as dispatched).
pub async fn desired_objects(ctx: &Context, record: &Record) -> Result<Vec<Value>> {
    let request = EnableRequest {
        reference: record.name.clone(),
        version: Some(record.version.clone()),
        skip_version_check: true,
        skip_api_check: true,
        ..EnableRequest::default()
    };
    let planned = plan(&ctx.planner(), &request, false).await?;
    let Some(step) = planned
        .steps
        .iter()
        .find(|s| s.rendered.name == record.name)
    else {
        return Ok(Vec::new());
    };
    let objects = crate::apply::direct::component_objects(&step.rendered.application)?;
    Ok(objects
        .iter()
        .map(|o| crate::apply::direct::labelled(o, &record.name))
        .collect())
}

/// The desired object for a recorded one: the same kind and name, in the same namespace when
/// it names one (a topology's namespace may have moved it).
fn matching<'a>(desired: &'a [Value], object: &ObjectRef) -> Option<&'a Value> {
    let same = |d: &&Value, namespaced: bool| {
        ObjectRef::of(d).is_some_and(|r| {
            r.api_version == object.api_version
                && r.kind == object.kind
                && r.name == object.name
                && (!namespaced || r.namespace.is_none() || r.namespace == object.namespace)
        })
    };
    desired
        .iter()
        .find(|d| same(d, true))
        .or_else(|| desired.iter().find(|d| same(d, false)))
}
