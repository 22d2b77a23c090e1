//! Whom an `Addon` acts for: the controller never does for an `Addon` what its author could
//! not do themselves.
//!
//! The model:
//! - the author is the user who last wrote the `Addon`'s spec, named by the annotations
//!   [`AUTHOR`] and [`AUTHOR_GROUPS`] (`addonctl enable --declarative` writes them). The shipped
//!   ValidatingAdmissionPolicy ([`policy_manifests`]) makes them true: a create, or an update of
//!   the spec or of the annotations, is refused unless [`AUTHOR`] is the requesting user and
//!   [`AUTHOR_GROUPS`] a subset of their groups. The controller trusts the annotations only
//!   while that policy and its binding are installed ([`policy_installed`]);
//! - before anything is applied, every object the plan writes is checked with a
//!   SubjectAccessReview for the author: `create` and `patch` on the control plane (its
//!   definitions and outputs) and on each cluster its components go to, `bind` on the role a
//!   binding grants, `escalate` for a role granting what the author lacks. One refusal and
//!   nothing is applied; the status and an Event name every missing right ([`authorize`]);
//! - what the plan's review flags (privileged RBAC, objects outside the addon's namespaces,
//!   webhooks, replaced CRDs, adopted objects) is refused unless `spec.allow` lists it; the
//!   policy lets only users with `approve` on the `Addon` set `allow` or `adopt`;
//! - an installation made by other means is taken over only with `spec.adopt`; an `Addon`
//!   that installed nothing (suspended, refused, never applied) releases without disabling;
//! - `secretParameters` read only Secrets labelled [`SECRET_PARAMETER_LABEL`] (or the
//!   `Addon`'s own `addon-params-<name>`), never cluster credentials, registry tokens,
//!   records or another addon's parameters, only for `secret()` parameters, and only Secrets
//!   the author may `get`.
//!
//! `--authorize-as controller` turns the author checks off (every writer of `Addon`s gets the
//! controller's rights): for a controller only its administrators can reach.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kube::ResourceExt as _;
use serde_json::{json, Value};

use kube::api::Patch;

use super::crd::{Addon, AddonStatus, Allowance, AUTHOR, AUTHOR_GROUPS};
use super::data::Data;
use super::engine;
use super::{Error, Result};
use crate::cluster::Cluster;
use crate::context::Context;
use crate::plan::protect::{Flag, FlagKind};

mod policy;

pub use policy::{author_annotations, policy_installed, policy_manifests};

/// The name of the shipped ValidatingAdmissionPolicy and of its binding.
pub const POLICY: &str = "addonctl-addon-author";
/// The label a Secret carries to be readable through `secretParameters`.
pub const SECRET_PARAMETER_LABEL: &str = "addonctl.io/secret-parameter";
/// Reviews in flight at once.
const CONCURRENCY: usize = 8;
/// Rules of one role checked one by one; a role with more needs `escalate`.
const MAX_RULE_CHECKS: usize = 64;
/// How long a SubjectAccessReview that allowed stands: a right revoked is still honoured for
/// at most this long (the API server's webhook authorizer keeps its answers 5 minutes).
pub const REVIEW_ALLOWED_TTL: Duration = Duration::from_secs(30);
/// How long one that denied stands: a right just granted is seen this soon.
pub const REVIEW_DENIED_TTL: Duration = Duration::from_secs(5);
/// Answers kept at most; beyond, the expired go, then the oldest.
pub const REVIEW_CAPACITY: usize = 4096;

/// Whose rights the controller acts within.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AuthorizeAs {
    /// The `Addon`'s author's (the default).
    #[default]
    Author,
    /// Its own: every writer of `Addon`s gets the controller's rights.
    Controller,
}

/// The user an `Addon` acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    /// The user name.
    pub user: String,
    /// Their groups (as the annotation lists them).
    pub groups: Vec<String>,
}

impl std::fmt::Display for Author {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.user)
    }
}

