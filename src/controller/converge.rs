//! One reconcile of one `Addon`:
//!
//! ```text
//! read spec → resolve target clusters and parameters (secret ones read now)
//!   → unchanged inputs and record?  → (health only, when not yet healthy)
//!   → [rollout gate: which targets this pass may change — the rollout module plugs in here]
//!   → plan → apply (the CLI's path; the record is written by apply)
//!   → [drift: compare what the clusters hold with the record — the drift module plugs in here]
//!   → health → status (written only when it changed)
//! ```
//!
//! A failure is recorded in the status (`lastError`, `consecutiveFailures`, `Ready=False`) and
//! retried after the back-off; once the retry budget is spent the `Addon` is `Stalled` and
//! retried at the slowest pace. A suspended `Addon` is not applied.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::api::Patch;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::ResourceExt;
use serde_json::{json, Value};

use super::crd::{condition, now, Addon, AddonStatus, ClusterStatus, RolloutPhase};
use super::data::{Data, Memo};
use super::engine::{self, Applied, Desired};
use super::targets::{self, KnownCluster, Targets};
use super::{overrides, stages};
use super::{Error, Result};
use crate::state::record::record_name;
use crate::status::Phase;

/// The status fields that may be absent (removed by writing `null`).
const OPTIONAL_STATUS_FIELDS: [&str; 11] = [
    "observedGeneration",
    "appliedVersion",
    "registry",
    "appliedRevision",
    "inputsDigest",
    "clusters",
    "clusterSummary",
    "rolloutStage",
    "rollout",
    "lastError",
    "flags",
];
/// How soon an `Addon` whose clusters are not all healthy yet is looked at again.
const HEALTH_RECHECK: Duration = Duration::from_secs(10);
/// How often a healthy `Addon` is looked at again without any event.
const RESYNC: Duration = Duration::from_secs(300);
/// How long the health read at an apply or a drift check stands for an unchanged `Addon`
/// whose clusters were all healthy (a workload that stops being ready is seen within it).
const HEALTH_REFRESH: Duration = Duration::from_secs(60);

/// Reconciles an `Addon` that is not being deleted.
pub(super) async fn apply(addon: &Addon, data: &Data) -> Result<Action> {
    let started = Instant::now();
    let name = addon.name_any();
    let current = addon.status.clone().unwrap_or_default();
    let generation = addon.metadata.generation;
    if addon.spec.suspend {
        let mut status = current.clone();
        status.observed_generation = generation;
        status.set_condition(
            condition(
                "Progressing",
                false,
                "Suspended",
                "`spec.suspend` is true: nothing is applied until it is false",
                generation,
            ),
            &now(),
        );
        write_status(data, &name, &current, &status).await?;
        data.shared
            .metrics
            .reconciled(&name, started.elapsed(), false, true);
        return Ok(Action::await_change());
    }
    let memo = data.memo(&name);
    if let (true, Some(at)) = (memo.failed_generation == generation, memo.retry_at) {
        let wait = at.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            return Ok(Action::requeue(wait));
        }
    }
    match converge(addon, data, &current).await {
        Ok((status, action, skipped)) => {
            data.update_memo(&name, |memo| {
                memo.failures = 0;
                memo.failed_generation = None;
                memo.retry_at = None;
            });
            // A status that cannot be written is a failed reconcile (counted by the error
            // policy), not a success.
            write_status(data, &name, &current, &status).await?;
            data.shared.reconciled(None);
            data.shared
                .metrics
                .reconciled(&name, started.elapsed(), false, skipped);
            let ready = status
                .condition("Ready")
                .map_or("Unknown", |c| c.status.as_str());
            tracing::info!(
                addon = %name,
                applied = !skipped,
                ready,
                clusters = status.cluster_summary.as_deref().unwrap_or("-"),
                took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                "reconciled"
            );
            Ok(action)
        }
        Err(error) => {
            // When the failure cannot even be recorded, the error policy counts that one.
            let action = record_failure(addon, data, &current, &error).await?;
            data.shared.reconciled(Some(&error));
            data.shared
                .metrics
                .reconciled(&name, started.elapsed(), true, false);
            Ok(action)
        }
    }
}

