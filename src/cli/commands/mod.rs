//! One module per command; what several commands share is here.

pub mod cluster;
pub mod completion;
pub mod controller;
pub mod declare;
pub mod diff;
pub mod disable;
pub mod enable;
pub mod get;
pub mod history;
pub mod init;
pub mod lint;
pub mod list;
pub mod man;
pub mod publish;
pub mod rbac;
pub mod registry;
pub mod render;
pub mod rollback;
pub mod rollout;
pub mod serve;
pub mod status;
pub mod upgrade;
pub mod version;
pub mod wait;

use addonctl::params::{Input, RawInput};

use crate::cli::args::ParameterArgs;

/// The parameters given on the command line, files read (their warnings logged), nothing typed
/// yet: the library parses them against the schema of the package it loads.
pub(crate) fn parameter_input(
    parameters: &ParameterArgs,
    clusters: Option<&[String]>,
) -> anyhow::Result<Input> {
    let (input, warnings) = Input::read(&RawInput {
        values_files: &parameters.values,
        pairs: &parameters.args,
        set_files: &parameters.set_file,
        clusters,
    })
    .map_err(addonctl::Error::from)?;
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    Ok(input)
}

/// The lock options of a writing command.
pub(crate) fn lock_options(command: &str, force: bool) -> addonctl::context::LockOptions {
    addonctl::ops::guard::lock_options(command, force)
}

/// `1 object`, `2 objects`: a count with its noun, singular or plural.
pub(crate) fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// An addon no registry has, as the user's error: a did-you-mean among the registries' addons
/// (and `installed`, the installed ones), and the registries searched.
pub(crate) async fn unknown_addon(
    catalog: &addonctl::source::catalog::Catalog,
    name: &str,
    installed: &[String],
) -> anyhow::Error {
    let mut known = catalog.names().await;
    known.extend(installed.iter().cloned());
    known.sort();
    known.dedup();
    crate::cli::diagnostics::user(format!(
        "addon `{name}` is in no registry and not installed{}",
        searched(catalog, name, &known)
    ))
}

/// `; did you mean `x`? (searched: …)`, for an addon `name` among the `known` ones.
fn searched(catalog: &addonctl::source::catalog::Catalog, name: &str, known: &[String]) -> String {
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    let guess = match addonctl::model::metadata::closest(name, &known) {
        Some(close) => format!("; did you mean `{close}`?"),
        // A part of longer names (`strongbox` → `strongbox-operator`, `strongbox-dashboard`).
        None if name.len() >= 3 => {
            let parts: Vec<String> = known
                .iter()
                .filter(|k| k.contains(name))
                .take(5)
                .map(|k| format!("`{k}`"))
                .collect();
            match parts.len() {
                0 => String::new(),
                1 => format!("; did you mean {}?", parts.join("")),
                _ => format!("; did you mean one of {}?", parts.join(", ")),
            }
        }
        None => String::new(),
    };
    format!(
        "{guess} (registries searched: {}; `addonctl list` shows their addons)",
        catalog.describe()
    )
}

/// An enable-like command's error, with a did-you-mean and the registries searched when it is
/// an addon in no registry; any other error as it is.
pub(crate) async fn explain_not_found(
    catalog: &addonctl::source::catalog::Catalog,
    error: anyhow::Error,
) -> anyhow::Error {
    let not_found = error
        .chain()
        .find_map(|cause| match cause.downcast_ref::<addonctl::Error>() {
            Some(addonctl::Error::Resolve(addonctl::resolve::ResolveError::NotFound {
                name,
                wanted: None,
                registry: None,
                available,
            })) if available.is_empty() => Some(name.clone()),
            _ => None,
        });
    let Some(name) = not_found else {
        return error;
    };
    let known = catalog.names().await;
    crate::cli::diagnostics::user(format!("{error}{}", searched(catalog, &name, &known)))
}
