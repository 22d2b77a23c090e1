//! `disable`: removes what an addon's record lists, in reverse order, by the rules of
//! [`deletion`](super::deletion), on the control plane and on every cluster the direct engine
//! dispatched to.

use std::collections::BTreeMap;

use futures::StreamExt as _;
use serde::Serialize;

use super::{access, deletion, direct, guard, handover};
use crate::apply::Applier;
use crate::context::{EngineChoice, Reporter};
use crate::model::wire::{application_gvk, application_name, args_secret_name, LOCAL_CLUSTER};
use crate::resolve::{self, Universe};
use crate::state::record::{self, ObjectRef, OtherRecords, Record};
use crate::state::Installed;
use crate::{Error, Result};

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
    ctx: &Applier<'_>,
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
    ctx: &Applier<'_>,
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
        return Err(Error::NotEnabled {
            addon: name.to_owned(),
        });
    }
    Ok(reports.swap_remove(0))
}

/// Disables `name` and, with `prune_dependencies`, the dependencies nothing needs any more:
/// one report per addon removed, in removal order.
pub async fn disable_all(
    ctx: &Applier<'_>,
    name: &str,
    force: bool,
    prune_dependencies: bool,
    reporter: &dyn Reporter,
) -> Result<Vec<DisableReport>> {
    let options = DisableOptions {
        force,
        prune_dependencies,
        dry_run: false,
    };
    disable_all_with(ctx, name, &options, reporter).await
}

/// [`disable_all`] with every option (`dry_run`: report what each removal would do, change
/// nothing). Control plane first: checks that the caller may change the addon's state, and
/// delete what the records of every addon it removes list, then holds their locks while it
/// runs ([`super::guarded`]). A dry run takes no lock and needs no write permission.
pub async fn disable_all_with(
    ctx: &Applier<'_>,
    name: &str,
    options: &DisableOptions,
    reporter: &dyn Reporter,
) -> Result<Vec<DisableReport>> {
    // What is read before the lock serves the checks; the lock's write makes every later read
    // new.
    let _reuse = ctx.cluster.reuse_lists();
    if options.dry_run {
        return disable_all_unlocked(ctx, name, options, None, reporter).await;
    }
    let command = format!("`addonctl disable {name}`");
    // The addon's state first, while what the removal needs is read: a user without rights
    // learns what is missing, not merely that a list was refused.
    let state = async {
        let application =
            ctx.engine != EngineChoice::Direct && ctx.cluster.serves(&application_gvk()).await?;
        access::check(
            ctx.cluster,
            &command,
            &access::addon_state(ctx.namespace, application),
        )
        .await
    };
    let scoped = async {
        let scope = if options.prune_dependencies {
            access::disable_scope(ctx, name).await?
        } else {
            vec![name.to_owned()]
        };
        let mut needs = Vec::new();
        for addon in &scope {
            // The record's parts too, with the records: under the lock they are not listed
            // again while the record is unchanged (`record::storage::parts`).
            let (addon_needs, ahead) = futures::join!(
                access::disable_needs(ctx, addon),
                record::storage::parts_ahead(ctx.cluster, ctx.namespace, addon)
            );
            needs.extend(addon_needs?);
            ahead?;
        }
        needs.sort();
        needs.dedup();
        let installed = ctx.state().installed().await?;
        // The joined clusters, when an addon removed was dispatched to one: what no lock
        // protects is read once per command (and kept across the lock), here with the records
        // rather than under the lock, where a list waits for the API server's cache.
        let joined = scope.iter().any(|addon| {
            installed
                .get(addon)
                .and_then(|i| i.record.as_ref())
                .is_some_and(|r| r.dispatched_or_planned().keys().any(|c| c != LOCAL_CLUSTER))
        });
        let joined = async {
            if joined {
                ctx.state().joined().await?;
            }
            Ok::<_, Error>(())
        };
        let checked = async {
            // A damaged record is an error under the lock, after the permission check.
            let all = ctx.state().installed_checked().await.ok()?;
            Box::pin(precheck(ctx, &all, name, options)).await
        };
        let (checked, joined) = futures::join!(checked, joined);
        joined?;
        Ok((scope, needs, checked))
    };
    let (scope, needs, checked) = super::checked_first(state, scoped).await?;
    super::guarded(
        ctx,
        &command,
        &needs,
        &scope,
        Box::pin(disable_all_unlocked(ctx, name, options, checked, reporter)),
    )
    .await
}