/// Disables the addon of a deleted `Addon` (with the library's guards); a refusal is shown in
/// the status and the finalizer stays.
pub(super) async fn cleanup(addon: &Addon, data: &Data) -> Result<Action> {
    let name = addon.name_any();
    let current = addon.status.clone().unwrap_or_default();
    if addon.spec.suspend || !super::trust::claimed(&current) {
        // Suspended, or it never installed anything: the addon (installed by other means, or
        // not at all) is left as it is.
        tracing::info!(addon = %name, suspended = addon.spec.suspend, "Addon deleted: released without disabling the addon");
        data.forget(&name);
        return Ok(Action::await_change());
    }
    match engine::disable(&data.shared.ctx(), &name).await {
        Ok(disabled) => {
            tracing::info!(addon = %name, disabled, "Addon deleted: addon disabled");
            data.forget(&name);
            Ok(Action::await_change())
        }
        Err(error) => {
            super::events::disable_refused(&data.events, addon, &error).await;
            let current = addon.status.clone().unwrap_or_default();
            let mut status = current.clone();
            status.last_error = Some(error.to_string());
            status.set_condition(
                condition(
                    "Degraded",
                    true,
                    "DisableRefused",
                    &format!(
                        "the Addon is being deleted but the addon cannot be disabled: {error}"
                    ),
                    addon.metadata.generation,
                ),
                &now(),
            );
            write_status(data, &name, &current, &status).await?;
            Err(error)
        }
    }
}

