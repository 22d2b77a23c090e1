//! The one-shot staged rollout of the CLI: each batch is the library's enable with the
//! cumulative cluster list (the `clusters` argument), then the batch's gate is awaited (healthy
//! on the new revision for the soak time); a failed gate stops before anything else is applied.
//! An upgrade goes the same way: clusters running another version outside the cumulative list
//! stay in the `clusters` argument but are held ([`crate::plan::Plan::hold`]: untouched, their
//! objects and version carried over) until their stage comes. Every call into `plan`, `apply`
//! and `state` of this module is here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt as _;
use serde::Serialize;
use serde_json::Value;

use super::gate::{evaluate, GateState, Observation, Phase, RolloutState, Verdict};
use super::planner::{plan, ClusterLabels, RolloutPlan};
use super::{Error, Result, Rollout};
use crate::cluster::set::LOCAL;
use crate::cluster::{first_change, Cluster, Since};
use crate::context::{Context, Reporter};
use crate::params::{Input, RawInput};
use crate::plan::EnableRequest;
use crate::state::record::{ClusterInventory, ClusterRevision, Record};
use crate::state::to_value;
use crate::status::wait::MAX_WATCHED;

/// The longest pause between two observations of a gate unless told otherwise.
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
    /// The longest pause between two observations of a gate (a watched workload's change or a
    /// soak's end is observed at once).
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

/// Runs a staged rollout to its end: every stage passed, or the first failed gate. An addon
/// installed at another version is upgraded stage by stage: the clusters running it outside the
/// current stages are held (they keep what they run, untouched) until their stage comes.
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
        reporter.event(&crate::context::Progress::Stage {
            message: format!("cluster `{cluster}` is selected by no stage: not touched"),
        });
    }
    let mut state = RolloutState::default();
    let first = state.cumulative(&planned);
    let (addon, version, reached) = target(ctx, request, &first).await?;
    // Clusters the addon goes to that no stage selects (KubeVela's `local` for a runtime-cluster
    // addon): refused before anything is applied.
    let uncovered: Vec<String> = reached
        .into_iter()
        .filter(|c| planned.unselected.contains(c))
        .collect();
    if !uncovered.is_empty() {
        return Err(Error::Uncovered {
            addon,
            clusters: uncovered,
        });
    }
    // Every batch applies the version found now, whatever a registry publishes meanwhile.
    let request = &RunRequest {
        version: Some(version.clone()),
        ..request.clone()
    };
    let installed = find_record(ctx, &addon).await?;
    refuse_vela_upgrade(ctx, installed.as_ref(), &version, &first, &clusters).await?;
    let vela = crate::apply::uses_vela(&ctx.applier()).await?;
    let start = Split::of(installed.as_ref(), &version, &first, Keep::of(true, vela));
    if !start.kept.is_empty() {
        reporter.event(&crate::context::Progress::Stage {
            message: format!(
                "{} already run this version: kept in every step",
                quoted(&start.kept)
            ),
        });
    }
    if !start.held.is_empty() {
        let held: Vec<String> = start.held.iter().cloned().collect();
        reporter.event(&crate::context::Progress::Stage {
            message: format!(
                "{} run another version or other parameters: held at it until their stage comes",
                quoted(&held)
            ),
        });
    }
    let mut applied: BTreeSet<String> = BTreeSet::new();
    while let Some((stage, batch)) = state.current(&planned) {
        let (stage_name, batch) = (stage.name.clone(), batch.to_vec());
        let cumulative = state.cumulative(&planned);
        let split = Split::of(
            find_record(ctx, &addon).await?.as_ref(),
            &version,
            &cumulative,
            Keep::of(applied.is_empty(), vela),
        );
        reporter.event(&crate::context::Progress::Stage {
            message: format!("stage `{stage_name}`: applying to {}", quoted(&batch)),
        });
        apply(
            ctx,
            request,
            &split.targets(&cumulative),
            &split.held,
            reporter,
        )
        .await?;
        applied.extend(cumulative);
        applied.extend(split.kept);
        let record = read_record(ctx, &addon).await?;
        state.revision.clone_from(&record.version);
        let verdict =
            await_gate(ctx, &addon, &batch, &mut state, &planned, request, reporter).await?;
        state.settle(&planned, &verdict);
        say_verdict(reporter, &stage_name, &batch, &verdict);
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

fn say_verdict(reporter: &dyn Reporter, stage: &str, batch: &[String], verdict: &Verdict) {
    match verdict {
        Verdict::Passed { tolerated } if tolerated.is_empty() => {
            reporter.event(&crate::context::Progress::Stage {
                message: format!("stage `{stage}`: {} passed", quoted(batch)),
            });
        }
        Verdict::Passed { tolerated } => reporter.event(&crate::context::Progress::Stage {
            message: format!(
                "stage `{stage}`: {} passed ({} failure(s) tolerated)",
                quoted(batch),
                tolerated.len()
            ),
        }),
        Verdict::Failed { reason, .. } => {
            reporter.event(&crate::context::Progress::Stage {
                message: format!("stage `{stage}`: gate failed: {reason}"),
            });
        }
        Verdict::Waiting { .. } => {}
    }
}

/// Which clusters outside a step's cumulative list, running the version rolled out, the step
/// leaves as they are (kept) rather than holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Every one at the version: KubeVela's engine cannot hold a cluster at other parameters
    /// (its Application puts one revision everywhere).
    SameVersion,
    /// Those at the record's newest revision: after the rollout's first apply, the revision it
    /// made.
    SameRevision,
    /// None: before the rollout's first apply, a cluster at the version may still run other
    /// parameters, which must wait for its stage as another version would.
    Nothing,
}

