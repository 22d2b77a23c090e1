//! Per-cluster health: every object the direct engine dispatched, read back from its cluster
//! (each workload with a GET, the other objects with one metadata-only list per kind and
//! namespace).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::stream::{self, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::chrono::SecondsFormat;
use serde::Serialize;
use serde_json::Value;

use crate::cluster::Cluster;
use crate::state::clusters::OBJECT_CONCURRENCY;
use crate::state::record::{ClusterInventory, DispatchedObject, ObjectRef};
use crate::state::{to_value, Store};
use crate::Result;

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
    /// `ready`, `notReady` (exists, a workload short of ready replicas) or `missing`.
    pub state: ResourceState,
    /// Desired replicas (workloads: `spec.replicas`, DaemonSets: `desiredNumberScheduled`, unknown
    /// until the DaemonSet's controller has observed it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    /// Ready replicas at the workload's current version (DaemonSets: of `numberReady`; see
    /// [`replicas_of`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i64>,
    /// When it was created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// Its apiVersion (not shown: what a wait watches it by).
    #[serde(skip)]
    pub api_version: String,
    /// Its resourceVersion as read (not shown: where a wait's watch of it starts).
    #[serde(skip)]
    pub resource_version: Option<String>,
}

/// Whether one object is there and ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ResourceState {
    /// It exists and, for a workload, has its ready replicas.
    Ready,
    /// It exists, but a workload is short of ready replicas.
    NotReady,
    /// It does not exist.
    Missing,
}

impl ResourceState {
    /// The state of an object of `kind` that `exists`, with these replica counts.
    pub fn of(
        kind: &str,
        exists: bool,
        replicas: Option<i64>,
        ready_replicas: Option<i64>,
    ) -> Self {
        if !exists {
            return ResourceState::Missing;
        }
        if is_workload_kind(kind) && ready_replicas.unwrap_or(0) < replicas.unwrap_or(1) {
            ResourceState::NotReady
        } else {
            ResourceState::Ready
        }
    }
}

/// One cluster's health in a word, as `status -o json` and an `Addon`'s status both say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ClusterHealth {
    /// Every object there, every workload ready.
    Healthy,
    /// An object missing, or a workload short of ready replicas.
    Progressing,
    /// It could not be read (or the last apply failed there).
    Unreachable,
}

impl ClusterHealth {
    /// The word: `healthy`, `progressing`, `unreachable`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterHealth::Healthy => "healthy",
            ClusterHealth::Progressing => "progressing",
            ClusterHealth::Unreachable => "unreachable",
        }
    }
}

impl ClusterStatus {
    /// The cluster's health, and what keeps it from healthy (`0/1 workloads ready, 1 object
    /// missing`, the error).
    pub fn health(&self) -> (ClusterHealth, Option<String>) {
        if let Some(error) = &self.error {
            return (ClusterHealth::Unreachable, Some(error.clone()));
        }
        let (ready, total, missing) = self.readiness();
        if missing == 0 && ready == total {
            return (ClusterHealth::Healthy, None);
        }
        let mut problems = Vec::new();
        if ready < total {
            problems.push(format!("{ready}/{total} workloads ready"));
        }
        if missing > 0 {
            let missing_names: Vec<String> = self
                .resources
                .iter()
                .filter(|r| !r.exists)
                .take(3)
                .map(|r| format!("{} {}", r.kind, r.name))
                .collect();
            let more = if missing > missing_names.len() {
                format!(" and {} more", missing - missing_names.len())
            } else {
                String::new()
            };
            problems.push(format!(
                "{missing} {} missing ({}{more})",
                if missing == 1 { "object" } else { "objects" },
                missing_names.join(", ")
            ));
        }
        (ClusterHealth::Progressing, Some(problems.join(", ")))
    }

