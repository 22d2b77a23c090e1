//! `addonctl rollout run`: the one-shot staged rollout (the library's [`addonctl::ops::rollout`]).
//! `rollout status|pause|resume`: the controller's rollout of an `Addon` resource
//! ([`addonctl::controller::control`]).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use addonctl::context::Session;
use addonctl::ops::rollout::{Rollout, RunReport, RunRequest};

use addonctl::controller::control::{self, RolloutReport};

use crate::cli::args::{RolloutAddonArgs, RolloutCommand, RolloutRunArgs};
use crate::cli::commands::lock_options;
use crate::cli::diagnostics::user;
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// The largest stages file read.
const MAX_STAGES_FILE_BYTES: u64 = 1024 * 1024;

/// `rollout run`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: RolloutRunArgs,
) -> anyhow::Result<ExitCode> {
    let rollout = read_stages(&args)?;
    let poll_interval = args.poll_interval;
    let mut ctx = connect(global, cluster, printer, true).await?;
    ctx.lock = lock_options(
        &format!("rollout run {}", args.addon),
        args.lock.force_unlock,
    );
    let session = Session::new(ctx, None, Arc::new(printer));
    let request = RunRequest {
        reference: args.addon.clone(),
        version: args.version.clone(),
        values_files: args.parameters.values.clone(),
        pairs: args.parameters.args.clone(),
        set_files: args.parameters.set_file.clone(),
        rollout,
        skip_version_check: args.skip_version_check,
        adopt: args.adopt,
        poll_interval,
    };
    let report = addonctl::ops::rollout::run(&session, &request)
        .await
        .map_err(|e| match e {
            // The library's own errors as they are (their kind, their hints).
            addonctl::ops::rollout::Error::Library(e) => anyhow::Error::from(*e),
            e if e.is_user_error() => user(e.to_string()),
            e => anyhow::Error::new(e),
        })?;
    if !printer.structured(&report, args.output)? {
        print_report(printer, &report)?;
    }
    Ok(if report.succeeded() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The stages file, checked.
fn read_stages(args: &RolloutRunArgs) -> anyhow::Result<Rollout> {
    let path = &args.stages;
    let shown = path.display();
    let size = fs_err::metadata(path)
        .map_err(|e| user(format!("cannot read the stages file: {e}")))?
        .len();
    if size > MAX_STAGES_FILE_BYTES {
        return Err(user(format!(
            "the stages file `{shown}` is larger than {MAX_STAGES_FILE_BYTES} bytes"
        )));
    }
    let text = fs_err::read_to_string(path)
        .map_err(|e| user(format!("cannot read the stages file: {e}")))?;
    let (value, _) = addonctl::yaml::parse_single(&text)
        .map_err(|e| user(format!("the stages file `{shown}` is not valid YAML: {e}")))?;
    let rollout: Rollout = serde_json::from_value(value).map_err(|e| {
        user(format!(
            "the stages file `{shown}` is not a rollout (`stages`, `progressDeadlineSeconds`): {e}"
        ))
    })?;
    rollout
        .validate()
        .map_err(|e| user(format!("the stages file `{shown}`: {e}")))?;
    Ok(rollout)
}

/// One failed cluster of a rollout, as every report lists it.
fn write_failure(
    out: &mut impl Write,
    cluster: &str,
    stage: &str,
    reason: &str,
) -> std::io::Result<()> {
    writeln!(out, "  cluster `{cluster}` (stage `{stage}`): {reason}")
}

fn print_report(printer: Printer, report: &RunReport) -> anyhow::Result<()> {
    let mut stdout = printer.stdout();
    let state = &report.state;
    if report.succeeded() {
        writeln!(
            stdout,
            "rollout of `{}` {} finished: {}, {}",
            report.addon,
            state.revision,
            super::counted(report.plan.stages.len(), "stage"),
            super::counted(state.done.len(), "cluster")
        )?;
    } else {
        writeln!(
            stdout,
            "rollout of `{}` {} stopped: {}",
            report.addon,
            state.revision,
            state.message.as_deref().unwrap_or("a gate failed")
        )?;
    }
    for f in &state.failures {
        write_failure(&mut stdout, &f.cluster, &f.stage, &f.reason)?;
    }
    if !report.untouched.is_empty() {
        writeln!(
            stdout,
            "  untouched: {}",
            report
                .untouched
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    }
    if !report.plan.unselected.is_empty() {
        writeln!(
            stdout,
            "  selected by no stage (not touched): {}",
            report
                .plan
                .unselected
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    }
    Ok(())
}

/// `rollout status|pause|resume`.
pub async fn control(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    command: RolloutCommand,
) -> anyhow::Result<ExitCode> {
    let (args, paused): (RolloutAddonArgs, Option<bool>) = match command {
        RolloutCommand::Status(args) => (args, None),
        RolloutCommand::Pause(args) => (args, Some(true)),
        RolloutCommand::Resume(args) => (args, Some(false)),
        RolloutCommand::Run(_) => return Err(user("`rollout run` is not a control command")),
    };
    let ctx = connect(global, cluster, printer, false).await?;
    let classify = |e: addonctl::controller::Error| {
        if e.is_user_error() {
            user(e.to_string())
        } else {
            anyhow::Error::new(e)
        }
    };
    let addon = match paused {
        None => control::addon_with_rollout(&ctx.cluster, &ctx.namespace, &args.addon).await,
        Some(paused) => {
            control::set_paused(&ctx.cluster, &ctx.namespace, &args.addon, paused).await
        }
    }
    .map_err(classify)?;
    let report = control::report(&addon);
    if printer.structured(&report, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(paused) = paused {
        writeln!(
            printer.stdout(),
            "rollout of `{}` {}",
            args.addon,
            if paused {
                "paused: the controller applies nothing new until `addonctl rollout resume`"
            } else {
                "resumed"
            }
        )?;
    }
    print_control(printer, &report)?;
    Ok(ExitCode::SUCCESS)
}

fn print_control(printer: Printer, report: &RolloutReport) -> anyhow::Result<()> {
    let mut out = printer.stdout();
    let phase = report
        .phase
        .map_or_else(|| "not started".to_owned(), |p| format!("{p:?}"));
    writeln!(out, "addon:    {}", report.addon)?;
    if let Some(version) = &report.version {
        writeln!(out, "version:  {version}")?;
    }
    writeln!(
        out,
        "phase:    {phase}{}",
        if report.paused { " (paused)" } else { "" }
    )?;
    if let Some(stage) = &report.stage {
        writeln!(out, "stage:    {stage}")?;
    }
    if let Some(left) = report.soak_remaining_seconds {
        writeln!(out, "soak:     {left} s left")?;
    }
    for stage in &report.stages {
        let list = |clusters: &[String]| {
            if clusters.is_empty() {
                "-".to_owned()
            } else {
                clusters.join(", ")
            }
        };
        writeln!(
            out,
            "  {} (soak {} s): done {}; pending {}; failed {}",
            stage.name,
            stage.soak_seconds,
            list(&stage.done),
            list(&stage.pending),
            list(&stage.failed)
        )?;
    }
    for f in &report.failed {
        write_failure(&mut out, &f.cluster, &f.stage, &f.reason)?;
    }
    if let Some(message) = &report.message {
        writeln!(out, "{message}")?;
    }
    Ok(())
}
