//! `list`: every addon of the registries with its installed phase — the same phase `status`
//! computes ([`super::phase()`]): O(1) list calls on the control plane, plus, for each addon the
//! direct engine dispatched, its objects read back from its clusters. Without a cluster
//! (`store` = `None`) every addon's phase is `unknown`.

use std::collections::{BTreeMap, BTreeSet};

use futures::stream::{self, StreamExt};
use serde::Serialize;

use super::health::{self, ClusterStatus};
use super::phase::{dispatched_record, phase, Phase};
use crate::source::catalog::{self, Catalog};
use crate::state::{Installed, Store};
use crate::Result;

/// How many installed addons' objects `list` reads at once.
const ADDON_CONCURRENCY: usize = 4;

/// One row of `list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListRow {
    /// The addon.
    pub name: String,
    /// Its registry.
    pub registry: String,
    /// Its description.
    pub description: String,
    /// Versions available, newest first.
    pub available_versions: Vec<String>,
    /// Its phase (`unknown` without a cluster).
    pub phase: Phase,
    /// The installed version, when installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
}

/// What `list` shows.
#[derive(Debug, Clone, Default)]
pub struct ListOptions<'a> {
    /// Only this registry.
    pub registry: Option<&'a str>,
    /// Only installed addons.
    pub installed_only: bool,
}

/// `list`: every addon of the registries (optionally one registry, optionally only installed
/// ones), with its phase; `store` = `None` when no cluster answers (phase `unknown`).
/// Registries that fail are returned as warnings (an error when it is the registry asked for).
pub async fn list(
    store: Option<Store<'_>>,
    catalog: &Catalog,
    options: &ListOptions<'_>,
) -> Result<(Vec<ListRow>, Vec<String>)> {
    let installed = match store {
        Some(store) => Some(store.installed().await?),
        None => None,
    };
    let health = match (store, &installed) {
        (Some(store), Some(installed)) => read_health(store, installed).await?,
        _ => BTreeMap::new(),
    };
    let row_phase = |name: &str| match &installed {
        None => (Phase::Unknown, None),
        Some(all) => {
            let current = all.get(name);
            (
                phase(current, health.get(name).map(Vec::as_slice)),
                current.map(|i| i.version.clone()),
            )
        }
    };
    let registry = options.registry;
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    let mut seen = BTreeSet::new();
    // Only the registry asked for is read; when it fails, the command fails.
    for listing in catalog.list_only(registry).await {
        match listing.addons {
            Err(e) if registry.is_some() => {
                return Err(catalog::registry_failure(&listing.registry, e).into())
            }
            Ok(addons) => {
                for addon in addons {
                    if !seen.insert(addon.name.clone()) {
                        continue;
                    }
                    let (phase, installed_version) = row_phase(&addon.name);
                    rows.push(ListRow {
                        name: addon.name,
                        registry: listing.registry.clone(),
                        description: addon.description.unwrap_or_default(),
                        available_versions: addon.versions,
                        phase,
                        installed_version,
                    });
                }
            }
            Err(e) => warnings.push(format!(
                "registry `{}` could not be listed: {e}",
                listing.registry
            )),
        }
    }
    for (name, i) in installed.iter().flatten() {
        if !seen.contains(name) && registry.is_none_or(|r| r == i.registry) {
            let (phase, installed_version) = row_phase(name);
            rows.push(ListRow {
                name: name.clone(),
                registry: i.registry.clone(),
                description: String::new(),
                available_versions: Vec::new(),
                phase,
                installed_version,
            });
        }
    }
    if options.installed_only {
        rows.retain(|r| r.installed_version.is_some());
    }
    Ok((rows, warnings))
}

/// The objects of every installed addon the direct engine dispatched, read back from their
/// clusters (a few addons at a time).
async fn read_health(
    store: Store<'_>,
    installed: &BTreeMap<String, Installed>,
) -> Result<BTreeMap<String, Vec<ClusterStatus>>> {
    let reads = installed.iter().filter_map(|(name, i)| {
        let record = dispatched_record(i)?;
        Some(async move {
            let clusters = health::health(store, &record.dispatched_or_planned()).await?;
            Ok::<_, crate::Error>((name.clone(), clusters))
        })
    });
    stream::iter(reads)
        .buffer_unordered(ADDON_CONCURRENCY)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}
