//! Planning without a cluster (`enable --dry-run` when the control plane cannot be reached): an
//! in-process API server that holds nothing — no addon installed, no cluster joined besides
//! `local`, KubeVela absent (so the direct engine), no Kubernetes version known — and serves
//! Kubernetes' built-in APIs in discovery. Every read answers as an empty cluster would (lists
//! empty, objects not found); anything else is refused, so nothing planned against it can
//! pretend to have been written.

use std::convert::Infallible;

use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::{json, Value};

use crate::cluster::set::LOCAL;
use crate::cluster::Cluster;

/// What offline planning assumes, for the user to read.
pub const ASSUMPTIONS: &str = "the control plane cannot be reached: planning against an empty cluster (nothing installed, no clusters besides `local`, KubeVela absent so the direct engine, Kubernetes' built-in APIs served, its version unknown); stored registries are not read";

/// A served resource: plural, kind, namespaced.
type Resource = (&'static str, &'static str, bool);

/// Kubernetes' built-in APIs that every supported version (1.30 and later) serves: group/version,
/// then its resources.
const BUILTIN: &[(&str, &[Resource])] = &[
    (
        "v1",
        &[
            ("configmaps", "ConfigMap", true),
            ("endpoints", "Endpoints", true),
            ("events", "Event", true),
            ("limitranges", "LimitRange", true),
            ("namespaces", "Namespace", false),
            ("nodes", "Node", false),
            ("persistentvolumeclaims", "PersistentVolumeClaim", true),
            ("persistentvolumes", "PersistentVolume", false),
            ("pods", "Pod", true),
            ("podtemplates", "PodTemplate", true),
            ("replicationcontrollers", "ReplicationController", true),
            ("resourcequotas", "ResourceQuota", true),
            ("secrets", "Secret", true),
            ("serviceaccounts", "ServiceAccount", true),
            ("services", "Service", true),
        ],
    ),
    (
        "apps/v1",
        &[
            ("controllerrevisions", "ControllerRevision", true),
            ("daemonsets", "DaemonSet", true),
            ("deployments", "Deployment", true),
            ("replicasets", "ReplicaSet", true),
            ("statefulsets", "StatefulSet", true),
        ],
    ),
    (
        "batch/v1",
        &[("jobs", "Job", true), ("cronjobs", "CronJob", true)],
    ),
    (
        "autoscaling/v1",
        &[("horizontalpodautoscalers", "HorizontalPodAutoscaler", true)],
    ),
    (
        "autoscaling/v2",
        &[("horizontalpodautoscalers", "HorizontalPodAutoscaler", true)],
    ),
    (
        "networking.k8s.io/v1",
        &[
            ("ingresses", "Ingress", true),
            ("ingressclasses", "IngressClass", false),
            ("networkpolicies", "NetworkPolicy", true),
        ],
    ),
    (
        "rbac.authorization.k8s.io/v1",
        &[
            ("clusterroles", "ClusterRole", false),
            ("clusterrolebindings", "ClusterRoleBinding", false),
            ("roles", "Role", true),
            ("rolebindings", "RoleBinding", true),
        ],
    ),
    (
        "apiextensions.k8s.io/v1",
        &[(
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
        )],
    ),
    (
        "admissionregistration.k8s.io/v1",
        &[
            (
                "mutatingwebhookconfigurations",
                "MutatingWebhookConfiguration",
                false,
            ),
            (
                "validatingwebhookconfigurations",
                "ValidatingWebhookConfiguration",
                false,
            ),
            (
                "validatingadmissionpolicies",
                "ValidatingAdmissionPolicy",
                false,
            ),
            (
                "validatingadmissionpolicybindings",
                "ValidatingAdmissionPolicyBinding",
                false,
            ),
        ],
    ),
    (
        "apiregistration.k8s.io/v1",
        &[("apiservices", "APIService", false)],
    ),
    (
        "storage.k8s.io/v1",
        &[
            ("storageclasses", "StorageClass", false),
            ("csidrivers", "CSIDriver", false),
            ("volumeattachments", "VolumeAttachment", false),
        ],
    ),
    (
        "scheduling.k8s.io/v1",
        &[("priorityclasses", "PriorityClass", false)],
    ),
    ("coordination.k8s.io/v1", &[("leases", "Lease", true)]),
    (
        "policy/v1",
        &[("poddisruptionbudgets", "PodDisruptionBudget", true)],
    ),
    (
        "discovery.k8s.io/v1",
        &[("endpointslices", "EndpointSlice", true)],
    ),
    (
        "certificates.k8s.io/v1",
        &[(
            "certificatesigningrequests",
            "CertificateSigningRequest",
            false,
        )],
    ),
    (
        "node.k8s.io/v1",
        &[("runtimeclasses", "RuntimeClass", false)],
    ),
    ("events.k8s.io/v1", &[("events", "Event", true)]),
    (
        "flowcontrol.apiserver.k8s.io/v1",
        &[
            ("flowschemas", "FlowSchema", false),
            (
                "prioritylevelconfigurations",
                "PriorityLevelConfiguration",
                false,
            ),
        ],
    ),
];

