//! `addonctl diff` and `enable`/`upgrade --dry-run=server`: what applying a plan would change,
//! from the API servers' dry runs. Exit codes as `kubectl diff`: 0 no differences, 1
//! differences, 2 the user's error (an object the server would reject included).

use std::io::Write;
use std::process::ExitCode;

use std::sync::Arc;

use addonctl::context::Session;
use addonctl::diff::{Change, Diff, ObjectChange};
use addonctl::ops::{Preview, PreviewMode};

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
    let session = Session::new(ctx, None, Arc::new(printer));
    let op = addonctl::ops::enable::EnableOp {
        request: addonctl::plan::EnableRequest {
            reference: args.addon.clone(),
            version: args.version.clone(),
            args: given,
            skip_version_check: args.skip_version_check,
            skip_api_check: args.skip_api_check,
            reset_values: args.reset_values,
            ..addonctl::plan::EnableRequest::default()
        },
        ..addonctl::ops::enable::EnableOp::default()
    };
    let mut preview = match addonctl::ops::enable::preview(&session, &op, PreviewMode::Server).await
    {
        Ok(preview) => preview,
        Err(e) => {
            // Diffing an installed addon is diffing its upgrade: the hints say so.
            let installed = installed(&session).await;
            let name = args.addon.rsplit('/').next().unwrap_or(&args.addon);
            let verb = if installed.iter().any(|i| i == name) {
                Verb::Upgrade
            } else {
                Verb::Enable
            };
            let error = super::explain_not_found(&session.ctx().catalog, e.into()).await;
            return Err(reword(error, verb, &installed));
        }
    };
    let verb = Verb::of(&preview);
    let diff = noted(printer, &mut preview, verb);
    if !printer.structured(&preview, args.output)? {
        print_diffs(printer, &diff)?;
    }
    outcome(&diff, diff.has_differences())
}

/// The addons installed (none when they cannot be read), for the wording of hints.
pub(crate) async fn installed(session: &Session) -> Vec<String> {
    session
        .ctx()
        .state()
        .installed()
        .await
        .map(|list| list.into_keys().collect())
        .unwrap_or_default()
}

/// What a plan would do to the addon asked for, as its hints word it: a plan for an addon that
/// is installed upgrades it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    /// `enable`: the addon is not installed.
    Enable,
    /// `upgrade`: the addon is installed.
    Upgrade,
}

impl Verb {
    /// The verb of a preview's root (the addon asked for, the last step).
    pub(crate) fn of(preview: &Preview) -> Verb {
        match preview.plan.last().map(|s| s.action) {
            Some(addonctl::plan::Action::Install) | None => Verb::Enable,
            Some(_) => Verb::Upgrade,
        }
    }

    /// `text` (worded by the library for an enable) worded for this verb.
    fn word(self, text: &str) -> String {
        match self {
            Verb::Enable => text.to_owned(),
            Verb::Upgrade => [
                ("to enable it anyway", "to upgrade it anyway"),
                ("to enable anyway", "to upgrade anyway"),
                ("(enabling anyway:", "(upgrading anyway:"),
                ("`enable` refuses it", "`upgrade` refuses it"),
                ("cannot enable `", "cannot upgrade `"),
            ]
            .iter()
            .fold(text.to_owned(), |text, (from, to)| text.replace(from, to)),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Verb::Enable => "enable",
            Verb::Upgrade => "upgrade",
        }
    }
}

/// A planning error whose hints ("pass `--skip-version-check` to enable it anyway") the
/// library words for an enable, worded for `verb`; a requirement of an addon that is not
/// installed (a new dependency) keeps `enable`. Other errors, and errors with causes, are
/// returned as they are.
pub(crate) fn reword(error: anyhow::Error, verb: Verb, installed: &[String]) -> anyhow::Error {
    use addonctl::resolve::ResolveError;
    if error.chain().count() != 1 {
        return error;
    }
    let Some(known) = error.downcast_ref::<addonctl::Error>() else {
        return error;
    };
    let verb = match known {
        addonctl::Error::Resolve(ResolveError::System { addon, .. }) => {
            if installed.contains(addon) {
                verb
            } else {
                Verb::Enable
            }
        }
        addonctl::Error::Resolve(ResolveError::NoSolution { .. })
        | addonctl::Error::MissingApis { .. } => verb,
        _ => return error,
    };
    let text = verb.word(&known.to_string());
    if text == known.to_string() {
        return error;
    }
    anyhow::Error::new(crate::cli::diagnostics::UserError {
        message: text,
        kind: known.kind(),
    })
}

/// A server preview's notes and messages worded for `verb`, its notes said on stderr (the
/// plan's, then each addon's); its diff.
fn noted(printer: Printer, preview: &mut Preview, verb: Verb) -> Diff {
    for note in &mut preview.notes {
        *note = verb.word(note);
        printer.note(note);
    }
    let diff = preview
        .diff
        .get_or_insert_with(|| Diff { addons: Vec::new() });
    for addon in &mut diff.addons {
        for note in &mut addon.notes {
            *note = verb.word(note);
            printer.note(note);
        }
        for object in &mut addon.objects {
            if let Some(message) = &mut object.message {
                *message = verb.word(message);
            }
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

/// `--dry-run=server` of the command `verb` names: the preview of the API servers' dry runs, one
/// line per object.
pub(crate) fn server_dry_run(
    printer: Printer,
    mut preview: Preview,
    output: ReportFormat,
    verb: Verb,
) -> anyhow::Result<ExitCode> {
    let diff = noted(printer, &mut preview, verb);
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
