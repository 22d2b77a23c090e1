//! [`Preview`]: what a plan would do, before anything is written. `enable`, `upgrade` and
//! `rollback` dry runs, `diff` and a server's plans all return it: the addons planned (with their
//! objects as rendered, secrets masked unless asked), the installed dependencies kept, notes,
//! definition conflicts, the objects flagged for attention, the clusters an addon's `clusters`
//! argument names that its template does not reach, and — when the API servers were asked
//! ([`PreviewMode::Server`]) — per addon and cluster every object created, changed, deleted,
//! given back or kept, with diffs and the change of the arguments.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::context::Session;
use crate::diff::Diff;
use crate::plan::protect::Flag;
use crate::plan::{Action, Kept, Plan};
use crate::Result;

/// How a preview is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewMode {
    /// From the plan alone (and reads of the control plane): the objects as rendered.
    Client {
        /// Show secret values in the objects (else masked).
        show_secrets: bool,
        /// Definitions owned by others would be taken over: no conflicts listed.
        override_definitions: bool,
    },
    /// The API servers dry-run every object: what each would change.
    Server,
}

/// One addon of a preview's plan.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedAddon {
    /// The addon.
    pub name: String,
    /// The version planned.
    pub version: String,
    /// Its registry.
    pub registry: String,
    /// What happens to it.
    pub action: Action,
    /// Who asked for it.
    pub installed_by: crate::model::metadata::InstalledBy,
    /// Its layer (0 depends on nothing in the plan).
    pub layer: usize,
    /// The clusters its `clusters` argument names (`None`: where its topology says).
    pub clusters: Option<Vec<String>>,
    /// The addons of the plan it depends on.
    pub depends_on: Vec<String>,
    /// The addons of the plan that depend on it.
    pub needed_by: Vec<String>,
    /// Its objects as rendered (client previews; secrets masked unless asked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<Value>,
}

/// What a plan would do (see the module documentation).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// The addons planned, in apply order.
    pub plan: Vec<PlannedAddon>,
    /// Installed dependencies left as they are.
    pub kept: Vec<Kept>,
    /// Notes of the plan.
    pub notes: Vec<String>,
    /// Definitions that exist and belong to another addon or to nobody (client previews).
    pub conflicts: Vec<String>,
    /// Objects that need attention (privileges, other namespaces, webhooks, CRDs, adoptions).
    pub flags: Vec<Flag>,
    /// Per addon, the clusters its `clusters` argument names that its template does not reach.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub untargeted: BTreeMap<String, Vec<String>>,
    /// What the API servers said each object would become ([`PreviewMode::Server`]).
    #[serde(flatten)]
    pub diff: Option<Diff>,
    /// Whether the plan was made against an empty cluster (no control plane could be asked).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub offline: bool,
}

/// The preview of `plan` in `mode`.
pub async fn of_plan(session: &Session, plan: &Plan, mode: PreviewMode) -> Result<Preview> {
    let ctx = session.ctx();
    let untargeted = untargeted_clusters(session, plan).await;
    let mut preview = Preview {
        plan: Vec::new(),
        kept: plan.kept.clone(),
        notes: plan.notes.clone(),
        conflicts: Vec::new(),
        flags: Vec::new(),
        untargeted,
        diff: None,
        offline: false,
    };
    let show_secrets = match mode {
        PreviewMode::Client {
            show_secrets,
            override_definitions,
        } => {
            if !override_definitions {
                preview.conflicts =
                    crate::plan::definition_conflicts(&ctx.cluster, &ctx.namespace, plan).await?;
            }
            preview.flags = crate::apply::review::review(&ctx.applier(), plan).await?;
            Some(show_secrets)
        }
        PreviewMode::Server => {
            let diff = crate::diff::diff(ctx, plan).await?;
            tracing::info!(
                requests = ctx.cluster.counters().requests(),
                writes = ctx.cluster.counters().writes(),
                "API calls made by the dry run"
            );
            preview.diff = Some(diff);
            None
        }
    };
    preview.plan = plan
        .steps
        .iter()
        .map(|s| PlannedAddon {
            name: s.rendered.name.clone(),
            version: s.rendered.version.clone(),
            registry: s.rendered.registry.clone(),
            action: s.action,
            installed_by: s.installed_by,
            layer: s.layer,
            clusters: s.clusters.clone(),
            depends_on: s.depends_on.clone(),
            needed_by: s.needed_by.clone(),
            objects: match show_secrets {
                Some(true) => s.rendered.objects(),
                Some(false) => s.rendered.masked_objects(),
                None => Vec::new(),
            },
        })
        .collect();
    Ok(preview)
}

/// Per addon of the plan, the clusters of its `clusters` argument its rendered topology does
/// not reach (by name, or by label against the joined clusters' labels), each warned about (the
/// template does not use the argument, or not for them).
pub async fn untargeted_clusters(session: &Session, plan: &Plan) -> BTreeMap<String, Vec<String>> {
    let ctx = session.ctx();
    let mut out = BTreeMap::new();
    let mut joined = None;
    for step in &plan.steps {
        if step.clusters.is_none() {
            continue;
        }
        // Read once, only for an addon given clusters; unreadable (no right to list them), a
        // label selector may reach any of them.
        if joined.is_none() {
            joined = Some(match ctx.state().joined().await {
                Ok(joined) => Some(joined.into_iter().map(|(info, _)| info).collect::<Vec<_>>()),
                Err(e) => {
                    tracing::debug!("the joined clusters cannot be read: {e}");
                    None
                }
            });
        }
        let missed = crate::status::phase::untargeted_clusters(
            step.clusters.as_deref(),
            &step.rendered.application,
            joined.as_ref().and_then(Option::as_deref),
        );
        if missed.is_empty() {
            continue;
        }
        let names: Vec<String> = missed.iter().map(|c| format!("`{c}`")).collect();
        tracing::warn!(
            "addon `{}` does not reach cluster{} {} named in its `clusters` argument: its template does not use that argument for them (`addonctl render {} clusters=…` shows its topology)",
            step.rendered.name,
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            step.rendered.name
        );
        out.insert(step.rendered.name.clone(), missed);
    }
    out
}
