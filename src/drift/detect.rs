//! Detection and correction on the clusters, given their clients and the desired objects (no
//! call into the stages: [`super::engine`] finds those).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::stream::{self, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use super::compare::{diff, without_excluded};
use super::{ClusterError, Drift, DriftCache, DriftKind, DriftSpec, Policy, Report};
use crate::cluster::{Cluster, FIELD_MANAGER};
use crate::model::wire::LABEL_NAME;
use crate::state::clusters::OBJECT_CONCURRENCY;
use crate::state::record::ObjectRef;
use crate::state::to_value;

/// What to check: the addon, its drift settings, and per cluster its client and the objects
/// addonctl applied there, each with its desired form (what server-side apply sent).
#[derive(Debug, Clone)]
pub struct DetectRequest {
    /// The addon (its objects carry the label `addons.oam.dev/name=<addon>`).
    pub addon: String,
    /// Policy and exclusions.
    pub spec: DriftSpec,
    /// The clusters.
    pub targets: Vec<Target>,
    /// Clusters not to list: the caller knows nothing changed there since they were last
    /// found in sync (its watches saw no other writer).
    pub vouched: BTreeSet<String>,
}

/// One cluster to check.
#[derive(Debug, Clone)]
pub struct Target {
    /// The cluster's name.
    pub name: String,
    /// Its client (`None`: it could not be reached; the reason).
    pub cluster: Result<Cluster, String>,
    /// Each object applied there (namespace resolved, as the record holds it) and its desired
    /// form (shared by every cluster that got the same parameter set).
    pub objects: Vec<(ObjectRef, Arc<Value>)>,
    /// The objects of `objects` another addon's record lists there too, with that addon: their
    /// `addons.oam.dev/name` label is the last applier's, and values the two addons render
    /// differently are reported ([`DriftKind::Shared`]), never corrected.
    pub shared: BTreeMap<ObjectRef, String>,
}

/// One cluster's findings, applied to the cache after every cluster is done.
#[derive(Default)]
struct Found {
    drifts: Vec<Drift>,
    corrected: Vec<Drift>,
    /// Deleted objects created again, with their new uids.
    recreated: Vec<(ObjectRef, String)>,
    in_sync: Vec<(ObjectRef, String)>,
    /// Changed objects as read, for their correction.
    live: Vec<(ObjectRef, Value)>,
    error: Option<String>,
    full_reads: u64,
    requests: u64,
}

/// What the listing says of one object: its `resourceVersion`, and whether only addonctl (and
/// status writers) manage its fields.
struct Listed {
    resource_version: String,
    only_ours: bool,
}

/// Checks every cluster (bounded, spread over the cores: [`crate::spread`]), correcting under
/// policy `correct`, and updates the cache. Policy `ignore` makes no request.
pub async fn detect(request: DetectRequest, cache: &mut DriftCache) -> Report {
    let mut report = Report {
        policy: request.spec.policy,
        ..Report::default()
    };
    if request.spec.policy == Policy::Ignore {
        return report;
    }
    let request = Arc::new(request);
    // Each cluster's cached versions go with its check and come back with its findings (a
    // cluster whose check is lost is read in full next time).
    let checked: Vec<(usize, DriftCache)> = request
        .targets
        .iter()
        .enumerate()
        .filter(|(_, target)| !request.vouched.contains(&target.name))
        .map(|(i, target)| (i, cache.take(&target.name)))
        .collect();
    let shared = Arc::clone(&request);
    let results: Vec<(String, Found)> = crate::spread::each(checked, move |(i, own)| {
        let request = Arc::clone(&shared);
        async move {
            let Some(target) = request.targets.get(i) else {
                return (own, Found::default());
            };
            let found = match &target.cluster {
                Ok(cluster) => check_cluster(&request, target, cluster, &own).await,
                Err(e) => Found {
                    error: Some(e.clone()),
                    ..Found::default()
                },
            };
            (own, found)
        }
    })
    .map(|((i, _), answer)| {
        let name = request
            .targets
            .get(i)
            .map(|t| t.name.clone())
            .unwrap_or_default();
        let found = match answer {
            Ok((own, found)) => {
                cache.put_back(own);
                found
            }
            Err(lost) => Found {
                error: Some(lost.to_string()),
                ..Found::default()
            },
        };
        (name, found)
    })
    .collect()
    .await;
    let mut results = results;
    results.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, found) in results {
        for drift in &found.drifts {
            cache.forget(&name, &drift.object);
        }
        for (object, version) in &found.in_sync {
            cache.observe(&name, object, version);
        }
        if let Some(error) = found.error {
            report.errors.push(ClusterError {
                cluster: name.clone(),
                error,
            });
        }
        report.drifts.extend(found.drifts);
        report.corrected.extend(found.corrected);
        report.recreated.extend(
            found
                .recreated
                .into_iter()
                .map(|(object, uid)| (name.clone(), object, uid)),
        );
        report.full_reads += found.full_reads;
        report.requests += found.requests;
    }
    report.objects = request.targets.iter().map(|t| t.objects.len()).sum();
    report.vouched = request
        .targets
        .iter()
        .filter(|t| request.vouched.contains(&t.name))
        .count();
    report.places = places(&request);
    report
}

