//! `list`: every addon of the registries with its installed phase, from O(1) list calls.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{phase_of_application, Phase};
use crate::context::Context;
use crate::source::catalog;
use crate::state::Installed;
use crate::Result;

/// The phase `list` shows, without reading the clusters: KubeVela's for an Application,
/// `enabling` while a record has a pending revision, else `enabled`.
fn listed_phase(installed: &Installed) -> Phase {
    match &installed.application {
        Some(app) => phase_of_application(app),
        None if installed
            .record
            .as_ref()
            .is_some_and(|r| r.pending.is_some()) =>
        {
            Phase::Enabling
        }
        None => Phase::Enabled,
    }
}

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
    /// Its phase, with the installed version when installed.
    pub status: String,
}

/// `list`: every addon of the registries (optionally one registry), with installed status from
/// O(1) list calls. Registries that fail are returned as warnings.
pub async fn list(ctx: &Context, registry: Option<&str>) -> Result<(Vec<ListRow>, Vec<String>)> {
    let installed = ctx.state().installed().await?;
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    let mut seen = BTreeSet::new();
    // Only the registry asked for is read; when it fails, the command fails.
    for listing in ctx.catalog.list_only(registry).await {
        match listing.addons {
            Err(e) if registry.is_some() => {
                return Err(catalog::registry_failure(&listing.registry, e).into())
            }
            Ok(addons) => {
                for addon in addons {
                    if !seen.insert(addon.name.clone()) {
                        continue;
                    }
                    let status = match installed.get(&addon.name) {
                        Some(i) => format!("{} ({})", listed_phase(i), i.version),
                        None => Phase::Disabled.to_string(),
                    };
                    rows.push(ListRow {
                        name: addon.name,
                        registry: listing.registry.clone(),
                        description: addon.description.unwrap_or_default(),
                        available_versions: addon.versions,
                        status,
                    });
                }
            }
            Err(e) => warnings.push(format!(
                "registry `{}` could not be listed: {e}",
                listing.registry
            )),
        }
    }
    for (name, i) in &installed {
        if !seen.contains(name) && registry.is_none_or(|r| r == i.registry) {
            rows.push(ListRow {
                name: name.clone(),
                registry: i.registry.clone(),
                description: String::new(),
                available_versions: Vec::new(),
                status: format!("{} ({})", listed_phase(i), i.version),
            });
        }
    }
    Ok((rows, warnings))
}
