//! `addonctl rollback`: an earlier revision of an installed addon applied again.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::args::RollbackArgs;
use crate::cli::commands::declare::{refuse_if_declared, Guarded};
use crate::cli::commands::{check_addon_state, lock_options};
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// `rollback`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: RollbackArgs,
) -> anyhow::Result<ExitCode> {
    let mut ctx = connect(global, cluster, printer, true).await?;
    ctx.lock = lock_options(&format!("rollback {}", args.addon), args.lock.force_unlock);
    // The permission's refusal first, then the refusal of an addon an `Addon` declares.
    addonctl::apply::checked_first(
        check_addon_state(&ctx, &format!("`addonctl rollback {}`", args.addon)),
        refuse_if_declared(
            &ctx,
            printer,
            &args.addon,
            Guarded::Rollback,
            args.controller.override_controller,
        ),
    )
    .await?;
    let request = addonctl::apply::RollbackRequest {
        name: args.addon.clone(),
        revision: args.revision,
        history_max: Some(args.history_max as usize),
        override_definitions: args.override_definitions,
        adopt: args.adopt,
        skip_version_check: args.skip_version_check,
        skip_api_check: args.skip_api_check,
    };
    let reporter = printer;
    let report = addonctl::apply::rollback(&ctx, &request, &reporter).await?;
    if printer.structured(&report, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = printer.stdout();
    writeln!(
        stdout,
        "addon `{}` rolled back to revision {} ({}{})",
        args.addon,
        report.revision,
        report.version,
        if report.package_kept {
            ", from its kept package"
        } else {
            ", from its registry"
        }
    )?;
    for step in &report.steps {
        writeln!(
            stdout,
            "addon `{}` {}: {} applied, {} deleted",
            step.name,
            step.version,
            super::counted(step.applied.len(), "object"),
            step.deleted.len()
        )?;
        for deleted in &step.deleted {
            writeln!(stdout, "  deleted {deleted}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
