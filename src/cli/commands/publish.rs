//! `addonctl package` and `addonctl index`: for registry authors.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::args::{IndexArgs, PackageArgs, PushArgs};
use crate::cli::printer::Printer;
use crate::cli::settings::GlobalSettings;

/// Lints, then writes one `<name>-<version>.tgz` per addon.
pub async fn package(
    global: &GlobalSettings,
    printer: Printer,
    args: PackageArgs,
) -> anyhow::Result<ExitCode> {
    let destination = destination(printer, &args)?;
    let written = addonctl::publish::package(&args.dir, &destination, &global.renderer()).await?;
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

/// The directory `package` writes to: `-d/--destination`, else the deprecated `-o/--output-dir`
/// (with a note; a format name there is refused, never made a directory), else `.`.
fn destination(printer: Printer, args: &PackageArgs) -> anyhow::Result<std::path::PathBuf> {
    if let Some(dir) = &args.destination {
        return Ok(dir.clone());
    }
    let Some(dir) = &args.output_dir else {
        return Ok(".".into());
    };
    let text = dir.to_string_lossy();
    if ["json", "yaml", "text"].contains(&text.as_ref()) && !dir.is_dir() {
        return Err(crate::cli::diagnostics::user(format!(
            "`package` prints no `{text}` report: `-o` is its deprecated name of the destination directory; give the directory with `-d DIR` (`--destination`)"
        )));
    }
    printer.note(&format!(
        "`-o/--output-dir` of `package` is deprecated (everywhere else `-o` is the output format): use `-d {text}` (`--destination`)"
    ));
    Ok(dir.clone())
}

/// Publishes packages or addon directories to an OCI registry.
pub async fn push(
    global: &GlobalSettings,
    printer: Printer,
    args: PushArgs,
) -> anyhow::Result<ExitCode> {
    let login = match (args.username, args.password) {
        (Some(username), Some(password)) => {
            addonctl::source::oci::client::Login::Basic { username, password }
        }
        (Some(_), None) => {
            return Err(crate::cli::diagnostics::user(
                "`--username` needs `--password` (or ADDONCTL_REGISTRY_PASSWORD)",
            ))
        }
        (None, Some(token)) => addonctl::source::oci::client::Login::Token(token),
        (None, None) => addonctl::source::oci::client::Login::Anonymous,
    };
    let ca_bundle = args.ca_file.as_ref().map(fs_err::read).transpose()?;
    let options = addonctl::publish::PushOptions {
        login,
        plain_http: args.plain_http.then(|| "true".to_owned()),
        ca_bundle,
    };
    let pushed =
        addonctl::publish::push(&args.source, &args.url, options, &global.renderer()).await?;
    let mut stdout = printer.stdout();
    for chart in &pushed {
        writeln!(
            stdout,
            "pushed `{}` {} → {}:{} ({})",
            chart.name, chart.version, chart.reference, chart.tag, chart.manifest_digest
        )?;
        if let Some(version) = &chart.catalog_version {
            writeln!(
                stdout,
                "updated the catalog chart `kubevela-addon-catalog` to {version}"
            )?;
        }
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