/// The empty control plane `local`, answered in process.
pub fn empty_cluster() -> Cluster {
    let service = tower::service_fn(|request: Request<kube::client::Body>| async move {
        Ok::<_, Infallible>(answer(request.method(), request.uri().path()))
    });
    Cluster::from_client(LOCAL, kube::Client::new(service, "default"))
}

fn answer(method: &http::Method, path: &str) -> Response<Full<Bytes>> {
    if method != http::Method::GET {
        return respond(
            405,
            &status(
                405,
                "MethodNotAllowed",
                "planning offline: nothing is written",
            ),
        );
    }
    if let Some(body) = discovery(path) {
        return respond(200, &body);
    }
    let rest = if let Some(rest) = path.strip_prefix("/api/v1") {
        rest
    } else if let Some(rest) = path.strip_prefix("/apis/") {
        rest.splitn(3, '/').nth(2).unwrap_or("")
    } else {
        ""
    };
    let segments = rest.split('/').filter(|s| !s.is_empty()).count();
    if segments % 2 == 1 {
        respond(
            200,
            &json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": []}),
        )
    } else {
        respond(404, &status(404, "NotFound", &format!("{path} not found")))
    }
}

/// Discovery documents: the API groups, and each built-in group version's resources.
fn discovery(path: &str) -> Option<Value> {
    match path {
        "/api" => return Some(json!({"kind": "APIVersions", "versions": ["v1"]})),
        "/apis" => {
            let mut groups: Vec<Value> = Vec::new();
            for (group_version, _) in BUILTIN.iter().filter(|(gv, _)| gv.contains('/')) {
                let (group, version) = group_version.split_once('/')?;
                let entry = json!({"groupVersion": group_version, "version": version});
                match groups.iter_mut().find(|g| g["name"] == group) {
                    Some(found) => {
                        if let Some(versions) = found["versions"].as_array_mut() {
                            versions.push(entry);
                        }
                    }
                    None => groups.push(json!({"name": group, "versions": [entry.clone()], "preferredVersion": entry})),
                }
            }
            return Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}));
        }
        _ => {}
    }
    let group_version = path
        .strip_prefix("/api/")
        .or_else(|| path.strip_prefix("/apis/"))?;
    let (_, resources) = BUILTIN.iter().find(|(gv, _)| *gv == group_version)?;
    let resources: Vec<Value> = resources
        .iter()
        .map(|(plural, kind, namespaced)| {
            json!({"name": plural, "singularName": kind.to_lowercase(), "namespaced": namespaced,
                "kind": kind, "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]})
        })
        .collect();
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
    )
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
        "reason": reason, "code": code})
}

fn respond(code: u16, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = http::StatusCode::from_u16(code).unwrap_or_default();
    response.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use kube::core::GroupVersionKind;

    use super::*;

    #[tokio::test]
    async fn the_empty_cluster_serves_builtin_kinds_holds_nothing_and_refuses_writes() {
        let cluster = empty_cluster();
        let deployment = GroupVersionKind::gvk("apps", "v1", "Deployment");
        assert!(cluster.serves(&deployment).await.unwrap());
        assert!(cluster
            .serves(&GroupVersionKind::gvk("", "v1", "Secret"))
            .await
            .unwrap());
        assert!(!cluster
            .serves(&crate::model::wire::application_gvk())
            .await
            .unwrap());
        assert!(cluster
            .list(&deployment, Some("vela-system"), "")
            .await
            .unwrap()
            .is_empty());
        assert!(cluster
            .get(&deployment, Some("vela-system"), "x")
            .await
            .unwrap()
            .is_none());
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        assert!(cluster.apply(&namespace, "default").await.is_err());
        assert!(cluster.kubernetes_version().await.is_err());
    }
}
