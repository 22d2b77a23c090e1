//! What `addonctl controller manifests` prints: the `Addon` CRD, the controller's
//! ServiceAccount, its least-privilege RBAC (each rule with the reason it is there) and its
//! Deployment, as one multi-document YAML stream for `kubectl apply -f -`.

use kube::CustomResourceExt as _;
use serde_json::{json, Value};

use super::crd::Addon;
use super::leader::LEASE;
use crate::model::access::Role;

/// The controller's name (ServiceAccount, Role, bindings, Deployment).
pub const NAME: &str = "addonctl-controller";

/// What the manifests are made for.
#[derive(Debug, Clone)]
pub struct ManifestOptions {
    /// The system namespace (where `Addon`s, records and cluster Secrets live).
    pub namespace: String,
    /// The controller's image.
    pub image: String,
    /// Replicas (with leader election one leads, the others stand by).
    pub replicas: u32,
    /// Bind `addonctl-admin` (every verb on every resource) instead of `addonctl-operator`:
    /// needed when addons put arbitrary objects (CRDs, RBAC, workloads) on the control plane.
    pub admin: bool,
    /// Only what a controller run elsewhere (`addonctl controller` on a workstation) needs on
    /// the cluster: the CRD and the admission policy that keeps `Addon` authors true.
    pub crd_only: bool,
    /// Also serve the app store (`addonctl serve --in-cluster`) from each replica, behind a
    /// Service, with the rights to learn who a caller is and act as them.
    pub serve: bool,
}

