//! Managing addons on the control plane: `enable`, `disable`, `status`, `list`, `upgrade`.
//!
//! Expected flow of `enable`:
//! 1. plan: find the addon, resolve its missing dependencies (dependencies first), check system
//!    requirements, render every addon of the plan;
//! 2. check definition conflicts for every addon of the plan (a definition owned by another addon
//!    or by nobody), listing every clash;
//! 3. for each addon, dependencies first: ensure the system namespace; with the direct engine,
//!    survey the target clusters ([`direct::prepare`]); write the record (with the direct engine,
//!    a pending revision listing every control-plane and cluster object about to be applied);
//!    apply the Application (when KubeVela's CRD is served); apply definitions (skipped with a
//!    note when their CRD is not served), ConfigMaps, views, auxiliary outputs with an owner
//!    reference to the Application (or to the record without KubeVela); apply or delete the
//!    argument Secret; delete objects the previous version (or an interrupted enable) applied and
//!    this one does not; dispatch to the clusters; write the final record (the pending revision
//!    promoted, or kept with what the failed clusters may hold).
//!
//! Guarantees: server-side apply only (field manager `addonctl`), so an unchanged re-enable changes
//! nothing on the server; the record's content is deterministic; a failure midway reports what was
//! applied, and a process killed midway leaves a record that lists everything it may have applied;
//! nothing is applied when an addon renders addonctl's or KubeVela's state ([`protect`]) or would
//! adopt an existing object without `--adopt` ([`review`]); disable removes what the record (and
//! its pending revision) lists, in reverse order, without relying on garbage collection, by the
//! rules of [`deletion`] (what another addon lists, the system namespace and namespaces holding
//! anything else are kept; adopted objects are given back); a disable that fails midway says
//! what was deleted and what to run next, and the record keeps what is left.

pub mod access;
pub use crate::source::catalog;
pub mod clusters;
pub mod deletion;
pub mod direct;
mod guard;
mod inventory;
pub mod lease;
mod plan;
pub mod protect;
pub mod record;
pub mod review;
pub mod wait;

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use futures::StreamExt as _;
use kube::api::DynamicObject;
use kube::core::GroupVersionKind;
use serde::Serialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::cluster::{self, Cluster};
use crate::model::{AddonVersion, Constraint};
use crate::render::normalize::{self, LABEL_NAME, LABEL_REGISTRY, LABEL_VERSION};
use crate::render::Renderer;
pub use catalog::Catalog;
pub use guard::{disable_all, disable_all_with};
use plan::release_definitions;
pub use plan::{definition_conflicts, plan, Action, EnableRequest, Kept, Plan, Step};
use record::{
    InstalledBy, ObjectRef, OtherRecords, PendingRevision, Record, RecordDependency, LABEL_RECORD,
};

/// Everything an operation needs.
#[derive(Debug)]
pub struct Context {
    /// The control plane.
    pub cluster: Cluster,
    /// The system namespace.
    pub namespace: String,
    /// The registries.
    pub catalog: Catalog,
    /// The renderer.
    pub renderer: Renderer,
    /// Which engine deploys the Application's components.
    pub engine: EngineChoice,
    /// How commands that write take their locks.
    pub lock: LockOptions,
}

/// How a writing command takes its locks ([`lease`]).
#[derive(Debug, Clone)]
pub struct LockOptions {
    /// Who this command is, as other commands are told (see [`lease::holder_identity`]).
    pub holder: String,
    /// Take locks held by others (`--force-unlock`: their command is gone).
    pub force: bool,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            holder: lease::holder_identity("(library)"),
            force: false,
        }
    }
}

/// Runs `work` control plane first: checks `needs` (refusing with every missing permission
/// before any write), takes the lock of every addon in `addons` (in name order; refusing when
/// another command holds one), runs `work`, and releases the locks whatever its outcome.
pub async fn guarded<T, F>(
    ctx: &Context,
    command: &str,
    needs: &[access::Need],
    addons: &[String],
    work: F,
) -> Result<T>
where
    F: std::future::Future<Output = Result<T>>,
{
    access::check(&ctx.cluster, command, needs).await?;
    let mut names: Vec<&String> = addons.iter().collect();
    names.sort();
    names.dedup();
    let mut locks = Vec::new();
    for name in names {
        let taken = lease::acquire(
            &ctx.cluster,
            &ctx.namespace,
            &lease::addon_lease(name),
            name,
            &ctx.lock.holder,
            ctx.lock.force,
        )
        .await;
        match taken {
            Ok(lock) => locks.push(lock),
            Err(e) => {
                release_all(locks).await;
                return Err(e);
            }
        }
    }
    let result = work.await;
    // A lock taken over meanwhile (this command stalled past the lease, or `--force-unlock`):
    // another command may have written at the same time, so success is not claimed.
    let lost = locks.iter().find_map(|lock| lock.ensure_held().err());
    release_all(locks).await;
    match (result, lost) {
        (Ok(_), Some(lost)) => Err(lost),
        (result, _) => result,
    }
}

/// Releases locks; a lock that cannot be released expires on its own.
async fn release_all(locks: Vec<lease::Lock>) {
    for lock in locks {
        if let Err(e) = lock.release().await {
            tracing::debug!("a lock was left to expire: {e}");
        }
    }
}

/// Which engine deploys an addon's components.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineChoice {
    /// `vela` when the control plane serves KubeVela's Application, else `direct`.
    #[default]
    Auto,
    /// KubeVela dispatches the Application.
    Vela,
    /// addonctl dispatches the components itself.
    Direct,
}

/// Progress of long operations (the CLI prints it on stderr).
pub trait Reporter: Send + Sync {
    /// One step began or finished.
    fn step(&self, message: &str);
}

/// A reporter that discards everything.
#[derive(Debug, Default)]
pub struct NoopReporter;

impl Reporter for NoopReporter {
    fn step(&self, _message: &str) {}
}