/// What the removal's guard ([`guard::check`]) concluded before the lock, and on what state.
struct Prechecked {
    removal: Vec<String>,
    state: Vec<RemovedState>,
    outcome: Result<()>,
}

/// What the guard reads of an addon removed: its record, and its Application's spec.
type RemovedState = (Option<Record>, Option<serde_json::Value>);

fn removed_state(all: &BTreeMap<String, Installed>, removal: &[String]) -> Vec<RemovedState> {
    removal
        .iter()
        .map(|name| {
            let addon = all.get(name);
            (
                addon.and_then(|a| a.record.clone()),
                addon.and_then(|a| a.application.as_ref()?.get("spec").cloned()),
            )
        })
        .collect()
}

/// The guard run before the lock, as every check that no lock of this command covers (the
/// custom resources of the CRDs, the Applications using the definitions, the dependents'
/// records): its consistent lists wait there together with the records' for the API server's
/// cache, not once more under the lock. Under the lock its outcome stands when the addons
/// removed are as it saw them; otherwise the guard runs again.
async fn precheck(
    ctx: &Applier<'_>,
    all: &BTreeMap<String, Installed>,
    name: &str,
    options: &DisableOptions,
) -> Option<Prechecked> {
    if options.force || !all.contains_key(name) {
        return None;
    }
    let removal = removal_of(all, name, options.prune_dependencies);
    let outcome = guard::check(ctx, all, &removal).await;
    Some(Prechecked {
        state: removed_state(all, &removal),
        removal,
        outcome,
    })
}

/// `name` and, with `prune_dependencies`, the dependencies nothing else needs once it is gone,
/// in removal order.
fn removal_of(
    all: &BTreeMap<String, Installed>,
    name: &str,
    prune_dependencies: bool,
) -> Vec<String> {
    let mut removal = vec![name.to_owned()];
    if prune_dependencies {
        let mut universe = Universe::new(Vec::new());
        for addon in all.values() {
            universe.install(crate::plan::installed_addon(addon));
        }
        removal.extend(resolve::prunable_after_removing(&universe, name));
    }
    removal
}

/// [`disable_all_with`] without the permission check and the locks (`checked`: the guard's
/// outcome before them, see [`precheck`]).
async fn disable_all_unlocked(
    ctx: &Applier<'_>,
    name: &str,
    options: &DisableOptions,
    checked: Option<Prechecked>,
    reporter: &dyn Reporter,
) -> Result<Vec<DisableReport>> {
    let DisableOptions {
        force,
        prune_dependencies,
        dry_run,
    } = *options;
    // The state, read once under the locks: each removal below takes the addons it removed
    // out of it, as a new read would.
    // What a damaged record lists cannot be known: nothing is deleted while one is.
    let mut all = ctx.state().installed_checked().await?;
    if !all.contains_key(name) {
        return Err(Error::NotEnabled {
            addon: name.to_owned(),
        });
    }
    let removal = removal_of(&all, name, prune_dependencies);
    if !force {
        match checked.filter(|c| c.removal == removal && c.state == removed_state(&all, &removal)) {
            Some(checked) => checked.outcome?,
            None => guard::check(ctx, &all, &removal).await?,
        }
    }
    let mut reports: Vec<DisableReport> = Vec::new();
    let each = DisableOptions {
        force: true,
        prune_dependencies: false,
        dry_run,
    };
    for (i, addon) in removal.iter().enumerate() {
        match disable_one(ctx, &all, addon, &each, reporter).await {
            Ok(report) => {
                if !dry_run {
                    all.remove(addon);
                }
                reports.push(report);
            }
            Err(e) if reports.is_empty() => return Err(e),
            Err(e) => {
                return Err(Error::Unfinished {
                    source: Box::new(e),
                    done: reports
                        .iter()
                        .map(|r| format!("disabled addon `{}`", r.name))
                        .collect(),
                    next: removal[i..]
                        .iter()
                        .map(|a| format!("addonctl disable {a} --force"))
                        .collect::<Vec<_>>()
                        .join("`, then `"),
                })
            }
        }
    }
    Ok(reports)
}

