//! The deletion rules, in one place: every path that deletes what an addon applied (`disable`,
//! the prune of `enable`/`upgrade`, `cluster detach`, `disable --prune-dependencies`) asks
//! [`decide`] and deletes through [`remove`].
//!
//! Rules (DESIGN §5): an object is deleted only when its record says addonctl created it and no
//! other addon's record lists it; an object addonctl adopted (it existed and was not created by
//! addonctl) is given back — addonctl's fields are removed with a server-side apply of an empty
//! intent — instead of deleted; the system namespace is never deleted, on any cluster; any other
//! Namespace is deleted only when nothing that addonctl did not create for this addon lives in
//! it: every namespaced kind the cluster serves is listed there (metadata only, a few items per
//! kind), and when a list fails the namespace is kept.
//!
//! Guarantees: every deletion, give-back and kept object is reported (kind, namespace, name,
//! cluster, and the reason for what is kept); a dry run decides exactly as a real run, changes
//! nothing, and reports the same; an object recorded with a uid is deleted only while it has that
//! uid (a re-created object is someone else's: the delete carries the uid as precondition, so
//! no read comes first); one known only from a plan (no uid) only while addonctl alone manages
//! it. Namespaces and CRDs go after what lives in them (objects of one tier go concurrently). A
//! failure stops the removal on that cluster and returns what is left, so the record keeps it
//! and the next command finishes.

use std::collections::{BTreeMap, BTreeSet};

use futures::stream::{self, StreamExt};
use kube::api::{DynamicObject, ListParams, PartialObjectMeta};
use kube::discovery::{verbs, Discovery, Scope};
use serde::Serialize;
use serde_json::json;

use crate::cluster::{self, Cluster};
use crate::state::record::{DispatchedObject, ObjectRef};

/// How many foreign objects a kept namespace's reason names.
const SHOWN: usize = 3;
/// Items read per kind when looking into a namespace.
const PAGE: u32 = 50;
/// Lists in flight when looking into a namespace.
const LISTS_IN_FLIGHT: usize = 8;

/// Why an object is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Another addon's record lists it too.
    Shared(String),
    /// It is the system namespace.
    SystemNamespace,
    /// Objects addonctl did not create for this addon live in it (a few named).
    NamespaceInUse(Vec<String>),
    /// What lives in it could not be checked.
    NamespaceUnchecked(String),
    /// It was re-created (another uid) or is no longer addonctl's alone.
    NotOurs,
    /// It is addonctl's or KubeVela's own state (see [`crate::plan::protect`]).
    State(String),
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Shared(addon) => write!(f, "addon `{addon}` has it too"),
            Reason::SystemNamespace => f.write_str("it is the system namespace"),
            Reason::NamespaceInUse(found) => write!(
                f,
                "objects addonctl did not create for this addon live in it: {}",
                found.join(", ")
            ),
            Reason::NamespaceUnchecked(why) => write!(
                f,
                "what lives in it could not be checked ({why}), so it is kept"
            ),
            Reason::NotOurs => f.write_str(
                "it was re-created or changed by someone else since addonctl applied it",
            ),
            Reason::State(why) => write!(
                f,
                "{why}: addonctl's or KubeVela's own state is never deleted with an addon"
            ),
        }
    }
}

/// What to do with one object an addon no longer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Delete it (for a Namespace: after checking nothing foreign lives in it).
    Delete,
    /// Remove addonctl's fields, leave the object (addonctl adopted it).
    GiveBack,
    /// Leave it as it is.
    Keep(Reason),
}

/// The rules that need no cluster: `created` is what the record says, `others` what the other
/// addons' records list on that cluster.
pub fn decide(
    object: &ObjectRef,
    created: bool,
    system_namespace: &str,
    others: Option<&BTreeMap<ObjectRef, (String, bool)>>,
) -> Decision {
    if let Some((addon, _)) = others.and_then(|o| shared_with(o, object)) {
        return Decision::Keep(Reason::Shared(addon.clone()));
    }
    if is_namespace(object) && object.name == system_namespace {
        return Decision::Keep(Reason::SystemNamespace);
    }
    if created {
        Decision::Delete
    } else {
        Decision::GiveBack
    }
}

