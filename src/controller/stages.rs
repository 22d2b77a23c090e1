//! The controller drives an `Addon`'s `spec.rollout` with the rollout library
//! ([`crate::rollout`]): the stages are planned over the target clusters when a rollout starts
//! (a new version, other parameters; see [`Key`]), each batch is applied with the clusters before it (the
//! cluster set grows stage by stage), and its gate is evaluated at every reconcile until it
//! passes (next batch), fails (the rollout stops: later batches and stages untouched) or the
//! progress deadline passes. Between reconciles the progress lives in `status.rollout` (the
//! library's [`RolloutState`], the plan, the revision the gate waits for), so a restarted or
//! newly elected controller resumes where it stands: a batch whose gate is recorded is never
//! applied again, and a batch is applied only after the one before it passed.
//!
//! Rules: clusters newly selected while a rollout progresses wait for its end; once it has
//! succeeded, they get the rolled-out revision at once (the ordinary reconcile does it). A
//! paused rollout applies nothing and keeps its status. Clusters outside the batches applied
//! so far are held at what they run (direct engine: untouched, their objects and revision
//! carried over in the record) until their stage comes: another version, or the same version
//! with other parameters (a rollout of a parameter change is staged like an upgrade), as
//! `rollout run` does. KubeVela's engine cannot hold clusters: there a rollout to another
//! version is refused (`Degraded`, reason `StagedUpgradeUnsupported`), and the clusters already
//! at the version get new parameters with the first batch.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kube::runtime::controller::Action;
use kube::ResourceExt;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::crd::{condition, now, phase_reason, reason_phase};
use super::crd::{
    Addon, AddonSpec, AddonStatus, FailedCluster, RolloutPhase, RolloutStatus, StageStatus,
};
use super::data::Data;
use super::engine::{self, Desired};
use super::targets::{KnownCluster, Targets};
use super::{Error, Result};
use crate::rollout::engine::Keep;
use crate::rollout::gate::{GateLimits, Phase};
use crate::rollout::{evaluate, ClusterLabels, RolloutPlan, RolloutState, Verdict};
use crate::status::Phase as CliPhase;

/// How soon a batch's gate is first looked at after its apply.
const FIRST_LOOK: Duration = Duration::from_millis(200);

/// What a rollout pass works from.
pub(super) struct Inputs<'a> {
    /// The `Addon`.
    pub addon: &'a Addon,
    /// Its target clusters.
    pub targets: &'a Targets,
    /// The known clusters and their labels.
    pub known: &'a [KnownCluster],
    /// The parameters (each batch's `clusters` replaces theirs).
    pub parameters: Map<String, Value>,
    /// Parameters some target clusters get over them.
    pub overrides: crate::plan::Overrides,
    /// The version rolled out.
    pub version: String,
    /// The rollout's key.
    pub key: Key,
    /// Whose rights each batch is applied within.
    pub trust: engine::Trust,
}

/// What identifies a rollout: what its clusters are given and how it is staged.
///
/// Written as `<content>.<shape>`: the content is the digest of what a cluster is given (the
/// registry, the version the spec resolves to, the parameters, the secret parameters and the
/// referenced Secrets' versions, the overrides); the shape that of how it is rolled out (the
/// cluster selection and `rollout` but `paused`). `suspend` and `drift` change neither. Target
/// clusters are not part of it: a cluster joined or relabelled does not restart a rollout.
///
/// Any change starts a new rollout while the current one has not succeeded (editing the stages
/// restarts a failed one); once it has, only another content does: new stages or another
/// selection of clusters are no new revision to roll out (newly selected clusters get the
/// rolled-out one at once, as joined clusters do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Key {
    /// `<content>.<shape>`, as `status.rollout.key` keeps it.
    pub full: String,
    /// The keys earlier releases gave the same spec (a single digest of the spec but some
    /// fields): a rollout they recorded is this one.
    legacy: [String; 2],
}

