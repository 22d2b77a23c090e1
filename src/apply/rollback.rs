//! `rollback`: an installed addon applied again as one of its revisions was — that revision's
//! package (kept in its revision Secret, so the registry need not have the version any more)
//! with its arguments (secret ones from the revision Secret) and the parameters its clusters
//! got over them (per-cluster overrides, each on the clusters that had it) — through the same
//! plan → apply path as `upgrade`, so objects the old revision does not render are pruned. It
//! adds a revision "rollback to N".

use std::sync::Arc;

use super::{execute, StepReport};
use crate::context::{Context, Reporter};
use crate::model::provenance::{Mode, Provenance};
use crate::model::AddonVersion;
use crate::plan::{plan, EnableRequest};
use crate::source::local::LOCAL_REGISTRY;
use crate::source::{AddonRef, AddonSummary, AsyncReader, FileEntry};
use crate::state::record::revision::Revision;
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
    if kept.files.is_some() {
        check_kept_verification(name, &target)?;
    }
    // The kept package, as a registry named as the revision's holding that one addon.
    let revision_package = kept.files.map(|files| {
        Arc::new(KeptPackage {
            registry: target.registry.clone(),
            name: name.clone(),
            version: target.version.clone(),
            files,
            source: target.source.clone(),
        }) as crate::source::Reader
    });
    let reference = if target.registry.is_empty() || target.registry == LOCAL_REGISTRY {
        name.clone()
    } else {
        format!("{}/{name}", target.registry)
    };
    // Read again from the registry, a revision pinned by digest is read by that digest: the
    // tag may name another manifest by now.
    let version = match (&revision_package, &target.source) {
        (None, Some(source)) => source.manifest_digest.clone(),
        _ => target.version.clone(),
    };
    if revision_package.is_none() {
        reporter.event(&crate::context::Progress::Note {
            message: format!(
                "revision {} keeps no package; reading `{name}` {version} from registry `{}`",
                target.revision, target.registry
            ),
        });
    }
    let enable_request = EnableRequest {
        reference,
        version: Some(version),
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
        // A pinned revision is read by its digest (or from its kept package), never by a tag.
        allow_moved_tag: target.source.is_some(),
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
    /// Where the revision's package came from and how it was verified, as recorded then.
    source: Option<Provenance>,
}

/// Refuses to apply a kept package that was not verified when its registry's policy now
/// enforces verification: the kept bytes were checked, if at all, by the policy of the day,
/// and a rollback never installs what an `enable` would refuse.
fn check_kept_verification(name: &str, target: &Revision) -> Result<()> {
    if target.registry.is_empty() || target.registry == LOCAL_REGISTRY {
        return Ok(());
    }
    if crate::source::oci::verify::mode_of(&target.registry, name)? != Some(Mode::Enforce) {
        return Ok(());
    }
    let how = match &target.source {
        Some(source) if source.verification.verified => return Ok(()),
        Some(source) => format!(
            "it was installed from `{}@{}` unverified (policy `{}` then)",
            source.reference, source.manifest_digest, source.verification.policy
        ),
        None => "no verification was recorded for it".to_owned(),
    };
    Err(crate::source::Error::Unverified {
        registry: target.registry.clone(),
        message: format!(
            "revision {} of addon `{name}` ({}) is kept in the cluster, but {how}, and the registry's policy now enforces verification; enable a verified version instead (`addonctl enable {}/{name}@<digest>`), or change the policy",
            target.revision, target.version, target.registry
        ),
    }
    .into())
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
        Ok(FileEntry::listing(
            self.files.iter().map(|(path, bytes)| (path, bytes)),
        ))
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

    async fn provenance(&self, addon: &AddonRef) -> crate::source::Result<Option<Provenance>> {
        self.check(addon)?;
        Ok(self.source.clone())
    }
}