impl Author {
    /// The author the `Addon`'s annotations name.
    ///
    /// # Errors
    ///
    /// [`Error::Unauthorized`] when [`AUTHOR`] is missing or empty.
    pub fn of(addon: &Addon) -> Result<Author> {
        let annotations = addon.annotations();
        let user = annotations
            .get(AUTHOR)
            .map(|u| u.trim().to_owned())
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                Error::Unauthorized(format!(
                    "the `Addon` names no author (annotation `{AUTHOR}`): the controller acts only for the user who wrote it; write it with `addonctl enable {} --declarative`, or set `{AUTHOR}` to your user name and `{AUTHOR_GROUPS}` to your groups (the policy `{POLICY}` checks both)",
                    addon.name_any()
                ))
            })?;
        let groups = annotations
            .get(AUTHOR_GROUPS)
            .map(|g| {
                g.split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Author { user, groups })
    }
}

/// One right to check: a resource request or a non-resource one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Right {
    verb: String,
    group: String,
    resource: String,
    namespace: Option<String>,
    name: Option<String>,
    /// A non-resource URL (`/metrics`) instead of a resource.
    path: Option<String>,
}

impl std::fmt::Display for Right {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(path) = &self.path {
            return write!(f, "{} {path}", self.verb);
        }
        let resource = if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        };
        write!(f, "{} {resource}", self.verb)?;
        if let Some(name) = &self.name {
            write!(f, " `{name}`")?;
        }
        match &self.namespace {
            Some(ns) => write!(f, " in namespace `{ns}`"),
            None => Ok(()),
        }
    }
}

impl Right {
    fn on(verb: &str, group: &str, resource: &str, ns: Option<&str>, name: Option<&str>) -> Self {
        Right {
            verb: verb.to_owned(),
            group: group.to_owned(),
            resource: resource.to_owned(),
            namespace: ns.map(str::to_owned),
            name: name.map(str::to_owned),
            path: None,
        }
    }
}

/// What a SubjectAccessReview asks: of which API server, for whom (user and groups), what.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ReviewKey {
    server: String,
    user: String,
    groups: Vec<String>,
    right: Right,
}

impl ReviewKey {
    fn of(cluster: &Cluster, author: &Author, right: &Right) -> ReviewKey {
        let mut groups = author.groups.clone();
        groups.sort();
        groups.dedup();
        ReviewKey {
            // The name too: clients built in process share one placeholder server.
            server: format!("{} {}", cluster.name(), cluster.server()),
            user: author.user.clone(),
            groups,
            right: right.clone(),
        }
    }
}

/// The answers of the SubjectAccessReviews the controller asked, per API server, identity and
/// attributes, so that the reconciles of many `Addon`s by one author (and each apply again)
/// do not ask the same question again: an allowing answer stands for its TTL, a denying one
/// for a shorter one, and at most `capacity` answers are kept. Errors are never kept.
#[derive(Debug)]
pub struct Reviews {
    answers: Mutex<HashMap<ReviewKey, (bool, Instant)>>,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    capacity: usize,
    asked: AtomicU64,
    cached: AtomicU64,
}

impl Default for Reviews {
    fn default() -> Self {
        Reviews::new(REVIEW_ALLOWED_TTL, REVIEW_DENIED_TTL, REVIEW_CAPACITY)
    }
}

impl Reviews {
    /// A cache keeping allowing answers `allowed_ttl`, denying ones `denied_ttl`, at most
    /// `capacity` of them (0: none).
    pub fn new(allowed_ttl: Duration, denied_ttl: Duration, capacity: usize) -> Reviews {
        Reviews {
            answers: Mutex::new(HashMap::new()),
            allowed_ttl,
            denied_ttl,
            capacity,
            asked: AtomicU64::new(0),
            cached: AtomicU64::new(0),
        }
    }

