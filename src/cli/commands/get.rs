//! `addonctl get values`: an installed addon's stored arguments, reusable with `enable -f`.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use addonctl::context::Session;
use addonctl::ops::status::ValuesRequest;

use crate::cli::args::{GetValuesArgs, ObjectFormat};
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// `get values`.
pub async fn values(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: &GetValuesArgs,
) -> anyhow::Result<ExitCode> {
    let ctx = connect(global, cluster, printer, !args.show_secrets).await?;
    let session = Session::new(ctx, None, Arc::new(printer));
    let request = ValuesRequest {
        addon: args.addon.clone(),
        show_secrets: args.show_secrets,
    };
    let stored = addonctl::ops::status::values(&session, &request).await?;
    if stored.masked {
        printer.note(&format!(
            "secret parameters are shown as `{}`; pass `--show-secrets` for a file `enable -f` takes back as it is",
            addonctl::render::MASK
        ));
    }
    let values = stored.values;
    let mut stdout = printer.stdout();
    match args.output {
        ObjectFormat::Yaml => write!(stdout, "{}", addonctl::yaml::to_string(&values)?)?,
        ObjectFormat::Json => writeln!(stdout, "{}", serde_json::to_string_pretty(&values)?)?,
    }
    Ok(ExitCode::SUCCESS)
}
