//! Drift: what is on each cluster compared with what addonctl applied there, cheaply, and, per
//! policy, corrected (`correct`), only reported (`warn`) or skipped (`ignore`).
//!
//! Expected flow ([`engine::check`], or [`detect`] with objects and clients found elsewhere):
//! 1. the record says which objects each cluster holds for the addon; the desired objects are
//!    the addon re-rendered from the same revision (its stored arguments, its recorded version);
//!    a cluster the record says runs another version (held by a staged upgrade) is not
//!    compared, and the report says so ([`Report::skipped`]);
//! 2. per cluster, per kind and namespace, ONE metadata-only list by the label
//!    `addons.oam.dev/name=<addon>` (the direct engine puts it on every object) gives each
//!    object's `resourceVersion` and managed fields;
//! 3. an object whose `resourceVersion` is the one the [`DriftCache`] holds is unchanged: no
//!    further request. With a cold cache, an object whose fields only addonctl manages (status
//!    writers aside) is taken as it was applied and cached. Every other object is read in full
//!    and the fields addonctl sent (the desired object's) are compared with the live ones,
//!    leaving out the [`Exclusion`]s' paths; a missing object is [`DriftKind::Deleted`];
//! 4. policy `correct`: each drifted object is applied again (server-side apply, forced, field
//!    manager `addonctl`), Namespaces and CRDs first; a changed object is applied without its
//!    excluded paths whose live value differs from the desired one, so those stay as their
//!    owner (an autoscaler's `spec.replicas`) set them; a deleted object is recreated whole.
//!
//! Guarantees: an unchanged cluster costs one list per kind and namespace and no read of a full
//! object; an object in sync is cached with the `resourceVersion` it was observed (or
//! re-applied) at, an object found drifted is not, so it is checked again next time; a failing
//! cluster does not stop the others (its error is reported); every request goes through the
//! cluster's rate limit and request timeout.
//!
//! Assumptions: the desired object is what server-side apply sent (the API server may default
//! more fields, never fewer: live fields absent from the desired object are not addonctl's and
//! are not compared; the API server's canonical forms, e.g. of quantities, are compared as
//! written). With a cold cache, a field removed by a writer that kept no other field of the
//! object is not seen until the object changes again or the cache is warm.

mod compare;
mod detect;
pub mod engine;
mod path;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

pub use compare::{diff, without_excluded};
pub use detect::{detect, kind_api, only_ours, DetectRequest};
pub use path::{FieldPath, Segment};

use crate::state::record::ObjectRef;

/// Paths reported per drifted object at most (the rest are counted in the last entry).
pub const MAX_PATHS: usize = 20;

/// What to do about drift (default `correct`, as the `Addon` resource, `enable --declarative
/// --drift` and docs/multi-cluster/drift.md have it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Apply drifted objects again, recreate deleted ones.
    #[default]
    Correct,
    /// Only report drift.
    Warn,
    /// Do not look.
    Ignore,
}

/// Fields of some objects left to others: `kind` (empty = every kind), `namespace` and `name`
/// (absent = any), and JSON paths such as `spec.replicas` (a path covers everything below it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Exclusion {
    /// The kind (`Deployment`); empty = every kind.
    #[serde(default)]
    pub kind: String,
    /// The namespace; absent = any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The name; absent = any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The paths (`spec.replicas`, `metadata.annotations[example.com/owner]`,
    /// `spec.template.spec.containers[*].image`).
    #[serde(default)]
    pub paths: Vec<String>,
}

impl Exclusion {
    /// Whether it applies to `object`.
    pub fn matches(&self, object: &ObjectRef) -> bool {
        (self.kind.is_empty() || self.kind == object.kind)
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| object.namespace.as_ref() == Some(ns))
            && self.name.as_ref().is_none_or(|n| n == &object.name)
    }
}

/// The drift settings of an addon, as the `Addon` resource's `drift` field holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftSpec {
    /// What to do about drift (default `correct`).
    #[serde(default)]
    pub policy: Policy,
    /// Fields left to others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclusions: Vec<Exclusion>,
}

impl DriftSpec {
    /// Checks every exclusion's paths.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] naming the exclusion and the path.
    pub fn validate(&self) -> Result<()> {
        for (index, exclusion) in self.exclusions.iter().enumerate() {
            for path in &exclusion.paths {
                FieldPath::parse(path).map_err(|reason| Error::InvalidPath {
                    index,
                    path: path.clone(),
                    reason,
                })?;
            }
        }
        Ok(())
    }