impl Key {
    /// The key of `spec` resolving to `version`, with the referenced Secrets at
    /// `secret_versions`.
    pub(super) fn of(spec: &AddonSpec, version: &str, secret_versions: &[String]) -> Self {
        let digest = |value: &AddonSpec, tail: bool| {
            let mut hasher = Sha256::new();
            hasher.update(serde_json::to_vec(value).unwrap_or_default());
            if tail {
                hasher.update(version);
                hasher.update(secret_versions.join(","));
            }
            super::targets::short_hex(&hasher.finalize())
        };
        let mut unpaused = spec.clone();
        unpaused.suspend = false;
        if let Some(rollout) = &mut unpaused.rollout {
            rollout.paused = false;
        }
        let with_drift = digest(&unpaused, true);
        unpaused.drift = None;
        let without_drift = digest(&unpaused, true);
        // Every field of the spec goes to one part or is named as neither: a field added to
        // the spec must be placed here (the destructuring does not compile without it).
        let AddonSpec {
            registry,
            version: constraint,
            parameters,
            secret_parameters,
            overrides,
            clusters,
            cluster_selector,
            rollout,
            drift: _,
            suspend: _,
            allow: _,
            adopt: _,
        } = unpaused;
        let content = AddonSpec {
            registry,
            version: constraint,
            parameters,
            secret_parameters,
            overrides,
            ..AddonSpec::default()
        };
        let shape = AddonSpec {
            clusters,
            cluster_selector,
            rollout,
            ..AddonSpec::default()
        };
        Key {
            full: format!("{}.{}", digest(&content, true), digest(&shape, false)),
            legacy: [without_drift, with_drift],
        }
    }

    /// Whether a recorded rollout key is this rollout's.
    pub(super) fn is(&self, recorded: &str) -> bool {
        recorded == self.full || self.legacy.iter().any(|k| k == recorded)
    }

    /// Whether a recorded rollout gave the clusters what this one gives (its stages or cluster
    /// selection may differ).
    fn same_content(&self, recorded: &str) -> bool {
        let content = |key: &str| key.split_once('.').map(|(c, _)| c.to_owned());
        self.is(recorded)
            || (content(recorded).is_some() && content(recorded) == content(&self.full))
    }
}

/// The rollout status to continue from: the newer of the status's and the one this process
/// last wrote (a lagging cache never takes progress back); `None` when neither is of `key`.
pub(super) fn persisted(data: &Data, addon: &Addon, key: &Key) -> Option<RolloutStatus> {
    newest(data, addon).filter(|r| key.is(&r.key))
}

/// The newer of the status's rollout and the one this process last wrote.
fn newest(data: &Data, addon: &Addon) -> Option<RolloutStatus> {
    let from_status = addon.status.as_ref().and_then(|s| s.rollout.clone());
    let from_memo = data.memo(&addon.name_any()).rollout;
    match (from_status, from_memo) {
        (Some(s), Some(m)) if m.key == s.key && m.step > s.step => Some(m),
        (Some(s), _) => Some(s),
        (None, m) => m,
    }
}

/// Whether a rollout that gave the clusters what `key` gives has succeeded (the ordinary
/// reconcile takes over; new stages or another cluster selection alone start nothing).
pub(super) fn settled(data: &Data, addon: &Addon, key: &Key) -> bool {
    newest(data, addon)
        .is_some_and(|r| r.phase == RolloutPhase::Succeeded && key.same_content(&r.key))
}

