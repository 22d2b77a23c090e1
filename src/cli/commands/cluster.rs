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
            reset_labels,
            yes,
            output,
        } => {
            use addonctl::apply::clusters::JoinLabels;
            let labels = if reset_labels {
                JoinLabels::Reset
            } else if labels.is_empty() {
                JoinLabels::Keep
            } else {
                JoinLabels::Replace(addonctl::apply::clusters::parse_labels(&labels)?)
            };
            if !yes && labels != JoinLabels::Keep && printer.interactive() {
                confirm_rejoin(&ctx, printer, &name, &labels).await?;
            }
            let row = addonctl::apply::clusters::join_with(
                &ctx.applier(),
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
            let rows = addonctl::apply::clusters::list(&ctx.applier()).await?;
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
            if !yes && !dry_run && printer.interactive() {
                confirm_detach(&ctx, printer, &name, force).await?;
            }
            // The library checks permissions and takes the locks (none for a dry run).
            let mut ctx = ctx;
            ctx.lock = lock_options(&format!("cluster detach {name}"), false);
            let report =
                addonctl::apply::clusters::detach(&ctx.applier(), &name, force, dry_run).await?;
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
            addonctl::apply::clusters::set_labels(&ctx.applier(), &name, &labels).await?;
            writeln!(out, "cluster `{name}` labels set")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// On a terminal, before `cluster detach`: what it would delete (a dry run), and the person's
/// y/N. Declined: a user error, nothing changed.
async fn confirm_detach(
    ctx: &addonctl::context::Context,
    printer: Printer,
    name: &str,
    force: bool,
) -> anyhow::Result<()> {
    let preview = addonctl::apply::clusters::detach(&ctx.applier(), name, force, true).await?;
    let mut lines = vec![format!(
        "detaching cluster `{name}` deletes {} object(s) addons applied there{}, then forgets the cluster:",
        preview.deleted.len(),
        if preview.given_back.is_empty() {
            String::new()
        } else {
            format!(" and gives back {}", preview.given_back.len())
        }
    )];
    lines.extend(preview.addons.iter().map(|line| format!("  {line}")));
    if printer.confirm(&lines, &format!("detach `{name}`? [y/N] "))? {
        Ok(())
    } else {
        Err(crate::cli::diagnostics::user(format!(
            "cluster `{name}` not detached: nothing was changed (pass `--yes` to detach without asking)"
        )))
    }
}

/// On a terminal, before a re-`join` that would drop labels the stored cluster has
/// (`--reset-labels`, or `--labels` without some stored key): the labels lost, and the
/// person's y/N (one read of the cluster's Secret; a cluster not joined yet asks nothing).
async fn confirm_rejoin(
    ctx: &addonctl::context::Context,
    printer: Printer,
    name: &str,
    labels: &addonctl::apply::clusters::JoinLabels,
) -> anyhow::Result<()> {
    use addonctl::apply::clusters::JoinLabels;
    let gvk = kube::core::GroupVersionKind::gvk("", "v1", "Secret");
    // Unreadable: the question is a courtesy; join itself reports what the cluster refuses.
    let Ok(Some(stored)) = ctx.cluster.get(&gvk, Some(&ctx.namespace), name).await else {
        return Ok(());
    };
    let stored = addonctl::apply::clusters::stored_labels(&addonctl::state::to_value(&stored));
    let dropped: Vec<String> = stored
        .iter()
        .filter(|(k, _)| match labels {
            JoinLabels::Keep => false,
            JoinLabels::Reset => true,
            JoinLabels::Replace(given) => !given.contains_key(*k),
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if dropped.is_empty() {
        return Ok(());
    }
    let lines = vec![format!(
        "cluster `{name}` is joined with labels {}; joining it again this way drops them (clusterLabelSelector stops matching it)",
        dropped.join(",")
    )];
    if printer.confirm(&lines, &format!("re-join `{name}`? [y/N] "))? {
        Ok(())
    } else {
        Err(crate::cli::diagnostics::user(format!(
            "cluster `{name}` not joined again: nothing was changed (leave out `--labels`/`--reset-labels` to keep them, or pass `--yes` to join without asking)"
        )))
    }
}

/// `cluster list` as a table.
fn print_clusters(
    out: &mut impl Write,
    rows: Vec<addonctl::apply::clusters::ClusterRow>,
) -> anyhow::Result<()> {
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
