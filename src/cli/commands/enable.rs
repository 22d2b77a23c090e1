//! `addonctl enable`: the flags into an [`addonctl::ops::enable::EnableOp`], the preview or the
//! run, the y/N on adoptions, the report.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;

use addonctl::context::Session;
use addonctl::ops::enable::EnableOp;
use addonctl::ops::{Preview, PreviewMode};
use addonctl::render::output::{format_objects, Format};

use crate::cli::args::{DryRun, EnableArgs, ReportFormat};
use crate::cli::commands::parameter_input;
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
    ctx.lock = addonctl::ops::guard::lock_options(
        &format!("enable {}", args.addon),
        args.lock.force_unlock,
    );
    let session = Session::new(ctx, None, Arc::new(printer));
    let op = EnableOp {
        request: args
            .plan
            .request(args.addon.clone(), args.version.clone(), given),
        override_controller: args.controller.override_controller,
        dependency_timeout: (!args.dependency_timeout.is_zero()).then_some(args.dependency_timeout),
        wait: args.wait.then_some(args.timeout),
    };
    if let Some(dry_run) = args.dry_run {
        let mode = preview_mode(dry_run, &args.plan, args.show_secrets);
        let mut preview = match addonctl::ops::enable::preview(&session, &op, mode).await {
            Ok(preview) => preview,
            Err(e) => return Err(super::explain_not_found(&session.ctx().catalog, e.into()).await),
        };
        preview.offline = offline;
        return show_preview(
            printer,
            preview,
            mode,
            args.output,
            addonctl::ops::Verb::Enable,
        );
    }
    let consent = crate::cli::consent::Asking::unless(false, printer);
    let reports = match Box::pin(addonctl::ops::enable::run(&session, &op, &consent)).await {
        Ok(reports) => reports,
        Err(e) => return Err(super::explain_not_found(&session.ctx().catalog, e.into()).await),
    };
    if !printer.structured(&reports, args.output)? {
        print_reports(printer, &reports)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The preview a `--dry-run` mode asks for.
pub(crate) fn preview_mode(
    dry_run: DryRun,
    plan: &crate::cli::args::PlanFlags,
    show_secrets: bool,
) -> PreviewMode {
    match dry_run {
        DryRun::Client => PreviewMode::Client {
            show_secrets,
            override_definitions: plan.override_definitions,
        },
        DryRun::Server => PreviewMode::Server,
    }
}

/// A `--dry-run`'s preview, as the mode prints it (the server's words for the command `verb`
/// names).
pub(crate) fn show_preview(
    printer: Printer,
    preview: Preview,
    mode: PreviewMode,
    output: ReportFormat,
    verb: addonctl::ops::Verb,
) -> anyhow::Result<ExitCode> {
    match mode {
        PreviewMode::Client { .. } => print_plan(printer, &preview, output),
        PreviewMode::Server => super::diff::server_dry_run(printer, preview, output, verb),
    }
}

/// One line per addon applied (with what was deleted, notes and the clusters the direct engine
/// deployed to), then the addon's notes.
fn print_reports(printer: Printer, reports: &[addonctl::ops::StepReport]) -> anyhow::Result<()> {
    let mut stdout = printer.stdout();
    for report in reports {
        let verb = match report.action {
            addonctl::ops::Action::Install => "installed",
            addonctl::ops::Action::Upgrade if report.unchanged() => "unchanged",
            addonctl::ops::Action::Upgrade => "updated",
            addonctl::ops::Action::Keep => "kept (already installed)",
        };
        let changed = match (report.action, report.changed.len()) {
            (addonctl::ops::Action::Upgrade, 0) => ", none changed".to_owned(),
            (addonctl::ops::Action::Upgrade, n) => format!(" ({n} changed)"),
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

/// The plan as a table, its notes, conflicts and flags, then every object (`-o json|yaml`: the
/// preview as one document).
pub(crate) fn print_plan(
    printer: Printer,
    preview: &Preview,
    output: ReportFormat,
) -> anyhow::Result<ExitCode> {
    if printer.structured(preview, output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = printer.stdout();
    print_plan_table(&mut stdout, preview)?;
    for note in &preview.notes {
        writeln!(stdout, "note: {note}")?;
    }
    for conflict in &preview.conflicts {
        writeln!(stdout, "conflict: {conflict}")?;
    }
    for flag in &preview.flags {
        let kind = json!(flag.kind)
            .as_str()
            .map(str::to_owned)
            .unwrap_or_default();
        writeln!(stdout, "flagged ({kind}): {flag}")?;
    }
    for addon in &preview.plan {
        write!(stdout, "{}", format_objects(&addon.objects, Format::Yaml)?)?;
    }
    if preview.offline {
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
fn print_plan_table(stdout: &mut impl Write, plan: &Preview) -> anyhow::Result<()> {
    writeln!(
        stdout,
        "{:<4} {:<5} {:<24} {:<12} {:<10} {:<9} {:<10} {:<20} NEEDED BY",
        "STEP", "LAYER", "ADDON", "VERSION", "REGISTRY", "ACTION", "REASON", "CLUSTERS"
    )?;
    let rows = plan.plan.iter().map(|s| {
        (
            Some(s.layer),
            s.name.as_str(),
            s.version.as_str(),
            s.registry.as_str(),
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
