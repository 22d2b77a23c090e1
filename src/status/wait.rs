//! Waiting for an addon's phase and watching it change: `addonctl wait`, `enable --wait`,
//! `status --watch`, and between the layers of a plan applied by the direct engine (a
//! dependency is healthy before what needs it is applied).
//!
//! Expected flow: a [`Watch`] reads the addon's status ([`super::status()`]) and hands it out
//! when something shown changed (the phase, a cluster's readiness, the reason, the notes).
//! Between reads it watches what the last read found (the addon's KubeVela Application, then
//! its workloads, not ready ones first; at most [`MAX_WATCHED`], each from the version read),
//! and reads again at the first event; without one, after 100 ms, doubling up to 2 s while
//! nothing changes, and back to 100 ms after a change (for what no watch covers: the record,
//! other objects, a cluster's errors). So a workload that becomes ready is seen a request's
//! time later, not up to a pause later. [`until`]
//! follows a watch until the phase wanted is reached, reporting each change (`m1: 2/3
//! workloads ready`); it stops with an error when waiting for `enabled` and the phase is
//! `failed` (the reason), or when the time is up (per cluster, every workload not ready yet or
//! every object still there, and the status notes).
//!
//! Guarantees: reads only; every read and watch is bounded by the clusters' request timeout
//! and the pause, and the whole wait by its own; an event that changes nothing shown spaces the
//! next read out (20 ms, doubling), so a watch that ends at once cannot make reads back to back.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::health::{ClusterStatus, ResourceStatus};
use super::{status, Phase, Status};
use crate::cluster::set::LOCAL;
use crate::cluster::{first_change, Cluster};
use crate::context::Reporter;
use crate::model::wire::application_name;
use crate::state::record::ObjectRef;
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

/// Follows one addon's status (see the module documentation).
pub struct Watch<'a> {
    store: Store<'a>,
    name: String,
    interval: Duration,
    /// The pause after a change (and the first of the pauses that grow).
    first: Duration,
    /// The longest pause between two reads.
    longest: Duration,
    last: Option<Shown>,
    /// What a pause watches, from the last read (see [`watched`]).
    watched: Vec<Watched>,
    /// The clients of the clusters watched, made once.
    clients: BTreeMap<String, Cluster>,
    /// The least time between a watch's event and the next read, doubled each time an event
    /// changed nothing shown: an event that repeats at once (a watch ended because its version
    /// expired) cannot make reads back to back.
    spacing: Duration,
}

/// One object a pause watches (a workload, or the addon's KubeVela Application on the
/// control plane): on which cluster, and since which version.
#[derive(Debug, Clone)]
pub struct Watched {
    cluster: String,
    object: ObjectRef,
    since: String,
}

/// The most objects one pause watches (one watch request each); changes of the others are
/// seen at the next read.
pub const MAX_WATCHED: usize = 16;

/// The first spacing after an event that changed nothing shown.
const MIN_SPACING: Duration = Duration::from_millis(20);

impl<'a> Watch<'a> {
    /// A watch of addon `name`; its first [`Watch::next`] reads at once.
    pub fn new(store: Store<'a>, name: &str) -> Self {
        Watch {
            store,
            name: name.to_owned(),
            interval: FIRST_INTERVAL,
            first: FIRST_INTERVAL,
            longest: MAX_INTERVAL,
            last: None,
            watched: Vec::new(),
            clients: BTreeMap::new(),
            spacing: Duration::ZERO,
        }
    }

    /// The same watch with every pause between reads `pause` long, however often they
    /// change: a change of a workload wakes it at once all the same.
    #[must_use]
    pub fn every(mut self, pause: Duration) -> Self {
        self.interval = pause;
        self.first = pause;
        self.longest = pause;
        self
    }

    /// The addon's status once it differs from the last one handed out (the first read at
    /// once). Never returns while nothing changes: bound it with a timeout.
    pub async fn next(&mut self) -> Result<Status> {
        loop {
            let woken = if self.last.is_some() {
                self.pause().await
            } else {
                false
            };
            let status = status(self.store, &self.name, None).await?;
            let shown = Shown::of(&status);
            self.watched = watched(&status, self.store.namespace);
            if self.last.as_ref() != Some(&shown) {
                self.last = Some(shown);
                self.interval = self.first;
                self.spacing = Duration::ZERO;
                return Ok(status);
            }
            self.interval = backed_off(self.interval).min(self.longest);
            if woken {
                self.spacing = (self.spacing * 2).max(MIN_SPACING).min(self.interval);
            }
        }
    }

