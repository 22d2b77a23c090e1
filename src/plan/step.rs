//! Planning one addon of a solution: its stored and given arguments, its clusters (see
//! [`super::clusters`]), then loaded and rendered — or kept as it is installed.

use std::collections::BTreeMap;

use serde_json::{json, Map};

use super::clusters::{self, Needs};
use super::sources::Sources;
use super::Inputs;
use super::{check_clusters, check_sizes, given_args, stored_clusters};
use super::{Action, EnableRequest, Kept, Result, Step};
use crate::model::AddonPackage;
use crate::render::RenderOptions;
use crate::resolve::{self, PlannedAddon};
use crate::state::Installed;
use crate::Error;

/// What one addon of a solution becomes.
pub(super) enum Planned {
    /// Applied.
    Apply(Box<Step>),
    /// Left as it is installed.
    Keep(Kept),
}

/// What every addon of one plan is planned with, and what planning gathers on the way.
pub(super) struct Planner<'a> {
    pub ctx: &'a Inputs<'a>,
    pub request: &'a EnableRequest,
    /// An `upgrade` (which merges over the stored arguments as a matter of course: no note).
    pub upgrade: bool,
    /// The name of the addon asked for.
    pub root: &'a str,
    /// The addon asked for, when it is a directory.
    pub directory: Option<&'a AddonPackage>,
    pub installed: &'a BTreeMap<String, Installed>,
    pub sources: &'a Sources,
    pub k8s_version: Option<String>,
    /// The layer of each addon of the solution.
    pub layers: BTreeMap<String, usize>,
    /// What the addons planned so far need of their dependencies' clusters.
    pub needs: Needs,
    /// Notes for the user.
    pub notes: Vec<String>,
}

