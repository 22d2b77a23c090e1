//! Plans kept in the API server, so that a plan made through one replica of an in-cluster app
//! store can be applied through another, and survives a restart: one Secret per plan in the
//! system namespace (`addonctl-plan-<id>`, labelled `addonctl.io/plan`), written with the
//! server's own credentials (the request's values may hold secrets, so a Secret). Applying
//! claims a plan by deleting its Secret at the resource version read: of two replicas, one
//! applies and the other answers 409. Expired plans are deleted as they are found.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::cluster::Cluster;
use crate::context::Identity;
use crate::model::wire::secret_gvk;

use super::plans::{PlanRequest, PLAN_TTL};

/// The label on every plan's Secret.
pub const LABEL_PLAN: &str = "addonctl.io/plan";

const KEY: &str = "plan.json";

/// What a plan's Secret holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Persisted {
    /// The request as given (values unmasked).
    pub request: PlanRequest,
    /// The request as answered (secret values masked).
    pub shown: PlanRequest,
    /// The plan answered.
    pub plan: Value,
    /// Whether it changes anything.
    pub changes: bool,
    /// The command line.
    pub command: String,
    /// The hash of the plan, hex.
    pub fingerprint: String,
    /// Who made it.
    pub owner: Option<Identity>,
    /// About a system addon.
    pub system: bool,
    /// When it was made (seconds since the epoch).
    pub made: u64,
}

/// Seconds since the epoch now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The Secret of the plan `id`.
pub fn name(id: &str) -> String {
    format!("addonctl-plan-{id}")
}

/// Writes the plan `id`; its resource version.
pub async fn write(
    cluster: &Cluster,
    namespace: &str,
    id: &str,
    plan: &Persisted,
) -> crate::Result<Option<String>> {
    let text = serde_json::to_string(plan).map_err(|e| {
        crate::Error::Io(std::io::Error::other(format!(
            "a plan cannot be encoded: {e}"
        )))
    })?;
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name(id), "namespace": namespace,
                     "labels": {LABEL_PLAN: "true", "app.kubernetes.io/managed-by": "addonctl"}},
        "type": "Opaque",
        "data": {KEY: base64::engine::general_purpose::STANDARD.encode(text)},
    });
    let created = cluster.create(&secret).await?;
    Ok(created.metadata.resource_version)
}

/// Reads the plan `id` and its resource version; `None` when there is none (or it expired:
/// then it is deleted).
pub async fn read(
    cluster: &Cluster,
    namespace: &str,
    id: &str,
) -> crate::Result<Option<(Persisted, String)>> {
    if !id.bytes().all(|b| b.is_ascii_hexdigit()) || id.len() != 32 {
        return Ok(None);
    }
    let Some(object) = cluster
        .get(&secret_gvk(), Some(namespace), &name(id))
        .await?
    else {
        return Ok(None);
    };
    let version = object.metadata.resource_version.clone().unwrap_or_default();
    let decoded = object
        .data
        .get("data")
        .and_then(|d| d.get(KEY))
        .and_then(Value::as_str)
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|bytes| serde_json::from_slice::<Persisted>(&bytes).ok());
    match decoded {
        Some(plan) if now().saturating_sub(plan.made) < PLAN_TTL.as_secs() => {
            Ok(Some((plan, version)))
        }
        _ => {
            let _ = cluster
                .delete_if_version(&secret_gvk(), Some(namespace), &name(id), &version)
                .await;
            Ok(None)
        }
    }
}

/// Claims the plan `id` for its apply: deletes its Secret while it is at `version`. `false`:
/// another replica claimed it (or it is gone).
pub async fn claim(
    cluster: &Cluster,
    namespace: &str,
    id: &str,
    version: &str,
) -> crate::Result<bool> {
    Ok(cluster
        .delete_if_version(&secret_gvk(), Some(namespace), &name(id), version)
        .await?)
}

/// Deletes the plans that expired.
pub async fn sweep(cluster: &Cluster, namespace: &str) -> crate::Result<usize> {
    let mut swept = 0;
    for object in cluster
        .list(
            &secret_gvk(),
            Some(namespace),
            &format!("{LABEL_PLAN}=true"),
        )
        .await?
    {
        let Some(id) = object
            .metadata
            .name
            .as_deref()
            .and_then(|n| n.strip_prefix("addonctl-plan-"))
        else {
            continue;
        };
        if read(cluster, namespace, id).await?.is_none() {
            swept += 1;
        }
    }
    Ok(swept)
}