/// One pass of the rollout: starts it, applies the next batch, or evaluates the current gate;
/// returns the status and when to look again.
pub(super) async fn drive(
    data: &Data,
    inputs: &Inputs<'_>,
    mut status: AddonStatus,
) -> Result<(AddonStatus, Action)> {
    let name = inputs.addon.name_any();
    let generation = status.observed_generation;
    let before = persisted(data, inputs.addon, &inputs.key);
    let mut rollout = match before.clone() {
        Some(rollout) => rollout,
        None => match start(data, inputs).await? {
            Ok(rollout) => rollout,
            Err(refusal) => {
                refuse(&mut status, &refusal, generation);
                return Ok((status, Action::await_change()));
            }
        },
    };
    let plan: RolloutPlan = serde_json::from_value(rollout.plan.clone())
        .map_err(|e| Error::Spec(format!("`status.rollout.plan` cannot be read: {e}")))?;
    let mut state: RolloutState = serde_json::from_value(rollout.state.clone())
        .map_err(|e| Error::Spec(format!("`status.rollout.state` cannot be read: {e}")))?;
    let paused = inputs.addon.spec.rollout.as_ref().is_some_and(|r| r.paused);
    if rollout.phase == RolloutPhase::Paused && !paused {
        // Resumed: the current batch's gate starts again (its soak and deadline from now; the
        // batch is not applied again).
        if let Some(gate) = &mut state.gate {
            let clusters: Vec<String> = gate.clusters.keys().cloned().collect();
            *gate = crate::rollout::GateState::new(&clusters, now_ms());
        }
    }
    // Whether the clusters run different revisions, when this pass read the record.
    let mut mixed = None;
    let action = if paused && state.phase == Phase::Progressing {
        rollout.phase = RolloutPhase::Paused;
        Action::await_change()
    } else {
        step(data, inputs, &plan, &mut state, &mut rollout, &mut mixed).await?
    };
    summarize(&mut rollout, &plan, &mut state, paused);
    set_conditions(&mut status, &rollout, generation, mixed);
    status.rollout_stage.clone_from(&rollout.stage);
    if before.as_ref().map(without_step) != Some(without_step(&rollout)) {
        rollout.step = before.as_ref().map_or(0, |r| r.step) + 1;
        data.update_memo(&name, |memo| memo.rollout = Some(rollout.clone()));
    }
    status.rollout = Some(rollout);
    Ok((status, action))
}

/// The rollout status with its step left out, for comparisons.
fn without_step(rollout: &RolloutStatus) -> RolloutStatus {
    RolloutStatus {
        step: 0,
        ..rollout.clone()
    }
}

/// Why a rollout cannot start.
struct Refusal {
    reason: &'static str,
    message: String,
}

/// A new rollout: the plan over the target clusters, the clusters kept in every step (those
/// already running the version), or why it cannot start.
async fn start(
    data: &Data,
    inputs: &Inputs<'_>,
) -> Result<std::result::Result<RolloutStatus, Refusal>> {
    let spec = inputs.addon.spec.rollout.clone().unwrap_or_default();
    let mut value = serde_json::to_value(&spec).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.remove("paused");
    }
    let library: crate::rollout::Rollout = match serde_json::from_value(value) {
        Ok(rollout) => rollout,
        Err(e) => return Err(Error::Spec(format!("`rollout`: {e}"))),
    };
    library
        .validate()
        .map_err(|e| Error::Spec(format!("`rollout`: {e}")))?;
    let names = inputs.targets.names(inputs.known);
    let clusters: Vec<ClusterLabels> = inputs
        .known
        .iter()
        .filter(|c| names.contains(&c.name.as_str()))
        .map(|c| ClusterLabels {
            name: c.name.clone(),
            labels: c.labels.clone(),
        })
        .collect();
    let plan = crate::rollout::plan(&library, &clusters);
    if plan.selected().is_empty() {
        return Ok(Err(Refusal {
            reason: "NothingSelected",
            message: format!(
                "no stage of `rollout` selects any target cluster (targets: {})",
                quoted(&names)
            ),
        }));
    }
    let mut state = RolloutState::new(&inputs.version);
    let first = state.cumulative(&plan);
    let name = inputs.addon.name_any();
    let ctx = data.shared.ctx();
    let vela = engine::uses_vela(&ctx).await?;
    let keep = Keep::of(true, vela);
    let (_, held) = engine::split(&ctx, &name, &inputs.version, &first, keep).await?;
    let held: Vec<String> = held
        .into_iter()
        .filter(|c| names.contains(&c.as_str()))
        .collect();
    if !held.is_empty() && vela {
        return Ok(Err(Refusal {
            reason: "StagedUpgradeUnsupported",
            message: format!(
                "another version is installed on {}: KubeVela's Application puts one revision on every cluster, so it cannot keep them at it until their stage comes; remove `rollout` to upgrade every cluster at once, or use the direct engine",
                quoted(&held),
            ),
        }));
    }
    Ok(Ok(RolloutStatus {
        version: inputs.version.clone(),
        key: inputs.key.full.clone(),
        phase: RolloutPhase::Progressing,
        stage: None,
        stages: Vec::new(),
        failed: Vec::new(),
        message: None,
        gate_revision: None,
        state: serde_json::to_value(&state).unwrap_or(Value::Null),
        plan: serde_json::to_value(&plan).unwrap_or(Value::Null),
        step: 0,
    }))
}

