//! `addonctl lint`: check addons.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::args::LintArgs;
use crate::cli::printer::Printer;
use crate::cli::settings::GlobalSettings;
use addonctl::lint::{lint_path, Severity};

/// Runs the command. Exits 2 when errors were found (or warnings with `--strict`).
pub async fn run(
    global: &GlobalSettings,
    printer: Printer,
    args: LintArgs,
) -> anyhow::Result<ExitCode> {
    let report = lint_path(&args.dir, &global.renderer()).await?;
    if !printer.structured(&report, args.output)? {
        let mut stdout = printer.stdout();
        for finding in &report.findings {
            let level = match finding.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            writeln!(stdout, "{level}: {}", finding.message)?;
        }
        let errors = report.count(Severity::Error);
        let warnings = report.count(Severity::Warning);
        writeln!(
            stdout,
            "checked {} addon{}: {errors} error{}, {warnings} warning{}",
            report.addons.len(),
            if report.addons.len() == 1 { "" } else { "s" },
            if errors == 1 { "" } else { "s" },
            if warnings == 1 { "" } else { "s" },
        )?;
    }
    let failed =
        report.count(Severity::Error) > 0 || (args.strict && report.count(Severity::Warning) > 0);
    Ok(if failed {
        ExitCode::from(crate::cli::diagnostics::USER_ERROR)
    } else {
        ExitCode::SUCCESS
    })
}
