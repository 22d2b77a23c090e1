//! What an addon may not touch, and what it touches that a person should look at.
//!
//! [`state_objects`] finds rendered objects that are addonctl's or KubeVela's own state — the
//! registry store `vela-addon-registry` and the registry Secrets `addon-registry-*`, records
//! `addon-record-*`, argument Secrets `addon-secret-*`, cluster credential Secrets, addon
//! Applications `addon-*`, addonctl's Leases, anything labelled as such — wherever they would go.
//! The plan refuses them, whatever the flags: an addon that could write them could replace a
//! registry, mark another addon disabled, or point a cluster's credentials at a foreign endpoint
//! (and `disable` would then delete that state).
//!
//! [`flags`] lists what is powerful or reaches outside the addon — cluster-wide RBAC (bindings to
//! powerful roles or to everyone, wildcard rules), objects in namespaces other than the addon's
//! own, admission webhooks — for the plan and `enable --dry-run`.
//! Which existing objects the addon would adopt or replace is found on the clusters (see
//! [`crate::apply::review`]).

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use crate::cluster::set::LABEL_CREDENTIAL_TYPE;
use crate::render::Rendered;

use crate::model::wire::LABEL_RECORD;

/// Roles that grant (nearly) everything.
const POWERFUL_ROLES: &[&str] = &["cluster-admin", "admin", "edit"];
/// Subjects that mean "everyone".
const EVERYONE: &[&str] = &[
    "system:authenticated",
    "system:unauthenticated",
    "system:anonymous",
];

/// Where a rendered object comes from, for messages.
#[derive(Debug, Clone)]
pub struct Rendering<'a> {
    /// The object.
    pub object: &'a Value,
    /// Where it comes from: `auxiliary output `x``, `component `c``, `definition`…
    pub origin: String,
}

/// Every object an addon renders itself (not the ones addonctl generates for it: its
/// Application, argument Secret, schema ConfigMaps), with its origin.
pub fn authored(rendered: &Rendered) -> Vec<Rendering<'_>> {
    let mut out = Vec::new();
    for (key, object) in &rendered.outputs {
        out.push(Rendering {
            object,
            origin: format!("auxiliary output `{key}`"),
        });
    }
    for object in &rendered.definitions {
        out.push(Rendering {
            object,
            origin: "definitions".to_owned(),
        });
    }
    for object in &rendered.views {
        out.push(Rendering {
            object,
            origin: "views".to_owned(),
        });
    }
    for component in rendered
        .application
        .pointer("/spec/components")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = component.get("name").and_then(Value::as_str).unwrap_or("?");
        let origin = format!("component `{name}`");
        match component.get("type").and_then(Value::as_str) {
            Some("k8s-objects") => {
                for object in component
                    .pointer("/properties/objects")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.push(Rendering {
                        object,
                        origin: origin.clone(),
                    });
                }
            }
            Some("raw") => {
                if let Some(object) = component.get("properties") {
                    out.push(Rendering { object, origin });
                }
            }
            _ => {}
        }
    }
    out
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `Kind `ns/name`` or `Kind `name``.
pub fn describe(object: &Value) -> String {
    let kind = text(object, "/kind");
    let name = text(object, "/metadata/name");
    match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) => format!("{kind} `{ns}/{name}`"),
        None => format!("{kind} `{name}`"),
    }
}

/// Why `object` is addonctl's or KubeVela's own state, if it is. `clusters`: the names of the
/// joined clusters (their Secrets live in the system namespace under those names).
pub fn state_reason(object: &Value, system_namespace: &str, clusters: &[String]) -> Option<String> {
    let kind = text(object, "/kind");
    let group = text(object, "/apiVersion")
        .rsplit_once('/')
        .map_or("", |(g, _)| g);
    let name = text(object, "/metadata/name");
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    let in_system = namespace.is_none_or(|ns| ns == system_namespace);
    let label = |key: &str| object.pointer(&format!("/metadata/labels/{}", key.replace('/', "~1")));
    let core = group.is_empty();
    let why = match kind {
        "ConfigMap" if core && name == "vela-addon-registry" => {
            "it is the registry store (where KubeVela and addonctl keep the registries)"
        }
        "Secret" if core && name.starts_with("addon-registry-") => {
            "it is a registry's credentials Secret"
        }
        "Secret" if core && name.starts_with("addon-record-") => {
            "it is an addon's record (what addonctl installed)"
        }
        "Secret" if core && name.starts_with("addon-secret-") => "it is an addon's argument Secret",
        "Secret" if core && label(LABEL_CREDENTIAL_TYPE).is_some() => {
            "it is labelled as a cluster credential Secret"
        }
        "Secret" if core && in_system && clusters.iter().any(|c| c == name) => {
            "it is the credential Secret of a joined cluster"
        }
        "Application" if group == "core.oam.dev" && in_system && name.starts_with("addon-") => {
            "it is an addon's Application"
        }
        "Lease"
            if group == "coordination.k8s.io"
                && in_system
                && (name.starts_with("addon-") || name.starts_with("addonctl")) =>
        {
            "it is a lock addonctl holds while it changes an addon"
        }
        _ if label(LABEL_RECORD).is_some() => "it is labelled as an addon record",
        _ => return None,
    };
    Some(why.to_owned())
}

