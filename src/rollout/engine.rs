//! The one-shot staged rollout of the CLI: each batch is the library's enable with the
//! cumulative cluster list (the `clusters` argument), then the batch's gate is awaited (healthy
//! on the new revision for the soak time); a failed gate stops before anything else is applied.
//! Every call into `plan`, `apply` and `state` of this module is here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use super::gate::{evaluate, GateState, Observation, Phase, RolloutState, Verdict};
use super::planner::{plan, ClusterLabels, RolloutPlan};
use super::{Error, Result, Rollout};
use crate::cluster::set::LOCAL;
use crate::cluster::Cluster;
use crate::context::{Context, Reporter};
use crate::params::{Input, RawInput};
use crate::plan::EnableRequest;
use crate::state::record::{ClusterInventory, Record};
use crate::state::to_value;

/// How often a gate is observed unless told otherwise.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(2);

/// What to roll out, and how.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// `name`, `registry/name` or a directory.
    pub reference: String,
    /// A version; `None` = the newest.
    pub version: Option<String>,
    /// Values files (`-f`), later wins.
    pub values_files: Vec<PathBuf>,
    /// `key=value` pairs.
    pub pairs: Vec<String>,
    /// `--set-file key=path`.
    pub set_files: Vec<String>,
    /// The stages.
    pub rollout: Rollout,
    /// Skip the `system` requirement checks.
    pub skip_version_check: bool,
    /// Adopt existing objects addonctl did not create.
    pub adopt: bool,
    /// How often each gate is observed.
    pub poll_interval: Duration,
}

/// What a run did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    /// The addon.
    pub addon: String,
    /// The plan followed.
    pub plan: RolloutPlan,
    /// Where it ended (phase, clusters done, failures and why).
    pub state: RolloutState,
    /// Clusters of the plan never applied (later batches and stages of a stopped rollout).
    pub untouched: Vec<String>,
}

impl RunReport {
    /// Whether every stage passed.
    pub fn succeeded(&self) -> bool {
        self.state.phase == Phase::Succeeded
    }
}

/// Runs a staged rollout to its end: every stage passed, or the first failed gate.
pub async fn run(
    ctx: &Context,
    request: &RunRequest,
    reporter: &dyn Reporter,
) -> Result<RunReport> {
    request.rollout.validate()?;
    let clusters = known_clusters(ctx).await?;
    let planned = plan(&request.rollout, &clusters);
    if planned.selected().is_empty() {
        return Err(Error::NothingSelected {
            known: clusters.into_iter().map(|c| c.name).collect(),
        });
    }
    for cluster in &planned.unselected {
        reporter.step(&format!(
            "cluster `{cluster}` is selected by no stage: not touched"
        ));
    }
    let mut state = RolloutState::default();
    let first = state.cumulative(&planned);
    let kept = already_running(ctx, request, &first).await?;
    if !kept.is_empty() {
        reporter.step(&format!(
            "{} already run this version: kept in every step",
            quoted(&kept)
        ));
    }
    let mut addon = String::new();
    let mut applied: BTreeSet<String> = BTreeSet::new();
    while let Some((stage, batch)) = state.current(&planned) {
        let (stage_name, batch) = (stage.name.clone(), batch.to_vec());
        let mut targets = state.cumulative(&planned);
        for cluster in &kept {
            if !targets.contains(cluster) {
                targets.push(cluster.clone());
            }
        }
        reporter.step(&format!(
            "stage `{stage_name}`: applying to {}",
            quoted(&batch)
        ));
        addon = apply(ctx, request, &targets, reporter).await?;
        applied.extend(targets);
        let record = read_record(ctx, &addon).await?;
        state.revision.clone_from(&record.version);
        let verdict =
            await_gate(ctx, &addon, &batch, &mut state, &planned, request, reporter).await?;
        state.settle(&planned, &verdict);
        match &verdict {
            Verdict::Passed { tolerated } if tolerated.is_empty() => {
                reporter.step(&format!("stage `{stage_name}`: {} passed", quoted(&batch)));
            }
            Verdict::Passed { tolerated } => reporter.step(&format!(
                "stage `{stage_name}`: {} passed ({} failure(s) tolerated)",
                quoted(&batch),
                tolerated.len()
            )),
            Verdict::Failed { reason, .. } => {
                reporter.step(&format!("stage `{stage_name}`: gate failed: {reason}"));
            }
            Verdict::Waiting { .. } => {}
        }
    }
    let untouched = planned
        .selected()
        .into_iter()
        .filter(|c| !applied.contains(c))
        .collect();
    Ok(RunReport {
        addon,
        plan: planned,
        state,
        untouched,
    })
}

