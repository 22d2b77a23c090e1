//! `addonctl render`: print every object `enable` would apply.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::Value;

use addonctl::render::output::{format_objects, Format};
use addonctl::render::RenderOptions;

use crate::cli::args::{ObjectFormat, RenderArgs};
use crate::cli::commands::parameter_input;
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, is_offline, offline_catalog, ClusterSettings, GlobalSettings};

/// Where `render` reads `reference` from: a directory as it is; otherwise the registries as
/// `enable` searches them (`--registry-dir`, the stored registries, the built-in one), or
/// without a cluster the registries readable without one, with a note.
async fn locate(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    reference: &str,
) -> anyhow::Result<addonctl::loader::Located> {
    let catalog = if std::path::Path::new(reference).is_dir() {
        addonctl::source::catalog::Catalog::builtin()
    } else {
        match connect(global, cluster, printer, true).await {
            Ok(ctx) => ctx.catalog,
            Err(e) if is_offline(&e) => {
                printer.note(&format!(
                    "no cluster ({e:#}); reading `--registry-dir` directories, the local registry file and the built-in registry only"
                ));
                offline_catalog(global).await?
            }
            Err(e) => return Err(e),
        }
    };
    Ok(addonctl::loader::locate_in(&catalog, reference, None)
        .await
        .map_err(addonctl::Error::from)?)
}

/// Runs the command.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: RenderArgs,
) -> anyhow::Result<ExitCode> {
    let located = locate(global, cluster, printer, &args.addon).await?;
    let package = addonctl::loader::load(located.reader.as_ref(), &located.addon)
        .await
        .map_err(addonctl::Error::from)?;
    let renderer = global.renderer();
    let schema = renderer
        .parameter_schema(&package)
        .map_err(addonctl::Error::from)?;
    let format = match args.output {
        ObjectFormat::Yaml => Format::Yaml,
        ObjectFormat::Json => Format::Json,
    };
    let mut stdout = printer.stdout();
    if args.schema {
        let text = format_schema(schema.schema(), format)?;
        stdout.write_all(text.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let given = parameter_input(&args.parameters, None)?
        .parse(&schema)
        .map_err(addonctl::Error::from)?;
    let options = RenderOptions {
        namespace: global.namespace.clone(),
        args: given.to_map(),
        ..RenderOptions::default()
    };
    let rendered = renderer
        .render(&package, &options)
        .map_err(addonctl::Error::from)?;
    for warning in &rendered.warnings {
        tracing::warn!("{warning}");
    }
    let objects = if args.show_secrets {
        rendered.objects()
    } else {
        rendered.masked_objects()
    };
    let text = format_objects(&objects, format).context("cannot format the objects")?;
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    let notes = if args.show_secrets {
        rendered.notes.clone()
    } else {
        rendered.masked_notes()
    };
    if let Some(notes) = notes {
        let mut stderr = std::io::stderr().lock();
        writeln!(stderr, "{}", notes.trim_end())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn format_schema(schema: &Value, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(schema)? + "\n",
        Format::Yaml => addonctl::yaml::to_string(schema)?,
    })
}
