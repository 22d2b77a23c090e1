//! The direct engine: addonctl dispatches an addon's components to the target clusters itself,
//! without KubeVela.
//!
//! Expected flow ([`prepare`], then [`Prepared::apply`]):
//! 1. targets: the Application's topology policies (`clusters`, `clusterLabelSelector`,
//!    `namespace`) resolved against `local` and the joined clusters *now* (the record keeps the
//!    policies, so a cluster joined later is picked up by the next enable/upgrade);
//! 2. objects: components of type `k8s-objects` (`properties.objects`) and `raw` (`properties`),
//!    each labelled `addons.oam.dev/name: <addon>`; any other type is an error naming the
//!    component and the type;
//! 3. survey, per cluster, changing nothing: each object's namespace, and whether addonctl
//!    creates it (objects new to the addon are looked up with one list per kind and namespace,
//!    so that one that existed before is recorded as not created by addonctl); a namespace the
//!    objects need and the cluster lacks is planned as created. The caller records this plan as
//!    the pending revision before anything is applied;
//! 4. apply, per cluster, clusters in parallel (bounded): Namespaces and CRDs first (each CRD
//!    waited for until `Established`), then everything else with bounded concurrency, one
//!    server-side apply per object;
//! 5. prune: objects the previous revision (or an interrupted one) had on a cluster that this
//!    one no longer renders, and everything on clusters that are no longer targets, are removed
//!    by the rules of [`deletion`]: only objects addonctl created and no other addon's record
//!    lists are deleted; an object that existed before (adopted with `--adopt`, recorded with
//!    `created: false`) is given back, never deleted; the system namespace is never deleted,
//!    another namespace only when nothing else lives in it.
//!
//! A namespace the objects need (the default one, or one an object names) that a cluster lacks
//! is created first and recorded as created by addonctl for the addon. Objects that exist and
//! that addonctl did not create are adopted only with `--adopt` ([`Prepared::adoptions`]).
//!
//! Guarantees: a failing cluster does not stop the others; on it, no apply is started after the
//! first failure (a stopped server costs one timeout, not one per object), and its inventory keeps
//! every object it held plus every apply that succeeded, while the pending revision keeps what was
//! planned and not confirmed, so nothing is forgotten (not even when the process is killed) and a
//! re-run converges. Every request to a cluster goes through its rate limiter
//! ([`crate::cluster::RateLimit`]).
//!
//! Scaling: clients are built per enable from the cluster Secrets and dropped afterwards; at most
//! [`CLUSTER_CONCURRENCY`] clusters are worked on at once and at most [`OBJECT_CONCURRENCY`]
//! requests are in flight per cluster, so memory and connections stay bounded whatever the number
//! of clusters (1,000 clusters take 1,000 / 16 rounds, each holding 16 clients).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use serde::Serialize;
use serde_json::{Map, Value};

use super::deletion::{self, Entry, Removal};
use crate::cluster::set::{ClusterInfo, LOCAL};
use crate::cluster::Cluster;
use crate::context::{Context, Error, Reporter, Result};
use crate::model::wire::LABEL_NAME;
use crate::state::clusters::{clients, joined};
use crate::state::record::{
    ClusterInventory, DispatchedObject, ObjectRef, OtherRecords, Placement,
};
use crate::state::to_value;

pub use crate::state::clusters::{CLUSTER_CONCURRENCY, OBJECT_CONCURRENCY};

/// How long a CRD may take to become `Established`.
const CRD_WAIT: Duration = Duration::from_secs(30);

/// The topology policies of an Application as placements (none = `local`).
pub fn placements(application: &Value) -> Vec<Placement> {
    let mut out = Vec::new();
    for policy in application
        .pointer("/spec/policies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if policy.get("type").and_then(Value::as_str) != Some("topology") {
            continue;
        }
        let properties = policy.get("properties");
        let clusters = properties
            .and_then(|p| p.get("clusters"))
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            });
        let selector = properties
            .and_then(|p| {
                p.get("clusterLabelSelector")
                    .or_else(|| p.get("clusterSelector"))
            })
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            });
        let namespace = properties
            .and_then(|p| p.get("namespace"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        out.push(Placement {
            clusters,
            cluster_label_selector: selector,
            namespace,
        });
    }
    if out.is_empty() {
        out.push(Placement {
            clusters: Some(vec![LOCAL.to_owned()]),
            cluster_label_selector: None,
            namespace: None,
        });
    }
    out
}

