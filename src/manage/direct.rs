//! The direct engine: addonctl dispatches an addon's components to the target clusters itself,
//! without KubeVela.
//!
//! Expected flow of [`dispatch`]:
//! 1. targets: the Application's topology policies (`clusters`, `clusterLabelSelector`,
//!    `namespace`) resolved against `local` and the joined clusters *now* (the record keeps the
//!    policies, so a cluster joined later is picked up by the next enable/upgrade);
//! 2. objects: components of type `k8s-objects` (`properties.objects`) and `raw` (`properties`);
//!    any other type is an error naming the component and the type;
//! 3. per cluster, clusters in parallel (bounded): Namespaces and CRDs first (each CRD waited for
//!    until `Established`), then everything else with bounded concurrency, one server-side apply
//!    per object; objects new to the addon on that cluster are first looked up with one list per
//!    kind and namespace, so that one that existed before is recorded as not created by addonctl;
//! 4. prune: objects the previous revision applied to a cluster that this one no longer renders,
//!    and everything on clusters that are no longer targets, are deleted — only objects addonctl
//!    created (an object that existed before is recorded as such and never deleted).
//!
//! Guarantees: a failing cluster does not stop the others; on it, no apply is started after the
//! first failure (a stopped server costs one timeout, not one per object), and its inventory keeps
//! every object it held plus every apply that succeeded, so nothing is forgotten and a re-run
//! converges.
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
use serde_json::Value;

use super::record::{ClusterInventory, DispatchedObject, ObjectRef, Placement};
use super::{Context, Error, Result};
use crate::cluster::set::{ClusterCredentials, ClusterInfo, LABEL_CREDENTIAL_TYPE, LOCAL};
use crate::cluster::{self, Cluster};

/// Clusters worked on at once.
pub const CLUSTER_CONCURRENCY: usize = 16;
/// Requests in flight per cluster.
pub const OBJECT_CONCURRENCY: usize = 8;
/// How long a CRD may take to become `Established`.
const CRD_WAIT: Duration = Duration::from_secs(30);

/// The request timeout for managed clusters (`ADDONCTL_CLUSTER_TIMEOUT` seconds, default 30).
pub fn cluster_timeout() -> Duration {
    std::env::var("ADDONCTL_CLUSTER_TIMEOUT")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(Duration::from_secs(30))
}

/// The joined clusters (from their Secrets), without credentials.
pub async fn joined(ctx: &Context) -> Result<Vec<(ClusterInfo, ClusterCredentials)>> {
    let secrets = ctx
        .cluster
        .list(
            &super::secret_gvk(),
            Some(&ctx.namespace),
            LABEL_CREDENTIAL_TYPE,
        )
        .await?;
    let mut out = Vec::new();
    for secret in secrets {
        let value = super::to_value(&secret);
        match ClusterCredentials::from_secret(&value) {
            Ok(pair) => out.push(pair),
            Err(e) => tracing::warn!("{e}"),
        }
    }
    Ok(out)
}

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

/// The objects of an Application's components, for the direct engine.
pub fn component_objects(application: &Value) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for component in application
        .pointer("/spec/components")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = component.get("name").and_then(Value::as_str).unwrap_or("?");
        match component.get("type").and_then(Value::as_str) {
            Some("k8s-objects") => out.extend(
                component
                    .pointer("/properties/objects")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .cloned(),
            ),
            Some("raw") => out.extend(component.get("properties").cloned()),
            other => {
                return Err(Error::Refused(format!(
                    "component `{name}` has type `{}`, which the direct engine cannot deploy (it deploys `k8s-objects` and `raw`); install KubeVela and use `--engine vela`",
                    other.unwrap_or("?")
                )))
            }
        }
    }
    Ok(out)
}

/// The outcome on one cluster.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterOutcome {
    /// The cluster.
    pub cluster: String,
    /// Objects applied.
    pub applied: usize,
    /// Objects deleted (pruned).
    pub deleted: usize,
    /// API requests made to the cluster (discovery, applies, CRD waits, deletes).
    pub requests: u64,
    /// Of those, writes (applies and deletes).
    pub writes: u64,
    /// The failure, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Clients for `local` (the control plane) and the joined clusters named.
