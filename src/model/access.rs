//! The vocabulary of permissions: what a command [`Need`]s on the control plane, the shipped
//! [`Role`]s that grant it, and the refusal ([`Denied`]) naming every missing one. Pure data,
//! so the crate's error can carry a refusal without importing the check ([`crate::apply::access`]).

use std::fmt;

use serde_json::{json, Value};

/// One permission a command needs on the control plane.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Need {
    /// `get`, `list`, `create`, `update`, `patch`, `delete`.
    pub verb: String,
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource (plural: `secrets`).
    pub resource: String,
    /// The namespace, or `None` for a cluster-wide resource.
    pub namespace: Option<String>,
}

impl Need {
    /// `verb` on `resource` of `group` in `namespace`.
    pub fn new(verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> Self {
        Need {
            verb: verb.to_owned(),
            group: group.to_owned(),
            resource: resource.to_owned(),
            namespace: namespace.map(str::to_owned),
        }
    }

    /// Each of `verbs` on `resource` of `group` in `namespace`.
    pub fn all(verbs: &[&str], group: &str, resource: &str, namespace: Option<&str>) -> Vec<Self> {
        verbs
            .iter()
            .map(|verb| Need::new(verb, group, resource, namespace))
            .collect()
    }

    fn resource_name(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` `{}`", self.verb, self.resource_name())?;
        match &self.namespace {
            Some(ns) => write!(f, " in namespace `{ns}`"),
            None => f.write_str(" (cluster-wide)"),
        }
    }
}

/// A shipped ClusterRole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Reads addonctl's and KubeVela's state.
    Viewer,
    /// Also writes it.
    Operator,
    /// Everything (addons with arbitrary objects on the control plane).
    Admin,
}

impl Role {
    /// Every role, least privilege first.
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    /// The ClusterRole's name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Viewer => "addonctl-viewer",
            Role::Operator => "addonctl-operator",
            Role::Admin => "addonctl-admin",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Role::Viewer => "addonctl list, status, cluster list, registry list|get, enable --dry-run: reads addon records, argument and cluster Secrets, the registry ConfigMap, Applications, definitions, leases and Deployments (KubeVela's version). Secrets include cluster credentials: bind it with a RoleBinding in the system namespace only to people who may see them",
            Role::Operator => "addonctl-viewer, plus enable/upgrade of addons whose control-plane objects are KubeVela definitions, ConfigMaps and Secrets, disable, registry add|update|remove, cluster join|detach|labels: writes those objects, Applications and addonctl's leases",
            Role::Admin => "everything, for addons that put arbitrary objects (CRDs, RBAC, workloads, other namespaces) on the control plane; bind it only where cluster-admin would be acceptable",
        }
    }

    /// `(groups, resources, verbs)` of each rule.
    fn rules(self) -> Vec<(Vec<&'static str>, Vec<&'static str>, Vec<&'static str>)> {
        const READ: [&str; 3] = ["get", "list", "watch"];
        const WRITE: [&str; 7] = [
            "get", "list", "watch", "create", "update", "patch", "delete",
        ];
        let definitions = vec![
            "applications",
            "componentdefinitions",
            "traitdefinitions",
            "policydefinitions",
            "workflowstepdefinitions",
            "scopedefinitions",
            "workloaddefinitions",
        ];
        match self {
            Role::Viewer => vec![
                (
                    vec![""],
                    vec!["configmaps", "secrets", "namespaces"],
                    READ.to_vec(),
                ),
                // KubeVela's version (the vela-core Deployment) for `system` requirements.
                (vec!["apps"], vec!["deployments"], READ.to_vec()),
                (vec!["core.oam.dev"], definitions, READ.to_vec()),
                (vec!["coordination.k8s.io"], vec!["leases"], READ.to_vec()),
                (
                    vec!["apiextensions.k8s.io"],
                    vec!["customresourcedefinitions"],
                    READ.to_vec(),
                ),
            ],
            Role::Operator => vec![
                (vec![""], vec!["configmaps", "secrets"], WRITE.to_vec()),
                (vec!["apps"], vec!["deployments"], READ.to_vec()),
                (
                    vec![""],
                    vec!["namespaces"],
                    vec!["get", "list", "watch", "create"],
                ),
                (vec!["core.oam.dev"], definitions, WRITE.to_vec()),
                (vec!["coordination.k8s.io"], vec!["leases"], WRITE.to_vec()),
                (
                    vec!["apiextensions.k8s.io"],
                    vec!["customresourcedefinitions"],
                    READ.to_vec(),
                ),
            ],
            Role::Admin => vec![(vec!["*"], vec!["*"], vec!["*"])],
        }
    }

    /// Whether the role grants `need` (bound cluster-wide, or in the need's namespace).
    pub fn allows(self, need: &Need) -> bool {
        let matches = |list: &[&str], item: &str| list.iter().any(|x| *x == "*" || *x == item);
        self.rules().iter().any(|(groups, resources, verbs)| {
            matches(groups, &need.group)
                && matches(resources, &need.resource)
                && matches(verbs, &need.verb)
        })
    }

    /// The ClusterRole object.
    pub fn cluster_role(self) -> Value {
        let rules: Vec<Value> = self
            .rules()
            .into_iter()
            .map(|(groups, resources, verbs)| {
                json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
            })
            .collect();
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": self.name(),
                "labels": {"app.kubernetes.io/managed-by": "addonctl"},
                "annotations": {"addonctl.io/description": self.description()},
            },
            "rules": rules,
        })
    }
}

/// The least shipped role granting `need`.
pub fn least_role(need: &Need) -> Role {
    Role::ALL
        .into_iter()
        .find(|role| role.allows(need))
        .unwrap_or(Role::Admin)
}

/// The shipped ClusterRoles, least privilege first.
pub fn roles() -> Vec<Value> {
    Role::ALL.iter().map(|r| r.cluster_role()).collect()
}

/// The caller lacks permissions a command needs on the control plane.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", denied_message(.command, .missing))]
pub struct Denied {
    /// The command (`enable \`x\``).
    pub command: String,
    /// Every missing permission, with the least role granting it.
    pub missing: Vec<(Need, Role)>,
}

fn denied_message(command: &str, missing: &[(Need, Role)]) -> String {
    let lines: Vec<String> = missing
        .iter()
        .map(|(need, role)| format!("{need} (ClusterRole `{}` allows it)", role.name()))
        .collect();
    let least = missing
        .iter()
        .map(|(_, role)| *role)
        .max()
        .unwrap_or(Role::Operator);
    format!(
        "{command} needs permissions on the control plane that you do not have; nothing was changed on any cluster:\n  {}\nask an administrator to bind you ClusterRole `{}` in the system namespace (`addonctl rbac` prints the roles)",
        lines.join("\n  "),
        least.name()
    )
}
