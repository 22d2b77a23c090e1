//! What applying a plan would change, without changing anything: `addonctl diff` and
//! `enable`/`upgrade --dry-run=server`.
//!
//! Expected flow ([`diff`], per addon of the plan that is not kept):
//! 1. the parameter diff: the stored arguments against those the enable would store
//!    ([`params`]), `secret()` parameters never shown;
//! 2. the control plane: every object `enable` applies there (the Application with KubeVela,
//!    definitions, ConfigMaps, views, auxiliary outputs with their owner reference, the argument
//!    Secret) server-side applied as a dry run (`dryRun=All`, field manager `addonctl`, forced)
//!    and compared with the live object, both stripped of what the server sets on every write
//!    ([`text::strip`]); a server rejection (validation, admission) is reported with the object;
//! 3. with the direct engine, each target cluster the same way (the topology resolved against
//!    the joined clusters now, objects labelled and placed as the engine places them); through
//!    KubeVela the managed-cluster objects live inside the Application, whose diff shows them;
//! 4. deletions: what the record lists and the new render does not, decided by
//!    [`crate::apply::deletion`]'s rules in their dry-run mode (deleted, given back or kept).
//!
//! Guarantees: nothing is written (every apply is a dry run, which the request counters do not
//! count as a write; no lock, no record); Secret data and `secret()` values are masked, a
//! change only to them shows as `(secret changed)`.

mod objects;
pub mod params;
pub mod text;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::apply::{self, deletion, direct};
use crate::cluster::set::LOCAL;
use crate::context::{Context, EngineChoice};
use crate::model::wire::{application_gvk, application_name, args_secret_name, secret_gvk};
use crate::plan::{Action, Plan, Step};
use crate::state::record::{self, DispatchedObject, ObjectRef, OtherRecords, Record};
use crate::state::Installed;
use crate::Result;

pub use params::{ParamChange, ParamChangeKind};

/// What would happen to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Change {
    /// It does not exist: created.
    Create,
    /// It exists and fields would change.
    Change,
    /// It exists and nothing would change.
    Unchanged,
    /// No longer rendered: deleted.
    Delete,
    /// No longer rendered, adopted: addonctl's fields removed, the object stays.
    GiveBack,
    /// No longer rendered, but kept (the message says why).
    Keep,
    /// Its kind is not served by the control plane: `enable` skips it with a note.
    Skip,
    /// The server would refuse it (the message is the server's).
    Reject,
    /// It exists and addonctl did not create it: `enable` refuses it without `--adopt`.
    Conflict,
}

/// One object's change.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectChange {
    /// The cluster (`local` = the control plane).
    pub cluster: String,
    /// `apiVersion`.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace, for namespaced objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// What would happen.
    pub change: Change,
    /// A unified diff (live → after) of a created or changed object, secrets masked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Why: the server's rejection, why an object is kept or shown as rendered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl std::fmt::Display for ObjectChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} `{ns}/{}`", self.kind, self.name)?,
            None => write!(f, "{} `{}`", self.kind, self.name)?,
        }
        write!(f, " on cluster `{}`", self.cluster)
    }
}

/// One addon's changes.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddonDiff {
    /// The addon.
    pub name: String,
    /// The version installed now, if any.
    pub installed_version: Option<String>,
    /// The version the plan applies.
    pub version: String,
    /// What the plan does with it.
    pub action: Action,
    /// The engine that would deploy its components.
    pub engine: EngineChoice,
    /// The arguments that would change.
    pub parameters: Vec<ParamChange>,
    /// Per cluster, the parameters it gets over the arguments (an `Addon`'s overrides) that
    /// would change.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cluster_parameters: Vec<ClusterParamChanges>,
    /// Every object, per cluster, with what would happen to it.
    pub objects: Vec<ObjectChange>,
    /// Notes (KubeVela deploys the managed-cluster objects, a cluster that cannot be reached).
    pub notes: Vec<String>,
    /// Clusters that could not be compared (`cluster: reason`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// The parameters one cluster gets over the addon's arguments that would change.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterParamChanges {
    /// The cluster.
    pub cluster: String,
    /// What changes, as for the arguments: a parameter no longer set over them is reset
    /// (the arguments' value applies).
    pub changes: Vec<ParamChange>,
}