impl Planner<'_> {
    /// Plans one addon; the addons that need it must have been planned before.
    pub(super) async fn plan_addon(&mut self, planned: &PlannedAddon) -> Result<Planned> {
        let name = planned.name.as_str();
        let is_root = name == self.root;
        let current = self.installed.get(name);
        let mut action = match (is_root, planned.action) {
            (true, _) if current.is_some() => Action::Upgrade,
            (_, resolve::Action::Install) => Action::Install,
            (_, resolve::Action::Upgrade) => Action::Upgrade,
            (_, resolve::Action::Keep) => Action::Keep,
        };
        // Stored arguments count for an installed addon: what is given is merged over them,
        // unless `--reset-values` starts the addon asked for from its defaults.
        let stored = if current.is_some() && !(is_root && self.request.reset_values) {
            self.ctx.store().stored_args(name).await?
        } else {
            Map::new()
        };
        if is_root && current.is_some() {
            self.notes.extend(keeping_note(
                &stored,
                self.request.reset_values,
                self.upgrade,
            ));
        }
        // The addon asked for is loaded first: its arguments are parsed against its schema.
        let root_package = match self.directory {
            Some(package) if is_root => Some(package.clone()),
            _ if is_root => Some(self.sources.load(planned).await?),
            _ => None,
        };
        let (mut args, given_clusters) = match &root_package {
            Some(package) => self.given(package, &stored, current.is_some()).await?,
            None => (Map::new(), None),
        };
        let own_clusters = if is_root {
            given_clusters.or_else(|| stored_clusters(&stored))
        } else {
            let found = clusters::widen(
                self.needs.get(name),
                current.is_some(),
                stored_clusters(&stored),
            );
            if let (true, Some(widened)) = (found.widened, &found.list) {
                self.notes.push(format!(
                    "`{name}` is widened to the clusters of the addons that need it: {}",
                    widened.join(", ")
                ));
                args.insert("clusters".into(), json!(widened));
                if action == Action::Keep {
                    action = Action::Upgrade;
                }
            }
            found.list
        };
        clusters::add_needs(
            &mut self.needs,
            &planned.depends_on,
            own_clusters.as_deref(),
        );
        if action == Action::Keep {
            return Ok(Planned::Keep(Kept {
                name: name.to_owned(),
                version: planned.version.to_string(),
                registry: planned.registry.clone(),
                installed_by: planned.installed_by,
                needed_by: planned.needed_by.clone(),
            }));
        }
        let package = match root_package {
            Some(package) => package,
            None => self.sources.load(planned).await?,
        };
        if !self.request.allow_moved_tag {
            let recorded = current
                .and_then(|c| c.record.as_ref())
                .and_then(|r| r.source.as_ref());
            check_tag_unmoved(name, recorded, package.provenance.as_ref())?;
        }
        // A new dependency goes to the clusters of the addons that need it when it deploys to
        // managed clusters at all.
        if !is_root && current.is_none() && package.metadata.deploy_to.runtime_cluster {
            if let Some(list) = &own_clusters {
                args.insert("clusters".into(), json!(list));
            }
        }
        // The parameters some clusters got over the arguments (an `Addon`'s overrides) are kept
        // as the stored arguments are, unless overrides are given or `--reset-values` is.
        let kept_overrides = match current.and_then(|c| c.record.as_ref()) {
            Some(record)
                if is_root
                    && !self.request.reset_values
                    && self.request.overrides.parameters.is_empty() =>
            {
                super::overrides::stored(record, own_clusters.as_deref())
            }
            _ => super::Overrides::default(),
        };
        if let Some(note) = overrides_note(&kept_overrides) {
            self.notes.push(note);
        }
        let options = RenderOptions {
            namespace: self.ctx.namespace.to_owned(),
            args,
            stored_args: stored,
            upgrade: current.is_some(),
            kubernetes_version: self.k8s_version.clone(),
            clusters: None,
        };
        let planned = self.render(planned, action, package, &options, &kept_overrides)?;
        if let Planned::Apply(step) = &planned {
            self.notes.extend(local_added_note(step));
        }
        Ok(planned)
    }

    /// The arguments given for the addon asked for, with their clusters checked.
    async fn given(
        &self,
        package: &AddonPackage,
        stored: &Map<String, serde_json::Value>,
        upgrading: bool,
    ) -> Result<(Map<String, serde_json::Value>, Option<Vec<String>>)> {
        let given = given_args(
            self.ctx,
            package,
            self.request,
            stored,
            upgrading,
            self.k8s_version.as_ref(),
        )?;
        // `--clusters` was checked before planning; clusters from the other input now.
        if given.clusters() != self.request.args.clusters() {
            check_clusters(self.ctx.store(), given.clusters()).await?;
        }
        Ok((given.to_map(), given.clusters().map(<[String]>::to_vec)))
    }

    /// Renders an addon to apply and checks the sizes of its objects.
    fn render(
        &self,
        planned: &PlannedAddon,
        action: Action,
        package: AddonPackage,
        options: &RenderOptions,
        kept_overrides: &super::Overrides,
    ) -> Result<Planned> {
        let variants = if planned.name == self.root && !kept_overrides.parameters.is_empty() {
            super::overrides::render_variants(self.ctx.renderer, &package, options, kept_overrides)
                .map_err(|e| match e {
                    Error::OverrideInvalid {
                        addon,
                        clusters,
                        parameter,
                        reason,
                        ..
                    } => Error::KeptOverrideInvalid {
                        addon,
                        clusters,
                        parameter,
                        reason,
                    },
                    other => other,
                })?
        } else if planned.name == self.root {
            super::overrides::render_variants(
                self.ctx.renderer,
                &package,
                options,
                &self.request.overrides,
            )?
        } else {
            Vec::new()
        };
        let rendered = self
            .ctx
            .renderer
            .render(&package, options)
            .map_err(crate::Error::from)?;
        check_sizes(&rendered)?;
        Ok(Planned::Apply(Box::new(Step {
            action,
            installed_by: planned.installed_by,
            clusters: rendered.clusters.clone(),
            depends_on: planned.depends_on.clone(),
            needed_by: planned.needed_by.clone(),
            layer: self.layers.get(&planned.name).copied().unwrap_or_default(),
            history: crate::state::revisions::History {
                max: self.request.history.max,
                description: (planned.name == self.root)
                    .then(|| self.request.history.description.clone())
                    .flatten(),
            },
            rendered,
            package,
            variants,
        })))
    }
}

/// The note that `local` (the control plane) is among an addon's clusters though its `clusters`
/// did not name it: KubeVela's rule for an addon whose metadata sets `deployTo.runtimeCluster`
/// without `disableControlPlane`.
fn local_added_note(step: &super::Step) -> Option<String> {
    use crate::model::wire::LOCAL_CLUSTER;
    let deploy_to = &step.package.metadata.deploy_to;
    if !deploy_to.runtime_cluster || deploy_to.disable_control_plane {
        return None;
    }
    let given = step.clusters.as_ref()?;
    if given.iter().any(|c| c == LOCAL_CLUSTER) {
        return None;
    }
    let targets_local = step
        .rendered
        .application
        .pointer("/spec/policies")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(serde_json::Value::as_str) == Some("topology"))
        .filter_map(|p| p.pointer("/properties/clusters"))
        .filter_map(serde_json::Value::as_array)
        .flatten()
        .any(|c| c.as_str() == Some(LOCAL_CLUSTER));
    targets_local.then(|| {
        format!(
            "`local` (the control plane) is added to the clusters of `{}` ({}): its metadata sets `deployTo.runtimeCluster` without `disableControlPlane`, so it goes to the control plane too, as KubeVela deploys it; an addon whose metadata sets `deployTo.disableControlPlane: true` goes to the named clusters only",
            step.rendered.name,
            given.join(", ")
        )
    })
}

