//! `enable`, `disable`, `status`, `list`, `upgrade`: the commands that talk to the control plane.

use std::io::{IsTerminal as _, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use addonctl::cluster::{Cluster, ConnectOptions};
use addonctl::manage::{self, Catalog, Context, Reporter};
use addonctl::render::output::{format_objects, Format};
use addonctl::render::Renderer;

use crate::cli::args::{
    ClusterCommand, DisableArgs, EnableArgs, Engine, GlobalArgs, ListArgs, ObjectFormat, RbacArgs,
    ReportFormat, StatusArgs, UpgradeArgs,
};
use crate::cli::commands::render::collect_args;

/// Progress lines on stderr (hidden with `-q`).
struct StderrReporter {
    quiet: bool,
}

impl Reporter for StderrReporter {
    fn step(&self, message: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr(), "  {message}");
        }
    }
}

/// Connects to the control plane (with the request timeout, and "still waiting" lines on stderr
/// unless `-q`).
pub async fn control_plane(global: &GlobalArgs) -> anyhow::Result<Cluster> {
    let cluster = Cluster::connect(&ConnectOptions {
        kubeconfig: global.kubeconfig.clone(),
        context: global.context.clone(),
        timeout: Some(global.request_timeout()?),
    })
    .await
    .map_err(addonctl::Error::from)?;
    // Managed clusters' clients take the same limit and hook (see `Cluster::managed`).
    cluster.set_rate_limit(global.rate_limit()?);
    if !global.quiet {
        cluster.set_notice(std::sync::Arc::new(|line: &str| {
            let _ = writeln!(std::io::stderr(), "  {line}");
        }));
    }
    Ok(cluster)
}

/// The context of a command; `registries`: whether it reads registries at all (commands that
/// need none never read the stored ones, so they neither wait for nor warn about them).
async fn context(global: &GlobalArgs, registries: bool) -> anyhow::Result<Context> {
    let cluster = control_plane(global).await?;
    let catalog = if registries {
        catalog(global, &cluster).await?
    } else {
        Catalog::new(&global.registry_dirs).map_err(addonctl::Error::from)?
    };
    Ok(Context {
        cluster,
        namespace: global.system_namespace.clone(),
        catalog,
        renderer: Renderer::with_limits(global.limits()?),
        engine: match global.engine {
            Engine::Auto => manage::EngineChoice::Auto,
            Engine::Vela => manage::EngineChoice::Vela,
            Engine::Direct => manage::EngineChoice::Direct,
        },
        lock: manage::LockOptions::default(),
    })
}

/// Control plane first: refuses, naming every missing permission, before a writing command reads
/// or plans anything (the full check, with every object of the plan, runs before the first write).
async fn check_addon_state(ctx: &Context, command: &str) -> anyhow::Result<()> {
    let served = ctx.engine != manage::EngineChoice::Direct
        && ctx.cluster.serves(&manage::application_gvk()).await?;
    manage::access::check(
        &ctx.cluster,
        command,
        &manage::access::addon_state(&ctx.namespace, served),
    )
    .await?;
    Ok(())
}

/// The lock options of a writing command.
fn lock_options(command: &str, force: bool) -> manage::LockOptions {
    manage::LockOptions {
        holder: manage::lease::holder_identity(command),
        force,
    }
}