/// What applying a plan would change.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    /// One entry per addon the plan applies (kept addons change nothing).
    pub addons: Vec<AddonDiff>,
}

impl Diff {
    /// Whether anything would change: an argument, a version, or an object created, changed,
    /// deleted or given back.
    pub fn has_differences(&self) -> bool {
        self.addons.iter().any(|a| {
            !a.parameters.is_empty()
                || !a.cluster_parameters.is_empty()
                || a.installed_version.as_deref() != Some(a.version.as_str())
                || a.objects.iter().any(|o| {
                    matches!(
                        o.change,
                        Change::Create
                            | Change::Change
                            | Change::Delete
                            | Change::GiveBack
                            | Change::Conflict
                    )
                })
        })
    }

    /// The objects the server would refuse.
    pub fn rejections(&self) -> impl Iterator<Item = &ObjectChange> {
        self.addons
            .iter()
            .flat_map(|a| &a.objects)
            .filter(|o| o.change == Change::Reject)
    }

    /// The existing objects `enable` would refuse to adopt.
    pub fn conflicts(&self) -> impl Iterator<Item = &ObjectChange> {
        self.addons
            .iter()
            .flat_map(|a| &a.objects)
            .filter(|o| o.change == Change::Conflict)
    }

    /// Whether a cluster could not be compared.
    pub fn incomplete(&self) -> bool {
        self.addons.iter().any(|a| !a.failed.is_empty())
    }
}

/// What applying `plan` would change; see the module documentation. Writes nothing.
pub async fn diff(ctx: &Context, plan: &Plan) -> Result<Diff> {
    let installed = ctx.state().installed().await?;
    let records = ctx.state().records().await?;
    let mut addons = Vec::new();
    for step in plan.steps.iter().filter(|s| s.action != Action::Keep) {
        let others = OtherRecords::of(&records, &step.rendered.name);
        addons.push(
            addon_diff(
                ctx,
                step,
                installed.get(&step.rendered.name),
                &others,
                plan.adopt,
            )
            .await?,
        );
    }
    Ok(Diff { addons })
}

async fn addon_diff(
    ctx: &Context,
    step: &Step,
    installed: Option<&Installed>,
    others: &OtherRecords,
    adopt: bool,
) -> Result<AddonDiff> {
    let rendered = &step.rendered;
    let stored = match installed {
        Some(_) => ctx.state().stored_args(&rendered.name).await?,
        None => Map::new(),
    };
    let mut secrets = rendered.secret_values();
    secrets.extend(rendered.secret_values_in(&Value::Object(stored.clone())));
    let vela = apply::uses_vela(&ctx.applier()).await?;
    let mut diff = AddonDiff {
        name: rendered.name.clone(),
        installed_version: installed.map(|i| i.version.clone()),
        version: rendered.version.clone(),
        action: step.action,
        engine: if vela {
            EngineChoice::Vela
        } else {
            EngineChoice::Direct
        },
        parameters: params::diff(&stored, &rendered.args, &rendered.schema),
        cluster_parameters: cluster_parameters(step, installed.and_then(|i| i.record.as_ref())),
        objects: Vec::new(),
        notes: Vec::new(),
        failed: Vec::new(),
    };
    let scope = Scope {
        step,
        record: installed.and_then(|i| i.record.as_ref()),
        others,
        secrets: &secrets,
        adopt,
    };
    control_plane(ctx, &scope, vela, &mut diff).await?;
    if vela {
        diff.notes.push(format!(
            "managed-cluster objects are not compared through KubeVela: KubeVela deploys the components of the Application `{}` to the clusters itself, so only the Application's own diff shows what changes there",
            application_name(&rendered.name)
        ));
    } else {
        clusters(ctx, &scope, &mut diff).await?;
    }
    Ok(diff)
}