/// Applies the current batch (when its gate is not recorded yet) or evaluates its gate; a
/// passed gate moves on to the next batch at once. `mixed`: whether the record read last says
/// its clusters run different revisions.
async fn step(
    data: &Data,
    inputs: &Inputs<'_>,
    plan: &RolloutPlan,
    state: &mut RolloutState,
    rollout: &mut RolloutStatus,
    mixed: &mut Option<bool>,
) -> Result<Action> {
    if state.phase == Phase::Failed {
        rollout.phase = RolloutPhase::Failed;
        return Ok(Action::await_change());
    }
    rollout.phase = RolloutPhase::Progressing;
    // Bounded: each turn either returns or settles a batch.
    for _ in 0..=plan.stages.iter().map(|s| s.batches.len()).sum::<usize>() {
        let Some((_, batch)) = state.current(plan) else {
            rollout.phase = RolloutPhase::Succeeded;
            return Ok(Action::await_change());
        };
        let batch = batch.to_vec();
        let Some(mut gate) = state.gate.take() else {
            *mixed = Some(apply_batch(data, inputs, plan, state, rollout).await?);
            state.gate = Some(crate::rollout::GateState::new(&batch, now_ms()));
            return Ok(Action::requeue(FIRST_LOOK));
        };
        let Some(limits) = state.limits(plan) else {
            continue;
        };
        let target = rollout.gate_revision.clone().unwrap_or_default();
        let name = inputs.addon.name_any();
        let observed = engine::observe(&data.shared.ctx(), &name, &batch).await?;
        *mixed = Some(observed.mixed);
        let now = now_ms();
        let verdict = evaluate(&mut gate, &target, &observed.observations, limits, now);
        let poll = data.shared.settings.gate_poll;
        let wait = next_moment(&gate, limits, now, poll);
        state.gate = Some(gate);
        state.settle(plan, &verdict);
        match verdict {
            Verdict::Waiting { .. } => {
                data.gates.follow(inputs.addon, observed.watched, wait);
                return Ok(Action::requeue(wait));
            }
            Verdict::Failed { .. } => {
                data.gates.forget(&name);
                rollout.phase = RolloutPhase::Failed;
                return Ok(Action::await_change());
            }
            Verdict::Passed { .. } => data.gates.forget(&name),
        }
    }
    Ok(Action::requeue(data.shared.settings.gate_poll))
}

