//! The direct engine on one cluster: the survey (changing nothing), then the staged apply
//! (Namespaces and CRDs first; the objects of the kinds those CRDs define once they are
//! Established, the others while they become so), then the prune of what the cluster no longer
//! needs.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kube::api::DynamicObject;
use serde_json::Value;

use super::targets::rank;
use super::{deletion, ClusterOutcome, Removal, OBJECT_CONCURRENCY};
use crate::cluster::set::LOCAL;
use crate::cluster::{Change, Cluster};
use crate::state::record::{ClusterInventory, DispatchedObject, ObjectRef};
use crate::state::to_value;
use crate::{Error, Result};

/// One cluster's part of a dispatch, found before anything is applied: the namespace to create
/// when it is missing, and every object in apply order with whether addonctl creates it.
#[derive(Debug, Clone, Default)]
pub(super) struct ClusterPlan {
    pub(super) ensure_namespaces: Vec<String>,
    /// Of those, the ones the survey found, with their uid: not read again before the apply.
    pub(super) existing_namespaces: BTreeMap<String, String>,
    pub(super) objects: Vec<DispatchedObject>,
    /// The cluster's revision when the survey listed (before anything is applied), when it
    /// listed anything: what the apply counts written objects from.
    pub(super) revision: Option<u64>,
}

impl ClusterPlan {
    pub(super) fn created(&self, object: &ObjectRef) -> Option<bool> {
        self.objects
            .iter()
            .find(|o| o.object.same_object(object))
            .map(|o| o.created)
    }
}

/// One cluster of a dispatch: where objects go there and what the addon (and the others)
/// already hold there.
pub(super) struct Target<'a> {
    pub(super) cluster: &'a Cluster,
    pub(super) name: &'a str,
    pub(super) namespace_override: Option<&'a str>,
    pub(super) system_namespace: &'a str,
    pub(super) previous: &'a ClusterInventory,
    pub(super) others: Option<&'a BTreeMap<ObjectRef, (String, bool)>>,
}

impl Target<'_> {
    pub(super) fn previously_created(&self, object: &ObjectRef) -> Option<bool> {
        self.previous
            .objects
            .iter()
            .find(|o| o.object.same_object(object))
            .map(|o| o.created)
    }

    /// Whether addonctl creates `object`, when that is known without asking the cluster: from
    /// the previous inventory, another addon's record, or a kind not `served` yet.
    fn known_created(&self, object: &ObjectRef, served: bool) -> Option<bool> {
        self.previously_created(object)
            .or_else(|| {
                self.others
                    .and_then(|others| others.get(object))
                    .map(|(_, created)| *created)
            })
            .or((!served).then_some(true))
    }
}