/// Resolves, applies when the inputs or the record changed, reads health; returns the new
/// status, what to do next and whether the apply was skipped.
async fn converge(
    addon: &Addon,
    data: &Data,
    current: &AddonStatus,
) -> Result<(AddonStatus, Action, bool)> {
    let name = addon.name_any();
    let spec = &addon.spec;
    let generation = addon.metadata.generation;
    let ctx = data.shared.ctx();
    let ctx = &*ctx;
    let known = known_clusters(data);
    let targets = targets::resolve(spec, &known)?;
    let (secrets, mut versions) = read_secrets(data, addon).await?;
    let version = resolve_version(data, addon, current).await?;
    let key = stages::Key::of(spec, &version, &versions);
    versions.push(format!("version={version}"));
    // Another author is another set of rights: applied again (and checked again).
    let annotations = addon.annotations();
    versions.push(format!(
        "author={};{}",
        annotations
            .get(super::crd::AUTHOR)
            .map_or("", String::as_str),
        annotations
            .get(super::crd::AUTHOR_GROUPS)
            .map_or("", String::as_str)
    ));
    let digest = targets::digest(spec, &targets, &known, &versions);
    let revision = data
        .records
        .get(&ObjectRef::<Secret>::new(&record_name(&name)).within(&ctx.namespace))
        .and_then(|s| s.metadata.resource_version.clone());
    let memo = data.memo(&name);
    let unchanged = inputs_unchanged(&memo, current, &digest, revision.as_ref(), generation);
    let mut status = reconciling(current, generation);
    let rolling = spec.rollout.is_some()
        && !targets.clusters.as_ref().is_some_and(Vec::is_empty)
        && !stages::settled(data, addon, &key);
    let parameters = targets::parameters(spec, &targets, &known, &secrets)?;
    let applying = rolling || !unchanged;
    if overrides::refused(ctx, &name, &parameters.overrides, applying, &mut status).await? {
        return Ok((status, Action::await_change(), false));
    }
    let trust = if applying {
        let trust = super::trust::trust_for(data, addon, current, revision.is_some()).await?;
        super::trust::claim(data, addon, current, revision.is_some(), &mut status).await?;
        trust
    } else {
        engine::Trust::default()
    };
    if rolling {
        let inputs = stages::Inputs {
            addon,
            targets: &targets,
            known: &known,
            parameters: parameters.base.clone(),
            overrides: parameters.overrides.clone(),
            version: version.clone(),
            key,
            trust: trust.clone(),
        };
        let (rolled, action) = stages::drive(data, &inputs, status).await?;
        status = rolled;
        let succeeded = status
            .rollout
            .as_ref()
            .is_some_and(|r| r.phase == RolloutPhase::Succeeded);
        if !succeeded {
            return Ok((status, action, false));
        }
        // Every stage passed: the ordinary apply below covers every target (clusters selected
        // since the rollout started get the rolled-out revision now).
    } else if spec.rollout.is_none() {
        status.rollout = None;
        status.rollout_stage = None;
    }
    if unchanged && !rolling {
        // Drift is looked at whatever the health: an object deleted while a workload is not
        // ready yet is put back all the same.
        let saw = observe_drift(data, addon, revision.as_ref(), &mut status).await?;
        let ready = status
            .condition("Ready")
            .is_some_and(|c| c.status == "True");
        let fresh = memo
            .health_at
            .is_some_and(|at| at.elapsed() < HEALTH_REFRESH);
        let healthy = if !saw && fresh && (memo.healthy || (memo.planned.is_none() && ready)) {
            true
        } else {
            observe_health(data, &name, &targets, &known, None, &mut status).await?
        };
        if !fresh || saw || !memo.healthy {
            data.update_memo(&name, |memo| {
                memo.healthy = healthy;
                memo.health_at = Some(Instant::now());
            });
        }
        return Ok((status, next(data, addon, healthy), true));
    }
    if targets.clusters.as_ref().is_some_and(Vec::is_empty) {
        no_target_clusters(&mut status, generation);
        return Ok((status, Action::await_change(), false));
    }
    // [rollout gate] The rollout module narrows `targets` to the clusters this pass may change
    // (the current stage, `maxConcurrency`) and holds the rest; without a rollout every target
    // changes at once.
    let desired = Desired::of(name.clone(), spec, version, parameters, trust);
    let applied = engine::apply(ctx, &desired).await?;
    status.flags.clone_from(&applied.flags);
    if !applied.flags.is_empty() {
        super::events::flagged(&data.events, addon, &applied.flags).await;
    }
    super::events::applied(&data.events, addon, &applied).await;
    let revision = engine::record_revision(ctx, &name).await?;
    // The drift check and the health read after an apply are independent reads of the same
    // clusters: taken together, each cluster's answers overlap and the pass waits for the longer
    // of the two rather than their sum.
    let shared = data.shared.ctx();
    let (drift, health) = tokio::join!(
        Box::pin(observe_drift(data, addon, revision.as_ref(), &mut status)),
        Box::pin(engine::health(&shared, &name))
    );
    drift?;
    let health = health?;
    for cluster in &applied.clusters {
        data.shared.metrics.applied(&cluster.name, &cluster.outcome);
    }
    status.applied_version = Some(applied.version.clone()).filter(|v| !v.is_empty());
    status.registry = Some(applied.registry.clone()).filter(|r| !r.is_empty());
    set_source(&mut status, applied.source.as_ref(), generation);
    status.applied_revision.clone_from(&revision);
    status.inputs_digest = Some(digest.clone());
    let healthy = show_health(health, &targets, &known, Some(&applied), &mut status);
    data.update_memo(&name, |memo| {
        memo.digest = digest;
        memo.revision = revision;
        memo.planned = Some(Instant::now());
        memo.healthy = healthy;
        memo.health_at = Some(Instant::now());
    });
    Ok((status, next(data, addon, healthy), false))
}

/// The applied version's origin and the `Verified` condition, from the apply's provenance;
/// both are dropped when the version came from a registry that pins nothing.
fn set_source(
    status: &mut AddonStatus,
    source: Option<&crate::model::provenance::Provenance>,
    generation: Option<i64>,
) {
    if let Some(source) = source {
        let (applied, condition) = super::crd::AppliedSource::of(source, generation);
        status.source = Some(applied);
        status.set_condition(condition, &now());
    } else {
        status.source = None;
        status.conditions.retain(|c| c.type_ != "Verified");
    }
}

