//! Per-cluster health: every object the direct engine dispatched, read back from its cluster.

use std::collections::BTreeMap;

use futures::stream::{self, StreamExt};
use serde::Serialize;
use serde_json::Value;

use crate::state::clusters::{CLUSTER_CONCURRENCY, OBJECT_CONCURRENCY};
use crate::state::record::ClusterInventory;
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
    /// Ready replicas (DaemonSets: `numberReady`).
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
        let workload = matches!(kind, "Deployment" | "DaemonSet" | "StatefulSet");
        if workload && ready_replicas.unwrap_or(0) < replicas.unwrap_or(1) {
            ResourceState::NotReady
        } else {
            ResourceState::Ready
        }
    }
}

impl ClusterStatus {
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
        matches!(
            self.kind.as_str(),
            "Deployment" | "DaemonSet" | "StatefulSet"
        )
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
    store: Store<'_>,
    dispatched: &BTreeMap<String, ClusterInventory>,
) -> Result<Vec<ClusterStatus>> {
    let names = dispatched.keys().cloned().collect();
    let clients = store.clients(&names).await?;
    let work = dispatched.iter().map(|(name, inventory)| {
        let client = clients.get(name).cloned();
        async move {
            let client = match client {
                Some(Ok(c)) => c,
                Some(Err(e)) => {
                    return ClusterStatus {
                        cluster: name.clone(),
                        error: Some(e),
                        version: inventory.revision.as_ref().map(|r| r.version.clone()),
                        parameters: None,
                        resources: Vec::new(),
                    }
                }
                None => {
                    return ClusterStatus {
                        cluster: name.clone(),
                        error: Some(format!("cluster `{name}` is no longer joined")),
                        version: inventory.revision.as_ref().map(|r| r.version.clone()),
                        parameters: None,
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
                            let value = stored.as_ref().map_or(Value::Null, to_value);
                            let (replicas, ready_replicas) = replicas_of(&o.object.kind, &value);
                            let replicas = stored.as_ref().and(replicas);
                            let ready_replicas = stored.as_ref().and(ready_replicas);
                            Ok(ResourceStatus {
                                state: ResourceState::of(
                                    &o.object.kind,
                                    stored.is_some(),
                                    replicas,
                                    ready_replicas,
                                ),
                                kind: o.object.kind.clone(),
                                namespace: o.object.namespace.clone(),
                                name: o.object.name.clone(),
                                exists: stored.is_some(),
                                replicas,
                                ready_replicas,
                                creation_timestamp: value
                                    .pointer("/metadata/creationTimestamp")
                                    .and_then(Value::as_str)
                                    .map(str::to_owned),
                                api_version: o.object.api_version.clone(),
                                resource_version: stored
                                    .as_ref()
                                    .and_then(|s| s.metadata.resource_version.clone()),
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
                version: inventory.revision.as_ref().map(|r| r.version.clone()),
                parameters: None,
                resources,
            }
        }
    });
    Ok(stream::iter(work)
        .buffered(CLUSTER_CONCURRENCY)
        .collect()
        .await)
}
