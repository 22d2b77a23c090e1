//! `addonctl upgrade`: new arguments over the stored ones, the version kept unless asked.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::args::{DryRun, UpgradeArgs};
use crate::cli::commands::declare::Guarded;
use crate::cli::commands::enable::PlanOutput;
use crate::cli::commands::{parameter_input, prepare_write, WriteRequest};
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
    let write = WriteRequest {
        command: Guarded::Upgrade,
        addon: &args.addon,
        force_unlock: args.lock.force_unlock,
        dry_run: args.dry_run.is_some(),
        override_controller: args.controller.override_controller,
    };
    prepare_write(&mut ctx, printer, &write).await?;
    let request = addonctl::apply::UpgradeRequest {
        name: args.addon.clone(),
        version: args.version.clone(),
        latest: args.latest,
        args: given,
        skip_version_check: args.skip_version_check,
        override_definitions: args.override_definitions,
        adopt: args.adopt,
        skip_api_check: args.skip_api_check,
        reset_values: args.reset_values,
        history_max: Some(args.history_max as usize),
    };
    if let Some(dry_run) = args.dry_run {
        let plan = addonctl::apply::upgrade_plan(&ctx, &request).await?;
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
            DryRun::Server => super::diff::server_dry_run(&ctx, printer, &plan, args.output).await,
        };
    }
    let reporter = printer;
    let reports = addonctl::apply::upgrade(&ctx, &request, &reporter).await?;
    if !printer.structured(&reports, args.output)? {
        let mut stdout = printer.stdout();
        for report in &reports {
            writeln!(
                stdout,
                "addon `{}` {}: {} objects applied, {} deleted",
                report.name,
                report.version,
                report.applied.len(),
                report.deleted.len()
            )?;
            for deleted in &report.deleted {
                writeln!(stdout, "  deleted {deleted}")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
