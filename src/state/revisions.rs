//! An addon's revisions, as `helm history` shows a release's: the record keeps the last N
//! ([`DEFAULT_HISTORY_MAX`], `--history-max`), each with its number, time, version, registry,
//! status, description, arguments and digests; a Secret per revision
//! (`addon-record-<addon>-rev-<n>`) keeps the package, gzipped, and the values of its secret
//! arguments, so that `rollback` works when the registry no longer has the version.
//!
//! Guarantees:
//! - a secret argument's value is never in the record: the revision lists its path and keeps
//!   the value in the revision Secret;
//! - an enable or upgrade that changes nothing (same version, registry, arguments, package and
//!   per-cluster parameter sets) adds no revision; a failed one adds a `failed` revision (the deployed one stays), which a
//!   later success of the same content turns into the deployed one;
//! - a package larger than [`MAX_PACKAGE_BYTES`] compressed is not kept: the revision says so,
//!   and rolling back to it needs the registry.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::record::storage::{self, sha256_hex, LABEL_RECORD_OF, LABEL_RECORD_PART};
use super::record::{record_name, Record};
use crate::cluster::Cluster;
use crate::model::wire::secret_gvk;
use crate::model::AddonPackage;
use crate::params::ParameterSchema;

/// Secret argument values, each at its path (keys, or list indexes as text).
pub type SecretValues = Vec<(Vec<String>, Value)>;

/// Revisions kept by default.
pub const DEFAULT_HISTORY_MAX: usize = 10;
/// The largest compressed package a revision Secret keeps (a Secret holds at most 1 MiB).
pub const MAX_PACKAGE_BYTES: usize = 900 * 1024;
/// The most bytes a kept package inflates to when read back.
const MAX_PACKAGE_INFLATED: u64 = 64 * 1024 * 1024;
/// The key of the package in a revision Secret.
pub const PACKAGE_KEY: &str = "package";
/// The key of the secret arguments in a revision Secret.
pub const SECRET_ARGS_KEY: &str = "secretArgs";

pub use super::record::revision::{Revision, RevisionOverride, RevisionStatus};

/// What an enable or upgrade asks of the history.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Revisions to keep (`None`: [`DEFAULT_HISTORY_MAX`]).
    pub max: Option<usize>,
    /// The description of the revision it adds (`None`: `install` or `upgrade`).
    pub description: Option<String>,
}

pub use crate::error::RevisionError;

/// The name of an addon's revision Secret.
pub fn secret_name(addon: &str, revision: u32) -> String {
    format!("{}-rev-{revision}", record_name(addon))
}

/// The package's files as gzipped JSON, and their digest.
pub fn pack(package: &AddonPackage) -> (String, Vec<u8>) {
    let json = serde_json::to_vec(&package.files()).unwrap_or_default();
    (sha256_hex(&json), storage::gzip(&json))
}

/// The files of a kept package (`(path, bytes)`), bounded.
pub fn unpack(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let json = storage::gunzip(bytes, MAX_PACKAGE_INFLATED)?;
    let files: Vec<(String, String)> =
        serde_json::from_slice(&json).map_err(|e| format!("not a kept package: {e}"))?;
    Ok(files
        .into_iter()
        .map(|(path, text)| (path, text.into_bytes()))
        .collect())
}

/// Splits arguments into what the record may show and the secret values (path, value), each
/// secret replaced by a reference to `secret`.
pub fn redact(
    args: &Map<String, Value>,
    schema: &ParameterSchema,
    secret: &str,
) -> (Map<String, Value>, SecretValues) {
    let mut secrets = Vec::new();
    let mut out = args.clone();
    for (key, value) in &mut out {
        redact_value(value, &mut vec![key.clone()], schema, secret, &mut secrets);
    }
    (out, secrets)
}

fn redact_value(
    value: &mut Value,
    path: &mut Vec<String>,
    schema: &ParameterSchema,
    secret: &str,
    secrets: &mut SecretValues,
) {
    if schema.is_secret(&path.join(".")) {
        secrets.push((path.clone(), value.clone()));
        *value = json!(format!("(secret: kept in Secret `{secret}`)"));
        return;
    }
    let mut visit = |key: String, child: &mut Value| {
        path.push(key);
        redact_value(child, path, schema, secret, secrets);
        path.pop();
    };
    match value {
        Value::Object(map) => map.iter_mut().for_each(|(k, v)| visit(k.clone(), v)),
        Value::Array(items) => items
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| visit(i.to_string(), v)),
        _ => {}
    }
}