/// An operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request cannot be carried out as asked (conflicts, missing addon, dependents…).
    #[error("{0}")]
    Refused(String),
    /// The cluster failed.
    #[error(transparent)]
    Cluster(#[from] cluster::Error),
    /// Finding, loading or rendering an addon failed.
    #[error(transparent)]
    Addon(#[from] crate::Error),
    /// Some clusters failed; the others were applied. Running the command again converges.
    #[error("addon `{addon}`: {} of {} clusters failed:\n  {}\n{}", failed.len(), total, failed.join("\n  "), clusters_note(addon, failed.len(), *total))]
    Clusters {
        /// The addon.
        addon: String,
        /// `cluster: reason`, one per failed cluster.
        failed: Vec<String>,
        /// How many clusters were targeted.
        total: usize,
    },
    /// No plan satisfies the dependency constraints and system requirements.
    #[error(transparent)]
    Resolve(#[from] crate::resolve::ResolveError),
    /// Workloads did not become ready in time.
    #[error("{0}")]
    NotReady(String),
    /// The caller may not do what the command needs on the control plane (checked before any
    /// write).
    #[error(transparent)]
    Denied(#[from] access::Denied),
    /// Another command holds the addon's (or registry's) lock.
    #[error(transparent)]
    Busy(#[from] lease::Busy),
    /// A request failed (the message names the cluster and what failed).
    #[error("{0}")]
    Failed(String),
    /// Deleting failed midway: what was done, and the command that finishes it (the record
    /// still lists everything left).
    #[error("{source}\n{}", unfinished_note(.done, .next))]
    Unfinished {
        /// The failure.
        #[source]
        source: Box<Error>,
        /// What was deleted before it.
        done: Vec<String>,
        /// The command to run next.
        next: String,
    },
    /// Applying failed midway; `applied` lists what had been applied.
    #[error("{source}\n{}", applied_note(.applied))]
    Partial {
        /// The failure.
        #[source]
        source: Box<Error>,
        /// What was applied before it, as `Kind ns/name`.
        applied: Vec<String>,
    },
}

fn applied_note(applied: &[String]) -> String {
    if applied.is_empty() {
        "nothing was applied".to_owned()
    } else {
        format!(
            "applied before the failure ({}): {}; the addon's record lists everything that may have been applied: run the same command again to finish, or `addonctl disable` the addon to undo",
            applied.len(),
            applied.join(", ")
        )
    }
}

fn clusters_note(addon: &str, failed: usize, total: usize) -> String {
    let done = if failed >= total {
        "no cluster has it".to_owned()
    } else {
        match total - failed {
            1 => "the other cluster was applied".to_owned(),
            n => format!("the other {n} clusters were applied"),
        }
    };
    format!(
        "{done}; the record lists what each cluster may hold: run the same command again to finish (an enable can also be undone with `addonctl disable {addon}`)"
    )
}

fn unfinished_note(done: &[String], next: &str) -> String {
    let done = if done.is_empty() {
        "nothing was deleted".to_owned()
    } else {
        format!(
            "deleted before the failure ({}): {}",
            done.len(),
            done.join(", ")
        )
    };
    format!("{done}; the record keeps what is left: run `{next}` again to finish")
}

impl Error {
    /// Whether the user can fix this.
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::Refused(_) | Error::Resolve(_) | Error::Denied(_) => true,
            Error::Cluster(e) => e.is_user_error(),
            Error::Addon(e) => e.is_user_error(),
            Error::Partial { source, .. } | Error::Unfinished { source, .. } => {
                source.is_user_error()
            }
            // Refused by every failed cluster: the credentials' fault, as when refused up front.
            Error::Clusters { failed, .. } => failed.iter().all(|f| cluster::is_forbidden_text(f)),
            Error::NotReady(_) | Error::Busy(_) | Error::Failed(_) => false,
        }
    }
}

/// `Result` with the manage [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn gvk(api_version: &str, kind: &str) -> GroupVersionKind {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, kind)
}

/// KubeVela's Application kind.
pub fn application_gvk() -> GroupVersionKind {
    gvk("core.oam.dev/v1beta1", "Application")
}

fn secret_gvk() -> GroupVersionKind {
    gvk("v1", "Secret")
}

/// An installed addon, as the cluster shows it.
#[derive(Debug, Clone)]
pub struct Installed {
    /// Name.
    pub name: String,
    /// Version (label `addons.oam.dev/version`).
    pub version: String,
    /// Registry (label `addons.oam.dev/registry`).
    pub registry: String,
    /// The Application `addon-<name>`, when there is one.
    pub application: Option<Value>,
    /// addonctl's record, when addonctl installed it.
    pub record: Option<Record>,
}

/// Every installed addon, from one labelled list of Applications (when served) and one of
/// records: O(1) calls whatever the number of addons.
pub async fn installed(ctx: &Context) -> Result<BTreeMap<String, Installed>> {
    let mut out: BTreeMap<String, Installed> = BTreeMap::new();
    let records = ctx
        .cluster
        .list(
            &secret_gvk(),
            Some(&ctx.namespace),
            &format!("{LABEL_RECORD}=true"),
        )
        .await?;
    for secret in records {
        let value = to_value(&secret);
        if let Some(record) = Record::from_secret(&value) {
            out.insert(
                record.name.clone(),
                Installed {
                    name: record.name.clone(),
                    version: record.version.clone(),
                    registry: record.registry.clone(),
                    application: None,
                    record: Some(record),
                },
            );
        }
    }
    let apps = ctx
        .cluster
        .list(&application_gvk(), Some(&ctx.namespace), LABEL_NAME)
        .await?;
    for app in apps {
        let value = to_value(&app);
        let label = |k: &str| {
            value
                .pointer(&format!("/metadata/labels/{}", k.replace('/', "~1")))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let Some(name) = label(LABEL_NAME) else {
            continue;
        };
        let entry = out.entry(name.clone()).or_insert_with(|| Installed {
            name: name.clone(),
            version: label(LABEL_VERSION).unwrap_or_default(),
            registry: label(LABEL_REGISTRY).unwrap_or_default(),
            application: None,
            record: None,
        });
        entry.application = Some(value);
    }
    Ok(out)
}

fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// What one applied addon changed.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// The addon.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What was done.
    pub action: Action,
    /// Objects applied.
    pub applied: Vec<String>,
    /// Of the control-plane objects applied (and the record), those the server wrote: empty
    /// when an enable changed nothing there.
    pub changed: Vec<String>,
    /// Objects deleted (no longer rendered, or the argument Secret without arguments).
    pub deleted: Vec<String>,
    /// Notes (skipped definitions, no KubeVela).
    pub notes: Vec<String>,
    /// The engine that deployed the components.
    pub engine: EngineChoice,
    /// Direct engine: each cluster's outcome.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<direct::ClusterOutcome>,
    /// `NOTES.rhai`, masked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addon_notes: Option<String>,
}

impl StepReport {
    /// Whether the enable wrote nothing: no control-plane object (nor the record) changed,
    /// nothing was deleted, and no cluster of the direct engine had an object changed.
    pub fn unchanged(&self) -> bool {
        self.changed.is_empty()
            && self.deleted.is_empty()
            && self
                .clusters
                .iter()
                .all(|c| c.changed == 0 && c.deleted == 0 && c.error.is_none())
    }
}

/// Arguments stored for an installed addon (KubeVela's `addon-secret-<name>`).
pub async fn stored_args(ctx: &Context, name: &str) -> Result<Map<String, Value>> {
    let secret = ctx
        .cluster
        .get(
            &secret_gvk(),
            Some(&ctx.namespace),
            &normalize::args_secret_name(name),
        )
        .await?;
    let Some(secret) = secret else {
        return Ok(Map::new());
    };
    let value = to_value(&secret);
    let Some(encoded) = value
        .pointer("/data/addonParameterDataKey")
        .and_then(Value::as_str)
    else {
        return Ok(Map::new());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| {
            Error::Refused(format!(
                "the stored arguments of `{name}` are not base64: {e}"
            ))
        })?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) | Err(_) => Err(Error::Refused(format!(
            "the stored arguments of `{name}` (Secret `{}`) are not a JSON object; fix or delete it",
            normalize::args_secret_name(name)
        ))),
    }
}

/// Names of the clusters known to the control plane: `local` and every joined cluster (KubeVela's
/// cluster Secrets in the system namespace).
pub async fn known_clusters(ctx: &Context) -> Result<Vec<String>> {
    let mut names = vec![normalize::LOCAL_CLUSTER.to_owned()];
    names.extend(
        direct::joined(ctx)
            .await?
            .into_iter()
            .map(|(info, _)| info.name),
    );
    Ok(names)
}