/// `local` (no labels) and every joined cluster with its labels.
async fn known_clusters(ctx: &Context) -> Result<Vec<ClusterLabels>> {
    let mut clusters = vec![ClusterLabels {
        name: LOCAL.to_owned(),
        labels: BTreeMap::new(),
    }];
    clusters.extend(
        ctx.state()
            .joined()
            .await?
            .into_iter()
            .map(|(info, _)| ClusterLabels {
                name: info.name,
                labels: info.labels,
            }),
    );
    Ok(clusters)
}

/// The clusters that already hold the addon at the version about to be rolled out: every step
/// keeps them in its cluster list, so that none of them loses the addon. The record holds one
/// revision for every cluster, so an installed addon at ANOTHER version on clusters outside the
/// first batch is refused: the first step would remove it from them until their stage comes.
async fn already_running(
    ctx: &Context,
    request: &RunRequest,
    first: &[String],
) -> Result<Vec<String>> {
    let planned = enable_plan(ctx, request, first).await?;
    let Some(step) = planned.steps.last() else {
        return Ok(Vec::new());
    };
    let Some(record) = find_record(ctx, &step.rendered.name).await? else {
        return Ok(Vec::new());
    };
    let holding: Vec<String> = record
        .dispatched_or_planned()
        .into_iter()
        .filter(|(_, inventory)| !inventory.objects.is_empty())
        .map(|(name, _)| name)
        .collect();
    if record.version == step.rendered.version {
        return Ok(holding);
    }
    let outside: Vec<String> = holding.into_iter().filter(|c| !first.contains(c)).collect();
    if outside.is_empty() {
        return Ok(Vec::new());
    }
    Err(Error::StagedUpgrade {
        addon: record.name,
        installed: record.version,
        target: step.rendered.version.clone(),
        clusters: outside,
    })
}

/// The library's plan of an enable with `clusters` as the `clusters` argument.
async fn enable_plan(
    ctx: &Context,
    request: &RunRequest,
    clusters: &[String],
) -> Result<crate::plan::Plan> {
    let (args, _) = Input::read(&RawInput {
        values_files: &request.values_files,
        pairs: &request.pairs,
        set_files: &request.set_files,
        clusters: Some(clusters),
    })
    .map_err(crate::Error::from)?;
    let enable = EnableRequest {
        reference: request.reference.clone(),
        version: request.version.clone(),
        args,
        skip_version_check: request.skip_version_check,
        adopt: request.adopt,
        ..EnableRequest::default()
    };
    Ok(crate::plan::plan(&ctx.planner(), &enable, false).await?)
}

/// The library's enable with `clusters` as the `clusters` argument. Clusters that fail are not
/// an error here: the gate sees them failed. Returns the addon's name.
async fn apply(
    ctx: &Context,
    request: &RunRequest,
    clusters: &[String],
    reporter: &dyn Reporter,
) -> Result<String> {
    let planned = enable_plan(ctx, request, clusters).await?;
    let name = planned
        .steps
        .last()
        .map(|s| s.rendered.name.clone())
        .unwrap_or_default();
    match crate::apply::execute(&ctx.applier(), &planned, false, reporter).await {
        Ok(_) | Err(crate::Error::Clusters { .. }) => Ok(name),
        Err(e) => Err(e.into()),
    }
}

async fn find_record(ctx: &Context, addon: &str) -> Result<Option<Record>> {
    Ok(ctx.state().record(addon).await?)
}

async fn read_record(ctx: &Context, addon: &str) -> Result<Record> {
    find_record(ctx, addon).await?.ok_or_else(|| {
        Error::from(crate::Error::NotEnabled {
            addon: addon.to_owned(),
        })
    })
}