/// Every authored object of `rendered` that is addonctl's or KubeVela's state: one line each,
/// naming the object, where it comes from and why it is refused.
pub fn state_objects(
    rendered: &Rendered,
    system_namespace: &str,
    clusters: &[String],
) -> Vec<String> {
    authored(rendered)
        .iter()
        .filter_map(|r| {
            let why = state_reason(r.object, system_namespace, clusters)?;
            Some(format!(
                "addon `{}` renders {} ({}): {why}",
                rendered.name,
                describe(r.object),
                r.origin
            ))
        })
        .collect()
}

/// What kind of attention an object needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FlagKind {
    /// RBAC that grants much, or grants it to everyone.
    PrivilegedRbac,
    /// An object in a namespace that is not the addon's.
    ForeignNamespace,
    /// An admission webhook (it sees, and may change or refuse, other objects).
    Webhook,
    /// A CustomResourceDefinition already present that the addon would replace.
    CustomResourceDefinition,
    /// An existing object addonctl did not create, which the addon would adopt.
    Adopts,
}

/// One object the plan flags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Flag {
    /// The addon.
    pub addon: String,
    /// What kind of attention it needs.
    pub kind: FlagKind,
    /// The object (`Kind `ns/name``), with its cluster when known.
    pub object: String,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "addon `{}`: {}: {}",
            self.addon, self.object, self.reason
        )
    }
}

fn rbac_reason(object: &Value) -> Option<String> {
    let kind = text(object, "/kind");
    if !text(object, "/apiVersion").starts_with("rbac.authorization.k8s.io/") {
        return None;
    }
    match kind {
        "ClusterRoleBinding" | "RoleBinding" => {
            let role = text(object, "/roleRef/name");
            let everyone: Vec<&str> = object
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|s| text(s, "/name"))
                .filter(|n| EVERYONE.contains(n))
                .collect();
            let mut why = Vec::new();
            if POWERFUL_ROLES.contains(&role) {
                why.push(format!("binds the powerful role `{role}`"));
            }
            if !everyone.is_empty() {
                why.push(format!("grants `{role}` to {}", everyone.join(", ")));
            }
            if kind == "ClusterRoleBinding" && why.is_empty() {
                why.push(format!("grants `{role}` in every namespace"));
            }
            (!why.is_empty()).then(|| why.join("; "))
        }
        "ClusterRole" | "Role" => {
            let wildcard = object
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|rule| {
                    ["verbs", "resources", "apiGroups", "nonResourceURLs"]
                        .iter()
                        .any(|field| {
                            rule.get(field)
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                                .any(|v| v.as_str() == Some("*"))
                        })
                });
            wildcard.then(|| "has wildcard (`*`) rules".to_owned())
        }
        _ => None,
    }
}

/// The flags of the objects an addon renders, without a cluster: RBAC, webhooks, and
/// namespaced objects outside `own_namespaces` (the addon's `needNamespace`, its target
/// namespaces and the system namespace).
pub fn flags(rendered: &Rendered, own_namespaces: &BTreeSet<String>) -> Vec<Flag> {
    let mut out = Vec::new();
    for rendering in authored(rendered) {
        let object = rendering.object;
        let describe = || format!("{} ({})", describe(object), rendering.origin);
        let mut flag = |kind: FlagKind, reason: String| {
            out.push(Flag {
                addon: rendered.name.clone(),
                kind,
                object: describe(),
                reason,
            });
        };
        if let Some(why) = rbac_reason(object) {
            flag(FlagKind::PrivilegedRbac, why);
        }
        if matches!(
            text(object, "/kind"),
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration"
        ) {
            flag(
                FlagKind::Webhook,
                "an admission webhook: it sees, and may change or refuse, objects of others"
                    .to_owned(),
            );
        }
        if let Some(ns) = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        {
            if !own_namespaces.contains(ns) {
                flag(
                    FlagKind::ForeignNamespace,
                    format!("in namespace `{ns}`, which is not the addon's"),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(name: &str, namespace: &str, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": name, "namespace": namespace, "labels": labels}})
    }

    #[test]
    fn addonctl_and_kubevela_state_is_recognised_wherever_it_goes() {
        let clusters = vec!["edge-1".to_owned()];
        let state = |o: &Value| state_reason(o, "vela-system", &clusters);
        let registry = json!({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "vela-addon-registry"}});
        assert!(state(&registry).is_some());
        for name in [
            "addon-registry-x",
            "addon-record-other",
            "addon-secret-other",
        ] {
            assert!(
                state(&secret(name, "anywhere", json!({}))).is_some(),
                "{name}"
            );
        }
        let labelled = secret(
            "creds",
            "team",
            json!({LABEL_CREDENTIAL_TYPE: "X509Certificate"}),
        );
        assert!(state(&labelled).is_some());
        assert!(state(&secret("edge-1", "vela-system", json!({}))).is_some());
        assert!(state(&secret("edge-1", "team", json!({}))).is_none());
        assert!(state(&secret("app-config", "vela-system", json!({}))).is_none());
        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                           "metadata": {"name": "addonctl-x", "namespace": "vela-system"}});
        assert!(state(&lease).is_some());
        let record_like = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "x", "labels": {LABEL_RECORD: "true"}}});
        assert!(state(&record_like).is_some());
    }

    #[test]
    fn bindings_to_powerful_roles_or_everyone_and_wildcards_are_privileged() {
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "name": "system:authenticated"}]});
        let why = rbac_reason(&binding).unwrap();
        assert!(
            why.contains("`cluster-admin`") && why.contains("system:authenticated"),
            "{why}"
        );
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}]});
        assert!(rbac_reason(&role).is_some());
        let narrow = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "n"}, "roleRef": {"kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "app"}]});
        assert!(rbac_reason(&narrow).is_none());
    }
}
