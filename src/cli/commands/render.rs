//! `addonctl render`: print every object `enable` would apply.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::{Map, Value};

use addonctl::render::output::{format_objects, Format};
use addonctl::render::{RenderOptions, Renderer};

use crate::cli::args::{GlobalArgs, ObjectFormat, ParameterArgs, RenderArgs};
use crate::cli::diagnostics::user;

/// Runs the command.
pub async fn run(global: &GlobalArgs, args: RenderArgs) -> anyhow::Result<ExitCode> {
    let located = addonctl::loader::locate(&args.addon, None).await?;
    let package = addonctl::loader::load(located.reader.as_ref(), &located.addon)
        .await
        .map_err(addonctl::Error::from)?;
    let renderer = Renderer::with_limits(global.limits()?);
    let schema = renderer
        .parameter_schema(&package)
        .map_err(addonctl::Error::from)?;
    let format = match args.output {
        ObjectFormat::Yaml => Format::Yaml,
        ObjectFormat::Json => Format::Json,
    };
    let mut stdout = std::io::stdout().lock();
    if args.schema {
        let text = format_schema(schema.schema(), format)?;
        stdout.write_all(text.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let given = collect_args(&schema, &args.parameters)?;
    let options = RenderOptions {
        namespace: global.system_namespace.clone(),
        args: given,
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

/// Values files, then `key=value` arguments, then `--set-file`: later wins.
pub fn collect_args(
    schema: &addonctl::params::ParameterSchema,
    args: &ParameterArgs,
) -> anyhow::Result<Map<String, Value>> {
    let mut merged = Value::Object(Map::new());
    for file in &args.values {
        let text = addonctl::params::input::read_text(file, "values file")
            .map_err(addonctl::Error::from)?;
        let (value, warnings) = addonctl::yaml::parse_single(&text).map_err(|e| {
            user(format!(
                "values file `{}` is not valid YAML: {e}",
                file.display()
            ))
        })?;
        for w in warnings {
            tracing::warn!("`{}`: {w}", file.display());
        }
        match value {
            Value::Null => {}
            Value::Object(_) => addonctl::params::merge_values(&mut merged, &value),
            _ => {
                return Err(user(format!(
                    "values file `{}` must hold a mapping of parameter names to values",
                    file.display()
                )))
            }
        }
    }
    let given = schema
        .parse_args(&args.args)
        .map_err(addonctl::Error::from)?;
    addonctl::params::merge_values(&mut merged, &Value::Object(given));
    for spec in &args.set_file {
        let Some((key, path)) = spec.split_once('=') else {
            return Err(user(format!("`--set-file {spec}`: expected `key=path`")));
        };
        let text = addonctl::params::input::read_text(
            std::path::Path::new(path),
            &format!("`--set-file {key}`"),
        )
        .map_err(addonctl::Error::from)?;
        let mut value = Value::String(text);
        for segment in key.rsplit('.') {
            if segment.is_empty() {
                return Err(user(format!(
                    "`--set-file {spec}`: the key has an empty segment"
                )));
            }
            let mut map = Map::new();
            map.insert(segment.to_owned(), value);
            value = Value::Object(map);
        }
        addonctl::params::merge_values(&mut merged, &value);
    }
    match merged {
        Value::Object(map) => Ok(map),
        _ => Ok(Map::new()),
    }
}