/// Resolves placements to `cluster → namespace override`. Named clusters must exist.
pub fn resolve_targets(
    placements: &[Placement],
    joined: &[ClusterInfo],
) -> Result<BTreeMap<String, Option<String>>> {
    let mut out = BTreeMap::new();
    for placement in placements {
        let mut names: Vec<String> = Vec::new();
        if let Some(clusters) = &placement.clusters {
            for name in clusters {
                if name != LOCAL && !joined.iter().any(|c| &c.name == name) {
                    return Err(Error::Refused(format!(
                        "the topology names cluster `{name}`, which is not joined (known: `local`{})",
                        joined.iter().map(|c| format!(", `{}`", c.name)).collect::<Vec<_>>().concat()
                    )));
                }
                names.push(name.clone());
            }
        }
        if let Some(selector) = &placement.cluster_label_selector {
            if selector.is_empty() {
                names.push(LOCAL.to_owned());
            }
            names.extend(
                joined
                    .iter()
                    .filter(|c| selector.iter().all(|(k, v)| c.labels.get(k) == Some(v)))
                    .map(|c| c.name.clone()),
            );
        }
        for name in names {
            out.entry(name)
                .or_insert_with(|| placement.namespace.clone());
        }
    }
    Ok(out)
}

/// The objects of an Application's components, for the direct engine: an error names the first
/// component of a type it cannot deploy.
pub fn component_objects(application: &Value) -> Result<Vec<Value>> {
    for component in application
        .pointer("/spec/components")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = component.get("type").and_then(Value::as_str);
        if !matches!(kind, Some("k8s-objects" | "raw")) {
            return Err(Error::Refused(format!(
                "component `{}` has type `{}`, which the direct engine cannot deploy (it deploys `k8s-objects` and `raw`); install KubeVela and use `--engine vela`",
                component.get("name").and_then(Value::as_str).unwrap_or("?"),
                kind.unwrap_or("?")
            )));
        }
    }
    Ok(crate::plan::inventory::component_objects(application))
}

/// The outcome on one cluster.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterOutcome {
    /// The cluster.
    pub cluster: String,
    /// Objects applied.
    pub applied: usize,
    /// Of those, objects the server wrote (an unchanged re-enable writes none).
    pub changed: usize,
    /// Objects deleted (pruned).
    pub deleted: usize,
    /// API requests made to the cluster (discovery, the survey's lists, applies, CRD waits,
    /// deletes).
    pub requests: u64,
    /// Of those, writes (applies and deletes).
    pub writes: u64,
    /// The objects deleted (pruned), each with its cluster.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deleted_objects: Vec<Entry>,
    /// Objects no longer rendered that addonctl adopted, given back (its fields removed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub given_back: Vec<Entry>,
    /// Objects no longer rendered but kept, with the reason (another addon's record lists them,
    /// the system namespace, a namespace holding other objects).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<Entry>,
    /// The failure, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ClusterOutcome {
    fn new(cluster: &str) -> Self {
        ClusterOutcome {
            cluster: cluster.to_owned(),
            applied: 0,
            changed: 0,
            deleted: 0,
            requests: 0,
            writes: 0,
            deleted_objects: Vec::new(),
            given_back: Vec::new(),
            kept: Vec::new(),
            error: None,
        }
    }
}

fn rank(object: &Value) -> u8 {
    match object.get("kind").and_then(Value::as_str) {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    }
}

/// The object with the label `addons.oam.dev/name: <addon>` (unless it sets that label itself),
/// so that what an addon dispatched can be found by label on every cluster.
fn labelled(object: &Value, addon: &str) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = metadata
            .entry("labels")
            .or_insert_with(|| Value::Object(Map::new()));
        if !labels.is_object() {
            *labels = Value::Object(Map::new());
        }
        if let Some(labels) = labels.as_object_mut() {
            labels
                .entry(LABEL_NAME)
                .or_insert_with(|| Value::String(addon.to_owned()));
        }
    }
    object
}

