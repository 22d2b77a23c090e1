//! The direct engine: addonctl dispatches an addon's components to the target clusters itself,
//! without KubeVela.
//!
//! Expected flow ([`prepare`], then [`Prepared::apply`]):
//! 1. targets: the Application's topology policies (`clusters`, `clusterLabelSelector`,
//!    `namespace`) resolved against `local` and the joined clusters *now* (the record keeps the
//!    policies, so a cluster joined later is picked up by the next enable/upgrade);
//! 2. objects: components of type `k8s-objects` (`properties.objects`) and `raw` (`properties`),
//!    each labelled `addons.oam.dev/name: <addon>`; any other type is an error naming the
//!    component and the type. The clusters of a variant (parameters of their own, see
//!    [`crate::plan::overrides`]) get the components of the variant's Application instead;
//! 3. survey, per cluster, changing nothing: each object's namespace, and whether addonctl
//!    creates it (objects new to the addon are looked up with one list per kind and namespace,
//!    so that one that existed before is recorded as not created by addonctl); a namespace the
//!    objects need and the cluster lacks is planned as created. The caller records this plan as
//!    the pending revision before anything is applied;
//! 4. apply, per cluster, clusters in parallel (bounded): Namespaces and CRDs first, then
//!    everything else with bounded concurrency, one server-side apply per object: the objects of
//!    the kinds those CRDs define once the CRDs are `Established` (and served), the others while
//!    the CRDs become so. An enable returns only after its CRDs are `Established`;
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

use futures::stream::StreamExt;
use serde::Serialize;
use serde_json::Value;

use super::deletion::{self, Entry, Removal};
use crate::apply::Applier;
use crate::cluster::set::{ClusterInfo, LOCAL};
use crate::cluster::Cluster;
use crate::context::Reporter;
use crate::plan::Variant;
use crate::state::record::{
    ClusterInventory, DispatchedObject, ObjectRef, OtherRecords, Placement,
};
use crate::Result;

pub use crate::state::clusters::{CLUSTER_CONCURRENCY, OBJECT_CONCURRENCY};

mod cluster;
mod targets;

use cluster::{apply_to_cluster, prune, survey, ClusterPlan, Target};
pub(crate) use cluster::{existing, of_kinds_defined_by, served_kind, wait_established};
use targets::crd_scopes;
pub use targets::{component_objects, placements, resolve_targets};
pub(crate) use targets::{labelled, rank};

/// The outcome on one cluster.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
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

/// Removes everything an inventory holds by the rules of [`deletion`] (as the prune of an enable does), in
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
#[derive(Clone)]
pub struct Prepared {
    placements: Vec<Placement>,
    /// The objects of the addon's components, then those of each variant.
    objects: Vec<Vec<Value>>,
    /// The clusters of the variants: the index of their objects in `objects`.
    variant_of: BTreeMap<String, usize>,
    targets: BTreeMap<String, Option<String>>,
    clients: BTreeMap<String, std::result::Result<Cluster, String>>,
    baselines: BTreeMap<String, (u64, u64)>,
    previous: BTreeMap<String, ClusterInventory>,
    /// Clusters held: their inventories, returned as they are.
    held: BTreeMap<String, ClusterInventory>,
    plans: BTreeMap<String, std::result::Result<ClusterPlan, String>>,
    others: OtherRecords,
    /// The scope of each kind the addon's CRDs define.
    scopes: BTreeMap<(String, String), bool>,
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
    ctx: &Applier<'_>,
    addon: &str,
    application: &Value,
    previous: &BTreeMap<String, ClusterInventory>,
    others: OtherRecords,
    reporter: &dyn Reporter,
) -> Result<Prepared> {
    let none = BTreeSet::new();
    let components = Components {
        application,
        variants: &[],
    };
    prepare_holding(ctx, addon, components, previous, others, &none, reporter).await
}

/// What the clusters get: the components of an Application (its topology says where they go),
/// and for the clusters of each variant, the components of the variant's Application instead.
#[derive(Debug, Clone, Copy)]
pub struct Components<'a> {
    /// The addon's Application.
    pub application: &'a Value,
    /// The components rendered with other parameters for some clusters.
    pub variants: &'a [Variant],
}

impl<'a> Components<'a> {
    /// What a plan's step sends to the clusters.
    pub fn of(step: &'a crate::plan::Step) -> Self {
        Components {
            application: &step.rendered.application,
            variants: &step.variants,
        }
    }
}