    /// Answers kept (expired ones included until they are dropped).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reviews asked of an API server, and questions answered from the cache.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.asked.load(Ordering::Relaxed),
            self.cached.load(Ordering::Relaxed),
        )
    }

    /// The counts in the Prometheus text format.
    pub fn render(&self) -> String {
        let (asked, cached) = self.counts();
        format!(
            "# HELP addonctl_controller_access_reviews_total SubjectAccessReviews for Addon authors: asked of an API server, or answered from the cache.\n# TYPE addonctl_controller_access_reviews_total counter\naddonctl_controller_access_reviews_total{{answer=\"asked\"}} {asked}\naddonctl_controller_access_reviews_total{{answer=\"cached\"}} {cached}\n"
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ReviewKey, (bool, Instant)>> {
        self.answers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn ttl(&self, allowed: bool) -> Duration {
        if allowed {
            self.allowed_ttl
        } else {
            self.denied_ttl
        }
    }

    /// The answer kept for `key`, while it stands at `now`.
    fn get(&self, key: &ReviewKey, now: Instant) -> Option<bool> {
        let answers = self.lock();
        let (allowed, at) = answers.get(key)?;
        (now.saturating_duration_since(*at) < self.ttl(*allowed)).then_some(*allowed)
    }

    /// Keeps `allowed` for `key` as of `now`, making room first when full.
    fn put(&self, key: ReviewKey, allowed: bool, now: Instant) {
        if self.capacity == 0 {
            return;
        }
        let mut answers = self.lock();
        if answers.len() >= self.capacity && !answers.contains_key(&key) {
            answers
                .retain(|_, (allowed, at)| now.saturating_duration_since(*at) < self.ttl(*allowed));
            while answers.len() >= self.capacity {
                let oldest = answers
                    .iter()
                    .min_by_key(|(_, (_, at))| *at)
                    .map(|(k, _)| k.clone());
                match oldest {
                    Some(oldest) => answers.remove(&oldest),
                    None => break,
                };
            }
        }
        answers.insert(key, (allowed, now));
    }
}

/// Whether `author` holds `right` on `cluster`: from `reviews` while a kept answer stands,
/// else asked with a SubjectAccessReview (and kept).
async fn allowed(
    cluster: &Cluster,
    author: &Author,
    right: &Right,
    reviews: &Reviews,
) -> Result<bool> {
    let key = ReviewKey::of(cluster, author, right);
    if let Some(answer) = reviews.get(&key, Instant::now()) {
        reviews.cached.fetch_add(1, Ordering::Relaxed);
        return Ok(answer);
    }
    let answer = ask(cluster, author, right).await?;
    reviews.asked.fetch_add(1, Ordering::Relaxed);
    reviews.put(key, answer, Instant::now());
    Ok(answer)
}

/// Asks `cluster` whether `author` holds `right`.
async fn ask(cluster: &Cluster, author: &Author, right: &Right) -> Result<bool> {
    let spec = SubjectAccessReviewSpec {
        user: Some(author.user.clone()),
        groups: Some(author.groups.clone()),
        resource_attributes: right.path.is_none().then(|| ResourceAttributes {
            verb: Some(right.verb.clone()),
            group: Some(right.group.clone()),
            resource: Some(right.resource.clone()),
            namespace: right.namespace.clone(),
            name: right.name.clone(),
            ..ResourceAttributes::default()
        }),
        non_resource_attributes: right.path.as_ref().map(|path| NonResourceAttributes {
            path: Some(path.clone()),
            verb: Some(right.verb.clone()),
        }),
        ..SubjectAccessReviewSpec::default()
    };
    let review = SubjectAccessReview {
        spec,
        ..SubjectAccessReview::default()
    };
    let api: Api<SubjectAccessReview> = Api::all(cluster.client().clone());
    let answer = api.create(&PostParams::default(), &review).await?;
    Ok(answer
        .status
        .is_some_and(|s| s.allowed && !s.denied.unwrap_or(false)))
}

/// The rights writing `object` (server-side apply) takes on a cluster whose `resource` of it is
/// known: `create` and `patch`, `bind` on a binding's role, and for a role each rule it grants
/// (or `escalate`, checked when one is missing).
fn object_rights(
    object: &Value,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
) -> (Vec<Right>, Option<(Vec<Right>, Right)>) {
    let name = object.pointer("/metadata/name").and_then(Value::as_str);
    let mut rights = vec![
        Right::on("create", group, plural, namespace, None),
        Right::on("patch", group, plural, namespace, name),
    ];
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let rbac = group == "rbac.authorization.k8s.io";
    if rbac && (kind == "ClusterRoleBinding" || kind == "RoleBinding") {
        let role_kind = object.pointer("/roleRef/kind").and_then(Value::as_str);
        let role = object.pointer("/roleRef/name").and_then(Value::as_str);
        let (resource, ns) = if role_kind == Some("ClusterRole") {
            ("clusterroles", None)
        } else {
            ("roles", namespace)
        };
        rights.push(Right::on("bind", group, resource, ns, role));
    }
    let granted = if rbac && (kind == "ClusterRole" || kind == "Role") {
        let mut grants = Vec::new();
        for rule in object
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let list = |key: &str| -> Vec<String> {
                rule.get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            };
            let (verbs, groups, resources, names, paths) = (
                list("verbs"),
                list("apiGroups"),
                list("resources"),
                list("resourceNames"),
                list("nonResourceURLs"),
            );
            for verb in &verbs {
                for path in &paths {
                    grants.push(Right {
                        verb: verb.clone(),
                        group: String::new(),
                        resource: String::new(),
                        namespace: None,
                        name: None,
                        path: Some(path.clone()),
                    });
                }
                for g in &groups {
                    for resource in &resources {
                        if names.is_empty() {
                            grants.push(Right::on(verb, g, resource, namespace, None));
                        }
                        for n in &names {
                            grants.push(Right::on(verb, g, resource, namespace, Some(n)));
                        }
                    }
                }
            }
        }
        let resource = if kind == "ClusterRole" {
            "clusterroles"
        } else {
            "roles"
        };
        Some((
            grants,
            Right::on("escalate", group, resource, namespace, name),
        ))
    } else {
        None
    };
    (rights, granted)
}

/// What one cluster must allow the author: plain rights, and per role its grants with the
/// `escalate` that stands in for them.
#[derive(Default)]
struct ClusterRights {
    rights: BTreeSet<Right>,
    roles: Vec<(Vec<Right>, Right)>,
}

impl ClusterRights {
    async fn add(
        &mut self,
        cluster: &Cluster,
        object: &Value,
        default_namespace: &str,
    ) -> Result<()> {
        let Some(gvk) = crate::cluster::gvk_of(object) else {
            return Ok(());
        };
        let resource = cluster
            .resource(&gvk)
            .await
            .map_err(|e| Error::Library(Box::new(e.into())))?;
        // A kind the cluster does not serve is not applied there (the apply says so).
        let Some((resource, caps)) = resource else {
            return Ok(());
        };
        let namespace = (caps.scope == kube::discovery::Scope::Namespaced).then(|| {
            object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(default_namespace)
        });
        let (rights, role) = object_rights(object, &resource.group, &resource.plural, namespace);
        self.rights.extend(rights);
        self.roles.extend(role);
        Ok(())
    }

    /// The rights `author` lacks on `cluster`.
    async fn missing(
        &self,
        cluster: &Cluster,
        author: &Author,
        reviews: &Reviews,
    ) -> Result<Vec<Right>> {
        let ask = |right: Right| async move {
            let answer = allowed(cluster, author, &right, reviews).await;
            (right, answer)
        };
        let answers: Vec<(Right, Result<bool>)> =
            futures::stream::iter(self.rights.iter().cloned())
                .map(ask)
                .buffer_unordered(CONCURRENCY)
                .collect()
                .await;
        let mut missing = Vec::new();
        for (right, answer) in answers {
            if !answer? {
                missing.push(right);
            }
        }
        for (grants, escalate) in &self.roles {
            if grants.len() <= MAX_RULE_CHECKS {
                let answers: Vec<(Right, Result<bool>)> =
                    futures::stream::iter(grants.iter().cloned())
                        .map(ask)
                        .buffer_unordered(CONCURRENCY)
                        .collect()
                        .await;
                let mut lacks = false;
                for (_, answer) in answers {
                    lacks |= !answer?;
                }
                if !lacks {
                    continue;
                }
            }
            if !allowed(cluster, author, escalate, reviews).await? {
                missing.push(escalate.clone());
            }
        }
        missing.sort();
        missing.dedup();
        Ok(missing)
    }
}

/// Refuses, before anything is applied, a plan whose objects `author` could not write
/// themselves: on the control plane (definitions, ConfigMaps, views, outputs) and on every
/// cluster its components go to. The error names every missing right, per cluster. Answers
/// come from `reviews` while they stand.
pub async fn authorize(
    ctx: &Context,
    plan: &crate::plan::Plan,
    author: &Author,
    reviews: &Reviews,
) -> Result<()> {
    let mut per_cluster: BTreeMap<String, ClusterRights> = BTreeMap::new();
    let joined = ctx
        .state()
        .joined()
        .await
        .map_err(|e| Error::Library(Box::new(e)))?;
    let infos: Vec<crate::cluster::set::ClusterInfo> =
        joined.iter().map(|(info, _)| info.clone()).collect();
    let mut placed: BTreeMap<String, Vec<(Value, Option<String>)>> = BTreeMap::new();
    for step in plan
        .steps
        .iter()
        .filter(|s| s.action != crate::plan::Action::Keep)
    {
        let rendered = &step.rendered;
        let local = per_cluster
            .entry(crate::cluster::set::LOCAL.to_owned())
            .or_default();
        for object in rendered
            .definitions
            .iter()
            .chain(&rendered.config_maps)
            .chain(&rendered.views)
            .chain(rendered.outputs.iter().map(|(_, o)| o))
        {
            local.add(&ctx.cluster, object, &ctx.namespace).await?;
        }
        let objects = crate::apply::direct::component_objects(&rendered.application)
            .map_err(|e| Error::Library(Box::new(e)))?;
        let placements = crate::apply::direct::placements(&rendered.application);
        let targets = crate::apply::direct::resolve_targets(&placements, &infos)
            .map_err(|e| Error::Library(Box::new(e)))?;
        for (cluster, namespace) in targets {
            placed
                .entry(cluster)
                .or_default()
                .extend(objects.iter().map(|o| (o.clone(), namespace.clone())));
        }
    }
    let names: BTreeSet<String> = placed.keys().cloned().collect();
    let clients = ctx.state().clients_of(&joined, &names).await;
    let mut clusters: BTreeMap<String, Cluster> = BTreeMap::new();
    clusters.insert(crate::cluster::set::LOCAL.to_owned(), ctx.cluster.clone());
    for (name, client) in clients {
        match client {
            Ok(cluster) => {
                clusters.insert(name, cluster);
            }
            Err(error) => {
                return Err(Error::Unauthorized(format!(
                    "cannot check the author's rights on cluster `{name}`: {error}"
                )))
            }
        }
    }
    for (name, objects) in placed {
        let Some(cluster) = clusters.get(&name) else {
            continue;
        };
        let rights = per_cluster.entry(name).or_default();
        for (object, namespace) in objects {
            let default = namespace.as_deref().unwrap_or(&ctx.namespace);
            let mut object = object;
            if let (Some(ns), Some(meta)) = (&namespace, object.get_mut("metadata")) {
                if meta.get("namespace").is_some() {
                    meta["namespace"] = Value::from(ns.clone());
                }
            }
            rights.add(cluster, &object, default).await?;
        }
    }
    let mut refusals = Vec::new();
    for (name, rights) in &per_cluster {
        let Some(cluster) = clusters.get(name) else {
            continue;
        };
        let missing = rights.missing(cluster, author, reviews).await?;
        if !missing.is_empty() {
            let shown: Vec<String> = missing.iter().take(8).map(ToString::to_string).collect();
            let more = missing.len().saturating_sub(shown.len());
            refusals.push(format!(
                "on cluster `{name}`: {}{}",
                shown.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            ));
        }
    }
    if refusals.is_empty() {
        return Ok(());
    }
    Err(Error::Unauthorized(format!(
        "its author {author} may not do what the addon does, so the controller does not do it for them: {}; grant the author these rights (or have someone who holds them write the Addon)",
        refusals.join(" — ")
    )))
}

/// The allowance that lets an `Addon` apply what `flag` flags.
pub fn allowance_of(flag: FlagKind) -> Allowance {
    match flag {
        FlagKind::PrivilegedRbac => Allowance::PrivilegedRbac,
        FlagKind::ForeignNamespace => Allowance::ForeignNamespace,
        FlagKind::Webhook => Allowance::Webhook,
        FlagKind::CustomResourceDefinition => Allowance::CustomResourceDefinition,
        FlagKind::Adopts => Allowance::Adopts,
    }
}

/// The name `spec.allow` gives an allowance.
pub fn allowance_name(allowance: Allowance) -> &'static str {
    match allowance {
        Allowance::PrivilegedRbac => "privilegedRbac",
        Allowance::ForeignNamespace => "foreignNamespace",
        Allowance::Webhook => "webhook",
        Allowance::CustomResourceDefinition => "customResourceDefinition",
        Allowance::Adopts => "adopts",
    }
}

