//! The addon's record: a Secret in the system namespace saying what addonctl installed.
//!
//! KubeVela keeps no inventory (it relies on garbage collection through owner references, which
//! needs kube-controller-manager). The record lists every control-plane object enable applied,
//! so that disable and upgrade can delete exactly those, in reverse order, without a garbage
//! collector. Its content is deterministic (no timestamps), so an unchanged re-enable rewrites
//! nothing.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::model::Dependency;
use crate::render::normalize::{LABEL_NAME, LABEL_REGISTRY, LABEL_VERSION};

/// Label marking record Secrets (for one labelled list call).
pub const LABEL_RECORD: &str = "addonctl.io/record";
/// The key of the record's JSON in the Secret.
pub const RECORD_KEY: &str = "record";

/// The name of an addon's record Secret.
pub fn record_name(addon: &str) -> String {
    format!("addon-record-{addon}")
}

pub use crate::model::InstalledBy;

/// One object applied to the control plane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Direct engine: where the components go, as the Application's topology says (the
    /// selector, not the list of clusters it matched, so clusters joined later are included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<Placement>,
    /// Direct engine: what was applied to each cluster.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dispatched: BTreeMap<String, ClusterInventory>,
    /// Direct engine: the version being applied when an enable has not finished (a pending
    /// revision; `dispatched` still holds everything applied so far, nothing is forgotten).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
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

/// One object applied to a managed cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchedObject {
    /// Which object.
    #[serde(flatten)]
    pub object: ObjectRef,
    /// Its uid.
    #[serde(default)]
    pub uid: String,
    /// Whether addonctl created it (only those are ever deleted; an object that existed before
    /// and was not created by addonctl is left alone).
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

    /// Reads a record from its Secret's `data`; `None` when it is missing or unreadable.
    pub fn from_secret(secret: &Value) -> Option<Self> {
        let encoded = secret.pointer(&format!("/data/{RECORD_KEY}"))?.as_str()?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}