/// Disables one addon, without permission checks or locks (the caller holds them); `all` is
/// the state the caller read under them.
pub(super) async fn disable_one(
    ctx: &Applier<'_>,
    all: &BTreeMap<String, Installed>,
    name: &str,
    options: &DisableOptions,
    reporter: &dyn Reporter,
) -> Result<DisableReport> {
    let Some(current) = all.get(name) else {
        return Err(Error::NotEnabled {
            addon: name.to_owned(),
        });
    };
    if !options.force {
        guard::check(ctx, all, &[name.to_owned()]).await?;
    }
    let mut report = DisableReport {
        name: name.to_owned(),
        deleted: Vec::new(),
        given_back: Vec::new(),
        kept: Vec::new(),
        dry_run: options.dry_run,
    };
    reporter.event(&crate::context::Progress::Disabling {
        addon: name.to_owned(),
        dry_run: options.dry_run,
    });
    // What other addons list is never deleted with this one.
    let others = OtherRecords::of(all.values().filter_map(|i| i.record.as_ref()), name);
    // The record's other Secrets (revisions, shards), listed while the clusters are worked on:
    // the revisions go with the control-plane objects, the shards after the record that names
    // them, so that the requests after the last objects are few.
    let listing = async {
        if current.record.is_some() && !options.dry_run {
            record::storage::parts(ctx.cluster, ctx.namespace, name).await
        } else {
            Ok(Vec::new())
        }
    };
    let dispatched = async {
        match &current.record {
            Some(record) => {
                remove_dispatched(ctx, record, &others, options.dry_run, &mut report, reporter)
                    .await
            }
            None => Ok(()),
        }
    };
    // The listing first: read before the lock, it is answered before any delete is sent.
    let (parts, dispatched) = futures::join!(listing, dispatched);
    dispatched?;
    let (parts, mut result) = match parts {
        Ok(parts) => (parts, Ok(())),
        Err(e) => (Vec::new(), Err(e)),
    };
    let (shards, revisions): (Vec<_>, Vec<_>) = parts.iter().partition(|(_, shard)| *shard);
    let revisions: Vec<&str> = revisions.iter().map(|(n, _)| n.as_str()).collect();
    if result.is_ok() {
        result = remove_control_plane(ctx, current, &others, &revisions, &mut report).await;
    }
    if result.is_ok() && !shards.is_empty() {
        // The record is gone: the shards it named go after it.
        let shards: Vec<&str> = shards.iter().map(|(n, _)| n.as_str()).collect();
        result = record::storage::delete_named(ctx.cluster, ctx.namespace, &shards)
            .await
            .map(|_| ());
    }
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
pub(crate) fn control_plane_listing(others: &OtherRecords) -> BTreeMap<ObjectRef, (String, bool)> {
    others
        .inventory
        .iter()
        .map(|(o, addon)| (o.clone(), (addon.clone(), true)))
        .collect()
}

/// The objects of `objects` that another addon's record lists (`listed`), each with that
/// addon: they stay, and must name it.
pub(crate) fn shared_objects(
    objects: &[record::DispatchedObject],
    system_namespace: &str,
    listed: &BTreeMap<ObjectRef, (String, bool)>,
) -> Vec<(ObjectRef, String)> {
    objects
        .iter()
        .filter_map(|o| {
            match deletion::decide(&o.object, o.created, system_namespace, Some(listed)) {
                deletion::Decision::Keep(deletion::Reason::Shared(addon)) => {
                    Some((o.object.clone(), addon))
                }
                _ => None,
            }
        })
        .collect()
}

/// The control-plane part of `disable`: the argument Secret, the record's objects (reverse
/// order), the Application, the `needNamespace` namespaces and, meanwhile, the record's
/// `revisions` Secrets; then the record itself (last, so a failure leaves it for the next
/// `disable` to finish).
async fn remove_control_plane(
    ctx: &Applier<'_>,
    current: &Installed,
    others: &OtherRecords,
    revisions: &[&str],
    report: &mut DisableReport,
) -> Result<()> {
    let ns = ctx.namespace;
    let name = &current.name;
    let secret = |n: String| ObjectRef {
        api_version: "v1".to_owned(),
        kind: "Secret".to_owned(),
        namespace: Some(ns.to_owned()),
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
    push(secret(args_secret_name(name)), true);
    if let Some(record) = &current.record {
        for object in record.inventory_or_planned().into_iter().rev() {
            if let Some(why) = deletion::state_of(&object, ns) {
                let reason = deletion::Reason::State(why);
                report
                    .kept
                    .push(deletion::Entry::of(LOCAL_CLUSTER, &object, Some(&reason)));
                continue;
            }
            let adopted = record.adopted.iter().any(|a| a.same_object(&object));
            push(object, !adopted);
        }
    }
    // The Application, when the state shows one (or the record says it was applied).
    if current.application.is_some() || current.record.as_ref().is_none_or(|r| r.application) {
        push(
            ObjectRef {
                api_version: "core.oam.dev/v1beta1".to_owned(),
                kind: "Application".to_owned(),
                namespace: Some(ns.to_owned()),
                name: application_name(name),
            },
            true,
        );
    }
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
    }
    let mut seen: Vec<ObjectRef> = Vec::new();
    objects.retain(|o| {
        let new = !seen.iter().any(|s| s.same_object(&o.object));
        seen.push(o.object.clone());
        new
    });
    // The record last, alone (what a removal deletes together goes concurrently).
    let record_secret = current
        .record
        .as_ref()
        .map(|_| secret(record::record_name(name)));
    let listed = control_plane_listing(others);
    let site = deletion::Site {
        cluster: ctx.cluster,
        name: LOCAL_CLUSTER,
        system_namespace: ns,
        others: Some(&listed),
        dry_run: report.dry_run,
        trust_record: true,
    };
    // What another addon keeps names that addon before this one's Application goes: the
    // garbage collector would take it with the Application.
    if !report.dry_run {
        let kept = shared_objects(&objects, ns, &listed);
        handover::hand_over(ctx.cluster, ctx.cluster, ns, name, &kept).await?;
    }
    let refs: Vec<&record::DispatchedObject> = objects.iter().collect();
    let (mut removal, revisions) = futures::join!(deletion::remove(&site, &refs), async {
        if report.dry_run {
            Ok(Vec::new())
        } else {
            record::storage::delete_named(ctx.cluster, ns, revisions).await
        }
    });
    if let (None, Err(e)) = (&removal.failure, &revisions) {
        return Err(Error::DeleteFailed {
            reason: format!("the record's revision Secrets: {e}"),
        });
    }
    if let (None, Some(object)) = (&removal.failure, record_secret) {
        let last = record::DispatchedObject {
            object,
            uid: String::new(),
            created: true,
        };
        let after = deletion::remove(&site, &[&last]).await;
        removal.deleted.extend(after.deleted);
        removal.kept.extend(after.kept);
        removal.failure = after.failure;
    }
    report.deleted.extend(removal.deleted);
    report.given_back.extend(removal.given_back);
    report.kept.extend(removal.kept);
    match removal.failure {
        None => Ok(()),
        Some((reason, _)) => Err(Error::DeleteFailed { reason }),
    }
}

/// Deletes what the direct engine applied to each cluster, and what a pending revision planned
/// there, by the rules of [`deletion`] (reverse order), clusters in parallel (bounded as enable
/// is). When a cluster fails, the record keeps what is left there and the error says so.
async fn remove_dispatched(
    ctx: &Applier<'_>,
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
    let clients = ctx.state().clients(&names).await?;
    let work = everything.iter().map(|(name, inventory)| {
        let client = clients.get(name);
        async move {
            let removal = match client {
                Some(Ok(client)) => {
                    if let (false, Some(listed)) = (dry_run, others.dispatched.get(name)) {
                        let kept = shared_objects(&inventory.objects, ctx.namespace, listed);
                        let handed = handover::hand_over(
                            ctx.cluster,
                            client,
                            ctx.namespace,
                            &record.name,
                            &kept,
                        )
                        .await;
                        if let Err(e) = handed {
                            let removal = deletion::Removal {
                                failure: Some((e.to_string(), inventory.objects.clone())),
                                ..deletion::Removal::default()
                            };
                            return (name, removal);
                        }
                    }
                    direct::remove_all(
                        client,
                        name,
                        ctx.namespace,
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
        reporter.event(&crate::context::Progress::ClusterRemoval {
            cluster: name.clone(),
            deleted: removal.deleted.len(),
            given_back: removal.given_back.len(),
            kept: removal.kept.len(),
            dry_run,
        });
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
                    revision: None,
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
    record::update(ctx.cluster, ctx.namespace, &record.name, |stored| {
        let mut kept = stored?;
        kept.dispatched = left_after_disable(&kept, &everything, &remaining);
        kept.pending = None;
        Some(kept)
    })
    .await?;
    Err(Error::Unfinished {
        source: Box::new(Error::DeletionFailed {
            addon: record.name.clone(),
            failed,
            total: everything.len(),
        }),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            revision: None,
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
