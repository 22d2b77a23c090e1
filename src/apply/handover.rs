//! Objects that outlive the addon that last applied them: an object two addons render stays
//! while another addon's record lists it (see [`super::deletion`]), but its owner reference,
//! labels and annotations still name the addon that applied it last. Left so, the garbage
//! collector deletes it with that addon's Application (or record), and status, drift and the
//! next enable would take it for the wrong addon's.
//!
//! Before the addon lets go of such an object, [`hand_over`] re-points it to the addon that
//! keeps it: the owner reference naming the addon leaving (its Application `addon-<name>` or
//! its record `addon-record-<name>`) is replaced by one naming the keeper's Application (or,
//! with the direct engine, its record), and the labels and annotations
//! `addons.oam.dev/name`, `addons.oam.dev/version` and `addons.oam.dev/registry` that name the
//! addon leaving name the keeper (its version and registry as its own Application or record
//! carries them, dropped when unknown). When the keeper has neither an Application nor a
//! record on the control plane, the reference naming the addon leaving is only removed. The
//! change is a merge patch conditional on the resource version read (retried when someone
//! wrote meanwhile); an object that names the addon leaving nowhere is not written.

use std::collections::BTreeMap;

use kube::api::DynamicObject;
use kube::core::{GroupVersionKind, ObjectMeta};
use serde_json::{json, Map, Value};

use crate::cluster::{self, Cluster};
use crate::model::wire::{
    application_gvk, application_name, secret_gvk, LABEL_NAME, LABEL_REGISTRY, LABEL_VERSION,
};
use crate::state::record::{self, ObjectRef};
use crate::{Error, Result};

/// Attempts at re-pointing one object that others keep writing.
const ATTEMPTS: usize = 3;

/// The labels and annotations that name an addon.
const NAMING_KEYS: [&str; 3] = [LABEL_NAME, LABEL_VERSION, LABEL_REGISTRY];

/// The addon that keeps an object, as its objects name it.
#[derive(Debug, Clone)]
struct Keeper {
    /// The owner reference to its Application or record, when one exists.
    owner: Option<Value>,
    /// The values of [`NAMING_KEYS`] for it (the name always; version and registry when its
    /// Application or record carries them).
    naming: BTreeMap<&'static str, String>,
}

/// Re-points each of `kept` (an object on `cluster` and the addon that keeps it) from `leaving`
/// to its keeper: see the module documentation. The keepers' Applications and records are
/// read from `control_plane`, in `system_namespace`; an owner reference is added only where one
/// naming `leaving` is removed (never on a managed cluster, whose objects have none). Returns
/// the objects it changed (as `Kind namespace/name`).
pub(crate) async fn hand_over(
    control_plane: &Cluster,
    cluster: &Cluster,
    system_namespace: &str,
    leaving: &str,
    kept: &[(ObjectRef, String)],
) -> Result<Vec<String>> {
    let mut keepers: BTreeMap<String, Keeper> = BTreeMap::new();
    let mut changed = Vec::new();
    for (object, keeper) in kept {
        if !keepers.contains_key(keeper) {
            let found = keeper_of(control_plane, system_namespace, keeper).await?;
            keepers.insert(keeper.clone(), found);
        }
        let Some(found) = keepers.get(keeper) else {
            continue;
        };
        if repoint(cluster, object, leaving, found).await.map_err(|e| {
            Error::DeleteFailed {
                reason: format!(
                    "{object} is kept for addon `{keeper}`, but naming `{keeper}` instead of `{leaving}` on it failed: {e}; run the command again (the object stays until then)"
                ),
            }
        })? {
            changed.push(object.to_string());
        }
    }
    Ok(changed)
}

