//! `addonctl history`: an installed addon's revisions, as `helm history` lists a release's.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use addonctl::context::Session;
use addonctl::ops::status::{HistoryRequest, Revision};

use crate::cli::args::HistoryArgs;
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// `history`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: &HistoryArgs,
) -> anyhow::Result<ExitCode> {
    let ctx = connect(global, cluster, printer, true).await?;
    let session = Session::new(ctx, None, Arc::new(printer));
    let request = HistoryRequest {
        addon: args.addon.clone(),
    };
    let record = addonctl::ops::status::history(&session, &request).await?;
    if printer.structured(&record.revisions, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = printer.stdout();
    if record.revisions.is_empty() {
        writeln!(
            stdout,
            "addon `{}` {} has no revisions yet (installed by an earlier addonctl; the next enable or upgrade that changes it adds one)",
            record.addon, record.version
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    write!(stdout, "{}", table(&record.revisions))?;
    Ok(ExitCode::SUCCESS)
}

/// The revisions as a table: REVISION, UPDATED, VERSION, STATUS, DESCRIPTION, and SOURCE
/// (the manifest digest and its verification) when a revision came from an OCI registry.
fn table(revisions: &[Revision]) -> String {
    let pinned = revisions.iter().any(|r| r.source.is_some());
    let rows: Vec<Vec<String>> = revisions
        .iter()
        .map(|r| {
            let mut description = r.description.clone();
            if let Some(note) = &r.note {
                description.push_str(&format!(" ({note})"));
            }
            let mut row = vec![
                r.revision.to_string(),
                r.updated.clone(),
                r.version.clone(),
                r.status.to_string(),
            ];
            if pinned {
                row.push(r.source.as_ref().map_or_else(
                    || "-".to_owned(),
                    |s| format!("{} {}", s.short_digest(), s.verification.word()),
                ));
            }
            row.push(description);
            row
        })
        .collect();
    let mut header: Vec<String> = ["REVISION", "UPDATED", "VERSION", "STATUS"]
        .map(str::to_owned)
        .to_vec();
    if pinned {
        header.push("SOURCE".to_owned());
    }
    header.push("DESCRIPTION".to_owned());
    let mut widths = vec![0usize; header.len()];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}