    /// The excluded paths of `object` (paths that do not parse are skipped: see
    /// [`DriftSpec::validate`]).
    pub fn excluded_paths(&self, object: &ObjectRef) -> Vec<FieldPath> {
        self.exclusions
            .iter()
            .filter(|e| e.matches(object))
            .flat_map(|e| e.paths.iter())
            .filter_map(|p| FieldPath::parse(p).ok())
            .collect()
    }
}

/// How an object drifted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum DriftKind {
    /// Fields addonctl applied have other values (or are gone): their paths.
    Changed {
        /// The paths, as `spec.template.spec.containers[0].image`.
        paths: Vec<String>,
    },
    /// The object is gone.
    Deleted,
    /// Another addon's record lists the object too, and the live object holds that addon's
    /// values at `paths`: the two addons render it differently. Never corrected (each would
    /// undo the other at every check): reported until they agree.
    Shared {
        /// The other addon (the one whose label the object carries).
        with: String,
        /// The paths where the live object differs from this addon's render.
        paths: Vec<String>,
    },
}

/// One drifted object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    /// The cluster.
    pub cluster: String,
    /// The object.
    pub object: ObjectRef,
    /// How it drifted.
    #[serde(flatten)]
    pub kind: DriftKind,
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            DriftKind::Changed { paths } => write!(
                f,
                "{} on cluster `{}` changed: {}",
                self.object,
                self.cluster,
                paths.join(", ")
            ),
            DriftKind::Deleted => {
                write!(f, "{} on cluster `{}` deleted", self.object, self.cluster)
            }
            DriftKind::Shared { with, paths } => write!(
                f,
                "{} on cluster `{}` is also applied by addon `{with}`, with other values at {}: not corrected (each addon would undo the other); make them render it alike, or exclude those paths",
                self.object,
                self.cluster,
                paths.join(", ")
            ),
        }
    }
}

/// The `resourceVersion` of each object as last applied or observed in sync, by cluster: what a
/// controller keeps between reconciles so that an unchanged object costs no read.
///
/// The clusters of a fleet hold the same objects: each object's reference is kept once and
/// shared by every cluster's entry (about 2 KiB per cluster for ten objects otherwise).
#[derive(Debug, Clone, Default)]
pub struct DriftCache {
    versions: HashMap<String, HashMap<Arc<ObjectRef>, Box<str>>>,
    /// The object references in use, shared by this cache and the ones taken from it.
    refs: Arc<Mutex<Refs>>,
}

/// Object references kept once for every cluster's entries.
#[derive(Debug, Default)]
struct Refs {
    set: HashSet<Arc<ObjectRef>>,
    /// At this many, the references no entry holds any more are dropped (twice those in use
    /// after the last sweep, at least [`REFS_SWEPT_PAST`]): each sweep is paid for by as many
    /// new references.
    sweep_at: usize,
}

/// The fewest references kept before those no entry holds are dropped.
const REFS_SWEPT_PAST: usize = 4096;

impl DriftCache {
    /// An empty cache.
    pub fn new() -> Self {
        DriftCache::default()
    }

    /// Takes one cluster's versions out, as a cache of that cluster alone (for its check on
    /// another thread; [`DriftCache::put_back`] returns them).
    pub(crate) fn take(&mut self, cluster: &str) -> DriftCache {
        let mut own = DriftCache {
            versions: HashMap::new(),
            refs: Arc::clone(&self.refs),
        };
        if let Some((name, versions)) = self.versions.remove_entry(cluster) {
            own.versions.insert(name, versions);
        }
        own
    }

    /// Puts back what [`DriftCache::take`] took (and the check changed).
    pub(crate) fn put_back(&mut self, own: DriftCache) {
        self.versions.extend(own.versions);
    }

    /// The version cached for an object.
    pub fn get(&self, cluster: &str, object: &ObjectRef) -> Option<&str> {
        self.versions.get(cluster)?.get(object).map(AsRef::as_ref)
    }