/// The parameters each cluster gets over the arguments, as the record has them and as the plan
/// gives them, where they differ (a variant's clusters; a cluster the record lists with a
/// parameter set and the plan gives none).
fn cluster_parameters(step: &Step, record: Option<&Record>) -> Vec<ClusterParamChanges> {
    let empty = Map::new();
    let mut clusters: BTreeSet<&String> = step.variants.iter().flat_map(|v| &v.clusters).collect();
    if let Some(record) = record {
        clusters.extend(
            record
                .dispatched
                .keys()
                .filter(|c| record.cluster_parameters(c).is_some()),
        );
    }
    clusters
        .into_iter()
        .filter_map(|cluster| {
            let before = record
                .and_then(|r| r.cluster_parameters(cluster))
                .map_or(&empty, |(_, p)| p);
            let after = step.variant_of(cluster).map_or(&empty, |v| &v.parameters);
            let changes = params::diff(before, after, &step.rendered.schema);
            (!changes.is_empty()).then(|| ClusterParamChanges {
                cluster: cluster.clone(),
                changes,
            })
        })
        .collect()
}

/// What one addon's diff compares against.
struct Scope<'a> {
    /// The plan's step.
    step: &'a Step,
    /// The addon's record, when installed by addonctl.
    record: Option<&'a Record>,
    /// The other addons' records.
    others: &'a OtherRecords,
    /// Values to mask.
    secrets: &'a [String],
    /// `--adopt`: existing objects are adopted, not conflicts.
    adopt: bool,
}

/// The control plane's objects, in apply order, and what the record lists there and the new
/// render does not.
async fn control_plane(
    ctx: &Context,
    scope: &Scope<'_>,
    vela: bool,
    diff: &mut AddonDiff,
) -> Result<()> {
    let Scope {
        step,
        record,
        others,
        secrets,
        adopt,
    } = *scope;
    let rendered = &step.rendered;
    let ns = ctx.namespace.as_str();
    let owner = owner(ctx, &rendered.name, vela).await?;
    let with_owner = |o: &Value| match &owner {
        Some(owner) => apply::with_owner(o, owner),
        None => o.clone(),
    };
    let mut ordered: Vec<Value> = Vec::new();
    if vela {
        ordered.push(rendered.application.clone());
    }
    ordered.extend(
        apply::apply_order(
            &rendered.outputs,
            [
                &rendered.definitions,
                &rendered.config_maps,
                &rendered.views,
            ],
        )
        .into_iter()
        .map(with_owner),
    );
    ordered.extend(rendered.args_secret.iter().map(with_owner));
    let site = objects::Site {
        cluster: &ctx.cluster,
        name: LOCAL,
        default_namespace: ns,
        namespace_override: None,
        skip_unserved: true,
        secrets,
        adoption: (!adopt).then(|| objects::Adoption {
            only: Some(&rendered.outputs),
            held: record.map(|r| r.inventory.clone()).unwrap_or_default(),
            system_namespace: ns,
        }),
    };
    let (changes, inventory) = objects::compare_all(&site, &ordered).await?;
    add_changes(diff, changes);
    if rendered.args_secret.is_none() {
        let name = args_secret_name(&rendered.name);
        if ctx
            .cluster
            .get(&secret_gvk(), Some(ns), &name)
            .await?
            .is_some()
        {
            diff.objects
                .push(deleted(LOCAL, &secret_ref(ns, &name), Change::Delete, None));
        }
    }
    let Some(record) = record else {
        return Ok(());
    };
    let mut previous = record.clone();
    previous.inventory = record.inventory_or_planned();
    let stale = apply::stale(&previous, &inventory, ns);
    let listed = apply::control_plane_listing(others);
    let site = deletion::Site {
        cluster: &ctx.cluster,
        name: LOCAL,
        system_namespace: ns,
        others: Some(&listed),
        dry_run: true,
        trust_record: true,
    };
    removals(&site, &stale, diff).await;
    Ok(())
}