/// How `keeper`'s objects are owned and labelled: its Application when the control plane has
/// one, else its record Secret.
async fn keeper_of(cluster: &Cluster, ns: &str, keeper: &str) -> Result<Keeper> {
    let mut owner: Option<(GroupVersionKind, DynamicObject)> = None;
    let application = application_gvk();
    if cluster.serves(&application).await? {
        if let Some(app) = cluster
            .get(&application, Some(ns), &application_name(keeper))
            .await?
        {
            owner = Some((application, app));
        }
    }
    if owner.is_none() {
        let secret = secret_gvk();
        if let Some(stored) = cluster
            .get(&secret, Some(ns), &record::record_name(keeper))
            .await?
        {
            owner = Some((secret, stored));
        }
    }
    let mut naming = BTreeMap::from([(LABEL_NAME, keeper.to_owned())]);
    let owner = owner.and_then(|(gvk, stored)| {
        let labels = stored.metadata.labels.clone().unwrap_or_default();
        for key in [LABEL_VERSION, LABEL_REGISTRY] {
            if let Some(value) = labels.get(key) {
                naming.insert(key, value.clone());
            }
        }
        owner_of(&gvk, &stored.metadata)
    });
    Ok(Keeper { owner, naming })
}

/// The controller owner reference to an object (`None` without a name or uid).
fn owner_of(gvk: &GroupVersionKind, metadata: &ObjectMeta) -> Option<Value> {
    let name = metadata.name.as_deref()?;
    let uid = metadata.uid.as_deref().filter(|u| !u.is_empty())?;
    let api_version = if gvk.group.is_empty() {
        gvk.version.clone()
    } else {
        format!("{}/{}", gvk.group, gvk.version)
    };
    Some(json!({
        "apiVersion": api_version,
        "kind": gvk.kind,
        "name": name,
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }))
}

/// Re-points one object, retrying when it was written meanwhile. Whether it was changed.
async fn repoint(
    cluster: &Cluster,
    object: &ObjectRef,
    leaving: &str,
    keeper: &Keeper,
) -> cluster::Result<bool> {
    let gvk = object.gvk();
    let namespace = object.namespace.as_deref();
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let Some(stored) = cluster.get(&gvk, namespace, &object.name).await? else {
            return Ok(false);
        };
        let stored = serde_json::to_value(&stored).unwrap_or(Value::Null);
        let Some(patch) = patch_for(&stored, leaving, keeper) else {
            return Ok(false);
        };
        match cluster
            .merge_patch(&gvk, namespace, &object.name, &patch)
            .await
        {
            Ok(_) => return Ok(true),
            Err(e @ cluster::Error::Conflict { .. }) => last = Some(e),
            Err(cluster::Error::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| cluster::Error::Conflict {
        cluster: cluster.name().to_owned(),
        message: format!("{object} kept changing"),
    }))
}

/// Whether an owner reference names the addon `addon` (its Application or its record).
fn names_addon(reference: &Value, addon: &str) -> bool {
    let field = |k: &str| reference.get(k).and_then(Value::as_str);
    match (field("kind"), field("name")) {
        (Some("Application"), Some(name)) => name == application_name(addon),
        (Some("Secret"), Some(name)) => name == record::record_name(addon),
        _ => false,
    }
}

