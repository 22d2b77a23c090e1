//! `addonctl upgrade`: new arguments over the stored ones, the version kept unless asked.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::args::{DryRun, UpgradeArgs};
use crate::cli::commands::declare::Guarded;
use crate::cli::commands::enable::PlanOutput;
use crate::cli::commands::{enable_request, parameter_input, prepare_write, write_request};
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
    prepare_write(&mut ctx, printer, &write_request!(Guarded::Upgrade, args)).await?;
    let request = addonctl::apply::UpgradeRequest {
        name: args.addon.clone(),
        latest: args.latest,
        // The reference is the installed addon's, found by its name.
        enable: enable_request!(args, String::new(), given),
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
    if args.wait {
        addonctl::status::wait::until_enabled(ctx.state(), &args.addon, args.timeout, &reporter)
            .await?;
    }
    if !printer.structured(&reports, args.output)? {
        let mut stdout = printer.stdout();
        for report in &reports {
            writeln!(
                stdout,
                "addon `{}` {}: {} applied, {} deleted",
                report.name,
                report.version,
                super::counted(report.applied.len(), "object"),
                report.deleted.len()
            )?;
            for deleted in &report.deleted {
                writeln!(stdout, "  deleted {deleted}")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
