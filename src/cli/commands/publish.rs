//! `addonctl package` and `addonctl index`: for registry authors.

use std::io::Write;
use std::process::ExitCode;

use addonctl::render::Renderer;

use crate::cli::args::{GlobalArgs, IndexArgs, PackageArgs};

/// Lints, then writes one `<name>-<version>.tgz` per addon.
pub async fn package(global: &GlobalArgs, args: PackageArgs) -> anyhow::Result<ExitCode> {
    let renderer = Renderer::with_limits(global.limits()?);
    let written = addonctl::publish::package(&args.dir, &args.output_dir, &renderer).await?;
    let mut stdout = std::io::stdout().lock();
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
pub fn index(args: &IndexArgs) -> anyhow::Result<ExitCode> {
    let indexed = addonctl::publish::index(&args.dir, &args.url, args.merge.as_deref())?;
    let mut stdout = std::io::stdout().lock();
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
