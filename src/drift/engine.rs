//! Drift checks from a [`Context`]: the record, the desired objects and the clients, found
//! through the stages (every call into `plan`, `apply` and `state` of this module is here).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::detect::{detect, DetectRequest, Target};
use super::{ClusterError, DriftCache, DriftSpec, Error, Policy, Report, Result};
use crate::context::Context;
use crate::plan::{plan, EnableRequest};
use crate::state::record::{ClusterInventory, ObjectRef, OtherRecords, Record};

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
    desired: &Desired,
    spec: &DriftSpec,
    cache: &mut DriftCache,
) -> Result<Report> {
    check_vouched(ctx, record, desired, spec, cache, BTreeSet::new(), None).await
}

/// What the other addons' records list, from a caller that holds them (a controller's watch
/// cache); `None` when it cannot tell (a sharded record): they are read.
pub type KnownOthers<'a> = &'a (dyn Fn() -> Option<OtherRecords> + Send + Sync);

/// [`check_with`], the `vouched` clusters not listed ([`DetectRequest::vouched`]); the other
/// addons' records from `known` when given (asked only when some cluster is listed), else read.
pub async fn check_vouched(
    ctx: &Context,
    record: &Record,
    desired: &Desired,
    spec: &DriftSpec,
    cache: &mut DriftCache,
    vouched: BTreeSet<String>,
    known: Option<KnownOthers<'_>>,
) -> Result<Report> {
    spec.validate()?;
    let (compared, skipped) = held_apart(record);
    let names: BTreeSet<String> = compared.iter().map(|(name, _)| (*name).clone()).collect();
    let clients = ctx.state().clients(&names).await?;
    // What the other addons' records list: an object two addons render carries the label of
    // the last one (read only when a cluster is listed at all).
    let others = if names.iter().all(|n| vouched.contains(n)) {
        OtherRecords::default()
    } else if let Some(others) = known.and_then(|known| known()) {
        others
    } else {
        OtherRecords::of(&ctx.state().records().await?, &record.name)
    };
    // Each parameter set's objects, keyed once and shared by every cluster that got it (a
    // fleet's clusters mostly share one).
    let mut indexed: Vec<(*const Value, Indexed<'_>)> = Vec::new();
    let targets = compared
        .into_iter()
        .map(|(name, inventory)| Target {
            name: name.clone(),
            cluster: clients
                .get(name)
                .cloned()
                .unwrap_or_else(|| Err(format!("no client for cluster `{name}`"))),
            objects: {
                let objects = desired.for_cluster(record, name);
                let at = indexed.iter().position(|(p, _)| *p == objects.as_ptr());
                let at = at.unwrap_or_else(|| {
                    indexed.push((objects.as_ptr(), Indexed::of(objects)));
                    indexed.len() - 1
                });
                let index = &indexed[at].1;
                inventory
                    .objects
                    .iter()
                    .filter_map(|o| Some((o.object.clone(), index.matching(&o.object)?)))
                    .collect()
            },
            shared: others
                .dispatched
                .get(name)
                .map(|listed| {
                    inventory
                        .objects
                        .iter()
                        .filter_map(|o| {
                            let (addon, _) = listed.get(&o.object)?;
                            Some((o.object.clone(), addon.clone()))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    let request = DetectRequest {
        addon: record.name.clone(),
        spec: spec.clone(),
        targets,
        vouched,
    };
    let mut report = detect(request, cache).await;
    if report.policy != Policy::Ignore {
        report.skipped = skipped;
    }
    if !report.recreated.is_empty() {
        if let Err(e) = record_recreated(ctx, &record.name, &report.recreated).await {
            report.errors.push(ClusterError {
                cluster: crate::model::wire::LOCAL_CLUSTER.to_owned(),
                error: format!(
                    "the objects created again are not in the record yet (the next check tries again): {e}"
                ),
            });
        }
    }
    Ok(report)
}

/// Writes the uids of objects a correction created again into the addon's record: they are
/// addonctl's (created), so disable and detach delete them.
async fn record_recreated(
    ctx: &Context,
    addon: &str,
    recreated: &[(String, ObjectRef, String)],
) -> crate::Result<()> {
    crate::state::record::update(&ctx.cluster, &ctx.namespace, addon, |stored| {
        let mut record = stored?;
        let mut changed = false;
        for (cluster, object, uid) in recreated {
            let Some(inventory) = record.dispatched.get_mut(cluster) else {
                continue;
            };
            for held in &mut inventory.objects {
                if &held.object == object && (&held.uid != uid || !held.created) {
                    held.uid.clone_from(uid);
                    held.created = true;
                    changed = true;
                }
            }
        }
        changed.then_some(record)
    })
    .await
}

/// The clusters to compare (those at the record's current revision) and those a staged rollout
/// holds at another version or revision, with the reason they are not compared.
fn held_apart(record: &Record) -> (Vec<(&String, &ClusterInventory)>, Vec<ClusterError>) {
    let mut compared = Vec::new();
    let mut skipped = Vec::new();
    for (name, inventory) in &record.dispatched {
        if record.runs_current(name) {
            compared.push((name, inventory));
            continue;
        }
        let held = record
            .cluster_revision(name)
            .unwrap_or_else(|| record.current_revision());
        let error = if held.version == record.version {
            let number = |n: Option<u32>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
            format!(
                "held at revision {} while revision {} ({}, other parameters) is rolled out stage by stage: not compared with its objects until its stage applies it",
                number(held.number),
                number(record.current_revision().number),
                record.version
            )
        } else {
            format!(
                "held at {} while {} is rolled out stage by stage: not compared with {}'s objects until its stage applies it",
                held.version, record.version, record.version
            )
        };
        skipped.push(ClusterError {
            cluster: name.clone(),
            error,
        });
    }
    (compared, skipped)
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

/// The objects the direct engine sends for an addon, as its record says each cluster got
/// them: with the stored arguments, and with each parameter set of [`Record::overrides`].
#[derive(Debug, Clone, Default)]
pub struct Desired {
    /// With the stored arguments (each labelled `addons.oam.dev/name`, as dispatched).
    pub objects: Vec<Value>,
    /// With each parameter set laid over them, by key.
    pub variants: BTreeMap<String, Vec<Value>>,
}

impl Desired {
    /// What `cluster` should hold: the objects of the parameter set the record says it got.
    pub fn for_cluster(&self, record: &Record, cluster: &str) -> &[Value] {
        record
            .cluster_parameters(cluster)
            .and_then(|(key, _)| self.variants.get(key))
            .unwrap_or(&self.objects)
    }
}

/// The objects the direct engine sends for the addon at its recorded version with its stored
/// arguments, and with each parameter set its record lists over them (rendered once per set).
pub async fn desired_objects(ctx: &Context, record: &Record) -> Result<Desired> {
    let overrides = crate::plan::overrides::stored(record, None);
    let request = EnableRequest {
        reference: record.name.clone(),
        version: Some(record.version.clone()),
        skip_version_check: true,
        skip_api_check: true,
        overrides,
        ..EnableRequest::default()
    };
    let planned = plan(&ctx.planner(), &request, false).await?;
    let Some(step) = planned
        .steps
        .iter()
        .find(|s| s.rendered.name == record.name)
    else {
        return Ok(Desired::default());
    };
    let dispatched = |application: &Value| -> Result<Vec<Value>> {
        let objects = crate::apply::direct::component_objects(application)?;
        Ok(objects
            .iter()
            .map(|o| crate::apply::direct::labelled(o, &record.name))
            .collect())
    };
    let mut desired = Desired {
        objects: dispatched(&step.rendered.application)?,
        variants: BTreeMap::new(),
    };
    for variant in &step.variants {
        desired
            .variants
            .insert(variant.key.clone(), dispatched(&variant.application)?);
    }
    Ok(desired)
}

/// The desired object for a recorded one: the same kind and name, in the same namespace when
/// it names one (a topology's namespace may have moved it).
/// One parameter set's desired objects, each with its reference read once (borrowed) and its
/// value shared.
struct Indexed<'a> {
    objects: Vec<(Key<'a>, Arc<Value>)>,
}

/// An object's `(apiVersion, kind, namespace, name)`, borrowed from it.
type Key<'a> = (&'a str, &'a str, Option<&'a str>, &'a str);

fn key_of(object: &Value) -> Option<Key<'_>> {
    let metadata = object.get("metadata");
    Some((
        object.get("apiVersion")?.as_str()?,
        object.get("kind")?.as_str()?,
        metadata
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str),
        metadata?.get("name")?.as_str()?,
    ))
}

impl<'a> Indexed<'a> {
    fn of(desired: &'a [Value]) -> Self {
        Indexed {
            objects: desired
                .iter()
                .filter_map(|d| Some((key_of(d)?, Arc::new(d.clone()))))
                .collect(),
        }
    }

    /// The desired form of `object`: the one of the same kind and name in its namespace (or
    /// without one), else in any namespace.
    fn matching(&self, object: &ObjectRef) -> Option<Arc<Value>> {
        let same = |(api_version, kind, namespace, name): &Key<'_>, namespaced: bool| {
            *api_version == object.api_version
                && *kind == object.kind
                && *name == object.name
                && (!namespaced || namespace.is_none() || *namespace == object.namespace.as_deref())
        };
        self.objects
            .iter()
            .find(|(k, _)| same(k, true))
            .or_else(|| self.objects.iter().find(|(k, _)| same(k, false)))
            .map(|(_, v)| Arc::clone(v))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::record::ClusterRevision;

    #[test]
    fn clusters_held_at_another_version_are_not_compared_and_say_why() {
        let mut record: Record = serde_json::from_value(json!({
            "name": "a", "version": "1.1.0", "registry": "local", "installedBy": "user",
            "argsHash": "", "application": false,
            // m1: written before clusters had versions (the record's); m2 on 1.1.0; m3 held.
            "dispatched": {"m1": {"objects": []}, "m2": {"objects": []}, "m3": {"objects": []}},
        }))
        .unwrap();
        let on = |version: &str| {
            Some(ClusterRevision {
                version: version.to_owned(),
                number: None,
                parameters: None,
            })
        };
        if let Some(m2) = record.dispatched.get_mut("m2") {
            m2.revision = on("1.1.0");
        }
        if let Some(m3) = record.dispatched.get_mut("m3") {
            m3.revision = on("1.0.0");
        }

        let (compared, skipped) = held_apart(&record);

        let compared: Vec<&str> = compared.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(compared, ["m1", "m2"]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].cluster, "m3");
        assert!(
            skipped[0].error.contains("held at 1.0.0"),
            "{:?}",
            skipped[0]
        );
    }
}
