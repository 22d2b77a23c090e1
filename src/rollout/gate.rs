//! The gate of a batch, and the rollout's persisted progress.
//!
//! A batch's gate passes when every cluster of it (failures tolerated aside) has been observed
//! healthy **on the target revision** continuously for the soak time; an observation of another
//! revision, or an unhealthy one, resets that cluster's soak. It fails when more clusters failed
//! than the stage tolerates, or when the progress deadline passes first (the clusters not soaked
//! by then count as failed). Pure: times are given (milliseconds since the Unix epoch), so a
//! controller can evaluate it at every reconcile and keep the state in its status.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::planner::{PlannedStage, RolloutPlan};

/// What was seen of one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// The cluster.
    pub cluster: String,
    /// The revision the cluster is known to run (`None`: not known to run any, e.g. its apply
    /// is pending or failed).
    pub revision: Option<String>,
    /// Whether its workloads are healthy (for `revision`).
    pub healthy: bool,
    /// Why not, when not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The apply failed there: a failure now, whatever the health.
    #[serde(default)]
    pub failed: bool,
}

/// One cluster in a gate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterGate {
    /// Since when it has been healthy on the target revision, without interruption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_since_ms: Option<u64>,
    /// Why it failed (sticky).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Why it was not healthy at the last observation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The gate of one batch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateState {
    /// When the batch was applied.
    pub started_ms: u64,
    /// Its clusters.
    pub clusters: BTreeMap<String, ClusterGate>,
}

impl GateState {
    /// A gate over `clusters` starting at `now_ms`.
    pub fn new(clusters: &[String], now_ms: u64) -> Self {
        GateState {
            started_ms: now_ms,
            clusters: clusters
                .iter()
                .map(|c| (c.clone(), ClusterGate::default()))
                .collect(),
        }
    }

    /// The earliest time after `now_ms` at which the verdict can change with nothing new
    /// observed: a cluster's soak ending, or the progress deadline.
    pub fn next_change_ms(&self, limits: GateLimits, now_ms: u64) -> u64 {
        let deadline = self.started_ms.saturating_add(limits.deadline_ms);
        self.clusters
            .values()
            .filter(|g| g.failed.is_none())
            .filter_map(|g| g.healthy_since_ms)
            .map(|since| since.saturating_add(limits.soak_ms))
            .filter(|&soaked| soaked > now_ms)
            .fold(deadline, u64::min)
    }
}

/// A failed cluster, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFailure {
    /// The cluster.
    pub cluster: String,
    /// The stage.
    pub stage: String,
    /// Why.
    pub reason: String,
}

/// What a gate says now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "camelCase")]
pub enum Verdict {
    /// Not yet: the clusters still waited for, with the reason or the soak left.
    Waiting {
        /// `(cluster, why)`.
        pending: Vec<(String, String)>,
    },
    /// Every cluster soaked (the failures tolerated listed).
    Passed {
        /// Clusters failed within `maxFailures`.
        tolerated: Vec<(String, String)>,
    },
    /// Too many clusters failed, or the deadline passed.
    Failed {
        /// `(cluster, why)`.
        failures: Vec<(String, String)>,
        /// Why the gate failed as a whole.
        reason: String,
    },
}

/// Limits of one gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateLimits {
    /// How long each cluster must stay healthy.
    pub soak_ms: u64,
    /// Failures tolerated (what the stage's earlier batches used already subtracted).
    pub max_failures: u32,
    /// How long the gate may take.
    pub deadline_ms: u64,
}

/// Takes in the observations made at `now_ms` and says where the gate stands.
pub fn evaluate(
    state: &mut GateState,
    target_revision: &str,
    observations: &[Observation],
    limits: GateLimits,
    now_ms: u64,
) -> Verdict {
    for (name, gate) in &mut state.clusters {
        if gate.failed.is_some() {
            continue;
        }
        match observations.iter().find(|o| &o.cluster == name) {
            Some(o) if o.failed => {
                gate.failed = Some(
                    o.reason
                        .clone()
                        .unwrap_or_else(|| "the apply failed".into()),
                );
                gate.healthy_since_ms = None;
            }
            Some(o) if o.healthy && o.revision.as_deref() == Some(target_revision) => {
                gate.healthy_since_ms.get_or_insert(now_ms);
                gate.reason = None;
            }
            Some(o) => {
                gate.healthy_since_ms = None;
                gate.reason = Some(match (&o.revision, o.healthy) {
                    (Some(r), true) if r != target_revision => {
                        format!("healthy on revision `{r}`, not on `{target_revision}`")
                    }
                    (None, _) => o
                        .reason
                        .clone()
                        .unwrap_or_else(|| format!("not on revision `{target_revision}` yet")),
                    _ => o.reason.clone().unwrap_or_else(|| "not healthy".to_owned()),
                });
            }
            None => {
                gate.healthy_since_ms = None;
                gate.reason = Some("not observed".to_owned());
            }
        }
    }
    let soaked = |g: &ClusterGate| {
        g.healthy_since_ms
            .is_some_and(|t| now_ms.saturating_sub(t) >= limits.soak_ms)
    };
    let mut failures: Vec<(String, String)> = state
        .clusters
        .iter()
        .filter_map(|(n, g)| Some((n.clone(), g.failed.clone()?)))
        .collect();
    let too_many = |failures: &[(String, String)]| {
        u32::try_from(failures.len()).unwrap_or(u32::MAX) > limits.max_failures
    };
    if too_many(&failures) {
        return Verdict::Failed {
            reason: format!(
                "{} cluster(s) failed, more than the {} tolerated (`maxFailures`)",
                failures.len(),
                limits.max_failures
            ),
            failures,
        };
    }
    let pending: Vec<(String, String)> = state
        .clusters
        .iter()
        .filter(|(_, g)| g.failed.is_none() && !soaked(g))
        .map(|(n, g)| {
            let why = match (g.healthy_since_ms, &g.reason) {
                (Some(t), _) => format!(
                    "soaking, {} s left",
                    (limits.soak_ms.saturating_sub(now_ms.saturating_sub(t))).div_ceil(1000)
                ),
                (None, Some(reason)) => reason.clone(),
                (None, None) => "not observed".to_owned(),
            };
            (n.clone(), why)
        })
        .collect();
    if pending.is_empty() {
        return Verdict::Passed {
            tolerated: failures,
        };
    }
    if now_ms.saturating_sub(state.started_ms) < limits.deadline_ms {
        return Verdict::Waiting { pending };
    }
    for (name, why) in pending {
        let reason = format!(
            "not healthy on revision `{target_revision}` for the soak time within the progress deadline ({} s): {why}",
            limits.deadline_ms / 1000
        );
        if let Some(gate) = state.clusters.get_mut(&name) {
            gate.failed = Some(reason.clone());
        }
        failures.push((name, reason));
    }
    if too_many(&failures) {
        Verdict::Failed {
            reason: "the progress deadline passed".to_owned(),
            failures,
        }
    } else {
        Verdict::Passed {
            tolerated: failures,
        }
    }
}