/// The merge patch that re-points `stored` from `leaving` to `keeper` (conditional on its
/// resource version), or `None` when it names `leaving` nowhere.
fn patch_for(stored: &Value, leaving: &str, keeper: &Keeper) -> Option<Value> {
    let metadata = stored.get("metadata")?;
    let mut patch = Map::new();
    let owners: Vec<Value> = metadata
        .get("ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if owners.iter().any(|o| names_addon(o, leaving)) {
        let mut kept: Vec<Value> = owners
            .into_iter()
            .filter(|o| !names_addon(o, leaving))
            .collect();
        if let Some(owner) = &keeper.owner {
            let present = kept.iter().any(|o| o.get("uid") == owner.get("uid"));
            if !present {
                let mut owner = owner.clone();
                // The server refuses two controllers.
                if kept
                    .iter()
                    .any(|o| o.get("controller") == Some(&json!(true)))
                {
                    owner["controller"] = json!(false);
                }
                kept.push(owner);
            }
        }
        let kept = if kept.is_empty() {
            Value::Null
        } else {
            Value::Array(kept)
        };
        patch.insert("ownerReferences".to_owned(), kept);
    }
    for field in ["labels", "annotations"] {
        let Some(values) = metadata.get(field).and_then(Value::as_object) else {
            continue;
        };
        if values.get(LABEL_NAME).and_then(Value::as_str) != Some(leaving) {
            continue;
        }
        let mut changes = Map::new();
        for key in NAMING_KEYS {
            let now = values.get(key);
            let next = if key == LABEL_NAME || now.is_some() {
                keeper.naming.get(key).map(|v| json!(v))
            } else {
                None
            };
            match (now, next) {
                (Some(now), Some(next)) if *now == next => {}
                (_, Some(next)) => {
                    changes.insert(key.to_owned(), next);
                }
                (Some(_), None) => {
                    changes.insert(key.to_owned(), Value::Null);
                }
                (None, None) => {}
            }
        }
        if !changes.is_empty() {
            patch.insert(field.to_owned(), Value::Object(changes));
        }
    }
    if patch.is_empty() {
        return None;
    }
    if let Some(version) = metadata.get("resourceVersion") {
        patch.insert("resourceVersion".to_owned(), version.clone());
    }
    Some(json!({ "metadata": patch }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keeper(owner: Option<Value>, version: Option<&str>) -> Keeper {
        let mut naming = BTreeMap::from([(LABEL_NAME, "fluxcd".to_owned())]);
        if let Some(version) = version {
            naming.insert(LABEL_VERSION, version.to_owned());
        }
        Keeper { owner, naming }
    }

    fn app_owner(name: &str, uid: &str) -> Value {
        json!({"apiVersion": "core.oam.dev/v1beta1", "kind": "Application", "name": name,
            "uid": uid, "controller": true, "blockOwnerDeletion": true})
    }

    #[test]
    fn the_owner_and_labels_of_the_addon_leaving_become_the_keepers() {
        let stored = json!({"metadata": {
            "name": "helm", "resourceVersion": "42",
            "ownerReferences": [app_owner("addon-example", "u-example")],
            "labels": {"addons.oam.dev/name": "example", "addons.oam.dev/version": "1.0.0",
                "addons.oam.dev/registry": "local", "team": "a"},
        }});
        let keeper = keeper(Some(app_owner("addon-fluxcd", "u-flux")), Some("2.1.0"));

        let patch = patch_for(&stored, "example", &keeper).unwrap();

        assert_eq!(
            patch,
            json!({"metadata": {
                "resourceVersion": "42",
                "ownerReferences": [app_owner("addon-fluxcd", "u-flux")],
                "labels": {"addons.oam.dev/name": "fluxcd", "addons.oam.dev/version": "2.1.0",
                    "addons.oam.dev/registry": null},
            }})
        );
    }

    #[test]
    fn without_an_owner_for_the_keeper_the_reference_is_only_removed() {
        let stored = json!({"metadata": {
            "name": "helm", "resourceVersion": "7",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Secret", "name": "addon-record-example", "uid": "r"},
            ],
        }});

        let patch = patch_for(&stored, "example", &keeper(None, None)).unwrap();

        assert_eq!(
            patch,
            json!({"metadata": {"resourceVersion": "7", "ownerReferences": null}})
        );
    }

    #[test]
    fn an_object_naming_another_addon_is_left_alone() {
        let stored = json!({"metadata": {
            "name": "helm", "resourceVersion": "7",
            "ownerReferences": [app_owner("addon-fluxcd", "u-flux")],
            "labels": {"addons.oam.dev/name": "fluxcd"},
        }});
        let keeper = keeper(Some(app_owner("addon-fluxcd", "u-flux")), None);

        assert_eq!(patch_for(&stored, "example", &keeper), None);
    }

    #[test]
    fn another_controller_stays_the_controller() {
        let stored = json!({"metadata": {
            "name": "helm", "resourceVersion": "7",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Secret", "name": "addon-record-example", "uid": "r"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "uid": "d",
                    "controller": true},
            ],
        }});
        let keeper = keeper(Some(app_owner("addon-fluxcd", "u-flux")), None);

        let patch = patch_for(&stored, "example", &keeper).unwrap();

        let owners = patch["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(owners.len(), 2);
        assert_eq!(owners[1]["uid"], "u-flux");
        assert_eq!(owners[1]["controller"], false);
    }
}