/// The revision a record describes: its version and arguments.
fn revision_of(record: &Record) -> String {
    let hash: String = record.args_hash.chars().take(12).collect();
    format!("{} ({hash})", record.version)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Observes the batch until its gate passes or fails (bounded by the progress deadline).
async fn await_gate(
    ctx: &Context,
    addon: &str,
    batch: &[String],
    state: &mut RolloutState,
    planned: &RolloutPlan,
    request: &RunRequest,
    reporter: &dyn Reporter,
) -> Result<Verdict> {
    let Some(limits) = state.limits(planned) else {
        return Ok(Verdict::Passed {
            tolerated: Vec::new(),
        });
    };
    let target = revision_of(&read_record(ctx, addon).await?);
    let mut gate = GateState::new(batch, now_ms());
    let mut last_said: Vec<(String, String)> = Vec::new();
    loop {
        let record = read_record(ctx, addon).await?;
        let observations = observe(ctx, &record, batch).await?;
        let verdict = evaluate(&mut gate, &target, &observations, limits, now_ms());
        state.gate = Some(gate.clone());
        let Verdict::Waiting { pending } = &verdict else {
            return Ok(verdict);
        };
        // Said when the reasons change (a soak's countdown is not a change).
        let reasons: Vec<(String, String)> = pending
            .iter()
            .map(|(c, why)| {
                let why = if why.starts_with("soaking") {
                    "soaking"
                } else {
                    why
                };
                (c.clone(), why.to_owned())
            })
            .collect();
        if reasons != last_said {
            for (cluster, why) in &reasons {
                reporter.step(&format!("waiting for `{cluster}`: {why}"));
            }
            last_said = reasons;
        }
        tokio::time::sleep(request.poll_interval.max(Duration::from_millis(50))).await;
    }
}

/// What each cluster of the batch runs: the record's revision when its apply is complete there
/// (not pending, no error), and whether its workloads are healthy.
async fn observe(ctx: &Context, record: &Record, batch: &[String]) -> Result<Vec<Observation>> {
    let names: BTreeSet<String> = batch.iter().cloned().collect();
    let clients = ctx.state().clients(&names).await?;
    let revision = revision_of(record);
    let mut out = Vec::with_capacity(batch.len());
    for name in batch {
        let pending = record
            .pending
            .as_ref()
            .is_some_and(|p| p.dispatched.contains_key(name));
        let inventory = record.dispatched.get(name);
        let mut observation = Observation {
            cluster: name.clone(),
            revision: None,
            healthy: false,
            reason: None,
            failed: false,
        };
        match (inventory, clients.get(name)) {
            (Some(ClusterInventory { error: Some(e), .. }), _) => {
                observation.failed = true;
                observation.reason = Some(format!("the apply failed: {e}"));
            }
            (_, Some(Err(e))) => observation.reason = Some(e.clone()),
            (None, _) => observation.reason = Some("not applied yet".to_owned()),
            (Some(_), _) if pending => {
                observation.reason = Some("the apply has not finished there".to_owned());
            }
            (Some(inventory), Some(Ok(cluster))) => {
                observation.revision = Some(revision.clone());
                match workloads_healthy(cluster, inventory).await {
                    Ok(()) => observation.healthy = true,
                    Err(why) => observation.reason = Some(why),
                }
            }
            (Some(_), None) => observation.reason = Some(format!("no client for `{name}`")),
        }
        out.push(observation);
    }
    Ok(out)
}

/// Every workload of the inventory exists, its controller has observed its current spec
/// (`observedGeneration` = `generation`) and all its replicas are updated and ready.
async fn workloads_healthy(
    cluster: &Cluster,
    inventory: &ClusterInventory,
) -> std::result::Result<(), String> {
    for object in &inventory.objects {
        let kind = object.object.kind.as_str();
        if !matches!(kind, "Deployment" | "StatefulSet" | "DaemonSet") {
            continue;
        }
        let live = cluster
            .get(
                &object.object.gvk(),
                object.object.namespace.as_deref(),
                &object.object.name,
            )
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{} is missing", object.object))?;
        workload_ready(kind, &to_value(&live))
            .map_err(|why| format!("{}: {why}", object.object))?;
    }
    Ok(())
}

/// Whether one workload is ready on its current generation.
fn workload_ready(kind: &str, live: &Value) -> std::result::Result<(), String> {
    let int = |p: &str| live.pointer(p).and_then(Value::as_i64);
    let generation = int("/metadata/generation").unwrap_or(0);
    let observed = int("/status/observedGeneration").unwrap_or(0);
    if observed < generation {
        return Err(format!(
            "its controller has not observed generation {generation} yet (observed {observed})"
        ));
    }
    let (desired, updated, ready) = if kind == "DaemonSet" {
        (
            int("/status/desiredNumberScheduled").unwrap_or(0),
            int("/status/updatedNumberScheduled").unwrap_or(0),
            int("/status/numberReady").unwrap_or(0),
        )
    } else {
        (
            int("/spec/replicas").unwrap_or(1),
            int("/status/updatedReplicas").unwrap_or(0),
            int("/status/readyReplicas").unwrap_or(0),
        )
    };
    if updated < desired || ready < desired {
        return Err(format!(
            "{ready} of {desired} replicas ready, {updated} updated"
        ));
    }
    Ok(())
}

fn quoted(clusters: &[String]) -> String {
    clusters
        .iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::workload_ready;

    #[test]
    fn a_workload_is_ready_only_on_its_current_generation() {
        let deployment = |generation: i64, observed: i64, ready: i64| {
            json!({"metadata": {"generation": generation}, "spec": {"replicas": 2},
                   "status": {"observedGeneration": observed, "updatedReplicas": ready,
                              "readyReplicas": ready}})
        };
        assert!(workload_ready("Deployment", &deployment(2, 2, 2)).is_ok());
        let stale = workload_ready("Deployment", &deployment(3, 2, 2)).unwrap_err();
        assert!(stale.contains("generation 3"), "{stale}");
        let short = workload_ready("Deployment", &deployment(2, 2, 1)).unwrap_err();
        assert!(short.contains("1 of 2"), "{short}");
        let daemon_set = json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1,
            "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberReady": 3}});
        assert!(workload_ready("DaemonSet", &daemon_set).is_ok());
    }
}
