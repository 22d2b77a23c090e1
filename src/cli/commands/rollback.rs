//! `addonctl rollback`: an earlier revision of an installed addon applied again.

use std::io::Write;
use std::process::ExitCode;

use std::sync::Arc;

use addonctl::context::Session;

use crate::cli::args::RollbackArgs;
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
    ctx.lock = addonctl::ops::guard::lock_options(
        &format!("rollback {}", args.addon),
        args.lock.force_unlock,
    );
    let session = Session::new(ctx, None, Arc::new(printer));
    let op = addonctl::ops::rollback::RollbackOp {
        request: addonctl::ops::RollbackRequest {
            name: args.addon.clone(),
            revision: args.revision,
            history_max: Some(args.history_max as usize),
            override_definitions: args.override_definitions,
            adopt: args.adopt,
            skip_version_check: args.skip_version_check,
            skip_api_check: args.skip_api_check,
        },
        override_controller: args.controller.override_controller,
    };
    let report = addonctl::ops::rollback::run(&session, &op).await?;
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