/// Applies the clusters done, the current batch and the clusters kept (those among the
/// current targets), and records the revision the batch's gate waits for; returns whether the
/// clusters run different revisions now.
async fn apply_batch(
    data: &Data,
    inputs: &Inputs<'_>,
    plan: &RolloutPlan,
    state: &mut RolloutState,
    rollout: &mut RolloutStatus,
) -> Result<bool> {
    let targets = inputs.targets.names(inputs.known);
    let name = inputs.addon.name_any();
    let cumulative = state.cumulative(plan);
    // Clusters running this version already are kept; those running another are held at it
    // (untouched) until their stage comes; both stay in the `clusters` argument. A cluster no
    // longer targeted is in neither, so it is cleaned.
    let ctx = data.shared.ctx();
    // Before the rollout's first apply (no gate revision yet), a cluster at the version may
    // still run other parameters: it waits for its stage too.
    let keep = Keep::of(
        rollout.gate_revision.is_none(),
        engine::uses_vela(&ctx).await?,
    );
    let (kept, mut hold) = engine::split(&ctx, &name, &inputs.version, &cumulative, keep).await?;
    hold.retain(|c| targets.contains(&c.as_str()));
    let mut clusters = cumulative;
    clusters.extend(kept);
    clusters.extend(hold.iter().cloned());
    clusters.retain(|c| targets.contains(&c.as_str()));
    clusters.sort();
    clusters.dedup();
    let mut args = inputs.parameters.clone();
    args.insert(
        "clusters".to_owned(),
        Value::Array(clusters.iter().cloned().map(Value::String).collect()),
    );
    let desired = Desired {
        name: name.clone(),
        registry: inputs.addon.spec.registry.clone(),
        version: Some(inputs.version.clone()),
        args,
        overrides: inputs.overrides.clone(),
        hold,
        trust: inputs.trust.clone(),
    };
    tracing::info!(addon = %name, clusters = ?clusters, hold = ?desired.hold, "rollout: applying a batch");
    if let Some(applied) = engine::apply_batch(&data.shared.ctx(), &desired).await? {
        for cluster in &applied.clusters {
            data.shared.metrics.applied(&cluster.name, &cluster.outcome);
        }
    }
    let observed = engine::observe(&data.shared.ctx(), &name, &[]).await?;
    rollout.gate_revision = observed.revision;
    Ok(observed.mixed)
}

/// When the gate is next looked at: the first soak to end or the deadline, or — while a
/// cluster is not healthy yet — `poll` (a change of its workloads, watched, comes sooner).
fn next_moment(
    gate: &crate::rollout::GateState,
    limits: GateLimits,
    now: u64,
    poll: Duration,
) -> Duration {
    let mut wait = Duration::from_millis(gate.next_change_ms(limits, now).saturating_sub(now));
    if gate
        .clusters
        .values()
        .any(|c| c.failed.is_none() && c.healthy_since_ms.is_none())
    {
        wait = wait.min(poll);
    }
    wait.max(FIRST_LOOK)
}

/// The readable fields of the rollout status from the library's state.
fn summarize(
    rollout: &mut RolloutStatus,
    plan: &RolloutPlan,
    state: &mut RolloutState,
    paused: bool,
) {
    let current = match state.phase {
        Phase::Failed => plan.stages.get(state.stage).map(|s| s.name.clone()),
        _ => state.current(plan).map(|(stage, _)| stage.name.clone()),
    };
    rollout.stage = current.or_else(|| plan.stages.last().map(|s| s.name.clone()));
    rollout.stages = plan
        .stages
        .iter()
        .map(|s| StageStatus {
            name: s.name.clone(),
            clusters: s.clusters().cloned().collect(),
            done: s
                .clusters()
                .filter(|c| state.done.contains(c))
                .cloned()
                .collect(),
            soak_seconds: s.soak_seconds,
        })
        .collect();
    rollout.failed = state
        .failures
        .iter()
        .map(|f| FailedCluster {
            cluster: f.cluster.clone(),
            stage: f.stage.clone(),
            reason: f.reason.clone(),
        })
        .collect();
    rollout.message = match rollout.phase {
        RolloutPhase::Paused if paused => Some(
            "`spec.rollout.paused` is true: nothing new is applied until it is false".to_owned(),
        ),
        _ => state.message.clone(),
    };
    rollout.state = serde_json::to_value(&*state).unwrap_or(Value::Null);
}