impl Keep {
    /// The rule of a step: `first` (nothing applied by the rollout yet), `vela` (KubeVela's
    /// engine).
    pub fn of(first: bool, vela: bool) -> Keep {
        match (vela, first) {
            (true, _) => Keep::SameVersion,
            (false, true) => Keep::Nothing,
            (false, false) => Keep::SameRevision,
        }
    }
}

/// The clusters outside a step's cumulative list that run the addon: kept by the step's
/// [`Keep`] rule (in the step's cluster list, so that none of them loses it), or held at what
/// they run (in the list too, untouched until their stage comes).
#[derive(Debug, Default)]
pub struct Split {
    /// Left as they are, already running what the rollout applies.
    pub kept: Vec<String>,
    /// Held at another version or revision.
    pub held: BTreeSet<String>,
}

impl Split {
    /// The split of `record`'s clusters for a step of `version` over `cumulative`.
    pub fn of(record: Option<&Record>, version: &str, cumulative: &[String], keep: Keep) -> Split {
        let mut split = Split::default();
        let Some(record) = record else {
            return split;
        };
        let pending = record.pending.as_ref().map(|p| p.version.as_str());
        for (name, inventory) in record.dispatched_or_planned() {
            if inventory.objects.is_empty() || cumulative.contains(&name) {
                continue;
            }
            let same_version = record.cluster_version(&name).or(pending) == Some(version);
            let kept = same_version
                && match keep {
                    Keep::SameVersion => true,
                    Keep::SameRevision => record.runs_current(&name),
                    Keep::Nothing => false,
                };
            if kept {
                split.kept.push(name);
            } else {
                split.held.insert(name);
            }
        }
        split
    }