/// Why a recorded object is addonctl's or KubeVela's own state (by its kind, name and
/// namespace), if it is: an addon recorded before such objects were refused may list one.
pub fn state_of(object: &ObjectRef, system_namespace: &str) -> Option<String> {
    let mut value = json!({
        "apiVersion": object.api_version,
        "kind": object.kind,
        "metadata": {"name": object.name},
    });
    if let Some(namespace) = &object.namespace {
        value["metadata"]["namespace"] = json!(namespace);
    }
    crate::plan::protect::state_reason(&value, system_namespace, &[])
}

fn shared_with<'a>(
    others: &'a BTreeMap<ObjectRef, (String, bool)>,
    object: &ObjectRef,
) -> Option<&'a (String, bool)> {
    others.get(object).or_else(|| {
        others
            .iter()
            .find(|(o, _)| o.same_object(object))
            .map(|(_, v)| v)
    })
}

fn is_namespace(object: &ObjectRef) -> bool {
    object.kind == "Namespace" && object.api_version == "v1"
}

/// One object a removal deleted, gave back or kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The cluster (`local` = the control plane).
    pub cluster: String,
    /// Kind.
    pub kind: String,
    /// Namespace, for namespaced objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Why it is kept (kept objects only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Entry {
    /// The entry of `object` on `cluster`, with the reason it is kept.
    pub fn of(cluster: &str, object: &ObjectRef, reason: Option<&Reason>) -> Self {
        Entry {
            cluster: cluster.to_owned(),
            kind: object.kind.clone(),
            namespace: object.namespace.clone(),
            name: object.name.clone(),
            reason: reason.map(ToString::to_string),
        }
    }
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} `{ns}/{}`", self.kind, self.name)?,
            None => write!(f, "{} `{}`", self.kind, self.name)?,
        }
        write!(f, " on cluster `{}`", self.cluster)?;
        if let Some(reason) = &self.reason {
            write!(f, ": {reason}")?;
        }
        Ok(())
    }
}

/// What a removal on one cluster did (or, in a dry run, would do).
#[derive(Debug, Default, Clone)]
pub struct Removal {
    /// Objects deleted.
    pub deleted: Vec<Entry>,
    /// Adopted objects given back (addonctl's fields removed).
    pub given_back: Vec<Entry>,
    /// Objects kept, with the reason.
    pub kept: Vec<Entry>,
    /// The failure that stopped it, and the objects not handled yet (for the record).
    pub failure: Option<(String, Vec<DispatchedObject>)>,
}

/// One cluster's side of a removal.
pub struct Site<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// Its name as the record knows it (`local` for the control plane).
    pub name: &'a str,
    /// The system namespace (never deleted).
    pub system_namespace: &'a str,
    /// What the other addons' records list there.
    pub others: Option<&'a BTreeMap<ObjectRef, (String, bool)>>,
    /// Report only; change nothing.
    pub dry_run: bool,
    /// An object recorded without a uid is addonctl's as the record says (the control plane's
    /// inventory, which records no uids); otherwise only while addonctl alone manages it.
    pub trust_record: bool,
}

/// Removes `objects` (in the order given: reverse apply order) from one cluster by the rules.
/// Consecutive objects of one tier (see [`tier`]) are removed concurrently (at most
/// [`DELETES_IN_FLIGHT`] at once); a tier starts only when the one before it is done, so
/// namespaces and CRDs go after what lives in them, and a namespace is checked knowing
/// everything this removal deleted before it.
pub async fn remove(scope: &Site<'_>, objects: &[&DispatchedObject]) -> Removal {
    let mut removal = Removal::default();
    // What this removal deletes (uids and `(kind, namespace, name)`), so that a namespace
    // checked later knows which of its objects are going with it.
    let mut gone = Own::default();
    let mut start = 0;
    while start < objects.len() {
        let level = tier(&objects[start].object);
        let end = objects[start..]
            .iter()
            .position(|o| tier(&o.object) != level)
            .map_or(objects.len(), |n| start + n);
        if let Some((error, mut left)) =
            remove_run(scope, &objects[start..end], &mut gone, &mut removal).await
        {
            left.extend(objects[end..].iter().map(|o| (*o).clone()));
            removal.failure = Some((error, left));
            break;
        }
        start = end;
    }
    removal
}

/// Deletes in flight at once on one cluster.
const DELETES_IN_FLIGHT: usize = crate::state::clusters::OBJECT_CONCURRENCY;

/// The order of removal: everything else first (2), then CRDs (1), then namespaces (0): the
/// reverse of the apply order.
fn tier(object: &ObjectRef) -> u8 {
    if is_namespace(object) {
        0
    } else if object.kind == "CustomResourceDefinition"
        && object.api_version.starts_with("apiextensions.k8s.io/")
    {
        1
    } else {
        2
    }
}