/// `Progressing`, `Degraded` and (while rolling out) `Ready` from the rollout's phase. While it
/// rolls out, `Ready` and `Progressing` name the phase `addonctl status` says: `Upgrading`
/// while the clusters run different revisions (`mixed`), else `Enabling`; when this pass did
/// not read the record (`None`), the phase named before stays.
fn set_conditions(
    status: &mut AddonStatus,
    rollout: &RolloutStatus,
    generation: Option<i64>,
    mixed: Option<bool>,
) {
    let stage = rollout.stage.clone().unwrap_or_default();
    match rollout.phase {
        RolloutPhase::Progressing => {
            let message = format!("rolling out {} (stage `{stage}`)", rollout.version);
            let before = status
                .condition("Ready")
                .and_then(|c| reason_phase(&c.reason))
                .filter(|p| matches!(p, CliPhase::Enabling | CliPhase::Upgrading));
            let phase = match (mixed, before) {
                (Some(true), _) | (None, None) => CliPhase::Upgrading,
                (Some(false), _) => CliPhase::Enabling,
                (None, Some(before)) => before,
            };
            set(
                status,
                generation,
                &[("Progressing", true), ("Ready", false)],
                phase_reason(phase),
                &message,
            );
            set(status, generation, &[("Degraded", false)], "AsDeclared", "");
        }
        RolloutPhase::Paused => {
            let message = format!(
                "the rollout of {} is paused at stage `{stage}`",
                rollout.version
            );
            set(
                status,
                generation,
                &[("Progressing", false)],
                "Paused",
                &message,
            );
        }
        RolloutPhase::Failed => {
            let failed: Vec<String> = rollout
                .failed
                .iter()
                .map(|f| format!("`{}` (stage `{}`): {}", f.cluster, f.stage, f.reason))
                .collect();
            let message = format!(
                "the rollout of {} stopped: {}; failed: {}",
                rollout.version,
                rollout.message.as_deref().unwrap_or("a gate failed"),
                failed.join("; ")
            );
            let types = [("Progressing", false), ("Degraded", true), ("Ready", false)];
            set(status, generation, &types, "RolloutFailed", &message);
        }
        RolloutPhase::Succeeded => {}
    }
}

/// A rollout that cannot start: `Degraded` with the reason, nothing applied.
fn refuse(status: &mut AddonStatus, refusal: &Refusal, generation: Option<i64>) {
    let types = [("Degraded", true), ("Progressing", false), ("Ready", false)];
    set(status, generation, &types, refusal.reason, &refusal.message);
}

