//! Control plane first: before a command writes anything (on the control plane or any managed
//! cluster), it asks the control plane, with SelfSubjectAccessReviews made concurrently, whether
//! the caller may do everything the command will do there, and refuses up front naming every
//! missing permission and the shipped role that allows it ([`check`]).
//!
//! The shipped roles ([`roles`], printed by `addonctl rbac`), least privilege first:
//! - `addonctl-viewer`: read addonctl's and KubeVela's state (`list`, `status`, `cluster list`,
//!   `registry list`, `enable --dry-run`): records, argument and cluster Secrets, the registry
//!   ConfigMap, Applications, definitions, leases, Deployments (KubeVela's version);
//! - `addonctl-operator`: the viewer's rights, plus writing that state (`enable`/`upgrade` of
//!   addons whose control-plane objects are KubeVela definitions, ConfigMaps and Secrets,
//!   `disable`, `registry add|update|remove`, `cluster join|detach|labels`);
//! - `addonctl-admin`: every verb on every resource, for addons whose outputs are arbitrary
//!   objects (CRDs, RBAC, workloads) on the control plane.
//!
//! Guarantees: a refused check writes nothing; the error lists every missing permission at once
//! (verb, resource, namespace) with the least role that grants it.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt as _;
use k8s_openapi::api::authorization::v1::{ResourceRule, SubjectRulesReviewStatus};
use serde_json::{json, Value};

use crate::cluster::Cluster;
pub use crate::model::access::{least_role, roles, Denied, Need, Role};

/// Reviews in flight at once.
const CONCURRENCY: usize = 8;

/// The namespace whose rules review answers for cluster-scoped needs: no object can live in it
/// (a namespace's name is a DNS label, without `:`), so no RoleBinding grants anything there and
/// the rules the server reports are exactly those bound cluster-wide (ClusterRoleBindings),
/// which alone authorize cluster-scoped requests. (The API refuses a review without a
/// namespace; a server that refuses this one is asked per permission.)
const CLUSTER_SCOPE: &str = "addonctl:cluster-scope";

