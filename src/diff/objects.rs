//! One cluster's side of a diff: each object server-side applied as a dry run (`dryRun=All`,
//! field manager `addonctl`, forced, as `enable` applies it) and compared with the live object.

use std::collections::{BTreeMap, BTreeSet};

use futures::stream::{self, StreamExt};
use kube::core::GroupVersionKind;
use serde_json::Value;

use super::text::{mask_pair, mask_strings, strip, unified, yaml};
use super::{Change, ObjectChange};
use crate::cluster::{self, Cluster};
use crate::model::secret::mask_text;
use crate::state::record::ObjectRef;
use crate::state::to_value;

/// Requests in flight per cluster.
const IN_FLIGHT: usize = 8;

/// Where the objects go.
pub(super) struct Site<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// Its name (`local` for the control plane).
    pub name: &'a str,
    /// The namespace of namespaced objects that name none (the system namespace).
    pub default_namespace: &'a str,
    /// A topology policy's namespace, forced on namespaced objects.
    pub namespace_override: Option<&'a str>,
    /// Kinds the cluster does not serve: skipped (the control plane skips them with a note) or
    /// refused (a managed cluster fails on them).
    pub skip_unserved: bool,
    /// Values to mask wherever they appear.
    pub secrets: &'a [String],
    /// Which existing objects `enable` would refuse to adopt; `None` with `--adopt`.
    pub adoption: Option<Adoption<'a>>,
}

/// The objects that, existing and not made by addonctl, `enable` refuses without `--adopt`.
pub(super) struct Adoption<'a> {
    /// The objects the check applies to (the control plane's auxiliary outputs); `None`: all.
    pub only: Option<&'a [(String, Value)]>,
    /// What the addon's record holds already (created or adopted before): never a conflict.
    pub held: Vec<ObjectRef>,
    /// The system namespace, addonctl's to use: never a conflict.
    pub system_namespace: &'a str,
}

impl Adoption<'_> {
    /// Whether `live`, stored as `reference`, would need `--adopt`.
    fn needed(&self, reference: &ObjectRef, live: &kube::api::DynamicObject) -> bool {
        let checked = self.only.is_none_or(|only| {
            only.iter().filter_map(|(_, o)| ObjectRef::of(o)).any(|o| {
                o.api_version == reference.api_version
                    && o.kind == reference.kind
                    && o.name == reference.name
            })
        });
        let system = reference.kind == "Namespace" && reference.name == self.system_namespace;
        checked
            && !system
            && !self.held.iter().any(|h| h.same_object(reference))
            && !crate::apply::deletion::created_by_us(live)
    }
}

/// What a conflict says.
const NEEDS_ADOPT: &str =
    "exists and addonctl did not create it: `enable` refuses it without `--adopt`";