/// What happened to one object.
enum Step {
    /// Deleted (or would be, in a dry run), with its uid when known.
    Deleted(String),
    /// Given back (or would be).
    GivenBack,
    /// Not there (any more): nothing to report.
    Absent,
    /// Kept, for this reason.
    Kept(Reason),
}

/// Removes one run of objects of the same tier concurrently, reporting into `removal` in the
/// order given. After the first failure no further object is started; returns the failure and
/// the objects of the run not handled (the failed one and those not started).
async fn remove_run(
    scope: &Site<'_>,
    run: &[&DispatchedObject],
    gone: &mut Own,
    removal: &mut Removal,
) -> Option<(String, Vec<DispatchedObject>)> {
    let seen: &Own = gone;
    let steps = cluster::bounded::until_failure(run.iter().copied(), DELETES_IN_FLIGHT, |object| {
        handle(scope, object, seen)
    })
    .await;
    let mut error = None;
    let mut left = Vec::new();
    for (object, step) in run.iter().zip(steps) {
        let reference = &object.object;
        match step {
            Some(Ok(Step::Deleted(uid))) => {
                gone.insert(reference, &uid);
                removal.deleted.push(Entry::of(scope.name, reference, None));
            }
            Some(Ok(Step::GivenBack)) => {
                removal
                    .given_back
                    .push(Entry::of(scope.name, reference, None));
            }
            Some(Ok(Step::Absent)) => {}
            Some(Ok(Step::Kept(reason))) => {
                removal
                    .kept
                    .push(Entry::of(scope.name, reference, Some(&reason)));
            }
            Some(Err(e)) => {
                error.get_or_insert_with(|| e.to_string());
                left.push((*object).clone());
            }
            None => left.push((*object).clone()),
        }
    }
    error.map(|e| (e, left))
}

/// Decides about one object and carries the decision out.
async fn handle(scope: &Site<'_>, object: &DispatchedObject, gone: &Own) -> cluster::Result<Step> {
    let reference = &object.object;
    let mut decision = decide(
        reference,
        object.created,
        scope.system_namespace,
        scope.others,
    );
    if !scope.trust_record {
        if let Some(why) = state_of(reference, scope.system_namespace) {
            decision = Decision::Keep(Reason::State(why));
        }
    }
    let outcome = match decision {
        Decision::Keep(reason) => return Ok(Step::Kept(reason)),
        Decision::GiveBack => {
            return Ok(match give_back(scope, reference).await? {
                Outcome::Done => Step::GivenBack,
                Outcome::Absent => Step::Absent,
                Outcome::NotOurs => Step::Kept(Reason::NotOurs),
            })
        }
        Decision::Delete if is_namespace(reference) => {
            match foreign_in_namespace(scope.cluster, &reference.name, gone).await {
                Ok(found) if !found.is_empty() => {
                    return Ok(Step::Kept(Reason::NamespaceInUse(found)))
                }
                Ok(_) => delete(scope, object).await?,
                Err(why) => return Ok(Step::Kept(Reason::NamespaceUnchecked(why))),
            }
        }
        Decision::Delete => delete(scope, object).await?,
    };
    Ok(match outcome {
        (Outcome::Done, uid) => Step::Deleted(uid),
        (Outcome::Absent, _) => Step::Absent,
        (Outcome::NotOurs, _) => Step::Kept(Reason::NotOurs),
    })
}

enum Outcome {
    /// Deleted or given back (or would be, in a dry run).
    Done,
    /// Not there (any more).
    Absent,
    /// There, but not the object addonctl recorded.
    NotOurs,
}