    /// Records an object as in sync at `resource_version`.
    pub fn observe(&mut self, cluster: &str, object: &ObjectRef, resource_version: &str) {
        let objects = self.versions.entry(cluster.to_owned()).or_default();
        if let Some(version) = objects.get_mut(object) {
            if **version != *resource_version {
                *version = resource_version.into();
            }
            return;
        }
        let shared = {
            let mut refs = self.refs.lock().unwrap_or_else(PoisonError::into_inner);
            if refs.set.len() >= refs.sweep_at.max(REFS_SWEPT_PAST) {
                refs.set.retain(|r| Arc::strong_count(r) > 1);
                refs.sweep_at = refs.set.len() * 2;
            }
            if let Some(known) = refs.set.get(object) {
                Arc::clone(known)
            } else {
                let new = Arc::new(object.clone());
                refs.set.insert(Arc::clone(&new));
                new
            }
        };
        objects.insert(shared, resource_version.into());
    }

    /// Forgets an object (drifted: checked again next time).
    pub fn forget(&mut self, cluster: &str, object: &ObjectRef) {
        if let Some(objects) = self.versions.get_mut(cluster) {
            objects.remove(object);
        }
    }

    /// Forgets a cluster (detached, or its credentials changed).
    pub fn forget_cluster(&mut self, cluster: &str) {
        self.versions.remove(cluster);
    }

    /// Objects cached.
    pub fn len(&self) -> usize {
        self.versions.values().map(HashMap::len).sum()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What one check found and did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The policy applied.
    pub policy: Policy,
    /// Every drifted object found.
    pub drifts: Vec<Drift>,
    /// Of those, the ones applied again (policy `correct`).
    pub corrected: Vec<Drift>,
    /// Clusters that could not be checked (or corrected), with the reason.
    pub errors: Vec<ClusterError>,
    /// Clusters not compared, with the reason: those held at another version than the record's
    /// (a staged upgrade under way or stopped) hold another revision's objects, so comparing
    /// them with this revision's would report (and correct) the upgrade itself as drift.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<ClusterError>,
    /// Objects compared.
    pub objects: usize,
    /// Requests made to the clusters.
    pub requests: u64,
    /// Full objects read (the rest were known unchanged from their `resourceVersion`).
    pub full_reads: u64,
    /// Where the compared objects live: each kind, per namespace, of each cluster that could
    /// be reached (what a watch for the next change follows).
    #[serde(skip)]
    pub places: Vec<Place>,
    /// Deleted objects created again (policy `correct`): cluster, object and new uid, which
    /// the record takes (so that disable deletes them).
    #[serde(skip)]
    pub recreated: Vec<(String, ObjectRef, String)>,
    /// Clusters not listed: the caller vouched for them ([`DetectRequest::vouched`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vouched: usize,
}

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's signature")]
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One kind (in one namespace, or cluster-wide) of one cluster holding an addon's objects.
#[derive(Debug, Clone)]
pub struct Place {
    /// The cluster's name.
    pub cluster: String,
    /// Its client.
    pub client: crate::cluster::Cluster,
    /// The objects' `apiVersion`.
    pub api_version: String,
    /// Their kind.
    pub kind: String,
    /// Their namespace (`None`: cluster-scoped).
    pub namespace: Option<String>,
}

impl Place {
    /// What tells two places apart: cluster, `apiVersion`, kind and namespace.
    pub fn key(&self) -> (String, String, String, Option<String>) {
        (
            self.cluster.clone(),
            self.api_version.clone(),
            self.kind.clone(),
            self.namespace.clone(),
        )
    }
}

impl Report {
    /// The drifted objects left as they are: found and not corrected.
    pub fn uncorrected(&self) -> impl Iterator<Item = &Drift> {
        self.drifts.iter().filter(|d| !self.corrected.contains(d))
    }
}

/// A cluster that could not be checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterError {
    /// The cluster.
    pub cluster: String,
    /// Why.
    pub error: String,
}

/// Errors of drift detection.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An exclusion's path does not parse.
    #[error("drift exclusion {index}: path `{path}`: {reason}")]
    InvalidPath {
        /// The exclusion's position (from 0).
        index: usize,
        /// The path.
        path: String,
        /// Why.
        reason: String,
    },
    /// The addon has no record: addonctl did not enable it (or it was disabled).
    #[error("addon `{addon}` has no record in namespace `{namespace}`: enable it first (drift is checked against what addonctl applied)")]
    NotEnabled {
        /// The addon.
        addon: String,
        /// The system namespace.
        namespace: String,
    },
    /// The library failed (planning, reading the record, connecting to clusters).
    #[error(transparent)]
    Library(#[from] Box<crate::Error>),
}