/// Plans the apply on one cluster without changing anything: resolves each object's namespace
/// (cached discovery), and finds whether addonctl creates it. That is known for objects the
/// previous inventory (or another addon's record) lists, for kinds not served yet (their CRD
/// comes with the addon), and for objects in a namespace the cluster lacks (nothing lives
/// there yet: namespaces are looked at first); the others are looked up with one
/// metadata-only list per kind and namespace (narrowed to the object by its name when it is the
/// only one of its kind there), so that an object that existed before is recorded as not
/// created by addonctl even when the forced apply takes over every field of its other managers
/// (which leaves addonctl as the only manager, indistinguishable afterwards from an object it
/// created).
pub(super) async fn survey(
    target: &Target<'_>,
    objects: &[Value],
    scopes: &BTreeMap<(String, String), bool>,
) -> Result<ClusterPlan> {
    let mut plan = ClusterPlan::default();
    // The namespaces the namespaced objects go to (the topology's, the one they name, else the
    // system namespace), which a managed cluster may not have yet.
    let mut needed: Vec<String> = Vec::new();
    let mut unknown: Unknown = BTreeMap::new();
    for object in objects {
        let Some(mut reference) = ObjectRef::of(object) else {
            continue;
        };
        let gvk = reference.gvk();
        let (namespaced, served) = match target.cluster.kind(&gvk).await? {
            Some(kind) => (
                kind.caps().scope == kube::discovery::Scope::Namespaced,
                true,
            ),
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
        let known = target.known_created(&reference, served);
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
    // Namespaces first: one the cluster lacks holds nothing to look up.
    let undeclared = namespaces_stored(target, objects, &needed).await?;
    let (namespaces, others): (Unknown, Unknown) = unknown
        .into_iter()
        .partition(|((api_version, kind, _), _)| api_version == "v1" && kind == "Namespace");
    let found = look_up(target.cluster, &namespaces, &mut plan).await?;
    let mut missing: BTreeSet<&str> = undeclared
        .iter()
        .filter(|(_, stored)| stored.is_none())
        .map(|(name, _)| name.as_str())
        .collect();
    missing.extend(
        namespaces
            .values()
            .flatten()
            .map(|&i| plan.objects[i].object.name.as_str())
            .filter(|name| !found.contains(*name)),
    );
    let others: Unknown = others
        .into_iter()
        .filter(|((_, _, namespace), _)| {
            namespace
                .as_deref()
                .is_none_or(|namespace| !missing.contains(namespace))
        })
        .collect();
    look_up(target.cluster, &others, &mut plan).await?;
    ensure_namespaces(target, &undeclared, &mut plan);
    Ok(plan)
}

/// One list of [`look_up`]: the objects found (whether addonctl alone manages each) and the
/// cluster's revision.
type Listing = Result<(BTreeMap<String, bool>, Option<u64>)>;

/// Objects whose creation is unknown, by `(apiVersion, kind, namespace)`: their indexes in the
/// plan.
type Unknown = BTreeMap<(String, String, Option<String>), Vec<usize>>;

fn namespace_ref(name: &str) -> ObjectRef {
    ObjectRef {
        api_version: "v1".to_owned(),
        kind: "Namespace".to_owned(),
        namespace: None,
        name: name.to_owned(),
    }
}

/// Looks the `unknown` objects up (one metadata-only list per kind and namespace, concurrently)
/// and marks in the plan those that exist and addonctl did not create; notes the cluster's
/// revision the lists saw; returns the names of those found. After the first failure no
/// further list is started (each could cost a timeout).
async fn look_up(
    cluster: &Cluster,
    unknown: &Unknown,
    plan: &mut ClusterPlan,
) -> Result<BTreeSet<String>> {
    let objects_of = |indexes: &[usize]| -> Vec<String> {
        indexes
            .iter()
            .map(|&i| plan.objects[i].object.name.clone())
            .collect()
    };
    let listings: Vec<Option<Listing>> =
        crate::cluster::bounded::until_failure(unknown, OBJECT_CONCURRENCY, |(kind, indexes)| {
            let names = objects_of(indexes);
            async move {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                existing(cluster, kind, &names).await
            }
        })
        .await;
    let mut names = BTreeSet::new();
    for (indexes, listing) in unknown.values().zip(listings) {
        // A list not started: one before it failed, and its error is returned first.
        let Some(listing) = listing else { continue };
        let (found, revision) = listing?;
        plan.revision = plan.revision.max(revision);
        for &i in indexes {
            if let Some(ours) = found.get(&plan.objects[i].object.name) {
                plan.objects[i].created = *ours;
                names.insert(plan.objects[i].object.name.clone());
            }
        }
    }
    Ok(names)
}

/// Which of `names` of one kind in one namespace (`(apiVersion, kind, namespace)`) exist, each
/// with whether addonctl created it, read with one metadata-only list; with the cluster's
/// revision the list saw.
pub(crate) async fn existing(
    cluster: &Cluster,
    (api_version, kind, namespace): &(String, String, Option<String>),
    names: &[&str],
) -> Listing {
    let gvk = ObjectRef {
        api_version: api_version.clone(),
        kind: kind.clone(),
        namespace: None,
        name: String::new(),
    }
    .gvk();
    let (items, revision) = cluster
        .metadata_of(&gvk, namespace.as_deref(), names)
        .await?;
    let found = items
        .iter()
        .filter_map(|m| Some((m.name.clone()?, deletion::metadata_created_by_us(m))))
        .collect();
    Ok((found, revision))
}

/// The namespaces the objects need that the addon does not declare itself (in the order
/// needed), each as stored (its uid) or `None` when the cluster lacks it.
async fn namespaces_stored(
    target: &Target<'_>,
    objects: &[Value],
    needed: &[String],
) -> Result<Vec<(String, Option<String>)>> {
    let declared = |name: &str| {
        objects.iter().any(|o| {
            o.get("kind").and_then(Value::as_str) == Some("Namespace")
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        })
    };
    let mut out = Vec::new();
    for name in needed.iter().filter(|n| !declared(n)) {
        // The control plane's system namespace exists: the control-plane part of the apply made
        // it (and holds the addon's lock there).
        if target.name == LOCAL
            && name == target.system_namespace
            && target.previously_created(&namespace_ref(name)).is_none()
        {
            out.push((name.clone(), Some(String::new())));
            continue;
        }
        let stored = target
            .cluster
            .get(&namespace_ref(name).gvk(), None, name)
            .await?;
        out.push((
            name.clone(),
            stored.map(|s| s.metadata.uid.unwrap_or_default()),
        ));
    }
    Ok(out)
}

/// Plans the namespaces the objects need that the addon does not declare itself (`undeclared`,
/// as [`namespaces_stored`] found them): each is created when the cluster lacks it, and
/// recorded as created by addonctl for this addon (first, so deleted last — and only when
/// nothing else lives in it, see [`deletion`]); one that existed before is not recorded, so
/// never deleted.
fn ensure_namespaces(
    target: &Target<'_>,
    undeclared: &[(String, Option<String>)],
    plan: &mut ClusterPlan,
) {
    let mut entries = Vec::new();
    for (name, stored) in undeclared {
        let reference = namespace_ref(name);
        if let Some(uid) = stored {
            plan.existing_namespaces.insert(name.clone(), uid.clone());
        }
        plan.ensure_namespaces.push(name.clone());
        // Recorded when addonctl creates it (and kept while an earlier run recorded it).
        if let Some(created) = target
            .previously_created(&reference)
            .or(stored.is_none().then_some(true))
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
}

/// Waits until a CRD is `Established` and discovery serves its kind (at most [`CRD_WAIT`]),
/// starting from `applied` (the CRD as its apply returned it): while not established, watch the
/// CRD for its next change (the event carries it; another event makes it read again); once
/// established, wait for discovery with short growing pauses (discovery cannot be watched).
pub(crate) async fn wait_established(cluster: &Cluster, applied: &DynamicObject) -> Result<()> {
    let gvk =
        kube::core::GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let name = applied.metadata.name.as_deref().unwrap_or_default();
    let started = Instant::now();
    let mut pause = Duration::from_millis(5);
    let mut known = Some(applied.clone());
    loop {
        let crd = match known.take() {
            Some(crd) => Some(crd),
            None => cluster.get(&gvk, None, name).await?,
        };
        let mut version = None;
        if let Some(crd) = crd {
            let value = to_value(&crd);
            // Established comes a moment before the API server's discovery lists the new kind:
            // wait for that too, so the objects of the kind that follow find it.
            if is_established(&value) {
                cluster.refresh_discovery();
                let served = match served_kind(&value) {
                    Some(kind) => cluster.kind(&kind).await?.is_some(),
                    None => true,
                };
                if served {
                    return Ok(());
                }
                // Established stays so: only discovery is asked again.
                known = Some(crd);
            } else {
                version.clone_from(&crd.metadata.resource_version);
            }
        }
        let Some(left) = CRD_WAIT.checked_sub(started.elapsed()) else {
            return Err(Error::CrdNotEstablished {
                crd: name.to_string(),
                cluster: cluster.name().to_owned(),
                seconds: CRD_WAIT.as_secs(),
            });
        };
        // A watch that cannot be made (no `watch` permission, a timeout) falls back to a pause.
        let watched = match version {
            Some(version) => match cluster.next_change(&gvk, None, name, &version, left).await {
                Ok(Change::Object(object)) => {
                    known = Some(*object);
                    true
                }
                Ok(Change::Other | Change::Nothing) => true,
                Err(_) => false,
            },
            None => false,
        };
        if !watched {
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }
}

/// Splits `objects` into those of a kind one of `crds` defines (they wait for those CRDs) and
/// the others; `value` gives an object's manifest.
pub(crate) fn of_kinds_defined_by<'a, 'b, T>(
    crds: impl IntoIterator<Item = &'a Value>,
    objects: Vec<T>,
    value: impl Fn(&T) -> &'b Value,
) -> (Vec<T>, Vec<T>) {
    let text = |v: &Value, pointer: &str| v.pointer(pointer)?.as_str().map(str::to_owned);
    let defined: BTreeSet<(String, String)> = crds
        .into_iter()
        .filter_map(|crd| Some((text(crd, "/spec/group")?, text(crd, "/spec/names/kind")?)))
        .collect();
    objects.into_iter().partition(|object| {
        let object = value(object);
        let group = text(object, "/apiVersion").map(|v| {
            v.rsplit_once('/')
                .map_or(String::new(), |(g, _)| g.to_owned())
        });
        match (group, text(object, "/kind")) {
            (Some(group), Some(kind)) => defined.contains(&(group, kind)),
            _ => false,
        }
    })
}

/// Whether a CRD's `Established` condition is `True`.
pub(super) fn is_established(crd: &Value) -> bool {
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
pub(crate) fn served_kind(crd: &Value) -> Option<kube::core::GroupVersionKind> {
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
pub(super) async fn apply_to_cluster(
    target: &Target<'_>,
    objects: &[Value],
    plan: &ClusterPlan,
) -> (ClusterInventory, ClusterOutcome) {
    let cluster = target.cluster;
    let mut applied: Vec<DispatchedObject> = Vec::new();
    let mut outcome = ClusterOutcome::new(cluster.name());
    // Read before anything is applied: the survey's, or else one read now.
    let revision = match plan.revision {
        Some(revision) => Some(revision),
        None => cluster.revision(target.system_namespace).await,
    };
    let mut changed = 0;
    let result: Result<()> = async {
        ensure_planned_namespaces(cluster, plan, &mut applied).await?;
        let staged =
            |stage: u8| -> Vec<&Value> { objects.iter().filter(|o| rank(o) == stage).collect() };
        let namespaces = staged(0);
        if !namespaces.is_empty() {
            apply_stage(
                target,
                plan,
                &namespaces,
                revision,
                &mut applied,
                &mut changed,
            )
            .await?;
            cluster.refresh_discovery();
        }
        let definitions = staged(1);
        let crds = if definitions.is_empty() {
            Vec::new()
        } else {
            apply_stage(
                target,
                plan,
                &definitions,
                revision,
                &mut applied,
                &mut changed,
            )
            .await?
        };
        // The objects of the kinds those CRDs serve wait until they are Established; the others
        // are applied meanwhile (the wait is the API server's, tens of milliseconds or more).
        let (after, meanwhile) =
            of_kinds_defined_by(definitions.iter().copied(), staged(2), |o| *o);
        let established =
            futures::future::try_join_all(crds.iter().map(|crd| wait_established(cluster, crd)));
        let (established, applied_meanwhile) = futures::join!(
            established,
            apply_stage(
                target,
                plan,
                &meanwhile,
                revision,
                &mut applied,
                &mut changed
            )
        );
        applied_meanwhile?;
        established?;
        if !after.is_empty() {
            apply_stage(target, plan, &after, revision, &mut applied, &mut changed).await?;
        }
        Ok(())
    }
    .await;
    outcome.applied = applied.len();
    outcome.changed = changed;
    match result {
        Ok(()) => settle(target, applied, outcome).await,
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
                    revision: None,
                },
                outcome,
            )
        }
    }
}

/// Creates the namespaces the plan needs and the cluster lacked at the survey (those it had are
/// not read again), recording those addonctl creates for the addon.
async fn ensure_planned_namespaces(
    cluster: &Cluster,
    plan: &ClusterPlan,
    applied: &mut Vec<DispatchedObject>,
) -> Result<()> {
    for namespace in &plan.ensure_namespaces {
        let reference = ObjectRef {
            api_version: "v1".to_owned(),
            kind: "Namespace".to_owned(),
            namespace: None,
            name: namespace.clone(),
        };
        let uid = match plan.existing_namespaces.get(namespace) {
            Some(uid) => uid.clone(),
            None => cluster
                .get_or_create(&serde_json::json!({
                    "apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": namespace, "labels": {"app.kubernetes.io/managed-by": "addonctl"}},
                }))
                .await?
                .metadata
                .uid
                .unwrap_or_default(),
        };
        if let Some(created) = plan.created(&reference) {
            applied.push(DispatchedObject {
                object: reference,
                uid,
                created,
            });
        }
    }
    Ok(())
}

/// Applies one stage's objects with bounded concurrency, recording each applied object in
/// `applied` and counting in `changed` those the server wrote since `revision`. Returns the
/// names of the CRDs applied (to wait for).
async fn apply_stage(
    target: &Target<'_>,
    plan: &ClusterPlan,
    batch: &[&Value],
    revision: Option<u64>,
    applied: &mut Vec<DispatchedObject>,
    changed: &mut usize,
) -> Result<Vec<DynamicObject>> {
    let cluster = target.cluster;
    // After the first failure no further apply is started (a stopped server would otherwise
    // cost one timeout per object), but every apply that succeeded is recorded, so nothing
    // that reached the cluster is forgotten.
    let results = crate::cluster::bounded::until_failure(
        batch.iter().copied(),
        OBJECT_CONCURRENCY,
        |object| async move {
            // A CRD's answer is read whole (its wait starts from its conditions); of the
            // others only the metadata is read.
            let stored = if rank(object) == 1 {
                cluster
                    .apply_placed(object, target.system_namespace, target.namespace_override)
                    .await
            } else {
                cluster
                    .apply_placed_metadata(
                        object,
                        target.system_namespace,
                        target.namespace_override,
                    )
                    .await
            };
            stored.map(|stored| (object, stored)).map_err(Error::from)
        },
    )
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
            *changed += 1;
        }
        let Some(mut reference) = ObjectRef::of(object) else {
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
        if rank(object) == 1 {
            crds.push(stored);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(crds),
    }
}

/// After a successful apply: prunes what the cluster no longer needs; the inventory is what was
/// applied plus what a failed prune left.
async fn settle(
    target: &Target<'_>,
    applied: Vec<DispatchedObject>,
    mut outcome: ClusterOutcome,
) -> (ClusterInventory, ClusterOutcome) {
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
    let revision = None;
    (
        ClusterInventory {
            objects,
            error,
            revision,
        },
        outcome,
    )
}

/// Deletes (or gives back), in reverse order, what `old` holds and `new` lacks, by the rules of
/// [`deletion`]: only what addonctl created and no other addon lists is deleted; what it adopted
/// is given back; the system namespace and namespaces holding anything else are kept.
pub(super) async fn prune(target: &Target<'_>, new: &[DispatchedObject], dry_run: bool) -> Removal {
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

/// How long a CRD may take to become `Established`.
pub(super) const CRD_WAIT: Duration = Duration::from_secs(30);
