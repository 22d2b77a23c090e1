//! Planning an `enable` or `upgrade`: the addons to apply, in order, rendered, with their
//! system requirements checked and definition conflicts found before anything is applied.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::model::{AddonPackage, AddonVersion, Constraint};
use crate::render::normalize;
use crate::render::{RenderOptions, Rendered};

use super::record::{self, InstalledBy, ObjectRef};
use super::{installed, known_clusters, stored_args, Context, Error, Installed, Result};

/// What to enable.
#[derive(Debug, Clone, Default)]
pub struct EnableRequest {
    /// `name`, `registry/name` or a directory.
    pub reference: String,
    /// A version; `None` = the newest.
    pub version: Option<String>,
    /// Arguments given now.
    pub args: Map<String, Value>,
    /// Skip the `system` requirement checks.
    pub skip_version_check: bool,
    /// Take over definitions owned by another addon or by nobody.
    pub override_definitions: bool,
}

/// What happens to one addon of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Not installed: install it.
    Install,
    /// Installed at another version or with other arguments: apply again.
    Upgrade,
    /// Installed and satisfying: leave it.
    Keep,
}

/// One addon of a plan.
#[derive(Debug, Clone)]
pub struct Step {
    /// What happens.
    pub action: Action,
    /// Who asked for it.
    pub installed_by: InstalledBy,
    /// The rendered addon (for `keep`, what is installed is left alone).
    pub rendered: Rendered,
    /// Its package.
    pub package: AddonPackage,
}

/// The addons to apply, dependencies first.
#[derive(Debug, Clone)]
pub struct Plan {
    /// In apply order.
    pub steps: Vec<Step>,
    /// Notes for the user (e.g. definitions that will be skipped).
    pub notes: Vec<String>,
}

pub(super) async fn kubernetes_version(ctx: &Context) -> Option<String> {
    ctx.cluster.kubernetes_version().await.ok()
}

async fn check_clusters(ctx: &Context, args: &Map<String, Value>) -> Result<()> {
    let Some(Value::Array(wanted)) = args.get("clusters") else {
        return Ok(());
    };
    let known = known_clusters(ctx).await?;
    let unknown: Vec<String> = wanted
        .iter()
        .filter_map(Value::as_str)
        .filter(|c| !known.iter().any(|k| k == c))
        .map(|c| format!("`{c}`"))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(Error::Refused(format!(
            "unknown cluster{} {}; known clusters: {} (join one with `addonctl cluster join` or `vela cluster join`)",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", "),
            known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        )))
    }
}

/// Builds the plan for enabling (or, with `upgrade`, upgrading) an addon.
pub async fn plan(ctx: &Context, request: &EnableRequest, upgrade: bool) -> Result<Plan> {
    check_clusters(ctx, &request.args).await?;
    let installed = installed(ctx).await?;
    let k8s_version = kubernetes_version(ctx).await;
    let (root_package, root_found_registry) = if std::path::Path::new(&request.reference).is_dir() {
        let located = crate::loader::locate(&request.reference, request.version.as_deref()).await?;
        let package = crate::loader::load(located.reader.as_ref(), &located.addon)
            .await
            .map_err(crate::Error::from)?;
        (package, None)
    } else {
        let found = ctx
            .catalog
            .find(&request.reference, request.version.as_deref(), None, None)
            .await?;
        let registry = found.reader.registry().to_owned();
        (ctx.catalog.load(&found).await?, Some(registry))
    };
    let mut steps: Vec<Step> = Vec::new();
    let mut notes = Vec::new();
    let mut visiting: Vec<String> = Vec::new();
    let mut done: BTreeSet<String> = BTreeSet::new();
    let prefer = root_found_registry.unwrap_or_else(|| root_package.registry.clone());
    resolve(
        ctx,
        &installed,
        root_package,
        request,
        upgrade,
        &prefer,
        k8s_version.as_deref(),
        InstalledBy::User,
        &mut visiting,
        &mut done,
        &mut steps,
        &mut notes,
    )
    .await?;
    Ok(Plan { steps, notes })
}

