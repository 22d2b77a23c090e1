//! What an addon's state is: its one phase ([`phase`]), per-cluster health ([`health`]), the
//! `list` of every addon ([`list()`]), and waiting for a phase or watching it ([`wait`]). Reads
//! only. Functions take what they read: a [`Store`] (the control plane's state), and for
//! `status -v` the [`Catalog`] and [`Renderer`].

pub mod health;
pub mod list;
pub mod phase;
#[cfg(test)]
mod tests;
pub mod values;
pub mod wait;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::model::{AddonVersion, Constraint};
use crate::render::Renderer;
use crate::source::catalog::Catalog;
use crate::state::record::{InstalledBy, Record};
use crate::state::{Installed, Store};
use crate::{Error, Result};
pub use list::{list, ListRow};
pub use phase::{phase, phase_of_application, Phase};

/// One parameter in `status -v`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParameterStatus {
    /// Dotted name.
    pub name: String,
    /// The current value (masked for secrets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// The description (`.usage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `status` of one addon.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The addon.
    pub name: String,
    /// Its phase.
    pub phase: Phase,
    /// The installed version (as `list` names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
    /// The registry it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// Where it came from, pinned by digest, and how it was verified (OCI registries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::model::provenance::Provenance>,
    /// The clusters it actually targets (`*` = every cluster): its topology or what was
    /// dispatched, not the `clusters` argument.
    pub clusters: Vec<String>,
    /// Who asked for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed_by: Option<InstalledBy>,
    /// Why the phase is `failed`; how far the upgrade got when `upgrading`; that KubeVela has not
    /// reported on the Application yet when `enabling` under the vela engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What else to know (a pending revision: an enable running, or interrupted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Direct engine: workloads (Deployments, DaemonSets, StatefulSets) on every target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_count: Option<usize>,
    /// Direct engine: how many of them are ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_workload_count: Option<usize>,
    /// Direct engine: per cluster and per resource.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<health::ClusterStatus>,
    /// `-v`: the description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `-v`: versions available in the registries.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub available_versions: Vec<String>,
    /// `-v`: dependencies and whether each is installed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<DependencyStatus>,
    /// `-v`: parameters.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<ParameterStatus>,
    /// The resourceVersion of its KubeVela Application as read (not shown: where a wait's
    /// watch of it starts).
    #[serde(skip)]
    pub application_version: Option<String>,
}

/// A dependency in `status -v`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DependencyStatus {
    /// The addon depended on.
    pub name: String,
    /// Its constraint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constraint: Option<String>,
    /// Whether an installed version satisfies it.
    pub satisfied: bool,
    /// The installed version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed: Option<String>,
}

/// What `status -v` reads besides the control plane: the registries and the renderer (for the
/// parameter schema).
#[derive(Debug, Clone, Copy)]
pub struct Detail<'a> {
    /// The registries.
    pub catalog: &'a Catalog,
    /// The renderer.
    pub renderer: &'a Renderer,
}

impl<'a> Detail<'a> {
    /// The catalogue and renderer of a context.
    pub fn of(ctx: &'a crate::context::Context) -> Self {
        Detail {
            catalog: &ctx.catalog,
            renderer: &ctx.renderer,
        }
    }
}

/// The status of one addon; `detail` (`status -v`) adds description, versions, dependencies
/// and parameters.
pub async fn status(store: Store<'_>, name: &str, detail: Option<Detail<'_>>) -> Result<Status> {
    status_within(store, name, detail, None).await
}