/// Where a rollout stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Applying, or waiting for a gate.
    #[default]
    Progressing,
    /// Every stage passed.
    Succeeded,
    /// A gate failed: later batches and stages untouched.
    Failed,
}

/// A rollout's progress, persisted (a controller keeps it in the `Addon`'s status; the CLI in
/// memory), so that a restarted process resumes where it was.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutState {
    /// The revision rolled out (the addon's version).
    pub revision: String,
    /// The current stage (index into the plan's stages).
    pub stage: usize,
    /// The current batch of that stage.
    pub batch: usize,
    /// Where it stands.
    pub phase: Phase,
    /// The current batch's gate, once the batch is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateState>,
    /// Clusters whose batch passed (the failures tolerated included: the addon is applied
    /// there).
    #[serde(default)]
    pub done: Vec<String>,
    /// Failed clusters (tolerated, or the ones that stopped the rollout).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<ClusterFailure>,
    /// Why it stopped, once failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl RolloutState {
    /// A rollout of `revision` at its start.
    pub fn new(revision: &str) -> Self {
        RolloutState {
            revision: revision.to_owned(),
            ..RolloutState::default()
        }
    }

    /// The current stage and batch (stages without clusters skipped); `None` once done.
    pub fn current<'a>(
        &mut self,
        plan: &'a RolloutPlan,
    ) -> Option<(&'a PlannedStage, &'a [String])> {
        if self.phase != Phase::Progressing {
            return None;
        }
        while let Some(stage) = plan.stages.get(self.stage) {
            if let Some(batch) = stage.batches.get(self.batch) {
                return Some((stage, batch));
            }
            self.stage += 1;
            self.batch = 0;
        }
        self.phase = Phase::Succeeded;
        None
    }

    /// The clusters an apply of the current batch targets: every cluster done, and the batch.
    pub fn cumulative(&mut self, plan: &RolloutPlan) -> Vec<String> {
        let mut clusters = self.done.clone();
        if let Some((_, batch)) = self.current(plan) {
            clusters.extend(batch.iter().filter(|c| !self.done.contains(c)).cloned());
        }
        clusters
    }

    /// The gate limits of the current batch (`None` once done).
    pub fn limits(&mut self, plan: &RolloutPlan) -> Option<GateLimits> {
        let (stage, _) = self.current(plan)?;
        let used = self
            .failures
            .iter()
            .filter(|f| f.stage == stage.name)
            .count();
        Some(GateLimits {
            soak_ms: stage.soak_seconds.saturating_mul(1000),
            max_failures: stage
                .max_failures
                .saturating_sub(u32::try_from(used).unwrap_or(u32::MAX)),
            deadline_ms: plan.progress_deadline_seconds.saturating_mul(1000),
        })
    }

    /// Takes in a verdict of the current batch's gate: passed → next batch (or stage, or done);
    /// failed → stopped, with the failures.
    pub fn settle(&mut self, plan: &RolloutPlan, verdict: &Verdict) {
        let Some((stage, batch)) = self.current(plan) else {
            return;
        };
        let failure = |(cluster, reason): &(String, String)| ClusterFailure {
            cluster: cluster.clone(),
            stage: stage.name.clone(),
            reason: reason.clone(),
        };
        match verdict {
            Verdict::Waiting { .. } => {}
            Verdict::Passed { tolerated } => {
                self.failures.extend(tolerated.iter().map(failure));
                for cluster in batch {
                    if !self.done.contains(cluster) {
                        self.done.push(cluster.clone());
                    }
                }
                self.gate = None;
                self.batch += 1;
                let _ = self.current(plan);
            }
            Verdict::Failed { failures, reason } => {
                self.failures.extend(failures.iter().map(failure));
                self.phase = Phase::Failed;
                self.message = Some(format!("stage `{}`: {reason}", stage.name));
            }
        }
    }
}

#[cfg(test)]
mod tests;