#[expect(
    clippy::too_many_arguments,
    reason = "a recursive walk carrying its accumulators"
)]
async fn resolve(
    ctx: &Context,
    installed: &BTreeMap<String, Installed>,
    package: AddonPackage,
    request: &EnableRequest,
    upgrade: bool,
    prefer: &str,
    k8s_version: Option<&str>,
    by: InstalledBy,
    visiting: &mut Vec<String>,
    done: &mut BTreeSet<String>,
    steps: &mut Vec<Step>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let name = package.name().to_owned();
    visiting.push(name.clone());
    if !request.skip_version_check {
        check_system(&package, k8s_version)?;
    }
    for dependency in &package.metadata.dependencies {
        if let Some(position) = visiting.iter().position(|v| v == &dependency.name) {
            let mut cycle: Vec<String> = visiting[position..]
                .iter()
                .map(|n| format!("`{n}`"))
                .collect();
            cycle.push(format!("`{}`", dependency.name));
            return Err(Error::Refused(format!(
                "dependency cycle: {}",
                cycle.join(" → ")
            )));
        }
        if done.contains(&dependency.name) {
            continue;
        }
        let constraint = dependency
            .version
            .as_deref()
            .map(Constraint::parse)
            .transpose()
            .map_err(|e| {
                Error::Refused(format!(
                    "addon `{name}`: dependency `{}`: {e}",
                    dependency.name
                ))
            })?;
        if let Some(current) = installed.get(&dependency.name) {
            let satisfied = constraint
                .as_ref()
                .is_none_or(|c| c.matches(&AddonVersion::parse(&current.version)));
            if satisfied {
                done.insert(dependency.name.clone());
                continue;
            }
            return Err(Error::Refused(format!(
                "addon `{name}` needs `{} {}`, but version `{}` is installed; upgrade it first (`addonctl upgrade {} --version …`)",
                dependency.name,
                dependency.version.as_deref().unwrap_or("*"),
                current.version,
                dependency.name
            )));
        }
        let found = ctx
            .catalog
            .find(&dependency.name, None, constraint.as_ref(), Some(prefer))
            .await
            .map_err(|e| {
                Error::Refused(format!(
                    "addon `{name}` depends on `{}`: {e}",
                    dependency.name
                ))
            })?;
        let dep_package = ctx.catalog.load(&found).await?;
        Box::pin(resolve(
            ctx,
            installed,
            dep_package,
            &EnableRequest {
                reference: dependency.name.clone(),
                version: None,
                args: Map::new(),
                ..request.clone()
            },
            false,
            prefer,
            k8s_version,
            InstalledBy::Dependency,
            visiting,
            done,
            steps,
            notes,
        ))
        .await?;
    }
    visiting.pop();
    done.insert(name.clone());

    let current = installed.get(&name);
    // Stored arguments count on upgrade only: an enable stores exactly the arguments it is
    // given (none deletes the Secret), as KubeVela does.
    let stored = if upgrade && current.is_some() {
        stored_args(ctx, &name).await?
    } else {
        Map::new()
    };
    let options = RenderOptions {
        namespace: ctx.namespace.clone(),
        args: request.args.clone(),
        stored_args: stored,
        upgrade: current.is_some(),
        kubernetes_version: k8s_version.map(str::to_owned),
        clusters: None,
    };
    let rendered = ctx
        .renderer
        .render(&package, &options)
        .map_err(crate::Error::from)?;
    let action = match current {
        None => Action::Install,
        Some(c) if by == InstalledBy::Dependency && c.record.is_some() => Action::Keep,
        Some(_) => Action::Upgrade,
    };
    steps.push(Step {
        action,
        installed_by: current.and_then(|c| c.record.as_ref()).map_or(by, |r| {
            if by == InstalledBy::User {
                InstalledBy::User
            } else {
                r.installed_by
            }
        }),
        rendered,
        package,
    });
    let _ = notes;
    Ok(())
}