/// `(group, kind) → namespaced` for the CRDs among the objects: their kinds are not served
/// before the CRDs are applied, so the survey takes their scope from here.
fn crd_scopes(objects: &[Value]) -> BTreeMap<(String, String), bool> {
    objects
        .iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .filter_map(|crd| {
            let text = |p: &str| crd.pointer(p).and_then(Value::as_str).map(str::to_owned);
            Some((
                (text("/spec/group")?, text("/spec/names/kind")?),
                text("/spec/scope").as_deref() != Some("Cluster"),
            ))
        })
        .collect()
}

/// One cluster's part of a dispatch, found before anything is applied: the namespace to create
/// when it is missing, and every object in apply order with whether addonctl creates it.
#[derive(Debug, Clone, Default)]
struct ClusterPlan {
    ensure_namespaces: Vec<String>,
    objects: Vec<DispatchedObject>,
}

impl ClusterPlan {
    fn created(&self, object: &ObjectRef) -> Option<bool> {
        self.objects
            .iter()
            .find(|o| o.object.same_object(object))
            .map(|o| o.created)
    }
}

/// One cluster of a dispatch: where objects go there and what the addon (and the others)
/// already hold there.
struct Target<'a> {
    cluster: &'a Cluster,
    name: &'a str,
    namespace_override: Option<&'a str>,
    system_namespace: &'a str,
    previous: &'a ClusterInventory,
    others: Option<&'a BTreeMap<ObjectRef, (String, bool)>>,
}

impl Target<'_> {
    fn previously_created(&self, object: &ObjectRef) -> Option<bool> {
        self.previous
            .objects
            .iter()
            .find(|o| o.object.same_object(object))
            .map(|o| o.created)
    }
}

/// Plans the apply on one cluster without changing anything: resolves each object's namespace
/// (cached discovery), and finds whether addonctl creates it. That is known for objects the
/// previous inventory (or another addon's record) lists, and for kinds not served yet (their
/// CRD comes with the addon); the others are looked up with one list per kind and namespace, so
/// that an object that existed before is recorded as not created by addonctl even when the
/// forced apply takes over every field of its other managers (which leaves addonctl as the only
/// manager, indistinguishable afterwards from an object it created).
async fn survey(
    target: &Target<'_>,
    objects: &[Value],
    scopes: &BTreeMap<(String, String), bool>,
) -> Result<ClusterPlan> {
    let cluster = target.cluster;
    let mut plan = ClusterPlan::default();
    // The namespaces the namespaced objects go to (the topology's, the one they name, else the
    // system namespace), which a managed cluster may not have yet.
    let mut needed: Vec<String> = Vec::new();
    let mut unknown: BTreeMap<(String, String, Option<String>), Vec<usize>> = BTreeMap::new();
    for object in objects {
        let Some(mut reference) = ObjectRef::of(object) else {
            continue;
        };
        let gvk = reference.gvk();
        let (namespaced, served) = match cluster.resource(&gvk).await? {
            Some((_, caps)) => (caps.scope == kube::discovery::Scope::Namespaced, true),
            None => (
                scopes
                    .get(&(gvk.group.clone(), gvk.kind.clone()))
                    .copied()
                    .unwrap_or(true),
                false,
            ),
        };
        reference.namespace = namespaced.then(|| {
            target
                .namespace_override
                .or(reference.namespace.as_deref())
                .unwrap_or(target.system_namespace)
                .to_owned()
        });
        if let Some(namespace) = &reference.namespace {
            if !needed.contains(namespace) {
                needed.push(namespace.clone());
            }
        }
        if plan.objects.iter().any(|o| o.object == reference) {
            continue;
        }
        let known = target
            .previously_created(&reference)
            .or_else(|| {
                target
                    .others
                    .and_then(|others| others.get(&reference))
                    .map(|(_, created)| *created)
            })
            .or((!served).then_some(true));
        if known.is_none() {
            unknown
                .entry((
                    reference.api_version.clone(),
                    reference.kind.clone(),
                    reference.namespace.clone(),
                ))
                .or_default()
                .push(plan.objects.len());
        }
        plan.objects.push(DispatchedObject {
            object: reference,
            uid: String::new(),
            created: known.unwrap_or(true),
        });
    }
    // After the first failure no further list is started (each could cost a timeout).
    let failed = AtomicBool::new(false);
    let listings: Vec<Result<BTreeMap<String, bool>>> = stream::iter(unknown.keys())
        .map(|(api_version, kind, namespace)| {
            let failed = &failed;
            async move {
                if failed.load(Ordering::Relaxed) {
                    return Ok(BTreeMap::new());
                }
                let gvk = ObjectRef {
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                    namespace: None,
                    name: String::new(),
                }
                .gvk();
                match cluster.list(&gvk, namespace.as_deref(), "").await {
                    Ok(items) => Ok(items
                        .iter()
                        .filter_map(|i| {
                            Some((i.metadata.name.clone()?, deletion::created_by_us(i)))
                        })
                        .collect()),
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        Err(Error::from(e))
                    }
                }
            }
        })
        .buffered(OBJECT_CONCURRENCY)
        .collect()
        .await;
    for (indexes, listing) in unknown.values().zip(listings) {
        let found = listing?;
        for &i in indexes {
            if let Some(ours) = found.get(&plan.objects[i].object.name) {
                plan.objects[i].created = *ours;
            }
        }
    }
    ensure_namespaces(target, objects, &needed, &mut plan).await?;
    Ok(plan)
}

