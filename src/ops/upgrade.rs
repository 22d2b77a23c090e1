//! Upgrading an installed addon: new arguments over the stored ones, the version kept unless
//! asked; [`preview`] what it would do, or [`run`] it (checked, applied, waited for), reporting
//! per addon the revision it made and the parameters it changed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::apply::{StepReport, UpgradeRequest};
use crate::context::{Progress, Session};
use crate::diff::{ParamChange, ParamChangeKind};
use crate::plan::Action;
use crate::Result;

use super::guard::{check_write, Command, WriteGuard};
use super::preview::{of_plan, Preview, PreviewMode};

/// What to upgrade, and how.
#[derive(Debug, Clone, Default)]
pub struct UpgradeOp {
    /// The installed addon, the version and the arguments.
    pub request: UpgradeRequest,
    /// Apply even though an `Addon` resource declares the addon.
    pub override_controller: bool,
    /// Wait until the addon is enabled, this long at most (`None`: return after the apply).
    pub wait: Option<Duration>,
}

/// One addon an upgrade applied: the apply's report, the revision it is at now and the
/// parameters that changed.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Upgraded {
    /// What the apply did.
    #[serde(flatten)]
    pub report: StepReport,
    /// Its revision now (`None`: its record keeps none).
    pub revision: Option<u32>,
    /// Whether the upgrade made that revision (else it changed nothing worth one).
    #[serde(skip)]
    pub new_revision: bool,
    /// The parameters it changed.
    pub parameters: Vec<ParamChange>,
    /// Each change as `path: old → new`, a `secret()` value as `***`.
    #[serde(skip)]
    pub lines: Vec<String>,
}

/// What upgrading would do, from `mode`; nothing is written.
pub async fn preview(session: &Session, op: &UpgradeOp, mode: PreviewMode) -> Result<Preview> {
    let plan = crate::apply::upgrade_plan(session.ctx(), &op.request).await?;
    of_plan(session, &plan, mode).await
}

/// Upgrades: the checks before writing, the plan, its notes as progress, the apply, then the
/// wait if asked.
pub async fn run(session: &Session, op: &UpgradeOp) -> Result<Vec<Upgraded>> {
    let guard = WriteGuard {
        command: Command::Upgrade,
        addon: op.request.name.clone(),
        dry_run: false,
        override_controller: op.override_controller,
    };
    check_write(session, &guard).await?;
    let ctx = session.ctx();
    let progress = session.progress();
    let plan = crate::apply::upgrade_plan(ctx, &op.request).await?;
    // What each addon upgraded had before: its arguments and revision.
    let mut before: BTreeMap<String, (Map<String, Value>, Option<u32>)> = BTreeMap::new();
    for step in plan.steps.iter().filter(|s| s.action == Action::Upgrade) {
        let name = &step.rendered.name;
        let stored = ctx.state().stored_args(name).await?;
        before.insert(name.clone(), (stored, revision_of(session, name).await?));
    }
    for note in &plan.notes {
        progress.event(&Progress::Note {
            message: note.clone(),
        });
    }
    let reports = crate::apply::execute(
        &ctx.applier(),
        &plan,
        op.request.enable.override_definitions,
        progress,
    )
    .await?;
    if let Some(timeout) = op.wait {
        crate::status::wait::until_enabled(ctx.state(), &op.request.name, timeout, progress)
            .await?;
    }
    let mut upgraded = Vec::new();
    for report in reports {
        let step = plan.steps.iter().find(|s| s.rendered.name == report.name);
        let (stored, previous) = before
            .get(&report.name)
            .cloned()
            .unwrap_or((Map::new(), None));
        let parameters = step.map_or_else(Vec::new, |s| {
            crate::diff::params::diff(&stored, &s.rendered.args, &s.rendered.schema)
        });
        let lines = step.map_or_else(Vec::new, |s| {
            parameters
                .iter()
                .map(|c| shown(c, &stored, &s.rendered.args))
                .collect()
        });
        let revision = revision_of(session, &report.name).await?;
        upgraded.push(Upgraded {
            report,
            revision,
            new_revision: revision.is_some() && revision != previous,
            parameters,
            lines,
        });
    }
    Ok(upgraded)
}

/// The number of `addon`'s newest revision.
async fn revision_of(session: &Session, addon: &str) -> Result<Option<u32>> {
    Ok(session
        .ctx()
        .state()
        .record(addon)
        .await?
        .and_then(|r| r.revisions.last().map(|r| r.revision)))
}

/// One parameter change as `path: old → new`: `(unset)` for one not stored before, `(reset to
/// default)` for one no longer given, and `***` for a `secret()` value.
pub fn shown(
    change: &ParamChange,
    stored: &Map<String, Value>,
    new: &Map<String, Value>,
) -> String {
    if change.change != ParamChangeKind::SecretChanged {
        return change.to_string();
    }
    let side = |args: &Map<String, Value>, absent: &str| {
        if at(args, &change.path).is_some() {
            "***".to_owned()
        } else {
            absent.to_owned()
        }
    };
    format!(
        "{}: {} → {}",
        change.path,
        side(stored, "(unset)"),
        side(new, "(reset to default)")
    )
}

/// The value at a dotted `path` of `args`.
fn at<'a>(args: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut keys = path.split('.');
    let mut value = args.get(keys.next()?)?;
    for key in keys {
        value = value.as_object()?.get(key)?;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::diff::{ParamChange, ParamChangeKind};

    fn map(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_secret_change_shows_stars_and_a_plain_one_its_values() {
        let stored = map(json!({"auth": {"token": "old-value"}, "replicas": 1}));
        let new = map(json!({"auth": {"token": "new-value"}, "replicas": 3}));
        let secret = ParamChange {
            path: "auth.token".into(),
            change: ParamChangeKind::SecretChanged,
            from: None,
            to: None,
        };
        assert_eq!(
            super::shown(&secret, &stored, &new),
            "auth.token: *** → ***"
        );
        assert_eq!(
            super::shown(&secret, &map(json!({})), &new),
            "auth.token: (unset) → ***"
        );
        assert_eq!(
            super::shown(&secret, &stored, &map(json!({}))),
            "auth.token: *** → (reset to default)"
        );
        let plain = ParamChange {
            path: "replicas".into(),
            change: ParamChangeKind::Changed,
            from: Some(json!(1)),
            to: Some(json!(3)),
        };
        assert_eq!(super::shown(&plain, &stored, &new), "replicas: 1 → 3");
    }
}
