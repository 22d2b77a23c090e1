//! `enable --declarative` and `disable --declarative`: an `Addon` resource written or deleted
//! for the controller (the guard that keeps the other commands from fighting the controller
//! over it is [`addonctl::ops::guard`]).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{json, Value};

use addonctl::context::{Context, Session};
use addonctl::controller::crd::{Addon, DriftPolicy};
use addonctl::declare;

use crate::cli::args::{DisableArgs, DriftChoice, DryRun, EnableArgs};
use crate::cli::commands::parameter_input;
use crate::cli::diagnostics::user;
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, connect_or_offline, ClusterSettings, GlobalSettings};

/// The library's declaration errors as the CLI reports them (user errors exit 2).
fn reported(error: declare::Error) -> anyhow::Error {
    match error {
        declare::Error::Library(inner) => anyhow::Error::from(*inner),
        other if other.is_user_error() => user(other.to_string()),
        other => anyhow::Error::from(other),
    }
}

/// `enable --declarative`: validates the arguments, then writes (or, `--dry-run`, prints) the
/// `Addon` and the Secret of its secret parameters.
pub async fn enable(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: EnableArgs,
) -> anyhow::Result<ExitCode> {
    if args.dry_run == Some(DryRun::Server) {
        return Err(user(
            "`--declarative` takes `--dry-run` (prints the `Addon` and its Secret, values masked), not `--dry-run=server`",
        ));
    }
    let dry_run = args.dry_run.is_some();
    let given = parameter_input(&args.parameters, None)?;
    let selector = args
        .declarative
        .cluster_selector
        .as_deref()
        .map(declare::parse_selector)
        .transpose()
        .map_err(reported)?;
    let (ctx, offline) = connect_or_offline(global, cluster, printer, dry_run).await?;
    let session = Session::new(ctx, None, Arc::new(printer));
    let op = addonctl::ops::declare::DeclareOp {
        request: declare::Request {
            reference: args.addon.clone(),
            version: args.version.clone(),
            args: given,
            clusters: args.clusters.clone(),
            cluster_selector: selector,
            drift: args.declarative.drift.map(|d| match d {
                DriftChoice::Correct => DriftPolicy::Correct,
                DriftChoice::Warn => DriftPolicy::Warn,
                DriftChoice::Ignore => DriftPolicy::Ignore,
            }),
            suspend: args.declarative.suspend,
            skip_version_check: args.plan.skip_version_check,
            skip_api_check: args.plan.skip_api_check,
        },
        dry_run,
        offline,
    };
    let declared = addonctl::ops::declare::declare(&session, &op)
        .await
        .map_err(reported)?;
    let Some(written) = &declared.written else {
        return print_dry_run(printer, &declared.declaration, args.output, offline);
    };
    if printer.structured(&written.addon, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    print_written(printer, session.ctx(), &declared.declaration, written)?;
    Ok(ExitCode::SUCCESS)
}

/// What `--dry-run` shows: the `Addon`, then the Secret with its values masked (`-o json|yaml`:
/// one `List`).
fn print_dry_run(
    printer: Printer,
    declaration: &declare::Declaration,
    output: crate::cli::args::ReportFormat,
    offline: bool,
) -> anyhow::Result<ExitCode> {
    let mut items = vec![declaration.addon_value()];
    items.extend(declaration.masked_secret());
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    if printer.structured(&list, output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = printer.stdout();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            writeln!(out, "---")?;
        }
        write!(out, "{}", addonctl::yaml::to_string(item)?)?;
    }
    writeln!(
        out,
        "# dry run{}: nothing was written (arguments validated against `{}` {})",
        if offline { ", offline" } else { "" },
        declaration
            .addon
            .metadata
            .name
            .as_deref()
            .unwrap_or_default(),
        declaration.validated_version
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The lines of a written declaration.
fn print_written(
    printer: Printer,
    ctx: &Context,
    declaration: &declare::Declaration,
    written: &declare::Written,
) -> anyhow::Result<()> {
    let spec = &declaration.addon.spec;
    let name = declaration
        .addon
        .metadata
        .name
        .as_deref()
        .unwrap_or_default();
    let mut what = vec![format!(
        "version {} (arguments validated against {})",
        spec.version.as_deref().unwrap_or("newest"),
        declaration.validated_version
    )];
    if let Some(clusters) = &spec.clusters {
        what.push(format!("clusters {}", clusters.join(", ")));
    }
    if let Some(selector) = &spec.cluster_selector {
        let labels: Vec<String> = selector
            .match_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        what.push(if labels.is_empty() {
            "every cluster".to_owned()
        } else {
            format!("clusters labelled {}", labels.join(","))
        });
    }
    if let Some(drift) = &spec.drift {
        what.push(format!(
            "drift {}",
            json!(drift.policy).as_str().unwrap_or_default()
        ));
    }
    if spec.suspend {
        what.push("suspended".to_owned());
    }
    let mut out = printer.stdout();
    writeln!(
        out,
        "Addon `{name}` written in namespace `{}`: {}",
        ctx.namespace,
        what.join(", ")
    )?;
    if let Some(secret) = &written.secret {
        writeln!(
            out,
            "secret parameters {} written to Secret `{secret}` and referenced from `secretParameters` (their values are not in the Addon)",
            declaration
                .secret_parameters()
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    } else if written.secret_deleted {
        writeln!(
            out,
            "Secret `{}{name}` deleted: no secret parameters are declared now",
            declare::SECRET_PREFIX
        )?;
    }
    writeln!(
        out,
        "the controller applies it; `addonctl status {name}` shows its conditions"
    )?;
    Ok(())
}

/// `disable --declarative`: deletes the `Addon` (and its secret-parameter Secret); the
/// controller's finalizer then disables the addon. `--wait`: until the `Addon` is gone.
pub async fn disable(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: DisableArgs,
) -> anyhow::Result<ExitCode> {
    let ctx = connect(global, cluster, printer, false).await?;
    let session = Session::new(ctx, None, Arc::new(printer));
    let ns = session.ctx().namespace.clone();
    let name = args.addon.as_str();
    addonctl::ops::declare::undeclare(
        &session,
        name,
        args.dry_run,
        args.wait.then_some(args.timeout),
    )
    .await
    .map_err(reported)?;
    let document = json!({"name": name, "namespace": ns, "deleted": !args.dry_run});
    if args.dry_run {
        if !printer.structured(&document, args.output)? {
            writeln!(
                printer.stdout(),
                "Addon `{name}` would be deleted (the controller would then disable the addon)\n# dry run: nothing was changed"
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if printer.structured(&document, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        printer.stdout(),
        "Addon `{name}` deleted{}: the controller disables the addon (a refused disable shows as `DisableRefused` on the Addon, which stays until it succeeds)",
        if args.wait { " and gone" } else { "" }
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The `Addon` of `name` for `status` (no CRD, no permission or a failed read: none, logged).
pub(crate) async fn declared_for_status(ctx: &Context, name: &str) -> Option<Addon> {
    match declare::find(&ctx.cluster, &ctx.namespace, name).await {
        Ok(found) => found,
        Err(e) if e.is_forbidden() => {
            tracing::debug!("cannot read the `Addon` `{name}`: {e}");
            None
        }
        Err(e) => {
            tracing::warn!("cannot read the `Addon` `{name}`: {e}");
            None
        }
    }
}

/// The names of the addons `Addon`s declare, for `list` (no CRD or no permission: none).
pub(crate) async fn declared_names(ctx: &Context) -> std::collections::BTreeSet<String> {
    match declare::list(&ctx.cluster, &ctx.namespace).await {
        Ok(addons) => addons.into_iter().filter_map(|a| a.metadata.name).collect(),
        Err(e) => {
            tracing::debug!("cannot list `Addon`s: {e}");
            std::collections::BTreeSet::new()
        }
    }
}

/// `value` with `declared` set (for `list -o json`).
pub(crate) fn mark_declared(mut value: Value, declared: bool) -> Value {
    if let Some(map) = value.as_object_mut() {
        map.insert("declared".into(), Value::Bool(declared));
    }
    value
}