/// Plans the namespaces the objects need (the default one, and every one they name) that the
/// addon does not declare itself: each is created when the cluster lacks it, and recorded as
/// created by addonctl for this addon (first, so deleted last — and only when nothing else
/// lives in it, see [`deletion`]); one that existed before is not recorded, so never deleted.
async fn ensure_namespaces(
    target: &Target<'_>,
    objects: &[Value],
    needed: &[String],
    plan: &mut ClusterPlan,
) -> Result<()> {
    let declared = |name: &str| {
        objects.iter().any(|o| {
            o.get("kind").and_then(Value::as_str) == Some("Namespace")
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        })
    };
    let mut entries = Vec::new();
    for name in needed.iter().filter(|n| !declared(n)) {
        let reference = ObjectRef {
            api_version: "v1".to_owned(),
            kind: "Namespace".to_owned(),
            namespace: None,
            name: name.clone(),
        };
        let exists = target
            .cluster
            .get(&reference.gvk(), None, name)
            .await?
            .is_some();
        plan.ensure_namespaces.push(name.clone());
        // Recorded when addonctl creates it (and kept while an earlier run recorded it).
        if let Some(created) = target
            .previously_created(&reference)
            .or((!exists).then_some(true))
        {
            entries.push(DispatchedObject {
                object: reference,
                uid: String::new(),
                created,
            });
        }
    }
    entries.append(&mut plan.objects);
    plan.objects = entries;
    Ok(())
}

/// Waits until a CRD is `Established` and discovery serves its kind (at most [`CRD_WAIT`]):
/// read, and while not established, watch the CRD for its next change and read again; once
/// established, wait for discovery with short growing pauses (discovery cannot be watched).
pub(super) async fn wait_established(cluster: &Cluster, name: &str) -> Result<()> {
    let gvk =
        kube::core::GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let started = Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        let crd = cluster.get(&gvk, None, name).await?;
        let mut version = None;
        if let Some(crd) = crd {
            let value = to_value(&crd);
            // Established comes a moment before the API server's discovery lists the new kind:
            // wait for that too, so the objects of the kind that follow find it.
            if is_established(&value) {
                cluster.refresh_discovery();
                let served = match served_kind(&value) {
                    Some(kind) => cluster.resource(&kind).await?.is_some(),
                    None => true,
                };
                if served {
                    return Ok(());
                }
            } else {
                version.clone_from(&crd.metadata.resource_version);
            }
        }
        let Some(left) = CRD_WAIT.checked_sub(started.elapsed()) else {
            return Err(Error::Refused(format!(
                "CustomResourceDefinition `{name}` on cluster `{}` did not become Established within {}s",
                cluster.name(),
                CRD_WAIT.as_secs()
            )));
        };
        // A watch that cannot be made (no `watch` permission, a timeout) falls back to a pause.
        let watched = match version {
            Some(version) => cluster
                .changed_since(&gvk, name, &version, left)
                .await
                .is_ok(),
            None => false,
        };
        if !watched {
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }
}

