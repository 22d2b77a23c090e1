//! `addonctl disable`: remove an addon (and, asked, the dependencies nothing needs any more).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;

use addonctl::context::Session;
use addonctl::ops::RemovedObject;

use crate::cli::args::DisableArgs;
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// `disable`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: DisableArgs,
) -> anyhow::Result<ExitCode> {
    if args.declarative {
        return super::declare::disable(global, cluster, printer, args).await;
    }
    let mut ctx = connect(global, cluster, printer, false).await?;
    ctx.lock = addonctl::ops::guard::lock_options(
        &format!("disable {}", args.addon),
        args.lock.force_unlock,
    );
    let session = Session::new(ctx, None, Arc::new(printer));
    let op = addonctl::ops::disable::DisableOp {
        addon: args.addon.clone(),
        options: addonctl::ops::DisableOptions {
            force: args.force,
            prune_dependencies: args.prune_dependencies,
            dry_run: args.dry_run,
        },
        wait: args.wait.then_some(args.timeout),
    };
    let reports = addonctl::ops::disable::run(&session, &op).await?;
    // The addon's report, with the dependencies pruned after it under `pruned`.
    let mut document = reports
        .first()
        .map(serde_json::to_value)
        .transpose()?
        .unwrap_or(Value::Null);
    if let Some(map) = document.as_object_mut() {
        map.insert(
            "pruned".into(),
            serde_json::to_value(reports.get(1..).unwrap_or_default())?,
        );
    }
    if printer.structured(&document, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = printer.stdout();
    for (i, report) in reports.iter().enumerate() {
        let what = if i == 0 {
            ""
        } else {
            " (a dependency nothing needs any more)"
        };
        if args.dry_run {
            writeln!(
                stdout,
                "addon `{}`{what} would be disabled: {} would be deleted",
                report.name,
                super::counted(report.deleted.len(), "object")
            )?;
        } else {
            writeln!(
                stdout,
                "addon `{}` disabled{what}: {} deleted",
                report.name,
                super::counted(report.deleted.len(), "object")
            )?;
        }
        print_removal(
            &mut stdout,
            args.dry_run,
            &report.deleted,
            &report.given_back,
            &report.kept,
        )?;
    }
    if args.dry_run {
        writeln!(stdout, "# dry run: nothing was changed")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The lines of a removal: every deletion, give-back and kept object (with its reason).
pub(crate) fn print_removal(
    out: &mut impl Write,
    dry_run: bool,
    deleted: &[RemovedObject],
    given_back: &[RemovedObject],
    kept: &[RemovedObject],
) -> std::io::Result<()> {
    let (delete, give) = if dry_run {
        ("would delete", "would give back")
    } else {
        ("deleted", "gave back")
    };
    for entry in deleted {
        writeln!(out, "  {delete} {entry}")?;
    }
    for entry in given_back {
        writeln!(
            out,
            "  {give} {entry} (adopted: addonctl's fields removed, the object stays)"
        )?;
    }
    for entry in kept {
        writeln!(out, "  kept {entry}")?;
    }
    Ok(())
}