pub async fn clients(
    ctx: &Context,
    names: &BTreeSet<String>,
) -> Result<BTreeMap<String, std::result::Result<Cluster, String>>> {
    let mut out = BTreeMap::new();
    let joined = joined(ctx).await?;
    for name in names {
        if name == LOCAL {
            out.insert(name.clone(), Ok(ctx.cluster.clone()));
            continue;
        }
        let client = match joined.iter().find(|(info, _)| &info.name == name) {
            Some((_, credentials)) => credentials
                .connect(name, cluster_timeout())
                .await
                .map_err(|e| e.to_string()),
            None => Err(format!("cluster `{name}` is no longer joined")),
        };
        out.insert(name.clone(), client);
    }
    Ok(out)
}

fn rank(object: &Value) -> u8 {
    match object.get("kind").and_then(Value::as_str) {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    }
}

/// `apiVersion`, `kind`, namespace (namespaced kinds), name.
type Key = (String, String, Option<String>, String);

/// What the objects new to this addon on a cluster looked like before the apply: which kinds
/// and namespaces were listed, and for each object found whether addonctl alone manages it.
#[derive(Default)]
struct Existing {
    listed: BTreeSet<(String, String, Option<String>)>,
    found: BTreeMap<Key, bool>,
}

impl Existing {
    /// Whether addonctl created an object just applied: it did not exist before, or only
    /// addonctl managed it (an earlier run that did not finish). Kinds that could not be
    /// listed fall back to the stored object's field managers.
    fn created(&self, key: &Key, stored: &kube::api::DynamicObject) -> bool {
        if let Some(ours) = self.found.get(key) {
            return *ours;
        }
        if self
            .listed
            .contains(&(key.0.clone(), key.1.clone(), key.2.clone()))
        {
            return true;
        }
        created_by_us(stored)
    }
}

/// Lists, once per kind and namespace, the objects of `batch` the previous inventory does not
/// hold, so that an object that existed before is recorded as not created by addonctl even
/// when the forced apply takes over every field of its other managers (which leaves addonctl as
/// the only manager, indistinguishable afterwards from an object it created).
async fn existing(
    cluster: &Cluster,
    batch: &[&Value],
    system_namespace: &str,
    namespace_override: Option<&str>,
    previous: &ClusterInventory,
) -> Existing {
    let mut groups: BTreeMap<(String, String, Option<String>), BTreeSet<String>> = BTreeMap::new();
    for object in batch {
        let Some(reference) = ObjectRef::of(object) else {
            continue;
        };
        let caps = match cluster.resource(&reference.gvk()).await {
            Ok(Some((_, caps))) => caps,
            // Not served: the apply says so.
            Ok(None) => continue,
            // The cluster fails: the applies report it (each lookup could cost a timeout).
            Err(_) => return Existing::default(),
        };
        let namespace = (caps.scope == kube::discovery::Scope::Namespaced).then(|| {
            namespace_override
                .or(reference.namespace.as_deref())
                .unwrap_or(system_namespace)
                .to_owned()
        });
        if previous.objects.iter().any(|o| {
            o.object.api_version == reference.api_version
                && o.object.kind == reference.kind
                && o.object.namespace == namespace
                && o.object.name == reference.name
        }) {
            continue;
        }
        groups
            .entry((reference.api_version, reference.kind, namespace))
            .or_default()
            .insert(reference.name);
    }
    let failed = AtomicBool::new(false);
    let listings: Vec<_> = stream::iter(groups)
        .map(|(group, names)| {
            let failed = &failed;
            async move {
                if failed.load(Ordering::Relaxed) {
                    return None;
                }
                let (api_version, kind, namespace) = &group;
                let gvk = ObjectRef {
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                    namespace: None,
                    name: String::new(),
                }
                .gvk();
                let listed = cluster.list(&gvk, namespace.as_deref(), "").await.ok();
                if listed.is_none() {
                    failed.store(true, Ordering::Relaxed);
                }
                listed.map(|items| (group, names, items))
            }
        })
        .buffered(OBJECT_CONCURRENCY)
        .collect()
        .await;
    let mut out = Existing::default();
    for ((api_version, kind, namespace), names, items) in listings.into_iter().flatten() {
        for item in items {
            let name = item.metadata.name.clone().unwrap_or_default();
            if names.contains(&name) {
                out.found.insert(
                    (api_version.clone(), kind.clone(), namespace.clone(), name),
                    created_by_us(&item),
                );
            }
        }
        out.listed.insert((api_version, kind, namespace));
    }
    out
}

/// Whether addonctl alone manages a stored object: only addonctl has written its spec (status
/// writers are ignored).
fn created_by_us(stored: &kube::api::DynamicObject) -> bool {
    stored
        .metadata
        .managed_fields
        .as_ref()
        .is_none_or(|fields| {
            fields
                .iter()
                .filter(|f| f.subresource.as_deref() != Some("status"))
                .all(|f| f.manager.as_deref() == Some(cluster::FIELD_MANAGER))
        })
}