/// Deletes one object addonctl created: while it has the recorded uid, or — known only from a
/// plan — while addonctl alone manages it. Returns the outcome and the uid deleted (when
/// known).
///
/// One request when the record says which object it is: with its uid, a delete with that uid
/// as precondition (`404`: absent; `409`: another object under the name, not ours); without a
/// uid in a trusted record (the control plane's inventory), a plain delete. The object is read
/// first only when that cannot decide: in a dry run, and for an object known only from a plan
/// in a record that is not trusted (whether addonctl alone manages it).
async fn delete(scope: &Site<'_>, object: &DispatchedObject) -> cluster::Result<(Outcome, String)> {
    let reference = &object.object;
    let gvk = reference.gvk();
    let namespace = reference.namespace.as_deref();
    let recorded = (!object.uid.is_empty()).then_some(object.uid.as_str());
    if !scope.dry_run && (recorded.is_some() || scope.trust_record) {
        let deleted = scope
            .cluster
            .delete_with_uid(&gvk, namespace, &reference.name, recorded)
            .await?;
        return Ok(outcome_of(deleted, &object.uid));
    }
    let Some(stored) = scope.cluster.get(&gvk, namespace, &reference.name).await? else {
        return Ok((Outcome::Absent, String::new()));
    };
    let uid = stored.metadata.uid.clone().unwrap_or_default();
    let ours = match recorded {
        Some(recorded) => recorded == uid,
        None => scope.trust_record || created_by_us(&stored),
    };
    if !ours {
        return Ok((Outcome::NotOurs, String::new()));
    }
    if scope.dry_run {
        return Ok((Outcome::Done, uid));
    }
    // Only while it is the object just read.
    let deleted = scope
        .cluster
        .delete_with_uid(&gvk, namespace, &reference.name, Some(&uid))
        .await?;
    Ok(outcome_of(deleted, &uid))
}

fn outcome_of(deleted: cluster::Deleted, uid: &str) -> (Outcome, String) {
    match deleted {
        cluster::Deleted::Deleted => (Outcome::Done, uid.to_owned()),
        cluster::Deleted::Absent => (Outcome::Absent, String::new()),
        cluster::Deleted::OtherUid => (Outcome::NotOurs, String::new()),
    }
}

/// Gives an adopted object back: a server-side apply (field manager `addonctl`) of an intent
/// that names the object and nothing else, so the API server drops every field addonctl owned
/// and leaves the others' values.
async fn give_back(scope: &Site<'_>, reference: &ObjectRef) -> cluster::Result<Outcome> {
    let gvk = reference.gvk();
    let namespace = reference.namespace.as_deref();
    if scope
        .cluster
        .get(&gvk, namespace, &reference.name)
        .await?
        .is_none()
    {
        return Ok(Outcome::Absent);
    }
    if scope.dry_run {
        return Ok(Outcome::Done);
    }
    scope
        .cluster
        .apply(&empty_intent(reference), namespace.unwrap_or_default())
        .await?;
    Ok(Outcome::Done)
}

/// The intent that gives an object back: apiVersion, kind, name and namespace only.
pub fn empty_intent(reference: &ObjectRef) -> serde_json::Value {
    let mut metadata = json!({"name": reference.name});
    if let Some(namespace) = &reference.namespace {
        metadata["namespace"] = json!(namespace);
    }
    json!({"apiVersion": reference.api_version, "kind": reference.kind, "metadata": metadata})
}

/// Whether addonctl alone manages a stored object: addonctl has written some of it and nobody
/// else has (status writers are ignored). An object nobody manages (made before field managers
/// existed, or with no fields of its own) is not addonctl's.
pub fn created_by_us(stored: &DynamicObject) -> bool {
    metadata_created_by_us(&stored.metadata)
}

/// [`created_by_us`] of an object's metadata alone (a metadata-only list's item).
pub fn metadata_created_by_us(metadata: &kube::core::ObjectMeta) -> bool {
    let mut writers = metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|f| f.subresource.as_deref() != Some("status"))
        .peekable();
    writers.peek().is_some()
        && writers.all(|f| f.manager.as_deref() == Some(cluster::FIELD_MANAGER))
}

/// What an addon's removal takes away: by uid, and by `(kind, namespace, name)` (the API
/// version may differ between a record and a list: Ingress in two groups, for instance).
#[derive(Debug, Default)]
struct Own {
    uids: BTreeSet<String>,
    names: BTreeSet<(String, Option<String>, String)>,
}

impl Own {
    fn insert(&mut self, reference: &ObjectRef, uid: &str) {
        if !uid.is_empty() {
            self.uids.insert(uid.to_owned());
        }
        self.names.insert((
            reference.kind.clone(),
            reference.namespace.clone(),
            reference.name.clone(),
        ));
    }
}

/// One object found in a namespace (metadata only).
#[derive(Debug, Clone)]
struct Found {
    kind: String,
    name: String,
    uid: String,
    owners: Vec<String>,
    annotations: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
}