/// The objects of an Application's components as dispatched: labelled, Namespaces and CRDs first.
fn dispatched_objects(application: &Value, addon: &str) -> Result<Vec<Value>> {
    let mut objects: Vec<Value> = component_objects(application)?
        .iter()
        .map(|o| labelled(o, addon))
        .collect();
    objects.sort_by_key(rank);
    Ok(objects)
}

/// [`prepare`], the clusters of `hold` left out: nothing is surveyed, applied or pruned there,
/// and [`Prepared::apply`] returns their inventories of `previous` as they are. The clusters of
/// a variant get its objects.
pub async fn prepare_holding(
    ctx: &Applier<'_>,
    addon: &str,
    components: Components<'_>,
    previous: &BTreeMap<String, ClusterInventory>,
    others: OtherRecords,
    hold: &BTreeSet<String>,
    reporter: &dyn Reporter,
) -> Result<Prepared> {
    let placements = placements(components.application);
    let mut objects = vec![dispatched_objects(components.application, addon)?];
    let mut variant_of = BTreeMap::new();
    for (i, variant) in components.variants.iter().enumerate() {
        objects.push(dispatched_objects(&variant.application, addon)?);
        for cluster in &variant.clusters {
            variant_of.entry(cluster.clone()).or_insert(i + 1);
        }
    }
    let scopes = crd_scopes(&objects.concat());
    // Only `local` concerned (now and before): the joined clusters are not read.
    let only_local = placements.iter().all(|p| {
        p.cluster_label_selector.is_none() && p.clusters.iter().flatten().all(|c| c == LOCAL)
    }) && previous.keys().all(|c| c == LOCAL);
    let joined = if only_local {
        Vec::new()
    } else {
        ctx.state().joined().await?
    };
    let joined_clusters: Vec<ClusterInfo> = joined.iter().map(|(info, _)| info.clone()).collect();
    let targets = resolve_targets(&placements, &joined_clusters)?;
    let mut names: BTreeSet<String> = targets.keys().cloned().collect();
    for (name, inventory) in previous {
        if name == LOCAL || joined_clusters.iter().any(|c| &c.name == name) {
            names.insert(name.clone());
        } else if inventory.objects.iter().any(|o| o.created) {
            // Detached with `--force`: its credentials are gone, so its objects cannot be reached.
            reporter.event(&crate::context::Progress::ClusterForgotten {
                cluster: name.clone(),
                objects: inventory.objects.len(),
            });
        }
    }
    names.retain(|name| !hold.contains(name));
    let held = previous
        .iter()
        .filter(|(name, _)| hold.contains(*name))
        .map(|(name, inventory)| (name.clone(), inventory.clone()))
        .collect();
    let clients = ctx.state().clients_of(&joined, &names).await;
    let baselines = clients
        .iter()
        .filter_map(|(name, client)| {
            let counters = client.as_ref().ok()?.counters();
            Some((name.clone(), (counters.requests(), counters.writes())))
        })
        .collect();
    let prepared = std::sync::Arc::new(Prepared {
        placements,
        objects,
        variant_of,
        targets,
        clients,
        baselines,
        previous: previous.clone(),
        held,
        plans: BTreeMap::new(),
        others,
        scopes,
        system_namespace: ctx.namespace.to_owned(),
    });
    let shared = std::sync::Arc::clone(&prepared);
    let plans: BTreeMap<String, std::result::Result<ClusterPlan, String>> =
        crate::spread::each(names, move |name: String| {
            let this = std::sync::Arc::clone(&shared);
            async move { this.survey_one(&name).await }
        })
        .map(|(name, plan)| (name, plan.map_err(|lost| lost.to_string()).and_then(|p| p)))
        .collect()
        .await;
    // Every survey is over: the `Arc` is this function's alone again (a clone only if a
    // cluster's work was lost while holding it).
    let mut prepared = std::sync::Arc::try_unwrap(prepared).unwrap_or_else(|p| (*p).clone());
    prepared.plans = plans;
    // `local` is the control plane, where the locks were taken: their revision is one read
    // before anything is applied there, when the survey listed nothing (a list read now
    // would wait for the API server's cache to catch up with the lock's write).
    if let (Some(revision), Some(Ok(plan))) = (ctx.locked_at(), prepared.plans.get_mut(LOCAL)) {
        plan.revision.get_or_insert(revision);
    }
    Ok(prepared)
}