/// Whether nothing an apply depends on changed since the last one: the inputs' `digest` and the
/// record's `revision` as this process remembers them, or, before it applied anything, as the
/// status says (for the same generation, after a success).
fn inputs_unchanged(
    memo: &Memo,
    current: &AddonStatus,
    digest: &str,
    revision: Option<&String>,
    generation: Option<i64>,
) -> bool {
    if memo.planned.is_some() {
        memo.digest == digest && memo.revision.as_ref() == revision
    } else {
        current.inputs_digest.as_deref() == Some(digest)
            && current.applied_revision.as_ref() == revision
            && current.observed_generation == generation
            && current.consecutive_failures == 0
    }
}

/// The status a reconcile of `generation` starts from: `current`, observed, without failures,
/// not stalled.
fn reconciling(current: &AddonStatus, generation: Option<i64>) -> AddonStatus {
    let mut status = current.clone();
    status.observed_generation = generation;
    status.consecutive_failures = 0;
    status.last_error = None;
    status.set_condition(
        condition("Stalled", false, "Reconciling", "", generation),
        &now(),
    );
    status
}

/// Not ready and degraded: no cluster is a target, so nothing is applied.
fn no_target_clusters(status: &mut AddonStatus, generation: Option<i64>) {
    let message = "no cluster matches `clusters` / `clusterSelector`: nothing is applied (the addon stays as it is)";
    status.set_condition(
        condition("Ready", false, "NoTargetClusters", message, generation),
        &now(),
    );
    status.set_condition(
        condition("Degraded", true, "NoTargetClusters", message, generation),
        &now(),
    );
}

/// When to look again: soon while not healthy; at the drift interval while drift is watched;
/// else at the resync pace (new registry versions come with a re-list, not with this).
fn next(data: &Data, addon: &Addon, healthy: bool) -> Action {
    let settings = &data.shared.settings;
    let watched =
        engine::drift_spec(addon.spec.drift.as_ref()).policy != crate::drift::Policy::Ignore;
    match (healthy, watched) {
        (false, _) => Action::requeue(HEALTH_RECHECK),
        (true, true) => Action::requeue(settings.drift_interval.min(RESYNC)),
        (true, false) => Action::requeue(RESYNC),
    }
}

/// Compares the clusters with the record per the `Addon`'s drift policy and sets `Drifted`:
/// `True` while objects differ (policy `warn`), `False` when none do or all were corrected
/// (policy `correct`, reason `Corrected`). Clusters that cannot be read are left to the health
/// conditions.
async fn observe_drift(
    data: &Data,
    addon: &Addon,
    revision: Option<&String>,
    status: &mut AddonStatus,
) -> Result<bool> {
    // A failed check is reported in `Drifted` and does not fail the reconcile: the addon is
    // applied; drift is looked at again at the next interval.
    let spec = engine::drift_spec(addon.spec.drift.as_ref());
    let generation = status.observed_generation;
    let name = addon.name_any();
    if spec.policy == crate::drift::Policy::Ignore {
        data.watches.forget(&name);
        status.conditions.retain(|c| c.type_ != "Drifted");
        return Ok(false);
    }
    let mut memo = data.take_drift(&name);
    let watched = data.watches.vouched(&name);
    let vouched = memo.vouchable(&watched, revision, super::watches::FULL_CHECK);
    data.watches.checking(&name, &vouched);
    let others = || other_records(data, &name);
    let report = engine::drift(
        &data.shared.ctx(),
        &name,
        revision,
        &spec,
        &mut memo,
        vouched,
        Some(&others),
    )
    .await;
    if report.is_err() {
        // The watches' news was taken (see `checking`) but nothing was listed: every
        // cluster is listed at the next check.
        memo.listed.clear();
    }
    data.put_drift(&name, memo);
    let report = match report {
        Ok(report) => report,
        Err(error) => {
            tracing::warn!(addon = %name, %error, "drift check failed");
            status.set_condition(
                condition(
                    "Drifted",
                    false,
                    "CheckFailed",
                    &format!("the clusters could not be compared with the record: {error}"),
                    generation,
                ),
                &now(),
            );
            return Ok(true);
        }
    };
    data.watches.follow(addon, &report.places).await;
    data.shared.metrics.drift(&name, &report);
    super::events::drift(&data.events, addon, &report).await;
    let left: Vec<String> = report.uncorrected().map(ToString::to_string).collect();
    let shown = |items: &[String]| {
        let mut text = items.iter().take(5).cloned().collect::<Vec<_>>().join("; ");
        if items.len() > 5 {
            text.push_str(&format!("; and {} more", items.len() - 5));
        }
        text
    };
    let drifted = if !left.is_empty() {
        tracing::warn!(addon = %name, drifted = left.len(), "objects differ from the record");
        // Objects another addon renders differently are a conflict to settle, not drift to undo.
        let reason = if report
            .uncorrected()
            .any(|d| matches!(d.kind, crate::drift::DriftKind::Shared { .. }))
        {
            "SharedObjectConflict"
        } else {
            "Drifted"
        };
        condition("Drifted", true, reason, &shown(&left), generation)
    } else if !report.corrected.is_empty() {
        let corrected: Vec<String> = report.corrected.iter().map(ToString::to_string).collect();
        tracing::info!(addon = %name, corrected = corrected.len(), "drift corrected");
        condition(
            "Drifted",
            false,
            "Corrected",
            &format!("applied again: {}", shown(&corrected)),
            generation,
        )
    } else {
        condition(
            "Drifted",
            false,
            "InSync",
            "every object is as the record says",
            generation,
        )
    };
    status.set_condition(drifted, &now());
    Ok(!left.is_empty() || !report.corrected.is_empty() || !report.errors.is_empty())
}