/// The registries in search order: `--registry-dir` directories, the stored registries
/// (ConfigMap `vela-addon-registry`; priority, then order of addition), the built-in one last.
/// A stored registry that cannot be opened is a warning, not a silent omission.
async fn catalog(global: &GlobalArgs, cluster: &Cluster) -> anyhow::Result<Catalog> {
    let store = addonctl::registry::Store::Cluster {
        cluster: cluster.clone(),
        namespace: global.system_namespace.clone(),
    };
    let stored = match store.load().await {
        Ok(stored) => stored,
        // The control plane itself does not answer: every later request would wait as long.
        Err(e @ addonctl::Error::Cluster(addonctl::cluster::Error::Unreachable { .. })) => {
            return Err(e.into());
        }
        Err(e) => {
            let hint = match &e {
                addonctl::Error::Cluster(addonctl::cluster::Error::Forbidden { .. }) => {
                    " (reading them needs `get` on ConfigMap `vela-addon-registry` and its Secrets in the system namespace: ClusterRole `addonctl-viewer`, see `addonctl rbac`)"
                }
                _ => "",
            };
            tracing::warn!(
                "the stored registries cannot be read ({e}){hint}; using the built-in registry only"
            );
            Vec::new()
        }
    };
    let options = addonctl::source::OpenOptions {
        cache: addonctl::source::cache::CacheOptions {
            refresh: global.refresh,
            ..addonctl::source::cache::CacheOptions::default()
        },
        http: addonctl::source::http::HttpOptions::from_env(),
    };
    let (catalog, failures) = Catalog::with_stored(&global.registry_dirs, &stored, &options)
        .map_err(addonctl::Error::from)?;
    for e in failures {
        tracing::warn!("{e}");
    }
    Ok(catalog)
}

fn print_structured<T: Serialize>(value: &T, format: ReportFormat) -> anyhow::Result<bool> {
    let mut stdout = std::io::stdout().lock();
    match format {
        ReportFormat::Json => writeln!(stdout, "{}", serde_json::to_string_pretty(value)?)?,
        ReportFormat::Yaml => write!(
            stdout,
            "{}",
            addonctl::yaml::to_string(&serde_json::to_value(value)?)?
        )?,
        ReportFormat::Text => return Ok(false),
    }
    Ok(true)
}

async fn root_schema(
    ctx: &Context,
    reference: &str,
    version: Option<&str>,
) -> anyhow::Result<addonctl::params::ParameterSchema> {
    let package = if std::path::Path::new(reference).is_dir() {
        let located = addonctl::loader::locate(reference, version).await?;
        addonctl::loader::load(located.reader.as_ref(), &located.addon)
            .await
            .map_err(addonctl::Error::from)?
    } else {
        let found = (ctx.catalog.find(reference, version, None, None).await)
            .map_err(addonctl::Error::from)?;
        addonctl::loader::load(found.reader.as_ref(), &found.addon)
            .await
            .map_err(addonctl::Error::from)?
    };
    Ok(ctx
        .renderer
        .parameter_schema(&package)
        .map_err(addonctl::Error::from)?)
}

/// On a terminal: the objects the plan would adopt, and the person's y/N. Without any, `false`
/// (nothing to consent to); declined: an error naming `--adopt`.
async fn confirm_adoptions(ctx: &Context, plan: &manage::Plan) -> anyhow::Result<bool> {
    let adoptions: Vec<String> = manage::review::review(ctx, plan)
        .await?
        .into_iter()
        .filter(|f| f.kind == manage::protect::FlagKind::Adopts)
        .map(|f| format!("addon `{}`: {}", f.addon, f.object))
        .collect();
    if adoptions.is_empty() {
        return Ok(false);
    }
    let mut stderr = std::io::stderr().lock();
    writeln!(
        stderr,
        "these objects exist and addonctl did not create them; enabling adopts them (overwrites their fields; `disable` gives them back):"
    )?;
    for adoption in &adoptions {
        writeln!(stderr, "  {adoption}")?;
    }
    write!(stderr, "adopt them? [y/N] ")?;
    stderr.flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(true)
    } else {
        Err(crate::cli::diagnostics::user(
            "not adopted: nothing was changed (pass `--adopt` to adopt them without asking)",
        ))
    }
}