/// Refuses the `flags` `allow` does not cover, naming each and the allowance it needs.
pub fn refuse_flags(flags: &[Flag], allow: &[Allowance]) -> Result<()> {
    let refused: Vec<String> = flags
        .iter()
        .filter(|f| !allow.contains(&allowance_of(f.kind)))
        .map(|f| format!("{f} (allow `{}`)", allowance_name(allowance_of(f.kind))))
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(Error::Unauthorized(format!(
        "the review flags what the addon would do, and `spec.allow` does not allow it: {}; add the allowances to `spec.allow` (setting them needs the verb `approve` on addons.addonctl.io)",
        refused.join("; ")
    )))
}

/// Names of Secrets `secretParameters` never read, whatever their labels: cluster credentials,
/// registry tokens, records and other addons' state.
fn reserved_secret(
    name: &str,
    labels: &BTreeMap<String, String>,
    addon: &str,
) -> Option<&'static str> {
    let own_params = format!("{}{addon}", crate::declare::SECRET_PREFIX);
    if name == own_params {
        return None;
    }
    if name.starts_with(crate::declare::SECRET_PREFIX) {
        return Some("another addon's parameters");
    }
    if name.starts_with("addon-registry-") {
        return Some("a registry's credentials");
    }
    if labels
        .keys()
        .any(|k| k.starts_with("cluster.core.oam.dev/"))
    {
        return Some("a joined cluster's credentials");
    }
    if labels.keys().any(|k| k == crate::model::wire::LABEL_NAME)
        || name.starts_with("addon-secret-")
        || name.starts_with("addonctl-")
    {
        return Some("addonctl's or KubeVela's state");
    }
    None
}