/// Whether a CRD's `Established` condition is `True`.
fn is_established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Established")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// One kind a CRD serves (its storage version, else its first served one).
pub(super) fn served_kind(crd: &Value) -> Option<kube::core::GroupVersionKind> {
    let group = crd.pointer("/spec/group")?.as_str()?;
    let kind = crd.pointer("/spec/names/kind")?.as_str()?;
    let versions = crd.pointer("/spec/versions")?.as_array()?;
    let served = |v: &&Value| v.get("served").and_then(Value::as_bool) != Some(false);
    let version = versions
        .iter()
        .filter(served)
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .or_else(|| versions.iter().find(served))?
        .get("name")?
        .as_str()?;
    Some(kube::core::GroupVersionKind::gvk(group, version, kind))
}

/// Applies the planned objects to one cluster, staged, and prunes what the previous inventory
/// had and this one does not. Returns the new inventory (on failure: the old one plus what was
/// applied).
async fn apply_to_cluster(
    target: &Target<'_>,
    objects: &[Value],
    plan: &ClusterPlan,
) -> (ClusterInventory, ClusterOutcome) {
    let cluster = target.cluster;
    let mut applied: Vec<DispatchedObject> = Vec::new();
    let mut outcome = ClusterOutcome::new(cluster.name());
    let revision = cluster.revision(target.system_namespace).await;
    let mut changed = 0;
    let result: Result<()> = async {
        for namespace in &plan.ensure_namespaces {
            let reference = ObjectRef {
                api_version: "v1".to_owned(),
                kind: "Namespace".to_owned(),
                namespace: None,
                name: namespace.clone(),
            };
            let stored = cluster
                .get_or_create(&serde_json::json!({
                    "apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": namespace, "labels": {"app.kubernetes.io/managed-by": "addonctl"}},
                }))
                .await?;
            if let Some(created) = plan.created(&reference) {
                applied.push(DispatchedObject {
                    object: reference,
                    uid: stored.metadata.uid.clone().unwrap_or_default(),
                    created,
                });
            }
        }
        for stage in [0u8, 1, 2] {
            let batch: Vec<&Value> = objects.iter().filter(|o| rank(o) == stage).collect();
            if batch.is_empty() {
                continue;
            }
            // After the first failure no further apply is started (a stopped server would
            // otherwise cost one timeout per object), but every apply that succeeded is
            // recorded, so nothing that reached the cluster is forgotten.
            let failed = AtomicBool::new(false);
            let results: Vec<Option<Result<(Value, kube::api::DynamicObject)>>> =
                stream::iter(batch)
                    .map(|object| {
                        let failed = &failed;
                        async move {
                            if failed.load(Ordering::Relaxed) {
                                return None;
                            }
                            let stored = cluster
                                .apply_placed(
                                    object,
                                    target.system_namespace,
                                    target.namespace_override,
                                )
                                .await;
                            if stored.is_err() {
                                failed.store(true, Ordering::Relaxed);
                            }
                            Some(stored.map(|s| (object.clone(), s)).map_err(Error::from))
                        }
                    })
                    .buffered(OBJECT_CONCURRENCY)
                    .collect()
                    .await;
            let mut first_error = None;
            let mut crds = Vec::new();
            for result in results.into_iter().flatten() {
                let (object, stored) = match result {
                    Ok(pair) => pair,
                    Err(e) => {
                        first_error.get_or_insert(e);
                        continue;
                    }
                };
                if crate::cluster::written_since(&stored, revision) {
                    changed += 1;
                }
                let Some(mut reference) = ObjectRef::of(&object) else {
                    continue;
                };
                reference.namespace.clone_from(&stored.metadata.namespace);
                if applied.iter().any(|o| o.object == reference) {
                    continue;
                }
                let created = plan
                    .created(&reference)
                    .or_else(|| target.previously_created(&reference))
                    .unwrap_or_else(|| deletion::created_by_us(&stored));
                applied.push(DispatchedObject {
                    uid: stored.metadata.uid.clone().unwrap_or_default(),
                    created,
                    object: reference,
                });
                if stage == 1 {
                    crds.extend(stored.metadata.name.clone());
                }
            }
            if let Some(e) = first_error {
                return Err(e);
            }
            for crd in crds {
                wait_established(cluster, &crd).await?;
            }
            if stage == 0 {
                cluster.refresh_discovery();
            }
        }
        Ok(())
    }
    .await;
    outcome.applied = applied.len();
    outcome.changed = changed;
    match result {
        Ok(()) => {
            let removal = prune(target, &applied, false).await;
            outcome.deleted = removal.deleted.len();
            outcome.deleted_objects = removal.deleted;
            outcome.given_back = removal.given_back;
            outcome.kept = removal.kept;
            let mut objects = applied;
            let error = removal.failure.map(|(e, kept)| {
                objects.extend(kept);
                e
            });
            outcome.error.clone_from(&error);
            (ClusterInventory { objects, error }, outcome)
        }
        Err(e) => {
            let message = e.to_string();
            outcome.error = Some(message.clone());
            // Keep everything: what was there, plus what was applied before the failure.
            let mut objects = target.previous.objects.clone();
            for object in applied {
                match objects.iter_mut().find(|o| o.object == object.object) {
                    Some(known) if known.uid.is_empty() => *known = object,
                    Some(_) => {}
                    None => objects.push(object),
                }
            }
            (
                ClusterInventory {
                    objects,
                    error: Some(message),
                },
                outcome,
            )
        }
    }
}

