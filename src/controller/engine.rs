//! The controller's only way into the stages: every call into [`crate::plan`], [`crate::apply`],
//! [`crate::state`] and [`crate::status`] is in this file, so the reconciler above it works
//! with the controller's own small types. It is the CLI's path: plan → apply (which writes the
//! record, the one source of truth) → status; disable with its guards.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::crd::ClusterStatus;
use super::targets::KnownCluster;
use super::{Error, Result};
use crate::context::{Context, NoopReporter};
use crate::model::Constraint;

/// What the reconciler asks for.
#[derive(Debug, Clone)]
pub struct Desired {
    /// The addon.
    pub name: String,
    /// Its registry, if pinned.
    pub registry: Option<String>,
    /// A version or a version constraint; `None` = the newest.
    pub version: Option<String>,
    /// Every argument (the `clusters` argument included when the spec names targets).
    pub args: Map<String, Value>,
    /// Parameters some target clusters get over `args` (direct engine only).
    pub overrides: crate::plan::Overrides,
    /// Clusters that keep what they run (a rollout's later stages): nothing is applied, pruned
    /// or deleted there, and their record entries (objects, version) are carried over as they
    /// are, whether or not the `clusters` argument names them (name them, so that a later
    /// apply without `hold` moves them too instead of removing the addon from them). Empty:
    /// every target gets the version. Direct engine only: with KubeVela a non-empty `hold` is
    /// refused ([`crate::Error::HoldNeedsDirectEngine`]).
    pub hold: Vec<String>,
    /// Whose rights it is applied within, and what the review may flag.
    pub trust: Trust,
}

/// What an apply may do for an `Addon` (see [`super::trust`]).
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// The author whose rights bound the apply; `None`: the controller's own
    /// (`--authorize-as controller`).
    pub author: Option<super::trust::Author>,
    /// What the plan's review may flag (`spec.allow`).
    pub allow: Vec<super::crd::Allowance>,
    /// The parameters read from Secrets: each must be a `secret()` parameter.
    pub secret_parameters: Vec<String>,
    /// The answers of the author checks, kept a short while (the controller's, shared by its
    /// reconciles).
    pub reviews: std::sync::Arc<super::trust::Reviews>,
}

impl Desired {
    /// What the `Addon` `name` asks for at `version` with `parameters`, nothing held.
    pub fn of(
        name: String,
        spec: &super::crd::AddonSpec,
        version: String,
        parameters: super::targets::Parameters,
        trust: Trust,
    ) -> Desired {
        Desired {
            name,
            registry: spec.registry.clone(),
            version: Some(version),
            args: parameters.base,
            overrides: parameters.overrides,
            hold: Vec::new(),
            trust,
        }
    }
}

/// What an apply did.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// The version applied.
    pub version: String,
    /// The registry it came from.
    pub registry: String,
    /// Per cluster (direct engine): `applied` / `unchanged` / `failed`.
    pub clusters: Vec<ClusterStatus>,
    /// Whether the apply wrote nothing.
    pub unchanged: bool,
    /// What the plan's review flagged (and `spec.allow` allowed).
    pub flags: Vec<String>,
    /// Where the addon's package came from, pinned by digest, and how it was verified (OCI
    /// registries).
    pub source: Option<crate::model::provenance::Provenance>,
}

/// The addon's health as `status` reads it.
#[derive(Debug, Clone)]
pub struct Health {
    /// Per cluster the direct engine deployed to: `healthy`, `progressing` or `unreachable`.
    pub clusters: BTreeMap<String, (String, Option<String>)>,
    /// Whether the addon is enabled (every object there, every workload ready).
    pub enabled: bool,
    /// Why not, when `status` says.
    pub reason: Option<String>,
    /// Per cluster the direct engine deployed to, the version last applied there (they differ
    /// while clusters are held at an older one).
    pub versions: BTreeMap<String, String>,
    /// The phase `addonctl status` says.
    pub phase: crate::status::Phase,
}