async fn wait_established(cluster: &Cluster, name: &str) -> Result<()> {
    let gvk =
        kube::core::GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let started = Instant::now();
    loop {
        if let Some(crd) = cluster.get(&gvk, None, name).await? {
            let value = super::to_value(&crd);
            let established = value
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.get("type").and_then(Value::as_str) == Some("Established")
                            && c.get("status").and_then(Value::as_str) == Some("True")
                    })
                });
            if established {
                cluster.refresh_discovery();
                return Ok(());
            }
        }
        if started.elapsed() > CRD_WAIT {
            return Err(Error::Refused(format!(
                "CustomResourceDefinition `{name}` on cluster `{}` did not become Established within {}s",
                cluster.name(),
                CRD_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Applies the objects to one cluster, staged, and prunes what the previous inventory had and
/// this one does not. Returns the new inventory (on failure: the old one plus what was applied).
async fn apply_to_cluster(
    cluster: &Cluster,
    objects: &[Value],
    namespace_override: Option<&str>,
    system_namespace: &str,
    previous: &ClusterInventory,
) -> (ClusterInventory, ClusterOutcome) {
    let mut applied: Vec<DispatchedObject> = Vec::new();
    let mut outcome = ClusterOutcome {
        cluster: cluster.name().to_owned(),
        applied: 0,
        deleted: 0,
        requests: 0,
        writes: 0,
        error: None,
    };
    let result: Result<()> = async {
        // Objects without a namespace go to the topology's or the system namespace, which a
        // managed cluster may not have yet (a cluster-scoped object simply ignores it).
        let default_namespace = namespace_override.unwrap_or(system_namespace);
        let needs_default = objects.iter().any(|o| {
            namespace_override.is_some() || o.pointer("/metadata/namespace").and_then(Value::as_str).is_none()
        });
        let declared = objects.iter().any(|o| {
            o.get("kind").and_then(Value::as_str) == Some("Namespace")
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(default_namespace)
        });
        if needs_default && !declared {
            cluster
                .create_if_missing(&serde_json::json!({
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": default_namespace},
                }))
                .await?;
        }
        let mut ordered: Vec<&Value> = objects.iter().collect();
        ordered.sort_by_key(|o| rank(o));
        for stage in [0u8, 1, 2] {
            let batch: Vec<&Value> = ordered
                .iter()
                .copied()
                .filter(|o| rank(o).min(2) == stage)
                .collect();
            if batch.is_empty() {
                continue;
            }
            let before =
                existing(cluster, &batch, system_namespace, namespace_override, previous).await;
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
                                .apply_placed(object, system_namespace, namespace_override)
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
            let mut succeeded = Vec::new();
            for result in results.into_iter().flatten() {
                match result {
                    Ok(pair) => succeeded.push(pair),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            let mut crds = Vec::new();
            for (object, stored) in succeeded {
                let mut reference = ObjectRef::of(&object).unwrap_or(ObjectRef {
                    api_version: String::new(),
                    kind: String::new(),
                    namespace: None,
                    name: String::new(),
                });
                reference.namespace.clone_from(&stored.metadata.namespace);
                let was_ours = previous
                    .objects
                    .iter()
                    .find(|o| o.object == reference)
                    .map(|o| o.created);
                let key = (
                    reference.api_version.clone(),
                    reference.kind.clone(),
                    reference.namespace.clone(),
                    reference.name.clone(),
                );
                applied.push(DispatchedObject {
                    uid: stored.metadata.uid.clone().unwrap_or_default(),
                    created: was_ours.unwrap_or_else(|| before.created(&key, &stored)),
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
    match result {
        Ok(()) => {
            let pruned = prune(cluster, &previous.objects, &applied).await;
            match pruned {
                Ok(count) => {
                    outcome.deleted = count;
                    (
                        ClusterInventory {
                            objects: applied,
                            error: None,
                        },
                        outcome,
                    )
                }
                Err((count, e, kept)) => {
                    outcome.deleted = count;
                    outcome.error = Some(e.clone());
                    let mut objects = applied;
                    objects.extend(kept);
                    (
                        ClusterInventory {
                            objects,
                            error: Some(e),
                        },
                        outcome,
                    )
                }
            }
        }
        Err(e) => {
            let message = e.to_string();
            outcome.error = Some(message.clone());
            // Keep everything: what was there, plus what was applied before the failure.
            let mut objects = previous.objects.clone();
            for object in applied {
                if !objects.iter().any(|o| o.object == object.object) {
                    objects.push(object);
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

/// Deletes, in reverse order, the objects of `old` that `new` lacks and that addonctl created.
/// On failure returns the count deleted, the error and the objects not yet deleted.
async fn prune(
    cluster: &Cluster,
    old: &[DispatchedObject],
    new: &[DispatchedObject],
) -> std::result::Result<usize, (usize, String, Vec<DispatchedObject>)> {
    let stale: Vec<&DispatchedObject> = old
        .iter()
        .rev()
        .filter(|o| o.created && !new.iter().any(|n| n.object == o.object))
        .collect();
    let mut deleted = 0;
    for (i, object) in stale.iter().enumerate() {
        match cluster
            .delete(
                &object.object.gvk(),
                object.object.namespace.as_deref(),
                &object.object.name,
            )
            .await
        {
            Ok(true) => deleted += 1,
            Ok(false) => {}
            Err(e) => {
                let kept = stale[i..].iter().map(|o| (*o).clone()).collect();
                return Err((deleted, e.to_string(), kept));
            }
        }
    }
    Ok(deleted)
}

/// Deletes everything an inventory holds that addonctl created, in reverse order.
pub async fn remove_all(
    cluster: &Cluster,
    inventory: &ClusterInventory,
) -> std::result::Result<usize, String> {
    prune(cluster, &inventory.objects, &[])
        .await
        .map_err(|(_, e, _)| e)
}

/// Dispatches an Application's components to its target clusters. Returns the new per-cluster
/// inventory (to store in the record) and each cluster's outcome.
pub async fn dispatch(
    ctx: &Context,
    application: &Value,
    previous: &BTreeMap<String, ClusterInventory>,
    reporter: &dyn super::Reporter,
) -> Result<(
    Vec<Placement>,
    BTreeMap<String, ClusterInventory>,
    Vec<ClusterOutcome>,
)> {
    let placements = placements(application);
    let objects = component_objects(application)?;
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
    let empty = ClusterInventory::default();
    let work = names.iter().map(|name| {
        let client = clients.get(name).cloned();
        let target = targets.get(name).cloned();
        let old = previous.get(name).unwrap_or(&empty).clone();
        let objects = &objects;
        let system_namespace = ctx.namespace.clone();
        async move {
            let client = match client {
                Some(Ok(c)) => c,
                Some(Err(e)) => return unreachable_cluster(name, old, e),
                None => {
                    return unreachable_cluster(
                        name,
                        old,
                        format!("no client for cluster `{name}`"),
                    )
                }
            };
            let counters = client.counters();
            let (requests, writes) = (counters.requests(), counters.writes());
            let (inventory, mut outcome) = match target {
                Some(namespace) => {
                    apply_to_cluster(
                        &client,
                        objects,
                        namespace.as_deref(),
                        &system_namespace,
                        &old,
                    )
                    .await
                }
                // No longer a target: delete what addonctl created there.
                None => apply_to_cluster(&client, &[], None, &system_namespace, &old).await,
            };
            outcome.requests = counters.requests() - requests;
            outcome.writes = counters.writes() - writes;
            (name.clone(), inventory, outcome)
        }
    });
    let results: Vec<(String, ClusterInventory, ClusterOutcome)> = stream::iter(work)
        .buffer_unordered(CLUSTER_CONCURRENCY)
        .collect()
        .await;
    let mut inventories = BTreeMap::new();
    let mut outcomes = Vec::new();
    for (name, inventory, outcome) in results {
        match &outcome.error {
            Some(e) => reporter.step(&format!("cluster `{name}`: failed: {e}")),
            None => reporter.step(&format!(
                "cluster `{name}`: {} objects applied, {} deleted",
                outcome.applied, outcome.deleted
            )),
        }
        if targets.contains_key(&name) || !inventory.objects.is_empty() || inventory.error.is_some()
        {
            inventories.insert(name, inventory);
        }
        outcomes.push(outcome);
    }
    outcomes.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    Ok((placements, inventories, outcomes))
}

/// The outcome for a cluster that cannot be worked on: its inventory is kept as it was.
fn unreachable_cluster(
    name: &str,
    old: ClusterInventory,
    error: String,
) -> (String, ClusterInventory, ClusterOutcome) {
    (
        name.to_owned(),
        ClusterInventory {
            objects: old.objects,
            error: Some(error.clone()),
        },
        ClusterOutcome {
            cluster: name.to_owned(),
            applied: 0,
            deleted: 0,
            requests: 0,
            writes: 0,
            error: Some(error),
        },
    )
}

/// One object on one cluster, as `status` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceStatus {
    /// Kind.
    pub kind: String,
    /// Namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Whether it exists.
    pub exists: bool,
    /// Desired replicas (workloads: `spec.replicas`, DaemonSets: `desiredNumberScheduled`, unknown
    /// until the DaemonSet's controller has observed it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    /// Ready replicas (DaemonSets: `numberReady`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i64>,
    /// When it was created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
}

impl ResourceStatus {
    /// Whether this is a workload (Deployment, DaemonSet, StatefulSet).
    pub fn is_workload(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "Deployment" | "DaemonSet" | "StatefulSet"
        )
    }

    /// A workload is ready when it exists and ready ≥ desired.
    pub fn is_ready(&self) -> bool {
        self.exists && self.ready_replicas.unwrap_or(0) >= self.replicas.unwrap_or(1)
    }
}

/// One cluster's part of `status`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// The cluster.
    pub cluster: String,
    /// Why the last apply or this status read failed there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every object addonctl applied there.
    pub resources: Vec<ResourceStatus>,
}

fn replicas_of(kind: &str, object: &Value) -> (Option<i64>, Option<i64>) {
    let int = |p: &str| object.pointer(p).and_then(Value::as_i64);
    match kind {
        "Deployment" | "StatefulSet" => (
            Some(int("/spec/replicas").unwrap_or(1)),
            Some(int("/status/readyReplicas").unwrap_or(0)),
        ),
        // Until its controller has observed it, a DaemonSet's status says nothing (0 of 0
        // scheduled): the desired count is unknown and it is not ready.
        "DaemonSet" => (
            object
                .pointer("/status/observedGeneration")
                .and_then(Value::as_i64)
                .map(|_| int("/status/desiredNumberScheduled").unwrap_or(0)),
            Some(int("/status/numberReady").unwrap_or(0)),
        ),
        _ => (None, None),
    }
}

/// Reads every dispatched object back from its cluster (bounded concurrency per cluster).
pub async fn health(
    ctx: &Context,
    dispatched: &BTreeMap<String, ClusterInventory>,
) -> Result<Vec<ClusterStatus>> {
    let names = dispatched.keys().cloned().collect();
    let clients = clients(ctx, &names).await?;
    let work = dispatched.iter().map(|(name, inventory)| {
        let client = clients.get(name).cloned();
        async move {
            let client = match client {
                Some(Ok(c)) => c,
                Some(Err(e)) => {
                    return ClusterStatus {
                        cluster: name.clone(),
                        error: Some(e),
                        resources: Vec::new(),
                    }
                }
                None => {
                    return ClusterStatus {
                        cluster: name.clone(),
                        error: Some(format!("cluster `{name}` is no longer joined")),
                        resources: Vec::new(),
                    }
                }
            };
            let reads: Vec<std::result::Result<ResourceStatus, String>> =
                stream::iter(&inventory.objects)
                    .map(|o| {
                        let client = &client;
                        async move {
                            let stored = client
                                .get(
                                    &o.object.gvk(),
                                    o.object.namespace.as_deref(),
                                    &o.object.name,
                                )
                                .await
                                .map_err(|e| e.to_string())?;
                            let value = stored.as_ref().map_or(Value::Null, super::to_value);
                            let (replicas, ready_replicas) = replicas_of(&o.object.kind, &value);
                            Ok(ResourceStatus {
                                kind: o.object.kind.clone(),
                                namespace: o.object.namespace.clone(),
                                name: o.object.name.clone(),
                                exists: stored.is_some(),
                                replicas: stored.as_ref().and(replicas),
                                ready_replicas: stored.as_ref().and(ready_replicas),
                                creation_timestamp: value
                                    .pointer("/metadata/creationTimestamp")
                                    .and_then(Value::as_str)
                                    .map(str::to_owned),
                            })
                        }
                    })
                    .buffered(OBJECT_CONCURRENCY)
                    .collect()
                    .await;
            let mut resources = Vec::new();
            let mut error = inventory.error.clone();
            for read in reads {
                match read {
                    Ok(r) => resources.push(r),
                    Err(e) => error = Some(e),
                }
            }
            ClusterStatus {
                cluster: name.clone(),
                error,
                resources,
            }
        }
    });
    Ok(stream::iter(work)
        .buffered(CLUSTER_CONCURRENCY)
        .collect()
        .await)
}
