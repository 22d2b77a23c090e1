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
pub mod publish;
pub mod rbac;
pub mod registry;
pub mod render;
pub mod rollback;
pub mod rollout;
pub mod status;
pub mod upgrade;
pub mod version;
pub mod wait;

use addonctl::context::Context;
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

/// Control plane first: refuses, naming every missing permission, before a writing command reads
/// or plans anything (the full check, with every object of the plan, runs before the first write).
pub(crate) async fn check_addon_state(ctx: &Context, command: &str) -> anyhow::Result<()> {
    let served = ctx.engine != addonctl::context::EngineChoice::Direct
        && ctx
            .cluster
            .serves(&addonctl::model::wire::application_gvk())
            .await?;
    addonctl::apply::access::check(
        &ctx.cluster,
        command,
        &addonctl::apply::access::addon_state(&ctx.namespace, served),
    )
    .await?;
    Ok(())
}

impl WriteRequest<'_> {
    /// The command's verb.
    fn verb(&self) -> &'static str {
        match self.command {
            declare::Guarded::Upgrade => "upgrade",
            declare::Guarded::Rollback => "rollback",
            declare::Guarded::Enable | declare::Guarded::Disable => "enable",
        }
    }
}

/// What `enable` or `upgrade` of an addon asks of [`prepare_write`].
pub(crate) struct WriteRequest<'a> {
    /// The command (`Guarded::Enable` or `Guarded::Upgrade`).
    pub command: declare::Guarded,
    /// The addon as the user named it.
    pub addon: &'a str,
    /// `--force-unlock`.
    pub force_unlock: bool,
    /// Whether it is a dry run (nothing is written, so nothing is checked).
    pub dry_run: bool,
    /// `--override-controller`.
    pub override_controller: bool,
}

/// The [`WriteRequest`] of `enable` or `upgrade` (`$command`) from the flags both have (the
/// addon, `--dry-run`, `--force-unlock`, `--override-controller`).
macro_rules! write_request {
    ($command:expr, $args:expr) => {
        crate::cli::commands::WriteRequest {
            command: $command,
            addon: &$args.addon,
            force_unlock: $args.lock.force_unlock,
            dry_run: $args.dry_run.is_some(),
            override_controller: $args.controller.override_controller,
        }
    };
}
pub(crate) use write_request;

/// The library's `EnableRequest` for `$reference` with the arguments `$given`, from the flags
/// `enable` and `upgrade` both have (`--version`, `--skip-version-check`,
/// `--override-definitions`, `--adopt`, `--skip-api-check`, `--reset-values`, `--history-max`).
macro_rules! enable_request {
    ($args:expr, $reference:expr, $given:expr) => {
        addonctl::plan::EnableRequest {
            reference: $reference,
            version: $args.version.clone(),
            args: $given,
            skip_version_check: $args.skip_version_check,
            override_definitions: $args.override_definitions,
            adopt: $args.adopt,
            skip_api_check: $args.skip_api_check,
            reset_values: $args.reset_values,
            history: addonctl::state::revisions::History {
                max: Some($args.history_max as usize),
                description: None,
            },
            revision_package: None,
            overrides: addonctl::plan::Overrides::default(),
        }
    };
}
pub(crate) use enable_request;

/// Before `enable` or `upgrade` writes: its lock options ([`set_lock`]), and — unless it is a
/// dry run — the checks of [`check_write`].
pub(crate) async fn prepare_write(
    ctx: &mut Context,
    printer: crate::cli::printer::Printer,
    write: &WriteRequest<'_>,
) -> anyhow::Result<()> {
    set_lock(ctx, write);
    check_write(ctx, printer, write).await
}

/// The lock options of `enable` or `upgrade`.
pub(crate) fn set_lock(ctx: &mut Context, write: &WriteRequest<'_>) {
    ctx.lock = lock_options(
        &format!("{} {}", write.verb(), write.addon),
        write.force_unlock,
    );
}

/// Unless it is a dry run: the check that the user may write the addon's state and the refusal
/// of an addon an `Addon` resource declares (the controller owns it), made at once; the
/// permission's refusal comes first.
pub(crate) async fn check_write(
    ctx: &Context,
    printer: crate::cli::printer::Printer,
    write: &WriteRequest<'_>,
) -> anyhow::Result<()> {
    if write.dry_run {
        return Ok(());
    }
    let command = format!("`addonctl {} {}`", write.verb(), write.addon);
    addonctl::apply::checked_first(
        check_addon_state(ctx, &command),
        declare::refuse_if_declared(
            ctx,
            printer,
            write.addon,
            write.command,
            write.override_controller,
        ),
    )
    .await
}

/// The lock options of a writing command.
pub(crate) fn lock_options(command: &str, force: bool) -> addonctl::context::LockOptions {
    addonctl::context::LockOptions {
        holder: addonctl::state::lease::holder_identity(command),
        force,
    }
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
