//! What is installed, as the control plane shows it: addonctl's records ([`record`]), the
//! Applications, the stored arguments, the known clusters ([`clusters`]), and the locks
//! ([`lease`]) writing commands take. Reading only (the record's conditional update aside);
//! read once per command.

pub mod clusters;
pub mod lease;
pub mod record;
pub mod revisions;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use base64::Engine as _;
use kube::api::DynamicObject;
use serde_json::{Map, Value};

use crate::cluster::Cluster;
use crate::model::wire::{
    application_gvk, application_name, args_secret_name, secret_gvk, string_list,
    topology_properties, ARGS_SECRET_KEY, LABEL_NAME, LABEL_REGISTRY, LABEL_VERSION, LOCAL_CLUSTER,
};
use crate::{Error, Result};
use record::Record;

/// The state on the control plane: its client and the system namespace, all `state/` reads.
/// Cheap to copy; the context's `state()` makes one.
#[derive(Clone, Copy)]
pub struct Store<'a> {
    /// The control plane.
    pub cluster: &'a Cluster,
    /// The system namespace.
    pub namespace: &'a str,
}

/// An installed addon, as the cluster shows it.
#[derive(Debug, Clone)]
pub struct Installed {
    /// Name.
    pub name: String,
    /// Version (label `addons.oam.dev/version`).
    pub version: String,
    /// Registry (label `addons.oam.dev/registry`).
    pub registry: String,
    /// The Application `addon-<name>`, when there is one.
    pub application: Option<Value>,
    /// addonctl's record, when addonctl installed it.
    pub record: Option<Record>,
}

impl Store<'_> {
    /// Every installed addon, from one labelled list of Applications (when served) and one of
    /// records: O(1) calls whatever the number of addons (none when a command read them
    /// already and has written nothing since, see [`Cluster::reuse_lists`]).
    pub async fn installed(&self) -> Result<BTreeMap<String, Installed>> {
        self.installed_with(false).await
    }

    /// [`Store::installed`], a damaged record being an error: for decisions that delete
    /// objects another addon may list (what a damaged record lists cannot be known).
    pub async fn installed_checked(&self) -> Result<BTreeMap<String, Installed>> {
        self.installed_with(true).await
    }

    async fn installed_with(&self, strict: bool) -> Result<BTreeMap<String, Installed>> {
        let mut out: BTreeMap<String, Installed> = BTreeMap::new();
        // Both lists at once; a failure of the records' is the one reported.
        let applications = application_gvk();
        let records = async {
            if strict {
                self.all_records().await
            } else {
                self.records().await
            }
        };
        let (records, apps) = Box::pin(async {
            futures::join!(
                records,
                self.cluster.list_locked(
                    &applications,
                    Some(self.namespace),
                    LABEL_NAME,
                    |lease, addon| {
                        (lease == lease::addon_lease(addon)).then(|| application_name(addon))
                    }
                )
            )
        })
        .await;
        for record in records? {
            out.insert(
                record.name.clone(),
                Installed {
                    name: record.name.clone(),
                    version: record.version.clone(),
                    registry: record.registry.clone(),
                    application: None,
                    record: Some(record),
                },
            );
        }
        for app in apps? {
            let value = to_value(&app);
            let label = |k: &str| {
                value
                    .pointer(&format!("/metadata/labels/{}", k.replace('/', "~1")))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            let Some(name) = label(LABEL_NAME) else {
                continue;
            };
            let entry = out.entry(name.clone()).or_insert_with(|| Installed {
                name: name.clone(),
                version: label(LABEL_VERSION).unwrap_or_default(),
                registry: label(LABEL_REGISTRY).unwrap_or_default(),
                application: None,
                record: None,
            });
            // The Application's labels are KubeVela's state and win over the record, which
            // `vela addon upgrade` (or `enable`) does not update.
            if let Some(version) = label(LABEL_VERSION) {
                entry.version = version;
            }
            if let Some(registry) = label(LABEL_REGISTRY) {
                entry.registry = registry;
            }
            entry.application = Some(value);
        }
        Ok(out)
    }

    /// Arguments stored for an installed addon (KubeVela's `addon-secret-<name>`).
    pub async fn stored_args(&self, name: &str) -> Result<Map<String, Value>> {
        let secret = self
            .cluster
            .get(&secret_gvk(), Some(self.namespace), &args_secret_name(name))
            .await?;
        let Some(secret) = secret else {
            return Ok(Map::new());
        };
        let value = to_value(&secret);
        let Some(encoded) = value
            .pointer(&format!("/data/{ARGS_SECRET_KEY}"))
            .and_then(Value::as_str)
        else {
            return Ok(Map::new());
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| Error::StoredArgumentsNotBase64 {
                addon: name.to_owned(),
                reason: e.to_string(),
            })?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) | Err(_) => Err(Error::StoredArgumentsNotObject {
                addon: name.to_owned(),
                secret: args_secret_name(name),
            }),
        }
    }

    /// Names of the clusters known to the control plane: `local` and every joined cluster (KubeVela's
    /// cluster Secrets in the system namespace).
    pub async fn known_clusters(&self) -> Result<Vec<String>> {
        let mut names = vec![LOCAL_CLUSTER.to_owned()];
        names.extend(self.joined().await?.into_iter().map(|(info, _)| info.name));
        Ok(names)
    }

    /// Every readable record in the system namespace (one labelled list; one more when a
    /// record is sharded, see [`record::storage`]). A damaged record is left out with a warning
    /// naming it: its own addon fails ([`Store::record`]), the others go on.
    pub async fn records(&self) -> Result<Vec<Record>> {
        let (records, damaged) =
            record::storage::read_all_readable(self.cluster, self.namespace).await?;
        for error in damaged {
            tracing::warn!("{error}; the other addons go on without it");
        }
        Ok(records)
    }

    /// Every record, a damaged one being an error: for decisions that delete objects another
    /// addon may list (what a damaged record lists cannot be known).
    pub async fn all_records(&self) -> Result<Vec<Record>> {
        record::storage::read_all(self.cluster, self.namespace).await
    }

    /// The record of one addon, `None` when it has none.
    pub async fn record(&self, addon: &str) -> Result<Option<Record>> {
        Ok(record::storage::read(self.cluster, self.namespace, addon)
            .await?
            .record)
    }
}

/// An object as plain JSON.
pub fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// The clusters an addon targets: its Application's topology policy (`*` for a label selector),
/// else the `clusters` argument, else `local`.
pub fn clusters_of(app: Option<&Value>, args: &Map<String, Value>) -> Vec<String> {
    for properties in app.into_iter().flat_map(topology_properties) {
        if let Some(list) = string_list(properties.get("clusters")) {
            return list;
        }
        if properties.get("clusterLabelSelector").is_some() {
            return vec!["*".to_owned()];
        }
    }
    string_list(args.get("clusters")).unwrap_or_else(|| vec![LOCAL_CLUSTER.to_owned()])
}
