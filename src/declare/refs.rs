//! Reading and deleting `Addon`s on the control plane. A control plane that does not serve the
//! kind has none (no error); a user who may not read them is told so by the API server's error.

use kube::core::GroupVersionKind;
use serde_json::Value;

use super::{Error, LABEL_PARAMS, SECRET_PREFIX};
use crate::cluster::Cluster;
use crate::controller::crd::{Addon, GROUP, VERSION};

/// The group/version/kind of `Addon`.
pub fn addon_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk(GROUP, VERSION, "Addon")
}

/// Whether the control plane serves `Addon` (looked up again when discovery said no: the CRD
/// may just have been installed).
///
/// # Errors
///
/// Discovery failed.
pub async fn served(cluster: &Cluster) -> Result<bool, Error> {
    if cluster.serves(&addon_gvk()).await? {
        return Ok(true);
    }
    cluster.refresh_discovery();
    Ok(cluster.serves(&addon_gvk()).await?)
}

/// The `Addon` of `name` in `namespace`, if there is one (one GET; none without the CRD).
///
/// # Errors
///
/// The API server's refusal, or an `Addon` that does not parse.
pub async fn find(cluster: &Cluster, namespace: &str, name: &str) -> Result<Option<Addon>, Error> {
    let Some(found) = cluster.get(&addon_gvk(), Some(namespace), name).await? else {
        return Ok(None);
    };
    parse(serde_json::to_value(found).unwrap_or(Value::Null)).map(Some)
}

/// Every `Addon` of `namespace` (one LIST; none without the CRD). One that does not parse is
/// left out with a warning.
///
/// # Errors
///
/// The API server's refusal.
pub async fn list(cluster: &Cluster, namespace: &str) -> Result<Vec<Addon>, Error> {
    let found = cluster.list(&addon_gvk(), Some(namespace), "").await?;
    let mut out = Vec::with_capacity(found.len());
    for object in found {
        match parse(serde_json::to_value(object).unwrap_or(Value::Null)) {
            Ok(addon) => out.push(addon),
            Err(e) => tracing::warn!("{e}"),
        }
    }
    Ok(out)
}

fn parse(value: Value) -> Result<Addon, Error> {
    let name = value["metadata"]["name"].as_str().unwrap_or("?").to_owned();
    serde_json::from_value(value)
        .map_err(|e| Error::Invalid(format!("`Addon` `{name}` cannot be read: {e}")))
}

/// Deletes the `Addon` of `name` and the Secret of its secret parameters (when addonctl wrote
/// it). Returns whether the `Addon` existed.
///
/// # Errors
///
/// The API server's refusal.
pub async fn delete(cluster: &Cluster, namespace: &str, name: &str) -> Result<bool, Error> {
    let existed = cluster.delete(&addon_gvk(), Some(namespace), name).await?;
    delete_params_secret(cluster, namespace, name).await?;
    Ok(existed)
}

/// Deletes `addon-params-<name>` when it carries addonctl's label for this addon (a Secret of
/// that name written by someone else is left alone). Returns whether it was deleted.
pub(super) async fn delete_params_secret(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<bool, Error> {
    let secret_name = format!("{SECRET_PREFIX}{name}");
    let gvk = crate::model::wire::secret_gvk();
    let Some(found) = cluster.get(&gvk, Some(namespace), &secret_name).await? else {
        return Ok(false);
    };
    let ours = found
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_PARAMS))
        .is_some_and(|v| v == name);
    if !ours {
        return Ok(false);
    }
    Ok(cluster.delete(&gvk, Some(namespace), &secret_name).await?)
}