/// Plans and applies `desired` as `addonctl enable` does, starting from the given arguments
/// only (the spec is the whole truth: `--reset-values`).
pub async fn apply(ctx: &Context, desired: &Desired) -> Result<Applied> {
    let reference = match &desired.registry {
        Some(registry) => format!("{registry}/{}", desired.name),
        None => desired.name.clone(),
    };
    let version = exact_version(ctx, &reference, desired.version.as_deref()).await?;
    let request = crate::plan::EnableRequest {
        reference,
        version,
        args: desired.args.clone().into(),
        reset_values: true,
        overrides: applied_overrides(desired),
        ..crate::plan::EnableRequest::default()
    };
    let mut plan = crate::plan::plan(&ctx.planner(), &request, false).await?;
    plan.hold = desired.hold.iter().cloned().collect();
    let flags = vouch(ctx, &mut plan, desired).await?;
    let reports = crate::apply::execute(&ctx.applier(), &plan, false, &NoopReporter).await?;
    let Some(root) = reports.iter().find(|r| r.name == desired.name) else {
        return Ok(Applied {
            unchanged: true,
            ..Applied::default()
        });
    };
    let clusters = root
        .clusters
        .iter()
        .map(|c| ClusterStatus {
            name: c.cluster.clone(),
            outcome: match (&c.error, c.changed + c.deleted) {
                (Some(_), _) => "failed",
                (None, 0) => "unchanged",
                (None, _) => "applied",
            }
            .to_owned(),
            health: "unknown".to_owned(),
            message: c.error.clone(),
        })
        .collect();
    let step = plan.steps.iter().find(|s| s.rendered.name == desired.name);
    Ok(Applied {
        version: root.version.clone(),
        registry: step
            .map(|s| s.rendered.registry.clone())
            .unwrap_or_default(),
        clusters,
        unchanged: reports.iter().all(crate::apply::StepReport::unchanged),
        flags,
        source: step.and_then(|s| s.package.provenance.clone()),
    })
}

/// What the review flags in a plan without reading a cluster (see
/// [`crate::apply::review::step_flags`]).
pub fn plan_flags(ctx: &Context, plan: &crate::plan::Plan) -> Vec<crate::plan::protect::Flag> {
    plan.steps
        .iter()
        .filter(|s| s.action != crate::plan::Action::Keep)
        .flat_map(|s| crate::apply::review::step_flags(s, &ctx.namespace))
        .collect()
}

/// The CustomResourceDefinitions among the plan's auxiliary outputs that are on the control
/// plane already and that the addon's record does not list: applying would replace a CRD the
/// addon does not own (flagged as `enable --dry-run`'s review flags it). The record is read
/// only for addons that render CRDs.
async fn replaced_crds(
    ctx: &Context,
    plan: &crate::plan::Plan,
) -> Result<Vec<crate::plan::protect::Flag>> {
    let mut out = Vec::new();
    for step in plan
        .steps
        .iter()
        .filter(|s| s.action != crate::plan::Action::Keep)
    {
        let rendered = &step.rendered;
        let renders_crds = rendered.outputs.iter().any(|(_, object)| {
            crate::state::record::ObjectRef::of(object)
                .is_some_and(|r| r.kind == "CustomResourceDefinition")
        });
        if !renders_crds {
            continue;
        }
        let record = ctx.state().record(&rendered.name).await?;
        out.extend(
            crate::apply::review::replaced_crds(&ctx.cluster, rendered, record.as_ref()).await?,
        );
    }
    Ok(out)
}