fn check_system(package: &AddonPackage, k8s_version: Option<&str>) -> Result<()> {
    let check = |what: &str, constraint: &Option<String>, actual: Option<&str>| -> Result<()> {
        let (Some(constraint), Some(actual)) = (constraint, actual) else {
            return Ok(());
        };
        let parsed = Constraint::parse(constraint).map_err(|e| {
            Error::Refused(format!("addon `{}`: `system.{what}`: {e}", package.name()))
        })?;
        let version = AddonVersion::parse(actual);
        let comparable = version.semver().map(|v| {
            let mut v = v.clone();
            v.pre = semver::Prerelease::EMPTY;
            AddonVersion::parse(&v.to_string())
        });
        if comparable.is_some_and(|v| parsed.matches(&v)) {
            Ok(())
        } else {
            Err(Error::Refused(format!(
                "addon `{}` requires {what} `{constraint}`, but it is `{actual}`; pass `--skip-version-check` to enable it anyway",
                package.name()
            )))
        }
    };
    check(
        "kubernetes",
        &package.metadata.system.kubernetes,
        k8s_version,
    )?;
    check(
        "addonctl",
        &package.metadata.system.addonctl,
        Some(crate::VERSION),
    )?;
    Ok(())
}

/// A definition of a plan that already exists and is not the addon's own.
struct Clash {
    /// The addon of the plan that renders it.
    addon: String,
    reference: ObjectRef,
    /// The addon (or other owner) it belongs to; `None` = nobody.
    owner: Option<String>,
}

impl std::fmt::Display for Clash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.owner {
            Some(other) => write!(
                f,
                "{} of addon `{}` is owned by addon `{other}`",
                self.reference, self.addon
            ),
            None => write!(
                f,
                "{} of addon `{}` already exists and belongs to no addon",
                self.reference, self.addon
            ),
        }
    }
}

async fn clashes(ctx: &Context, plan: &Plan) -> Result<Vec<Clash>> {
    let mut clashes = Vec::new();
    for step in plan.steps.iter().filter(|s| s.action != Action::Keep) {
        let ours_app = normalize::application_name(&step.rendered.name);
        let ours_record = record::record_name(&step.rendered.name);
        for definition in &step.rendered.definitions {
            let Some(reference) = ObjectRef::of(definition) else {
                continue;
            };
            let Some(existing) = ctx
                .cluster
                .get(&reference.gvk(), Some(&ctx.namespace), &reference.name)
                .await?
            else {
                continue;
            };
            let owners = existing
                .metadata
                .owner_references
                .clone()
                .unwrap_or_default();
            let owner = owners
                .iter()
                .find(|o| o.controller == Some(true))
                .or(owners.first());
            let owner = match owner {
                Some(o) if o.name == ours_app || o.name == ours_record => continue,
                Some(o) => Some(
                    o.name
                        .strip_prefix("addon-record-")
                        .or_else(|| o.name.strip_prefix("addon-"))
                        .unwrap_or(&o.name)
                        .to_owned(),
                ),
                None => None,
            };
            clashes.push(Clash {
                addon: step.rendered.name.clone(),
                reference,
                owner,
            });
        }
    }
    Ok(clashes)
}

/// Definitions of the plan that already exist and belong to another addon or to nobody.
pub async fn definition_conflicts(ctx: &Context, plan: &Plan) -> Result<Vec<String>> {
    Ok(clashes(ctx, plan)
        .await?
        .iter()
        .map(ToString::to_string)
        .collect())
}

/// Takes over the definitions of the plan that other addons own: their owner references are
/// removed first, since the server refuses an object with two controller references (and
/// server-side apply keeps the references another field manager wrote).
pub(super) async fn release_definitions(ctx: &Context, plan: &Plan) -> Result<()> {
    for clash in clashes(ctx, plan).await? {
        if clash.owner.is_some() {
            ctx.cluster
                .merge_patch(
                    &clash.reference.gvk(),
                    Some(&ctx.namespace),
                    &clash.reference.name,
                    &json!({"metadata": {"ownerReferences": null}}),
                )
                .await?;
        }
    }
    Ok(())
}