/// Checks that `secret` (named `name`) may feed `parameter` of the `Addon` `addon`.
///
/// # Errors
///
/// [`Error::SecretParameter`] saying why not and what to do.
pub fn secret_usable(
    parameter: &str,
    name: &str,
    labels: &BTreeMap<String, String>,
    addon: &str,
) -> Result<()> {
    if let Some(what) = reserved_secret(name, labels, addon) {
        return Err(Error::SecretParameter {
            parameter: parameter.to_owned(),
            reason: format!(
                "Secret `{name}` holds {what}: `secretParameters` never read it; put the value in a Secret of its own labelled `{SECRET_PARAMETER_LABEL}=true`"
            ),
        });
    }
    let own = name == format!("{}{addon}", crate::declare::SECRET_PREFIX);
    if !own && labels.get(SECRET_PARAMETER_LABEL).map(String::as_str) != Some("true") {
        return Err(Error::SecretParameter {
            parameter: parameter.to_owned(),
            reason: format!(
                "Secret `{name}` is not labelled `{SECRET_PARAMETER_LABEL}=true`: only Secrets meant for addon parameters are read; label it (`kubectl label secret {name} {SECRET_PARAMETER_LABEL}=true`) if it is one"
            ),
        });
    }
    Ok(())
}

/// Checks that `author` may read the Secret `name` of `namespace` themselves.
pub async fn author_reads_secret(
    cluster: &Cluster,
    author: &Author,
    secret: (&str, &str),
    parameter: &str,
    reviews: &Reviews,
) -> Result<()> {
    let (namespace, name) = secret;
    let right = Right::on("get", "", "secrets", Some(namespace), Some(name));
    if allowed(cluster, author, &right, reviews).await? {
        return Ok(());
    }
    Err(Error::SecretParameter {
        parameter: parameter.to_owned(),
        reason: format!(
            "its author {author} may not read Secret `{name}` in namespace `{namespace}`, so the controller does not read it for them; grant them `get` on it"
        ),
    })
}