/// The documents, each with a comment saying why it is there.
pub fn documents(options: &ManifestOptions) -> Vec<(String, Value)> {
    let ns = options.namespace.as_str();
    let labels =
        json!({"app.kubernetes.io/name": NAME, "app.kubernetes.io/managed-by": "addonctl"});
    let role = if options.admin {
        Role::Admin
    } else {
        Role::Operator
    };
    let mut out = vec![
        (
            "The Addon resource: addons declared in the system namespace".to_owned(),
            crd(),
        ),
        (
            "The identity the controller runs as".to_owned(),
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": NAME, "namespace": ns, "labels": labels}}),
        ),
        (
            format!(
                "The controller's own state, in the system namespace only:\n\
                 - addons: watch the Addon resources and set their finalizer (get/list/watch/update/patch);\n\
                 - addons/status: write conditions and per-cluster outcomes;\n\
                 - leases: leader election (`{LEASE}`) and the per-addon locks every writer takes;\n\
                 - events: report what it did on the Addon"
            ),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": NAME, "namespace": ns, "labels": labels},
                   "rules": [
                       {"apiGroups": ["addonctl.io"], "resources": ["addons"],
                        "verbs": ["get", "list", "watch", "update", "patch"]},
                       {"apiGroups": ["addonctl.io"], "resources": ["addons/status", "addons/finalizers"],
                        "verbs": ["get", "update", "patch"]},
                       {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                        "verbs": ["get", "list", "watch", "create", "update", "delete"]},
                       {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
                   ]}),
        ),
        (
            "Binds the Role above in the system namespace".to_owned(),
            binding("RoleBinding", NAME, "Role", NAME, ns, &labels),
        ),
        (
            format!(
                "What `addonctl enable` itself needs (the shipped ClusterRole `{}`): records, argument and\n\
                 cluster Secrets and registry ConfigMaps (read/write), KubeVela Applications and definitions,\n\
                 namespaces (create), CRDs (read){}",
                role.name(),
                if options.admin {
                    "; here `addonctl-admin`: addons that put arbitrary objects on the control plane need it"
                } else {
                    ".\nAddons that put other objects (CRDs, RBAC, workloads) on the control plane need\n\
                     `addonctl-admin` instead: `addonctl controller manifests --admin`"
                }
            ),
            role.cluster_role(),
        ),
        (
            format!("Grants `{}` to the controller", role.name()),
            binding("ClusterRoleBinding", NAME, "ClusterRole", role.name(), ns, &labels),
        ),
    ];
    let controller = format!("system:serviceaccount:{ns}:{NAME}");
    out.push((
        "Acting for an Addon's author: the controller asks, with SubjectAccessReviews, whether the\n\
         user who wrote the Addon may do what its addon does (on the control plane; on a managed\n\
         cluster its joined credentials ask)"
            .to_owned(),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": format!("{NAME}-reviews"), "labels": labels},
               "rules": [{"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
                         {"apiGroups": ["admissionregistration.k8s.io"],
                          "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
                          "verbs": ["get"]}]}),
    ));
    out.push((
        format!("Grants `{NAME}-reviews` to the controller"),
        binding(
            "ClusterRoleBinding",
            &format!("{NAME}-reviews"),
            "ClusterRole",
            &format!("{NAME}-reviews"),
            ns,
            &labels,
        ),
    ));
    for (comment, document) in super::trust::policy_manifests(&controller)
        .into_iter()
        .zip([
            "Who wrote an Addon: the annotation addonctl.io/author must name the user writing its spec\n\
             (addonctl.io/author-groups: some of their groups), and only users with the verb `approve` on\n\
             addons.addonctl.io may set spec.allow or spec.adopt. The controller acts only while this\n\
             policy and its binding are installed (Kubernetes 1.30 or later)",
            "Enforces the policy above",
        ])
        .map(|(document, comment)| (comment.to_owned(), document))
    {
        out.push((comment, document));
    }
    out.push((
        format!(
            "For the people who write Addons (bind with a RoleBinding in `{ns}`): `{NAME}-author` writes\n\
             Addons, `{NAME}-approver` may also set spec.allow and spec.adopt. Writing an Addon makes the\n\
             controller act for its author, never beyond the author's own rights"
        ),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": format!("{NAME}-author"), "labels": labels},
               "rules": [{"apiGroups": ["addonctl.io"], "resources": ["addons"],
                          "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                         {"apiGroups": ["addonctl.io"], "resources": ["addons/status"], "verbs": ["get"]}]}),
    ));
    out.push((
        "Approvers: authors who may also allow what a review flags and take over installations".to_owned(),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": format!("{NAME}-approver"), "labels": labels},
               "rules": [{"apiGroups": ["addonctl.io"], "resources": ["addons"],
                          "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "approve"]},
                         {"apiGroups": ["addonctl.io"], "resources": ["addons/status"], "verbs": ["get"]}]}),
    ));
    if options.serve {
        out.push((
            format!(
                "The app store acts as each caller: it asks the API server whose a bearer token is\n\
                 (tokenreviews) and makes every request as that user, their groups and the extra facts\n\
                 their authenticator gives (impersonate; a service account token's credential id, for\n\
                 one), so RBAC decides what they may do and the audit log names them. Addons tagged `system` are\n\
                 shown only to those who may create addons.addonctl.io in `{ns}`"
            ),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": format!("{NAME}-serve"), "labels": labels},
                   "rules": [{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                             {"apiGroups": [""], "resources": ["users", "groups", "serviceaccounts"], "verbs": ["impersonate"]},
                             {"apiGroups": ["authentication.k8s.io"], "resources": ["*"], "verbs": ["impersonate"]}]}),
        ));
        out.push((
            format!(
                "The app store's replicas tell each other how the applies they run go: as Events in\n\
                 `{ns}`, which each replica writes and watches"
            ),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": format!("{NAME}-serve-events"), "namespace": ns, "labels": labels},
                   "rules": [{"apiGroups": [""], "resources": ["events"], "verbs": ["create", "get", "list", "watch"]}]}),
        ));
        out.push((
            format!("Grants `{NAME}-serve-events` to the controller's ServiceAccount"),
            binding(
                "RoleBinding",
                &format!("{NAME}-serve-events"),
                "Role",
                &format!("{NAME}-serve-events"),
                ns,
                &labels,
            ),
        ));
        out.push((
            format!("Grants `{NAME}-serve` to the controller's ServiceAccount"),
            binding(
                "ClusterRoleBinding",
                &format!("{NAME}-serve"),
                "ClusterRole",
                &format!("{NAME}-serve"),
                ns,
                &labels,
            ),
        ));
        out.push((
            "The app store's address inside the cluster (plans are kept in Secrets: any replica applies\n\
             them; a client stays on one replica for its event stream's sake)"
                .to_owned(),
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": format!("{NAME}-serve"), "namespace": ns, "labels": labels},
                   "spec": {"selector": {"app.kubernetes.io/name": NAME},
                            "sessionAffinity": "ClientIP",
                            "ports": [{"name": "http", "port": 80, "targetPort": "serve"}]}}),
        ));
    }
    out.push((
        if options.serve {
            "The controller (leader election through a Lease, so several replicas are safe) and, in\n\
             each replica, the app store"
                .to_owned()
        } else {
            "The controller: leader election through a Lease, so several replicas are safe".to_owned()
        },
        deployment(options, &labels),
    ));
    out
}

