//! The addon's record: a Secret in the system namespace saying what addonctl installed.
//!
//! KubeVela keeps no inventory (it relies on garbage collection through owner references, which
//! needs kube-controller-manager). The record lists every control-plane object enable applied,
//! so that disable and upgrade can delete exactly those, in reverse order, without a garbage
//! collector. Its content is deterministic (no timestamps), so an unchanged re-enable rewrites
//! nothing.
//!
//! With the direct engine it also holds, per cluster, every object dispatched there, and — while
//! an enable has not finished everywhere — a [`PendingRevision`] listing what that enable plans,
//! written before anything is applied: whatever happens to the process, every object it may have
//! created is listed somewhere ([`Record::dispatched_or_planned`]).
//!
//! How it is stored (inline, or gzipped and sharded when large) is [`storage`]'s; read and
//! write records through [`storage::read`], [`storage::read_all`] and [`storage::write`]
//! ([`Record::from_secret`] reads only the inline format). It also keeps the addon's last
//! revisions ([`crate::state::revisions`]).

pub mod revision;
pub mod storage;

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

pub use crate::model::wire::{record_name, LABEL_RECORD};
use crate::model::wire::{
    string_list, topology_properties, LABEL_NAME, LABEL_REGISTRY, LABEL_VERSION,
};
use crate::model::Dependency;

/// The key of the record's JSON in the Secret.
pub const RECORD_KEY: &str = "record";

pub use crate::model::InstalledBy;

/// One object applied to the control plane.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// Namespace, for namespaced objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl ObjectRef {
    /// The reference of a stored object.
    pub fn of(object: &Value) -> Option<Self> {
        Some(ObjectRef {
            api_version: object.get("apiVersion")?.as_str()?.to_owned(),
            kind: object.get("kind")?.as_str()?.to_owned(),
            namespace: object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .map(str::to_owned),
            name: object.pointer("/metadata/name")?.as_str()?.to_owned(),
        })
    }

    /// This object, watched for a change after `version` ([`crate::cluster::first_change`]).
    pub fn since<'a>(&'a self, version: &'a str) -> crate::cluster::Since<'a> {
        crate::cluster::Since {
            gvk: self.gvk(),
            namespace: self.namespace.as_deref(),
            name: &self.name,
            version,
        }
    }

    /// Whether both name the same object: the same kind and name, and the same namespace unless
    /// one of them has none (a planned reference may carry a namespace for a kind that turns
    /// out to be cluster-scoped).
    pub fn same_object(&self, other: &ObjectRef) -> bool {
        self.api_version == other.api_version
            && self.kind == other.kind
            && self.name == other.name
            && (self.namespace == other.namespace
                || self.namespace.is_none()
                || other.namespace.is_none())
    }

    /// Its group/version/kind.
    pub fn gvk(&self) -> kube::core::GroupVersionKind {
        let (group, version) = self
            .api_version
            .split_once('/')
            .unwrap_or(("", &self.api_version));
        kube::core::GroupVersionKind::gvk(group, version, &self.kind)
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} `{ns}/{}`", self.kind, self.name),
            None => write!(f, "{} `{}`", self.kind, self.name),
        }
    }
}