/// [`status`], reading only the clusters of `only` (all when `None`): what a rollout's gate
/// looks at is its batch, not every cluster of a fleet. The phase and reason then speak of
/// those clusters alone.
pub async fn status_within(
    store: Store<'_>,
    name: &str,
    detail: Option<Detail<'_>>,
    only: Option<&BTreeSet<String>>,
) -> Result<Status> {
    let all = store.installed().await?;
    let current = all.get(name);
    if current.and_then(|c| c.record.as_ref()).is_none() {
        // A damaged record is left out of the others' reads: its own addon's fails here.
        store.record(name).await?;
    }
    let mut status = Status {
        name: name.to_owned(),
        phase: Phase::Disabled,
        installed_version: None,
        registry: None,
        source: None,
        clusters: Vec::new(),
        installed_by: None,
        reason: None,
        notes: Vec::new(),
        workload_count: None,
        ready_workload_count: None,
        resources: Vec::new(),
        description: None,
        available_versions: Vec::new(),
        dependencies: Vec::new(),
        parameters: Vec::new(),
        application_version: current
            .and_then(|c| c.application.as_ref())
            .and_then(|app| app.pointer("/metadata/resourceVersion"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
    };
    let args = if current.is_some() {
        store.stored_args(name).await?
    } else {
        Map::new()
    };
    if let Some(current) = current {
        status.phase = phase(Some(current), None);
        status.installed_version = Some(current.version.clone());
        status.registry = Some(current.registry.clone());
        status.clusters = phase::targeted_clusters(current, &args);
        status.installed_by = current.record.as_ref().map(|r| r.installed_by);
        status.source = current.record.as_ref().and_then(|r| r.source.clone());
        if let Some(app) = &current.application {
            if status.phase == Phase::Enabling {
                status.reason = phase::unreported_application_reason(app);
            }
        }
        if let Some(record) = phase::dispatched_record(current) {
            direct_health(store, current, record, only, &mut status).await?;
        }
    }
    let Some(detail) = detail else {
        return Ok(status);
    };
    details(detail, &all, current.is_none(), args, &mut status).await?;
    Ok(status)
}

/// The phase, reason and resources of an addon the direct engine dispatched, from its clusters.
async fn direct_health(
    store: Store<'_>,
    installed: &Installed,
    record: &Record,
    only: Option<&BTreeSet<String>>,
    status: &mut Status,
) -> Result<()> {
    let name = &record.name;
    let mut dispatched = record.dispatched_or_planned();
    if let Some(only) = only {
        dispatched.retain(|cluster, _| only.contains(cluster));
    }
    let mut clusters = health::health(store, &dispatched).await?;
    for cluster in &mut clusters {
        if cluster.version.is_none() {
            cluster.version = record.cluster_version(&cluster.cluster).map(str::to_owned);
        }
        cluster.parameters = record
            .cluster_parameters(&cluster.cluster)
            .map(|(_, parameters)| parameters.clone());
    }
    let workloads: Vec<&health::ResourceStatus> = clusters
        .iter()
        .flat_map(|c| c.resources.iter())
        .filter(|r| r.is_workload())
        .collect();
    let ready = workloads.iter().filter(|r| r.is_ready()).count();
    if let Some(pending) = &record.pending {
        status.notes.push(format!(
            "revision {} is pending: an enable is running, or was interrupted or failed before every cluster had it; unless one is running, run `addonctl enable {name}` again to finish it (or `addonctl disable {name}`)",
            pending.version
        ));
    }
    status.phase = phase(Some(installed), Some(&clusters));
    status.reason = match status.phase {
        Phase::Upgrading => phase::upgrade_progress(record),
        _ => phase::failure_reason(&clusters),
    };
    status.workload_count = Some(workloads.len());
    status.ready_workload_count = Some(ready);
    status.resources = clusters;
    Ok(())
}

/// What `status -v` adds: description, available versions, dependencies and parameters
/// (`args` masked), every registry read once.
async fn details(
    detail: Detail<'_>,
    all: &BTreeMap<String, Installed>,
    not_installed: bool,
    args: Map<String, Value>,
    status: &mut Status,
) -> Result<()> {
    let name = status.name.clone();
    // Every registry is read once: the versions and the package both come from this listing.
    let listings = detail.catalog.list().await;
    let mut versions = BTreeSet::new();
    for listing in &listings {
        match &listing.addons {
            Ok(addons) => {
                for addon in addons.iter().filter(|a| a.name == name) {
                    versions.extend(addon.versions.iter().cloned());
                }
            }
            Err(e) => status.notes.push(format!(
                "registry `{}` is left out of the available versions: {e}",
                listing.registry
            )),
        }
    }
    let mut sorted: Vec<AddonVersion> = versions.iter().map(|v| AddonVersion::parse(v)).collect();
    sorted.sort();
    sorted.reverse();
    status.available_versions = sorted.iter().map(|v| v.raw().to_owned()).collect();
    let found = detail.catalog.find_listed(
        &listings,
        &name,
        status.installed_version.as_deref(),
        status.registry.as_deref(),
    );
    let Some(found) = found else {
        if not_installed {
            return Err(Error::NoSuchAddon {
                addon: name.clone(),
            });
        }
        return Ok(());
    };
    let package = crate::loader::load(found.reader.as_ref(), &found.addon)
        .await
        .map_err(crate::Error::from)?;
    status.description.clone_from(&package.metadata.description);
    for dependency in &package.metadata.dependencies {
        let installed_version = all.get(&dependency.name).map(|i| i.version.clone());
        let constraint = dependency
            .version
            .as_deref()
            .and_then(|c| Constraint::parse(c).ok());
        let satisfied = installed_version.as_deref().is_some_and(|v| {
            constraint
                .as_ref()
                .is_none_or(|c| c.matches(&AddonVersion::parse(v)))
        });
        status.dependencies.push(DependencyStatus {
            name: dependency.name.clone(),
            constraint: dependency.version.clone(),
            satisfied,
            installed: installed_version,
        });
    }
    let schema = detail
        .renderer
        .parameter_schema(&package)
        .map_err(crate::Error::from)?;
    let masked = schema.mask(&Value::Object(args));
    if let Some(properties) = schema.schema().get("properties").and_then(Value::as_object) {
        for (key, property) in properties {
            status.parameters.push(ParameterStatus {
                name: key.clone(),
                value: masked.get(key).cloned(),
                default: property.get("default").cloned().map(|d| {
                    if schema.is_secret(key) {
                        json!(crate::render::MASK)
                    } else {
                        d
                    }
                }),
                description: property
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
    }
    Ok(())
}