/// Each kind, per namespace, of each reachable cluster the request compares.
fn places(request: &DetectRequest) -> Vec<super::Place> {
    let mut places: BTreeMap<_, super::Place> = BTreeMap::new();
    for target in &request.targets {
        let Ok(client) = &target.cluster else {
            continue;
        };
        for (object, _) in &target.objects {
            let place = super::Place {
                cluster: target.name.clone(),
                client: client.clone(),
                api_version: object.api_version.clone(),
                kind: object.kind.clone(),
                namespace: object.namespace.clone(),
            };
            places.entry(place.key()).or_insert(place);
        }
    }
    places.into_values().collect()
}

async fn check_cluster(
    request: &DetectRequest,
    target: &Target,
    cluster: &Cluster,
    cache: &DriftCache,
) -> Found {
    let before = cluster.counters().requests();
    let mut found = Found::default();
    if let Err(e) = compare_cluster(request, target, cluster, cache, &mut found).await {
        found.error = Some(e);
    }
    if request.spec.policy == Policy::Correct && found.error.is_none() {
        correct(request, target, cluster, &mut found).await;
    }
    found.requests = cluster.counters().requests() - before;
    found
}

/// Lists each kind once, reads in full only what changed, and compares.
async fn compare_cluster(
    request: &DetectRequest,
    target: &Target,
    cluster: &Cluster,
    cache: &DriftCache,
    found: &mut Found,
) -> Result<(), String> {
    let mut groups: BTreeMap<(String, String, Option<String>), Vec<usize>> = BTreeMap::new();
    for (i, (object, _)) in target.objects.iter().enumerate() {
        groups
            .entry((
                object.api_version.clone(),
                object.kind.clone(),
                object.namespace.clone(),
            ))
            .or_default()
            .push(i);
    }
    let selector = format!("{LABEL_NAME}={}", request.addon);
    let mut to_read: Vec<usize> = Vec::new();
    for ((_, _, namespace), indexes) in &groups {
        let gvk = target.objects[indexes[0]].0.gvk();
        let listed = list_metadata(cluster, &gvk, namespace.as_deref(), &selector).await?;
        for &i in indexes {
            let object = &target.objects[i].0;
            match listed.as_ref().and_then(|l| l.get(&object.name)) {
                Some(listed) => match cache.get(&target.name, object) {
                    Some(cached) if cached == listed.resource_version => {}
                    None if listed.only_ours => found
                        .in_sync
                        .push((object.clone(), listed.resource_version.clone())),
                    _ => to_read.push(i),
                },
                // Not listed: deleted, or no longer labelled (read to tell).
                None => to_read.push(i),
            }
        }
    }
    let reads: Vec<Result<(usize, Option<Value>), String>> = stream::iter(to_read)
        .map(|i| async move {
            let (object, _) = &target.objects[i];
            let live = cluster
                .get(&object.gvk(), object.namespace.as_deref(), &object.name)
                .await
                .map_err(|e| e.to_string())?;
            Ok((i, live.as_ref().map(to_value)))
        })
        .buffered(OBJECT_CONCURRENCY)
        .collect()
        .await;
    for read in reads {
        let (i, live) = read?;
        found.full_reads += 1;
        let (object, desired) = &target.objects[i];
        let drift = |kind| Drift {
            cluster: target.name.clone(),
            object: object.clone(),
            kind,
        };
        let Some(live) = live else {
            found.drifts.push(drift(DriftKind::Deleted));
            continue;
        };
        let mut excluded = request.spec.excluded_paths(object);
        let shared = target.shared.get(object);
        if shared.is_some() {
            excluded.push(owner_label());
        }
        let paths = diff(desired, &live, &excluded);
        // The other addon that lists it applied it last (its label): their renders differ.
        // Otherwise (this addon's label, another one, none) it is drift like any other.
        let last = live
            .pointer("/metadata/labels")
            .and_then(|l| l.get(LABEL_NAME))
            .and_then(Value::as_str)
            .filter(|owner| shared.is_some_and(|other| other.as_str() == *owner));
        if let (Some(owner), false) = (last, paths.is_empty()) {
            found.drifts.push(drift(DriftKind::Shared {
                with: owner.to_owned(),
                paths,
            }));
            continue;
        }
        if paths.is_empty() {
            if let Some(version) = live
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
            {
                found.in_sync.push((object.clone(), version.to_owned()));
            }
        } else {
            found.drifts.push(drift(DriftKind::Changed { paths }));
            found.live.push((object.clone(), live));
        }
    }
    Ok(())
}

