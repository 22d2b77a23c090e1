//! The review of a plan before it is applied (and for `enable --dry-run`): what the addons
//! would do that a person should look at ([`crate::plan::protect::flags`]), plus what only the
//! clusters can tell — existing objects the addons would adopt (they exist and addonctl did not
//! create them) and CustomResourceDefinitions they would replace.
//!
//! Adopting needs consent: [`refuse_adoptions`] is the error `enable` returns without `--adopt`.

use std::collections::{BTreeMap, BTreeSet};

use kube::core::GroupVersionKind;
use serde_json::Value;

use super::direct;
use crate::apply::Applier;
use crate::cluster::Cluster;
use crate::context::{EngineChoice, NoopReporter};
use crate::model::wire::application_gvk;
use crate::plan::protect::{self, Flag, FlagKind};
use crate::plan::{Action, Plan, Step};
use crate::state::record::{ObjectRef, OtherRecords, Record};
use crate::{Error, Result};

/// Refuses an enable that would adopt `adoptions` (see [`direct::Prepared::adoptions`]).
pub fn refuse_adoptions(addon: &str, adoptions: &[String]) -> Result<()> {
    if adoptions.is_empty() {
        return Ok(());
    }
    Err(Error::WouldAdopt {
        addon: addon.to_owned(),
        objects: adoptions.to_vec(),
    })
}

/// The namespaces that are an addon's own: the system namespace, its `needNamespace`, its
/// topology's namespaces and the Namespaces it renders itself.
pub fn own_namespaces(step: &Step, system_namespace: &str) -> BTreeSet<String> {
    let rendered = &step.rendered;
    let mut own: BTreeSet<String> = step
        .package
        .metadata
        .need_namespace
        .iter()
        .cloned()
        .collect();
    own.insert(system_namespace.to_owned());
    own.extend(
        direct::placements(&rendered.application)
            .into_iter()
            .filter_map(|p| p.namespace),
    );
    own.extend(
        protect::authored(rendered)
            .iter()
            .filter(|r| r.object.get("kind").and_then(Value::as_str) == Some("Namespace"))
            .filter_map(|r| r.object.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_owned),
    );
    own
}

/// The flags of one step that need no cluster (see [`protect::flags`]).
pub fn step_flags(step: &Step, system_namespace: &str) -> Vec<Flag> {
    protect::flags(&step.rendered, &own_namespaces(step, system_namespace))
}

/// Every flag of a plan: see the module documentation. Reads the clusters, changes nothing.
pub async fn review(ctx: &Applier<'_>, plan: &Plan) -> Result<Vec<Flag>> {
    let records = ctx.state().records().await?;
    let direct_engine = match ctx.engine {
        EngineChoice::Direct => true,
        EngineChoice::Vela => false,
        EngineChoice::Auto => !ctx.cluster.serves(&application_gvk()).await?,
    };
    let mut flags = Vec::new();
    for step in plan.steps.iter().filter(|s| s.action != Action::Keep) {
        let rendered = &step.rendered;
        flags.extend(step_flags(step, ctx.namespace));
        let previous = records.iter().find(|r| r.name == rendered.name);
        flags.extend(replaced_crds(ctx.cluster, rendered, previous).await?);
        let held = previous
            .map(Record::inventory_or_planned)
            .unwrap_or_default();
        let adoptions =
            control_plane_adoptions(ctx.cluster, &rendered.outputs, &held, ctx.namespace).await?;
        flags.extend(adoptions.into_iter().map(|object| Flag {
            addon: rendered.name.clone(),
            kind: FlagKind::Adopts,
            object: format!("{object} on cluster `local`"),
            reason: "exists and addonctl did not create it: needs `--adopt`".to_owned(),
        }));
        if direct_engine {
            let held = previous
                .map(Record::dispatched_or_planned)
                .unwrap_or_default();
            let prepared = direct::prepare(
                ctx,
                &rendered.name,
                &rendered.application,
                &held,
                OtherRecords::of(&records, &rendered.name),
                &NoopReporter,
            )
            .await?;
            flags.extend(prepared.adoptions(&held).into_iter().map(|object| Flag {
                addon: rendered.name.clone(),
                kind: FlagKind::Adopts,
                object,
                reason: "exists and addonctl did not create it: needs `--adopt`".to_owned(),
            }));
        }
    }
    flags.sort_by(|a, b| (a.kind, &a.addon).cmp(&(b.kind, &b.addon)));
    Ok(flags)
}

