//! Definitions a plan brings that clash: already on the cluster and another addon's (or
//! nobody's), or brought by two addons of the same plan — what `--override-definitions` takes
//! over.

use std::collections::BTreeMap;

use serde_json::json;

use super::{Action, Plan};
use crate::cluster::Cluster;
use crate::render::normalize;
use crate::state::record::{self, ObjectRef};
use crate::Result;

/// A definition of a plan that already exists and is not the addon's own, or that two addons
/// of the plan both bring.
struct Clash {
    /// The addon of the plan that renders it.
    addon: String,
    reference: ObjectRef,
    /// The addon (or other owner) it belongs to; `None` = nobody.
    owner: Option<String>,
    /// `owner` is an addon of the same plan that brings it too (the object may not exist yet).
    in_plan: bool,
}

impl std::fmt::Display for Clash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let (true, Some(other)) = (self.in_plan, &self.owner) {
            return write!(
                f,
                "{} of addon `{}` is also brought by addon `{other}` of the same plan",
                self.reference, self.addon
            );
        }
        match &self.owner {
            Some(other) => write!(
                f,
                "{} of addon `{}` is owned by addon `{other}`",
                self.reference, self.addon
            ),
            None => write!(
                f,
                "{} of addon `{}` already exists and belongs to no addon",
                self.reference, self.addon
            ),
        }
    }
}

/// The definitions that two addons of the plan both bring (kind and name), each named by the
/// later addon with the earlier one as owner: KubeVela refuses such a plan unless overridden.
fn clashes_in_plan(plan: &Plan) -> Vec<Clash> {
    let mut brought: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut clashes = Vec::new();
    for step in plan.steps.iter().filter(|s| s.action != Action::Keep) {
        for definition in &step.rendered.definitions {
            let Some(reference) = ObjectRef::of(definition) else {
                continue;
            };
            let key = (reference.kind.clone(), reference.name.clone());
            match brought.get(&key) {
                Some(other) if other != &step.rendered.name => clashes.push(Clash {
                    addon: step.rendered.name.clone(),
                    reference,
                    owner: Some(other.clone()),
                    in_plan: true,
                }),
                Some(_) => {}
                None => {
                    brought.insert(key, step.rendered.name.clone());
                }
            }
        }
    }
    clashes
}

async fn clashes(cluster: &Cluster, namespace: &str, plan: &Plan) -> Result<Vec<Clash>> {
    let mut clashes = clashes_in_plan(plan);
    for step in plan.steps.iter().filter(|s| s.action != Action::Keep) {
        let ours_app = normalize::application_name(&step.rendered.name);
        let ours_record = record::record_name(&step.rendered.name);
        for definition in &step.rendered.definitions {
            let Some(reference) = ObjectRef::of(definition) else {
                continue;
            };
            let Some(existing) = cluster
                .get(&reference.gvk(), Some(namespace), &reference.name)
                .await?
            else {
                continue;
            };
            let owners = existing
                .metadata
                .owner_references
                .clone()
                .unwrap_or_default();
            let owner = owners
                .iter()
                .find(|o| o.controller == Some(true))
                .or(owners.first());
            let owner = match owner {
                Some(o) if o.name == ours_app || o.name == ours_record => continue,
                Some(o) => Some(
                    o.name
                        .strip_prefix("addon-record-")
                        .or_else(|| o.name.strip_prefix("addon-"))
                        .unwrap_or(&o.name)
                        .to_owned(),
                ),
                None => None,
            };
            clashes.push(Clash {
                addon: step.rendered.name.clone(),
                reference,
                owner,
                in_plan: false,
            });
        }
    }
    Ok(clashes)
}

/// Definitions of the plan that already exist and belong to another addon or to nobody.
pub async fn definition_conflicts(
    cluster: &Cluster,
    namespace: &str,
    plan: &Plan,
) -> Result<Vec<String>> {
    Ok(clashes(cluster, namespace, plan)
        .await?
        .iter()
        .map(ToString::to_string)
        .collect())
}

/// Takes over the definitions of the plan that other addons own: their owner references are
/// removed first, since the server refuses an object with two controller references (and
/// server-side apply keeps the references another field manager wrote).
pub async fn release_definitions(cluster: &Cluster, namespace: &str, plan: &Plan) -> Result<()> {
    for clash in clashes(cluster, namespace, plan).await? {
        if clash.owner.is_some() && !clash.in_plan {
            cluster
                .merge_patch(
                    &clash.reference.gvk(),
                    Some(namespace),
                    &clash.reference.name,
                    &json!({"metadata": {"ownerReferences": null}}),
                )
                .await?;
        }
    }
    Ok(())
}