/// The `Addon` CRD, its schema without `default`s: the API server stores an `Addon` as it
/// was written (and refuses the `null` defaults schemars writes for optional fields).
pub fn crd() -> Value {
    let mut crd = serde_json::to_value(Addon::crd()).unwrap_or(Value::Null);
    strip_defaults(&mut crd);
    crd
}

/// Removes `default` from every schema under `value` (not a property named `default`).
fn strip_defaults(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("default");
            for (key, inner) in map.iter_mut() {
                if key == "properties" {
                    if let Value::Object(properties) = inner {
                        properties.values_mut().for_each(strip_defaults);
                    }
                } else {
                    strip_defaults(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_defaults),
        _ => {}
    }
}

fn binding(kind: &str, name: &str, role_kind: &str, role: &str, ns: &str, labels: &Value) -> Value {
    let mut metadata = json!({"name": name, "labels": labels});
    if kind == "RoleBinding" {
        metadata["namespace"] = json!(ns);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata,
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
           "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": ns}]})
}

fn deployment(options: &ManifestOptions, labels: &Value) -> Value {
    let probe =
        |path: &str| json!({"httpGet": {"path": path, "port": "http"}, "periodSeconds": 10});
    let mut deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": options.namespace, "labels": labels},
        "spec": {
            "replicas": options.replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {"runAsNonRoot": true, "runAsUser": 65532},
                    "containers": [{
                        "name": "controller",
                        "image": options.image,
                        "args": ["controller", "--system-namespace", options.namespace,
                                 "--metrics-addr", "0.0.0.0:9090", "--leader-elect"],
                        "ports": [{"name": "http", "containerPort": 9090}],
                        "livenessProbe": probe("/healthz"),
                        "readinessProbe": probe("/readyz"),
                        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                                      "limits": {"memory": "256Mi"}},
                        "securityContext": {"allowPrivilegeEscalation": false,
                                            "readOnlyRootFilesystem": true,
                                            "capabilities": {"drop": ["ALL"]}},
                        "env": [{"name": "HOME", "value": "/tmp"}],
                        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                    }],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                }
            }
        }
    });
    if options.serve {
        let serve = json!({
            "name": "serve",
            "image": options.image,
            "args": ["serve", "--in-cluster", "--addr", "0.0.0.0:8080",
                     "--system-namespace", options.namespace],
            "ports": [{"name": "serve", "containerPort": 8080}],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "serve"}, "periodSeconds": 10},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "serve"}, "periodSeconds": 10},
            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                          "limits": {"memory": "256Mi"}},
            "securityContext": {"allowPrivilegeEscalation": false,
                                "readOnlyRootFilesystem": true,
                                "capabilities": {"drop": ["ALL"]}},
            "env": [{"name": "HOME", "value": "/tmp"}],
            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        });
        if let Some(containers) =
            deployment["spec"]["template"]["spec"]["containers"].as_array_mut()
        {
            containers.push(serve);
        }
    }
    deployment
}