/// What addonctl installed for one addon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The addon.
    pub name: String,
    /// Its version, as `metadata.yaml` writes it.
    pub version: String,
    /// The registry it came from.
    pub registry: String,
    /// Where it came from, pinned by digest, and how it was verified (OCI registries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::model::provenance::Provenance>,
    /// Who asked for it.
    pub installed_by: InstalledBy,
    /// Its dependencies, as declared.
    #[serde(default)]
    pub dependencies: Vec<RecordDependency>,
    /// SHA-256 of the stored arguments' JSON.
    pub args_hash: String,
    /// Namespaces the addon asked for (`needNamespace`).
    #[serde(default)]
    pub need_namespaces: Vec<String>,
    /// Whether the Application was applied (KubeVela's CRDs were served).
    pub application: bool,
    /// Target clusters from the Application's topology (`*` = every cluster).
    #[serde(default)]
    pub clusters: Vec<String>,
    /// Every other control-plane object applied, in apply order.
    #[serde(default)]
    pub inventory: Vec<ObjectRef>,
    /// Those of `inventory` that existed before and that addonctl adopted (`--adopt`): disable
    /// gives them back instead of deleting them. (Dispatched objects say it with `created`.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopted: Vec<ObjectRef>,
    /// Direct engine: where the components go, as the Application's topology says (the
    /// selector, not the list of clusters it matched, so clusters joined later are included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<Placement>,
    /// Direct engine: what was applied to each cluster.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dispatched: BTreeMap<String, ClusterInventory>,
    /// The revision being applied, written before any object is: what it plans to apply, so
    /// that an enable interrupted midway (killed, a cluster failing) forgets nothing; the next
    /// enable finishes or prunes it, and disable deletes what it lists too. `None` once every
    /// cluster has the revision.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pending_revision"
    )]
    pub pending: Option<PendingRevision>,
    /// The last revisions, oldest first (see [`crate::state::revisions`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<revision::Revision>,
    /// Direct engine: the parameters some clusters got over the stored arguments (an `Addon`'s
    /// `overrides`), once per distinct set, by key; each of those clusters' revision names its
    /// key ([`ClusterRevision::parameters`]). Never a secret parameter: overrides of secret
    /// parameters are refused before anything is applied.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, Map<String, Value>>,
}

/// A revision written before it is applied (next to the last good one, which `inventory` and
/// `dispatched` keep).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingRevision {
    /// The version being applied.
    pub version: String,
    /// The control-plane objects it applies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inventory: Vec<ObjectRef>,
    /// Per cluster, the objects it applies (uids unknown yet; `created` as found before the
    /// apply: whether the object did not exist yet).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dispatched: BTreeMap<String, Vec<DispatchedObject>>,
}

impl PendingRevision {
    /// Whether the revision plans this object on this cluster.
    pub fn plans(&self, cluster: &str, object: &ObjectRef) -> bool {
        self.dispatched
            .get(cluster)
            .is_some_and(|planned| planned.iter().any(|p| &p.object == object))
    }
}

/// Reads a pending revision, also as written before it held its planned objects (the version
/// alone).
fn pending_revision<'de, D>(deserializer: D) -> Result<Option<PendingRevision>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Version(String),
        Revision(PendingRevision),
    }
    Ok(
        Option::<Stored>::deserialize(deserializer)?.map(|stored| match stored {
            Stored::Version(version) => PendingRevision {
                version,
                ..PendingRevision::default()
            },
            Stored::Revision(revision) => revision,
        }),
    )
}

/// Where components go: a topology policy's clusters or label selector, and namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// Named clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<Vec<String>>,
    /// A label selector over joined clusters (`{}` = every cluster, `local` included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_label_selector: Option<BTreeMap<String, String>>,
    /// The namespace namespaced objects go to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The topology policies of an Application as placements (none = `local`).
pub fn placements(application: &Value) -> Vec<Placement> {
    let mut out = Vec::new();
    for properties in topology_properties(application) {
        let clusters = string_list(properties.get("clusters"));
        let selector = properties
            .get("clusterLabelSelector")
            .or_else(|| properties.get("clusterSelector"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            });
        let namespace = properties
            .get("namespace")
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
            clusters: Some(vec![crate::cluster::set::LOCAL.to_owned()]),
            cluster_label_selector: None,
            namespace: None,
        });
    }
    out
}

/// One object applied to a managed cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchedObject {
    /// Which object.
    #[serde(flatten)]
    pub object: ObjectRef,
    /// Its uid (empty while only planned: in a pending revision, or planned by an enable that
    /// was interrupted).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Whether addonctl created it (only those are ever deleted); `false`: it existed before and
    /// addonctl adopted it (`--adopt`), so disable gives it back (removes addonctl's fields)
    /// instead of deleting it.
    pub created: bool,
}

/// What one cluster holds for the addon.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterInventory {
    /// Objects, in apply order.
    #[serde(default)]
    pub objects: Vec<DispatchedObject>,
    /// The last failure on this cluster, if the last apply did not finish there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The revision last applied here; `None` (records written before clusters could run
    /// different versions): the record's version ([`Record::cluster_version`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<ClusterRevision>,
}