/// Puts secret values back at their paths.
pub fn restore(args: &Map<String, Value>, secrets: &[(Vec<String>, Value)]) -> Map<String, Value> {
    let mut out = Value::Object(args.clone());
    for (path, secret) in secrets {
        let pointer = path.iter().fold(String::new(), |mut out, key| {
            out.push('/');
            out.push_str(&key.replace('~', "~0").replace('/', "~1"));
            out
        });
        if let Some(at) = out.pointer_mut(&pointer) {
            *at = secret.clone();
        }
    }
    match out {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The digest of what a record lists as applied, and how many objects.
fn inventory_digest(record: &Record) -> (String, usize) {
    let per_cluster: std::collections::BTreeMap<&String, Vec<&super::record::ObjectRef>> = record
        .dispatched
        .iter()
        .map(|(cluster, inventory)| {
            (
                cluster,
                inventory.objects.iter().map(|o| &o.object).collect(),
            )
        })
        .collect();
    let json = serde_json::to_vec(&(&record.inventory, &per_cluster)).unwrap_or_default();
    let objects = record.inventory.len() + per_cluster.values().map(Vec::len).sum::<usize>();
    (sha256_hex(&json), objects)
}

/// What one apply brings to the history.
pub struct Applied<'a> {
    /// The package applied.
    pub package: &'a AddonPackage,
    /// The stored arguments.
    pub args: &'a Map<String, Value>,
    /// Their schema (which are secret).
    pub schema: &'a ParameterSchema,
    /// What the command asked.
    pub history: &'a History,
    /// Whether every cluster has it.
    pub succeeded: bool,
    /// Whether the addon was installed before.
    pub upgrade: bool,
    /// The parameter sets some clusters got over the arguments, by key.
    pub overrides: BTreeMap<String, RevisionOverride>,
}

/// Adds to `record` the revision an apply makes (or settles the latest one when it has the
/// same content), writing its Secret first; trims the history. Returns the revision Secrets no
/// longer kept, to delete once the record is written ([`forget`]).
pub async fn note(
    cluster: &Cluster,
    ns: &str,
    record: &mut Record,
    applied: &Applied<'_>,
) -> crate::Result<Vec<String>> {
    let (package_digest, packed) = pack(applied.package);
    let (inventory_digest, objects) = inventory_digest(record);
    let now = crate::source::http::rfc3339(std::time::SystemTime::now());
    if applied.history.description.is_none() {
        if let Some(latest) = record.revisions.last_mut() {
            let same = latest.version == record.version
                && latest.registry == record.registry
                && latest.args_hash == record.args_hash
                && latest.package_digest == package_digest
                && latest.overrides.keys().eq(applied.overrides.keys());
            if same {
                // The same parameter sets; which clusters got them may have changed, and the
                // same files may have been read through another manifest or verified since.
                latest.overrides.clone_from(&applied.overrides);
                latest.source.clone_from(&record.source);
                if applied.succeeded && latest.status == RevisionStatus::Failed {
                    latest.status = RevisionStatus::Deployed;
                    latest.updated = now;
                    latest.inventory_digest = inventory_digest;
                    latest.objects = objects;
                    supersede_all_but_last(record);
                }
                return Ok(Vec::new());
            }
        }
    }
    let number = record.revisions.last().map_or(1, |r| r.revision + 1);
    let name = secret_name(&record.name, number);
    let (args, secrets) = redact(applied.args, applied.schema, &name);
    let keep_package = packed.len() <= MAX_PACKAGE_BYTES;
    let mut revision = Revision {
        revision: number,
        updated: now,
        version: record.version.clone(),
        registry: record.registry.clone(),
        status: if applied.succeeded {
            RevisionStatus::Deployed
        } else {
            RevisionStatus::Failed
        },
        description: applied.history.description.clone().unwrap_or_else(|| {
            if applied.upgrade { "upgrade" } else { "install" }.to_owned()
        }),
        args,
        secret_args: secrets.iter().map(|(p, _)| p.join(".")).collect(),
        args_hash: record.args_hash.clone(),
        package_digest,
        secret: Some(name.clone()),
        package_kept: keep_package,
        note: (!keep_package).then(|| {
            format!(
                "the package takes {} bytes compressed, over {MAX_PACKAGE_BYTES}: not kept; rolling back to this revision needs its registry",
                packed.len()
            )
        }),
        inventory_digest,
        objects,
        overrides: applied.overrides.clone(),
        source: record.source.clone(),
    };
    let secret = revision_secret(
        record,
        ns,
        number,
        keep_package.then_some(&packed[..]),
        &secrets,
    );
    if let Err(e) = cluster.apply(&secret, ns).await {
        revision.secret = None;
        revision.package_kept = false;
        revision.note = Some(format!("its Secret `{name}` could not be written: {e}"));
    }
    record.revisions.push(revision);
    if applied.succeeded {
        supersede_all_but_last(record);
    }
    let max = applied.history.max.unwrap_or(DEFAULT_HISTORY_MAX).max(1);
    let excess = record.revisions.len().saturating_sub(max);
    Ok(record
        .revisions
        .drain(..excess)
        .filter_map(|r| r.secret)
        .collect())
}

fn supersede_all_but_last(record: &mut Record) {
    let last = record.revisions.len().saturating_sub(1);
    for revision in &mut record.revisions[..last] {
        if revision.status == RevisionStatus::Deployed {
            revision.status = RevisionStatus::Superseded;
        }
    }
}

fn revision_secret(
    record: &Record,
    ns: &str,
    number: u32,
    package: Option<&[u8]>,
    secrets: &[(Vec<String>, Value)],
) -> Value {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut data = Map::new();
    if let Some(package) = package {
        data.insert(PACKAGE_KEY.into(), json!(b64(package)));
    }
    if !secrets.is_empty() {
        let text = serde_json::to_vec(secrets).unwrap_or_default();
        data.insert(SECRET_ARGS_KEY.into(), json!(b64(&text)));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(&record.name, number),
            "namespace": ns,
            "labels": {
                LABEL_RECORD_OF: record.name,
                LABEL_RECORD_PART: "revision",
                "addonctl.io/revision": number.to_string(),
                "app.kubernetes.io/managed-by": "addonctl",
            },
        },
        "type": "Opaque",
        "data": data,
    })
}

