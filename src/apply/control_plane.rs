//! The control-plane half of applying one step: the record written first (with the direct
//! engine, a pending revision listing everything about to be applied), the Application,
//! definitions, ConfigMaps, views and auxiliary outputs, the argument Secret, the prune of what
//! the previous revision applied and this one does not; then the direct engine's dispatch and
//! the final record.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use kube::core::GroupVersionKind;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::direct::{self, Prepared};
use super::{deletion, review, StepReport};
use crate::apply::Applier;
use crate::cluster::{self, Cluster};
use crate::context::{EngineChoice, Reporter};
use crate::model::wire::{
    application_gvk, application_name, args_secret_name, secret_gvk, LOCAL_CLUSTER,
};
use crate::plan::Step;
use crate::state::record::{
    self, DispatchedObject, ObjectRef, OtherRecords, PendingRevision, Record, RecordDependency,
};
use crate::state::{clusters_of, revisions};
use crate::{Error, Result};

pub(crate) fn owner_reference(kind: &str, api_version: &str, name: &str, uid: &str) -> Value {
    json!([{
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

pub(crate) fn with_owner(object: &Value, owner: &Value) -> Value {
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

/// Notes in the report which objects the server wrote since `revision` (read before the first
/// write).
struct Writes(Option<u64>);

impl Writes {
    fn note(&self, report: &mut StepReport, stored: &DynamicObject, what: String) {
        if cluster::written_since(stored, self.0) && !report.changed.contains(&what) {
            report.changed.push(what);
        }
    }
}

/// Applies one step's rendered objects: see the module documentation. The clusters of `hold`
/// (direct engine only) keep what they run: see [`crate::plan::Plan::hold`].
pub(super) async fn apply_rendered(
    ctx: &Applier<'_>,
    step: &Step,
    adopt: bool,
    hold: &BTreeSet<String>,
    report: &mut StepReport,
    reporter: &dyn Reporter,
) -> Result<()> {
    let rendered = &step.rendered;
    let ns = &ctx.namespace;
    let cluster = &ctx.cluster;
    let writes = Writes(match ctx.locked_at() {
        Some(revision) => Some(revision),
        None => cluster.revision(ns).await,
    });
    // Under a lock the namespace exists: the lock's Lease lives there (taking it made the
    // namespace when it was missing). Otherwise it is read once per command (the access check
    // may have read it): no lock protects it.
    let namespace_gvk = GroupVersionKind::gvk("", "v1", "Namespace");
    let missing =
        ctx.locked_at().is_none() && cluster.get_kept(&namespace_gvk, None, ns).await?.is_none();
    if missing
        && cluster
            .create_if_missing(&crate::model::wire::namespace_object(ns))
            .await?
    {
        report.applied.push(format!("Namespace `{ns}`"));
        report.changed.push(format!("Namespace `{ns}`"));
    }
    // Every write of the record is conditional on the version read here (then on the one
    // written): a record changed by anyone else meanwhile is never overwritten.
    let vela = uses_vela(ctx).await?;
    // The direct engine reads every record under the lock (what the other addons own): this
    // addon's comes from the same list.
    let (mut stored_previous, other_records) = if vela {
        (
            record::storage::read(cluster, ns, &rendered.name).await?,
            Vec::new(),
        )
    } else {
        record::storage::read_with_others(cluster, ns, &rendered.name).await?
    };
    let previous = stored_previous.record.take();
    super::overrides::direct_only(&rendered.name, &step.variants, hold, vela)?;
    report.engine = if vela {
        EngineChoice::Vela
    } else {
        EngineChoice::Direct
    };
    let mut record = new_record(step, ns, previous.as_ref(), vela);
    let ordered = ordered_objects(step);
    let mut others = OtherRecords::of(&other_records, &rendered.name);
    let prepared = if vela {
        None
    } else {
        let direct = Direct {
            adopt,
            hold,
            others: &others,
        };
        Some(
            prepare_direct(
                ctx,
                step,
                direct,
                &mut record,
                previous.as_ref(),
                &ordered,
                reporter,
            )
            .await?,
        )
    };
    adopt_outputs(cluster, step, adopt, &mut record, ns).await?;
    // Write the record first: the last good inventories (so an interrupted enable can still be
    // disabled or finished) and, with the direct engine, the pending revision listing
    // everything about to be applied; then everything it owns.
    let record_name = format!("Secret `{ns}/{}`", record::record_name(&rendered.name));
    record::storage::check_room(&record, &record::storage::Layout::DEFAULT)?;
    let stored_record = write_record(cluster, &mut record, ns, &mut stored_previous).await?;
    writes.note(report, &stored_record, record_name.clone());
    let owner = if vela {
        let app = cluster.apply(&rendered.application, ns).await?;
        writes.note(report, &app, cluster::describe(&rendered.application));
        report
            .applied
            .push(cluster::describe(&rendered.application));
        owner_reference(
            "Application",
            "core.oam.dev/v1beta1",
            &application_name(&rendered.name),
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
    let inventory = apply_objects(cluster, ns, &ordered, &owner, &writes, report).await?;
    // The argument Secret: nothing the rest needs, so (direct engine) written while the
    // clusters are worked on.
    let args = apply_args_secret(cluster, step, ns, &owner, &writes);
    let args = if prepared.is_none() {
        args.await?.report(report);
        None
    } else {
        Some(args)
    };
    if vela && has_stale(&record, &inventory, ns) {
        others = OtherRecords::of(&ctx.state().all_records().await?, &rendered.name);
    }
    prune_control_plane(cluster, &record, &inventory, &others, ns, report).await?;
    record
        .adopted
        .retain(|a| inventory.iter().any(|o| o.same_object(a)));
    record.inventory = inventory;
    let upgrade = previous.is_some();
    let Some(prepared) = prepared else {
        record.placements.clear();
        record.dispatched.clear();
        record.overrides.clear();
        let forget = note_revision(cluster, ns, step, &mut record, true, upgrade).await?;
        let stored = write_record(cluster, &mut record, ns, &mut stored_previous).await?;
        writes.note(report, &stored, record_name);
        revisions::forget(cluster, ns, &forget).await;
        return Ok(());
    };
    let dispatched = dispatch(prepared, step, &mut record, report, reporter);
    let (args, failed) = match args {
        Some(args) => futures::join!(args, dispatched),
        None => (Ok(ArgsWritten::Nothing), dispatched.await),
    };
    // The clusters' outcome is recorded whatever became of the argument Secret.
    let args = args.map(|args| args.report(report));
    let succeeded = failed.is_empty();
    let forget = note_revision(cluster, ns, step, &mut record, succeeded, upgrade).await?;
    stamp_applied(&mut record, hold);
    super::overrides::stamp_parameters(&mut record, &step.variants, hold);
    let stored = write_record(cluster, &mut record, ns, &mut stored_previous).await?;
    writes.note(report, &stored, record_name);
    revisions::forget(cluster, ns, &forget).await;
    args?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Clusters {
            addon: rendered.name.clone(),
            failed,
            total: report.clusters.len(),
        })
    }
}

/// Whether the addon goes through KubeVela (`--engine`, or whether the control plane serves
/// KubeVela's Application).
pub(crate) async fn uses_vela(ctx: &Applier<'_>) -> Result<bool> {
    let served = ctx.cluster.serves(&application_gvk()).await?;
    match ctx.engine {
        EngineChoice::Auto => Ok(served),
        EngineChoice::Direct => Ok(false),
        EngineChoice::Vela if served => Ok(true),
        EngineChoice::Vela => Err(Error::VelaMissing),
    }
}

/// The record of this step before anything is applied: what the previous one held (the last
/// good inventories plus what an interrupted enable planned), under the new version.
fn new_record(step: &Step, ns: &str, previous: Option<&Record>, vela: bool) -> Record {
    let rendered = &step.rendered;
    let mut record = Record {
        name: rendered.name.clone(),
        version: rendered.version.clone(),
        registry: rendered.registry.clone(),
        source: step.package.provenance.clone(),
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
        placements: previous.map(|p| p.placements.clone()).unwrap_or_default(),
        // Everything the addon may hold: the last good inventories plus what an interrupted
        // enable planned (its pending revision is replaced by this one), each cluster saying
        // the revision it runs (clusters held keep it).
        dispatched: previous.map(Record::dispatched_stamped).unwrap_or_default(),
        pending: None,
        inventory: previous
            .map(Record::inventory_or_planned)
            .unwrap_or_default(),
        adopted: previous.map(|p| p.adopted.clone()).unwrap_or_default(),
        revisions: previous.map(|p| p.revisions.clone()).unwrap_or_default(),
        overrides: previous.map(|p| p.overrides.clone()).unwrap_or_default(),
    };
    super::overrides::note_variants(&mut record, &step.variants);
    record
}

/// The control-plane objects in apply order (the Application comes after them all).
fn ordered_objects(step: &Step) -> Vec<&Value> {
    let rendered = &step.rendered;
    apply_order(
        &rendered.outputs,
        [
            &rendered.definitions,
            &rendered.config_maps,
            &rendered.views,
        ],
    )
}

/// Namespaces and CRDs among the `outputs` first, then definitions, ConfigMaps and views (in
/// `then`), then the other outputs.
pub(crate) fn apply_order<'a>(
    outputs: &'a [(String, Value)],
    then: [&'a [Value]; 3],
) -> Vec<&'a Value> {
    let rank = |o: &Value| match o.get("kind").and_then(Value::as_str) {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    };
    let mut outputs: Vec<&Value> = outputs.iter().map(|(_, o)| o).collect();
    outputs.sort_by_key(|o| rank(o));
    let mut ordered: Vec<&Value> = outputs.iter().filter(|o| rank(o) < 2).copied().collect();
    ordered.extend(then.into_iter().flatten());
    ordered.extend(outputs.iter().filter(|o| rank(o) == 2).copied());
    ordered
}

/// How the direct engine applies one step: adopting or not, the clusters held, and what the
/// other addons' records (read under the lock) list.
struct Direct<'a> {
    adopt: bool,
    hold: &'a BTreeSet<String>,
    others: &'a OtherRecords,
}

/// Every cluster the dispatch worked on (all but the held ones) now says it was applied at the
/// record's version and newest revision.
fn stamp_applied(record: &mut Record, hold: &BTreeSet<String>) {
    let revision = record.current_revision();
    for (name, inventory) in &mut record.dispatched {
        if !hold.contains(name) {
            inventory.revision = Some(revision.clone());
        }
    }
}

/// With the direct engine, before anything is written: fails early on components the engine
/// cannot deploy, surveys every target cluster but the held ones (changing nothing), refuses
/// adoptions without `adopt`, and sets the record's pending revision unless the record already
/// covers it. Returns what it prepared.
async fn prepare_direct(
    ctx: &Applier<'_>,
    step: &Step,
    direct: Direct<'_>,
    record: &mut Record,
    previous: Option<&Record>,
    ordered: &[&Value],
    reporter: &dyn Reporter,
) -> Result<Prepared> {
    let rendered = &step.rendered;
    for name in direct.hold {
        if let Some(version) = record.cluster_version(name) {
            reporter.event(&crate::context::Progress::ClusterHeld {
                cluster: name.clone(),
                version: version.to_string(),
            });
        }
    }
    // Fails early, before anything is written, on components the direct engine cannot deploy.
    let prepared = direct::prepare_holding(
        ctx,
        &rendered.name,
        direct::Components::of(step),
        &record.dispatched,
        direct.others.clone(),
        direct.hold,
        reporter,
    )
    .await?;
    if !direct.adopt {
        review::refuse_adoptions(&rendered.name, &prepared.adoptions(&record.dispatched))?;
    }
    let shared = prepared.newly_shared(&record.dispatched);
    if !shared.is_empty() {
        reporter.event(&crate::context::Progress::Note {
            message: format!(
                "`{}` applies objects other addons apply too (the last apply's fields win; drift checks report fields the addons set differently, and each object is deleted only with the last addon): {}",
                rendered.name,
                crate::error::listed(&shared, 5)
            ),
        });
    }
    let pending = PendingRevision {
        version: rendered.version.clone(),
        inventory: planned_inventory(ctx.cluster, ordered, ctx.namespace).await?,
        dispatched: prepared.planned(),
    };
    // A revision that applies nothing the record does not list already needs no pending
    // entry: an interrupted run loses nothing, and an unchanged re-enable writes nothing.
    let covered = previous.is_some_and(|p| covers(p, &pending));
    record.pending = (!covered).then_some(pending);
    Ok(prepared)
}

/// Whether a settled record already lists everything a pending revision would.
pub(super) fn covers(previous: &Record, pending: &PendingRevision) -> bool {
    previous.pending.is_none()
        && previous.version == pending.version
        && pending
            .inventory
            .iter()
            .all(|o| previous.inventory.contains(o))
        && pending.dispatched.iter().all(|(name, planned)| {
            previous.dispatched.get(name).is_some_and(|have| {
                planned
                    .iter()
                    .all(|o| have.objects.iter().any(|h| h.object == o.object))
            })
        })
}

/// Auxiliary outputs that exist and that addonctl did not create are adopted only with
/// `--adopt`, and recorded as adopted (disable gives them back).
async fn adopt_outputs(
    cluster: &Cluster,
    step: &Step,
    adopt: bool,
    record: &mut Record,
    ns: &str,
) -> Result<()> {
    let rendered = &step.rendered;
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
    Ok(())
}

/// What became of one control-plane object.
enum Placed {
    /// Applied: as stored.
    Applied(ObjectRef, Box<DynamicObject>),
    /// Not applied: the control plane does not serve its kind.
    Skipped(ObjectRef),
}

/// Applies the control-plane objects, each owned by `owner`: Namespaces, then CRDs, then the
/// others (bounded, concurrently within each stage); the objects of the kinds those CRDs define
/// once the CRDs are Established, the others while they become so. Objects of kinds the control
/// plane does not serve are skipped with a note. Returns what was applied, in `ordered`'s order.
async fn apply_objects(
    cluster: &Cluster,
    ns: &str,
    ordered: &[&Value],
    owner: &Value,
    writes: &Writes,
    report: &mut StepReport,
) -> Result<Vec<ObjectRef>> {
    let stage = |rank: u8| -> Vec<usize> {
        (0..ordered.len())
            .filter(|&i| direct::rank(ordered[i]) == rank)
            .collect()
    };
    let mut placed: Vec<Option<Placed>> = Vec::new();
    placed.resize_with(ordered.len(), || None);
    let mut record = |results: Vec<(usize, Placed)>| {
        for (i, outcome) in results {
            placed[i] = Some(outcome);
        }
    };
    record(apply_some(cluster, ns, ordered, &stage(0), owner).await?);
    let definitions = stage(1);
    let crds = apply_some(cluster, ns, ordered, &definitions, owner).await?;
    let established: Vec<&DynamicObject> = crds
        .iter()
        .filter_map(|(_, outcome)| match outcome {
            Placed::Applied(_, stored) => Some(&**stored),
            Placed::Skipped(_) => None,
        })
        .collect();
    let (after, meanwhile) =
        direct::of_kinds_defined_by(definitions.iter().map(|&i| ordered[i]), stage(2), |&i| {
            ordered[i]
        });
    let waits = futures::future::try_join_all(
        established
            .iter()
            .map(|crd| direct::wait_established(cluster, crd)),
    );
    let (waited, applied) =
        futures::join!(waits, apply_some(cluster, ns, ordered, &meanwhile, owner));
    let applied = applied?;
    waited?;
    record(crds);
    record(applied);
    record(apply_some(cluster, ns, ordered, &after, owner).await?);
    let mut inventory = Vec::new();
    let mut skipped: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for outcome in placed.into_iter().flatten() {
        match outcome {
            Placed::Applied(mut reference, stored) => {
                writes.note(report, &stored, reference.to_string());
                reference.namespace.clone_from(&stored.metadata.namespace);
                report.applied.push(reference.to_string());
                inventory.push(reference);
            }
            Placed::Skipped(reference) => skipped
                .entry((reference.api_version.clone(), reference.kind.clone()))
                .or_default()
                .push(reference.name),
        }
    }
    for ((api_version, kind), names) in skipped {
        report
            .notes
            .push(skipped_note(cluster, &api_version, &kind, &names).await?);
    }
    Ok(inventory)
}

/// Applies the objects of `ordered` at `indexes` (bounded, concurrently; none started after a
/// failure), skipping those of kinds the control plane does not serve.
async fn apply_some(
    cluster: &Cluster,
    ns: &str,
    ordered: &[&Value],
    indexes: &[usize],
    owner: &Value,
) -> Result<Vec<(usize, Placed)>> {
    let results = crate::cluster::bounded::until_failure(
        indexes.iter().copied(),
        crate::state::clusters::OBJECT_CONCURRENCY,
        |i| async move {
            let object = ordered[i];
            let Some(reference) = ObjectRef::of(object) else {
                return Ok(None);
            };
            if !cluster.serves(&reference.gvk()).await? {
                cluster.refresh_discovery();
                if !cluster.serves(&reference.gvk()).await? {
                    return Ok(Some((i, Placed::Skipped(reference))));
                }
            }
            let stored = cluster.apply(&with_owner(object, owner), ns).await?;
            Ok::<_, Error>(Some((i, Placed::Applied(reference, Box::new(stored)))))
        },
    )
    .await;
    let mut out = Vec::new();
    for result in results.into_iter().flatten() {
        out.extend(result?);
    }
    Ok(out)
}

/// Applies the argument Secret, or deletes it when the addon has no arguments to store. Returns
/// what to report.
async fn apply_args_secret(
    cluster: &Cluster,
    step: &Step,
    ns: &str,
    owner: &Value,
    writes: &Writes,
) -> Result<ArgsWritten> {
    let secret_name = args_secret_name(&step.rendered.name);
    let what = format!("Secret `{ns}/{secret_name}`");
    Ok(match &step.rendered.args_secret {
        Some(secret) => {
            let stored = cluster.apply(&with_owner(secret, owner), ns).await?;
            ArgsWritten::Applied {
                changed: cluster::written_since(&stored, writes.0),
                what,
            }
        }
        None => {
            if cluster
                .delete(&secret_gvk(), Some(ns), &secret_name)
                .await?
            {
                ArgsWritten::Deleted(what)
            } else {
                ArgsWritten::Nothing
            }
        }
    })
}

/// What [`apply_args_secret`] did.
enum ArgsWritten {
    Applied { what: String, changed: bool },
    Deleted(String),
    Nothing,
}

impl ArgsWritten {
    fn report(self, report: &mut StepReport) {
        match self {
            ArgsWritten::Applied { what, changed } => {
                if changed && !report.changed.contains(&what) {
                    report.changed.push(what.clone());
                }
                report.applied.push(what);
            }
            ArgsWritten::Deleted(what) => report.deleted.push(what),
            ArgsWritten::Nothing => {}
        }
    }
}

/// What the previous version (or an interrupted enable) applied to the control plane and this
/// one did not, latest first (addonctl's and KubeVela's own state never).
pub(crate) fn stale(record: &Record, inventory: &[ObjectRef], ns: &str) -> Vec<DispatchedObject> {
    record
        .inventory
        .iter()
        .rev()
        .filter(|old| !inventory.iter().any(|o| o.same_object(old)))
        .filter(|old| deletion::state_of(old, ns).is_none())
        .map(|old| DispatchedObject {
            object: old.clone(),
            uid: String::new(),
            created: !record.adopted.iter().any(|a| a.same_object(old)),
        })
        .collect()
}

fn has_stale(record: &Record, inventory: &[ObjectRef], ns: &str) -> bool {
    !stale(record, inventory, ns).is_empty()
}

/// Prunes the stale control-plane objects by the deletion rules (kept while another addon's
/// record lists it; given back when adopted).
async fn prune_control_plane(
    cluster: &Cluster,
    record: &Record,
    inventory: &[ObjectRef],
    others: &OtherRecords,
    ns: &str,
    report: &mut StepReport,
) -> Result<()> {
    let stale = stale(record, inventory, ns);
    if stale.is_empty() {
        return Ok(());
    }
    let listed = super::disable::control_plane_listing(others);
    let site = deletion::Site {
        cluster,
        name: LOCAL_CLUSTER,
        system_namespace: ns,
        others: Some(&listed),
        dry_run: false,
        trust_record: true,
    };
    // What another addon keeps names that addon, not this one, from now on.
    let kept = super::disable::shared_objects(&stale, ns, &listed);
    super::handover::hand_over(cluster, cluster, ns, &record.name, &kept).await?;
    let refs: Vec<&DispatchedObject> = stale.iter().collect();
    let removal = deletion::remove(&site, &refs).await;
    report
        .deleted
        .extend(removal.deleted.iter().map(ToString::to_string));
    note_kept(report, &removal.kept, &removal.given_back);
    match removal.failure {
        Some((reason, _)) => Err(Error::DeleteFailed { reason }),
        None => Ok(()),
    }
}

fn note_kept(report: &mut StepReport, kept: &[deletion::Entry], given_back: &[deletion::Entry]) {
    for kept in kept {
        report.notes.push(format!("kept {kept}"));
    }
    for given in given_back {
        report.notes.push(format!(
            "gave back {given} (adopted: addonctl's fields removed, the object stays)"
        ));
    }
}

/// Dispatches to the target clusters and records the outcome: the pending revision promoted
/// when every cluster has it, otherwise kept with what the failed clusters may hold beyond
/// their inventories. Returns the failed clusters (`cluster: reason`).
async fn dispatch(
    prepared: Prepared,
    step: &Step,
    record: &mut Record,
    report: &mut StepReport,
    reporter: &dyn Reporter,
) -> Vec<String> {
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
        note_kept(report, &outcome.kept, &outcome.given_back);
    }
    record.placements = dispatched.placements;
    record.dispatched = dispatched.inventories;
    record.pending = (!failed.is_empty()).then(|| PendingRevision {
        version: step.rendered.version.clone(),
        inventory: Vec::new(),
        dispatched: dispatched.unfinished,
    });
    report.clusters = dispatched.outcomes;
    failed
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
    known: &mut record::storage::Stored,
) -> Result<DynamicObject> {
    for _ in 0..record::WRITE_ATTEMPTS {
        let version = known.resource_version.as_deref();
        match record::storage::write(cluster, ns, record, version, known.sharded).await? {
            record::storage::Written::Stored(stored, sharded) => {
                known
                    .resource_version
                    .clone_from(&stored.metadata.resource_version);
                known.sharded = sharded;
                return Ok(*stored);
            }
            record::storage::Written::Conflict => {
                let theirs = record::storage::read(cluster, ns, &record.name).await?;
                known.resource_version = theirs.resource_version;
                known.sharded = theirs.sharded;
                if let Some(theirs) = theirs.record {
                    record.absorb(&theirs);
                }
            }
        }
    }
    Err(record::conflict(ns, &record.name))
}

/// Adds the revision this apply makes to the record (see [`revisions::note`]); returns the
/// revision Secrets to delete once the record is written.
async fn note_revision(
    cluster: &Cluster,
    ns: &str,
    step: &Step,
    record: &mut Record,
    succeeded: bool,
    upgrade: bool,
) -> Result<Vec<String>> {
    let applied = revisions::Applied {
        package: &step.package,
        args: &step.rendered.args,
        schema: &step.rendered.schema,
        history: &step.history,
        succeeded,
        upgrade,
        overrides: super::overrides::revision_overrides(&step.variants),
    };
    revisions::note(cluster, ns, record, &applied).await
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::record::ClusterInventory;

    fn reference(kind: &str, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".to_owned(),
            kind: kind.to_owned(),
            namespace: Some("ns".to_owned()),
            name: name.to_owned(),
        }
    }

    fn dispatched(names: &[&str]) -> ClusterInventory {
        ClusterInventory {
            objects: names
                .iter()
                .map(|n| DispatchedObject {
                    object: reference("ConfigMap", n),
                    uid: "uid".to_owned(),
                    created: true,
                })
                .collect(),
            error: None,
            revision: None,
        }
    }

    fn record(inventory: &[&str], on_m1: &[&str]) -> Record {
        let mut record: Record = serde_json::from_value(json!({
            "name": "a", "version": "1.0.0", "registry": "local", "installedBy": "user",
            "argsHash": "", "application": false,
        }))
        .unwrap();
        record.inventory = inventory.iter().map(|n| reference("Secret", n)).collect();
        record.dispatched = BTreeMap::from([("m1".to_owned(), dispatched(on_m1))]);
        record
    }

    fn pending(version: &str, inventory: &[&str], on_m1: &[&str]) -> PendingRevision {
        let planned = record(inventory, on_m1);
        PendingRevision {
            version: version.to_owned(),
            inventory: planned.inventory,
            dispatched: planned
                .dispatched
                .into_iter()
                .map(|(cluster, inventory)| (cluster, inventory.objects))
                .collect(),
        }
    }

    #[test]
    fn a_settled_record_listing_everything_needs_no_pending_revision() {
        let previous = record(&["s1", "s2"], &["c1", "c2"]);
        assert!(covers(&previous, &pending("1.0.0", &["s1"], &["c2"])));
    }

    #[test]
    fn a_new_object_a_new_version_or_an_unfinished_record_needs_a_pending_revision() {
        let previous = record(&["s1"], &["c1"]);
        assert!(!covers(
            &previous,
            &pending("1.0.0", &["s1", "s2"], &["c1"])
        ));
        assert!(!covers(
            &previous,
            &pending("1.0.0", &["s1"], &["c1", "c2"])
        ));
        assert!(!covers(&previous, &pending("1.1.0", &["s1"], &["c1"])));
        let mut unfinished = previous.clone();
        unfinished.pending = Some(pending("1.0.0", &[], &[]));
        assert!(!covers(&unfinished, &pending("1.0.0", &["s1"], &["c1"])));
    }

    #[test]
    fn stale_objects_are_the_recorded_ones_no_longer_applied_latest_first_adopted_not_created() {
        let mut previous = record(&["s1", "s2", "s3"], &[]);
        previous.adopted = vec![reference("Secret", "s3")];
        let applied = vec![reference("Secret", "s1")];

        let stale = stale(&previous, &applied, "vela-system");

        let names: Vec<(&str, bool)> = stale
            .iter()
            .map(|o| (o.object.name.as_str(), o.created))
            .collect();
        assert_eq!(names, vec![("s3", false), ("s2", true)]);
    }
    #[test]
    fn held_clusters_carry_their_inventory_and_version_the_others_move_on() {
        let mut previous = record(&["s1"], &["c1", "only-in-1.0.0"]);
        previous
            .dispatched
            .insert("m3".to_owned(), dispatched(&["c1", "only-in-1.0.0"]));
        // What a new record starts from (as `new_record` builds it), then the dispatch's result:
        // m1 applied at 1.1.0 (its object of 1.0.0 pruned), m3 held as it was.
        let mut next = previous.clone();
        next.version = "1.1.0".to_owned();
        next.dispatched = previous.dispatched_stamped();
        next.dispatched.insert("m1".to_owned(), dispatched(&["c1"]));
        stamp_applied(&mut next, &BTreeSet::from(["m3".to_owned()]));

        assert_eq!(next.cluster_version("m1"), Some("1.1.0"));
        assert_eq!(next.cluster_version("m3"), Some("1.0.0"));
        assert_eq!(
            next.dispatched["m3"].objects,
            previous.dispatched["m3"].objects
        );
        assert!(next.is_mixed());
        assert_eq!(
            crate::status::phase::upgrade_progress(&next).as_deref(),
            Some("1 of 2 clusters on 1.1.0 (`m3` on 1.0.0)")
        );
        stamp_applied(&mut next, &BTreeSet::new());
        assert!(!next.is_mixed());
        assert_eq!(crate::status::phase::upgrade_progress(&next), None);
    }
}