/// What Kubernetes itself puts into every namespace, or derives from an object: not foreign.
fn is_kubernetes_own(found: &Found, own_services: &BTreeSet<String>) -> bool {
    match found.kind.as_str() {
        "ServiceAccount" => found.name == "default",
        "ConfigMap" => found.name == "kube-root-ca.crt",
        "Secret" => {
            found
                .annotations
                .get("kubernetes.io/service-account.name")
                .is_some_and(|sa| sa == "default")
                && found.name.starts_with("default-token-")
        }
        "Endpoints" => own_services.contains(&found.name),
        "EndpointSlice" => found
            .labels
            .get("kubernetes.io/service-name")
            .is_some_and(|s| own_services.contains(s)),
        _ => false,
    }
}

/// Which of `found` are foreign to the addon (not what it deletes, nor owned by it, nor
/// Kubernetes' own), as `Kind name` — a few of them.
fn foreign(found: &[Found], namespace: &str, own: &Own) -> Vec<String> {
    let mut uids = own.uids.clone();
    let is_own_name = |f: &Found| {
        own.names
            .contains(&(f.kind.clone(), Some(namespace.to_owned()), f.name.clone()))
    };
    for f in found.iter().filter(|f| is_own_name(f)) {
        uids.insert(f.uid.clone());
    }
    // Owned by what goes (a Deployment's ReplicaSets and their Pods): follow the chain.
    loop {
        let before = uids.len();
        for f in found {
            if f.owners.iter().any(|o| uids.contains(o)) {
                uids.insert(f.uid.clone());
            }
        }
        if uids.len() == before {
            break;
        }
    }
    let own_services: BTreeSet<String> = found
        .iter()
        .filter(|f| f.kind == "Service" && uids.contains(&f.uid))
        .map(|f| f.name.clone())
        .collect();
    let mut out: Vec<String> = found
        .iter()
        .filter(|f| !uids.contains(&f.uid) && !is_kubernetes_own(f, &own_services))
        .map(|f| format!("{} `{}`", f.kind, f.name))
        .collect();
    out.sort();
    out.dedup();
    out.truncate(SHOWN);
    out
}

/// The objects in `namespace` that addonctl did not create for the addon (see [`foreign`]):
/// every namespaced kind the cluster serves and lists is listed there, metadata only. `Err`
/// says why it could not be checked (discovery or a list failed).
async fn foreign_in_namespace(
    cluster: &Cluster,
    namespace: &str,
    own: &Own,
) -> std::result::Result<Vec<String>, String> {
    let client = cluster.client().clone();
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .map_err(|e| format!("discovery failed: {}", crate::chain::chain(&e)))?;
    let mut kinds = Vec::new();
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            let skip = caps.scope != Scope::Namespaced
                || !caps.supports_operation(verbs::LIST)
                || resource.kind == "Event";
            if !skip {
                kinds.push(resource);
            }
        }
    }
    let lists = stream::iter(kinds)
        .map(|resource| {
            let api: kube::Api<DynamicObject> =
                kube::Api::namespaced_with(client.clone(), namespace, &resource);
            async move {
                let list = api
                    .list_metadata(&ListParams::default().limit(PAGE))
                    .await
                    .map_err(|e| {
                        format!(
                            "listing {} in `{namespace}` failed: {}",
                            resource.plural,
                            crate::chain::chain(&e)
                        )
                    })?;
                let more = list
                    .metadata
                    .continue_
                    .as_deref()
                    .is_some_and(|c| !c.is_empty());
                let items: Vec<Found> = list
                    .items
                    .into_iter()
                    .map(|item| found_of(&resource.kind, item))
                    .collect();
                Ok::<_, String>((items, more, resource.plural.clone()))
            }
        })
        .buffer_unordered(LISTS_IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    let mut found = Vec::new();
    let mut truncated = None;
    for list in lists {
        let (items, more, plural) = list?;
        found.extend(items);
        if more {
            truncated = Some(plural);
        }
    }
    let foreign = foreign(&found, namespace, own);
    match truncated {
        // More than a page of one kind and nothing foreign among the first: too many to tell.
        Some(plural) if foreign.is_empty() => {
            Err(format!("more than {PAGE} {plural} in `{namespace}`"))
        }
        _ => Ok(foreign),
    }
}