/// Whose rights an apply of `addon` stays within (see [`super::trust`]), refusing first an
/// installation this `Addon` did not make unless `spec.adopt` (`installed`: the addon has a
/// record).
pub(super) async fn trust_for(
    data: &Data,
    addon: &Addon,
    current: &AddonStatus,
    installed: bool,
) -> Result<engine::Trust> {
    let spec = &addon.spec;
    let name = addon.name_any();
    if installed && !claimed(current) && !spec.adopt {
        return Err(Error::Unauthorized(format!(
            "addon `{name}` is installed already (by the CLI, KubeVela or another Addon) and this Addon did not install it, so it is left as it is; to take it over, set `spec.adopt: true` (setting it needs the verb `approve` on addons.addonctl.io)"
        )));
    }
    let ctx = data.shared.ctx();
    let author = match data.shared.settings.authorize_as {
        AuthorizeAs::Controller => None,
        AuthorizeAs::Author => {
            if !policy_installed(&ctx.cluster).await? {
                return Err(Error::Unauthorized(format!(
                    "the ValidatingAdmissionPolicy `{POLICY}` and its binding are not installed on the control plane, so nothing vouches for who wrote the Addon: apply them (`addonctl controller manifests` prints them), or run the controller with `--authorize-as controller` if only its administrators can write Addons"
                )));
            }
            let author = Author::of(addon)?;
            for parameter in &spec.secret_parameters {
                author_reads_secret(
                    &ctx.cluster,
                    &author,
                    (&ctx.namespace, &parameter.secret_ref.name),
                    &parameter.name,
                    &data.shared.reviews,
                )
                .await?;
            }
            Some(author)
        }
    };
    Ok(engine::Trust {
        author,
        allow: spec.allow.clone(),
        secret_parameters: spec
            .secret_parameters
            .iter()
            .map(|p| p.name.clone())
            .collect(),
        reviews: std::sync::Arc::clone(&data.shared.reviews),
    })
}