fn owner_reference(kind: &str, api_version: &str, name: &str, uid: &str) -> Value {
    json!([{
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

fn with_owner(object: &Value, owner: &Value) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert("ownerReferences".into(), owner.clone());
    }
    object
}

fn args_hash(args: &Map<String, Value>) -> String {
    let text = serde_json::to_string(args).unwrap_or_default();
    Sha256::digest(text.as_bytes())
        .iter()
        .fold(String::new(), |mut s, b| {
            use std::fmt::Write as _;
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Applies one step of a plan.
pub async fn apply_step(
    ctx: &Context,
    step: &Step,
    adopt: bool,
    reporter: &dyn Reporter,
) -> Result<StepReport> {
    let rendered = &step.rendered;
    let mut report = StepReport {
        name: rendered.name.clone(),
        version: rendered.version.clone(),
        action: step.action,
        applied: Vec::new(),
        changed: Vec::new(),
        deleted: Vec::new(),
        notes: Vec::new(),
        engine: EngineChoice::Auto,
        clusters: Vec::new(),
        addon_notes: rendered.masked_notes(),
    };
    if step.action == Action::Keep {
        return Ok(report);
    }
    reporter.step(&format!(
        "applying `{}` {}",
        rendered.name, rendered.version
    ));
    let result = apply_rendered(ctx, step, adopt, &mut report, reporter).await;
    match result {
        Ok(()) => Ok(report),
        Err(e @ Error::Clusters { .. }) => Err(e),
        Err(e) => Err(Error::Partial {
            source: Box::new(e),
            applied: report.applied,
        }),
    }
}

async fn apply_rendered(
    ctx: &Context,
    step: &Step,
    adopt: bool,
    report: &mut StepReport,
    reporter: &dyn Reporter,
) -> Result<()> {
    let rendered = &step.rendered;
    let ns = &ctx.namespace;
    let cluster = &ctx.cluster;
    let revision = cluster.revision(ns).await;
    let wrote = |report: &mut StepReport, stored: &DynamicObject, what: String| {
        if cluster::written_since(stored, revision) && !report.changed.contains(&what) {
            report.changed.push(what);
        }
    };
    if cluster
        .create_if_missing(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?
    {
        report.applied.push(format!("Namespace `{ns}`"));
        report.changed.push(format!("Namespace `{ns}`"));
    }
    let stored_previous = cluster
        .get(
            &secret_gvk(),
            Some(ns),
            &record::record_name(&rendered.name),
        )
        .await?;
    // Every write of the record is conditional on the version read here (then on the one
    // written): a record changed by anyone else meanwhile is never overwritten.
    let mut record_version = stored_previous
        .as_ref()
        .and_then(|s| s.metadata.resource_version.clone());
    let previous = stored_previous.and_then(|s| Record::from_secret(&to_value(&s)));
    let served = cluster.serves(&application_gvk()).await?;
    let vela = match ctx.engine {
        EngineChoice::Auto => served,
        EngineChoice::Direct => false,
        EngineChoice::Vela if served => true,
        EngineChoice::Vela => {
            return Err(Error::Refused(
                "`--engine vela` needs KubeVela: the control plane does not serve `applications.core.oam.dev`; use `--engine direct` or `auto`"
                    .to_owned(),
            ))
        }
    };
    report.engine = if vela {
        EngineChoice::Vela
    } else {
        EngineChoice::Direct
    };
    let mut record = Record {
        name: rendered.name.clone(),
        version: rendered.version.clone(),
        registry: rendered.registry.clone(),
        installed_by: step.installed_by,
        dependencies: step
            .package
            .metadata
            .dependencies
            .iter()
            .map(RecordDependency::from)
            .collect(),
        args_hash: args_hash(&rendered.args),
        need_namespaces: step
            .package
            .metadata
            .need_namespace
            .iter()
            .filter(|n| *n != ns)
            .cloned()
            .collect(),
        application: vela,
        clusters: clusters_of(Some(&rendered.application), &rendered.args),
        placements: previous
            .as_ref()
            .map(|p| p.placements.clone())
            .unwrap_or_default(),
        // Everything the addon may hold: the last good inventories plus what an interrupted
        // enable planned (its pending revision is replaced by this one).
        dispatched: previous
            .as_ref()
            .map(Record::dispatched_or_planned)
            .unwrap_or_default(),
        pending: None,
        inventory: previous
            .as_ref()
            .map(Record::inventory_or_planned)
            .unwrap_or_default(),
        adopted: previous
            .as_ref()
            .map(|p| p.adopted.clone())
            .unwrap_or_default(),
    };
    let mut objects: Vec<&Value> = Vec::new();
    objects.extend(rendered.definitions.iter());
    objects.extend(rendered.config_maps.iter());
    objects.extend(rendered.views.iter());
    // Namespaces and CRDs among the outputs first.
    let rank = |o: &Value| match o.get("kind").and_then(Value::as_str) {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    };
    let mut outputs: Vec<&Value> = rendered.outputs.iter().map(|(_, o)| o).collect();
    outputs.sort_by_key(|o| rank(o));
    let mut ordered: Vec<&Value> = outputs.iter().filter(|o| rank(o) < 2).copied().collect();
    ordered.extend(objects);
    ordered.extend(outputs.iter().filter(|o| rank(o) == 2).copied());
    let mut others = OtherRecords::default();
    let prepared = if vela {
        None
    } else {
        // Fails early, before anything is written, on components the direct engine cannot
        // deploy; surveys every target cluster, changing nothing.
        others = OtherRecords::of(&records(ctx).await?, &rendered.name);
        let prepared = direct::prepare(
            ctx,
            &rendered.name,
            &rendered.application,
            &record.dispatched,
            others.clone(),
            reporter,
        )
        .await?;
        if !adopt {
            review::refuse_adoptions(&rendered.name, &prepared.adoptions(&record.dispatched))?;
        }
        let pending = PendingRevision {
            version: rendered.version.clone(),
            inventory: planned_inventory(cluster, &ordered, ns).await?,
            dispatched: prepared.planned(),
        };
        // A revision that applies nothing the record does not list already needs no pending
        // entry: an interrupted run loses nothing, and an unchanged re-enable writes nothing.
        let covered = previous.as_ref().is_some_and(|p| {
            p.pending.is_none()
                && p.version == pending.version
                && pending.inventory.iter().all(|o| p.inventory.contains(o))
                && pending.dispatched.iter().all(|(name, planned)| {
                    p.dispatched.get(name).is_some_and(|have| {
                        planned
                            .iter()
                            .all(|o| have.objects.iter().any(|h| h.object == o.object))
                    })
                })
        });
        record.pending = (!covered).then_some(pending);
        Some(prepared)
    };
    // Auxiliary outputs that exist and that addonctl did not create are adopted only with
    // `--adopt`, and recorded as adopted (disable gives them back).
    let adoptions =
        review::control_plane_adoptions(cluster, &rendered.outputs, &record.inventory, ns).await?;
    if !adopt {
        let named: Vec<String> = adoptions
            .iter()
            .map(|o| format!("{o} on cluster `local`"))
            .collect();
        review::refuse_adoptions(&rendered.name, &named)?;
    }
    for adopted in adoptions {
        if !record.adopted.contains(&adopted) {
            record.adopted.push(adopted);
        }
    }
    // Write the record first: the last good inventories (so an interrupted enable can still be
    // disabled or finished) and, with the direct engine, the pending revision listing
    // everything about to be applied; then everything it owns.
    let record_name = format!("Secret `{ns}/{}`", record::record_name(&rendered.name));
    let stored_record = write_record(cluster, &mut record, ns, &mut record_version).await?;
    wrote(report, &stored_record, record_name.clone());
    let owner = if vela {
        let app = cluster.apply(&rendered.application, ns).await?;
        wrote(report, &app, cluster::describe(&rendered.application));
        report
            .applied
            .push(cluster::describe(&rendered.application));
        owner_reference(
            "Application",
            "core.oam.dev/v1beta1",
            &normalize::application_name(&rendered.name),
            app.metadata.uid.as_deref().unwrap_or_default(),
        )
    } else {
        owner_reference(
            "Secret",
            "v1",
            &record::record_name(&rendered.name),
            stored_record.metadata.uid.as_deref().unwrap_or_default(),
        )
    };
    let mut inventory = Vec::new();
    let mut skipped: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for object in ordered {
        let Some(reference) = ObjectRef::of(object) else {
            continue;
        };
        if !cluster.serves(&reference.gvk()).await? {
            cluster.refresh_discovery();
            if !cluster.serves(&reference.gvk()).await? {
                skipped
                    .entry((reference.api_version.clone(), reference.kind.clone()))
                    .or_default()
                    .push(reference.name.clone());
                continue;
            }
        }
        let stored = cluster.apply(&with_owner(object, &owner), ns).await?;
        wrote(report, &stored, reference.to_string());
        if reference.kind == "CustomResourceDefinition" {
            // Its custom resources may follow among the outputs.
            direct::wait_established(cluster, &reference.name).await?;
        }
        let mut reference = reference;
        reference.namespace.clone_from(&stored.metadata.namespace);
        report.applied.push(reference.to_string());
        inventory.push(reference);
    }
    for ((api_version, kind), names) in skipped {
        report
            .notes
            .push(skipped_note(cluster, &api_version, &kind, &names).await?);
    }
    let secret_name = normalize::args_secret_name(&rendered.name);
    match &rendered.args_secret {
        Some(secret) => {
            let stored = cluster.apply(&with_owner(secret, &owner), ns).await?;
            wrote(report, &stored, format!("Secret `{ns}/{secret_name}`"));
            report.applied.push(format!("Secret `{ns}/{secret_name}`"));
        }
        None => {
            if cluster
                .delete(&secret_gvk(), Some(ns), &secret_name)
                .await?
            {
                report.deleted.push(format!("Secret `{ns}/{secret_name}`"));
            }
        }
    }
    // Prune what the previous version (or an interrupted enable) applied and this one did not,
    // by the deletion rules (kept while another addon's record lists it; given back when
    // adopted).
    let stale: Vec<record::DispatchedObject> = record
        .inventory
        .iter()
        .rev()
        .filter(|old| !inventory.iter().any(|o: &ObjectRef| o.same_object(old)))
        .filter(|old| deletion::state_of(old, ns).is_none())
        .map(|old| record::DispatchedObject {
            object: old.clone(),
            uid: String::new(),
            created: !record.adopted.iter().any(|a| a.same_object(old)),
        })
        .collect();
    if !stale.is_empty() {
        if vela {
            others = OtherRecords::of(&records(ctx).await?, &rendered.name);
        }
        let listed = control_plane_listing(&others);
        let site = deletion::Site {
            cluster,
            name: normalize::LOCAL_CLUSTER,
            system_namespace: ns,
            others: Some(&listed),
            dry_run: false,
            trust_record: true,
        };
        let refs: Vec<&record::DispatchedObject> = stale.iter().collect();
        let removal = deletion::remove(&site, &refs).await;
        report
            .deleted
            .extend(removal.deleted.iter().map(ToString::to_string));
        for kept in &removal.kept {
            report.notes.push(format!("kept {kept}"));
        }
        for given in &removal.given_back {
            report.notes.push(format!(
                "gave back {given} (adopted: addonctl's fields removed, the object stays)"
            ));
        }
        if let Some((e, _)) = removal.failure {
            return Err(Error::Failed(e));
        }
    }
    record
        .adopted
        .retain(|a| inventory.iter().any(|o| o.same_object(a)));
    record.inventory = inventory;
    let Some(prepared) = prepared else {
        record.placements.clear();
        record.dispatched.clear();
        let stored = write_record(cluster, &mut record, ns, &mut record_version).await?;
        wrote(report, &stored, record_name);
        return Ok(());
    };
    let dispatched = prepared.apply(reporter).await;
    let failed: Vec<String> = dispatched
        .outcomes
        .iter()
        .filter_map(|o| o.error.as_ref().map(|e| format!("{}: {e}", o.cluster)))
        .collect();
    for outcome in &dispatched.outcomes {
        report
            .deleted
            .extend(outcome.deleted_objects.iter().map(ToString::to_string));
        for kept in &outcome.kept {
            report.notes.push(format!("kept {kept}"));
        }
        for given in &outcome.given_back {
            report.notes.push(format!(
                "gave back {given} (adopted: addonctl's fields removed, the object stays)"
            ));
        }
    }
    record.placements = dispatched.placements;
    record.dispatched = dispatched.inventories;
    // Promoted when every cluster has it; otherwise it stays pending with what the failed
    // clusters may hold beyond their inventories.
    record.pending = (!failed.is_empty()).then(|| PendingRevision {
        version: rendered.version.clone(),
        inventory: Vec::new(),
        dispatched: dispatched.unfinished,
    });
    let stored = write_record(cluster, &mut record, ns, &mut record_version).await?;
    wrote(report, &stored, record_name);
    let total = dispatched.outcomes.len();
    report.clusters = dispatched.outcomes;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Clusters {
            addon: rendered.name.clone(),
            failed,
            total,
        })
    }
}

/// Writes an addon's record only if it is unchanged since `version` was read or written;
/// `version` becomes the one written. A record changed meanwhile by someone else (a command not
/// taking addonctl's lock) is never overwritten: it is read again, what it lists and `record`
/// lacks is added to `record` (so nothing anyone recorded is forgotten; see
/// [`Record::absorb`]), and the write is retried, at most [`record::WRITE_ATTEMPTS`] times. A
/// record that did not exist is applied unconditionally: the addon's lock (held by the caller)
/// keeps other addonctl commands away, and a create instead would leave an `Update` entry in
/// its managed fields that the next unchanged enable rewrites.
async fn write_record(
    cluster: &Cluster,
    record: &mut Record,
    ns: &str,
    version: &mut Option<String>,
) -> Result<DynamicObject> {
    let name = record::record_name(&record.name);
    for _ in 0..record::WRITE_ATTEMPTS {
        let mut secret = record.to_secret(ns);
        if let Some(known) = version.as_deref() {
            secret["metadata"]["resourceVersion"] = json!(known);
        }
        match cluster.apply(&secret, ns).await {
            Ok(stored) => {
                version.clone_from(&stored.metadata.resource_version);
                return Ok(stored);
            }
            Err(cluster::Error::Conflict { .. }) => {
                let stored = cluster.get(&secret_gvk(), Some(ns), &name).await?;
                *version = stored
                    .as_ref()
                    .and_then(|s| s.metadata.resource_version.clone());
                if let Some(theirs) = stored.and_then(|s| Record::from_secret(&to_value(&s))) {
                    record.absorb(&theirs);
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(record::conflict(ns, &record.name))
}

/// Why objects of a kind the control plane does not serve were skipped: the objects, and the
/// versions of the kind it does serve (a definition written for `core.oam.dev/v1alpha2` after
/// KubeVela stopped serving it), or that it serves none.
async fn skipped_note(
    cluster: &Cluster,
    api_version: &str,
    kind: &str,
    names: &[String],
) -> Result<String> {
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    let objects = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let served = cluster.served_versions(group, kind).await?;
    let prefix = if group.is_empty() {
        String::new()
    } else {
        format!("{group}/")
    };
    Ok(if served.is_empty() {
        format!(
            "skipped {kind} {objects} (`{api_version}`): the control plane serves no `{kind}` of `{}` (install KubeVela, or its CRD, then run enable again)",
            if group.is_empty() { "core" } else { group }
        )
    } else {
        let versions = served
            .iter()
            .map(|v| format!("`{prefix}{v}`"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "skipped {kind} {objects}: written for `{api_version}`, which the control plane does not serve (it serves `{kind}` as {versions}); the addon must move {} to a served version",
            if names.len() == 1 { "it" } else { "them" }
        )
    })
}

/// The control-plane objects an enable will apply, with the namespace each gets (kinds not
/// served are planned as namespaced; a reference compares equal either way, see
/// [`ObjectRef::same_object`]).
async fn planned_inventory(
    cluster: &Cluster,
    objects: &[&Value],
    ns: &str,
) -> Result<Vec<ObjectRef>> {
    let mut out = Vec::new();
    for object in objects {
        let Some(mut reference) = ObjectRef::of(object) else {
            continue;
        };
        let namespaced = cluster
            .resource(&reference.gvk())
            .await?
            .is_none_or(|(_, caps)| caps.scope == kube::discovery::Scope::Namespaced);
        reference.namespace =
            namespaced.then(|| reference.namespace.clone().unwrap_or_else(|| ns.to_owned()));
        out.push(reference);
    }
    Ok(out)
}

/// Every record in the system namespace (one labelled list).
pub(super) async fn records(ctx: &Context) -> Result<Vec<Record>> {
    Ok(ctx
        .cluster
        .list(
            &secret_gvk(),
            Some(&ctx.namespace),
            &format!("{LABEL_RECORD}=true"),
        )
        .await?
        .iter()
        .filter_map(|secret| Record::from_secret(&to_value(secret)))
        .collect())
}

/// Enables an addon and its missing dependencies.
pub async fn enable(
    ctx: &Context,
    request: &EnableRequest,
    reporter: &dyn Reporter,
) -> Result<Vec<StepReport>> {
    let plan = plan(ctx, request, false).await?;
    execute(ctx, &plan, request.override_definitions, reporter).await
}

/// Checks the caller's permissions on the control plane, takes the lock of every addon the plan
/// changes, checks conflicts and applies every step of a plan.
pub async fn execute(
    ctx: &Context,
    plan: &Plan,
    override_definitions: bool,
    reporter: &dyn Reporter,
) -> Result<Vec<StepReport>> {
    let addons: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| s.action != Action::Keep)
        .map(|s| s.rendered.name.clone())
        .collect();
    let command = match plan.steps.last() {
        Some(root) => format!("`addonctl enable {}`", root.rendered.name),
        None => return Ok(Vec::new()),
    };
    let needs = access::plan_needs(ctx, plan).await?;
    guarded(
        ctx,
        &command,
        &needs,
        &addons,
        Box::pin(execute_locked(ctx, plan, override_definitions, reporter)),
    )
    .await
}

async fn execute_locked(
    ctx: &Context,
    plan: &Plan,
    override_definitions: bool,
    reporter: &dyn Reporter,
) -> Result<Vec<StepReport>> {
    if override_definitions {
        release_definitions(ctx, plan).await?;
    } else {
        let clashes = definition_conflicts(ctx, plan).await?;
        if !clashes.is_empty() {
            return Err(Error::Refused(format!(
                "definition conflicts (pass `--override-definitions` to take them over):\n  {}",
                clashes.join("\n  ")
            )));
        }
    }
    let mut reports: Vec<StepReport> = Vec::new();
    for step in &plan.steps {
        let report = apply_step(ctx, step, plan.adopt, reporter).await?;
        // The direct engine deployed it and later layers need it: wait until it is healthy.
        let gate = report.engine == EngineChoice::Direct && !step.needed_by.is_empty();
        reports.push(report);
        if let (true, Some(timeout)) = (gate, plan.dependency_timeout) {
            reporter.step(&format!(
                "waiting for `{}` to be ready before {}",
                step.rendered.name,
                step.needed_by
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            if let Err(e) = wait::until_enabled(ctx, &step.rendered.name, timeout, reporter).await {
                return Err(Error::Partial {
                    source: Box::new(e),
                    applied: reports
                        .iter()
                        .map(|r| format!("addon `{}` {}", r.name, r.version))
                        .collect(),
                });
            }
        }
    }
    Ok(reports)
}

/// What `disable` did (or, with `dry_run`, would do).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisableReport {
    /// The addon.
    pub name: String,
    /// Objects deleted, in order, each with its cluster (`local` = the control plane).
    pub deleted: Vec<deletion::Entry>,
    /// Objects addonctl adopted, given back: its fields removed, the object left.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub given_back: Vec<deletion::Entry>,
    /// Objects kept, each with the reason (another addon lists it, the system namespace, a
    /// namespace holding other objects…).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<deletion::Entry>,
    /// Nothing was changed: this is what `disable` would do.
    pub dry_run: bool,
}

/// How to disable.
#[derive(Debug, Clone, Copy, Default)]
pub struct DisableOptions {
    /// Disable even when other addons, Applications or custom resources still use it.
    pub force: bool,
    /// Also disable the dependencies nothing needs any more.
    pub prune_dependencies: bool,
    /// Report what would be deleted, given back and kept; change nothing.
    pub dry_run: bool,
}

/// Disables an addon: refuses while installed addons depend on it or Applications use its
/// definitions (unless `force`), then deletes what its record lists in reverse order, its
/// Application, its argument Secret, its `needNamespace` namespaces, and the record — every
/// deletion by the rules of [`deletion`].
pub async fn disable(
    ctx: &Context,
    name: &str,
    force: bool,
    reporter: &dyn Reporter,
) -> Result<DisableReport> {
    let options = DisableOptions {
        force,
        ..DisableOptions::default()
    };
    disable_with(ctx, name, &options, reporter).await
}

/// [`disable`] with every option but `prune_dependencies` (see [`disable_all_with`]); checks
/// permissions and takes the addon's lock as [`disable_all_with`] does.
pub async fn disable_with(
    ctx: &Context,
    name: &str,
    options: &DisableOptions,
    reporter: &dyn Reporter,
) -> Result<DisableReport> {
    let options = DisableOptions {
        prune_dependencies: false,
        ..*options
    };
    let mut reports = disable_all_with(ctx, name, &options, reporter).await?;
    if reports.is_empty() {
        return Err(Error::Refused(format!(
            "addon `{name}` is not enabled (see `addonctl list`)"
        )));
    }
    Ok(reports.swap_remove(0))
}

/// Disables one addon, without permission checks or locks (the caller holds them).
async fn disable_one(
    ctx: &Context,
    name: &str,
    options: &DisableOptions,
    reporter: &dyn Reporter,
) -> Result<DisableReport> {
    let all = installed(ctx).await?;
    let Some(current) = all.get(name) else {
        return Err(Error::Refused(format!(
            "addon `{name}` is not enabled (see `addonctl list`)"
        )));
    };
    if !options.force {
        guard::check(ctx, &all, &[name.to_owned()]).await?;
    }
    let mut report = DisableReport {
        name: name.to_owned(),
        deleted: Vec::new(),
        given_back: Vec::new(),
        kept: Vec::new(),
        dry_run: options.dry_run,
    };
    reporter.step(&format!(
        "{} `{name}`",
        if options.dry_run {
            "checking what disabling would delete:"
        } else {
            "disabling"
        }
    ));
    // What other addons list is never deleted with this one.
    let others = OtherRecords::of(all.values().filter_map(|i| i.record.as_ref()), name);
    if let Some(record) = &current.record {
        remove_dispatched(ctx, record, &others, options.dry_run, &mut report, reporter).await?;
    }
    let result = remove_control_plane(ctx, current, &others, &mut report).await;
    if let Err(e) = result {
        return Err(Error::Unfinished {
            source: Box::new(e),
            done: report.deleted.iter().map(ToString::to_string).collect(),
            next: format!("addonctl disable {name}"),
        });
    }
    Ok(report)
}

/// What the other addons' records list on the control plane, as [`deletion::decide`] takes it.
fn control_plane_listing(others: &OtherRecords) -> BTreeMap<ObjectRef, (String, bool)> {
    others
        .inventory
        .iter()
        .map(|(o, addon)| (o.clone(), (addon.clone(), true)))
        .collect()
}

/// The control-plane part of `disable`: the argument Secret, the record's objects (reverse
/// order), the Application, the `needNamespace` namespaces, then the record itself (last, so a
/// failure leaves it for the next `disable` to finish).
async fn remove_control_plane(
    ctx: &Context,
    current: &Installed,
    others: &OtherRecords,
    report: &mut DisableReport,
) -> Result<()> {
    let ns = &ctx.namespace;
    let name = &current.name;
    let secret = |n: String| ObjectRef {
        api_version: "v1".to_owned(),
        kind: "Secret".to_owned(),
        namespace: Some(ns.clone()),
        name: n,
    };
    let mut objects: Vec<record::DispatchedObject> = Vec::new();
    let mut push = |object: ObjectRef, created: bool| {
        objects.push(record::DispatchedObject {
            object,
            uid: String::new(),
            created,
        });
    };
    push(secret(normalize::args_secret_name(name)), true);
    if let Some(record) = &current.record {
        for object in record.inventory_or_planned().into_iter().rev() {
            if let Some(why) = deletion::state_of(&object, ns) {
                let reason = deletion::Reason::State(why);
                report.kept.push(deletion::Entry::of(
                    normalize::LOCAL_CLUSTER,
                    &object,
                    Some(&reason),
                ));
                continue;
            }
            let adopted = record.adopted.iter().any(|a| a.same_object(&object));
            push(object, !adopted);
        }
    }
    push(
        ObjectRef {
            api_version: "core.oam.dev/v1beta1".to_owned(),
            kind: "Application".to_owned(),
            namespace: Some(ns.clone()),
            name: normalize::application_name(name),
        },
        true,
    );
    if let Some(record) = &current.record {
        for namespace in &record.need_namespaces {
            push(
                ObjectRef {
                    api_version: "v1".to_owned(),
                    kind: "Namespace".to_owned(),
                    namespace: None,
                    name: namespace.clone(),
                },
                true,
            );
        }
        push(secret(record::record_name(name)), true);
    }
    let mut seen: Vec<ObjectRef> = Vec::new();
    objects.retain(|o| {
        let new = !seen.iter().any(|s| s.same_object(&o.object));
        seen.push(o.object.clone());
        new
    });
    let listed = control_plane_listing(others);
    let site = deletion::Site {
        cluster: &ctx.cluster,
        name: normalize::LOCAL_CLUSTER,
        system_namespace: ns,
        others: Some(&listed),
        dry_run: report.dry_run,
        trust_record: true,
    };
    let refs: Vec<&record::DispatchedObject> = objects.iter().collect();
    let removal = deletion::remove(&site, &refs).await;
    report.deleted.extend(removal.deleted);
    report.given_back.extend(removal.given_back);
    report.kept.extend(removal.kept);
    match removal.failure {
        None => Ok(()),
        Some((message, _)) => Err(Error::Failed(message)),
    }
}

/// Deletes what the direct engine applied to each cluster, and what a pending revision planned
/// there, by the rules of [`deletion`] (reverse order), clusters in parallel (bounded as enable
/// is). When a cluster fails, the record keeps what is left there and the error says so.
async fn remove_dispatched(
    ctx: &Context,
    record: &Record,
    others: &OtherRecords,
    dry_run: bool,
    report: &mut DisableReport,
    reporter: &dyn Reporter,
) -> Result<()> {
    let everything = record.dispatched_or_planned();
    if everything.is_empty() {
        return Ok(());
    }
    let names = everything.keys().cloned().collect();
    let clients = direct::clients(ctx, &names).await?;
    let work = everything.iter().map(|(name, inventory)| {
        let client = clients.get(name);
        async move {
            let removal = match client {
                Some(Ok(client)) => {
                    direct::remove_all(
                        client,
                        name,
                        &ctx.namespace,
                        inventory,
                        others.dispatched.get(name),
                        dry_run,
                    )
                    .await
                }
                Some(Err(e)) => deletion::Removal {
                    failure: Some((e.clone(), inventory.objects.clone())),
                    ..deletion::Removal::default()
                },
                None => deletion::Removal {
                    failure: Some((
                        format!("no client for cluster `{name}`"),
                        inventory.objects.clone(),
                    )),
                    ..deletion::Removal::default()
                },
            };
            (name, removal)
        }
    });
    let mut removals: Vec<(&String, deletion::Removal)> = futures::stream::iter(work)
        .buffer_unordered(direct::CLUSTER_CONCURRENCY)
        .collect()
        .await;
    removals.sort_by(|a, b| a.0.cmp(b.0));
    let mut failed = Vec::new();
    let mut remaining = BTreeMap::new();
    for (name, removal) in removals {
        reporter.step(&format!(
            "cluster `{name}`: {} objects {}deleted, {} given back, {} kept",
            removal.deleted.len(),
            if dry_run { "would be " } else { "" },
            removal.given_back.len(),
            removal.kept.len()
        ));
        report.deleted.extend(removal.deleted);
        report.given_back.extend(removal.given_back);
        report.kept.extend(removal.kept);
        if let Some((e, left)) = removal.failure {
            failed.push(format!("{name}: {e}"));
            remaining.insert(
                name.clone(),
                record::ClusterInventory {
                    objects: left,
                    error: Some(e),
                },
            );
        }
    }
    if failed.is_empty() || dry_run {
        return if failed.is_empty() {
            Ok(())
        } else {
            Err(Error::Clusters {
                addon: record.name.clone(),
                total: everything.len(),
                failed,
            })
        };
    }
    // The record keeps what is left on the failed clusters (the others are done), so the next
    // `disable` finishes.
    record::update(&ctx.cluster, &ctx.namespace, &record.name, |stored| {
        let mut kept = stored?;
        kept.dispatched = left_after_disable(&kept, &everything, &remaining);
        kept.pending = None;
        Some(kept)
    })
    .await?;
    Err(Error::Unfinished {
        source: Box::new(Error::Failed(format!(
            "addon `{}`: {} of {} clusters failed:\n  {}",
            record.name,
            failed.len(),
            everything.len(),
            failed.join("\n  ")
        ))),
        done: report.deleted.iter().map(ToString::to_string).collect(),
        next: format!("addonctl disable {}", record.name),
    })
}

/// What a record keeps per cluster after a disable that failed on some clusters: what is left
/// on the failed clusters (`remaining`), plus whatever the stored record lists that this
/// disable did not handle (`handled`: written by another command meanwhile).
fn left_after_disable(
    stored: &Record,
    handled: &BTreeMap<String, record::ClusterInventory>,
    remaining: &BTreeMap<String, record::ClusterInventory>,
) -> BTreeMap<String, record::ClusterInventory> {
    let mut out = remaining.clone();
    for (cluster, inventory) in stored.dispatched_or_planned() {
        let known = handled.get(&cluster);
        for object in inventory.objects {
            let was_handled =
                known.is_some_and(|k| k.objects.iter().any(|o| o.object == object.object));
            let entry = out.entry(cluster.clone()).or_default();
            if !was_handled && !entry.objects.iter().any(|o| o.object == object.object) {
                entry.objects.push(object);
            }
        }
    }
    out.retain(|_, inventory| !inventory.objects.is_empty() || inventory.error.is_some());
    out
}

/// Applications (in any namespace, except the addon's own) whose components, traits, policies
/// or workflow steps use a definition of the addon.
async fn applications_using_definitions(ctx: &Context, addon: &Installed) -> Result<Vec<String>> {
    let Some(record) = &addon.record else {
        return Ok(Vec::new());
    };
    let definitions: BTreeMap<&str, &str> = record
        .inventory
        .iter()
        .filter(|o| o.kind.ends_with("Definition") && o.api_version.starts_with("core.oam.dev/"))
        .map(|o| (o.name.as_str(), o.kind.as_str()))
        .collect();
    if definitions.is_empty() {
        return Ok(Vec::new());
    }
    let own = normalize::application_name(&addon.name);
    let apps = ctx.cluster.list(&application_gvk(), None, "").await?;
    let mut users = Vec::new();
    for app in apps {
        let value = to_value(&app);
        let app_name = app.metadata.name.clone().unwrap_or_default();
        let app_ns = app.metadata.namespace.clone().unwrap_or_default();
        if app_name == own && app_ns == ctx.namespace {
            continue;
        }
        let mut types = BTreeSet::new();
        for pointer in ["/spec/components", "/spec/policies", "/spec/workflow/steps"] {
            for item in value
                .pointer(pointer)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                types.extend(item.get("type").and_then(Value::as_str));
                for t in item
                    .get("traits")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    types.extend(t.get("type").and_then(Value::as_str));
                }
            }
        }
        let used: Vec<&str> = types
            .iter()
            .filter(|t| definitions.contains_key(*t))
            .copied()
            .collect();
        if !used.is_empty() {
            users.push(format!("`{app_ns}/{app_name}` (uses {})", used.join(", ")));
        }
    }
    Ok(users)
}

/// The phase of an addon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Running.
    Enabled,
    /// Applied, not yet running.
    Enabling,
    /// Being deleted.
    Disabling,
    /// Its workflow is suspended.
    Suspend,
    /// Its workflow failed.
    Failed,
    /// Not installed.
    Disabled,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::Enabled => "enabled",
            Phase::Enabling => "enabling",
            Phase::Disabling => "disabling",
            Phase::Suspend => "suspend",
            Phase::Failed => "failed",
            Phase::Disabled => "disabled",
        })
    }
}

/// The phase KubeVela reports for an addon's Application.
pub fn phase_of_application(app: &Value) -> Phase {
    if app
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return Phase::Disabling;
    }
    match app.pointer("/status/status").and_then(Value::as_str) {
        Some("running") => Phase::Enabled,
        Some("deleting") => Phase::Disabling,
        Some("workflowFailed" | "workflowTerminated") => Phase::Failed,
        _ if app
            .pointer("/status/workflow/suspend")
            .and_then(Value::as_bool)
            == Some(true) =>
        {
            Phase::Suspend
        }
        Some("workflowSuspending") => Phase::Suspend,
        _ => Phase::Enabling,
    }
}

/// One parameter in `status -v`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParameterStatus {
    /// Dotted name.
    pub name: String,
    /// The current value (masked for secrets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// The description (`.usage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `status` of one addon.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The addon.
    pub name: String,
    /// Its phase.
    pub phase: Phase,
    /// The installed version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The registry it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// Target clusters (`*` = every cluster).
    pub clusters: Vec<String>,
    /// Who asked for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed_by: Option<InstalledBy>,
    /// Why the phase is `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What else to know (a pending revision: an enable running, or interrupted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Direct engine: workloads (Deployments, DaemonSets, StatefulSets) on every target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_count: Option<usize>,
    /// Direct engine: how many of them are ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_workload_count: Option<usize>,
    /// Direct engine: per cluster and per resource.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<direct::ClusterStatus>,
    /// `-v`: the description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `-v`: versions available in the registries.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub available_versions: Vec<String>,
    /// `-v`: dependencies and whether each is installed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<DependencyStatus>,
    /// `-v`: parameters.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<ParameterStatus>,
}

/// A dependency in `status -v`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DependencyStatus {
    /// The addon depended on.
    pub name: String,
    /// Its constraint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constraint: Option<String>,
    /// Whether an installed version satisfies it.
    pub satisfied: bool,
    /// The installed version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed: Option<String>,
}

