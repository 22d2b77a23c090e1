//! `addonctl list`: the addons of the registries and their phase; without a cluster, the
//! registries it can read with phase `unknown` and a note.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;

use addonctl::context::Session;
use addonctl::ops::status::{ListReport, ListRequest, ListRow};

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
    let request = ListRequest {
        registry: args.registry.clone(),
        installed_only: args.installed,
    };
    let mut declared = std::collections::BTreeSet::new();
    let listed = match connect(global, cluster, printer, true).await {
        Ok(ctx) => {
            declared = super::declare::declared_names(&ctx).await;
            let session = Session::new(ctx, None, Arc::new(printer));
            addonctl::ops::status::list(&session, &request)
                .await
                .map_err(anyhow::Error::from)
        }
        Err(e) => Err(e),
    };
    let ListReport {
        addons: rows,
        warnings,
        unknown_phases,
    } = match listed {
        // Which addons are installed cannot be told without a cluster.
        Err(e) if is_offline(&e) && !args.installed => {
            printer.note(&format!(
                "no cluster ({e:#}); listing the registries readable without one (`--registry-dir`, the local registry file, the built-in registry), status unknown"
            ));
            let catalog = offline_catalog(global).await?;
            addonctl::ops::status::list_registries(&catalog, &request).await?
        }
        other => other?,
    };
    if let Some(reason) = &unknown_phases {
        printer.note(reason);
    }
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    let documents = rows
        .iter()
        .map(|row| {
            let value = serde_json::to_value(row)?;
            Ok(super::declare::mark_declared(
                value,
                declared.contains(&row.name),
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if printer.structured(
        &json!({"addons": documents, "warnings": warnings}),
        args.output,
    )? {
        return Ok(ExitCode::SUCCESS);
    }
    print_rows(printer, &rows, &declared, args.installed)?;
    Ok(ExitCode::SUCCESS)
}

/// The table; an addon an `Addon` resource declares has ` (declared)` after its phase.
fn print_rows(
    printer: Printer,
    rows: &[ListRow],
    declared: &std::collections::BTreeSet<String>,
    installed_only: bool,
) -> anyhow::Result<()> {
    let mut out = printer.stdout();
    if rows.is_empty() {
        writeln!(
            out,
            "{}",
            if installed_only {
                "no addons installed"
            } else {
                "no addons in the registries"
            }
        )?;
        return Ok(());
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let mut description = row.description.clone();
            if description.chars().count() > 60 {
                description = description.chars().take(57).collect::<String>() + "...";
            }
            vec![
                row.name.clone(),
                row.registry.clone(),
                row.available_versions.join(","),
                if declared.contains(&row.name) {
                    format!("{} (declared)", row.phase)
                } else {
                    row.phase.to_string()
                },
                row.installed_version.clone().unwrap_or_default(),
                description,
            ]
        })
        .collect();
    write!(
        out,
        "{}",
        crate::cli::table::render(
            &[
                "NAME",
                "REGISTRY",
                "AVAILABLE-VERSIONS",
                "PHASE",
                "INSTALLED",
                "DESCRIPTION"
            ],
            &cells,
        )
    )?;
    Ok(())
}
