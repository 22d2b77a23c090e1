//! `addonctl list`: the addons of the registries and whether they are installed.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;

use crate::cli::args::ListArgs;
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// `list`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: ListArgs,
) -> anyhow::Result<ExitCode> {
    let ctx = connect(global, cluster, printer, true).await?;
    let (rows, warnings) = addonctl::status::list(&ctx, args.registry.as_deref()).await?;
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    if printer.structured(&json!({"addons": rows, "warnings": warnings}), args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = printer.stdout();
    writeln!(
        out,
        "{:<24} {:<10} {:<20} {:<20} DESCRIPTION",
        "NAME", "REGISTRY", "AVAILABLE-VERSIONS", "STATUS"
    )?;
    for row in rows {
        let mut description = row.description.clone();
        if description.chars().count() > 60 {
            description = description.chars().take(57).collect::<String>() + "...";
        }
        writeln!(
            out,
            "{:<24} {:<10} {:<20} {:<20} {description}",
            row.name,
            row.registry,
            row.available_versions.join(","),
            row.status
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