/// Before anything is applied: only `secret()` parameters are read from Secrets; what the
/// review flags is allowed by `spec.allow` (returned, to be shown); the author may do what the
/// plan does (see [`super::trust`]). Sets the plan's adoption per `spec.allow`.
async fn vouch(
    ctx: &Context,
    plan: &mut crate::plan::Plan,
    desired: &Desired,
) -> Result<Vec<String>> {
    let trust = &desired.trust;
    if let Some(root) = plan.steps.iter().find(|s| s.rendered.name == desired.name) {
        for parameter in &trust.secret_parameters {
            if !root.rendered.schema.is_secret(parameter) {
                return Err(Error::SecretParameter {
                    parameter: parameter.clone(),
                    reason: format!(
                        "it is not a `secret()` parameter of addon `{}`: only those are read from Secrets (their values are masked wherever they are shown); give it in `parameters`",
                        desired.name
                    ),
                });
            }
        }
    }
    // The author's rights first: what they could not do themselves is refused whatever
    // `spec.allow` says.
    if let Some(author) = &trust.author {
        super::trust::authorize(ctx, plan, author, &trust.reviews).await?;
    }
    let mut flags = plan_flags(ctx, plan);
    flags.extend(replaced_crds(ctx, plan).await?);
    super::trust::refuse_flags(&flags, &trust.allow)?;
    plan.adopt = trust.allow.contains(&super::crd::Allowance::Adopts);
    Ok(flags.iter().map(ToString::to_string).collect())
}

/// The overrides of `desired` for the clusters its `clusters` argument names (a rollout's batch
/// names fewer than the targets): groups without any of them are left out.
fn applied_overrides(desired: &Desired) -> crate::plan::Overrides {
    let mut overrides = desired.overrides.clone();
    if let Some(Value::Array(named)) = desired.args.get("clusters") {
        for group in &mut overrides.groups {
            group
                .clusters
                .retain(|c| named.iter().any(|n| n.as_str() == Some(c.as_str())));
        }
        overrides.groups.retain(|g| !g.clusters.is_empty());
    }
    overrides
}

/// A plain version as it is; a constraint → the newest version of the registries matching it.
pub(crate) async fn exact_version(
    ctx: &Context,
    reference: &str,
    version: Option<&str>,
) -> Result<Option<String>> {
    let Some(version) = version.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let plain = version
        .trim_start_matches('v')
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
        && !version.contains(".x");
    if plain {
        return Ok(Some(version.to_owned()));
    }
    let constraint = Constraint::parse(version)
        .map_err(|reason| Error::Spec(format!("`spec.version`: {reason}")))?;
    let found = ctx
        .catalog
        .find(reference, None, Some(&constraint), None)
        .await
        .map_err(crate::Error::from)?;
    Ok(found.addon.version)
}

/// The record's revision (its resourceVersion), `None` when there is no record.
pub async fn record_revision(ctx: &Context, name: &str) -> Result<Option<String>> {
    let record = ctx
        .cluster
        .get(
            &crate::model::wire::secret_gvk(),
            Some(&ctx.namespace),
            &crate::state::record::record_name(name),
        )
        .await
        .map_err(crate::Error::from)?;
    Ok(record.and_then(|r| r.metadata.resource_version))
}

/// The addon's health, per cluster, as `addonctl status` reads it.
pub async fn health(ctx: &Context, name: &str) -> Result<Health> {
    let status = crate::status::status(ctx.state(), name, None).await?;
    Ok(health_of(status))
}

/// The health `status` shows.
fn health_of(status: crate::status::Status) -> Health {
    let mut clusters = BTreeMap::new();
    let mut versions = BTreeMap::new();
    for cluster in &status.resources {
        if let Some(version) = &cluster.version {
            versions.insert(cluster.cluster.clone(), version.clone());
        }
        let (health, message) = cluster.health();
        let entry = (health.as_str().to_owned(), message);
        clusters.insert(cluster.cluster.clone(), entry);
    }
    Health {
        clusters,
        enabled: status.phase == crate::status::Phase::Enabled,
        reason: status.reason,
        versions,
        phase: status.phase,
    }
}