/// Deletes (or gives back), in reverse order, what `old` holds and `new` lacks, by the rules of
/// [`deletion`]: only what addonctl created and no other addon lists is deleted; what it adopted
/// is given back; the system namespace and namespaces holding anything else are kept.
async fn prune(target: &Target<'_>, new: &[DispatchedObject], dry_run: bool) -> Removal {
    let stale: Vec<&DispatchedObject> = target
        .previous
        .objects
        .iter()
        .rev()
        .filter(|o| !new.iter().any(|n| n.object.same_object(&o.object)))
        .collect();
    let site = deletion::Site {
        cluster: target.cluster,
        name: target.name,
        system_namespace: target.system_namespace,
        others: target.others,
        dry_run,
        trust_record: false,
    };
    deletion::remove(&site, &stale).await
}

/// Removes everything an inventory holds by the rules of [`deletion`] (see [`prune`]), in
/// reverse order: for `disable` and `cluster detach`.
pub async fn remove_all(
    cluster: &Cluster,
    name: &str,
    system_namespace: &str,
    inventory: &ClusterInventory,
    others: Option<&BTreeMap<ObjectRef, (String, bool)>>,
    dry_run: bool,
) -> Removal {
    let target = Target {
        cluster,
        name,
        namespace_override: None,
        system_namespace,
        previous: inventory,
        others,
    };
    prune(&target, &[], dry_run).await
}

/// A dispatch ready to apply: targets resolved, clients built, every cluster surveyed (nothing
/// changed yet). [`Prepared::planned`] is what the pending revision records before
/// [`Prepared::apply`] applies it.
pub struct Prepared {
    placements: Vec<Placement>,
    objects: Vec<Value>,
    targets: BTreeMap<String, Option<String>>,
    clients: BTreeMap<String, std::result::Result<Cluster, String>>,
    baselines: BTreeMap<String, (u64, u64)>,
    previous: BTreeMap<String, ClusterInventory>,
    plans: BTreeMap<String, std::result::Result<ClusterPlan, String>>,
    others: OtherRecords,
    system_namespace: String,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("targets", &self.targets)
            .finish_non_exhaustive()
    }
}

/// What a dispatch did.
#[derive(Debug, Clone)]
pub struct Dispatched {
    /// The topology the record keeps.
    pub placements: Vec<Placement>,
    /// Per cluster, what it holds now.
    pub inventories: BTreeMap<String, ClusterInventory>,
    /// Per cluster, the outcome.
    pub outcomes: Vec<ClusterOutcome>,
    /// Per failed cluster, what was planned and not confirmed applied (it may have been: a
    /// request cut off by a timeout can still be carried out), for the pending revision.
    pub unfinished: BTreeMap<String, Vec<DispatchedObject>>,
}

