//! `addonctl rbac`: the ClusterRoles addonctl ships.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;

use addonctl::render::output::{format_objects, Format};

use crate::cli::args::{ObjectFormat, RbacArgs};
use crate::cli::printer::Printer;

/// `rbac`: the shipped ClusterRoles.
pub fn run(printer: Printer, args: &RbacArgs) -> anyhow::Result<ExitCode> {
    let roles = addonctl::ops::rbac::roles();
    let mut stdout = printer.stdout();
    match args.output {
        ObjectFormat::Yaml => write!(stdout, "{}", format_objects(&roles, Format::Yaml)?)?,
        ObjectFormat::Json => writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(
                &json!({"apiVersion": "v1", "kind": "List", "items": roles})
            )?
        )?,
    }
    Ok(ExitCode::SUCCESS)
}
