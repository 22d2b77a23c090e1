//! `addonctl status`: an addon's phase, version, clusters and objects (`✓` ready, `~` there but
//! not ready, `✗` missing); `-v` adds what the registries say; `--watch` keeps watching.

use std::io::{IsTerminal as _, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use std::sync::Arc;

use addonctl::context::Session;
use addonctl::ops::status::{
    cluster_readiness, ClusterStatus, ParameterStatus, Phase, ResourceState, Status, StatusRequest,
};

use super::wait::seconds;
use crate::cli::args::{ReportFormat, StatusArgs};
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// `status`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: StatusArgs,
) -> anyhow::Result<ExitCode> {
    let ctx = connect(global, cluster, printer, args.detail).await?;
    let session = Session::new(ctx, None, Arc::new(printer));
    if args.watch {
        return watch(&session, printer, &args).await;
    }
    let request = StatusRequest {
        addon: args.addon.clone(),
        detail: args.detail,
    };
    let status = addonctl::ops::status::status(&session, &request).await?;
    let resource = super::declare::declared_for_status(session.ctx(), &args.addon).await;
    let soak_left = resource.as_ref().and_then(soak_left);
    let declared = resource
        .map(|a| addonctl::declare::declared::declared(&a, k8s_openapi::chrono::Utc::now()));
    if status.phase == Phase::Disabled && status.installed_version.is_none() && declared.is_none() {
        refuse_unknown(global, &session, &args.addon, args.detail).await?;
    }
    let mut document = serde_json::to_value(&status)?;
    if let (Some(map), Some(block)) = (document.as_object_mut(), &declared) {
        let mut block = serde_json::to_value(block)?;
        if let (Some(block), Some(left)) = (block.as_object_mut(), soak_left) {
            block.insert("soakRemainingSeconds".into(), left.into());
        }
        map.insert("addon".into(), block);
    }
    if printer.structured(&document, args.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = printer.stdout();
    print_status(&mut out, &status)?;
    if let Some(block) = &declared {
        print_declared(&mut out, block, soak_left)?;
    }
    if args.detail {
        print_detail(&mut out, &status)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses (exit 2, with a did-you-mean) the status of an addon that is not installed and that
/// no registry has: a typo, not a disabled addon.
async fn refuse_unknown(
    global: &GlobalSettings,
    session: &Session,
    name: &str,
    registries_read: bool,
) -> anyhow::Result<()> {
    let ctx = session.ctx();
    let read;
    let catalog = if registries_read {
        &ctx.catalog
    } else {
        read = crate::cli::settings::catalog(global, &ctx.cluster).await?;
        &read
    };
    if catalog.names().await.iter().any(|n| n == name) {
        return Ok(());
    }
    let installed = addonctl::ops::status::installed_names(session).await;
    Err(super::unknown_addon(catalog, name, &installed).await)
}

/// The soak time left in the current batch of the `Addon`'s rollout, in seconds, while one is
/// under way and every cluster of the batch is healthy (soaking).
fn soak_left(addon: &addonctl::controller::crd::Addon) -> Option<u64> {
    let report = addonctl::controller::control::report(addon);
    (report.phase == Some(addonctl::controller::crd::RolloutPhase::Progressing))
        .then_some(report.soak_remaining_seconds)
        .flatten()
        .filter(|&left| left > 0)
}

/// The "Declared by Addon resource" block: generations, drift policy, rollout stage (and the
/// soak time left), then one line per condition.
fn print_declared(
    out: &mut impl Write,
    block: &addonctl::declare::declared::Declared,
    soak_left: Option<u64>,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "Declared by Addon resource `{}/{}`:",
        block.namespace, block.name
    )?;
    let generation = |g: Option<i64>| g.map_or_else(|| "-".to_owned(), |g| g.to_string());
    writeln!(
        out,
        "  generation {}, observed {}{}",
        generation(block.generation),
        generation(block.observed_generation),
        if block.stale {
            " (stale: the controller has not seen the latest spec)"
        } else {
            ""
        }
    )?;
    let mut facts = vec![format!(
        "drift policy {}",
        json!(block.drift_policy).as_str().unwrap_or_default()
    )];
    if let Some(version) = &block.version {
        facts.push(format!("version {version}"));
    }
    if let Some(stage) = &block.rollout_stage {
        match soak_left {
            Some(left) => facts.push(format!("rollout stage {stage} (soaking, {left} s left)")),
            None => facts.push(format!("rollout stage {stage}")),
        }
    }
    if let Some(summary) = &block.cluster_summary {
        facts.push(format!("clusters healthy {summary}"));
    }
    if block.suspended {
        facts.push("suspended".to_owned());
    }
    writeln!(out, "  {}", facts.join(", "))?;
    if block.conditions.is_empty() {
        writeln!(
            out,
            "  no conditions yet: the controller has not reconciled it"
        )?;
    } else {
        writeln!(
            out,
            "  {:<12} {:<7} {:<22} {:<5} MESSAGE",
            "CONDITION", "STATUS", "REASON", "AGE"
        )?;
    }
    for c in &block.conditions {
        writeln!(
            out,
            "  {:<12} {:<7} {:<22} {:<5} {}",
            c.type_,
            c.status,
            c.reason,
            c.age.as_deref().unwrap_or("-"),
            c.message
        )?;
    }
    if let Some(error) = &block.last_error {
        writeln!(
            out,
            "  last error ({} in a row): {error}",
            block.consecutive_failures
        )?;
    }
    Ok(())
}

/// The text of `status`: the addon, then each cluster and its objects.
pub(crate) fn print_status(out: &mut impl Write, status: &Status) -> anyhow::Result<()> {
    writeln!(out, "addon:     {}", status.name)?;
    writeln!(out, "phase:     {}", status.phase)?;
    if let Some(v) = &status.installed_version {
        writeln!(out, "version:   {v}")?;
    }
    if let Some(r) = &status.registry {
        writeln!(out, "registry:  {r}")?;
    }
    if let Some(source) = &status.source {
        writeln!(
            out,
            "source:    {}@{}",
            source.reference, source.manifest_digest
        )?;
        writeln!(out, "verified:  {}", source.verification.describe())?;
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
        print_cluster(out, cluster, status.installed_version.as_deref())?;
    }
    Ok(())
}

/// One cluster of `status`: its counts (and its version when it is not the addon's), then each
/// object marked `✓` ready, `~` there but not ready, or `✗` missing.
fn print_cluster(
    out: &mut impl Write,
    cluster: &ClusterStatus,
    version: Option<&str>,
) -> anyhow::Result<()> {
    let (ready, total, missing) = cluster.readiness();
    let behind = cluster
        .version
        .as_deref()
        .filter(|v| Some(*v) != version)
        .map(|v| format!(" (at {v})"))
        .unwrap_or_default();
    writeln!(
        out,
        "  cluster {:<16}{behind} {}{}, {ready}/{total} workloads ready{}",
        cluster.cluster,
        super::counted(cluster.resources.len(), "object"),
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
    if let Some(parameters) = &cluster.parameters {
        writeln!(out, "    overrides: {}", assignments(parameters).join(", "))?;
    }
    for r in &cluster.resources {
        let replicas = match (r.ready_replicas, r.replicas) {
            (Some(ready), Some(desired)) => format!(" {ready}/{desired} ready"),
            _ => String::new(),
        };
        let (mark, word) = match r.state {
            ResourceState::Ready => ("✓", ""),
            ResourceState::NotReady => ("~", " (not ready)"),
            ResourceState::Missing => ("✗", " (missing)"),
        };
        writeln!(
            out,
            "    {mark} {}{}{}{replicas}{word}",
            r.kind,
            r.namespace
                .as_ref()
                .map_or_else(|| " ".to_owned(), |n| format!(" {n}/")),
            r.name,
        )?;
    }
    Ok(())
}

/// `status -v`'s sections: description, versions, dependencies and parameters.
fn print_detail(out: &mut impl Write, status: &Status) -> anyhow::Result<()> {
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
        write!(out, "{}", parameter_table(&status.parameters))?;
    }
    Ok(())
}

/// The widest a value or default shows in `status -v`'s parameter table; longer ones are cut
/// with `…` (`-o json` has them whole).
const VALUE_CAP: usize = 40;

/// `status -v`'s parameters, indented: NAME, VALUE, DEFAULT, DESCRIPTION, each column as wide as
/// its widest cell (values and defaults at most [`VALUE_CAP`]).
fn parameter_table(parameters: &[ParameterStatus]) -> String {
    let show = |v: &Option<Value>| v.as_ref().map_or_else(String::new, ToString::to_string);
    let rows: Vec<Vec<String>> = parameters
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                show(&p.value),
                show(&p.default),
                p.description.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let table = crate::cli::table::render_capped(
        &["NAME", "VALUE", "DEFAULT", "DESCRIPTION"],
        &rows,
        &[None, Some(VALUE_CAP), Some(VALUE_CAP)],
    );
    let mut out = String::new();
    for line in table.lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `status --watch`: on a terminal the status redrawn at each change; piped, one line per
/// change (`-o json|yaml`: one compact JSON document per change). Ends with exit 0 on Ctrl-C or
/// after `--timeout`.
pub async fn watch(
    session: &Session,
    printer: Printer,
    args: &StatusArgs,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut watch = addonctl::ops::status::watch(session, &args.addon);
    let terminal = std::io::stdout().is_terminal() && args.output == ReportFormat::Text;
    let until = args.timeout.map(|t| tokio::time::Instant::now() + t);
    let stop = async {
        match until {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stop);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            next = watch.next() => {
                let status = next?;
                show(printer, args.output, terminal, started.elapsed(), &status)?;
            }
            _ = &mut ctrl_c => return Ok(ExitCode::SUCCESS),
            () = &mut stop => return Ok(ExitCode::SUCCESS),
        }
    }
}

/// One change of `status --watch`.
fn show(
    printer: Printer,
    output: ReportFormat,
    terminal: bool,
    elapsed: Duration,
    status: &Status,
) -> anyhow::Result<()> {
    let mut out = printer.stdout();
    if output != ReportFormat::Text {
        writeln!(out, "{}", serde_json::to_string(status)?)?;
    } else if terminal {
        // Home, clear the screen, draw again.
        write!(out, "\x1b[H\x1b[2J")?;
        writeln!(
            out,
            "watching `{}` for {} (Ctrl-C to stop)\n",
            status.name,
            seconds(elapsed)
        )?;
        print_status(&mut out, status)?;
    } else {
        let mut line = format!("{:>7} {} {}", seconds(elapsed), status.name, status.phase);
        for cluster in &status.resources {
            line.push_str(&format!(
                "; {}: {}",
                cluster.cluster,
                cluster_readiness(cluster)
            ));
        }
        if let Some(reason) = &status.reason {
            line.push_str(&format!("; reason: {reason}"));
        }
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

/// Parameters as `key=value` assignments, as given on the command line (nested objects by
/// dotted keys, other values as JSON).
fn assignments(parameters: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
    fn walk(path: &str, value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) if !map.is_empty() => {
                for (key, value) in map {
                    walk(&addonctl::params::dotted(path, key), value, out);
                }
            }
            other => out.push(format!("{path}={other}")),
        }
    }
    let mut out = Vec::new();
    for (key, value) in parameters {
        walk(key, value, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_long_default_is_cut_and_the_description_stays_in_its_column() {
        let long = format!("\"{}\"", "d".repeat(120));
        let parameters = vec![
            addonctl::ops::status::ParameterStatus {
                name: "image".into(),
                value: Some(json!("nginx")),
                default: Some(json!("d".repeat(120))),
                description: Some("the image".into()),
            },
            addonctl::ops::status::ParameterStatus {
                name: "replicas".into(),
                value: None,
                default: Some(json!(1)),
                description: Some("how many".into()),
            },
        ];
        let text = super::parameter_table(&parameters);
        let lines: Vec<&str> = text.lines().collect();
        // Where `needle` starts, in characters (`…` is one, of three bytes).
        let column =
            |line: &str, needle: &str| line.find(needle).map(|b| line[..b].chars().count());
        let at = column(lines[0], "DESCRIPTION");
        assert_eq!(column(lines[1], "the image"), at, "{text}");
        assert_eq!(column(lines[2], "how many"), at, "{text}");
        assert!(!text.contains(&long), "{text}");
        assert!(lines[1].contains('…'), "{text}");
        assert!(lines.iter().all(|l| l.starts_with("  ")), "{text}");
        // A parameter without a value shows `-`, as every blank cell.
        let value_at = lines[0].find("VALUE").unwrap();
        assert_eq!(&lines[2][value_at..=value_at], "-", "{text}");
    }

    #[test]
    fn a_soaking_rollout_stage_says_the_time_left() {
        let now_ms = u64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap();
        let addon = |phase: &str, healthy_since: u64| -> addonctl::controller::crd::Addon {
            serde_json::from_value(json!({
                "apiVersion": "addonctl.io/v1alpha1", "kind": "Addon",
                "metadata": {"name": "web", "namespace": "vela-system", "generation": 2},
                "spec": {},
                "status": {
                    "observedGeneration": 2,
                    "rolloutStage": "canary",
                    "rollout": {
                        "version": "1.1.0", "key": "k", "phase": phase, "stage": "canary",
                        "state": {"revision": "1.1.0", "stage": 0, "batch": 0, "phase": "Progressing",
                            "gate": {"startedMs": now_ms - 2_000,
                                     "clusters": {"m1": {"healthySinceMs": healthy_since}}},
                            "done": []},
                        "plan": {"stages": [{"name": "canary", "batches": [["m1"]], "maxFailures": 0,
                            "soakSeconds": 300}], "unselected": [], "progressDeadlineSeconds": 600}
                    }
                }
            }))
            .unwrap()
        };
        let soaking = addon("Progressing", now_ms - 1_000);
        let left = super::soak_left(&soaking).unwrap();
        assert!((298..=300).contains(&left), "{left}");
        let block =
            addonctl::declare::declared::declared(&soaking, k8s_openapi::chrono::Utc::now());
        let mut out = Vec::new();
        super::print_declared(&mut out, &block, Some(left)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(&format!("rollout stage canary (soaking, {left} s left)")),
            "{text}"
        );
        // Once the rollout is over, no soak is said.
        assert_eq!(super::soak_left(&addon("Succeeded", now_ms - 1_000)), None);
    }

    #[test]
    fn overrides_read_as_the_assignments_that_would_set_them() {
        let parameters = json!({"count": 3, "image": {"tag": "v2", "pull": "Always"}, "off": {}});
        let serde_json::Value::Object(parameters) = parameters else {
            unreachable!()
        };
        assert_eq!(
            super::assignments(&parameters),
            [
                "count=3",
                "image.tag=\"v2\"",
                "image.pull=\"Always\"",
                "off={}"
            ]
        );
    }
}