/// Sets each `(type, status)` condition with one reason and message.
fn set(
    status: &mut AddonStatus,
    generation: Option<i64>,
    types: &[(&str, bool)],
    reason: &str,
    message: &str,
) {
    let now = now();
    for (type_, value) in types {
        status.set_condition(condition(type_, *value, reason, message, generation), &now);
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn quoted(clusters: &[impl AsRef<str>]) -> String {
    clusters
        .iter()
        .map(|c| format!("`{}`", c.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::rollout::gate::ClusterGate;

    #[test]
    fn a_rollout_under_way_is_upgrading_while_its_clusters_run_different_revisions() {
        let rollout = RolloutStatus {
            version: "1.1.0".to_owned(),
            phase: RolloutPhase::Progressing,
            stage: Some("one".to_owned()),
            ..RolloutStatus::default()
        };
        let reasons = |status: &AddonStatus| {
            ["Ready", "Progressing"].map(|t| {
                let c = status.condition(t).unwrap();
                (c.status.clone(), c.reason.clone())
            })
        };
        let mut status = AddonStatus::default();
        set_conditions(&mut status, &rollout, Some(2), Some(true));
        let upgrading = [
            ("False".to_owned(), "Upgrading".to_owned()),
            ("True".to_owned(), "Upgrading".to_owned()),
        ];
        assert_eq!(reasons(&status), upgrading);
        // A pass that read no record keeps the phase named before.
        set_conditions(&mut status, &rollout, Some(2), None);
        assert_eq!(reasons(&status), upgrading);
        // One revision everywhere (a first install, or the last batch applied): `enabling`.
        set_conditions(&mut status, &rollout, Some(2), Some(false));
        assert_eq!(status.condition("Ready").unwrap().reason, "Enabling");
        set_conditions(&mut status, &rollout, Some(2), None);
        assert_eq!(status.condition("Progressing").unwrap().reason, "Enabling");
    }

    #[test]
    fn a_pause_suspension_or_drift_policy_keeps_the_rollout_and_a_version_or_parameter_does_not() {
        let spec: AddonSpec = serde_json::from_value(json!({
            "parameters": {"replicas": 2},
            "rollout": {"stages": [{"name": "one"}]},
        }))
        .unwrap();
        let first = Key::of(&spec, "1.0.0", &[]);
        let mut paused = spec.clone();
        if let Some(rollout) = &mut paused.rollout {
            rollout.paused = true;
        }
        paused.suspend = true;
        assert_eq!(Key::of(&paused, "1.0.0", &[]), first);
        let mut watched = spec.clone();
        watched.drift = Some(serde_json::from_value(json!({"policy": "warn"})).unwrap());
        assert!(
            Key::of(&watched, "1.0.0", &[]).is(&first.full),
            "a drift policy is no rollout"
        );
        for other in [
            Key::of(&spec, "1.1.0", &[]),
            Key::of(&spec, "1.0.0", &["token@42".to_owned()]),
        ] {
            assert!(!other.is(&first.full) && !other.same_content(&first.full));
        }
        let mut edited = spec;
        edited.parameters = Some(serde_json::from_value(json!({"replicas": 3})).unwrap());
        let edited = Key::of(&edited, "1.0.0", &[]);
        assert!(!edited.is(&first.full) && !edited.same_content(&first.full));
    }

    #[test]
    fn new_stages_or_clusters_are_another_rollout_that_gives_the_clusters_the_same() {
        let spec: AddonSpec = serde_json::from_value(json!({
            "parameters": {"replicas": 2},
            "clusterSelector": {"matchLabels": {"env": "prod"}},
            "rollout": {"stages": [{"name": "one"}]},
        }))
        .unwrap();
        let first = Key::of(&spec, "1.0.0", &[]);
        let mut restaged = spec.clone();
        restaged.rollout = Some(
            serde_json::from_value(json!({"stages": [{"name": "one"}, {"name": "two"}]})).unwrap(),
        );
        restaged.cluster_selector = None;
        let restaged = Key::of(&restaged, "1.0.0", &[]);
        assert!(!restaged.is(&first.full), "a failed rollout restarts");
        assert!(restaged.same_content(&first.full), "a succeeded one stays");
    }

    #[test]
    fn a_rollout_recorded_by_an_earlier_release_is_recognised() {
        let spec: AddonSpec = serde_json::from_value(json!({
            "parameters": {"replicas": 2},
            "rollout": {"stages": [{"name": "one"}], "paused": true},
            "drift": {"policy": "warn"},
        }))
        .unwrap();
        // The single digests earlier releases wrote: the spec but `suspend` and `paused`
        // (and, later, `drift`), then the version and the Secrets' versions.
        let legacy = |drift: bool| {
            let mut old = spec.clone();
            if let Some(rollout) = &mut old.rollout {
                rollout.paused = false;
            }
            if !drift {
                old.drift = None;
            }
            let mut hasher = Sha256::new();
            hasher.update(serde_json::to_vec(&old).unwrap());
            hasher.update("1.0.0");
            hasher.update("");
            crate::controller::targets::short_hex(&hasher.finalize())
        };
        let key = Key::of(&spec, "1.0.0", &[]);
        assert!(key.is(&legacy(true)) && key.is(&legacy(false)));
        assert!(!Key::of(&spec, "1.0.1", &[]).same_content(&legacy(false)));
    }

    #[test]
    fn the_next_look_is_the_first_soak_end_or_a_health_poll_never_past_the_deadline() {
        let limits = GateLimits {
            soak_ms: 10_000,
            max_failures: 0,
            deadline_ms: 60_000,
        };
        let mut gate = crate::rollout::GateState::new(&["m1".to_owned(), "m2".to_owned()], 0);
        let soaking = |since| ClusterGate {
            healthy_since_ms: Some(since),
            ..ClusterGate::default()
        };
        gate.clusters.insert("m1".to_owned(), soaking(1_000));
        gate.clusters.insert("m2".to_owned(), soaking(5_000));
        let poll = Duration::from_secs(3);
        assert_eq!(
            next_moment(&gate, limits, 6_000, poll),
            Duration::from_secs(5)
        );
        gate.clusters
            .insert("m2".to_owned(), ClusterGate::default());
        assert_eq!(next_moment(&gate, limits, 6_000, poll), poll);
        assert_eq!(
            next_moment(&gate, limits, 59_000, poll),
            Duration::from_secs(1),
            "the deadline comes first"
        );
    }
}