/// Prepares the dispatch of an Application's components (steps 1–2 of the flow and each
/// cluster's survey): `previous` is what each cluster holds for the addon (including what an
/// interrupted enable planned), `others` what the other addons' records list.
pub async fn prepare(
    ctx: &Context,
    addon: &str,
    application: &Value,
    previous: &BTreeMap<String, ClusterInventory>,
    others: OtherRecords,
    reporter: &dyn Reporter,
) -> Result<Prepared> {
    let placements = placements(application);
    let mut objects: Vec<Value> = component_objects(application)?
        .iter()
        .map(|o| labelled(o, addon))
        .collect();
    objects.sort_by_key(rank);
    let scopes = crd_scopes(&objects);
    let joined_clusters: Vec<ClusterInfo> = joined(ctx)
        .await?
        .into_iter()
        .map(|(info, _)| info)
        .collect();
    let targets = resolve_targets(&placements, &joined_clusters)?;
    let mut names: BTreeSet<String> = targets.keys().cloned().collect();
    for (name, inventory) in previous {
        if name == LOCAL || joined_clusters.iter().any(|c| &c.name == name) {
            names.insert(name.clone());
        } else if inventory.objects.iter().any(|o| o.created) {
            // Detached with `--force`: its credentials are gone, so its objects cannot be reached.
            reporter.step(&format!(
                "cluster `{name}` is no longer joined: forgetting {} objects left there",
                inventory.objects.len()
            ));
        }
    }
    let clients = clients(ctx, &names).await?;
    let baselines = clients
        .iter()
        .filter_map(|(name, client)| {
            let counters = client.as_ref().ok()?.counters();
            Some((name.clone(), (counters.requests(), counters.writes())))
        })
        .collect();
    let empty = ClusterInventory::default();
    let surveys = names.iter().map(|name| {
        let client = clients.get(name);
        let namespace = targets.get(name);
        let previous = previous.get(name).unwrap_or(&empty);
        let (objects, scopes, others) = (&objects, &scopes, &others);
        let system_namespace = ctx.namespace.as_str();
        async move {
            let plan = match (client, namespace) {
                (Some(Ok(cluster)), Some(namespace)) => {
                    let target = Target {
                        cluster,
                        name,
                        namespace_override: namespace.as_deref(),
                        system_namespace,
                        previous,
                        others: others.dispatched.get(name),
                    };
                    survey(&target, objects, scopes)
                        .await
                        .map_err(|e| e.to_string())
                }
                // No longer a target: nothing to apply, everything to delete.
                (Some(Ok(_)), None) => Ok(ClusterPlan::default()),
                (Some(Err(e)), _) => Err(e.clone()),
                (None, _) => Err(format!("no client for cluster `{name}`")),
            };
            (name.clone(), plan)
        }
    });
    let plans = stream::iter(surveys)
        .buffer_unordered(CLUSTER_CONCURRENCY)
        .collect()
        .await;
    Ok(Prepared {
        placements,
        objects,
        targets,
        clients,
        baselines,
        previous: previous.clone(),
        plans,
        others,
        system_namespace: ctx.namespace.clone(),
    })
}

impl Prepared {
    /// The objects the dispatch would adopt: they exist, addonctl did not create them, and
    /// `previous` (what the addon's record holds) does not list them yet — as `Kind `ns/name` on
    /// cluster `c``.
    pub fn adoptions(&self, previous: &BTreeMap<String, ClusterInventory>) -> Vec<String> {
        let mut out = Vec::new();
        for (name, plan) in &self.plans {
            let Ok(plan) = plan else {
                continue;
            };
            let held = previous.get(name);
            // The system namespace is addonctl's (and KubeVela's) to use: not adopted.
            let system = |o: &DispatchedObject| {
                o.object.kind == "Namespace" && o.object.name == self.system_namespace
            };
            for object in plan.objects.iter().filter(|o| !o.created && !system(o)) {
                let known = held.is_some_and(|h| {
                    h.objects
                        .iter()
                        .any(|o| o.object.same_object(&object.object))
                });
                if !known {
                    out.push(format!("{} on cluster `{name}`", object.object));
                }
            }
        }
        out
    }