    /// Waits until a watched object changes or the interval passes; returns whether an event
    /// woke it. A watch that cannot be made (no `watch` permission, a cluster that
    /// does not answer) leaves the interval to pass.
    async fn pause(&mut self) -> bool {
        let deadline = tokio::time::Instant::now() + self.interval;
        if !self.spacing.is_zero() {
            tokio::time::sleep(self.spacing.min(self.interval)).await;
        }
        let missing: BTreeSet<String> = self
            .watched
            .iter()
            .map(|w| w.cluster.clone())
            .filter(|c| !self.clients.contains_key(c))
            .collect();
        if !missing.is_empty() {
            if let Ok(clients) = self.store.clients(&missing).await {
                self.clients
                    .extend(clients.into_iter().filter_map(|(n, c)| Some((n, c.ok()?))));
            }
        }
        let objects = self
            .watched
            .iter()
            .filter_map(|w| Some((self.clients.get(&w.cluster)?, w)))
            .map(|(client, w)| (client, w.object.since(&w.since)))
            .collect();
        first_change(objects, deadline).await
    }
}

/// Waits until one of `watched` changes or `deadline` passes (see [`first_change`]); the
/// clusters' clients are made from `store` (when they cannot be, the deadline passes).
pub async fn changed(
    store: Store<'_>,
    watched: &[Watched],
    deadline: tokio::time::Instant,
) -> bool {
    let names: BTreeSet<String> = watched.iter().map(|w| w.cluster.clone()).collect();
    let Ok(clients) = store.clients(&names).await else {
        tokio::time::sleep_until(deadline).await;
        return false;
    };
    let objects = watched
        .iter()
        .filter_map(|w| Some((clients.get(&w.cluster)?.as_ref().ok()?, w)))
        .map(|(client, w)| (client, w.object.since(&w.since)))
        .collect();
    first_change(objects, deadline).await
}

/// What of `status` a pause watches (its Application, then its workloads, not ready ones
/// first), at most [`MAX_WATCHED`]: each since the version read, or, when it did not exist,
/// since the newest version read on its cluster (its creation is then an event).
pub fn watched(status: &Status, namespace: &str) -> Vec<Watched> {
    let mut out: Vec<(bool, Watched)> = Vec::new();
    for cluster in &status.resources {
        let newest = cluster
            .resources
            .iter()
            .filter_map(|r| r.resource_version.as_deref()?.parse::<u64>().ok())
            .max();
        for resource in cluster.resources.iter().filter(|r| r.is_workload()) {
            let Some(since) = resource
                .resource_version
                .clone()
                .or_else(|| newest.map(|v| v.to_string()))
            else {
                continue;
            };
            out.push((
                resource.is_ready(),
                Watched {
                    cluster: cluster.cluster.clone(),
                    object: ObjectRef {
                        api_version: resource.api_version.clone(),
                        kind: resource.kind.clone(),
                        namespace: resource.namespace.clone(),
                        name: resource.name.clone(),
                    },
                    since,
                },
            ));
        }
    }
    // KubeVela's Application decides the phase of an addon KubeVela deploys (its status, its
    // deletion once its finalizers ran): watched first.
    if let Some(since) = &status.application_version {
        out.push((
            false,
            Watched {
                cluster: LOCAL.to_owned(),
                object: ObjectRef {
                    api_version: "core.oam.dev/v1beta1".to_owned(),
                    kind: "Application".to_owned(),
                    namespace: Some(namespace.to_owned()),
                    name: application_name(&status.name),
                },
                since: since.clone(),
            },
        ));
        out.rotate_right(1);
    }
    out.sort_by_key(|(ready, _)| *ready);
    out.into_iter()
        .take(MAX_WATCHED)
        .map(|(_, watched)| watched)
        .collect()
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
            reporter.event(&crate::context::Progress::Phase {
                addon: name.to_owned(),
                phase: status.phase.to_string(),
                wanted: wanted.to_string(),
            });
        }
        // Each cluster's last change is reported, the one that completes the wait too.
        for cluster in &status.resources {
            let line = cluster_readiness(cluster);
            if shown.get(&cluster.cluster) != Some(&line) {
                reporter.event(&crate::context::Progress::ClusterReadiness {
                    cluster: cluster.cluster.clone(),
                    readiness: line.clone(),
                });
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
        line.push_str(&format!(
            ", {missing} {} missing",
            if missing == 1 { "object" } else { "objects" }
        ));
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
