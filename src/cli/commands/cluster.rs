//! `addonctl cluster join | list | detach | labels`.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::args::ClusterCommand;
use crate::cli::commands::disable::print_removal;
use crate::cli::commands::lock_options;
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// `cluster join | list | detach | labels`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    command: ClusterCommand,
) -> anyhow::Result<ExitCode> {
    let ctx = connect(global, cluster, printer, false).await?;
    let writing = match &command {
        ClusterCommand::Join { name, .. } => Some(format!("`addonctl cluster join {name}`")),
        ClusterCommand::Labels { name, .. } => Some(format!("`addonctl cluster labels {name}`")),
        // Detach checks its own permissions in the library (none for a dry run).
        ClusterCommand::Detach { .. } | ClusterCommand::List { .. } => None,
    };
    if let Some(command) = writing {
        addonctl::apply::access::check(
            &ctx.cluster,
            &command,
            &addonctl::apply::access::cluster_state(&ctx.namespace),
        )
        .await?;
    }
    let mut out = printer.stdout();
    match command {
        ClusterCommand::Join {
            name,
            from_kubeconfig,
            from_context,
            labels,
            output,
        } => {
            let labels = addonctl::apply::clusters::parse_labels(&labels)?;
            let row = addonctl::apply::clusters::join(
                &ctx,
                &name,
                &from_kubeconfig,
                from_context.as_deref(),
                &labels,
            )
            .await?;
            if !printer.structured(&row, output)? {
                writeln!(
                    out,
                    "cluster `{}` joined: {} (Kubernetes {})",
                    row.name, row.endpoint, row.version
                )?;
            }
        }
        ClusterCommand::List { output } => {
            let rows = addonctl::apply::clusters::list(&ctx).await?;
            if !printer.structured(&rows, output)? {
                print_clusters(&mut out, rows)?;
            }
        }
        ClusterCommand::Detach {
            name,
            force,
            dry_run,
            output,
        } => {
            // The library checks permissions and takes the locks (none for a dry run).
            let mut ctx = ctx;
            ctx.lock = lock_options(&format!("cluster detach {name}"), false);
            let report = addonctl::apply::clusters::detach(&ctx, &name, force, dry_run).await?;
            if !printer.structured(&report, output)? {
                if dry_run {
                    writeln!(out, "cluster `{name}` would be detached")?;
                } else {
                    writeln!(out, "cluster `{name}` detached")?;
                }
                for line in &report.addons {
                    writeln!(out, "  {line}")?;
                }
                print_removal(
                    &mut out,
                    dry_run,
                    &report.deleted,
                    &report.given_back,
                    &report.kept,
                )?;
                if dry_run {
                    writeln!(out, "# dry run: nothing was changed")?;
                }
            }
        }
        ClusterCommand::Labels { name, labels } => {
            let labels = addonctl::apply::clusters::parse_labels(&labels)?;
            addonctl::apply::clusters::set_labels(&ctx, &name, &labels).await?;
            writeln!(out, "cluster `{name}` labels set")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `cluster list` as a table.
fn print_clusters(
    out: &mut impl Write,
    rows: Vec<addonctl::apply::clusters::ClusterRow>,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{:<16} {:<32} {:<20} {:<10} {:<10} LABELS",
        "NAME", "ENDPOINT", "CREDENTIAL", "REACHABLE", "VERSION"
    )?;
    for row in rows {
        let labels: Vec<String> = row.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let credential = row
            .credential_type
            .map_or_else(|| "-".to_owned(), |c| format!("{c:?}"));
        let version = if row.reachable {
            row.version.clone()
        } else {
            "-".to_owned()
        };
        writeln!(
            out,
            "{:<16} {:<32} {:<20} {:<10} {:<10} {}",
            row.name,
            row.endpoint,
            credential,
            if row.reachable { "yes" } else { "no" },
            version,
            labels.join(",")
        )?;
        if !row.reachable {
            writeln!(out, "  unreachable: {}", row.version)?;
        }
    }
    Ok(())
}