fn clusters_of(app: Option<&Value>, args: &Map<String, Value>) -> Vec<String> {
    if let Some(app) = app {
        for policy in app
            .pointer("/spec/policies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if policy.get("type").and_then(Value::as_str) != Some("topology") {
                continue;
            }
            if let Some(list) = policy
                .pointer("/properties/clusters")
                .and_then(Value::as_array)
            {
                return list
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect();
            }
            if policy.pointer("/properties/clusterLabelSelector").is_some() {
                return vec!["*".to_owned()];
            }
        }
    }
    match args.get("clusters").and_then(Value::as_array) {
        Some(list) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        None => vec![normalize::LOCAL_CLUSTER.to_owned()],
    }
}

/// The status of one addon; `verbose` adds description, versions, dependencies and parameters.
pub async fn status(ctx: &Context, name: &str, verbose: bool) -> Result<Status> {
    let all = installed(ctx).await?;
    let current = all.get(name);
    let mut status = Status {
        name: name.to_owned(),
        phase: Phase::Disabled,
        version: None,
        registry: None,
        clusters: Vec::new(),
        installed_by: None,
        reason: None,
        notes: Vec::new(),
        workload_count: None,
        ready_workload_count: None,
        resources: Vec::new(),
        description: None,
        available_versions: Vec::new(),
        dependencies: Vec::new(),
        parameters: Vec::new(),
    };
    let args = if current.is_some() {
        stored_args(ctx, name).await?
    } else {
        Map::new()
    };
    if let Some(current) = current {
        status.phase = match (&current.application, &current.record) {
            (Some(app), _) => phase_of_application(app),
            (None, Some(_)) => Phase::Enabled,
            (None, None) => Phase::Disabled,
        };
        status.version = Some(current.version.clone());
        status.registry = Some(current.registry.clone());
        status.clusters = match (&current.application, &current.record) {
            (None, Some(record)) if !record.clusters.is_empty() => record.clusters.clone(),
            (app, _) => clusters_of(app.as_ref(), &args),
        };
        status.installed_by = current.record.as_ref().map(|r| r.installed_by);
        if let Some(record) = current.record.as_ref().filter(|r| {
            current.application.is_none() && (!r.dispatched.is_empty() || r.pending.is_some())
        }) {
            let clusters = direct::health(ctx, &record.dispatched_or_planned()).await?;
            let workloads: Vec<&direct::ResourceStatus> = clusters
                .iter()
                .flat_map(|c| c.resources.iter())
                .filter(|r| r.is_workload())
                .collect();
            let ready = workloads.iter().filter(|r| r.is_ready()).count();
            let failures: Vec<String> = clusters
                .iter()
                .filter_map(|c| c.error.as_ref().map(|e| format!("{}: {e}", c.cluster)))
                .collect();
            if let Some(pending) = &record.pending {
                status.notes.push(format!(
                    "revision {} is pending: an enable is running, or was interrupted or failed before every cluster had it; unless one is running, run `addonctl enable {name}` again to finish it (or `addonctl disable {name}`)",
                    pending.version
                ));
            }
            status.phase = if !failures.is_empty() {
                status.reason = Some(failures.join("; "));
                Phase::Failed
            } else if record.pending.is_some() || ready < workloads.len() {
                Phase::Enabling
            } else {
                Phase::Enabled
            };
            status.workload_count = Some(workloads.len());
            status.ready_workload_count = Some(ready);
            status.resources = clusters;
        }
    }
    if !verbose {
        return Ok(status);
    }
    // Every registry is read once: the versions and the package both come from this listing.
    let listings = ctx.catalog.list().await;
    let mut versions = BTreeSet::new();
    for listing in &listings {
        match &listing.addons {
            Ok(addons) => {
                for addon in addons.iter().filter(|a| a.name == name) {
                    versions.extend(addon.versions.iter().cloned());
                }
            }
            Err(e) => status.notes.push(format!(
                "registry `{}` is left out of the available versions: {e}",
                listing.registry
            )),
        }
    }
    let mut sorted: Vec<AddonVersion> = versions.iter().map(|v| AddonVersion::parse(v)).collect();
    sorted.sort();
    sorted.reverse();
    status.available_versions = sorted.iter().map(|v| v.raw().to_owned()).collect();
    let found = ctx.catalog.find_listed(
        &listings,
        name,
        status.version.as_deref(),
        status.registry.as_deref(),
    );
    let Some(found) = found else {
        if current.is_none() {
            return Err(Error::Refused(format!(
                "no addon `{name}` is installed or in any registry"
            )));
        }
        return Ok(status);
    };
    let package = crate::loader::load(found.reader.as_ref(), &found.addon)
        .await
        .map_err(crate::Error::from)?;
    status.description.clone_from(&package.metadata.description);
    for dependency in &package.metadata.dependencies {
        let installed_version = all.get(&dependency.name).map(|i| i.version.clone());
        let constraint = dependency
            .version
            .as_deref()
            .and_then(|c| Constraint::parse(c).ok());
        let satisfied = installed_version.as_deref().is_some_and(|v| {
            constraint
                .as_ref()
                .is_none_or(|c| c.matches(&AddonVersion::parse(v)))
        });
        status.dependencies.push(DependencyStatus {
            name: dependency.name.clone(),
            constraint: dependency.version.clone(),
            satisfied,
            installed: installed_version,
        });
    }
    let schema = ctx
        .renderer
        .parameter_schema(&package)
        .map_err(crate::Error::from)?;
    let masked = schema.mask(&Value::Object(args));
    if let Some(properties) = schema.schema().get("properties").and_then(Value::as_object) {
        for (key, property) in properties {
            status.parameters.push(ParameterStatus {
                name: key.clone(),
                value: masked.get(key).cloned(),
                default: property.get("default").cloned().map(|d| {
                    if schema.is_secret(key) {
                        json!(crate::render::MASK)
                    } else {
                        d
                    }
                }),
                description: property
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
    }
    Ok(status)
}

/// The phase `list` shows, without reading the clusters: KubeVela's for an Application,
/// `enabling` while a record has a pending revision, else `enabled`.
fn listed_phase(installed: &Installed) -> Phase {
    match &installed.application {
        Some(app) => phase_of_application(app),
        None if installed
            .record
            .as_ref()
            .is_some_and(|r| r.pending.is_some()) =>
        {
            Phase::Enabling
        }
        None => Phase::Enabled,
    }
}

/// One row of `list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListRow {
    /// The addon.
    pub name: String,
    /// Its registry.
    pub registry: String,
    /// Its description.
    pub description: String,
    /// Versions available, newest first.
    pub available_versions: Vec<String>,
    /// Its phase, with the installed version when installed.
    pub status: String,
}

/// `list`: every addon of the registries (optionally one registry), with installed status from
/// O(1) list calls. Registries that fail are returned as warnings.
pub async fn list(ctx: &Context, registry: Option<&str>) -> Result<(Vec<ListRow>, Vec<String>)> {
    let installed = installed(ctx).await?;
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    let mut seen = BTreeSet::new();
    // Only the registry asked for is read; when it fails, the command fails.
    for listing in ctx.catalog.list_only(registry).await {
        match listing.addons {
            Err(e) if registry.is_some() => {
                return Err(
                    crate::Error::from(catalog::registry_failure(&listing.registry, e)).into(),
                )
            }
            Ok(addons) => {
                for addon in addons {
                    if !seen.insert(addon.name.clone()) {
                        continue;
                    }
                    let status = match installed.get(&addon.name) {
                        Some(i) => format!("{} ({})", listed_phase(i), i.version),
                        None => Phase::Disabled.to_string(),
                    };
                    rows.push(ListRow {
                        name: addon.name,
                        registry: listing.registry.clone(),
                        description: addon.description.unwrap_or_default(),
                        available_versions: addon.versions,
                        status,
                    });
                }
            }
            Err(e) => warnings.push(format!(
                "registry `{}` could not be listed: {e}",
                listing.registry
            )),
        }
    }
    for (name, i) in &installed {
        if !seen.contains(name) && registry.is_none_or(|r| r == i.registry) {
            rows.push(ListRow {
                name: name.clone(),
                registry: i.registry.clone(),
                description: String::new(),
                available_versions: Vec::new(),
                status: format!("{} ({})", listed_phase(i), i.version),
            });
        }
    }
    Ok((rows, warnings))
}

/// What to upgrade.
#[derive(Debug, Clone, Default)]
pub struct UpgradeRequest {
    /// The installed addon.
    pub name: String,
    /// A version to move to.
    pub version: Option<String>,
    /// Move to the newest version.
    pub latest: bool,
    /// Arguments merged over the stored ones.
    pub args: Map<String, Value>,
    /// Skip the `system` requirement checks.
    pub skip_version_check: bool,
    /// Take over definitions owned by another addon or by nobody.
    pub override_definitions: bool,
    /// Adopt existing objects addonctl did not create (otherwise the upgrade is refused).
    pub adopt: bool,
    /// Upgrade even when APIs the addons use are served by nobody yet.
    pub skip_api_check: bool,
}

/// Upgrades an installed addon: new arguments over the stored ones; the version stays unless
/// `version` or `latest` asks; objects the new render no longer has are deleted.
pub async fn upgrade(
    ctx: &Context,
    request: &UpgradeRequest,
    reporter: &dyn Reporter,
) -> Result<Vec<StepReport>> {
    let all = installed(ctx).await?;
    let Some(current) = all.get(&request.name) else {
        return Err(Error::Refused(format!(
            "addon `{}` is not enabled; use `addonctl enable {}`",
            request.name, request.name
        )));
    };
    let version = match (&request.version, request.latest) {
        (Some(v), _) => Some(v.clone()),
        (None, true) => None,
        (None, false) => Some(current.version.clone()),
    };
    let reference = if current.registry.is_empty()
        || current.registry == crate::source::local::LOCAL_REGISTRY
    {
        request.name.clone()
    } else {
        format!("{}/{}", current.registry, request.name)
    };
    let enable_request = EnableRequest {
        reference,
        version,
        args: request.args.clone(),
        skip_version_check: request.skip_version_check,
        override_definitions: request.override_definitions,
        adopt: request.adopt,
        skip_api_check: request.skip_api_check,
    };
    let plan = plan(ctx, &enable_request, true).await?;
    for note in &plan.notes {
        reporter.step(&format!("note: {note}"));
    }
    execute(ctx, &plan, request.override_definitions, reporter).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inventory(names: &[&str]) -> record::ClusterInventory {
        record::ClusterInventory {
            objects: names
                .iter()
                .map(|name| record::DispatchedObject {
                    object: ObjectRef {
                        api_version: "v1".to_owned(),
                        kind: "ConfigMap".to_owned(),
                        namespace: Some("ns".to_owned()),
                        name: (*name).to_owned(),
                    },
                    uid: String::new(),
                    created: true,
                })
                .collect(),
            error: None,
        }
    }

    #[test]
    fn a_failed_disable_keeps_what_is_left_and_what_another_command_recorded_meanwhile() {
        let mut stored: Record = serde_json::from_value(json!({
            "name": "a", "version": "1.0.0", "registry": "local", "installedBy": "user",
            "argsHash": "", "application": false,
        }))
        .unwrap();
        stored.dispatched = BTreeMap::from([
            ("east".to_owned(), inventory(&["one", "two"])),
            ("west".to_owned(), inventory(&["three", "new"])),
            ("north".to_owned(), inventory(&["four"])),
        ]);
        let handled = BTreeMap::from([
            ("east".to_owned(), inventory(&["one", "two"])),
            ("west".to_owned(), inventory(&["three"])),
            ("north".to_owned(), inventory(&["four"])),
        ]);
        let mut failed = inventory(&["two"]);
        failed.error = Some("unreachable".to_owned());
        let remaining = BTreeMap::from([("east".to_owned(), failed.clone())]);

        let left = left_after_disable(&stored, &handled, &remaining);

        assert_eq!(
            left,
            BTreeMap::from([
                ("east".to_owned(), failed),
                ("west".to_owned(), inventory(&["new"])),
            ])
        );
    }
}
