//! `addonctl upgrade`: new arguments over the stored ones, the version kept unless asked; says
//! the revision it made and the parameters it changed.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use serde_json::{Map, Value};

use addonctl::diff::{ParamChange, ParamChangeKind};

use crate::cli::args::{DryRun, UpgradeArgs};
use crate::cli::commands::declare::Guarded;
use crate::cli::commands::diff::Verb;
use crate::cli::commands::enable::PlanOutput;
use crate::cli::commands::{enable_request, parameter_input, prepare_write, write_request};
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// `upgrade`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: UpgradeArgs,
) -> anyhow::Result<ExitCode> {
    let given = parameter_input(&args.parameters, None)?;
    let mut ctx = connect(global, cluster, printer, true).await?;
    prepare_write(&mut ctx, printer, &write_request!(Guarded::Upgrade, args)).await?;
    let request = addonctl::apply::UpgradeRequest {
        name: args.addon.clone(),
        latest: args.latest,
        // The reference is the installed addon's, found by its name.
        enable: enable_request!(args, String::new(), given),
    };
    let plan = match addonctl::apply::upgrade_plan(&ctx, &request).await {
        Ok(plan) => plan,
        Err(e) => {
            let installed: Vec<String> = ctx
                .state()
                .installed()
                .await
                .map(|list| list.into_keys().collect())
                .unwrap_or_default();
            return Err(super::diff::reword(e.into(), Verb::Upgrade, &installed));
        }
    };
    if let Some(dry_run) = args.dry_run {
        return match dry_run {
            DryRun::Client => {
                let shown = PlanOutput {
                    override_definitions: args.override_definitions,
                    show_secrets: args.show_secrets,
                    output: args.output,
                    offline: false,
                };
                super::enable::print_plan(&ctx, printer, &plan, &shown).await
            }
            DryRun::Server => {
                super::diff::server_dry_run_as(&ctx, printer, &plan, args.output, Verb::Upgrade)
                    .await
            }
        };
    }
    // What each addon upgraded had before: its arguments and revision.
    let mut before: BTreeMap<String, (Map<String, Value>, Option<u32>)> = BTreeMap::new();
    for step in plan
        .steps
        .iter()
        .filter(|s| s.action == addonctl::plan::Action::Upgrade)
    {
        let name = &step.rendered.name;
        let stored = ctx.state().stored_args(name).await?;
        before.insert(name.clone(), (stored, revision_of(&ctx, name).await?));
    }
    let reporter = printer;
    for note in &plan.notes {
        reporter.step(&format!("note: {note}"));
    }
    let reports = addonctl::apply::execute(
        &ctx.applier(),
        &plan,
        request.enable.override_definitions,
        &reporter,
    )
    .await?;
    if args.wait {
        addonctl::status::wait::until_enabled(ctx.state(), &args.addon, args.timeout, &reporter)
            .await?;
    }
    let mut upgraded = Vec::new();
    for report in &reports {
        let step = plan.steps.iter().find(|s| s.rendered.name == report.name);
        let (stored, previous) = before
            .get(&report.name)
            .cloned()
            .unwrap_or((Map::new(), None));
        let changes = step.map_or_else(Vec::new, |s| {
            addonctl::diff::params::diff(&stored, &s.rendered.args, &s.rendered.schema)
        });
        let lines: Vec<String> = step.map_or_else(Vec::new, |s| {
            changes
                .iter()
                .map(|c| shown(c, &stored, &s.rendered.args))
                .collect()
        });
        let revision = revision_of(&ctx, &report.name).await?;
        upgraded.push(Upgraded {
            revision,
            new_revision: revision.is_some() && revision != previous,
            changes,
            lines,
        });
    }
    let documents: Vec<Value> = reports
        .iter()
        .zip(&upgraded)
        .map(|(report, upgraded)| {
            let mut value = serde_json::to_value(report)?;
            if let Some(map) = value.as_object_mut() {
                map.insert("revision".into(), serde_json::to_value(upgraded.revision)?);
                map.insert(
                    "parameters".into(),
                    serde_json::to_value(&upgraded.changes)?,
                );
            }
            Ok(value)
        })
        .collect::<anyhow::Result<_>>()?;
    if !printer.structured(&documents, args.output)? {
        let mut stdout = printer.stdout();
        for (report, upgraded) in reports.iter().zip(&upgraded) {
            let revision = match (upgraded.revision, upgraded.new_revision) {
                (Some(n), true) => format!(", revision {n}"),
                (Some(n), false) => format!(", revision {n} (unchanged)"),
                (None, _) => String::new(),
            };
            writeln!(
                stdout,
                "addon `{}` {}{revision}: {} applied, {} deleted",
                report.name,
                report.version,
                super::counted(report.applied.len(), "object"),
                report.deleted.len()
            )?;
            for line in &upgraded.lines {
                writeln!(stdout, "  parameter {line}")?;
            }
            for deleted in &report.deleted {
                writeln!(stdout, "  deleted {deleted}")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `upgrade` says of one addon besides the apply's report.
struct Upgraded {
    /// Its revision now (`None`: its record keeps none).
    revision: Option<u32>,
    /// Whether the upgrade made that revision (else it changed nothing worth one).
    new_revision: bool,
    /// The parameters it changed.
    changes: Vec<ParamChange>,
    /// Each as `path: old → new`, secrets as `***`.
    lines: Vec<String>,
}

/// The number of `addon`'s newest revision.
async fn revision_of(ctx: &addonctl::context::Context, addon: &str) -> anyhow::Result<Option<u32>> {
    Ok(ctx
        .state()
        .record(addon)
        .await?
        .and_then(|r| r.revisions.last().map(|r| r.revision)))
}

/// One parameter change as `path: old → new`: `(unset)` for one not stored before, `(reset to
/// default)` for one no longer given, and `***` for a `secret()` value.
fn shown(change: &ParamChange, stored: &Map<String, Value>, new: &Map<String, Value>) -> String {
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

    use addonctl::diff::{ParamChange, ParamChangeKind};

    fn map(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        value.as_object().cloned().unwrap()
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