fn found_of(kind: &str, item: PartialObjectMeta<DynamicObject>) -> Found {
    let metadata = item.metadata;
    Found {
        kind: kind.to_owned(),
        name: metadata.name.unwrap_or_default(),
        uid: metadata.uid.unwrap_or_default(),
        owners: metadata
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .map(|o| o.uid)
            .collect(),
        annotations: metadata.annotations.unwrap_or_default(),
        labels: metadata.labels.unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: &str, namespace: Option<&str>, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".to_owned(),
            kind: kind.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        }
    }

    #[test]
    fn an_object_addonctl_created_and_nobody_else_lists_is_deleted() {
        let cm = object("ConfigMap", Some("ns"), "a");
        assert_eq!(decide(&cm, true, "vela-system", None), Decision::Delete);
        let ns = object("Namespace", None, "team");
        assert_eq!(decide(&ns, true, "vela-system", None), Decision::Delete);
    }

    #[test]
    fn an_object_addonctl_did_not_create_is_given_back_not_deleted() {
        let cm = object("ConfigMap", Some("kube-system"), "settings");
        assert_eq!(decide(&cm, false, "vela-system", None), Decision::GiveBack);
    }

    #[test]
    fn an_object_another_addon_lists_is_kept_naming_that_addon() {
        let cm = object("ConfigMap", Some("ns"), "shared");
        let others = BTreeMap::from([(cm.clone(), ("beta".to_owned(), true))]);
        assert_eq!(
            decide(&cm, true, "vela-system", Some(&others)),
            Decision::Keep(Reason::Shared("beta".to_owned()))
        );
        // Also when one reference carries no namespace (planned as cluster-scoped).
        let planned = object("ConfigMap", None, "shared");
        assert_eq!(
            decide(&planned, false, "vela-system", Some(&others)),
            Decision::Keep(Reason::Shared("beta".to_owned()))
        );
    }

    #[test]
    fn state_recorded_by_an_older_addon_is_recognised_by_kind_and_name() {
        let record = object("Secret", Some("vela-system"), "addon-record-other");
        assert!(state_of(&record, "vela-system").is_some());
        let store = object("ConfigMap", Some("vela-system"), "vela-addon-registry");
        assert!(state_of(&store, "vela-system").is_some());
        let plain = object("ConfigMap", Some("vela-system"), "settings");
        assert!(state_of(&plain, "vela-system").is_none());
    }

    #[test]
    fn the_system_namespace_is_never_deleted_even_when_created() {
        let ns = object("Namespace", None, "vela-system");
        assert_eq!(
            decide(&ns, true, "vela-system", None),
            Decision::Keep(Reason::SystemNamespace)
        );
        // A ConfigMap of that name is no namespace.
        let cm = object("ConfigMap", Some("x"), "vela-system");
        assert_eq!(decide(&cm, true, "vela-system", None), Decision::Delete);
    }

    fn found(kind: &str, name: &str, uid: &str, owners: &[&str]) -> Found {
        Found {
            kind: kind.to_owned(),
            name: name.to_owned(),
            uid: uid.to_owned(),
            owners: owners.iter().map(|o| (*o).to_owned()).collect(),
            annotations: BTreeMap::new(),
            labels: BTreeMap::new(),
        }
    }

    #[test]
    fn a_namespace_holds_nothing_foreign_when_everything_goes_with_the_addon() {
        let mut own = Own::default();
        own.insert(&object("Deployment", Some("team"), "web"), "d1");
        own.insert(&object("Service", Some("team"), "web"), "");
        let mut token = found("Secret", "default-token-abcde", "t", &[]);
        token.annotations.insert(
            "kubernetes.io/service-account.name".to_owned(),
            "default".to_owned(),
        );
        let items = vec![
            found("Deployment", "web", "d1", &[]),
            found("ReplicaSet", "web-1", "r1", &["d1"]),
            found("Pod", "web-1-x", "p1", &["r1"]),
            found("Service", "web", "s1", &[]),
            found("Endpoints", "web", "e1", &[]),
            found("ServiceAccount", "default", "sa", &[]),
            found("ConfigMap", "kube-root-ca.crt", "ca", &[]),
            token,
        ];
        assert!(foreign(&items, "team", &own).is_empty());
    }

    #[test]
    fn a_persons_config_map_makes_a_namespace_in_use() {
        let mut own = Own::default();
        own.insert(&object("ConfigMap", Some("team"), "mine"), "c1");
        let items = vec![
            found("ConfigMap", "mine", "c1", &[]),
            found("ConfigMap", "notes", "c2", &[]),
            found("Secret", "default-token-zzz", "t", &[]),
            found("Endpoints", "other", "e", &[]),
        ];
        assert_eq!(
            foreign(&items, "team", &own),
            [
                "ConfigMap `notes`",
                "Endpoints `other`",
                "Secret `default-token-zzz`"
            ]
        );
    }
}