/// What the records of the addons but `name` list, from the records' watch cache; `None` when
/// one of them is sharded or cannot be read (its shards are not cached: the drift check reads
/// the records then).
fn other_records(data: &Data, name: &str) -> Option<crate::state::record::OtherRecords> {
    let mut records = Vec::new();
    let own = record_name(name);
    for secret in data.records.state() {
        if secret.metadata.name.as_deref() == Some(own.as_str()) {
            continue;
        }
        let main = serde_json::to_value(&*secret).ok()?;
        if crate::state::record::storage::is_sharded(&main) {
            return None;
        }
        if let Some(record) = crate::state::record::storage::decode(&main, &[]).ok()? {
            if record.name != name {
                records.push(record);
            }
        }
    }
    Some(crate::state::record::OtherRecords::of(&records, name))
}

/// Reads the addon's health and sets the per-cluster list and the `Ready`, `Progressing` and
/// `Degraded` conditions; returns whether every target is healthy.
async fn observe_health(
    data: &Data,
    name: &str,
    targets: &Targets,
    known: &[KnownCluster],
    applied: Option<&Applied>,
    status: &mut AddonStatus,
) -> Result<bool> {
    let health = engine::health(&data.shared.ctx(), name).await?;
    Ok(show_health(health, targets, known, applied, status))
}