/// The owner reference `enable` gives the control-plane objects: the Application's with
/// KubeVela, else the record's; `None` while it does not exist (the objects are new too).
async fn owner(ctx: &Context, addon: &str, vela: bool) -> Result<Option<Value>> {
    let (gvk, kind, api_version, name) = if vela {
        (
            application_gvk(),
            "Application",
            "core.oam.dev/v1beta1",
            application_name(addon),
        )
    } else {
        (secret_gvk(), "Secret", "v1", record::record_name(addon))
    };
    let live = ctx.cluster.get(&gvk, Some(&ctx.namespace), &name).await?;
    Ok(live.and_then(|live| {
        let uid = live.metadata.uid?;
        Some(apply::owner_reference(kind, api_version, &name, &uid))
    }))
}

fn secret_ref(ns: &str, name: &str) -> ObjectRef {
    ObjectRef {
        api_version: "v1".to_owned(),
        kind: "Secret".to_owned(),
        namespace: Some(ns.to_owned()),
        name: name.to_owned(),
    }
}

fn deleted(cluster: &str, object: &ObjectRef, change: Change, why: Option<String>) -> ObjectChange {
    ObjectChange {
        cluster: cluster.to_owned(),
        api_version: object.api_version.clone(),
        kind: object.kind.clone(),
        namespace: object.namespace.clone(),
        name: object.name.clone(),
        change,
        diff: None,
        message: why,
    }
}

/// What a removal of `stale` would do, by the deletion rules (a dry run of them).
async fn removals(site: &deletion::Site<'_>, stale: &[DispatchedObject], diff: &mut AddonDiff) {
    if stale.is_empty() {
        return;
    }
    let refs: Vec<&DispatchedObject> = stale.iter().collect();
    let removal = deletion::remove(site, &refs).await;
    let entry = |e: &deletion::Entry, change: Change| ObjectChange {
        cluster: e.cluster.clone(),
        api_version: stale
            .iter()
            .find(|s| s.object.kind == e.kind && s.object.name == e.name)
            .map(|s| s.object.api_version.clone())
            .unwrap_or_default(),
        kind: e.kind.clone(),
        namespace: e.namespace.clone(),
        name: e.name.clone(),
        change,
        diff: None,
        message: e.reason.clone(),
    };
    diff.objects
        .extend(removal.deleted.iter().map(|e| entry(e, Change::Delete)));
    diff.objects.extend(
        removal
            .given_back
            .iter()
            .map(|e| entry(e, Change::GiveBack)),
    );
    diff.objects
        .extend(removal.kept.iter().map(|e| entry(e, Change::Keep)));
    if let Some((reason, _)) = removal.failure {
        diff.failed.push(format!("{}: {reason}", site.name));
    }
}