    /// The step's `clusters` argument: the cumulative list and the clusters kept and held, in
    /// name order (so that the steps of an upgrade store the same arguments: one revision).
    fn targets(&self, cumulative: &[String]) -> Vec<String> {
        let mut targets: BTreeSet<String> = cumulative.iter().cloned().collect();
        targets.extend(self.kept.iter().cloned());
        targets.extend(self.held.iter().cloned());
        targets.into_iter().collect()
    }
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

/// The addon and the version the rollout applies, and the clusters its topology names beyond
/// the first step's (planned once, with the first step's clusters).
async fn target(
    ctx: &Context,
    request: &RunRequest,
    first: &[String],
) -> Result<(String, String, Vec<String>)> {
    let planned = enable_plan(ctx, request, first).await?;
    let step = planned.steps.last().ok_or_else(|| Error::Invalid {
        message: format!("`{}` plans nothing to apply", request.reference),
    })?;
    let mut reached: Vec<String> = step
        .rendered
        .application
        .pointer("/spec/policies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("topology"))
        .filter_map(|p| p.pointer("/properties/clusters"))
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_str)
        .filter(|c| !first.iter().any(|f| f == c))
        .map(str::to_owned)
        .collect();
    reached.sort();
    reached.dedup();
    Ok((
        step.rendered.name.clone(),
        step.rendered.version.clone(),
        reached,
    ))
}

/// KubeVela's engine cannot hold clusters (its Application puts one revision everywhere): an
/// addon it deploys at another version on clusters outside the first step is refused.
async fn refuse_vela_upgrade(
    ctx: &Context,
    installed: Option<&Record>,
    version: &str,
    first: &[String],
    known: &[ClusterLabels],
) -> Result<()> {
    let Some(record) = installed.filter(|r| r.version != version) else {
        return Ok(());
    };
    if !crate::apply::uses_vela(&ctx.applier()).await? {
        return Ok(());
    }
    let runs_on: Vec<String> = if record.clusters.iter().any(|c| c == "*") {
        known.iter().map(|c| c.name.clone()).collect()
    } else if record.clusters.is_empty() {
        vec![LOCAL.to_owned()]
    } else {
        record.clusters.clone()
    };
    let outside: Vec<String> = runs_on.into_iter().filter(|c| !first.contains(c)).collect();
    if outside.is_empty() {
        return Ok(());
    }
    Err(Error::StagedUpgrade {
        addon: record.name.clone(),
        installed: record.version.clone(),
        target: version.to_owned(),
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

/// The library's enable with `clusters` as the `clusters` argument, the clusters of `hold`
/// keeping what they run. Clusters that fail are not an error here: the gate sees them failed.
async fn apply(
    ctx: &Context,
    request: &RunRequest,
    clusters: &[String],
    hold: &BTreeSet<String>,
    reporter: &dyn Reporter,
) -> Result<()> {
    let mut planned = enable_plan(ctx, request, clusters).await?;
    planned.hold.clone_from(hold);
    match crate::apply::execute(&ctx.applier(), &planned, false, reporter).await {
        Ok(_) | Err(crate::Error::Clusters { .. }) => Ok(()),
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

/// How a revision is named in a gate: its version and number.
fn revision_label(revision: &ClusterRevision) -> String {
    match revision.number {
        Some(n) => format!("{} (revision {n})", revision.version),
        None => revision.version.clone(),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The least pause between two observations of a gate.
const MIN_PAUSE: Duration = Duration::from_millis(50);

/// The first spacing after a wake that changed nothing said (see [`await_gate`]).
const MIN_SPACING: Duration = Duration::from_millis(20);

/// Observes the batch until its gate passes or fails (bounded by the progress deadline).
/// Between observations it watches the batch's workloads (not healthy ones first, at most
/// [`MAX_WATCHED`]) from the versions read, and observes again at the first change, when a
/// soak ends, or after `poll_interval` (for what no watch covers: the record, a cluster's
/// errors), whichever comes first. A wake that changed nothing said spaces the next
/// observation out (20 ms, doubling up to the pause).
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
    let target = revision_label(&read_record(ctx, addon).await?.current_revision());
    // The batch's clients, made once for the gate (each look reads the record again).
    let names: BTreeSet<String> = batch.iter().cloned().collect();
    let clients = ctx.state().clients(&names).await?;
    let mut gate = GateState::new(batch, now_ms());
    let mut last_said: Vec<(String, String)> = Vec::new();
    let mut spacing = Duration::ZERO;
    let mut woken = false;
    loop {
        let record = read_record(ctx, addon).await?;
        let observed = observe(&clients, &record, batch).await;
        let now = now_ms();
        let verdict = evaluate(&mut gate, &target, &observed.observations, limits, now);
        state.gate = Some(gate.clone());
        let Verdict::Waiting { pending } = &verdict else {
            return Ok(verdict);
        };
        // Said when the reasons change (a soak's countdown is not a change), with the soak
        // time left when it starts.
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
        let poll = request.poll_interval.max(MIN_PAUSE);
        if reasons == last_said {
            if woken {
                spacing = (spacing * 2).max(MIN_SPACING).min(poll);
            }
        } else {
            for (cluster, why) in pending {
                reporter.event(&crate::context::Progress::Stage {
                    message: format!("waiting for `{cluster}`: {why}"),
                });
            }
            last_said = reasons;
            spacing = Duration::ZERO;
        }
        let until_change =
            Duration::from_millis(gate.next_change_ms(limits, now).saturating_sub(now));
        let deadline =
            tokio::time::Instant::now() + poll.min(until_change).max(Duration::from_millis(1));
        if !spacing.is_zero() {
            tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + spacing)).await;
        }
        woken = first_change(observed.watches(), deadline).await;
    }
}

/// One observation of a batch: what each cluster runs, and what the pause after it watches.
struct Observed {
    observations: Vec<Observation>,
    /// The workloads read, each with its cluster's client and the version to watch it from.
    workloads: Vec<Workload>,
}

/// A workload read: whether it was healthy, and since which version a change is new (empty
/// for one that did not exist: a watch from no version sees its creation).
struct Workload {
    cluster: Cluster,
    object: crate::state::record::ObjectRef,
    since: String,
    healthy: bool,
}

impl Observed {
    /// The workloads to watch, not healthy ones first, at most [`MAX_WATCHED`].
    fn watches(&self) -> Vec<(&Cluster, Since<'_>)> {
        let mut workloads: Vec<&Workload> = self.workloads.iter().collect();
        workloads.sort_by_key(|w| w.healthy);
        workloads
            .into_iter()
            .take(MAX_WATCHED)
            .map(|w| (&w.cluster, w.object.since(&w.since)))
            .collect()
    }
}

/// What each cluster of the batch runs: the revision the record says it was applied at, when
/// its apply is complete there (not pending, no error), and whether its workloads are healthy
/// (the clusters read at once, bounded, through `clients`).
async fn observe(
    clients: &BTreeMap<String, std::result::Result<Cluster, String>>,
    record: &Record,
    batch: &[String],
) -> Observed {
    let reads = batch.iter().map(|name| {
        let client = clients.get(name);
        async move {
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
            let mut workloads = Vec::new();
            match (inventory, client) {
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
                    observation.revision =
                        record.cluster_revision(name).map(|r| revision_label(&r));
                    match workloads_healthy(cluster, inventory, &mut workloads).await {
                        Ok(()) => observation.healthy = true,
                        Err(why) => observation.reason = Some(why),
                    }
                }
                (Some(_), None) => observation.reason = Some(format!("no client for `{name}`")),
            }
            (observation, workloads)
        }
    });
    let read: Vec<(Observation, Vec<Workload>)> = futures::stream::iter(reads)
        .buffered(crate::state::clusters::CLUSTER_CONCURRENCY)
        .collect()
        .await;
    let (observations, workloads): (Vec<Observation>, Vec<Vec<Workload>>) =
        read.into_iter().unzip();
    Observed {
        observations,
        workloads: workloads.into_iter().flatten().collect(),
    }
}

/// Every workload of the inventory exists, its controller has observed its current spec
/// (`observedGeneration` = `generation`) and all its replicas are updated and ready. Each one
/// read is added to `read` (up to the first that is not healthy).
async fn workloads_healthy(
    cluster: &Cluster,
    inventory: &ClusterInventory,
    read: &mut Vec<Workload>,
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
            .map_err(|e| e.to_string())?;
        let mut workload = Workload {
            cluster: cluster.clone(),
            object: object.object.clone(),
            since: String::new(),
            healthy: false,
        };
        let Some(live) = live else {
            read.push(workload);
            return Err(format!("{} is missing", object.object));
        };
        workload.since = live.metadata.resource_version.clone().unwrap_or_default();
        let ready = workload_ready(kind, &to_value(&live));
        workload.healthy = ready.is_ok();
        read.push(workload);
        ready.map_err(|why| format!("{}: {why}", object.object))?;
    }
    Ok(())
}

/// Whether one workload is ready on its current generation: as `status` counts it
/// ([`crate::status::health::replicas_of`]), every desired replica ready at the current version.
fn workload_ready(kind: &str, live: &Value) -> std::result::Result<(), String> {
    let int = |p: &str| live.pointer(p).and_then(Value::as_i64);
    let generation = int("/metadata/generation").unwrap_or(0);
    let observed = int("/status/observedGeneration").unwrap_or(0);
    if observed < generation {
        return Err(format!(
            "its controller has not observed generation {generation} yet (observed {observed})"
        ));
    }
    let (desired, ready) = crate::status::health::replicas_of(kind, live);
    let (desired, ready) = (desired.unwrap_or(0), ready.unwrap_or(0));
    if ready < desired {
        return Err(format!(
            "{ready} of {desired} replicas ready at the current version"
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

    use super::{workload_ready, Keep, Split};
    use crate::state::record::{ClusterInventory, ClusterRevision, DispatchedObject, Record};

    #[test]
    fn clusters_outside_the_steps_are_kept_on_the_version_rolled_out_and_held_on_another() {
        let mut record: Record = serde_json::from_value(json!({
            "name": "a", "version": "1.1.0", "registry": "local", "installedBy": "user",
            "argsHash": "", "application": false,
        }))
        .unwrap();
        let holding = |version: &str, objects: usize| ClusterInventory {
            objects: vec![
                DispatchedObject {
                    object: serde_json::from_value(
                        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "c"})
                    )
                    .unwrap(),
                    uid: String::new(),
                    created: true,
                };
                objects
            ],
            revision: Some(ClusterRevision {
                version: version.to_owned(),
                number: None,
                parameters: None,
            }),
            ..ClusterInventory::default()
        };
        record.dispatched.insert("m1".into(), holding("1.0.0", 1));
        record.dispatched.insert("m2".into(), holding("1.1.0", 1));
        record.dispatched.insert("m3".into(), holding("1.0.0", 1));
        record.dispatched.insert("m4".into(), holding("1.0.0", 0));

        let split = Split::of(
            Some(&record),
            "1.1.0",
            &["m1".to_owned()],
            Keep::SameRevision,
        );

        assert_eq!(split.kept, ["m2"]);
        assert_eq!(split.held.iter().collect::<Vec<_>>(), ["m3"]);
        let first = Split::of(Some(&record), "1.1.0", &["m1".to_owned()], Keep::Nothing);
        assert!(first.kept.is_empty(), "{first:?}");
        assert_eq!(first.held.iter().collect::<Vec<_>>(), ["m2", "m3"]);
        assert_eq!(
            split.targets(&["m1".to_owned(), "m0".to_owned()]),
            ["m0", "m1", "m2", "m3"]
        );
        let fresh = Split::of(None, "1.1.0", &["m1".to_owned()], Keep::SameVersion);
        assert!(fresh.kept.is_empty() && fresh.held.is_empty());
    }

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
        // Mid-rollout: the old pod still serves, the new one is not ready.
        let rolling = json!({"metadata": {"generation": 2}, "spec": {"replicas": 1},
            "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1,
                       "readyReplicas": 1}});
        let waiting = workload_ready("Deployment", &rolling).unwrap_err();
        assert!(waiting.contains("0 of 1"), "{waiting}");
    }
}