/// Sets what [`observe_health`] sets from a health read already made.
fn show_health(
    health: engine::Health,
    targets: &Targets,
    known: &[KnownCluster],
    applied: Option<&Applied>,
    status: &mut AddonStatus,
) -> bool {
    let generation = status.observed_generation;
    let mut names: Vec<String> = targets
        .names(known)
        .into_iter()
        .map(str::to_owned)
        .collect();
    if targets.clusters.is_none() {
        names = health.clusters.keys().cloned().collect();
    }
    let previous: BTreeMap<String, ClusterStatus> = status
        .clusters
        .iter()
        .map(|c| (c.name.clone(), c.clone()))
        .collect();
    let mut clusters = Vec::new();
    for cluster in &names {
        let outcome = applied
            .and_then(|a| a.clusters.iter().find(|c| &c.name == cluster))
            .or_else(|| previous.get(cluster));
        let (state, message) = health
            .clusters
            .get(cluster)
            .cloned()
            .unwrap_or_else(|| ("unknown".to_owned(), None));
        clusters.push(ClusterStatus {
            name: cluster.clone(),
            outcome: outcome.map_or_else(|| "unknown".to_owned(), |c| c.outcome.clone()),
            health: state,
            // What the cluster shows now; the apply's own message only while it stands
            // (a failure there), never a stale one from an earlier look.
            message: message.or_else(|| {
                outcome
                    .filter(|c| c.outcome == "failed")
                    .and_then(|c| c.message.clone())
            }),
        });
    }
    let healthy_count = clusters.iter().filter(|c| c.health == "healthy").count();
    let failed: Vec<String> = clusters
        .iter()
        .filter(|c| c.outcome == "failed")
        .map(|c| c.name.clone())
        .collect();
    // Ready means what GitOps tools take it to mean: applied and healthy on every selected
    // cluster. Under KubeVela (no per-cluster objects read back) the Application's phase says.
    let per_cluster = !health.clusters.is_empty();
    let total = clusters.len();
    let all_healthy = health.enabled
        && failed.is_empty()
        && (!per_cluster || (total > 0 && healthy_count == total));
    status.cluster_summary = Some(format!("{healthy_count}/{total}"));
    let unhealthy: Vec<String> = clusters
        .iter()
        .filter(|c| c.health != "healthy")
        .take(5)
        .map(|c| match &c.message {
            Some(message) => format!("{}: {} ({message})", c.name, c.health),
            None => format!("{}: {}", c.name, c.health),
        })
        .collect();
    status.clusters = clusters;
    let now = now();
    let ready_message = if all_healthy && per_cluster {
        format!("healthy on {healthy_count} of {total} cluster(s)")
    } else if all_healthy {
        "enabled (KubeVela reports its Application running)".to_owned()
    } else {
        let mut message = format!("{healthy_count} of {total} cluster(s) healthy");
        if !unhealthy.is_empty() {
            message.push_str(&format!("; {}", unhealthy.join("; ")));
        }
        if let Some(reason) = &health.reason {
            message.push_str(&format!("; {reason}"));
        }
        message
    };
    let phase = shown_phase(all_healthy, health.phase);
    let reason = super::crd::phase_reason(phase);
    status.set_condition(
        condition("Ready", all_healthy, reason, &ready_message, generation),
        &now,
    );
    // Progressing while on its way (not once it failed), with the same word as `Ready`.
    status.set_condition(
        condition(
            "Progressing",
            !all_healthy && phase != Phase::Failed,
            reason,
            "",
            generation,
        ),
        &now,
    );
    let mut problems = Vec::new();
    if !failed.is_empty() {
        problems.push(format!("failed on {}", failed.join(", ")));
    }
    if !targets.unknown.is_empty() {
        problems.push(format!(
            "clusters not joined (skipped until they are): {}",
            targets.unknown.join(", ")
        ));
    }
    status.set_condition(
        condition(
            "Degraded",
            !problems.is_empty(),
            if problems.is_empty() {
                "AsDeclared"
            } else {
                "ClusterProblems"
            },
            &problems.join("; "),
            generation,
        ),
        &now,
    );
    all_healthy
}

/// The phase the `Ready` condition names: `addonctl status`'s own (`cli`), except that an addon
/// not ready on every selected cluster is never `enabled` (the CLI reads the clusters the
/// record names; the controller also counts the targets not reached yet): it is `enabling`.
fn shown_phase(all_healthy: bool, cli: Phase) -> Phase {
    match cli {
        _ if all_healthy => Phase::Enabled,
        Phase::Enabled | Phase::Disabled | Phase::Unknown => Phase::Enabling,
        other => other,
    }
}