    /// Workloads ready, workloads, and objects missing on this cluster.
    pub fn readiness(&self) -> (usize, usize, usize) {
        let workloads = self.resources.iter().filter(|r| r.is_workload());
        let total = workloads.clone().count();
        let ready = workloads.filter(|r| r.is_ready()).count();
        let missing = self.resources.iter().filter(|r| !r.exists).count();
        (ready, total, missing)
    }
}

impl ResourceStatus {
    /// Whether this is a workload (Deployment, DaemonSet, StatefulSet).
    pub fn is_workload(&self) -> bool {
        is_workload_kind(&self.kind)
    }

    /// A workload is ready when it exists and ready ≥ desired.
    pub fn is_ready(&self) -> bool {
        ResourceState::of(&self.kind, self.exists, self.replicas, self.ready_replicas)
            == ResourceState::Ready
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
    /// The version last applied there (clusters differ while a staged upgrade is under way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The parameters this cluster got over the stored arguments (an `Addon`'s `overrides`);
    /// `None`: the stored arguments alone. Never a secret parameter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<serde_json::Map<String, Value>>,
    /// Every object addonctl applied there.
    pub resources: Vec<ResourceStatus>,
}

/// A workload's desired replicas and its replicas ready *at its current version*.
///
/// While a rollout is under way the status counts the pods of every version: `readyReplicas`
/// may be all old pods still serving while the new ones never start. So, as `kubectl rollout
/// status` does, nothing counts until the controller has observed the current generation, and
/// then the ready pods are a lower bound of the new ones: every pod still of an older version
/// (`replicas − updatedReplicas`) may be among the ready. Once the old pods are gone it is
/// `readyReplicas`. A StatefulSet or DaemonSet updated `OnDelete` (or a partitioned
/// StatefulSet) moves to the new version only as its pods are deleted: its ready pods count.
pub(crate) fn replicas_of(kind: &str, object: &Value) -> (Option<i64>, Option<i64>) {
    let int = |p: &str| object.pointer(p).and_then(Value::as_i64);
    let observed = match (
        int("/metadata/generation"),
        int("/status/observedGeneration"),
    ) {
        (Some(generation), Some(seen)) => seen >= generation,
        (Some(_), None) => false,
        (None, _) => true,
    };
    let by_deletion = object
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        == Some("OnDelete")
        || int("/spec/updateStrategy/rollingUpdate/partition").unwrap_or(0) > 0;
    // Ready pods at the current version: `ready` of `total` pods, `updated` of them new.
    let current = |ready: i64, total: i64, updated: i64| {
        if !observed {
            0
        } else if by_deletion {
            ready
        } else {
            let old = total.saturating_sub(updated).max(0);
            ready.saturating_sub(old).clamp(0, updated.max(0))
        }
    };
    match kind {
        "Deployment" | "StatefulSet" => {
            let ready = int("/status/readyReplicas").unwrap_or(0);
            let total = int("/status/replicas").unwrap_or(ready);
            let updated = int("/status/updatedReplicas").unwrap_or(total);
            (
                Some(int("/spec/replicas").unwrap_or(1)),
                Some(current(ready, total, updated)),
            )
        }
        // Until its controller has observed it, a DaemonSet's status says nothing (0 of 0
        // scheduled): the desired count is unknown and it is not ready.
        "DaemonSet" => {
            let ready = int("/status/numberReady").unwrap_or(0);
            let total = int("/status/currentNumberScheduled").unwrap_or(ready);
            let updated = int("/status/updatedNumberScheduled").unwrap_or(total);
            (
                object
                    .pointer("/status/observedGeneration")
                    .and_then(Value::as_i64)
                    .map(|_| int("/status/desiredNumberScheduled").unwrap_or(0)),
                Some(current(ready, total, updated)),
            )
        }
        _ => (None, None),
    }
}

/// Reads every dispatched object back from its cluster (clusters spread over the cores,
/// bounded: [`crate::spread`]; bounded concurrency per cluster), in the clusters' order.
pub async fn health(
    store: Store<'_>,
    dispatched: &BTreeMap<String, ClusterInventory>,
) -> Result<Vec<ClusterStatus>> {
    let names = dispatched.keys().cloned().collect();
    let clients = store.clients(&names).await?;
    let clusters: Arc<Vec<_>> = Arc::new(
        dispatched
            .iter()
            .map(|(name, inventory)| (name.clone(), inventory.clone(), clients.get(name).cloned()))
            .collect(),
    );
    let shared = Arc::clone(&clusters);
    let mut statuses: Vec<(usize, ClusterStatus)> =
        crate::spread::each(0..clusters.len(), move |i| {
            let clusters = Arc::clone(&shared);
            async move {
                match clusters.get(i) {
                    Some((name, inventory, client)) => {
                        cluster_status(name, inventory, client.clone()).await
                    }
                    None => ClusterStatus {
                        cluster: String::new(),
                        error: Some("no such cluster".to_owned()),
                        version: None,
                        parameters: None,
                        resources: Vec::new(),
                    },
                }
            }
        })
        .map(|(i, answer)| {
            let status = answer.unwrap_or_else(|lost| {
                let (name, inventory, _) = &clusters[i];
                ClusterStatus {
                    cluster: name.clone(),
                    error: Some(lost.to_string()),
                    version: inventory.revision.as_ref().map(|r| r.version.clone()),
                    parameters: None,
                    resources: Vec::new(),
                }
            });
            (i, status)
        })
        .collect()
        .await;
    statuses.sort_by_key(|(i, _)| *i);
    Ok(statuses.into_iter().map(|(_, status)| status).collect())
}

/// One cluster's status: its objects read back (or why they could not be).
async fn cluster_status(
    name: &str,
    inventory: &ClusterInventory,
    client: Option<std::result::Result<Cluster, String>>,
) -> ClusterStatus {
    let version = inventory.revision.as_ref().map(|r| r.version.clone());
    let client = match client {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            return ClusterStatus {
                cluster: name.to_owned(),
                error: Some(e),
                version,
                parameters: None,
                resources: Vec::new(),
            }
        }
        None => {
            return ClusterStatus {
                cluster: name.to_owned(),
                error: Some(format!("cluster `{name}` is no longer joined")),
                version,
                parameters: None,
                resources: Vec::new(),
            }
        }
    };
    let reads = read_objects(&client, &inventory.objects).await;
    let mut resources = Vec::new();
    let mut error = inventory.error.clone();
    for read in reads {
        match read {
            Ok(r) => resources.push(r),
            Err(e) => error = Some(e),
        }
    }
    ClusterStatus {
        cluster: name.to_owned(),
        error,
        version,
        parameters: None,
        resources,
    }
}