/// How one object is looked at.
enum Mode {
    /// Server-side dry run.
    DryRun,
    /// Not servable yet (its namespace or CRD comes with the addon): shown as rendered.
    Rendered(&'static str),
    /// Its kind is not served.
    NotServed,
}

/// Compares every object with the live one. Returns the changes (a missing namespace the
/// apply would create first included) and the references of the objects, with the namespace
/// each gets.
pub(super) async fn compare_all(
    site: &Site<'_>,
    objects: &[Value],
) -> crate::Result<(Vec<ObjectChange>, Vec<ObjectRef>)> {
    let crd_kinds = crd_kinds(objects);
    let mut placed: Vec<(&Value, ObjectRef, Mode)> = Vec::new();
    let mut namespaces: BTreeSet<String> = BTreeSet::new();
    for object in objects {
        let Some(mut reference) = ObjectRef::of(object) else {
            continue;
        };
        let gvk = reference.gvk();
        let (namespaced, mode) = match site.cluster.resource(&gvk).await? {
            Some((_, caps)) => (
                caps.scope == kube::discovery::Scope::Namespaced,
                Mode::DryRun,
            ),
            None => match crd_kinds.get(&(gvk.group.clone(), gvk.kind.clone())) {
                Some(namespaced) => (*namespaced, Mode::Rendered("its CRD comes with the addon")),
                None => (reference.namespace.is_some(), Mode::NotServed),
            },
        };
        reference.namespace = namespaced.then(|| {
            site.namespace_override
                .or(reference.namespace.as_deref())
                .unwrap_or(site.default_namespace)
                .to_owned()
        });
        if let Some(namespace) = &reference.namespace {
            namespaces.insert(namespace.clone());
        }
        placed.push((object, reference, mode));
    }
    let mut changes = Vec::new();
    let missing = missing_namespaces(site.cluster, &namespaces).await?;
    for namespace in &missing {
        let own = placed
            .iter()
            .any(|(_, r, _)| r.kind == "Namespace" && &r.name == namespace);
        if !own {
            changes.push(created_namespace(site.name, namespace));
        }
    }
    for (_, reference, mode) in &mut placed {
        if matches!(mode, Mode::DryRun)
            && reference
                .namespace
                .as_ref()
                .is_some_and(|ns| missing.contains(ns))
        {
            *mode = Mode::Rendered("its namespace is created first");
        }
    }
    let compared: Vec<crate::Result<ObjectChange>> = stream::iter(placed.iter())
        .map(|(object, reference, mode)| compare(site, object, reference, mode))
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    for change in compared {
        changes.push(change?);
    }
    let references = placed.into_iter().map(|(_, r, _)| r).collect();
    Ok((changes, references))
}

/// `(group, kind) → namespaced` of the CRDs among the objects.
fn crd_kinds(objects: &[Value]) -> BTreeMap<(String, String), bool> {
    objects
        .iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .filter_map(|crd| {
            let spec = crd.get("spec")?;
            let group = spec.get("group")?.as_str()?.to_owned();
            let kind = spec.pointer("/names/kind")?.as_str()?.to_owned();
            let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
            Some(((group, kind), namespaced))
        })
        .collect()
}

async fn missing_namespaces(
    cluster: &Cluster,
    namespaces: &BTreeSet<String>,
) -> crate::Result<BTreeSet<String>> {
    let gvk = GroupVersionKind::gvk("", "v1", "Namespace");
    let mut missing = BTreeSet::new();
    for namespace in namespaces {
        if cluster.get(&gvk, None, namespace).await?.is_none() {
            missing.insert(namespace.clone());
        }
    }
    Ok(missing)
}

fn created_namespace(cluster: &str, namespace: &str) -> ObjectChange {
    let object = crate::model::wire::namespace_object(namespace);
    ObjectChange {
        cluster: cluster.to_owned(),
        api_version: "v1".to_owned(),
        kind: "Namespace".to_owned(),
        namespace: None,
        name: namespace.to_owned(),
        change: Change::Create,
        diff: Some(unified("", &yaml(&object), &cluster::describe(&object))),
        message: Some("the objects need it".to_owned()),
    }
}

async fn compare(
    site: &Site<'_>,
    object: &Value,
    reference: &ObjectRef,
    mode: &Mode,
) -> crate::Result<ObjectChange> {
    let mut change = ObjectChange {
        cluster: site.name.to_owned(),
        api_version: reference.api_version.clone(),
        kind: reference.kind.clone(),
        namespace: reference.namespace.clone(),
        name: reference.name.clone(),
        change: Change::Unchanged,
        diff: None,
        message: None,
    };
    let what = reference.to_string();
    let after = match mode {
        Mode::NotServed => {
            change.message = Some(format!(
                "cluster `{}` does not serve `{}` `{}`",
                site.name, reference.api_version, reference.kind
            ));
            change.change = if site.skip_unserved {
                Change::Skip
            } else {
                Change::Reject
            };
            return Ok(change);
        }
        Mode::Rendered(why) => {
            let mut rendered = object.clone();
            mask_strings(&mut rendered, site.secrets);
            let (_, masked) = mask_pair(&Value::Null, &rendered, site.secrets);
            change.change = Change::Create;
            change.diff = Some(unified("", &yaml(&masked), &what));
            change.message = Some(format!("shown as rendered: {why}"));
            return Ok(change);
        }
        Mode::DryRun => {
            let applied = site
                .cluster
                .dry_run_apply(object, site.default_namespace, site.namespace_override)
                .await;
            match applied {
                Ok(stored) => strip(&to_value(&stored)),
                Err(e) => {
                    change.change = Change::Reject;
                    change.message = Some(mask_text(&e.to_string(), site.secrets));
                    return Ok(change);
                }
            }
        }
    };
    let live = site
        .cluster
        .get(
            &reference.gvk(),
            reference.namespace.as_deref(),
            &reference.name,
        )
        .await?;
    let conflict = live.as_ref().is_some_and(|live| {
        site.adoption
            .as_ref()
            .is_some_and(|a| a.needed(reference, live))
    });
    let before = live.map_or(Value::Null, |live| strip(&to_value(&live)));
    if conflict {
        change.change = Change::Conflict;
        change.message = Some(NEEDS_ADOPT.to_owned());
    }
    if before == after {
        return Ok(change);
    }
    let (masked_before, masked_after) = mask_pair(&before, &after, site.secrets);
    if !conflict {
        change.change = if before.is_null() {
            Change::Create
        } else {
            Change::Change
        };
    }
    if masked_before == masked_after {
        change.message = Some("(secret changed)".to_owned());
    } else {
        let before_text = if before.is_null() {
            String::new()
        } else {
            yaml(&masked_before)
        };
        change.diff = Some(unified(&before_text, &yaml(&masked_after), &what));
    }
    Ok(change)
}
