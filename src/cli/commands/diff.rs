//! `addonctl diff` and `enable`/`upgrade --dry-run=server`: what applying a plan would change,
//! from the API servers' dry runs. Exit codes as `kubectl diff`: 0 no differences, 1
//! differences, 2 the user's error (an object the server would reject included).

use std::io::Write;
use std::process::ExitCode;

use addonctl::context::Context;
use addonctl::diff::{Change, Diff, ObjectChange};
use addonctl::plan::Plan;

use crate::cli::args::{DiffArgs, ReportFormat};
use crate::cli::commands::parameter_input;
use crate::cli::diagnostics::{user, FAILURE};
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// `diff`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: DiffArgs,
) -> anyhow::Result<ExitCode> {
    let given = parameter_input(&args.parameters, args.clusters.as_deref())?;
    let ctx = connect(global, cluster, printer, true).await?;
    let request = addonctl::plan::EnableRequest {
        reference: args.addon.clone(),
        version: args.version.clone(),
        args: given,
        skip_version_check: args.skip_version_check,
        skip_api_check: args.skip_api_check,
        reset_values: args.reset_values,
        ..addonctl::plan::EnableRequest::default()
    };
    let plan = match addonctl::plan::plan(&ctx.planner(), &request, false).await {
        Ok(plan) => plan,
        Err(e) => return Err(super::explain_not_found(&ctx.catalog, e.into()).await),
    };
    let diff = compute(&ctx, printer, &plan).await?;
    if !printer.structured(&diff, args.output)? {
        print_diffs(printer, &diff)?;
    }
    outcome(&diff, diff.has_differences())
}

/// The diff of a plan (its notes on stderr first), with the requests it made logged.
pub(crate) async fn compute(ctx: &Context, printer: Printer, plan: &Plan) -> anyhow::Result<Diff> {
    for note in &plan.notes {
        printer.note(note);
    }
    let diff = addonctl::diff::diff(ctx, plan).await?;
    tracing::info!(
        requests = ctx.cluster.counters().requests(),
        writes = ctx.cluster.counters().writes(),
        "API calls made by the dry run"
    );
    for addon in &diff.addons {
        for note in &addon.notes {
            printer.note(note);
        }
    }
    Ok(diff)
}

/// The exit code: the user's error when the server would reject an object, a failure when a
/// cluster could not be compared, else 1 with `differences`, 0 without.
pub(crate) fn outcome(diff: &Diff, differences: bool) -> anyhow::Result<ExitCode> {
    let rejected = diff.rejections().count();
    if rejected > 0 {
        return Err(user(format!(
            "the API server would reject {rejected} object{} (listed above); nothing was changed",
            if rejected == 1 { "" } else { "s" }
        )));
    }
    if diff.incomplete() {
        let failed: Vec<&String> = diff.addons.iter().flat_map(|a| &a.failed).collect();
        for failure in &failed {
            tracing::error!("not compared: {failure}");
        }
        return Ok(ExitCode::from(FAILURE));
    }
    Ok(if differences {
        ExitCode::from(FAILURE)
    } else {
        ExitCode::SUCCESS
    })
}

fn verb(change: Change) -> &'static str {
    match change {
        Change::Create => "created",
        Change::Change => "changed",
        Change::Unchanged => "unchanged",
        Change::Delete => "deleted",
        Change::GiveBack => "given back",
        Change::Keep => "kept",
        Change::Skip => "skipped",
        Change::Reject => "rejected",
        Change::Conflict => "conflict (needs --adopt)",
    }
}

fn line(object: &ObjectChange) -> String {
    let mut text = format!("{} {object}", verb(object.change));
    if let Some(message) = &object.message {
        text.push_str(": ");
        text.push_str(message);
    }
    text
}

/// `diff`'s text: per addon, the parameter changes, then per cluster every object that would
/// change with its unified diff; unchanged objects are counted, not listed.
fn print_diffs(printer: Printer, diff: &Diff) -> anyhow::Result<()> {
    let mut stdout = printer.stdout();
    for addon in &diff.addons {
        let from = addon
            .installed_version
            .as_deref()
            .unwrap_or("not installed");
        writeln!(
            stdout,
            "addon `{}`: {from} → {} (engine {})",
            addon.name,
            addon.version,
            serde_json::to_value(addon.engine)?
                .as_str()
                .unwrap_or_default()
        )?;
        if !addon.parameters.is_empty() {
            writeln!(stdout, "parameters:")?;
            for change in &addon.parameters {
                writeln!(stdout, "  {change}")?;
            }
        }
        for cluster in &addon.cluster_parameters {
            writeln!(
                stdout,
                "parameters cluster `{}` gets over the arguments:",
                cluster.cluster
            )?;
            for change in &cluster.changes {
                writeln!(stdout, "  {}", override_line(change))?;
            }
        }
        let unchanged = addon
            .objects
            .iter()
            .filter(|o| o.change == Change::Unchanged)
            .count();
        for object in addon
            .objects
            .iter()
            .filter(|o| o.change != Change::Unchanged)
        {
            writeln!(stdout, "{}", line(object))?;
            if let Some(text) = &object.diff {
                write!(stdout, "{text}")?;
            }
        }
        if unchanged > 0 {
            writeln!(stdout, "{unchanged} objects unchanged")?;
        }
        for failure in &addon.failed {
            writeln!(stdout, "not compared: {failure}")?;
        }
    }
    if !diff.has_differences() {
        writeln!(stdout, "no differences")?;
    }
    Ok(())
}

/// One change of the parameters a cluster gets over the arguments: "not overridden" where
/// the arguments' value applies.
fn override_line(change: &addonctl::diff::ParamChange) -> String {
    use addonctl::diff::ParamChangeKind;
    let show =
        |v: &Option<serde_json::Value>| v.as_ref().map_or_else(String::new, ToString::to_string);
    match change.change {
        ParamChangeKind::Added => {
            format!("{}: (not overridden) → {}", change.path, show(&change.to))
        }
        ParamChangeKind::ResetToDefault => format!(
            "{}: {} → (not overridden: the arguments' value)",
            change.path,
            show(&change.from)
        ),
        ParamChangeKind::Changed | ParamChangeKind::SecretChanged => change.to_string(),
    }
}

/// `--dry-run=server`: the plan dry-run by the API servers, one line per object.
pub(crate) async fn server_dry_run(
    ctx: &Context,
    printer: Printer,
    plan: &Plan,
    output: ReportFormat,
) -> anyhow::Result<ExitCode> {
    let diff = compute(ctx, printer, plan).await?;
    if !printer.structured(&diff, output)? {
        let mut stdout = printer.stdout();
        for addon in &diff.addons {
            writeln!(stdout, "addon `{}` {}:", addon.name, addon.version)?;
            for change in &addon.parameters {
                writeln!(stdout, "  parameter {change}")?;
            }
            for object in &addon.objects {
                writeln!(stdout, "  {}", line(object))?;
            }
            for failure in &addon.failed {
                writeln!(stdout, "  not compared: {failure}")?;
            }
        }
        writeln!(
            stdout,
            "# dry run (server): every object was checked by the API servers; nothing was changed"
        )?;
    }
    let conflicts = diff.conflicts().count();
    if conflicts > 0 && diff.rejections().next().is_none() {
        return Err(user(format!(
            "{conflicts} object{} exist and addonctl did not create them (listed above): the enable would refuse them; pass `--adopt` to take them over; nothing was changed",
            if conflicts == 1 { "" } else { "s" }
        )));
    }
    outcome(&diff, false)
}