impl Prepared {
    /// The objects `cluster` gets: its variant's, else the addon's.
    fn objects_for(&self, cluster: &str) -> &[Value] {
        let index = self.variant_of.get(cluster).copied().unwrap_or(0);
        self.objects.get(index).map_or(&[], Vec::as_slice)
    }

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

    /// The objects the dispatch would apply that another addon's records lists and `previous`
    /// does not yet: they become shared (the last apply's fields win; a drift check reports
    /// those the two set differently) — as `Kind `ns/name` on cluster `c` (also addon `a`)`.
    pub fn newly_shared(&self, previous: &BTreeMap<String, ClusterInventory>) -> Vec<String> {
        let mut out = Vec::new();
        for (name, plan) in &self.plans {
            let (Ok(plan), Some(others)) = (plan, self.others.dispatched.get(name)) else {
                continue;
            };
            let held = previous.get(name);
            for object in &plan.objects {
                let Some((addon, _)) = others.get(&object.object) else {
                    continue;
                };
                let known = held.is_some_and(|h| {
                    h.objects
                        .iter()
                        .any(|o| o.object.same_object(&object.object))
                });
                if !known {
                    out.push(format!(
                        "{} on cluster `{name}` (also addon `{addon}`)",
                        object.object
                    ));
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

    /// Applies to every cluster (in parallel over the cores, bounded: [`crate::spread`]) and
    /// prunes; held clusters keep their inventories untouched.
    pub async fn apply(mut self, reporter: &dyn Reporter) -> Dispatched {
        let held = std::mem::take(&mut self.held);
        let this = std::sync::Arc::new(self);
        let names: Vec<String> = this.plans.keys().cloned().collect();
        reporter.event(&crate::context::Progress::Dispatching {
            clusters: names.len(),
        });
        let shared = std::sync::Arc::clone(&this);
        let mut answers = std::pin::pin!(crate::spread::each(names, move |name: String| {
            let this = std::sync::Arc::clone(&shared);
            async move { this.apply_one(&name).await }
        }));
        let mut dispatched = Dispatched {
            placements: this.placements.clone(),
            inventories: BTreeMap::new(),
            outcomes: Vec::new(),
            unfinished: BTreeMap::new(),
        };
        while let Some((name, answer)) = answers.next().await {
            let (name, inventory, outcome) = match answer {
                Ok(result) => result,
                Err(lost) => {
                    let old = this.previous.get(&name).cloned().unwrap_or_default();
                    unreachable_cluster(&name, old, lost.to_string())
                }
            };
            match &outcome.error {
                Some(e) => reporter.event(&crate::context::Progress::ClusterFailed {
                    cluster: name.clone(),
                    error: e.clone(),
                }),
                None => reporter.event(&crate::context::Progress::ClusterApplied {
                    cluster: name.clone(),
                    applied: outcome.applied,
                    deleted: outcome.deleted,
                }),
            }
            if outcome.error.is_some() {
                if let Some(Ok(plan)) = this.plans.get(&name) {
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
            if this.targets.contains_key(&name)
                || !inventory.objects.is_empty()
                || inventory.error.is_some()
            {
                dispatched.inventories.insert(name, inventory);
            }
            dispatched.outcomes.push(outcome);
        }
        dispatched.inventories.extend(held);
        dispatched
            .outcomes
            .sort_by(|a, b| a.cluster.cmp(&b.cluster));
        dispatched
    }
}

impl Prepared {
    /// Surveys one cluster (changing nothing): its plan, or why it cannot be worked on.
    async fn survey_one(&self, name: &str) -> std::result::Result<ClusterPlan, String> {
        let empty = ClusterInventory::default();
        match (self.clients.get(name), self.targets.get(name)) {
            (Some(Ok(cluster)), Some(namespace)) => {
                let target = Target {
                    cluster,
                    name,
                    namespace_override: namespace.as_deref(),
                    system_namespace: &self.system_namespace,
                    previous: self.previous.get(name).unwrap_or(&empty),
                    others: self.others.dispatched.get(name),
                };
                survey(&target, self.objects_for(name), &self.scopes)
                    .await
                    .map_err(|e| e.to_string())
            }
            // No longer a target: nothing to apply, everything to delete.
            (Some(Ok(_)), None) => Ok(ClusterPlan::default()),
            (Some(Err(e)), _) => Err(e.clone()),
            (None, _) => Err(format!("no client for cluster `{name}`")),
        }
    }

    /// Applies to one cluster and prunes there: its new inventory and outcome.
    async fn apply_one(&self, name: &str) -> (String, ClusterInventory, ClusterOutcome) {
        let empty = ClusterInventory::default();
        let old = self.previous.get(name).unwrap_or(&empty);
        let client = self.clients.get(name);
        let Some(plan) = self.plans.get(name) else {
            return unreachable_cluster(name, old.clone(), format!("no plan for cluster `{name}`"));
        };
        let namespace = self.targets.get(name);
        let objects: &[Value] = if namespace.is_some() {
            self.objects_for(name)
        } else {
            &[]
        };
        let baseline = self.baselines.get(name).copied().unwrap_or_default();
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
            system_namespace: &self.system_namespace,
            previous: old,
            others: self.others.dispatched.get(name),
        };
        let (inventory, mut outcome) = apply_to_cluster(&target, objects, plan).await;
        let counters = cluster.counters();
        outcome.requests = counters.requests() - baseline.0;
        outcome.writes = counters.writes() - baseline.1;
        (name.to_owned(), inventory, outcome)
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
            revision: old.revision,
        },
        outcome,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cluster::fake::FakeApi;
    use crate::context::NoopReporter;

    const PATH: &str = "/api/v1/namespaces/team/configmaps/web";

    fn config_map(replicas: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "web", "namespace": "team"}, "data": {"replicas": replicas}})
    }

    fn fake() -> FakeApi {
        let stored = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web", "namespace": "team", "uid": "u-1"}});
        FakeApi::default()
            .serves("v1", "configmaps", "ConfigMap")
            .on("PATCH", PATH, 200, stored)
    }

    #[tokio::test]
    async fn each_cluster_gets_the_objects_of_its_parameter_set() {
        let apis: BTreeMap<String, FakeApi> = ["local", "m1", "m2"]
            .iter()
            .map(|c| ((*c).to_owned(), fake()))
            .collect();
        let planned = ClusterPlan {
            objects: vec![DispatchedObject {
                object: ObjectRef::of(&config_map("1")).unwrap(),
                uid: String::new(),
                created: true,
            }],
            ..ClusterPlan::default()
        };
        let prepared = Prepared {
            placements: Vec::new(),
            objects: vec![vec![config_map("1")], vec![config_map("3")]],
            variant_of: BTreeMap::from([("m2".to_owned(), 1)]),
            targets: apis.keys().map(|c| (c.clone(), None)).collect(),
            clients: apis
                .iter()
                .map(|(c, api)| (c.clone(), Ok(api.cluster(c))))
                .collect(),
            baselines: BTreeMap::new(),
            previous: BTreeMap::new(),
            held: BTreeMap::new(),
            plans: apis
                .keys()
                .map(|c| (c.clone(), Ok(planned.clone())))
                .collect(),
            others: OtherRecords::default(),
            scopes: BTreeMap::new(),
            system_namespace: "vela-system".to_owned(),
        };

        let dispatched = prepared.apply(&NoopReporter).await;

        let sent = |cluster: &str| {
            apis[cluster]
                .bodies(&format!("PATCH {PATH}"))
                .iter()
                .map(|b| b["data"]["replicas"].clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(sent("local"), [json!("1")]);
        assert_eq!(sent("m1"), [json!("1")]);
        assert_eq!(
            sent("m2"),
            [json!("3")],
            "m2 gets its parameter set's objects"
        );
        assert!(
            dispatched.outcomes.iter().all(|o| o.error.is_none()),
            "{:?}",
            dispatched.outcomes
        );
        assert_eq!(dispatched.inventories.len(), 3);
        assert_eq!(dispatched.inventories["m2"].objects[0].uid, "u-1");
    }

    #[test]
    fn only_objects_of_the_kinds_the_crds_define_wait_for_them() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "spec": {"group": "example.com", "names": {"kind": "Widget"}}});
        let objects = [
            json!({"apiVersion": "example.com/v1", "kind": "Widget"}),
            json!({"apiVersion": "example.com/v2", "kind": "Widget"}),
            json!({"apiVersion": "other.com/v1", "kind": "Widget"}),
            json!({"apiVersion": "v1", "kind": "Widget"}),
            json!({"apiVersion": "example.com/v1", "kind": "Gadget"}),
            json!({"kind": "Widget"}),
        ];
        let (after, meanwhile) = of_kinds_defined_by([&crd], objects.iter().collect(), |o| *o);
        assert_eq!(after, [&objects[0], &objects[1]]);
        assert_eq!(meanwhile.len(), 4);
    }
}