    /// Per cluster, every object the dispatch will apply (uids unknown yet), for the pending
    /// revision written before anything is applied.
    pub fn planned(&self) -> BTreeMap<String, Vec<DispatchedObject>> {
        self.plans
            .iter()
            .filter_map(|(name, plan)| {
                let plan = plan.as_ref().ok()?;
                (!plan.objects.is_empty()).then(|| (name.clone(), plan.objects.clone()))
            })
            .collect()
    }

    /// Applies to every cluster (in parallel, bounded) and prunes.
    pub async fn apply(self, reporter: &dyn Reporter) -> Dispatched {
        let empty = ClusterInventory::default();
        let work = self.plans.iter().map(|(name, plan)| {
            let client = self.clients.get(name);
            let namespace = self.targets.get(name);
            let old = self.previous.get(name).unwrap_or(&empty);
            let objects: &[Value] = if namespace.is_some() {
                &self.objects
            } else {
                &[]
            };
            let baseline = self.baselines.get(name).copied().unwrap_or_default();
            let this = &self;
            async move {
                let (Some(Ok(cluster)), Ok(plan)) = (client, plan) else {
                    let error = match plan {
                        Err(e) => e.clone(),
                        Ok(_) => format!("no client for cluster `{name}`"),
                    };
                    return unreachable_cluster(name, old.clone(), error);
                };
                let target = Target {
                    cluster,
                    name,
                    namespace_override: namespace.and_then(Option::as_deref),
                    system_namespace: &this.system_namespace,
                    previous: old,
                    others: this.others.dispatched.get(name),
                };
                let (inventory, mut outcome) = apply_to_cluster(&target, objects, plan).await;
                let counters = cluster.counters();
                outcome.requests = counters.requests() - baseline.0;
                outcome.writes = counters.writes() - baseline.1;
                (name.clone(), inventory, outcome)
            }
        });
        let results: Vec<(String, ClusterInventory, ClusterOutcome)> = stream::iter(work)
            .buffer_unordered(CLUSTER_CONCURRENCY)
            .collect()
            .await;
        let mut dispatched = Dispatched {
            placements: self.placements.clone(),
            inventories: BTreeMap::new(),
            outcomes: Vec::new(),
            unfinished: BTreeMap::new(),
        };
        for (name, inventory, outcome) in results {
            match &outcome.error {
                Some(e) => reporter.step(&format!("cluster `{name}`: failed: {e}")),
                None => reporter.step(&format!(
                    "cluster `{name}`: {} objects applied, {} deleted",
                    outcome.applied, outcome.deleted
                )),
            }
            if outcome.error.is_some() {
                if let Some(Ok(plan)) = self.plans.get(&name) {
                    let unfinished: Vec<DispatchedObject> = plan
                        .objects
                        .iter()
                        .filter(|p| !inventory.objects.iter().any(|o| o.object == p.object))
                        .cloned()
                        .collect();
                    if !unfinished.is_empty() {
                        dispatched.unfinished.insert(name.clone(), unfinished);
                    }
                }
            }
            if self.targets.contains_key(&name)
                || !inventory.objects.is_empty()
                || inventory.error.is_some()
            {
                dispatched.inventories.insert(name, inventory);
            }
            dispatched.outcomes.push(outcome);
        }
        dispatched
            .outcomes
            .sort_by(|a, b| a.cluster.cmp(&b.cluster));
        dispatched
    }
}

/// The outcome for a cluster that cannot be worked on: its inventory is kept as it was.
fn unreachable_cluster(
    name: &str,
    old: ClusterInventory,
    error: String,
) -> (String, ClusterInventory, ClusterOutcome) {
    let mut outcome = ClusterOutcome::new(name);
    outcome.error = Some(error.clone());
    (
        name.to_owned(),
        ClusterInventory {
            objects: old.objects,
            error: Some(error),
        },
        outcome,
    )
}
