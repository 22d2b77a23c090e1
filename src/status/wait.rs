//! Waiting for an addon's workloads to become ready: `enable --wait`, and between the layers of
//! a plan applied by the direct engine (a dependency is healthy before what needs it is applied).
//!
//! Expected flow: [`until_enabled`] reads the addon's status every second until its phase is
//! `enabled`, reporting each cluster's readiness when it changes (`m1: 2/3 workloads ready`); it
//! stops with an error when the phase is `failed` (the reason) or when the time is up (every
//! workload not ready yet, per cluster, and the status notes).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::health::{ClusterStatus, ResourceStatus};
use super::{status, Phase};
use crate::context::{Context, Reporter};
use crate::{Error, Result};

/// Waits until `name` is `enabled`; see the module documentation.
pub async fn until_enabled(
    ctx: &Context,
    name: &str,
    timeout: Duration,
    reporter: &dyn Reporter,
) -> Result<()> {
    let started = Instant::now();
    let mut last = None;
    let mut shown: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let status = status(ctx, name, false).await?;
        if status.phase == Phase::Enabled {
            return Ok(());
        }
        if status.phase == Phase::Failed {
            return Err(Error::AddonFailed {
                addon: name.to_owned(),
                reason: status.reason.clone(),
            });
        }
        if last != Some(status.phase) {
            reporter.step(&format!(
                "`{name}` is {}; waiting for {}",
                status.phase,
                Phase::Enabled
            ));
            last = Some(status.phase);
        }
        for cluster in &status.resources {
            let line = cluster_readiness(cluster);
            if shown.get(&cluster.cluster) != Some(&line) {
                reporter.step(&format!("{}: {line}", cluster.cluster));
                shown.insert(cluster.cluster.clone(), line);
            }
        }
        if started.elapsed() > timeout {
            let not_ready: Vec<String> = status
                .resources
                .iter()
                .flat_map(|c| {
                    c.resources
                        .iter()
                        .filter(|r| r.is_workload() && !r.is_ready())
                        .map(|r| format!("{}: {}", c.cluster, workload_readiness(r)))
                })
                .collect();
            let mut why = String::new();
            if !not_ready.is_empty() {
                why = format!("; not ready:\n  {}", not_ready.join("\n  "));
            }
            for note in &status.notes {
                why.push_str("\nnote: ");
                why.push_str(note);
            }
            return Err(Error::NotReady {
                addon: name.to_owned(),
                phase: status.phase.to_string(),
                seconds: timeout.as_secs(),
                wanted: Phase::Enabled.to_string(),
                why,
            });
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `3/3 workloads ready` (and missing objects) for one cluster.
fn cluster_readiness(cluster: &ClusterStatus) -> String {
    let (ready, total, missing) = cluster.readiness();
    let mut line = format!("{ready}/{total} workloads ready");
    if missing > 0 {
        line.push_str(&format!(", {missing} objects missing"));
    }
    if let Some(error) = &cluster.error {
        line.push_str(&format!(", error: {error}"));
    }
    line
}

/// `Deployment ns/name 0/1 ready` (or `missing`).
fn workload_readiness(resource: &ResourceStatus) -> String {
    let name = match &resource.namespace {
        Some(ns) => format!("{} {ns}/{}", resource.kind, resource.name),
        None => format!("{} {}", resource.kind, resource.name),
    };
    if !resource.exists {
        return format!("{name} missing");
    }
    let count = |n: Option<i64>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
    format!(
        "{name} {}/{} ready",
        count(resource.ready_replicas),
        count(resource.replicas)
    )
}