/// Records a failure in the status and returns when to retry.
async fn record_failure(
    addon: &Addon,
    data: &Data,
    current: &AddonStatus,
    error: &Error,
) -> Result<Action> {
    let name = addon.name_any();
    let generation = addon.metadata.generation;
    let backoff = data.shared.settings.backoff;
    let memo = data.memo(&name);
    let from_status = if current.observed_generation == generation {
        current.consecutive_failures
    } else {
        0
    };
    let from_memo = if memo.failed_generation == generation {
        memo.failures
    } else {
        0
    };
    let failures = from_status.max(from_memo).saturating_add(1);
    let delay = backoff.delay(failures);
    data.update_memo(&name, |memo| {
        memo.failures = failures;
        memo.failed_generation = generation;
        memo.healthy = false;
        memo.retry_at = Some(Instant::now() + delay);
    });
    tracing::warn!(addon = %name, failures, "reconcile failed: {error}");
    super::events::failed(
        &data.events,
        &data.shared.settings.backoff,
        addon,
        error,
        failures,
    )
    .await;
    let mut status = current.clone();
    status.observed_generation = generation;
    status.consecutive_failures = failures;
    status.last_error = Some(error.to_string());
    let now = now();
    let reason = if matches!(error, Error::Unauthorized(_)) {
        "Refused"
    } else if error.is_user_error() {
        "InvalidSpec"
    } else {
        "ReconcileFailed"
    };
    status.set_condition(
        condition("Ready", false, reason, &error.to_string(), generation),
        &now,
    );
    let stalled = failures >= backoff.budget;
    let message = if stalled {
        format!(
            "failed {failures} times in a row (the retry budget is {}): retrying every {}s only; fix the cause or edit the Addon",
            backoff.budget,
            backoff.max.as_secs()
        )
    } else {
        String::new()
    };
    status.set_condition(
        condition(
            "Stalled",
            stalled,
            if stalled {
                "RetryBudgetExhausted"
            } else {
                "Retrying"
            },
            &message,
            generation,
        ),
        &now,
    );
    write_status(data, &name, current, &status).await?;
    Ok(Action::requeue(delay))
}

/// The version the `Addon` resolves to with the registries' listings as they are. When the
/// registries cannot be read, the version applied last stands (a registry outage does not fail
/// an `Addon` that is as declared); without one, the error.
async fn resolve_version(data: &Data, addon: &Addon, current: &AddonStatus) -> Result<String> {
    let desired = engine::version_request(addon.name_any(), &addon.spec);
    match engine::resolve_version(&data.shared.ctx(), &desired).await {
        Ok(version) => Ok(version),
        Err(error) => match &current.applied_version {
            Some(applied) if !error.is_user_error() => {
                tracing::warn!(addon = %desired.name, %error, "registries unreadable: keeping {applied}");
                Ok(applied.clone())
            }
            _ => Err(error),
        },
    }
}

/// `local` and the joined clusters, from the cluster Secret cache.
fn known_clusters(data: &Data) -> Vec<KnownCluster> {
    let joined = data
        .clusters
        .state()
        .iter()
        .filter_map(|secret| engine::known_cluster(&serde_json::to_value(secret.as_ref()).ok()?))
        .collect();
    targets::known_clusters(joined)
}

/// The secret parameters' values (by parameter path) and the versions of their Secrets (for
/// the digest). A missing Secret or key is an error that says which and what to do.
async fn read_secrets(data: &Data, addon: &Addon) -> Result<(Vec<(String, Value)>, Vec<String>)> {
    let spec = &addon.spec;
    let mut values = Vec::new();
    let mut versions = Vec::new();
    for parameter in &spec.secret_parameters {
        let reference = &parameter.secret_ref;
        let secret = data.secrets.get_opt(&reference.name).await?;
        let namespace = &data.shared.ctx().namespace.clone();
        let Some(secret) = secret else {
            return Err(Error::SecretParameter {
                parameter: parameter.name.clone(),
                reason: format!(
                    "Secret `{}` does not exist in namespace `{namespace}`; create it (`kubectl -n {namespace} create secret generic {} --from-literal={}=…`)",
                    reference.name, reference.name, reference.key
                ),
            });
        };
        super::trust::secret_usable(
            &parameter.name,
            &reference.name,
            &secret.metadata.labels.clone().unwrap_or_default(),
            &addon.name_any(),
        )?;
        let data_map = secret.data.clone().unwrap_or_default();
        let Some(bytes) = data_map.get(&reference.key) else {
            let keys: Vec<&str> = data_map.keys().map(String::as_str).collect();
            return Err(Error::SecretParameter {
                parameter: parameter.name.clone(),
                reason: format!(
                    "Secret `{}` has no key `{}` (its keys: {}); add the key or fix `secretRef.key`",
                    reference.name,
                    reference.key,
                    if keys.is_empty() { "none".to_owned() } else { keys.join(", ") }
                ),
            });
        };
        let Ok(text) = String::from_utf8(bytes.0.clone()) else {
            return Err(Error::SecretParameter {
                parameter: parameter.name.clone(),
                reason: format!(
                    "key `{}` of Secret `{}` is not UTF-8 text",
                    reference.key, reference.name
                ),
            });
        };
        values.push((parameter.name.clone(), Value::String(text)));
        versions.push(format!(
            "{}@{}",
            reference.name,
            secret.metadata.resource_version.unwrap_or_default()
        ));
    }
    Ok((values, versions))
}