/// The revision one cluster was last applied at: clusters held by a staged upgrade keep an
/// older one while the others move on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterRevision {
    /// The addon's version.
    pub version: String,
    /// The record's revision number ([`Record::revisions`]), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u32>,
    /// The key of the parameters the cluster got over the stored arguments
    /// ([`Record::overrides`]); `None`: the stored arguments alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<String>,
}

/// A dependency as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordDependency {
    /// The addon depended on.
    pub name: String,
    /// Its constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl From<&Dependency> for RecordDependency {
    fn from(d: &Dependency) -> Self {
        RecordDependency {
            name: d.name.clone(),
            version: d.version.clone(),
        }
    }
}

impl Record {
    /// The record as a Secret in `namespace`.
    pub fn to_secret(&self, namespace: &str) -> Value {
        let data = serde_json::to_string(self).unwrap_or_default();
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": record_name(&self.name),
                "namespace": namespace,
                "labels": {
                    LABEL_NAME: self.name,
                    LABEL_VERSION: self.version,
                    LABEL_REGISTRY: self.registry,
                    LABEL_RECORD: "true",
                    "app.kubernetes.io/managed-by": "addonctl",
                },
            },
            "type": "Opaque",
            "data": {RECORD_KEY: base64::engine::general_purpose::STANDARD.encode(data)},
        })
    }

    /// Per cluster, everything the addon may hold there: the inventory of the last apply plus
    /// what a pending revision plans and that inventory lacks (uid unknown: an interrupted
    /// enable may or may not have applied it).
    pub fn dispatched_or_planned(&self) -> BTreeMap<String, ClusterInventory> {
        let mut out = self.dispatched.clone();
        let Some(pending) = &self.pending else {
            return out;
        };
        for (cluster, planned) in &pending.dispatched {
            let inventory = out.entry(cluster.clone()).or_default();
            for object in planned {
                if !inventory.objects.iter().any(|o| o.object == object.object) {
                    inventory.objects.push(object.clone());
                }
            }
        }
        out
    }

    /// The control-plane objects the addon may hold: the inventory plus what a pending
    /// revision plans.
    pub fn inventory_or_planned(&self) -> Vec<ObjectRef> {
        let mut out = self.inventory.clone();
        for object in self.pending.iter().flat_map(|p| &p.inventory) {
            if !out.contains(object) {
                out.push(object.clone());
            }
        }
        out
    }

    /// The version `cluster` was last applied at: its own, or (a record written before
    /// clusters could differ) the record's; `None` when the record lists nothing there.
    pub fn cluster_version(&self, cluster: &str) -> Option<&str> {
        let inventory = self.dispatched.get(cluster)?;
        Some(
            inventory
                .revision
                .as_ref()
                .map_or(self.version.as_str(), |r| r.version.as_str()),
        )
    }

    /// The revision `cluster` was last applied at, its number filled in for a record written
    /// before clusters kept their own (the newest revision of the record's version).
    pub fn cluster_revision(&self, cluster: &str) -> Option<ClusterRevision> {
        let inventory = self.dispatched.get(cluster)?;
        Some(
            inventory
                .revision
                .clone()
                .unwrap_or_else(|| ClusterRevision {
                    version: self.version.clone(),
                    number: self.latest_number(&self.version),
                    parameters: None,
                }),
        )
    }

    /// Whether `cluster` runs the revision the record describes: its version and, where both
    /// are known, its newest revision number. A cluster a staged rollout holds runs another
    /// version, or the same version at an older revision (other parameters).
    pub fn runs_current(&self, cluster: &str) -> bool {
        let Some(revision) = self.cluster_revision(cluster) else {
            return false;
        };
        let current = self.current_revision();
        revision.version == self.version
            && match (revision.number, current.number) {
                (Some(number), Some(newest)) => number == newest,
                _ => true,
            }
    }

    /// The revision an apply of this record puts on the clusters it works on: its version and
    /// newest revision number.
    pub fn current_revision(&self) -> ClusterRevision {
        ClusterRevision {
            version: self.version.clone(),
            number: self.revisions.last().map(|r| r.revision),
            parameters: None,
        }
    }

    /// The number of the newest revision of `version` the record keeps.
    pub fn latest_number(&self, version: &str) -> Option<u32> {
        self.revisions
            .iter()
            .rev()
            .find(|r| r.version == version)
            .map(|r| r.revision)
    }

    /// The parameters `cluster` got over the stored arguments ([`Record::overrides`]), with
    /// their key; `None`: the stored arguments alone.
    pub fn cluster_parameters(&self, cluster: &str) -> Option<(&String, &Map<String, Value>)> {
        let revision = self.dispatched.get(cluster)?.revision.as_ref()?;
        self.overrides.get_key_value(revision.parameters.as_ref()?)
    }

    /// Drops the parameter sets of [`Record::overrides`] no cluster names any more.
    pub fn forget_unused_overrides(&mut self) {
        let used: std::collections::BTreeSet<&String> = self
            .dispatched
            .values()
            .filter_map(|i| i.revision.as_ref()?.parameters.as_ref())
            .collect();
        let unused: Vec<String> = self
            .overrides
            .keys()
            .filter(|k| !used.contains(k))
            .cloned()
            .collect();
        for key in unused {
            self.overrides.remove(&key);
        }
    }

    /// The version each cluster the record lists was last applied at.
    pub fn cluster_versions(&self) -> BTreeMap<String, String> {
        self.dispatched
            .keys()
            .filter_map(|c| Some((c.clone(), self.cluster_version(c)?.to_owned())))
            .collect()
    }

    /// Whether some of its clusters run another version or revision than the record's (a
    /// staged upgrade or parameter change under way, or stopped).
    pub fn is_mixed(&self) -> bool {
        self.dispatched.keys().any(|c| !self.runs_current(c))
    }

    /// The clusters still at another version than the record's, with theirs.
    pub fn behind(&self) -> BTreeMap<String, String> {
        let mut versions = self.cluster_versions();
        versions.retain(|_, v| *v != self.version);
        versions
    }

    /// [`Record::dispatched_or_planned`], every cluster without its own revision stamped with
    /// the one the record describes: what a record of another version carries over, each
    /// cluster still saying what it runs.
    pub fn dispatched_stamped(&self) -> BTreeMap<String, ClusterInventory> {
        let mut out = self.dispatched_or_planned();
        let revision = ClusterRevision {
            version: self.version.clone(),
            number: self.latest_number(&self.version),
            parameters: None,
        };
        for inventory in out.values_mut() {
            if inventory.revision.is_none() {
                inventory.revision = Some(revision.clone());
            }
        }
        out
    }

    /// Reads a record from its Secret's `data`; `None` when it is missing or unreadable.
    pub fn from_secret(secret: &Value) -> Option<Self> {
        let encoded = secret.pointer(&format!("/data/{RECORD_KEY}"))?.as_str()?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// Attempts at a read-modify-write of a record before giving up on conflicts.
pub const WRITE_ATTEMPTS: usize = 5;

impl Record {
    /// Adds what `theirs` (the same addon's record as stored by another writer) lists and this
    /// record lacks, so that a retried write forgets nothing anyone recorded: its objects on each
    /// cluster (planned ones included) and its control-plane objects (adopted ones stay adopted).
    /// What is listed and no longer exists is harmless: deleting it is a no-op.
    pub fn absorb(&mut self, theirs: &Record) {
        for (key, parameters) in &theirs.overrides {
            self.overrides
                .entry(key.clone())
                .or_insert_with(|| parameters.clone());
        }
        for (cluster, inventory) in theirs.dispatched_or_planned() {
            let ours = self.dispatched.entry(cluster).or_default();
            if ours.revision.is_none() {
                ours.revision = inventory.revision;
            }
            for object in inventory.objects {
                if !ours.objects.iter().any(|o| o.object == object.object) {
                    ours.objects.push(object);
                }
            }
        }
        for object in theirs.inventory_or_planned() {
            if self.inventory.iter().any(|o| o.same_object(&object)) {
                continue;
            }
            if theirs.adopted.iter().any(|a| a.same_object(&object))
                && !self.adopted.iter().any(|a| a.same_object(&object))
            {
                self.adopted.push(object.clone());
            }
            self.inventory.push(object);
        }
    }
}

/// Read-modify-write of addon `addon`'s record in `ns`: `change` gets the stored record (`None`
/// when there is none) and returns the one to write (`None`: nothing to write). The write is
/// conditional on the stored Secret's resourceVersion; on a conflict (someone wrote the record
/// meanwhile) the whole read-modify-write runs again, at most [`WRITE_ATTEMPTS`] times.
pub async fn update(
    cluster: &crate::cluster::Cluster,
    ns: &str,
    addon: &str,
    mut change: impl FnMut(Option<Record>) -> Option<Record>,
) -> crate::Result<()> {
    for _ in 0..WRITE_ATTEMPTS {
        let stored = storage::read(cluster, ns, addon).await?;
        let Some(record) = change(stored.record) else {
            return Ok(());
        };
        let written = storage::write(
            cluster,
            ns,
            &record,
            stored.resource_version.as_deref(),
            stored.sharded,
        )
        .await?;
        if let storage::Written::Stored(..) = written {
            return Ok(());
        }
    }
    Err(conflict(ns, addon))
}

/// The error of a record that kept changing while it was written.
pub fn conflict(ns: &str, addon: &str) -> crate::Error {
    crate::Error::Cluster(crate::cluster::Error::Conflict {
        cluster: crate::model::wire::LOCAL_CLUSTER.to_owned(),
        message: format!(
            "the record `{ns}/{}` kept changing while this command wrote it ({WRITE_ATTEMPTS} attempts; another command not taking addonctl's lock is writing it); nothing recorded was lost: run `addonctl status {addon}` and the command again",
            record_name(addon)
        ),
    })
}

/// What the records of other addons list, so that an object two addons render is deleted only
/// with the last of them.
#[derive(Debug, Clone, Default)]
pub struct OtherRecords {
    /// Per cluster, each object and whether the addon listing it created it.
    pub dispatched: BTreeMap<String, BTreeMap<ObjectRef, (String, bool)>>,
    /// Control-plane objects, with the addon listing them.
    pub inventory: BTreeMap<ObjectRef, String>,
}

impl OtherRecords {
    /// Collects what `records` list, except the record of `addon`.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a Record>, addon: &str) -> Self {
        let mut out = OtherRecords::default();
        for record in records.into_iter().filter(|r| r.name != addon) {
            for (cluster, inventory) in record.dispatched_or_planned() {
                let objects = out.dispatched.entry(cluster).or_default();
                for object in inventory.objects {
                    objects
                        .entry(object.object)
                        .or_insert_with(|| (record.name.clone(), object.created));
                }
            }
            for object in record.inventory_or_planned() {
                out.inventory
                    .entry(object)
                    .or_insert_with(|| record.name.clone());
            }
        }
        out
    }

    /// The addon that also lists `object` on `cluster`, if any.
    pub fn listing(&self, cluster: &str, object: &ObjectRef) -> Option<&str> {
        self.dispatched
            .get(cluster)
            .and_then(|objects| objects.get(object))
            .map(|(addon, _)| addon.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pending: Value) -> Value {
        json!({
            "name": "a", "version": "1.0.0", "registry": "local", "installedBy": "user",
            "argsHash": "", "application": false, "pending": pending,
        })
    }

    #[test]
    fn a_pending_revision_written_as_a_bare_version_still_reads() {
        let read: Record = serde_json::from_value(record(json!("1.0.0"))).unwrap();
        assert_eq!(
            read.pending,
            Some(PendingRevision {
                version: "1.0.0".to_owned(),
                ..PendingRevision::default()
            })
        );
    }

    #[test]
    fn planned_objects_missing_from_the_inventory_are_listed_with_it() {
        let planned = |name: &str, uid: &str| DispatchedObject {
            object: ObjectRef {
                api_version: "v1".to_owned(),
                kind: "ConfigMap".to_owned(),
                namespace: Some("ns".to_owned()),
                name: name.to_owned(),
            },
            uid: uid.to_owned(),
            created: true,
        };
        let mut read: Record = serde_json::from_value(record(json!({
            "version": "2.0.0",
            "dispatched": {"east": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "one", "created": true},
                                    {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "two", "created": true}]},
        })))
        .unwrap();
        read.dispatched.insert(
            "east".to_owned(),
            ClusterInventory {
                objects: vec![planned("one", "uid-1")],
                error: None,
                revision: None,
            },
        );
        assert_eq!(
            read.dispatched_or_planned()["east"].objects,
            [planned("one", "uid-1"), planned("two", "")]
        );
        let text = serde_json::to_value(&read).unwrap();
        assert_eq!(text["pending"]["dispatched"]["east"][1]["name"], "two");
        assert!(text["pending"]["dispatched"]["east"][1]
            .get("uid")
            .is_none());
    }
    #[test]
    fn a_record_written_before_clusters_had_versions_reads_as_the_records_version() {
        // As earlier versions wrote it: no `revision` in the clusters' inventories.
        let old = json!({
            "name": "a", "version": "1.0.0", "registry": "local", "installedBy": "user",
            "argsHash": "", "application": false,
            "dispatched": {
                "m1": {"objects": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns",
                                    "name": "one", "uid": "u1", "created": true}]},
                "m2": {"objects": [], "error": "unreachable"},
            },
            "revisions": [{"revision": 3, "updated": "2026-01-01T00:00:00Z", "version": "1.0.0",
                           "registry": "local", "status": "deployed", "description": "install",
                           "argsHash": "", "packageDigest": "", "packageKept": false,
                           "inventoryDigest": "", "objects": 1}],
        });
        let read: Record = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(read.cluster_version("m1"), Some("1.0.0"));
        assert_eq!(read.cluster_version("m2"), Some("1.0.0"));
        assert_eq!(read.cluster_version("m3"), None);
        assert!(!read.is_mixed());
        assert!(read.behind().is_empty());
        assert_eq!(
            read.cluster_revision("m1"),
            Some(ClusterRevision {
                version: "1.0.0".to_owned(),
                number: Some(3),
                parameters: None,
            })
        );
        // Written back unchanged: nothing new appears in an old record that is not upgraded.
        assert_eq!(
            serde_json::to_value(&read).unwrap()["dispatched"],
            old["dispatched"]
        );
        // Carried into a record of another version, each cluster keeps saying what it runs.
        let mut next = read.clone();
        next.version = "1.1.0".to_owned();
        next.dispatched = read.dispatched_stamped();
        assert_eq!(next.cluster_version("m1"), Some("1.0.0"));
        assert!(next.is_mixed());
        assert_eq!(
            next.behind(),
            BTreeMap::from([
                ("m1".to_owned(), "1.0.0".to_owned()),
                ("m2".to_owned(), "1.0.0".to_owned()),
            ])
        );
    }

    #[test]
    fn a_clusters_own_revision_is_kept_through_a_write_and_a_conflict() {
        let mut ours: Record = serde_json::from_value(record(Value::Null)).unwrap();
        ours.version = "1.1.0".to_owned();
        let on = |version: &str| ClusterInventory {
            revision: Some(ClusterRevision {
                version: version.to_owned(),
                number: Some(2),
                parameters: None,
            }),
            ..ClusterInventory::default()
        };
        ours.dispatched.insert("m1".to_owned(), on("1.1.0"));
        let text = serde_json::to_string(&ours).unwrap();
        let back: Record = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ours);
        let mut theirs = ours.clone();
        theirs.dispatched.insert("m3".to_owned(), on("1.0.0"));
        ours.absorb(&theirs);
        assert_eq!(ours.cluster_version("m3"), Some("1.0.0"));
        assert_eq!(ours.cluster_version("m1"), Some("1.1.0"));
        assert_eq!(ours.cluster_versions().len(), 2);
    }
}