/// Whether this `Addon` installed (or took over) its addon: it says so, or it applied before
/// it said so.
pub(super) fn claimed(current: &AddonStatus) -> bool {
    current.installation.is_some() || current.applied_revision.is_some()
}

/// Before the first apply: says in the status that this `Addon` installs the addon (`Created`)
/// or takes over an existing installation (`Adopted`), so that deleting it disables the addon
/// even when the apply is cut short.
pub(super) async fn claim(
    data: &Data,
    addon: &Addon,
    current: &AddonStatus,
    installed: bool,
    status: &mut AddonStatus,
) -> Result<()> {
    if claimed(current) {
        if status.installation.is_none() {
            status.installation = Some("Created".to_owned());
        }
        return Ok(());
    }
    let installation = if installed { "Adopted" } else { "Created" };
    data.api
        .patch_status(
            &addon.name_any(),
            &crate::cluster::patch_params(),
            &Patch::Merge(&json!({ "status": { "installation": installation } })),
        )
        .await?;
    status.installation = Some(installation.to_owned());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn author(user: &str, groups: &[&str]) -> Author {
        Author {
            user: user.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        }
    }

    /// A cluster nothing answers at (a request to it fails at once); built in a Tokio runtime.
    fn nowhere(name: &str) -> Cluster {
        let url = "http://127.0.0.1:9".parse().unwrap();
        Cluster::from_config(name, kube::Config::new(url)).unwrap()
    }

    #[tokio::test]
    async fn a_review_answer_stands_for_its_ttl_per_server_identity_and_attributes() {
        let reviews = Reviews::new(Duration::from_secs(30), Duration::from_secs(5), 16);
        let (m1, m2) = (nowhere("m1"), nowhere("m2"));
        let alice = author("alice", &["dev", "system:authenticated"]);
        let create = Right::on("create", "", "configmaps", Some("ns"), None);
        let t0 = Instant::now();
        let key = ReviewKey::of(&m1, &alice, &create);
        reviews.put(key.clone(), true, t0);
        assert_eq!(reviews.get(&key, t0 + Duration::from_secs(29)), Some(true));
        assert_eq!(reviews.get(&key, t0 + Duration::from_secs(30)), None);
        // The groups' order does not matter; anything else is another question.
        let reordered = author("alice", &["system:authenticated", "dev", "dev"]);
        assert_eq!(
            reviews.get(&ReviewKey::of(&m1, &reordered, &create), t0),
            Some(true)
        );
        let others = [
            ReviewKey::of(&m2, &alice, &create),
            ReviewKey::of(
                &m1,
                &author("bob", &["dev", "system:authenticated"]),
                &create,
            ),
            ReviewKey::of(&m1, &author("alice", &["dev"]), &create),
            ReviewKey::of(
                &m1,
                &alice,
                &Right::on("patch", "", "configmaps", Some("ns"), None),
            ),
            ReviewKey::of(
                &m1,
                &alice,
                &Right::on("create", "", "configmaps", Some("x"), None),
            ),
        ];
        for other in &others {
            assert_eq!(reviews.get(other, t0), None, "{other:?}");
        }
        // A denial stands for the shorter time.
        reviews.put(others[0].clone(), false, t0);
        assert_eq!(
            reviews.get(&others[0], t0 + Duration::from_secs(4)),
            Some(false)
        );
        assert_eq!(reviews.get(&others[0], t0 + Duration::from_secs(5)), None);
    }

    #[tokio::test]
    async fn the_review_cache_is_capped_dropping_the_expired_then_the_oldest() {
        let reviews = Reviews::new(Duration::from_secs(30), Duration::from_secs(5), 3);
        let m1 = nowhere("m1");
        let alice = author("alice", &[]);
        let key = |n: usize| {
            let right = Right::on("get", "", "secrets", Some("ns"), Some(&format!("s{n}")));
            ReviewKey::of(&m1, &alice, &right)
        };
        let t0 = Instant::now();
        reviews.put(key(0), false, t0);
        reviews.put(key(1), true, t0 + Duration::from_secs(1));
        reviews.put(key(2), true, t0 + Duration::from_secs(2));
        // Full: the expired denial goes first.
        let t10 = t0 + Duration::from_secs(10);
        reviews.put(key(3), true, t10);
        assert_eq!(reviews.len(), 3);
        assert_eq!(reviews.get(&key(0), t10), None);
        assert_eq!(reviews.get(&key(1), t10), Some(true));
        // Nothing expired: the oldest goes.
        reviews.put(key(4), true, t10);
        assert_eq!(reviews.len(), 3);
        assert_eq!(reviews.get(&key(1), t10), None);
        for n in [2, 3, 4] {
            assert_eq!(reviews.get(&key(n), t10), Some(true), "{n}");
        }
        let none = Reviews::new(Duration::from_secs(30), Duration::from_secs(5), 0);
        none.put(key(0), true, t0);
        assert!(none.is_empty());
    }

    #[tokio::test]
    async fn a_kept_answer_is_not_asked_again_and_an_error_is_not_kept() {
        let reviews = Reviews::default();
        let cluster = nowhere("m1");
        let alice = author("alice", &["dev"]);
        let kept = Right::on("create", "", "configmaps", Some("ns"), None);
        reviews.put(ReviewKey::of(&cluster, &alice, &kept), true, Instant::now());
        assert!(allowed(&cluster, &alice, &kept, &reviews).await.unwrap());
        assert_eq!(reviews.counts(), (0, 1));
        // Not kept: asked (the server does not answer), and the failure is not kept.
        let other = Right::on("patch", "", "configmaps", Some("ns"), Some("a"));
        assert!(allowed(&cluster, &alice, &other, &reviews).await.is_err());
        assert_eq!(reviews.len(), 1);
        assert_eq!(reviews.counts(), (0, 1));
        assert!(reviews.render().contains("answer=\"cached\"} 1"));
    }

    #[test]
    fn a_binding_needs_bind_on_its_role_and_a_role_its_grants_or_escalate() {
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "all"}, "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "name": "system:authenticated"}]});
        let (rights, role) = object_rights(
            &binding,
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            None,
        );
        assert!(role.is_none());
        let shown: Vec<String> = rights.iter().map(ToString::to_string).collect();
        assert!(
            shown.contains(
                &"bind clusterroles.rbac.authorization.k8s.io `cluster-admin`".to_owned()
            ),
            "{shown:?}"
        );
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r", "namespace": "ns"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]});
        let (_, granted) = object_rights(&role, "rbac.authorization.k8s.io", "roles", Some("ns"));
        let (grants, escalate) = granted.unwrap();
        assert_eq!(grants.len(), 2);
        assert_eq!(
            escalate.to_string(),
            "escalate roles.rbac.authorization.k8s.io `r` in namespace `ns`"
        );
    }

    #[test]
    fn secret_parameters_read_only_secrets_meant_for_them() {
        let labelled = BTreeMap::from([(SECRET_PARAMETER_LABEL.to_owned(), "true".to_owned())]);
        let none = BTreeMap::new();
        assert!(secret_usable("p", "mine", &labelled, "a").is_ok());
        assert!(secret_usable("p", "addon-params-a", &none, "a").is_ok());
        let refused = |name: &str, labels: &BTreeMap<String, String>| {
            secret_usable("p", name, labels, "a")
                .unwrap_err()
                .to_string()
        };
        assert!(refused("mine", &none).contains("not labelled"));
        assert!(refused("addon-params-b", &labelled).contains("another addon's parameters"));
        assert!(refused("addon-registry-r", &labelled).contains("registry"));
        let cluster = BTreeMap::from([
            (
                "cluster.core.oam.dev/cluster-credential-type".to_owned(),
                "X509".to_owned(),
            ),
            (SECRET_PARAMETER_LABEL.to_owned(), "true".to_owned()),
        ]);
        assert!(refused("m1", &cluster).contains("cluster's credentials"));
    }
}