/// With the direct engine: each target cluster's objects, and what the record lists on a
/// cluster that the new render no longer puts there.
async fn clusters(ctx: &Context, scope: &Scope<'_>, diff: &mut AddonDiff) -> Result<()> {
    let rendered = &scope.step.rendered;
    let placements = direct::placements(&rendered.application);
    let objects_of = |application: &Value| -> Result<Vec<Value>> {
        let mut objects: Vec<Value> = direct::component_objects(application)?
            .iter()
            .map(|o| direct::labelled(o, &rendered.name))
            .collect();
        objects.sort_by_key(direct::rank);
        Ok(objects)
    };
    let objects = objects_of(&rendered.application)?;
    // The clusters the overrides give other parameters get their variant's components.
    let variant_objects: Vec<Vec<Value>> = scope
        .step
        .variants
        .iter()
        .map(|v| objects_of(&v.application))
        .collect::<Result<_>>()?;
    let infos: Vec<crate::cluster::set::ClusterInfo> = ctx
        .state()
        .joined()
        .await?
        .into_iter()
        .map(|(info, _)| info)
        .collect();
    let targets = direct::resolve_targets(&placements, &infos)?;
    let joined: Vec<&String> = infos.iter().map(|info| &info.name).collect();
    let previous: BTreeMap<String, record::ClusterInventory> = scope
        .record
        .map(Record::dispatched_or_planned)
        .unwrap_or_default();
    let mut names: BTreeSet<String> = targets.keys().cloned().collect();
    names.extend(
        previous
            .keys()
            .filter(|n| *n == LOCAL || joined.contains(n))
            .cloned(),
    );
    let clients = ctx.state().clients(&names).await?;
    for name in &names {
        let client = match clients.get(name) {
            Some(Ok(client)) => client,
            Some(Err(e)) => {
                diff.failed.push(format!("{name}: {e}"));
                continue;
            }
            None => continue,
        };
        let mut references = Vec::new();
        if let Some(namespace) = targets.get(name) {
            let site = objects::Site {
                cluster: client,
                name,
                default_namespace: &ctx.namespace,
                namespace_override: namespace.as_deref(),
                skip_unserved: false,
                secrets: scope.secrets,
                adoption: (!scope.adopt).then(|| objects::Adoption {
                    only: None,
                    held: previous
                        .get(name)
                        .map(|p| p.objects.iter().map(|o| o.object.clone()).collect())
                        .unwrap_or_default(),
                    system_namespace: &ctx.namespace,
                }),
            };
            let objects = scope
                .step
                .variants
                .iter()
                .position(|v| v.clusters.contains(name))
                .and_then(|i| variant_objects.get(i))
                .unwrap_or(&objects);
            match objects::compare_all(&site, objects).await {
                Ok((changes, placed)) => {
                    add_changes(diff, changes);
                    references = placed;
                }
                Err(e) => {
                    diff.failed.push(format!("{name}: {e}"));
                    continue;
                }
            }
        }
        let held = previous.get(name).map_or(&[][..], |p| p.objects.as_slice());
        let stale: Vec<DispatchedObject> = held
            .iter()
            .rev()
            .filter(|o| !references.iter().any(|r| r.same_object(&o.object)))
            .cloned()
            .collect();
        let site = deletion::Site {
            cluster: client,
            name,
            system_namespace: &ctx.namespace,
            others: scope.others.dispatched.get(name),
            dry_run: true,
            trust_record: false,
        };
        removals(&site, &stale, diff).await;
    }
    Ok(())
}

/// Adds `changes` to `diff`, without a second creation of a namespace already shown created
/// on the same cluster (the control plane's objects and those dispatched to it may both need
/// the one namespace: the apply creates it once).
fn add_changes(diff: &mut AddonDiff, changes: Vec<ObjectChange>) {
    for change in changes {
        let again = change.kind == "Namespace"
            && change.change == Change::Create
            && diff.objects.iter().any(|shown| {
                shown.kind == "Namespace"
                    && shown.change == Change::Create
                    && shown.cluster == change.cluster
                    && shown.name == change.name
            });
        if !again {
            diff.objects.push(change);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn namespace_created(cluster: &str, name: &str) -> ObjectChange {
        ObjectChange {
            cluster: cluster.to_owned(),
            api_version: "v1".to_owned(),
            kind: "Namespace".to_owned(),
            namespace: None,
            name: name.to_owned(),
            change: Change::Create,
            diff: None,
            message: None,
        }
    }

    #[test]
    fn a_namespace_two_groups_of_objects_need_is_shown_created_once_per_cluster() {
        let mut diff = AddonDiff {
            name: "a".to_owned(),
            installed_version: None,
            version: "1.0.0".to_owned(),
            action: Action::Install,
            engine: EngineChoice::Direct,
            parameters: Vec::new(),
            cluster_parameters: Vec::new(),
            objects: Vec::new(),
            notes: Vec::new(),
            failed: Vec::new(),
        };
        add_changes(&mut diff, vec![namespace_created("local", "apps")]);
        add_changes(
            &mut diff,
            vec![
                namespace_created("local", "apps"),
                namespace_created("east", "apps"),
                namespace_created("local", "other"),
            ],
        );
        let shown: Vec<(&str, &str)> = diff
            .objects
            .iter()
            .map(|o| (o.cluster.as_str(), o.name.as_str()))
            .collect();
        assert_eq!(
            shown,
            [("local", "apps"), ("east", "apps"), ("local", "other")]
        );
    }
}