/// The note saying what an installed addon asked for starts from: its stored arguments (their
/// keys, never their values) or, with `--reset-values`, its defaults.
fn keeping_note(
    stored: &Map<String, serde_json::Value>,
    reset: bool,
    upgrade: bool,
) -> Option<String> {
    if reset {
        return Some(
            "--reset-values: starting from the defaults (stored arguments, clusters and per-cluster overrides dropped)"
                .to_owned(),
        );
    }
    if stored.is_empty() || upgrade {
        return None;
    }
    let mut keys: Vec<&str> = stored.keys().map(String::as_str).collect();
    keys.sort_unstable();
    Some(format!(
        "keeping stored arguments ({}); --reset-values to start from the defaults",
        keys.join(", ")
    ))
}

/// The note that an `enable` or `upgrade` keeps the parameters some clusters got over the
/// arguments (names the clusters and the parameters, never their values).
fn overrides_note(kept: &super::Overrides) -> Option<String> {
    if kept.parameters.is_empty() {
        return None;
    }
    let mut clusters: Vec<&str> = kept
        .groups
        .iter()
        .flat_map(|g| g.clusters.iter().map(String::as_str))
        .collect();
    clusters.sort_unstable();
    let mut keys: Vec<&str> = kept
        .parameters
        .iter()
        .flat_map(|p| p.keys().map(String::as_str))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    Some(format!(
        "keeping the parameters ({}) cluster{} {} got over the arguments (the `Addon`'s overrides); --reset-values to drop them",
        keys.join(", "),
        if clusters.len() == 1 { "" } else { "s" },
        clusters.join(", ")
    ))
}

/// Refuses a version whose tag names another manifest now than when it was installed.
fn check_tag_unmoved(
    addon: &str,
    recorded: Option<&crate::model::provenance::Provenance>,
    now: Option<&crate::model::provenance::Provenance>,
) -> Result<()> {
    let (Some(recorded), Some(now)) = (recorded, now) else {
        return Ok(());
    };
    match (&recorded.tag, &now.tag) {
        (Some(before), Some(tag))
            if before == tag
                && recorded.reference == now.reference
                && recorded.version == now.version
                && recorded.manifest_digest != now.manifest_digest =>
        {
            Err(crate::Error::TagMoved(Box::new(crate::error::MovedTag {
                addon: addon.to_owned(),
                reference: now.reference.clone(),
                tag: tag.clone(),
                version: now.version.clone(),
                recorded: recorded.manifest_digest.clone(),
                now: now.manifest_digest.clone(),
            })))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_tag_naming_another_manifest_is_refused_and_a_new_version_is_not() {
        use crate::model::provenance::Provenance;
        let at = |version: &str, digest: &str| Provenance {
            reference: "oci://127.0.0.1:5000/a/minimal".into(),
            tag: Some(version.replace('+', "_")),
            version: version.into(),
            manifest_digest: digest.into(),
            chart_digest: "sha256:c".into(),
            verification: crate::model::provenance::Verification::default(),
        };
        let err = super::check_tag_unmoved(
            "minimal",
            Some(&at("1.0.0", "sha256:a")),
            Some(&at("1.0.0", "sha256:b")),
        )
        .unwrap_err();
        assert_eq!(err.kind(), crate::model::ErrorKind::Conflict);
        assert!(
            err.to_string()
                .starts_with("the tag moved: `oci://127.0.0.1:5000/a/minimal:1.0.0`"),
            "{err}"
        );
        for (recorded, now) in [
            (Some(at("1.0.0", "sha256:a")), Some(at("1.0.0", "sha256:a"))),
            (Some(at("1.0.0", "sha256:a")), Some(at("1.1.0", "sha256:b"))),
            (None, Some(at("1.0.0", "sha256:b"))),
            (Some(at("1.0.0", "sha256:a")), None),
        ] {
            assert!(super::check_tag_unmoved("minimal", recorded.as_ref(), now.as_ref()).is_ok());
        }
    }

    use super::keeping_note;

    #[test]
    fn the_note_names_the_kept_keys_sorted_and_never_their_values() {
        let stored = json!({"token": "s3cr3t", "clusters": ["m1"], "mode": "slow"});
        let stored = stored.as_object().cloned().unwrap_or_default();
        let note = keeping_note(&stored, false, false).unwrap_or_default();
        assert_eq!(
            note,
            "keeping stored arguments (clusters, mode, token); --reset-values to start from the defaults"
        );
        assert!(!note.contains("s3cr3t"));
        // `upgrade` merges as a matter of course; nothing stored, nothing to say.
        assert_eq!(keeping_note(&stored, false, true), None);
        assert_eq!(keeping_note(&serde_json::Map::new(), false, false), None);
        let reset = keeping_note(&stored, true, true).unwrap_or_default();
        assert!(
            reset.starts_with("--reset-values: starting from the defaults"),
            "{reset}"
        );
    }
}
