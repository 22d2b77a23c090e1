//! `addonctl package` and `addonctl index`: for registry authors.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::args::{IndexArgs, PackageArgs};
use crate::cli::printer::Printer;
use crate::cli::settings::GlobalSettings;

/// Lints, then writes one `<name>-<version>.tgz` per addon.
pub async fn package(
    global: &GlobalSettings,
    printer: Printer,
    args: PackageArgs,
) -> anyhow::Result<ExitCode> {
    let written =
        addonctl::publish::package(&args.dir, &args.output_dir, &global.renderer()).await?;
    let mut stdout = printer.stdout();
    for package in &written {
        writeln!(
            stdout,
            "packaged `{}` {} → {} (sha256 {})",
            package.name,
            package.version,
            package.path.display(),
            package.digest
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `index.yaml` for the packages in a directory.
pub fn index(printer: Printer, args: &IndexArgs) -> anyhow::Result<ExitCode> {
    let indexed = addonctl::publish::index(&args.dir, &args.url, args.merge.as_deref())?;
    let mut stdout = printer.stdout();
    for (name, version) in &indexed.added {
        writeln!(stdout, "added `{name}` {version}")?;
    }
    writeln!(
        stdout,
        "wrote {} ({} added, {} kept)",
        indexed.path.display(),
        indexed.added.len(),
        indexed.kept
    )?;
    Ok(ExitCode::SUCCESS)
}