/// Writes the status with server-side apply, only when it changed.
async fn write_status(
    data: &Data,
    name: &str,
    current: &AddonStatus,
    status: &AddonStatus,
) -> Result<()> {
    if status == current {
        return Ok(());
    }
    // A merge patch of the whole status, every optional field absent now written as `null` so
    // that it is removed (Kubernetes 1.20's server-side apply turns empty strings of a custom
    // resource's status into `null`s its own schema then refuses).
    let mut body = serde_json::to_value(status).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut body {
        for key in OPTIONAL_STATUS_FIELDS {
            map.entry(key.to_owned()).or_insert(Value::Null);
        }
        // Nested fields gone since the status read (the rollout's gate, a message) are
        // removed too: a merge patch keeps what it does not name.
        if let (Some(new), Ok(old)) = (map.get_mut("rollout"), serde_json::to_value(current)) {
            removals(&old["rollout"], new);
        }
    }
    data.api
        .patch_status(
            name,
            &crate::cluster::patch_params(),
            &Patch::Merge(&json!({ "status": body })),
        )
        .await?;
    Ok(())
}

/// Writes `null` into `new` for every key of `old` it lacks, in objects both have (a merge
/// patch from `old` to `new`).
fn removals(old: &Value, new: &mut Value) {
    let (Value::Object(old), Value::Object(new)) = (old, new) else {
        return;
    };
    for (key, before) in old {
        match new.get_mut(key) {
            Some(after) => removals(before, after),
            None => {
                new.insert(key.clone(), Value::Null);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{removals, shown_phase, Phase};
    use crate::controller::crd::phase_reason;

    #[test]
    fn the_library_drift_default_is_the_addon_resources() {
        use crate::controller::crd::{Drift, DriftPolicy};
        use crate::controller::engine::drift_spec;
        let library = crate::drift::Policy::default();
        assert_eq!(library, crate::drift::Policy::Correct);
        assert_eq!(drift_spec(None).policy, library);
        assert_eq!(drift_spec(Some(&Drift::default())).policy, library);
        assert_eq!(
            serde_json::to_value(library).unwrap(),
            serde_json::to_value(DriftPolicy::default()).unwrap()
        );
        assert_eq!(crate::drift::DriftSpec::default(), drift_spec(None));
    }

    #[test]
    fn the_ready_reason_is_the_phase_addonctl_status_says() {
        // What `addonctl status` says, and whether every selected cluster is healthy.
        let cases = [
            (Phase::Enabled, true, "Enabled"),
            (Phase::Enabling, false, "Enabling"),
            (Phase::Upgrading, false, "Upgrading"),
            (Phase::Failed, false, "Failed"),
            (Phase::Suspend, false, "Suspend"),
            (Phase::Disabling, false, "Disabling"),
            // A selected cluster not reached yet: the CLI reads the record's clusters only.
            (Phase::Enabled, false, "Enabling"),
            (Phase::Disabled, false, "Enabling"),
        ];
        for (cli, healthy, reason) in cases {
            assert_eq!(
                phase_reason(shown_phase(healthy, cli)),
                reason,
                "{cli:?} {healthy}"
            );
        }
    }

    #[test]
    fn a_status_patch_removes_nested_fields_gone_since_the_read() {
        let old = json!({"gate": {"clusters": {"m1": {"healthySinceMs": 5}, "m2": {}}},
                         "message": "waiting", "stage": 1});
        let mut new = json!({"gate": {"clusters": {"m1": {}}}, "stage": 2});
        removals(&old, &mut new);
        assert_eq!(
            new,
            json!({"gate": {"clusters": {"m1": {"healthySinceMs": null}, "m2": null}},
                   "message": null, "stage": 2})
        );
    }
}
