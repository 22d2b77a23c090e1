//! Waiting for an addon's phase and watching it change: `addonctl wait`, `enable --wait`,
//! `status --watch`, and between the layers of a plan applied by the direct engine (a
//! dependency is healthy before what needs it is applied).
//!
//! Expected flow: a [`Watch`] reads the addon's status ([`super::status()`]) and hands it out
//! when something shown changed (the phase, a cluster's readiness, the reason, the notes);
//! between reads it waits 100 ms, doubling up to 2 s while nothing changes, and back to 100 ms
//! after a change. [`until`] follows a watch until the phase wanted is reached, reporting each
//! change (`m1: 2/3 workloads ready`); it stops with an error when waiting for `enabled` and the
//! phase is `failed` (the reason), or when the time is up (per cluster, every workload not ready
//! yet or every object still there, and the status notes).
//!
//! Guarantees: reads only; every read is bounded by the clusters' request timeout and the whole
//! wait by its own.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::health::{ClusterStatus, ResourceStatus};
use super::{status, Phase, Status};
use crate::context::Reporter;
use crate::state::Store;
use crate::{Error, Result};

/// The pause after a read that showed a change.
pub const FIRST_INTERVAL: Duration = Duration::from_millis(100);
/// The longest pause between two reads.
pub const MAX_INTERVAL: Duration = Duration::from_secs(2);

/// The next pause after `interval` when nothing changed: doubled, at most [`MAX_INTERVAL`].
pub fn backed_off(interval: Duration) -> Duration {
    (interval * 2).min(MAX_INTERVAL)
}

/// What a watch compares between reads: what `status --watch` and the wait's lines show.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shown {
    phase: Phase,
    clusters: Vec<(String, String)>,
    reason: Option<String>,
    notes: Vec<String>,
}

impl Shown {
    fn of(status: &Status) -> Self {
        Shown {
            phase: status.phase,
            clusters: status
                .resources
                .iter()
                .map(|c| (c.cluster.clone(), cluster_readiness(c)))
                .collect(),
            reason: status.reason.clone(),
            notes: status.notes.clone(),
        }
    }
}

/// An addon's status, read again and again with back-off; see the module documentation.
pub struct Watch<'a> {
    store: Store<'a>,
    name: String,
    interval: Duration,
    last: Option<Shown>,
}

impl<'a> Watch<'a> {
    /// A watch of addon `name`; its first [`Watch::next`] reads at once.
    pub fn new(store: Store<'a>, name: &str) -> Self {
        Watch {
            store,
            name: name.to_owned(),
            interval: FIRST_INTERVAL,
            last: None,
        }
    }

    /// The addon's status once it differs from the last one handed out (the first read at
    /// once). Never returns while nothing changes: bound it with a timeout.
    pub async fn next(&mut self) -> Result<Status> {
        loop {
            if self.last.is_some() {
                tokio::time::sleep(self.interval).await;
            }
            let status = status(self.store, &self.name, None).await?;
            let shown = Shown::of(&status);
            if self.last.as_ref() != Some(&shown) {
                self.last = Some(shown);
                self.interval = FIRST_INTERVAL;
                return Ok(status);
            }
            self.interval = backed_off(self.interval);
        }
    }
}

/// Waits until `name` is `enabled`; see [`until`].
pub async fn until_enabled(
    store: Store<'_>,
    name: &str,
    timeout: Duration,
    reporter: &dyn Reporter,
) -> Result<Duration> {
    until(store, name, Phase::Enabled, timeout, reporter).await
}

/// Waits until `name` reaches `wanted` (`enabled` or `disabled`), reporting each change, and
/// returns the time it took; see the module documentation.
pub async fn until(
    store: Store<'_>,
    name: &str,
    wanted: Phase,
    timeout: Duration,
    reporter: &dyn Reporter,
) -> Result<Duration> {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut watch = Watch::new(store, name);
    let mut last: Option<Status> = None;
    let mut shown: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let Ok(read) = tokio::time::timeout_at(deadline, watch.next()).await else {
            return Err(timed_out(name, wanted, last.as_ref(), timeout));
        };
        let status = read?;
        let reached = status.phase == wanted;
        let failed = wanted == Phase::Enabled && status.phase == Phase::Failed;
        if !reached && !failed && last.as_ref().map(|s| s.phase) != Some(status.phase) {
            reporter.step(&format!(
                "`{name}` is {}; waiting for {wanted}",
                status.phase
            ));
        }
        // Each cluster's last change is reported, the one that completes the wait too.
        for cluster in &status.resources {
            let line = cluster_readiness(cluster);
            if shown.get(&cluster.cluster) != Some(&line) {
                reporter.step(&format!("{}: {line}", cluster.cluster));
                shown.insert(cluster.cluster.clone(), line);
            }
        }
        if reached {
            return Ok(started.elapsed());
        }
        if failed {
            return Err(Error::AddonFailed {
                addon: name.to_owned(),
                reason: status.reason.clone(),
            });
        }
        last = Some(status);
    }
}

/// The error of a wait that ran out of time: per cluster, what is still not as wanted.
fn timed_out(name: &str, wanted: Phase, last: Option<&Status>, timeout: Duration) -> Error {
    let mut why = String::new();
    if let Some(status) = last {
        let left: Vec<String> = status
            .resources
            .iter()
            .flat_map(|c| still_left(c, wanted))
            .collect();
        if !left.is_empty() {
            let title = if wanted == Phase::Disabled {
                "still there"
            } else {
                "not ready"
            };
            why = format!("; {title}:\n  {}", left.join("\n  "));
        }
        for note in &status.notes {
            why.push_str("\nnote: ");
            why.push_str(note);
        }
    }
    Error::NotReady {
        addon: name.to_owned(),
        phase: last.map_or_else(|| "not read".to_owned(), |s| s.phase.to_string()),
        seconds: timeout.as_secs(),
        wanted: wanted.to_string(),
        why,
    }
}

/// One cluster's objects keeping an addon from `wanted`: its workloads not ready (enabling), or
/// the objects still there (disabling); and the cluster's error.
fn still_left(cluster: &ClusterStatus, wanted: Phase) -> Vec<String> {
    let mut out: Vec<String> = cluster
        .resources
        .iter()
        .filter(|r| match wanted {
            Phase::Disabled => r.exists,
            _ => r.is_workload() && !r.is_ready(),
        })
        .map(|r| match wanted {
            Phase::Disabled => format!("{}: {} still exists", cluster.cluster, object_name(r)),
            _ => format!("{}: {}", cluster.cluster, workload_readiness(r)),
        })
        .collect();
    if let Some(error) = &cluster.error {
        out.push(format!("{}: error: {error}", cluster.cluster));
    }
    out
}

/// `3/3 workloads ready` (and not-ready and missing objects) for one cluster.
pub fn cluster_readiness(cluster: &ClusterStatus) -> String {
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

/// `Deployment ns/name`.
fn object_name(resource: &ResourceStatus) -> String {
    match &resource.namespace {
        Some(ns) => format!("{} {ns}/{}", resource.kind, resource.name),
        None => format!("{} {}", resource.kind, resource.name),
    }
}

/// `Deployment ns/name 0/1 ready` (or `missing`).
fn workload_readiness(resource: &ResourceStatus) -> String {
    let name = object_name(resource);
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
