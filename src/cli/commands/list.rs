//! `addonctl list`: the addons of the registries and their phase; without a cluster, the
//! registries it can read with phase `unknown` and a note.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;

use addonctl::status::list::ListOptions;
use addonctl::status::ListRow;

use crate::cli::args::ListArgs;
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, is_offline, offline_catalog, ClusterSettings, GlobalSettings};

/// `list`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: ListArgs,
) -> anyhow::Result<ExitCode> {
    let options = ListOptions {
        registry: args.registry.as_deref(),
        installed_only: args.installed,
    };
    let listed = match connect(global, cluster, printer, true).await {
        Ok(ctx) => addonctl::status::list(Some(ctx.state()), &ctx.catalog, &options)
            .await
            .map_err(anyhow::Error::from),
        Err(e) => Err(e),
    };
    let (rows, warnings) = match listed {
        // Which addons are installed cannot be told without a cluster.
        Err(e) if is_offline(&e) && !args.installed => {
            printer.note(&format!(
                "no cluster ({e:#}); listing the registries readable without one (`--registry-dir`, the local registry file, the built-in registry), status unknown"
            ));
            let catalog = offline_catalog(global).await?;
            addonctl::status::list(None, &catalog, &options).await?
        }
        other => other?,
    };
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    if printer.structured(&json!({"addons": rows, "warnings": warnings}), args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    print_rows(printer, &rows)?;
    Ok(ExitCode::SUCCESS)
}

fn print_rows(printer: Printer, rows: &[ListRow]) -> anyhow::Result<()> {
    let mut out = printer.stdout();
    writeln!(
        out,
        "{:<24} {:<10} {:<20} {:<10} {:<10} DESCRIPTION",
        "NAME", "REGISTRY", "AVAILABLE-VERSIONS", "PHASE", "INSTALLED"
    )?;
    for row in rows {
        let mut description = row.description.clone();
        if description.chars().count() > 60 {
            description = description.chars().take(57).collect::<String>() + "...";
        }
        writeln!(
            out,
            "{:<24} {:<10} {:<20} {:<10} {:<10} {description}",
            row.name,
            row.registry,
            row.available_versions.join(","),
            row.phase.to_string(),
            row.installed_version.as_deref().unwrap_or("-"),
        )?;
    }
    Ok(())
}