/// One read of [`read_objects`]: a workload's GET, or one kind's metadata-only list.
enum Read {
    One(usize, std::result::Result<ResourceStatus, String>),
    Many(Vec<usize>, std::result::Result<Vec<ObjectMeta>, String>),
}

/// Reads `objects` back from `client`, in their order: each workload with one GET (its replicas
/// are in its spec and status), the other objects with one metadata-only list per kind and
/// namespace (narrowed to the object by name when it is the only one there, see
/// [`Cluster::metadata_of`]; one GET each when listing is forbidden, as getting may not be): an
/// addon of N objects costs its workloads plus its kinds, not N requests. At most
/// [`OBJECT_CONCURRENCY`] reads at a time.
async fn read_objects(
    client: &Cluster,
    objects: &[DispatchedObject],
) -> Vec<std::result::Result<ResourceStatus, String>> {
    let mut groups: BTreeMap<(String, String, Option<String>), Vec<usize>> = BTreeMap::new();
    let mut workloads = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        if is_workload_kind(&o.object.kind) {
            workloads.push(i);
        } else {
            groups
                .entry((
                    o.object.api_version.clone(),
                    o.object.kind.clone(),
                    o.object.namespace.clone(),
                ))
                .or_default()
                .push(i);
        }
    }
    let gets = workloads.into_iter().map(|i| {
        let object = &objects[i].object;
        futures::future::Either::Left(async move {
            let stored = client
                .get(&object.gvk(), object.namespace.as_deref(), &object.name)
                .await
                .map_err(|e| e.to_string());
            Read::One(
                i,
                stored.map(|stored| {
                    let value = stored.as_ref().map_or(Value::Null, to_value);
                    let (replicas, ready_replicas) = replicas_of(&object.kind, &value);
                    resource_status(
                        object,
                        stored.as_ref().map(|s| &s.metadata),
                        stored.as_ref().and(replicas),
                        stored.as_ref().and(ready_replicas),
                    )
                }),
            )
        })
    });
    let lists = groups.into_values().map(|indexes| {
        futures::future::Either::Right(async move {
            let object = &objects[indexes[0]].object;
            let names: Vec<&str> = indexes
                .iter()
                .map(|&i| objects[i].object.name.as_str())
                .collect();
            let listed = client
                .metadata_of(&object.gvk(), object.namespace.as_deref(), &names)
                .await;
            let found = match listed {
                Ok((items, _)) => Ok(items),
                // Allowed to get but not to list (a role of the user's own): one GET each.
                Err(crate::cluster::Error::Forbidden { .. }) => {
                    let mut items = Vec::new();
                    for name in names {
                        match client
                            .get(&object.gvk(), object.namespace.as_deref(), name)
                            .await
                        {
                            Ok(stored) => items.extend(stored.map(|s| s.metadata)),
                            Err(e) => return Read::Many(indexes, Err(e.to_string())),
                        }
                    }
                    Ok(items)
                }
                Err(e) => Err(e.to_string()),
            };
            Read::Many(indexes, found)
        })
    });
    let reads: Vec<Read> = stream::iter(gets.chain(lists))
        .buffer_unordered(OBJECT_CONCURRENCY)
        .collect()
        .await;
    let mut out: Vec<Option<std::result::Result<ResourceStatus, String>>> =
        objects.iter().map(|_| None).collect();
    for read in reads {
        match read {
            Read::One(i, result) => out[i] = Some(result),
            Read::Many(indexes, Ok(found)) => {
                for i in indexes {
                    let object = &objects[i].object;
                    let stored = found
                        .iter()
                        .find(|m| m.name.as_deref() == Some(object.name.as_str()));
                    out[i] = Some(Ok(resource_status(object, stored, None, None)));
                }
            }
            Read::Many(indexes, Err(e)) => {
                for i in indexes {
                    out[i] = Some(Err(e.clone()));
                }
            }
        }
    }
    out.into_iter().flatten().collect()
}

/// Whether objects of `kind` are workloads (see [`ResourceStatus::is_workload`]).
fn is_workload_kind(kind: &str) -> bool {
    matches!(kind, "Deployment" | "DaemonSet" | "StatefulSet")
}

/// How `object` stands, as read (`stored`: its metadata, `None` when it does not exist).
fn resource_status(
    object: &ObjectRef,
    stored: Option<&ObjectMeta>,
    replicas: Option<i64>,
    ready_replicas: Option<i64>,
) -> ResourceStatus {
    ResourceStatus {
        state: ResourceState::of(&object.kind, stored.is_some(), replicas, ready_replicas),
        kind: object.kind.clone(),
        namespace: object.namespace.clone(),
        name: object.name.clone(),
        exists: stored.is_some(),
        replicas,
        ready_replicas,
        creation_timestamp: stored
            .and_then(|m| m.creation_timestamp.as_ref())
            .map(|t| t.0.to_rfc3339_opts(SecondsFormat::Secs, true)),
        api_version: object.api_version.clone(),
        resource_version: stored.and_then(|m| m.resource_version.clone()),
    }
}