/// The auxiliary outputs that exist on the control plane although the addon's record does not
/// list them and addonctl does not alone manage them: enabling would adopt them. (The system
/// namespace is addonctl's to create; definitions have their own ownership check.)
pub async fn control_plane_adoptions(
    cluster: &Cluster,
    outputs: &[(String, Value)],
    held: &[ObjectRef],
    ns: &str,
) -> Result<Vec<ObjectRef>> {
    // The outputs to look up, by kind and namespace: one metadata-only list each, at once.
    let mut wanted: BTreeMap<(String, String, Option<String>), Vec<ObjectRef>> = BTreeMap::new();
    for (_, object) in outputs {
        let Some(mut reference) = ObjectRef::of(object) else {
            continue;
        };
        if reference.kind == "Namespace" && reference.name == ns {
            continue;
        }
        let Some((_, caps)) = cluster.resource(&reference.gvk()).await? else {
            continue;
        };
        reference.namespace = (caps.scope == kube::discovery::Scope::Namespaced)
            .then(|| reference.namespace.clone().unwrap_or_else(|| ns.to_owned()));
        if held.iter().any(|o| o.same_object(&reference)) {
            continue;
        }
        wanted
            .entry((
                reference.api_version.clone(),
                reference.kind.clone(),
                reference.namespace.clone(),
            ))
            .or_default()
            .push(reference);
    }
    let listings = crate::cluster::bounded::until_failure(
        &wanted,
        crate::state::clusters::OBJECT_CONCURRENCY,
        |(kind, references)| async move {
            let names: Vec<&str> = references.iter().map(|r| r.name.as_str()).collect();
            super::direct::existing(cluster, kind, &names).await
        },
    )
    .await;
    let mut out = Vec::new();
    for (references, listing) in wanted.values().zip(listings) {
        let Some(listing) = listing else { continue };
        let (found, _) = listing?;
        // Existing and not created by addonctl.
        out.extend(
            references
                .iter()
                .filter(|r| found.get(&r.name) == Some(&false))
                .cloned(),
        );
    }
    Ok(out)
}

/// The CRDs among the control-plane outputs that already exist on the control plane (`cluster`)
/// and that the addon's record (`previous`) does not list: applying would replace them. One GET
/// per such CRD; none for an addon that renders no CRD. The CLI's review and the controller's
/// both ask this.
pub async fn replaced_crds(
    cluster: &Cluster,
    rendered: &crate::render::Rendered,
    previous: Option<&Record>,
) -> Result<Vec<Flag>> {
    let gvk = GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let mut out = Vec::new();
    for (key, object) in &rendered.outputs {
        let Some(reference) = ObjectRef::of(object) else {
            continue;
        };
        if reference.kind != "CustomResourceDefinition" {
            continue;
        }
        let listed = previous.is_some_and(|r| r.inventory.iter().any(|o| o.name == reference.name));
        if listed {
            continue;
        }
        if cluster.get(&gvk, None, &reference.name).await?.is_some() {
            out.push(Flag {
                addon: rendered.name.clone(),
                kind: FlagKind::CustomResourceDefinition,
                object: format!("{reference} (auxiliary output `{key}`) on cluster `local`"),
                reason: "already present and not created by addonctl for this addon: applying replaces it"
                    .to_owned(),
            });
        }
    }
    Ok(out)
}