/// Checks every need (each once) and refuses with every missing one. One SelfSubjectRulesReview
/// per namespace the needs name (and one for the cluster-scoped ones) decides them; what the
/// rules leave undecided (the server says they are incomplete: another authorizer than RBAC,
/// or bindings it could not evaluate) is asked with SelfSubjectAccessReviews, concurrently.
/// This is a pre-check: the server still authorizes every request the command makes.
pub async fn check(cluster: &Cluster, command: &str, needs: &[Need]) -> crate::Result<()> {
    let unique: BTreeSet<&Need> = needs.iter().collect();
    let scopes: BTreeSet<Option<&str>> = unique.iter().map(|n| n.namespace.as_deref()).collect();
    let reviews: Vec<(Option<&str>, crate::cluster::Result<Option<Rules>>)> =
        futures::stream::iter(scopes)
            .map(|scope| async move {
                let review = cluster.rules_review(scope.unwrap_or(CLUSTER_SCOPE)).await;
                (scope, review.map(|r| r.map(Rules::from)))
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
    let mut rules: BTreeMap<Option<&str>, Rules> = BTreeMap::new();
    for (scope, review) in reviews {
        if let Some(review) = review? {
            rules.insert(scope, review);
        }
    }
    let mut missing = Vec::new();
    let mut undecided = Vec::new();
    for need in unique {
        match rules
            .get(&need.namespace.as_deref())
            .and_then(|r| r.decides(need))
        {
            Some(true) => {}
            Some(false) => missing.push((need.clone(), least_role(need))),
            None => undecided.push(need),
        }
    }
    missing.extend(access_reviews(cluster, &undecided).await?);
    if missing.is_empty() {
        return Ok(());
    }
    missing.sort();
    Err(crate::Error::Denied(Denied {
        command: command.to_owned(),
        missing,
    }))
}

/// Asks for each of `needs` with a SelfSubjectAccessReview (concurrently); returns the refused.
async fn access_reviews(cluster: &Cluster, needs: &[&Need]) -> crate::Result<Vec<(Need, Role)>> {
    let answers: Vec<(&Need, crate::cluster::Result<bool>)> = futures::stream::iter(needs)
        .map(|&need| async move {
            let allowed = cluster
                .can_i(
                    &need.verb,
                    &need.group,
                    &need.resource,
                    need.namespace.as_deref(),
                )
                .await;
            (need, allowed)
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut missing = Vec::new();
    for (need, allowed) in answers {
        if !allowed? {
            missing.push((need.clone(), least_role(need)));
        }
    }
    Ok(missing)
}

/// What a rules review answered for one namespace: the resource rules, and whether they are
/// the whole answer.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// The rules bound in the namespace and cluster-wide.
    pub rules: Vec<ResourceRule>,
    /// False when the server says the list may lack rules (`incomplete`, or an evaluation
    /// error): a need the rules do not allow is then undecided, not refused.
    pub complete: bool,
}

impl From<SubjectRulesReviewStatus> for Rules {
    fn from(status: SubjectRulesReviewStatus) -> Self {
        let complete =
            !status.incomplete && status.evaluation_error.as_deref().is_none_or(str::is_empty);
        Rules {
            rules: status.resource_rules,
            complete,
        }
    }
}

impl Rules {
    /// `Some(true)` when a rule allows `need`, `Some(false)` when none does and the rules are
    /// complete, `None` when only another review can tell.
    pub fn decides(&self, need: &Need) -> Option<bool> {
        if self.rules.iter().any(|r| rule_allows(r, need, None)) {
            Some(true)
        } else if self.complete {
            Some(false)
        } else {
            None
        }
    }
}

/// Whether `rule` allows `need` (on the object `name`, or on any object of the resource), as
/// the RBAC authorizer matches: each of verbs, API groups and resources lists the one asked for
/// or `*`; a rule naming objects (`resourceNames`) allows only requests for one of them.
pub fn rule_allows(rule: &ResourceRule, need: &Need, name: Option<&str>) -> bool {
    let has = |list: &[String], item: &str| list.iter().any(|x| x == "*" || x == item);
    let names = rule.resource_names.as_deref().unwrap_or_default();
    has(&rule.verbs, &need.verb)
        && has(rule.api_groups.as_deref().unwrap_or_default(), &need.group)
        && has(
            rule.resources.as_deref().unwrap_or_default(),
            &need.resource,
        )
        && (names.is_empty() || name.is_some_and(|n| names.iter().any(|x| x == n)))
}

/// What writing an addon's state in `namespace` needs: its record, argument Secret and lease;
/// the system namespace; the cluster Secrets; the Application when KubeVela serves it.
pub fn addon_state(namespace: &str, application: bool) -> Vec<Need> {
    let ns = Some(namespace);
    let mut needs = cluster_state(namespace);
    needs.extend(lease_needs(ns));
    if application {
        needs.extend(Need::all(
            &["get", "list", "create", "patch", "delete"],
            "core.oam.dev",
            "applications",
            ns,
        ));
    }
    needs
}

/// What `cluster join|detach|labels` needs: the cluster Secrets (and, for detach, the records).
pub fn cluster_state(namespace: &str) -> Vec<Need> {
    let ns = Some(namespace);
    let mut needs = Need::all(
        &["get", "list", "create", "update", "patch", "delete"],
        "",
        "secrets",
        ns,
    );
    needs.push(Need::new("get", "", "namespaces", ns));
    needs
}

/// Taking, renewing and releasing addonctl's locks (Leases) in `ns`.
fn lease_needs(ns: Option<&str>) -> Vec<Need> {
    Need::all(
        &["get", "create", "update", "delete"],
        "coordination.k8s.io",
        "leases",
        ns,
    )
}

/// What `registry add|update|remove` needs: the registry ConfigMap and its Secrets.
pub fn registry_state(namespace: &str) -> Vec<Need> {
    let ns = Some(namespace);
    let mut needs = Need::all(&["get", "create", "update", "patch"], "", "configmaps", ns);
    needs.extend(Need::all(
        &["get", "create", "patch", "delete"],
        "",
        "secrets",
        ns,
    ));
    needs.extend(lease_needs(ns));
    needs.push(Need::new("get", "", "namespaces", ns));
    needs
}

/// What writing `object` on the control plane needs: `create` and `patch` (server-side apply)
/// on its resource, in its namespace (or `default_namespace`); `None` for a kind not served (it
/// is skipped when applied).
async fn object_needs(
    cluster: &Cluster,
    object: &Value,
    default_namespace: &str,
    verbs: &[&str],
) -> crate::Result<Vec<Need>> {
    let Some(gvk) = crate::cluster::gvk_of(object) else {
        return Ok(Vec::new());
    };
    let Some((resource, caps)) = cluster.resource(&gvk).await? else {
        return Ok(Vec::new());
    };
    let namespace = (caps.scope == kube::discovery::Scope::Namespaced).then(|| {
        object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(default_namespace)
    });
    Ok(Need::all(
        verbs,
        &resource.group,
        &resource.plural,
        namespace,
    ))
}

/// What applying a plan needs on the control plane: each addon's state
/// ([`addon_state`]) and `create`/`patch` on every control-plane object it renders.
pub async fn plan_needs(
    ctx: &crate::apply::Applier<'_>,
    plan: &crate::plan::Plan,
) -> crate::Result<Vec<Need>> {
    let application = ctx.engine != crate::context::EngineChoice::Direct
        && ctx
            .cluster
            .serves(&crate::model::wire::application_gvk())
            .await?;
    let mut needs = addon_state(ctx.namespace, application);
    needs.extend(system_namespace_needs(ctx).await?);
    // Unreadable records (the caller may not list Secrets): `addon_state` asks for that right,
    // so the check refuses with it named.
    let records = match ctx.state().records().await {
        Ok(records) => records,
        Err(crate::Error::Cluster(crate::cluster::Error::Forbidden { .. })) => Vec::new(),
        Err(e) => return Err(e),
    };
    for step in plan
        .steps
        .iter()
        .filter(|s| s.action != crate::plan::Action::Keep)
    {
        let rendered = &step.rendered;
        let objects: Vec<&Value> = rendered
            .definitions
            .iter()
            .chain(&rendered.config_maps)
            .chain(&rendered.views)
            .chain(rendered.outputs.iter().map(|(_, o)| o))
            .collect();
        for object in &objects {
            needs.extend(
                object_needs(ctx.cluster, object, ctx.namespace, &["create", "patch"]).await?,
            );
        }
        // What the previous version (or an interrupted enable) applied and this one does not
        // is pruned: `delete` on each.
        let previous = records.iter().find(|r| r.name == rendered.name);
        for stale in previous
            .map(|r| pruned(r, &objects, ctx.namespace))
            .unwrap_or_default()
        {
            needs.extend(
                object_needs(
                    ctx.cluster,
                    &reference_value(&stale),
                    ctx.namespace,
                    &["delete"],
                )
                .await?,
            );
        }
    }
    needs.sort();
    needs.dedup();
    Ok(needs)
}

/// `create` on namespaces when the system namespace is missing (the command creates it).
///
/// The namespace is read only when the caller's rules in it do not allow that already: a rule
/// there allowing `create` on namespaces comes from a ClusterRoleBinding whenever the namespace
/// is missing (nothing can be bound in a namespace that does not exist), so with one the need
/// is met either way, and the lock's first write makes the namespace when it is missing.
pub async fn system_namespace_needs(ctx: &crate::apply::Applier<'_>) -> crate::Result<Vec<Need>> {
    let create = Need::new("create", "", "namespaces", None);
    if let Ok(Some(status)) = ctx.cluster.rules_review(ctx.namespace).await {
        if Rules::from(status)
            .rules
            .iter()
            .any(|rule| rule_allows(rule, &create, None))
        {
            return Ok(Vec::new());
        }
    }
    let gvk = kube::core::GroupVersionKind::gvk("", "v1", "Namespace");
    Ok(
        match ctx.cluster.get_kept(&gvk, None, ctx.namespace).await {
            Ok(Some(_)) => Vec::new(),
            Ok(None) => vec![Need::new("create", "", "namespaces", None)],
            // The caller may not read it: the check names `get` on it.
            Err(crate::cluster::Error::Forbidden { .. }) => {
                vec![Need::new("get", "", "namespaces", Some(ctx.namespace))]
            }
            Err(e) => return Err(e.into()),
        },
    )
}

/// The control-plane objects of `record` an enable rendering `objects` prunes: listed, not
/// rendered any more, and not addonctl's or KubeVela's state (never deleted).
fn pruned(
    record: &crate::state::record::Record,
    objects: &[&Value],
    system_namespace: &str,
) -> Vec<crate::state::record::ObjectRef> {
    let rendered: Vec<crate::state::record::ObjectRef> = objects
        .iter()
        .filter_map(|o| crate::state::record::ObjectRef::of(o))
        .collect();
    record
        .inventory_or_planned()
        .into_iter()
        .filter(|old| !rendered.iter().any(|r| r.same_object(old)))
        .filter(|old| super::deletion::state_of(old, system_namespace).is_none())
        .collect()
}

/// An object reference as the skeleton object [`object_needs`] takes.
fn reference_value(object: &crate::state::record::ObjectRef) -> Value {
    json!({
        "apiVersion": object.api_version,
        "kind": object.kind,
        "metadata": {"name": object.name, "namespace": object.namespace},
    })
}

/// What disabling `addon` needs on the control plane: its state ([`addon_state`]) and `delete`
/// on every control-plane object its record lists. Refuses when `addon` is not enabled.
pub async fn disable_needs(
    ctx: &crate::apply::Applier<'_>,
    addon: &str,
) -> crate::Result<Vec<Need>> {
    let application = ctx
        .cluster
        .serves(&crate::model::wire::application_gvk())
        .await?;
    let mut needs = addon_state(ctx.namespace, application);
    let installed = ctx.state().installed().await?;
    // Refused here already, so that nothing (not even the lock) is written for it.
    let Some(current) = installed.get(addon) else {
        return Err(crate::Error::NotEnabled {
            addon: addon.to_owned(),
        });
    };
    let inventory = current
        .record
        .as_ref()
        .map(crate::state::record::Record::inventory_or_planned)
        .unwrap_or_default();
    for object in inventory {
        let value = reference_value(&object);
        needs.extend(object_needs(ctx.cluster, &value, ctx.namespace, &["delete"]).await?);
    }
    // Its `needNamespace` namespaces are deleted (when they hold nothing else).
    let need_namespaces = current
        .record
        .as_ref()
        .is_some_and(|r| !r.need_namespaces.is_empty());
    if need_namespaces {
        needs.push(Need::new("delete", "", "namespaces", None));
    }
    Ok(needs)
}

/// The addons `disable --prune-dependencies` of `addon` may remove: `addon` and, transitively,
/// the installed addons its record (and theirs) depend on (each is locked while it runs).
pub async fn disable_scope(
    ctx: &crate::apply::Applier<'_>,
    addon: &str,
) -> crate::Result<Vec<String>> {
    let installed = ctx.state().installed().await?;
    let mut scope = vec![addon.to_owned()];
    let mut next = 0;
    while let Some(name) = scope.get(next).cloned() {
        next += 1;
        let dependencies = installed
            .get(&name)
            .and_then(|i| i.record.as_ref())
            .map(|r| r.dependencies.clone())
            .unwrap_or_default();
        for dependency in dependencies {
            if installed.contains_key(&dependency.name) && !scope.contains(&dependency.name) {
                scope.push(dependency.name);
            }
        }
    }
    Ok(scope)
}

/// A hint for a Forbidden message of the control plane (`User "u" cannot patch resource
/// "secrets" in API group "" in the namespace "ns"`): the shipped role that allows it.
pub fn hint(message: &str) -> Option<String> {
    let quoted = |after: &str| -> Option<String> {
        let start = message.find(after)? + after.len();
        let rest = message.get(start..)?.strip_prefix('"')?;
        Some(rest.get(..rest.find('"')?)?.to_owned())
    };
    let verb_start = message.find(" cannot ")? + " cannot ".len();
    let verb = message.get(verb_start..)?.split_whitespace().next()?;
    let resource = quoted("resource ")?;
    let group = quoted("in API group ").unwrap_or_default();
    let namespace = quoted("in the namespace ");
    let need = Need::new(verb, &group, &resource, namespace.as_deref());
    Some(format!(
        "ClusterRole `{}` allows {need} (`addonctl rbac` prints the roles)",
        least_role(&need).name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_role_is_named_for_each_kind_of_need() {
        let ns = Some("vela-system");
        assert_eq!(
            least_role(&Need::new("list", "", "secrets", ns)),
            Role::Viewer
        );
        assert_eq!(
            least_role(&Need::new("delete", "", "secrets", ns)),
            Role::Operator
        );
        assert_eq!(
            least_role(&Need::new("update", "coordination.k8s.io", "leases", ns)),
            Role::Operator
        );
        assert_eq!(
            least_role(&Need::new(
                "create",
                "rbac.authorization.k8s.io",
                "clusterroles",
                None
            )),
            Role::Admin
        );
    }

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> ResourceRule {
        let owned = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        ResourceRule {
            verbs: owned(verbs),
            api_groups: Some(owned(groups)),
            resources: Some(owned(resources)),
            resource_names: (!names.is_empty()).then(|| owned(names)),
        }
    }

    #[test]
    fn a_rule_allows_by_verb_group_resource_and_name_with_wildcards() {
        let ns = Some("ns");
        let patch_secrets = Need::new("patch", "", "secrets", ns);
        let exact = rule(&["get", "patch"], &[""], &["secrets"], &[]);
        assert!(rule_allows(&exact, &patch_secrets, None));
        assert!(!rule_allows(
            &exact,
            &Need::new("delete", "", "secrets", ns),
            None
        ));
        // The core group is `""`: a rule of `apps` does not cover it, nor the other way round.
        assert!(!rule_allows(
            &rule(&["patch"], &["apps"], &["secrets"], &[]),
            &patch_secrets,
            None
        ));
        assert!(!rule_allows(
            &exact,
            &Need::new("patch", "apps", "secrets", ns),
            None
        ));
        assert!(!rule_allows(
            &exact,
            &Need::new("patch", "", "configmaps", ns),
            None
        ));
        // A subresource rule is not the resource.
        assert!(!rule_allows(
            &rule(&["patch"], &[""], &["secrets/status"], &[]),
            &patch_secrets,
            None
        ));
        let everything = rule(&["*"], &["*"], &["*"], &[]);
        assert!(rule_allows(
            &everything,
            &Need::new("create", "rbac.authorization.k8s.io", "clusterroles", None),
            None
        ));
        assert!(rule_allows(
            &rule(&["*"], &["apps"], &["*"], &[]),
            &Need::new("delete", "apps", "deployments", ns),
            None
        ));
        assert!(!rule_allows(
            &rule(&["*"], &["apps"], &["*"], &[]),
            &Need::new("delete", "batch", "jobs", ns),
            None
        ));
        // Named objects only: not a permission on the resource as a whole.
        let named = rule(&["get", "patch"], &[""], &["secrets"], &["a", "b"]);
        assert!(!rule_allows(&named, &patch_secrets, None));
        assert!(rule_allows(&named, &patch_secrets, Some("b")));
        assert!(!rule_allows(&named, &patch_secrets, Some("c")));
        // A rule without groups or resources allows nothing.
        let empty = ResourceRule {
            verbs: vec!["*".to_owned()],
            ..ResourceRule::default()
        };
        assert!(!rule_allows(&empty, &patch_secrets, None));
    }

    #[test]
    fn complete_rules_refuse_what_they_do_not_allow_incomplete_ones_leave_it_open() {
        let status = |incomplete: bool, error: Option<&str>| SubjectRulesReviewStatus {
            incomplete,
            evaluation_error: error.map(str::to_owned),
            resource_rules: vec![rule(&["get", "list"], &[""], &["secrets"], &[])],
            non_resource_rules: Vec::new(),
        };
        let list = Need::new("list", "", "secrets", Some("ns"));
        let delete = Need::new("delete", "", "secrets", Some("ns"));
        let complete = Rules::from(status(false, None));
        assert_eq!(complete.decides(&list), Some(true));
        assert_eq!(complete.decides(&delete), Some(false));
        let incomplete = Rules::from(status(true, None));
        assert_eq!(incomplete.decides(&list), Some(true));
        assert_eq!(incomplete.decides(&delete), None);
        let failed = Rules::from(status(false, Some("a binding could not be read")));
        assert_eq!(failed.decides(&delete), None);
        assert_eq!(
            Rules::from(status(false, Some(""))).decides(&delete),
            Some(false)
        );
    }

    #[test]
    fn every_role_grants_what_the_previous_one_does() {
        let needs: Vec<Need> = addon_state("ns", true)
            .into_iter()
            .chain(registry_state("ns"))
            .chain(cluster_state("ns"))
            .collect();
        for need in &needs {
            assert!(Role::Operator.allows(need), "{need}");
            assert!(Role::Admin.allows(need), "{need}");
            if Role::Viewer.allows(need) {
                assert!(
                    ["get", "list", "watch"].contains(&need.verb.as_str()),
                    "{need}"
                );
            }
        }
    }

    #[test]
    fn a_forbidden_message_gets_the_role_that_allows_it() {
        let message = r#"secrets "addon-record-a" is forbidden: User "test-user" cannot patch resource "secrets" in API group "" in the namespace "t-1""#;
        assert_eq!(
            hint(message).unwrap(),
            "ClusterRole `addonctl-operator` allows `patch` `secrets` in namespace `t-1` (`addonctl rbac` prints the roles)"
        );
        assert_eq!(hint("the credentials were not accepted"), None);
    }

    #[test]
    fn the_denial_lists_every_missing_permission_and_the_role_to_bind() {
        let denied = Denied {
            command: "`addonctl disable a`".to_owned(),
            missing: vec![
                (
                    Need::new("delete", "", "secrets", Some("ns")),
                    Role::Operator,
                ),
                (
                    Need::new("delete", "core.oam.dev", "applications", Some("ns")),
                    Role::Operator,
                ),
            ],
        };
        let text = denied.to_string();
        assert!(
            text.contains(
                "`delete` `secrets` in namespace `ns` (ClusterRole `addonctl-operator` allows it)"
            ),
            "{text}"
        );
        assert!(
            text.contains("`delete` `applications.core.oam.dev` in namespace `ns`"),
            "{text}"
        );
        assert!(text.contains("nothing was changed"), "{text}");
    }
}
