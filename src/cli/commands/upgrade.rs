//! `addonctl upgrade`: new arguments over the stored ones, the version kept unless asked; says
//! the revision it made and the parameters it changed.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use addonctl::context::Session;
use addonctl::ops::upgrade::UpgradeOp;
use addonctl::ops::Verb;

use crate::cli::args::UpgradeArgs;
use crate::cli::commands::diff::worded;
use crate::cli::commands::parameter_input;
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
    ctx.lock = addonctl::ops::guard::lock_options(
        &format!("upgrade {}", args.addon),
        args.lock.force_unlock,
    );
    let session = Session::new(ctx, None, Arc::new(printer));
    let op = UpgradeOp {
        request: addonctl::ops::UpgradeRequest {
            name: args.addon.clone(),
            latest: args.latest,
            // The reference is the installed addon's, found by its name.
            enable: args
                .plan
                .request(String::new(), args.version.clone(), given),
        },
        override_controller: args.controller.override_controller,
        wait: args.wait.then_some(args.timeout),
    };
    if let Some(dry_run) = args.dry_run {
        let mode = super::enable::preview_mode(dry_run, &args.plan, args.show_secrets);
        let preview = match addonctl::ops::upgrade::preview(&session, &op, mode).await {
            Ok(preview) => preview,
            Err(e) => return Err(reworded(&session, e).await),
        };
        return super::enable::show_preview(printer, preview, mode, args.output, Verb::Upgrade);
    }
    let upgraded = match addonctl::ops::upgrade::run(&session, &op).await {
        Ok(upgraded) => upgraded,
        Err(e) => return Err(reworded(&session, e).await),
    };
    if !printer.structured(&upgraded, args.output)? {
        let mut stdout = printer.stdout();
        for addon in &upgraded {
            let report = &addon.report;
            let revision = match (addon.revision, addon.new_revision) {
                (Some(n), true) => format!(", revision {n}"),
                (Some(n), false) => format!(", revision {n} (unchanged)"),
                (None, _) => String::new(),
            };
            writeln!(
                stdout,
                "addon `{}` {}{revision}: {} applied, {} deleted",
                report.name,
                report.version,
                super::counted(report.applied.len(), "object"),
                report.deleted.len()
            )?;
            for line in &addon.lines {
                writeln!(stdout, "  parameter {line}")?;
            }
            for deleted in &report.deleted {
                writeln!(stdout, "  deleted {deleted}")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An upgrade's error, its hints said for an upgrade.
async fn reworded(session: &Session, error: addonctl::Error) -> anyhow::Error {
    worded(addonctl::ops::diff::worded(session, error, Verb::Upgrade).await)
}
