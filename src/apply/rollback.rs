//! `rollback`: an installed addon applied again as one of its revisions was — that revision's
//! package (kept in its revision Secret, so the registry need not have the version any more)
//! with its arguments (secret ones from the revision Secret) and the parameters its clusters
//! got over them (per-cluster overrides, each on the clusters that had it) — through the same
//! plan → apply path as `upgrade`, so objects the old revision does not render are pruned. It
//! adds a revision "rollback to N".

use std::sync::Arc;

use super::{execute, StepReport};
use crate::context::{Context, Reporter};
use crate::model::AddonVersion;
use crate::plan::{plan, EnableRequest};
use crate::source::local::LOCAL_REGISTRY;
use crate::source::{AddonRef, AddonSummary, AsyncReader, FileEntry};
use crate::state::revisions::{self, History, RevisionError};
use crate::Result;

/// What to roll back.
#[derive(Debug, Clone, Default)]
pub struct RollbackRequest {
    /// The installed addon.
    pub name: String,
    /// The revision to go back to (`None`: the one before the deployed one).
    pub revision: Option<u32>,
    /// Revisions to keep (`None`: the default).
    pub history_max: Option<usize>,
    /// Take over definitions owned by another addon or by nobody.
    pub override_definitions: bool,
    /// Adopt existing objects addonctl did not create.
    pub adopt: bool,
    /// Skip the `system` requirement checks.
    pub skip_version_check: bool,
    /// Plan even when APIs the addons use are served by nobody yet.
    pub skip_api_check: bool,
}

/// What a rollback did: the revision it went back to, and the reports of the addons applied.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackReport {
    /// The revision rolled back to.
    pub revision: u32,
    /// Its version.
    pub version: String,
    /// Whether its package came from its revision Secret (else from its registry).
    pub package_kept: bool,
    /// The addons applied.
    pub steps: Vec<StepReport>,
}

/// Rolls an installed addon back to a revision (see the module documentation).
pub async fn rollback(
    ctx: &Context,
    request: &RollbackRequest,
    reporter: &dyn Reporter,
) -> Result<RollbackReport> {
    let name = &request.name;
    let Some(record) = ctx.state().record(name).await? else {
        return Err(RevisionError::NoHistory {
            addon: name.clone(),
        }
        .into());
    };
    let target = revisions::target(&record, request.revision)?.clone();
    let kept = revisions::kept(&ctx.cluster, &ctx.namespace, name, &target).await?;
    let args = revisions::restore(&target.args, &kept.secrets);
    // The kept package, as a registry named as the revision's holding that one addon.
    let revision_package = kept.files.map(|files| {
        Arc::new(KeptPackage {
            registry: target.registry.clone(),
            name: name.clone(),
            version: target.version.clone(),
            files,
        }) as crate::source::Reader
    });
    let reference = if target.registry.is_empty() || target.registry == LOCAL_REGISTRY {
        name.clone()
    } else {
        format!("{}/{name}", target.registry)
    };
    if revision_package.is_none() {
        reporter.event(&crate::context::Progress::Note {
            message: format!(
                "revision {} keeps no package; reading `{name}` {} from registry `{}`",
                target.revision, target.version, target.registry
            ),
        });
    }
    let enable_request = EnableRequest {
        reference,
        version: Some(target.version.clone()),
        args: args.into(),
        skip_version_check: request.skip_version_check,
        override_definitions: request.override_definitions,
        adopt: request.adopt,
        skip_api_check: request.skip_api_check,
        reset_values: true,
        history: History {
            max: request.history_max,
            description: Some(format!("rollback to {}", target.revision)),
        },
        revision_package,
        overrides: super::overrides::from_revision(&target.overrides),
        allow_moved_tag: false,
    };
    let plan = plan(&ctx.planner(), &enable_request, true).await?;
    // The revision's arguments replace the stored ones by the rollback's own choice: the plan's
    // note on `--reset-values` would name a flag the user never gave.
    for note in plan
        .notes
        .iter()
        .filter(|n| !n.starts_with("--reset-values"))
    {
        reporter.event(&crate::context::Progress::Note {
            message: note.clone(),
        });
    }
    let steps = execute(
        &ctx.applier(),
        &plan,
        request.override_definitions,
        reporter,
    )
    .await?;
    Ok(RollbackReport {
        revision: target.revision,
        version: target.version,
        package_kept: target.package_kept,
        steps,
    })
}

/// A kept package as a registry of one addon version, named as the revision's registry.
#[derive(Debug)]
struct KeptPackage {
    registry: String,
    name: String,
    version: String,
    files: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Display for KeptPackage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the package kept for `{}` {}", self.name, self.version)
    }
}

impl KeptPackage {
    fn check(&self, addon: &AddonRef) -> crate::source::Result<()> {
        let version_matches = addon
            .version
            .as_deref()
            .is_none_or(|v| AddonVersion::parse(v).same_as(&self.version));
        if addon.name == self.name && version_matches {
            Ok(())
        } else {
            Err(crate::source::Error::NotFound {
                registry: self.registry.clone(),
                what: format!("addon `{}` in {self}", addon.name),
            })
        }
    }
}

#[async_trait::async_trait]
impl AsyncReader for KeptPackage {
    fn registry(&self) -> &str {
        &self.registry
    }

    async fn list_addons(&self) -> crate::source::Result<Vec<AddonSummary>> {
        Ok(vec![AddonSummary {
            name: self.name.clone(),
            versions: vec![self.version.clone()],
            description: None,
            tags: Vec::new(),
        }])
    }

    async fn list_files(&self, addon: &AddonRef) -> crate::source::Result<Vec<FileEntry>> {
        self.check(addon)?;
        Ok(self
            .files
            .iter()
            .map(|(path, bytes)| FileEntry {
                path: path.clone(),
                size: bytes.len() as u64,
            })
            .collect())
    }

    async fn read_file(&self, addon: &AddonRef, path: &str) -> crate::source::Result<Vec<u8>> {
        self.check(addon)?;
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, bytes)| bytes.clone())
            .ok_or_else(|| crate::source::Error::NotFound {
                registry: self.registry.clone(),
                what: format!("`{path}` in {self}"),
            })
    }
}
