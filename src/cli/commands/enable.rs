//! `addonctl enable`: plan, show or confirm, apply, report.

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write};
use std::process::ExitCode;

use serde_json::{json, Value};

use addonctl::context::Context;
use addonctl::render::output::{format_objects, Format};

use crate::cli::args::{DryRun, EnableArgs, ReportFormat};
use crate::cli::commands::declare::Guarded;
use crate::cli::commands::{check_write, enable_request, parameter_input, set_lock, write_request};
use crate::cli::printer::Printer;
use crate::cli::settings::{connect_or_offline, ClusterSettings, GlobalSettings};

/// `enable`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: EnableArgs,
) -> anyhow::Result<ExitCode> {
    if args.declarative.declarative {
        return super::declare::enable(global, cluster, printer, args).await;
    }
    let given = parameter_input(&args.parameters, args.clusters.as_deref())?;
    let client_dry_run = args.dry_run == Some(DryRun::Client);
    let (mut ctx, offline) = connect_or_offline(global, cluster, printer, client_dry_run).await?;
    // The plan's reads of the state serve the checks until the first write (the lock).
    let _reuse = ctx.cluster.reuse_lists();
    let write = write_request!(Guarded::Enable, args);
    set_lock(&mut ctx, &write);
    let request = enable_request!(args, args.addon.clone(), given);
    // The checks before writing and the plan's reads at once: a refusal of the checks is said
    // as soon as it comes, and before any error of the plan.
    let planner = ctx.planner();
    let planned = addonctl::apply::checked_first(check_write(&ctx, printer, &write), async {
        Ok(addonctl::plan::plan(&planner, &request, false).await?)
    })
    .await;
    let mut plan = match planned {
        Ok(plan) => plan,
        Err(e) => return Err(super::explain_not_found(&ctx.catalog, e).await),
    };
    plan.dependency_timeout =
        (!args.dependency_timeout.is_zero()).then_some(args.dependency_timeout);
    let untargeted = untargeted_clusters(&ctx, &plan).await;
    let shown = PlanOutput {
        override_definitions: args.override_definitions,
        show_secrets: args.show_secrets,
        output: args.output,
        offline,
    };
    match args.dry_run {
        Some(DryRun::Client) => return print_plan(&ctx, printer, &plan, &shown).await,
        Some(DryRun::Server) => {
            return super::diff::server_dry_run(&ctx, printer, &plan, args.output).await;
        }
        None => {}
    }
    let reporter = printer;
    for note in &plan.notes {
        reporter.step(&format!("note: {note}"));
    }
    for flag in plan
        .steps
        .iter()
        .filter(|s| s.action != addonctl::plan::Action::Keep)
        .flat_map(|s| addonctl::apply::review::step_flags(s, &ctx.namespace))
    {
        reporter.step(&format!("flagged: {flag}"));
    }
    if !args.adopt && std::io::stdin().is_terminal() {
        plan.adopt = confirm_adoptions(&ctx, printer, &plan).await?;
    }
    for kept in &plan.kept {
        reporter.step(&format!(
            "keeping `{}` {} (installed; needed by {})",
            kept.name,
            kept.version,
            kept.needed_by.join(", ")
        ));
    }
    let mut reports =
        addonctl::apply::execute(&ctx.applier(), &plan, args.override_definitions, &reporter)
            .await?;
    for report in &mut reports {
        if let Some(clusters) = untargeted.get(&report.name) {
            report.untargeted_clusters.clone_from(clusters);
        }
    }
    tracing::info!(
        requests = ctx.cluster.counters().requests(),
        writes = ctx.cluster.counters().writes(),
        "API calls made by enable"
    );
    let root = plan
        .steps
        .last()
        .map(|s| s.rendered.name.clone())
        .unwrap_or_default();
    if args.wait {
        addonctl::status::wait::until_enabled(ctx.state(), &root, args.timeout, &reporter).await?;
    }
    if !printer.structured(&reports, args.output)? {
        print_reports(printer, &reports)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Per addon of the plan, the clusters of its `clusters` argument its rendered topology does
/// not reach (by name, or by label against the joined clusters' labels), each warned about (the
/// template does not use the argument, or not for them).
async fn untargeted_clusters(
    ctx: &Context,
    plan: &addonctl::plan::Plan,
) -> BTreeMap<String, Vec<String>> {
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
        let missed = addonctl::status::phase::untargeted_clusters(
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

/// One line per addon applied (with what was deleted, notes and the clusters the direct engine
/// deployed to), then the addon's notes.
fn print_reports(printer: Printer, reports: &[addonctl::apply::StepReport]) -> anyhow::Result<()> {
    let mut stdout = printer.stdout();
    for report in reports {
        let verb = match report.action {
            addonctl::plan::Action::Install => "installed",
            addonctl::plan::Action::Upgrade if report.unchanged() => "unchanged",
            addonctl::plan::Action::Upgrade => "updated",
            addonctl::plan::Action::Keep => "kept (already installed)",
        };
        let changed = match (report.action, report.changed.len()) {
            (addonctl::plan::Action::Upgrade, 0) => ", none changed".to_owned(),
            (addonctl::plan::Action::Upgrade, n) => format!(" ({n} changed)"),
            _ => String::new(),
        };
        writeln!(
            stdout,
            "addon `{}` {} {verb}: {} applied{changed}",
            report.name,
            report.version,
            super::counted(report.applied.len(), "control-plane object")
        )?;
        for deleted in &report.deleted {
            writeln!(stdout, "  deleted {deleted}")?;
        }
        for note in &report.notes {
            writeln!(stdout, "  note: {note}")?;
        }
        if report.engine == addonctl::context::EngineChoice::Direct {
            let names: Vec<String> = report
                .clusters
                .iter()
                .map(|c| format!("`{}`", c.cluster))
                .collect();
            writeln!(
                stdout,
                "  deployed by addonctl (direct engine) to {} cluster{}: {}",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                names.join(", ")
            )?;
        }
    }
    if let Some(notes) = reports.last().and_then(|r| r.addon_notes.as_ref()) {
        writeln!(stdout, "\n{}", notes.trim_end())?;
    }
    Ok(())
}

/// On a terminal: the objects the plan would adopt, and the person's y/N. Without any, `false`
/// (nothing to consent to); declined: an error naming `--adopt`.
async fn confirm_adoptions(
    ctx: &Context,
    printer: Printer,
    plan: &addonctl::plan::Plan,
) -> anyhow::Result<bool> {
    let adoptions: Vec<String> = addonctl::apply::review::review(&ctx.applier(), plan)
        .await?
        .into_iter()
        .filter(|f| f.kind == addonctl::plan::protect::FlagKind::Adopts)
        .map(|f| format!("addon `{}`: {}", f.addon, f.object))
        .collect();
    if adoptions.is_empty() {
        return Ok(false);
    }
    let mut lines = vec![
        "these objects exist and addonctl did not create them; enabling adopts them (overwrites their fields; `disable` gives them back):".to_owned(),
    ];
    lines.extend(adoptions.iter().map(|adoption| format!("  {adoption}")));
    if printer.confirm(&lines, "adopt them? [y/N] ")? {
        Ok(true)
    } else {
        Err(crate::cli::diagnostics::user(
            "not adopted: nothing was changed (pass `--adopt` to adopt them without asking)",
        ))
    }
}

/// How `--dry-run` (client) shows a plan.
pub(crate) struct PlanOutput {
    /// `--override-definitions`: conflicts are not listed.
    pub override_definitions: bool,
    /// `--show-secrets`.
    pub show_secrets: bool,
    /// `-o`.
    pub output: ReportFormat,
    /// Planned against an empty cluster (no control plane reachable).
    pub offline: bool,
}

/// The plan as a table, its notes, conflicts and flags, then every object (`-o json|yaml`: one
/// document).
pub(crate) async fn print_plan(
    ctx: &Context,
    printer: Printer,
    plan: &addonctl::plan::Plan,
    args: &PlanOutput,
) -> anyhow::Result<ExitCode> {
    let conflicts = if args.override_definitions {
        Vec::new()
    } else {
        addonctl::plan::definition_conflicts(&ctx.cluster, &ctx.namespace, plan).await?
    };
    let steps: Vec<Value> = plan
        .steps
        .iter()
        .map(|s| {
            let objects = if args.show_secrets {
                s.rendered.objects()
            } else {
                s.rendered.masked_objects()
            };
            json!({
                "name": s.rendered.name,
                "version": s.rendered.version,
                "registry": s.rendered.registry,
                "action": s.action,
                "installedBy": s.installed_by,
                "layer": s.layer,
                "clusters": s.clusters,
                "dependsOn": s.depends_on,
                "neededBy": s.needed_by,
                "objects": objects,
            })
        })
        .collect();
    let flags = addonctl::apply::review::review(&ctx.applier(), plan).await?;
    let document = json!({
        "plan": steps,
        "kept": plan.kept,
        "notes": plan.notes,
        "conflicts": conflicts,
        "flags": flags,
    });
    if printer.structured(&document, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = printer.stdout();
    print_plan_table(&mut stdout, plan)?;
    for note in &plan.notes {
        writeln!(stdout, "note: {note}")?;
    }
    for conflict in &conflicts {
        writeln!(stdout, "conflict: {conflict}")?;
    }
    for flag in &flags {
        let kind = json!(flag.kind)
            .as_str()
            .map(str::to_owned)
            .unwrap_or_default();
        writeln!(stdout, "flagged ({kind}): {flag}")?;
    }
    for s in &plan.steps {
        let objects = if args.show_secrets {
            s.rendered.objects()
        } else {
            s.rendered.masked_objects()
        };
        write!(stdout, "{}", format_objects(&objects, Format::Yaml)?)?;
    }
    if args.offline {
        writeln!(
            stdout,
            "# dry run, planned offline against an empty cluster: nothing was changed"
        )?;
    } else {
        writeln!(stdout, "# dry run: nothing was changed")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan as a table: one row per kept addon, then per step.
fn print_plan_table(stdout: &mut impl Write, plan: &addonctl::plan::Plan) -> anyhow::Result<()> {
    writeln!(
        stdout,
        "{:<4} {:<5} {:<24} {:<12} {:<10} {:<9} {:<10} {:<20} NEEDED BY",
        "STEP", "LAYER", "ADDON", "VERSION", "REGISTRY", "ACTION", "REASON", "CLUSTERS"
    )?;
    let rows = plan.steps.iter().map(|s| {
        (
            Some(s.layer),
            s.rendered.name.as_str(),
            s.rendered.version.as_str(),
            s.rendered.registry.as_str(),
            json!(s.action)
                .as_str()
                .map(str::to_owned)
                .unwrap_or_default(),
            json!(s.installed_by)
                .as_str()
                .map(str::to_owned)
                .unwrap_or_default(),
            s.clusters
                .as_ref()
                .map_or_else(|| "(topology)".to_owned(), |c| c.join(",")),
            &s.needed_by,
        )
    });
    let kept = plan.kept.iter().map(|k| {
        (
            None,
            k.name.as_str(),
            k.version.as_str(),
            k.registry.as_str(),
            "keep".to_owned(),
            json!(k.installed_by)
                .as_str()
                .map(str::to_owned)
                .unwrap_or_default(),
            "-".to_owned(),
            &k.needed_by,
        )
    });
    for (i, (layer, name, version, registry, action, reason, clusters, needed_by)) in
        kept.chain(rows).enumerate()
    {
        writeln!(
            stdout,
            "{:<4} {:<5} {name:<24} {version:<12} {registry:<10} {action:<9} {reason:<10} {clusters:<20} {}",
            i + 1,
            layer.map_or_else(|| "-".to_owned(), |l| l.to_string()),
            if needed_by.is_empty() {
                "-".to_owned()
            } else {
                needed_by.join(",")
            }
        )?;
    }
    Ok(())
}
