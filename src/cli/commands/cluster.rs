//! `addonctl cluster join | list | detach | labels`.

use std::io::Write;
use std::process::ExitCode;

use std::sync::Arc;

use addonctl::context::Session;
use addonctl::ops::{ClusterRow, JoinLabels};

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
    let mut ctx = connect(global, cluster, printer, false).await?;
    if let ClusterCommand::Detach { name, .. } = &command {
        ctx.lock = lock_options(&format!("cluster detach {name}"), false);
    }
    let session = Session::new(ctx, None, Arc::new(printer));
    let mut out = printer.stdout();
    match command {
        ClusterCommand::Join {
            name,
            from_kubeconfig,
            from_context,
            labels,
            reset_labels,
            yes,
            output,
        } => {
            let labels = if reset_labels {
                JoinLabels::Reset
            } else if labels.is_empty() {
                JoinLabels::Keep
            } else {
                JoinLabels::Replace(addonctl::ops::parse_labels(&labels)?)
            };
            let op = addonctl::ops::cluster::JoinOp {
                name,
                kubeconfig: from_kubeconfig,
                context: from_context,
                labels,
            };
            let row = addonctl::ops::cluster::join(
                &session,
                &op,
                &crate::cli::consent::Asking::unless(yes, printer),
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
            let rows = addonctl::ops::cluster::list(&session).await?;
            if !printer.structured(&rows, output)? {
                print_clusters(&mut out, rows)?;
            }
        }
        ClusterCommand::Detach {
            name,
            force,
            dry_run,
            yes,
            output,
        } => {
            let report = addonctl::ops::cluster::detach(
                &session,
                &name,
                force,
                dry_run,
                &crate::cli::consent::Asking::unless(yes, printer),
            )
            .await?;
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
            let labels = addonctl::ops::parse_labels(&labels)?;
            addonctl::ops::cluster::set_labels(&session, &name, &labels).await?;
            writeln!(out, "cluster `{name}` labels set")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `cluster list` as a table.
fn print_clusters(out: &mut impl Write, rows: Vec<ClusterRow>) -> anyhow::Result<()> {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let labels: Vec<String> = row.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            vec![
                row.name.clone(),
                row.endpoint.clone(),
                row.credential_type
                    .as_ref()
                    .map_or_else(String::new, |c| format!("{c:?}")),
                if row.reachable { "yes" } else { "no" }.to_owned(),
                if row.reachable {
                    row.version.clone()
                } else {
                    String::new()
                },
                labels.join(","),
            ]
        })
        .collect();
    let table = crate::cli::table::render(
        &[
            "NAME",
            "ENDPOINT",
            "CREDENTIAL",
            "REACHABLE",
            "VERSION",
            "LABELS",
        ],
        &cells,
    );
    let mut lines = table.lines();
    if let Some(header) = lines.next() {
        writeln!(out, "{header}")?;
    }
    for (line, row) in lines.zip(&rows) {
        writeln!(out, "{line}")?;
        if !row.reachable {
            writeln!(out, "  unreachable: {}", row.version)?;
        }
    }
    Ok(())
}