/// `enable`.
pub async fn enable(global: &GlobalArgs, args: EnableArgs) -> anyhow::Result<ExitCode> {
    let mut ctx = context(global, true).await?;
    ctx.lock = lock_options(&format!("enable {}", args.addon), args.lock.force_unlock);
    if !args.dry_run {
        check_addon_state(&ctx, &format!("`addonctl enable {}`", args.addon)).await?;
    }
    let schema = root_schema(&ctx, &args.addon, args.version.as_deref()).await?;
    let mut given = collect_args(&schema, &args.parameters)?;
    if let Some(clusters) = &args.clusters {
        given.insert("clusters".into(), json!(clusters));
    }
    let request = manage::EnableRequest {
        reference: args.addon.clone(),
        version: args.version.clone(),
        args: given,
        skip_version_check: args.skip_version_check,
        override_definitions: args.override_definitions,
        adopt: args.adopt,
        skip_api_check: args.skip_api_check,
    };
    let mut plan = manage::plan(&ctx, &request, false).await?;
    plan.dependency_timeout =
        (args.dependency_timeout > 0).then(|| Duration::from_secs(args.dependency_timeout));
    if args.dry_run {
        return print_plan(&ctx, &plan, &args).await;
    }
    let reporter = StderrReporter {
        quiet: global.quiet,
    };
    for note in &plan.notes {
        reporter.step(&format!("note: {note}"));
    }
    for flag in plan
        .steps
        .iter()
        .filter(|s| s.action != manage::Action::Keep)
        .flat_map(|s| manage::review::step_flags(s, &ctx.namespace))
    {
        reporter.step(&format!("flagged: {flag}"));
    }
    if !args.adopt && std::io::stdin().is_terminal() {
        plan.adopt = confirm_adoptions(&ctx, &plan).await?;
    }
    for kept in &plan.kept {
        reporter.step(&format!(
            "keeping `{}` {} (installed; needed by {})",
            kept.name,
            kept.version,
            kept.needed_by.join(", ")
        ));
    }
    let reports = manage::execute(&ctx, &plan, args.override_definitions, &reporter).await?;
    tracing::info!(
        requests = ctx.cluster.counters().requests(),
        writes = ctx.cluster.counters().writes(),
        "API calls made by enable"
    );
    let root = plan
        .steps
        .last()
        .map(|s| s.rendered.name.clone())
        .unwrap_or_default();
    if args.wait {
        manage::wait::until_enabled(&ctx, &root, Duration::from_secs(args.timeout), &reporter)
            .await?;
    }
    if !print_structured(&reports, args.output)? {
        let mut stdout = std::io::stdout().lock();
        for report in &reports {
            let verb = match report.action {
                manage::Action::Install => "installed",
                manage::Action::Upgrade if report.unchanged() => "unchanged",
                manage::Action::Upgrade => "updated",
                manage::Action::Keep => "kept (already installed)",
            };
            let changed = match (report.action, report.changed.len()) {
                (manage::Action::Upgrade, 0) => ", none changed".to_owned(),
                (manage::Action::Upgrade, n) => format!(" ({n} changed)"),
                _ => String::new(),
            };
            writeln!(
                stdout,
                "addon `{}` {} {verb}: {} control-plane objects applied{changed}",
                report.name,
                report.version,
                report.applied.len()
            )?;
            for deleted in &report.deleted {
                writeln!(stdout, "  deleted {deleted}")?;
            }
            for note in &report.notes {
                writeln!(stdout, "  note: {note}")?;
            }
            if report.engine == manage::EngineChoice::Direct {
                let names: Vec<String> = report
                    .clusters
                    .iter()
                    .map(|c| format!("`{}`", c.cluster))
                    .collect();
                writeln!(
                    stdout,
                    "  deployed by addonctl (direct engine) to {} cluster{}: {}",
                    names.len(),
                    if names.len() == 1 { "" } else { "s" },
                    names.join(", ")
                )?;
            }
        }
        if let Some(notes) = reports.last().and_then(|r| r.addon_notes.as_ref()) {
            writeln!(stdout, "\n{}", notes.trim_end())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn print_plan(
    ctx: &Context,
    plan: &manage::Plan,
    args: &EnableArgs,
) -> anyhow::Result<ExitCode> {
    let conflicts = if args.override_definitions {
        Vec::new()
    } else {
        manage::definition_conflicts(ctx, plan).await?
    };
    let steps: Vec<Value> = plan
        .steps
        .iter()
        .map(|s| {
            let objects = if args.show_secrets {
                s.rendered.objects()
            } else {
                s.rendered.masked_objects()
            };
            json!({
                "name": s.rendered.name,
                "version": s.rendered.version,
                "registry": s.rendered.registry,
                "action": s.action,
                "installedBy": s.installed_by,
                "layer": s.layer,
                "clusters": s.clusters,
                "dependsOn": s.depends_on,
                "neededBy": s.needed_by,
                "objects": objects,
            })
        })
        .collect();
    let flags = manage::review::review(ctx, plan).await?;
    let document = json!({
        "plan": steps,
        "kept": plan.kept,
        "notes": plan.notes,
        "conflicts": conflicts,
        "flags": flags,
    });
    if print_structured(&document, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "{:<4} {:<5} {:<24} {:<12} {:<10} {:<9} {:<10} {:<20} NEEDED BY",
        "STEP", "LAYER", "ADDON", "VERSION", "REGISTRY", "ACTION", "REASON", "CLUSTERS"
    )?;
    let rows = plan.steps.iter().map(|s| {
        (
            Some(s.layer),
            s.rendered.name.as_str(),
            s.rendered.version.as_str(),
            s.rendered.registry.as_str(),
            json!(s.action)
                .as_str()
                .map(str::to_owned)
                .unwrap_or_default(),
            json!(s.installed_by)
                .as_str()
                .map(str::to_owned)
                .unwrap_or_default(),
            s.clusters
                .as_ref()
                .map_or_else(|| "(topology)".to_owned(), |c| c.join(",")),
            &s.needed_by,
        )
    });
    let kept = plan.kept.iter().map(|k| {
        (
            None,
            k.name.as_str(),
            k.version.as_str(),
            k.registry.as_str(),
            "keep".to_owned(),
            json!(k.installed_by)
                .as_str()
                .map(str::to_owned)
                .unwrap_or_default(),
            "-".to_owned(),
            &k.needed_by,
        )
    });
    for (i, (layer, name, version, registry, action, reason, clusters, needed_by)) in
        kept.chain(rows).enumerate()
    {
        writeln!(
            stdout,
            "{:<4} {:<5} {name:<24} {version:<12} {registry:<10} {action:<9} {reason:<10} {clusters:<20} {}",
            i + 1,
            layer.map_or_else(|| "-".to_owned(), |l| l.to_string()),
            if needed_by.is_empty() {
                "-".to_owned()
            } else {
                needed_by.join(",")
            }
        )?;
    }
    for note in &plan.notes {
        writeln!(stdout, "note: {note}")?;
    }
    for conflict in &conflicts {
        writeln!(stdout, "conflict: {conflict}")?;
    }
    for flag in &flags {
        let kind = json!(flag.kind)
            .as_str()
            .map(str::to_owned)
            .unwrap_or_default();
        writeln!(stdout, "flagged ({kind}): {flag}")?;
    }
    for s in &plan.steps {
        let objects = if args.show_secrets {
            s.rendered.objects()
        } else {
            s.rendered.masked_objects()
        };
        write!(stdout, "{}", format_objects(&objects, Format::Yaml)?)?;
    }
    writeln!(stdout, "# dry run: nothing was changed")?;
    Ok(ExitCode::SUCCESS)
}

/// `disable`.
pub async fn disable(global: &GlobalArgs, args: DisableArgs) -> anyhow::Result<ExitCode> {
    let mut ctx = context(global, false).await?;
    ctx.lock = lock_options(&format!("disable {}", args.addon), args.lock.force_unlock);
    let reporter = StderrReporter {
        quiet: global.quiet,
    };
    let options = manage::DisableOptions {
        force: args.force,
        prune_dependencies: args.prune_dependencies,
        dry_run: args.dry_run,
    };
    // The library checks permissions and takes the locks (none for a dry run).
    let reports = manage::disable_all_with(&ctx, &args.addon, &options, &reporter).await?;
    if args.wait {
        let started = Instant::now();
        loop {
            let left = manage::installed(&ctx).await?;
            if !reports.iter().any(|r| left.contains_key(&r.name)) {
                break;
            }
            if started.elapsed() > Duration::from_secs(args.timeout) {
                anyhow::bail!(
                    "addon `{}` is still present after {}s",
                    args.addon,
                    args.timeout
                );
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    // The addon's report, with the dependencies pruned after it under `pruned`.
    let mut document = reports
        .first()
        .map(serde_json::to_value)
        .transpose()?
        .unwrap_or(Value::Null);
    if let Some(map) = document.as_object_mut() {
        map.insert(
            "pruned".into(),
            serde_json::to_value(reports.get(1..).unwrap_or_default())?,
        );
    }
    if print_structured(&document, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = std::io::stdout().lock();
    for (i, report) in reports.iter().enumerate() {
        let what = if i == 0 {
            ""
        } else {
            " (a dependency nothing needs any more)"
        };
        if args.dry_run {
            writeln!(
                stdout,
                "addon `{}`{what} would be disabled: {} objects would be deleted",
                report.name,
                report.deleted.len()
            )?;
        } else {
            writeln!(
                stdout,
                "addon `{}` disabled{what}: {} objects deleted",
                report.name,
                report.deleted.len()
            )?;
        }
        print_removal(
            &mut stdout,
            args.dry_run,
            &report.deleted,
            &report.given_back,
            &report.kept,
        )?;
    }
    if args.dry_run {
        writeln!(stdout, "# dry run: nothing was changed")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The lines of a removal: every deletion, give-back and kept object (with its reason).
fn print_removal(
    out: &mut impl Write,
    dry_run: bool,
    deleted: &[manage::deletion::Entry],
    given_back: &[manage::deletion::Entry],
    kept: &[manage::deletion::Entry],
) -> std::io::Result<()> {
    let (delete, give) = if dry_run {
        ("would delete", "would give back")
    } else {
        ("deleted", "gave back")
    };
    for entry in deleted {
        writeln!(out, "  {delete} {entry}")?;
    }
    for entry in given_back {
        writeln!(
            out,
            "  {give} {entry} (adopted: addonctl's fields removed, the object stays)"
        )?;
    }
    for entry in kept {
        writeln!(out, "  kept {entry}")?;
    }
    Ok(())
}

/// `status`.
pub async fn status(global: &GlobalArgs, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let ctx = context(global, args.detail).await?;
    let status = manage::status(&ctx, &args.addon, args.detail).await?;
    if print_structured(&status, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "addon:     {}", status.name)?;
    writeln!(out, "phase:     {}", status.phase)?;
    if let Some(v) = &status.version {
        writeln!(out, "version:   {v}")?;
    }
    if let Some(r) = &status.registry {
        writeln!(out, "registry:  {r}")?;
    }
    if !status.clusters.is_empty() {
        let clusters = if status.clusters == ["*"] {
            "all clusters".to_owned()
        } else {
            status.clusters.join(", ")
        };
        writeln!(out, "clusters:  {clusters}")?;
    }
    if let Some(by) = status.installed_by {
        writeln!(
            out,
            "installed: by {}",
            json!(by).as_str().unwrap_or_default()
        )?;
    }
    if let Some(reason) = &status.reason {
        writeln!(out, "reason:    {reason}")?;
    }
    for note in &status.notes {
        writeln!(out, "note:      {note}")?;
    }
    if let (Some(total), Some(ready)) = (status.workload_count, status.ready_workload_count) {
        writeln!(out, "workloads: {ready}/{total} ready")?;
    }
    for cluster in &status.resources {
        let (ready, total, missing) = cluster.readiness();
        writeln!(
            out,
            "  cluster {:<16} {} objects{}, {ready}/{total} workloads ready{}",
            cluster.cluster,
            cluster.resources.len(),
            if missing > 0 {
                format!(" ({missing} missing)")
            } else {
                String::new()
            },
            cluster
                .error
                .as_ref()
                .map(|e| format!(", error: {e}"))
                .unwrap_or_default()
        )?;
        if args.detail {
            for r in &cluster.resources {
                let replicas = match (r.ready_replicas, r.replicas) {
                    (Some(ready), Some(desired)) => format!(" {ready}/{desired} ready"),
                    _ => String::new(),
                };
                writeln!(
                    out,
                    "    {} {}{}{}{}",
                    if r.exists { "✔" } else { "✘" },
                    r.kind,
                    r.namespace
                        .as_ref()
                        .map_or_else(|| " ".to_owned(), |n| format!(" {n}/")),
                    r.name,
                    replicas
                )?;
            }
        }
    }
    if args.detail {
        if let Some(d) = &status.description {
            writeln!(out, "description: {d}")?;
        }
        if !status.available_versions.is_empty() {
            writeln!(
                out,
                "available versions: {}",
                status.available_versions.join(", ")
            )?;
        }
        if !status.dependencies.is_empty() {
            writeln!(out, "dependencies:")?;
            for d in &status.dependencies {
                writeln!(
                    out,
                    "  {} {} {}{}",
                    if d.satisfied { "✔" } else { "✘" },
                    d.name,
                    d.constraint.as_deref().unwrap_or("*"),
                    d.installed.as_ref().map_or_else(
                        || " (not installed)".to_owned(),
                        |v| format!(" (installed {v})")
                    )
                )?;
            }
        }
        if !status.parameters.is_empty() {
            writeln!(out, "parameters:")?;
            writeln!(
                out,
                "  {:<24} {:<24} {:<24} DESCRIPTION",
                "NAME", "VALUE", "DEFAULT"
            )?;
            for p in &status.parameters {
                let show = |v: &Option<Value>| {
                    v.as_ref()
                        .map_or_else(|| "-".to_owned(), ToString::to_string)
                };
                writeln!(
                    out,
                    "  {:<24} {:<24} {:<24} {}",
                    p.name,
                    show(&p.value),
                    show(&p.default),
                    p.description.as_deref().unwrap_or("")
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `list`.
pub async fn list(global: &GlobalArgs, args: ListArgs) -> anyhow::Result<ExitCode> {
    let ctx = context(global, true).await?;
    let (rows, warnings) = manage::list(&ctx, args.registry.as_deref()).await?;
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    if print_structured(&json!({"addons": rows, "warnings": warnings}), args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<24} {:<10} {:<20} {:<20} DESCRIPTION",
        "NAME", "REGISTRY", "AVAILABLE-VERSIONS", "STATUS"
    )?;
    for row in rows {
        let mut description = row.description.clone();
        if description.chars().count() > 60 {
            description = description.chars().take(57).collect::<String>() + "...";
        }
        writeln!(
            out,
            "{:<24} {:<10} {:<20} {:<20} {description}",
            row.name,
            row.registry,
            row.available_versions.join(","),
            row.status
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `upgrade`.
pub async fn upgrade(global: &GlobalArgs, args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    let mut ctx = context(global, true).await?;
    ctx.lock = lock_options(&format!("upgrade {}", args.addon), args.lock.force_unlock);
    check_addon_state(&ctx, &format!("`addonctl upgrade {}`", args.addon)).await?;
    let installed = manage::installed(&ctx).await?;
    let Some(current) = installed.get(&args.addon) else {
        return Err(crate::cli::diagnostics::user(format!(
            "addon `{}` is not enabled; use `addonctl enable {}`",
            args.addon, args.addon
        )));
    };
    let version = args
        .version
        .clone()
        .or_else(|| (!args.latest).then(|| current.version.clone()));
    let schema = root_schema(&ctx, &args.addon, version.as_deref()).await?;
    let given = collect_args(&schema, &args.parameters)?;
    let request = manage::UpgradeRequest {
        name: args.addon.clone(),
        version: args.version.clone(),
        latest: args.latest,
        args: given,
        skip_version_check: args.skip_version_check,
        override_definitions: args.override_definitions,
        adopt: args.adopt,
        skip_api_check: args.skip_api_check,
    };
    let reporter = StderrReporter {
        quiet: global.quiet,
    };
    let reports = manage::upgrade(&ctx, &request, &reporter).await?;
    if !print_structured(&reports, args.output)? {
        let mut stdout = std::io::stdout().lock();
        for report in &reports {
            writeln!(
                stdout,
                "addon `{}` {}: {} objects applied, {} deleted",
                report.name,
                report.version,
                report.applied.len(),
                report.deleted.len()
            )?;
            for deleted in &report.deleted {
                writeln!(stdout, "  deleted {deleted}")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `cluster join | list | detach | labels`.
pub async fn cluster(global: &GlobalArgs, command: ClusterCommand) -> anyhow::Result<ExitCode> {
    let ctx = context(global, false).await?;
    let writing = match &command {
        ClusterCommand::Join { name, .. } => Some(format!("`addonctl cluster join {name}`")),
        ClusterCommand::Labels { name, .. } => Some(format!("`addonctl cluster labels {name}`")),
        // Detach checks its own permissions in the library (none for a dry run).
        ClusterCommand::Detach { .. } | ClusterCommand::List { .. } => None,
    };
    if let Some(command) = writing {
        manage::access::check(
            &ctx.cluster,
            &command,
            &manage::access::cluster_state(&ctx.namespace),
        )
        .await?;
    }
    let mut out = std::io::stdout().lock();
    match command {
        ClusterCommand::Join {
            name,
            from_kubeconfig,
            from_context,
            labels,
            output,
        } => {
            let labels = manage::clusters::parse_labels(&labels)?;
            let row = manage::clusters::join(
                &ctx,
                &name,
                &from_kubeconfig,
                from_context.as_deref(),
                &labels,
            )
            .await?;
            if !print_structured(&row, output)? {
                writeln!(
                    out,
                    "cluster `{}` joined: {} (Kubernetes {})",
                    row.name, row.endpoint, row.version
                )?;
            }
        }
        ClusterCommand::List { output } => {
            let rows = manage::clusters::list(&ctx).await?;
            if !print_structured(&rows, output)? {
                writeln!(
                    out,
                    "{:<16} {:<32} {:<20} {:<10} {:<10} LABELS",
                    "NAME", "ENDPOINT", "CREDENTIAL", "REACHABLE", "VERSION"
                )?;
                for row in rows {
                    let labels: Vec<String> =
                        row.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    let credential = row
                        .credential_type
                        .map_or_else(|| "-".to_owned(), |c| format!("{c:?}"));
                    let version = if row.reachable {
                        row.version.clone()
                    } else {
                        "-".to_owned()
                    };
                    writeln!(
                        out,
                        "{:<16} {:<32} {:<20} {:<10} {:<10} {}",
                        row.name,
                        row.endpoint,
                        credential,
                        if row.reachable { "yes" } else { "no" },
                        version,
                        labels.join(",")
                    )?;
                    if !row.reachable {
                        writeln!(out, "  unreachable: {}", row.version)?;
                    }
                }
            }
        }
        ClusterCommand::Detach {
            name,
            force,
            dry_run,
            output,
        } => {
            // The library checks permissions and takes the locks (none for a dry run).
            let mut ctx = ctx;
            ctx.lock = lock_options(&format!("cluster detach {name}"), false);
            let report = manage::clusters::detach(&ctx, &name, force, dry_run).await?;
            if !print_structured(&report, output)? {
                if dry_run {
                    writeln!(out, "cluster `{name}` would be detached")?;
                } else {
                    writeln!(out, "cluster `{name}` detached")?;
                }
                for line in &report.addons {
                    writeln!(out, "  {line}")?;
                }
                print_removal(
                    &mut out,
                    dry_run,
                    &report.deleted,
                    &report.given_back,
                    &report.kept,
                )?;
                if dry_run {
                    writeln!(out, "# dry run: nothing was changed")?;
                }
            }
        }
        ClusterCommand::Labels { name, labels } => {
            let labels = manage::clusters::parse_labels(&labels)?;
            manage::clusters::set_labels(&ctx, &name, &labels).await?;
            writeln!(out, "cluster `{name}` labels set")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `rbac`: the shipped ClusterRoles.
pub fn rbac(args: &RbacArgs) -> anyhow::Result<ExitCode> {
    let roles = manage::access::roles();
    let mut stdout = std::io::stdout().lock();
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