crate::error::front_end_error!(
    Error,
    Error::InvalidPath { .. } => crate::ErrorKind::Invalid,
    Error::NotEnabled { .. } => crate::ErrorKind::NotFound,
);

/// The module's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "apps/v1".to_owned(),
            kind: "Deployment".to_owned(),
            namespace: Some("apps".to_owned()),
            name: name.to_owned(),
        }
    }

    #[test]
    fn an_exclusion_matches_by_kind_namespace_and_name_when_given() {
        let any = Exclusion::default();
        let web = Exclusion {
            kind: "Deployment".to_owned(),
            name: Some("web".to_owned()),
            ..Exclusion::default()
        };
        let elsewhere = Exclusion {
            namespace: Some("other".to_owned()),
            ..Exclusion::default()
        };
        assert!(any.matches(&deployment("web")));
        assert!(web.matches(&deployment("web")));
        assert!(!web.matches(&deployment("api")));
        assert!(!elsewhere.matches(&deployment("web")));
    }

    #[test]
    fn the_spec_reads_as_the_addon_resource_writes_it() {
        let spec: DriftSpec = serde_json::from_value(serde_json::json!({
            "policy": "correct",
            "exclusions": [{"kind": "Deployment", "paths": ["spec.replicas"]}],
        }))
        .unwrap();
        assert_eq!(spec.policy, Policy::Correct);
        assert_eq!(spec.excluded_paths(&deployment("web")).len(), 1);
        assert_eq!(DriftSpec::default().policy, Policy::Correct);
        let unset: DriftSpec = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(unset.policy, Policy::Correct);
        let bad = DriftSpec {
            policy: Policy::Warn,
            exclusions: vec![Exclusion {
                paths: vec!["spec..replicas".to_owned()],
                ..Exclusion::default()
            }],
        };
        let error = bad.validate().unwrap_err().to_string();
        assert!(error.contains("`spec..replicas`"), "{error}");
    }

    #[test]
    fn the_cache_forgets_objects_and_clusters() {
        let mut cache = DriftCache::new();
        cache.observe("m1", &deployment("web"), "7");
        cache.observe("m2", &deployment("web"), "9");
        assert_eq!(cache.get("m1", &deployment("web")), Some("7"));
        cache.forget("m1", &deployment("web"));
        assert_eq!(cache.get("m1", &deployment("web")), None);
        cache.forget_cluster("m2");
        assert!(cache.is_empty());
    }

    #[test]
    fn the_cache_keeps_one_reference_per_object_for_every_cluster_and_drops_unused_ones() {
        let mut cache = DriftCache::new();
        let mut taken = cache.take("m3");
        taken.observe("m3", &deployment("web"), "1");
        for cluster in ["m1", "m2"] {
            cache.observe(cluster, &deployment("web"), "7");
        }
        cache.put_back(taken);
        let refs = |cache: &DriftCache| cache.refs.lock().unwrap().set.len();
        assert_eq!(
            refs(&cache),
            1,
            "one reference for the object on three clusters"
        );
        let held: Vec<_> = cache.versions.values().flat_map(HashMap::keys).collect();
        assert!(held.windows(2).all(|w| Arc::ptr_eq(w[0], w[1])));
        assert_eq!(cache.get("m3", &deployment("web")), Some("1"));
        // A changed version replaces the old one on its cluster alone.
        cache.observe("m1", &deployment("web"), "8");
        assert_eq!(cache.get("m1", &deployment("web")), Some("8"));
        assert_eq!(cache.get("m2", &deployment("web")), Some("7"));
        // References no entry holds are dropped once enough were added.
        for cluster in ["m1", "m2", "m3"] {
            cache.forget_cluster(cluster);
        }
        for i in 0..=REFS_SWEPT_PAST {
            cache.observe("m1", &deployment(&format!("app-{i}")), "1");
            cache.forget("m1", &deployment(&format!("app-{i}")));
        }
        assert!(refs(&cache) <= 2, "{} references kept", refs(&cache));
    }
}