/// The path of the label that names the addon that applied an object last.
fn owner_label() -> super::FieldPath {
    super::FieldPath(vec![
        super::Segment::Key("metadata".to_owned()),
        super::Segment::Key("labels".to_owned()),
        super::Segment::Key(LABEL_NAME.to_owned()),
    ])
}

/// One metadata-only list of a kind (in a namespace) by label: name → what it says. `None` when
/// the kind is not served (its CRD is gone: every object of it is deleted).
async fn list_metadata(
    cluster: &Cluster,
    gvk: &kube::core::GroupVersionKind,
    namespace: Option<&str>,
    selector: &str,
) -> Result<Option<BTreeMap<String, Listed>>, String> {
    let Some(api) = kind_api(cluster, gvk, namespace).await? else {
        return Ok(None);
    };
    let (items, _) = cluster
        .list_metadata(&api, &ListParams::default().labels(selector))
        .await
        .map_err(|e| format!("listing {} on cluster `{}`: {e}", gvk.kind, cluster.name()))?;
    Ok(Some(
        items
            .into_iter()
            .filter_map(|metadata| {
                let only_ours = only_ours(&metadata);
                Some((
                    metadata.name?,
                    Listed {
                        resource_version: metadata.resource_version?,
                        only_ours,
                    },
                ))
            })
            .collect(),
    ))
}

/// The API of a kind on `cluster`, in `namespace` when the kind is namespaced (and one is
/// given); `None` when the cluster does not serve the kind.
pub async fn kind_api(
    cluster: &Cluster,
    gvk: &kube::core::GroupVersionKind,
    namespace: Option<&str>,
) -> Result<Option<Api<DynamicObject>>, String> {
    let Some(kind) = cluster.kind(gvk).await.map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    Ok(Some(cluster.api_of_kind(&kind, namespace).0))
}

/// Whether every manager of the object's fields is addonctl, or writes its status only.
pub fn only_ours(metadata: &ObjectMeta) -> bool {
    metadata.managed_fields.as_ref().is_some_and(|entries| {
        entries.iter().all(|entry| {
            entry.manager.as_deref() == Some(FIELD_MANAGER)
                || entry.subresource.as_deref() == Some("status")
                || entry.fields_v1.as_ref().is_some_and(|fields| {
                    fields
                        .0
                        .as_object()
                        .is_some_and(|m| m.keys().all(|k| k == "f:status"))
                })
        })
    })
}

/// Namespaces first, then CRDs, then everything else.
fn rank(kind: &str) -> u8 {
    match kind {
        "Namespace" => 0,
        "CustomResourceDefinition" => 1,
        _ => 2,
    }
}

/// Applies every drifted object again (see the module's flow, step 4).
async fn correct(request: &DetectRequest, target: &Target, cluster: &Cluster, found: &mut Found) {
    let mut drifts: Vec<Drift> = found
        .drifts
        .iter()
        .filter(|d| !matches!(d.kind, DriftKind::Shared { .. }))
        .cloned()
        .collect();
    drifts.sort_by_key(|d| rank(&d.object.kind));
    for drift in drifts {
        let Some((_, desired)) = target.objects.iter().find(|(o, _)| o == &drift.object) else {
            continue;
        };
        let mut body = match &drift.kind {
            DriftKind::Deleted => Value::clone(desired),
            DriftKind::Shared { .. } => continue,
            DriftKind::Changed { .. } => {
                let live = found
                    .live
                    .iter()
                    .find(|(o, _)| o == &drift.object)
                    .map_or(&Value::Null, |(_, l)| l);
                without_excluded(desired, live, &request.spec.excluded_paths(&drift.object))
            }
        };
        let namespace = drift.object.namespace.clone();
        if let (Some(ns), Some(metadata)) = (
            &namespace,
            body.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            metadata.insert("namespace".to_owned(), Value::String(ns.clone()));
        }
        match cluster
            .apply(&body, namespace.as_deref().unwrap_or("default"))
            .await
        {
            Ok(stored) => {
                if let (DriftKind::Deleted, Some(uid)) = (&drift.kind, &stored.metadata.uid) {
                    found.recreated.push((drift.object.clone(), uid.clone()));
                }
                if let Some(version) = stored.metadata.resource_version {
                    found.in_sync.push((drift.object.clone(), version));
                }
                found.corrected.push(drift);
            }
            Err(e) => {
                found.error = Some(format!("correcting {}: {e}", drift.object));
                return;
            }
        }
    }
}
