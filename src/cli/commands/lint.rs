//! `addonctl lint`: check addons.

use std::io::Write;
use std::process::ExitCode;

use addonctl::lint::{lint_path, Severity};
use addonctl::render::Renderer;

use crate::cli::args::{GlobalArgs, LintArgs, ReportFormat};

/// Runs the command. Exits 2 when errors were found (or warnings with `--strict`).
pub async fn run(global: &GlobalArgs, args: LintArgs) -> anyhow::Result<ExitCode> {
    let renderer = Renderer::with_limits(global.limits()?);
    let report = lint_path(&args.dir, &renderer).await?;
    let mut stdout = std::io::stdout().lock();
    match args.output {
        ReportFormat::Json => writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?,
        ReportFormat::Yaml => write!(
            stdout,
            "{}",
            addonctl::yaml::to_string(&serde_json::to_value(&report)?)?
        )?,
        ReportFormat::Text => {
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
    }
    let failed =
        report.count(Severity::Error) > 0 || (args.strict && report.count(Severity::Warning) > 0);
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