/// Deletes revision Secrets no longer kept; a failure leaves them (harmless, `disable` deletes
/// them).
pub async fn forget(cluster: &Cluster, ns: &str, names: &[String]) {
    for name in names {
        if let Err(e) = cluster.delete(&secret_gvk(), Some(ns), name).await {
            tracing::debug!("revision Secret `{name}` is left: {e}");
        }
    }
}

/// What a revision Secret keeps.
#[derive(Debug, Default)]
pub struct Kept {
    /// The package's files, when kept.
    pub files: Option<Vec<(String, Vec<u8>)>>,
    /// The secret arguments' values.
    pub secrets: SecretValues,
}

/// Reads a revision's Secret: its package (when kept) and secret arguments. A revision whose
/// secret arguments cannot be read back is unusable (rolling back would lose them).
pub async fn kept(
    cluster: &Cluster,
    ns: &str,
    addon: &str,
    revision: &Revision,
) -> crate::Result<Kept> {
    let unusable = |reason: String| RevisionError::Unusable {
        addon: addon.to_owned(),
        revision: revision.revision,
        reason,
    };
    let Some(name) = &revision.secret else {
        if revision.secret_args.is_empty() {
            return Ok(Kept::default());
        }
        return Err(unusable(
            "its Secret was never written, so its secret arguments are unknown".to_owned(),
        )
        .into());
    };
    let secret = cluster.get(&secret_gvk(), Some(ns), name).await?;
    let Some(secret) = secret.map(|s| super::to_value(&s)) else {
        if revision.secret_args.is_empty() && !revision.package_kept {
            return Ok(Kept::default());
        }
        return Err(unusable(format!(
            "its Secret `{ns}/{name}` is gone; roll back to another revision (see `addonctl history {addon}`)"
        ))
        .into());
    };
    // A damaged Secret: which one, what is wrong with it, how to look at it, what to do instead.
    let damaged = |what: String| {
        unusable(format!(
            "its revision Secret `{ns}/{name}` is damaged: {what}; inspect it with `kubectl -n {ns} get secret {name} -o yaml`, and roll back to another revision (see `addonctl history {addon}`)"
        ))
    };
    let field = |key: &str| -> Result<Option<Vec<u8>>, RevisionError> {
        secret
            .pointer(&format!("/data/{key}"))
            .and_then(Value::as_str)
            .map(|text| {
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|e| damaged(format!("`data.{key}` is not base64 ({e})")))
            })
            .transpose()
    };
    let files = match field(PACKAGE_KEY)? {
        Some(bytes) if revision.package_kept => Some(
            unpack(&bytes)
                .map_err(|e| damaged(format!("`data.{PACKAGE_KEY}` does not read ({e})")))?,
        ),
        _ => None,
    };
    let secrets = match field(SECRET_ARGS_KEY)? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| damaged(format!("`data.{SECRET_ARGS_KEY}` does not read ({e})")))?,
        None if !revision.secret_args.is_empty() => {
            return Err(damaged(format!(
                "it lacks `data.{SECRET_ARGS_KEY}`, the revision's secret arguments"
            ))
            .into())
        }
        None => Vec::new(),
    };
    Ok(Kept { files, secrets })
}

/// The revision to roll back to: `wanted`, else the one before the deployed one.
pub fn target(record: &Record, wanted: Option<u32>) -> Result<&Revision, RevisionError> {
    let addon = &record.name;
    if let Some(wanted) = wanted {
        return record
            .revisions
            .iter()
            .find(|r| r.revision == wanted)
            .ok_or_else(|| RevisionError::NoSuchRevision {
                addon: addon.clone(),
                revision: wanted,
                available: available(record),
            });
    }
    let current = record
        .revisions
        .iter()
        .rev()
        .find(|r| r.status == RevisionStatus::Deployed)
        .or(record.revisions.last())
        .map(|r| r.revision);
    record
        .revisions
        .iter()
        .rev()
        .find(|r| current.is_some_and(|c| r.revision < c))
        .ok_or_else(|| RevisionError::NoPrevious {
            addon: addon.clone(),
        })
}

fn available(record: &Record) -> String {
    if record.revisions.is_empty() {
        return "none".to_owned();
    }
    record
        .revisions
        .iter()
        .map(|r| r.revision.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