/// Disables the addon with the library's guards (dependents, users of its definitions);
/// `Ok(false)` when it was not enabled.
pub async fn disable(ctx: &Context, name: &str) -> Result<bool> {
    match crate::apply::disable(&ctx.applier(), name, false, &NoopReporter).await {
        Ok(_) => Ok(true),
        Err(crate::Error::NotEnabled { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// A cluster Secret's cluster name and labels; `None` for a Secret that is not a valid
/// cluster Secret (logged by the library).
pub fn known_cluster(secret: &Value) -> Option<KnownCluster> {
    let (info, _) = crate::cluster::set::ClusterCredentials::from_secret(secret).ok()?;
    Some(KnownCluster {
        name: info.name,
        labels: crate::apply::clusters::stored_labels(secret),
    })
}

/// Takes or renews the Lease `namespace/name` for `holder` (lasting `duration`) by the
/// library's lock rules ([`crate::state::lease::decide`], a holder whose process on this host
/// is gone counting as expired) and its writer ([`crate::state::lease::take`]); a renewal keeps
/// the time the Lease was acquired. `Ok(true)` when `holder` holds it now; `Ok(false)` when
/// another does, or wrote first.
pub async fn hold_lease(
    cluster: &crate::cluster::Cluster,
    namespace: &str,
    name: &str,
    holder: &str,
    duration: std::time::Duration,
) -> crate::cluster::Result<bool> {
    use crate::state::lease;
    let state = lease::read(cluster, namespace, name).await?;
    let now = k8s_openapi::chrono::Utc::now();
    let acquired = state
        .as_ref()
        .filter(|s| s.holder == holder)
        .and_then(|s| s.acquired);
    let decision = lease::decide(state.as_ref(), holder, now, false, lease::holder_is_gone);
    let write = lease::LeaseWrite {
        namespace,
        name,
        holder,
        duration,
        acquired: acquired.unwrap_or(now),
        now,
    };
    match lease::take(cluster, &write, &decision).await {
        Ok(taken) => Ok(taken.is_some()),
        Err(crate::cluster::Error::Conflict { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// What drift handling keeps per addon between reconciles: the `resourceVersion` cache and the
/// desired objects of the record's revision (rendered again only when the record changes).
#[derive(Debug, Default)]
pub struct DriftMemo {
    /// Objects as last applied or observed in sync.
    pub cache: crate::drift::DriftCache,
    /// The record revision `desired` was rendered for, and the objects.
    pub desired: Option<(Option<String>, crate::drift::engine::Desired)>,
    /// Per cluster, the record revision and the moment it was last listed and found in sync
    /// (no drift, no error).
    pub listed: BTreeMap<String, (Option<String>, Instant)>,
}

impl DriftMemo {
    /// Of the clusters the watches vouch for (`watched`), those a check may leave unlisted:
    /// listed and found in sync at this record `revision`, less than `full_check` ago.
    pub fn vouchable(
        &self,
        watched: &BTreeSet<String>,
        revision: Option<&String>,
        full_check: Duration,
    ) -> BTreeSet<String> {
        watched
            .iter()
            .filter(|cluster| {
                self.listed.get(*cluster).is_some_and(|(at, when)| {
                    at.as_ref() == revision && when.elapsed() < full_check
                })
            })
            .cloned()
            .collect()
    }

    /// Remembers the clusters `report` listed (those not `vouched`) and found in sync, at
    /// `revision`, as of `started`; forgets the others (listed again next time).
    fn listed(
        &mut self,
        report: &crate::drift::Report,
        vouched: &BTreeSet<String>,
        revision: Option<&String>,
        started: Instant,
    ) {
        let troubled: BTreeSet<&str> = report
            .drifts
            .iter()
            .map(|d| d.cluster.as_str())
            .chain(report.errors.iter().map(|e| e.cluster.as_str()))
            .collect();
        let reached: BTreeSet<&str> = report.places.iter().map(|p| p.cluster.as_str()).collect();
        self.listed
            .retain(|cluster, _| vouched.contains(cluster) && !troubled.contains(cluster.as_str()));
        for cluster in reached {
            if !vouched.contains(cluster) && !troubled.contains(cluster) {
                self.listed
                    .insert(cluster.to_owned(), (revision.cloned(), started));
            }
        }
    }
}

/// The `Addon`'s drift field in the drift module's terms.
pub fn drift_spec(drift: Option<&super::crd::Drift>) -> crate::drift::DriftSpec {
    use super::crd::DriftPolicy;
    let drift = drift.cloned().unwrap_or_default();
    crate::drift::DriftSpec {
        policy: match drift.policy {
            DriftPolicy::Correct => crate::drift::Policy::Correct,
            DriftPolicy::Warn => crate::drift::Policy::Warn,
            DriftPolicy::Ignore => crate::drift::Policy::Ignore,
        },
        exclusions: drift
            .exclusions
            .into_iter()
            .map(|e| crate::drift::Exclusion {
                kind: e.kind.unwrap_or_default(),
                namespace: e.namespace,
                name: e.name,
                paths: e.paths,
            })
            .collect(),
    }
}

/// Compares what the clusters hold with the addon's record (direct engine) and, per policy,
/// corrects or reports; `revision` is the record's revision, so the desired objects are
/// rendered once per revision. The `vouched` clusters are not listed (see
/// [`DriftMemo::vouchable`]).
pub async fn drift(
    ctx: &Context,
    name: &str,
    revision: Option<&String>,
    spec: &crate::drift::DriftSpec,
    memo: &mut DriftMemo,
    vouched: BTreeSet<String>,
    known: Option<crate::drift::engine::KnownOthers<'_>>,
) -> Result<crate::drift::Report> {
    let started = Instant::now();
    if spec.policy == crate::drift::Policy::Ignore {
        return Ok(crate::drift::Report {
            policy: crate::drift::Policy::Ignore,
            ..crate::drift::Report::default()
        });
    }
    let record = crate::drift::engine::record(ctx, name).await?;
    if record.dispatched.is_empty() {
        // KubeVela dispatched it (or it has no managed-cluster objects): nothing of addonctl's
        // own to compare.
        return Ok(crate::drift::Report {
            policy: spec.policy,
            ..crate::drift::Report::default()
        });
    }
    let current = memo
        .desired
        .as_ref()
        .is_some_and(|(r, _)| r.as_ref() == revision);
    if !current {
        let desired = crate::drift::engine::desired_objects(ctx, &record).await?;
        memo.desired = Some((revision.cloned(), desired));
    }
    let none = crate::drift::engine::Desired::default();
    let desired = memo.desired.as_ref().map_or(&none, |(_, d)| d);
    let report = crate::drift::engine::check_vouched(
        ctx,
        &record,
        desired,
        spec,
        &mut memo.cache,
        vouched.clone(),
        known,
    )
    .await?;
    memo.listed(&report, &vouched, revision, started);
    Ok(report)
}

/// What resolving the version of the `Addon` `name` asks for (no arguments, nothing held).
pub fn version_request(name: String, spec: &super::crd::AddonSpec) -> Desired {
    Desired {
        name,
        registry: spec.registry.clone(),
        version: spec.version.clone(),
        args: Map::new(),
        overrides: crate::plan::Overrides::default(),
        hold: Vec::new(),
        trust: Trust::default(),
    }
}

/// The exact version `desired` resolves to with the catalogue's listings as they are (a plain
/// version as it is; a constraint or none → the newest matching version of the registries).
pub async fn resolve_version(ctx: &Context, desired: &Desired) -> Result<String> {
    let reference = match &desired.registry {
        Some(registry) => format!("{registry}/{}", desired.name),
        None => desired.name.clone(),
    };
    if let Some(version) = exact_version(ctx, &reference, desired.version.as_deref()).await? {
        return Ok(version);
    }
    let found = ctx
        .catalog
        .find(&reference, None, None, None)
        .await
        .map_err(crate::Error::from)?;
    Ok(found.addon.version.unwrap_or_default())
}

/// [`apply`] for one batch of a staged rollout: clusters that fail are not an error here (the
/// record keeps their failure, and the rollout's gate counts it).
pub async fn apply_batch(ctx: &Context, desired: &Desired) -> Result<Option<Applied>> {
    match apply(ctx, desired).await {
        Ok(applied) => Ok(Some(applied)),
        Err(Error::Library(e)) if matches!(*e, crate::Error::Clusters { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Of the clusters holding the addon outside `cumulative` (a rollout's clusters so far): those
/// left as they are by the step's `keep` rule, and those held at what they run until their
/// stage comes, as `rollout run` splits them ([`crate::rollout::engine::Split`]).
pub async fn split(
    ctx: &Context,
    name: &str,
    version: &str,
    cumulative: &[String],
    keep: crate::rollout::engine::Keep,
) -> Result<(Vec<String>, Vec<String>)> {
    let record = ctx.state().record(name).await?;
    let split = crate::rollout::engine::Split::of(record.as_ref(), version, cumulative, keep);
    Ok((split.kept, split.held.into_iter().collect()))
}

/// Whether KubeVela deploys the addons (it cannot hold clusters at another version).
pub async fn uses_vela(ctx: &Context) -> Result<bool> {
    Ok(crate::apply::uses_vela(&ctx.applier()).await?)
}

/// The revision a record describes (its version and a digest of its arguments), as the
/// rollout's gate compares them.
fn revision_of(record: &crate::state::record::Record) -> String {
    let hash: String = record.args_hash.chars().take(12).collect();
    format!("{} ({hash})", record.version)
}

/// What a look at a rollout's gate saw.
#[derive(Debug, Default)]
pub struct Observed {
    /// The record's revision (`None` without a record).
    pub revision: Option<String>,
    /// Whether its clusters run different revisions (`addonctl status` says `upgrading`).
    pub mixed: bool,
    /// What each cluster of the batch runs, and whether it is healthy there.
    pub observations: Vec<crate::rollout::Observation>,
    /// What the wait for the next look watches: the batch's workloads (not ready ones first),
    /// from the versions read.
    pub watched: Vec<crate::status::wait::Watched>,
}

/// What each cluster of `batch` runs and whether it is healthy, for the rollout's gate: the
/// record's revision where its apply finished (not pending, no error), the health as `status`
/// reads it (not read for an empty batch).
pub async fn observe(ctx: &Context, name: &str, batch: &[String]) -> Result<Observed> {
    let Some(record) = ctx.state().record(name).await? else {
        return Ok(Observed::default());
    };
    let revision = revision_of(&record);
    let mixed = record.is_mixed();
    if batch.is_empty() {
        return Ok(Observed {
            revision: Some(revision),
            mixed,
            ..Observed::default()
        });
    }
    // The batch's clusters only: a gate's look costs its batch, not the whole fleet.
    let only: BTreeSet<String> = batch.iter().cloned().collect();
    let status = crate::status::status_within(ctx.state(), name, None, Some(&only)).await?;
    let watched = crate::status::wait::watched(&status, &ctx.namespace);
    let health = health_of(status);
    let observations = batch
        .iter()
        .map(|cluster| {
            let pending = record
                .pending
                .as_ref()
                .is_some_and(|p| p.dispatched.contains_key(cluster));
            let mut observation = crate::rollout::Observation {
                cluster: cluster.clone(),
                revision: None,
                healthy: false,
                reason: None,
                failed: false,
            };
            match (record.dispatched.get(cluster), health.clusters.get(cluster)) {
                (Some(inventory), _) if inventory.error.is_some() => {
                    observation.failed = true;
                    observation.reason = inventory
                        .error
                        .as_ref()
                        .map(|e| format!("the apply failed: {e}"));
                }
                (None, _) => observation.reason = Some("not applied yet".to_owned()),
                (Some(_), _) if pending => {
                    observation.reason = Some("the apply has not finished there".to_owned());
                }
                (Some(_), _) if record.cluster_version(cluster) != Some(&record.version) => {
                    let held = record.cluster_version(cluster).unwrap_or_default();
                    observation.revision = Some(format!("{held} (held)"));
                    observation.reason = Some(format!("still at {held}"));
                }
                (Some(_), Some((state, message))) => {
                    observation.revision = Some(revision.clone());
                    observation.healthy = state == "healthy";
                    if !observation.healthy {
                        observation.reason = Some(message.clone().unwrap_or_else(|| state.clone()));
                    }
                }
                (Some(_), None) => {
                    observation.revision = Some(revision.clone());
                    observation.reason = Some("its health is not known yet".to_owned());
                }
            }
            observation
        })
        .collect();
    Ok(Observed {
        revision: Some(revision),
        mixed,
        observations,
        watched,
    })
}