/// The documents as one YAML stream, each preceded by its comment.
pub fn render(options: &ManifestOptions) -> Result<String, serde_yaml::Error> {
    let mut out = String::new();
    let kept = |document: &Value| {
        !options.crd_only
            || matches!(
                document.get("kind").and_then(Value::as_str),
                Some(
                    "CustomResourceDefinition"
                        | "ValidatingAdmissionPolicy"
                        | "ValidatingAdmissionPolicyBinding"
                )
            )
    };
    for (comment, document) in documents(options).into_iter().filter(|(_, d)| kept(d)) {
        out.push_str("---\n");
        for line in comment.lines() {
            out.push_str("# ");
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&serde_yaml::to_string(&document)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize as _;

    use super::*;

    fn options(admin: bool) -> ManifestOptions {
        ManifestOptions {
            namespace: "vela-system".into(),
            image: "example/addonctl:1".into(),
            replicas: 2,
            admin,
            crd_only: false,
            serve: false,
        }
    }

    #[test]
    fn the_serve_variant_adds_the_app_store_with_the_rights_to_act_as_callers_and_a_service() {
        let documents = documents(&ManifestOptions {
            serve: true,
            ..options(false)
        });
        let role = documents
            .iter()
            .find(|(_, d)| {
                d["metadata"]["name"] == "addonctl-controller-serve" && d["kind"] == "ClusterRole"
            })
            .map(|(_, d)| d.clone())
            .unwrap();
        assert_eq!(role["rules"][0]["resources"][0], "tokenreviews");
        assert_eq!(role["rules"][1]["verbs"][0], "impersonate");
        let service = documents
            .iter()
            .find(|(_, d)| d["kind"] == "Service")
            .unwrap();
        assert_eq!(service.1["spec"]["ports"][0]["targetPort"], "serve");
        let deployment = &documents.last().unwrap().1;
        let containers = deployment["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap();
        assert_eq!(containers.len(), 2);
        assert_eq!(containers[1]["args"][1], "--in-cluster");
        // Without the flag nothing of it is there.
        let plain = documents_without_serve();
        assert!(plain.iter().all(|(_, d)| d["kind"] != "Service"));
    }

    fn documents_without_serve() -> Vec<(String, serde_json::Value)> {
        documents(&options(false))
    }

    #[test]
    fn the_manifests_hold_the_crd_rbac_and_a_deployment_with_the_image() {
        let operator = documents(&options(false));
        let kinds: Vec<&str> = operator
            .iter()
            .map(|(_, d)| d["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "CustomResourceDefinition",
                "ServiceAccount",
                "Role",
                "RoleBinding",
                "ClusterRole",
                "ClusterRoleBinding",
                "ClusterRole",
                "ClusterRoleBinding",
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding",
                "ClusterRole",
                "ClusterRole",
                "Deployment"
            ]
        );
        let deployment = &operator[12].1;
        assert_eq!(
            operator[8].1["spec"]["matchConditions"][0]["expression"],
            "request.userInfo.username != 'system:serviceaccount:vela-system:addonctl-controller'"
        );
        let crd_only = render(&ManifestOptions {
            crd_only: true,
            ..options(false)
        })
        .unwrap();
        let kinds: Vec<String> = serde_yaml::Deserializer::from_str(&crd_only)
            .filter_map(|d| serde_json::Value::deserialize(d).ok())
            .filter_map(|d| d["kind"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(
            kinds,
            [
                "CustomResourceDefinition",
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding"
            ]
        );
        assert_eq!(
            deployment["spec"]["template"]["spec"]["containers"][0]["image"],
            "example/addonctl:1"
        );
        assert_eq!(operator[4].1["metadata"]["name"], "addonctl-operator");
        assert_eq!(
            documents(&options(true))[4].1["metadata"]["name"],
            "addonctl-admin"
        );
        assert!(
            !operator[0].1.to_string().contains("\"default\""),
            "the CRD's schema has no defaults"
        );
        let text = render(&options(false)).unwrap();
        assert!(text.contains("# - leases: leader election"), "{text}");
    }
}
