//! One revision of an installed addon, as its record lists them (the history's logic is in
//! [`crate::state::revisions`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a revision is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RevisionStatus {
    /// What the clusters run.
    Deployed,
    /// Replaced by a later revision.
    Superseded,
    /// Applied, but not on every cluster.
    Failed,
}

impl std::fmt::Display for RevisionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RevisionStatus::Deployed => "deployed",
            RevisionStatus::Superseded => "superseded",
            RevisionStatus::Failed => "failed",
        })
    }
}

/// One revision of an installed addon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    /// Its number (1, 2, …).
    pub revision: u32,
    /// When it was applied (RFC 3339, UTC).
    pub updated: String,
    /// The addon's version.
    pub version: String,
    /// The registry it came from.
    pub registry: String,
    /// What it is now.
    pub status: RevisionStatus,
    /// `install`, `upgrade` or `rollback to N`.
    pub description: String,
    /// The stored arguments, secret values replaced by a reference to the revision Secret.
    #[serde(default)]
    pub args: Map<String, Value>,
    /// Paths of the secret arguments, whose values the revision Secret keeps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_args: Vec<String>,
    /// SHA-256 of the stored arguments' JSON (as the record's `argsHash`).
    pub args_hash: String,
    /// SHA-256 of the package's files.
    pub package_digest: String,
    /// The revision Secret (package and secret arguments), when written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Whether the revision Secret keeps the package (otherwise a rollback needs the registry).
    pub package_kept: bool,
    /// Why the package is not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// SHA-256 of what the revision applied (control-plane objects, and per cluster its
    /// objects); the record lists the current revision's objects in full.
    pub inventory_digest: String,
    /// Objects it applied, over all clusters.
    pub objects: usize,
    /// The parameters some clusters got over `args`, by key (the keys of the record's
    /// `overrides`), each with those clusters: what a rollback to this revision lays over its
    /// arguments again. Never a secret value (overrides of secret parameters are refused).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, RevisionOverride>,
    /// Where its package came from, pinned by digest, and how it was verified (OCI
    /// registries): a rollback that must read the registry again reads exactly this manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::model::provenance::Provenance>,
}

/// One parameter set of a revision's overrides.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionOverride {
    /// The parameters laid over the arguments.
    pub parameters: Map<String, Value>,
    /// The clusters that got them.
    pub clusters: Vec<String>,
}
