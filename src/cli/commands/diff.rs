//! `addonctl diff` and `enable`/`upgrade --dry-run=server`: what applying a plan would change,
//! from the API servers' dry runs. Exit codes as `kubectl diff`: 0 no differences, 1
//! differences, 2 the user's error (an object the server would reject included).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use addonctl::context::Session;
use addonctl::ops::diff::{Change, Diff, DiffRequest, ObjectChange, ParamChange, WordedError};
use addonctl::ops::Preview;

use crate::cli::args::{DiffArgs, ReportFormat};
use crate::cli::commands::parameter_input;
use crate::cli::diagnostics::{user, UserError, FAILURE};
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// What a plan does to the addon asked for, as its texts say it (the library words them).
pub(crate) use addonctl::ops::Verb;

/// `diff`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: DiffArgs,
) -> anyhow::Result<ExitCode> {
    let given = parameter_input(&args.parameters, args.clusters.as_deref())?;
    let ctx = connect(global, cluster, printer, true).await?;
    let session = Session::new(ctx, None, Arc::new(printer));
    let request = DiffRequest {
        reference: args.addon.clone(),
        version: args.version.clone(),
        args: given,
        skip_version_check: args.skip_version_check,
        skip_api_check: args.skip_api_check,
        reset_values: args.reset_values,
    };
    let mut preview = match addonctl::ops::diff::diff(&session, &request).await {
        Ok(preview) => preview,
        Err(WordedError { error, text: None }) => {
            return Err(super::explain_not_found(&session.ctx().catalog, error.into()).await)
        }
        Err(e) => return Err(worded(e)),
    };
    let diff = noted(printer, &mut preview);
    if !printer.structured(&preview, args.output)? {
        print_diffs(printer, &diff)?;
    }
    outcome(&diff, diff.has_differences())
}

/// A plan's error as the library said it for its command: the library's error as it is, or
/// its text for the command (with the error's kind).
pub(crate) fn worded(error: WordedError) -> anyhow::Error {
    match error.text {
        None => error.error.into(),
        Some(message) => anyhow::Error::new(UserError {
            message,
            kind: error.error.kind(),
        }),
    }
}

/// A server preview's notes said on stderr (the plan's, then each addon's); its diff.
fn noted(printer: Printer, preview: &mut Preview) -> Diff {
    for note in &preview.notes {
        printer.note(note);
    }
    let diff = preview
        .diff
        .get_or_insert_with(|| Diff { addons: Vec::new() });
    for addon in &diff.addons {
        for note in &addon.notes {
            printer.note(note);
        }
    }
    diff.clone()
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
            writeln!(stdout, "{} unchanged", super::counted(unchanged, "object"))?;
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
fn override_line(change: &ParamChange) -> String {
    use addonctl::ops::diff::ParamChangeKind;
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

/// `--dry-run=server` of the command `verb` names: the preview of the API servers' dry runs, one
/// line per object.
pub(crate) fn server_dry_run(
    printer: Printer,
    mut preview: Preview,
    output: ReportFormat,
    verb: Verb,
) -> anyhow::Result<ExitCode> {
    addonctl::ops::diff::word(&mut preview, verb);
    let diff = noted(printer, &mut preview);
    if !printer.structured(&preview, output)? {
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
            "{} and addonctl did not create {} (listed above): the {} would refuse {}; pass `--adopt` to take {} over; nothing was changed",
            if conflicts == 1 {
                "1 object exists".to_owned()
            } else {
                format!("{conflicts} objects exist")
            },
            if conflicts == 1 { "it" } else { "them" },
            verb.name(),
            if conflicts == 1 { "it" } else { "them" },
            if conflicts == 1 { "it" } else { "them" },
        )));
    }
    outcome(&diff, false)
}
