//! What the API server would reject in an object's identity and metadata, by its own rules
//! (`k8s.io/apimachinery/pkg/util/validation` and `ValidateObjectMeta`).
//!
//! - `apiVersion` and `kind` are required; for a well-known kind the message gives the
//!   group/version that serves it ([`api_version_of`]).
//! - Names: a DNS-1123 label for `Namespace` and `Service`, a path segment (no `/`, `%`, not `.`
//!   or `..`) for the RBAC kinds, a DNS-1123 subdomain for every other kind (custom resources
//!   included); `metadata.namespace` is a DNS-1123 label.
//! - Label keys and annotation keys are qualified names: an optional DNS-1123 subdomain prefix
//!   (≤ 253) and `/`, then a name ≤ 63 of `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
//!   (annotation keys are checked lower-cased, as the server does).
//! - Label values: empty, or ≤ 63 characters of the same set; all values are strings.
//! - Annotations: together (keys and values) at most 256 KiB.
//!
//! Pod templates (`spec.template`, `spec.jobTemplate.spec.template`) are checked as objects.

use serde_json::{Map, Value};

/// The largest total size of an object's annotations.
pub const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// One problem of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A stable code (`invalid-label-key`, …).
    pub code: &'static str,
    /// What is wrong and why.
    pub message: String,
    /// The text to look for in the addon's files to place the problem (a key, a value, a name).
    pub needle: Option<String>,
}

/// The problems of `object`; messages name it by kind and name (`Deployment \`web\``).
pub fn check(object: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    let text = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let kind = text("kind");
    let name = object.pointer("/metadata/name").and_then(Value::as_str);
    let what = match (kind, name) {
        (Some(k), Some(n)) => format!("{k} `{n}`"),
        (Some(k), None) => format!("a {k}"),
        (None, Some(n)) => format!("object `{n}`"),
        (None, None) => "an object".to_owned(),
    };
    if text("apiVersion").is_none() {
        out.push(problem(
            "missing-api-version",
            missing_api_version(&what, kind),
            name,
        ));
    }
    if kind.is_none() {
        out.push(problem("missing-kind", format!("{what} has no `kind`; the API server needs it to know what the object is (e.g. `kind: ConfigMap`)"), name));
    }
    if let Some(name) = name {
        let (rule, errors) = match kind.unwrap_or_default() {
            "Namespace" | "Service" => ("a DNS-1123 label", dns1123_label(name)),
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => {
                ("a path segment", path_segment(name))
            }
            _ => ("a DNS-1123 subdomain", dns1123_subdomain(name)),
        };
        if let Some(why) = errors {
            out.push(problem(
                "invalid-name",
                format!("{what}: the name must be {rule}: {why}"),
                Some(name),
            ));
        }
    }
    if let Some(namespace) = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        if let Some(why) = dns1123_label(namespace) {
            out.push(problem(
                "invalid-namespace",
                format!("{what}: namespace `{namespace}` must be a DNS-1123 label: {why}"),
                Some(namespace),
            ));
        }
    }
    metadata(object.get("metadata"), &what, "metadata", &mut out);
    for pointer in ["/spec/template", "/spec/jobTemplate/spec/template"] {
        if let Some(template) = object.pointer(pointer) {
            let path = pointer.trim_start_matches('/').replace('/', ".");
            metadata(
                template.get("metadata"),
                &what,
                &format!("{path}.metadata"),
                &mut out,
            );
        }
    }
    out
}

/// The group/version that serves a well-known kind: Kubernetes' built-in kinds (as every
/// supported version, 1.30 and later, serves them) and KubeVela's.
const API_VERSIONS: &[(&str, &str)] = &[
    ("Binding", "v1"),
    ("ConfigMap", "v1"),
    ("Endpoints", "v1"),
    ("Event", "v1"),
    ("LimitRange", "v1"),
    ("Namespace", "v1"),
    ("Node", "v1"),
    ("PersistentVolume", "v1"),
    ("PersistentVolumeClaim", "v1"),
    ("Pod", "v1"),
    ("PodTemplate", "v1"),
    ("ReplicationController", "v1"),
    ("ResourceQuota", "v1"),
    ("Secret", "v1"),
    ("Service", "v1"),
    ("ServiceAccount", "v1"),
    ("ControllerRevision", "apps/v1"),
    ("DaemonSet", "apps/v1"),
    ("Deployment", "apps/v1"),
    ("ReplicaSet", "apps/v1"),
    ("StatefulSet", "apps/v1"),
    ("CronJob", "batch/v1"),
    ("Job", "batch/v1"),
    ("HorizontalPodAutoscaler", "autoscaling/v2"),
    ("PodDisruptionBudget", "policy/v1"),
    ("Ingress", "networking.k8s.io/v1"),
    ("IngressClass", "networking.k8s.io/v1"),
    ("NetworkPolicy", "networking.k8s.io/v1"),
    ("ClusterRole", "rbac.authorization.k8s.io/v1"),
    ("ClusterRoleBinding", "rbac.authorization.k8s.io/v1"),
    ("Role", "rbac.authorization.k8s.io/v1"),
    ("RoleBinding", "rbac.authorization.k8s.io/v1"),
    ("CustomResourceDefinition", "apiextensions.k8s.io/v1"),
    (
        "MutatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1",
    ),
    (
        "ValidatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1",
    ),
    (
        "ValidatingAdmissionPolicy",
        "admissionregistration.k8s.io/v1",
    ),
    (
        "ValidatingAdmissionPolicyBinding",
        "admissionregistration.k8s.io/v1",
    ),
    ("APIService", "apiregistration.k8s.io/v1"),
    ("CertificateSigningRequest", "certificates.k8s.io/v1"),
    ("Lease", "coordination.k8s.io/v1"),
    ("EndpointSlice", "discovery.k8s.io/v1"),
    ("FlowSchema", "flowcontrol.apiserver.k8s.io/v1"),
    (
        "PriorityLevelConfiguration",
        "flowcontrol.apiserver.k8s.io/v1",
    ),
    ("RuntimeClass", "node.k8s.io/v1"),
    ("PriorityClass", "scheduling.k8s.io/v1"),
    ("CSIDriver", "storage.k8s.io/v1"),
    ("CSINode", "storage.k8s.io/v1"),
    ("CSIStorageCapacity", "storage.k8s.io/v1"),
    ("StorageClass", "storage.k8s.io/v1"),
    ("VolumeAttachment", "storage.k8s.io/v1"),
    ("Application", "core.oam.dev/v1beta1"),
    ("ComponentDefinition", "core.oam.dev/v1beta1"),
    ("PolicyDefinition", "core.oam.dev/v1beta1"),
    ("TraitDefinition", "core.oam.dev/v1beta1"),
    ("WorkflowStepDefinition", "core.oam.dev/v1beta1"),
];

/// The group/version that serves `kind` when it is a well-known kind (`Deployment` →
/// `apps/v1`); `None` for other kinds (custom resources).
pub fn api_version_of(kind: &str) -> Option<&'static str> {
    API_VERSIONS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, version)| *version)
}

/// The message of an object (`what`: `Deployment \`web\``) of `kind` without `apiVersion`.
pub fn missing_api_version(what: &str, kind: Option<&str>) -> String {
    format!(
        "{what} has no `apiVersion`; the API server needs it to know which API serves the object: {}",
        api_version_hint(kind)
    )
}

/// What to write for a missing `apiVersion`.
fn api_version_hint(kind: Option<&str>) -> String {
    match kind {
        Some(kind) => api_version_of(kind).map_or_else(
            || format!("set the group/version of the API that serves `{kind}` (`kubectl api-resources` lists them)"),
            |version| format!("add `apiVersion: {version}`"),
        ),
        None => "add the `kind` and the `apiVersion` that serves it (e.g. `apiVersion: v1` for a ConfigMap)".to_owned(),
    }
}

fn problem(code: &'static str, message: String, needle: Option<&str>) -> Problem {
    Problem {
        code,
        message,
        needle: needle.map(str::to_owned),
    }
}

/// Labels and annotations of one `metadata`.
fn metadata(meta: Option<&Value>, what: &str, at: &str, out: &mut Vec<Problem>) {
    let map = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_object);
    if let Some(labels) = map("labels") {
        for (key, value) in labels {
            if let Some(why) = qualified_name(key) {
                out.push(problem(
                    "invalid-label-key",
                    format!("{what}: label key `{key}` (`{at}.labels`) is invalid: {why}"),
                    Some(key),
                ));
            }
            let why = match value {
                Value::String(v) => label_value(v),
                Value::Null => None,
                other => Some(format!(
                    "label values must be strings, found `{other}`; quote it"
                )),
            };
            if let Some(why) = why {
                let shown = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                out.push(problem("invalid-label-value", format!("{what}: label `{key}` (`{at}.labels`) has an invalid value `{shown}`: {why}"), Some(&shown)));
            }
        }
    }
    if let Some(annotations) = map("annotations") {
        annotation_problems(annotations, what, at, out);
    }
}

fn annotation_problems(
    annotations: &Map<String, Value>,
    what: &str,
    at: &str,
    out: &mut Vec<Problem>,
) {
    let mut total = 0usize;
    for (key, value) in annotations {
        if let Some(why) = qualified_name(&key.to_ascii_lowercase()) {
            out.push(problem(
                "invalid-annotation-key",
                format!("{what}: annotation key `{key}` (`{at}.annotations`) is invalid: {why}"),
                Some(key),
            ));
        }
        match value {
            Value::String(v) => total += key.len() + v.len(),
            Value::Null => total += key.len(),
            other => out.push(problem("invalid-annotation-value", format!("{what}: annotation `{key}` (`{at}.annotations`) must be a string, found `{other}`; quote it"), Some(key))),
        }
    }
    if total > ANNOTATIONS_LIMIT {
        out.push(problem("annotations-too-large", format!("{what}: the annotations (`{at}.annotations`) take {total} bytes; the API server accepts at most {ANNOTATIONS_LIMIT} (256 KiB)"), None));
    }
}

fn is_alphanumeric(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

/// Why `name` is not a qualified name (label keys, annotation keys); `None` when it is one.
pub fn qualified_name(key: &str) -> Option<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return Some(
                "a qualified name has at most one `/` (an optional DNS subdomain prefix, then the name, e.g. `example.com/my-key`)".to_owned(),
            )
        }
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Some("the prefix before `/` is empty".to_owned());
        }
        if let Some(why) = dns1123_subdomain(prefix) {
            return Some(format!(
                "the prefix `{prefix}` must be a DNS-1123 subdomain: {why}"
            ));
        }
    }
    if name.is_empty() {
        return Some("the name part is empty".to_owned());
    }
    if name.len() > 63 {
        return Some(format!(
            "the name part has {} characters; at most 63 are allowed",
            name.len()
        ));
    }
    name_charset(name).map(|why| format!("the name part {why}"))
}

/// Why `value` is not a valid label value; `None` when it is one.
pub fn label_value(value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    if value.len() > 63 {
        return Some(format!(
            "{} characters; at most 63 are allowed",
            value.len()
        ));
    }
    name_charset(value)
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
fn name_charset(text: &str) -> Option<String> {
    let ok_inner = |c: char| is_alphanumeric(c) || matches!(c, '-' | '_' | '.');
    if let Some(bad) = text.chars().find(|c| !ok_inner(*c)) {
        return Some(format!(
            "may only hold letters, digits, `-`, `_` and `.`, not `{bad}`"
        ));
    }
    let first_last_ok = text.chars().next().is_some_and(is_alphanumeric)
        && text.chars().last().is_some_and(is_alphanumeric);
    (!first_last_ok).then(|| "must begin and end with a letter or digit".to_owned())
}

/// Why `name` is not a DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, ≤ 63); `None` when it is.
pub fn dns1123_label(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".to_owned());
    }
    if name.len() > 63 {
        return Some(format!("{} characters; at most 63 are allowed", name.len()));
    }
    let lower = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if let Some(bad) = name.chars().find(|c| !(lower(*c) || *c == '-')) {
        return Some(format!(
            "only lowercase letters, digits and `-` are allowed, not `{bad}`"
        ));
    }
    let ends_ok = name.chars().next().is_some_and(lower) && name.chars().last().is_some_and(lower);
    (!ends_ok).then(|| "it must begin and end with a lowercase letter or digit".to_owned())
}

/// Why `name` is not a DNS-1123 subdomain (labels joined by `.`, ≤ 253); `None` when it is.
pub fn dns1123_subdomain(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".to_owned());
    }
    if name.len() > 253 {
        return Some(format!(
            "{} characters; at most 253 are allowed",
            name.len()
        ));
    }
    let lower = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if let Some(bad) = name
        .chars()
        .find(|c| !(lower(*c) || matches!(c, '-' | '.')))
    {
        return Some(format!(
            "only lowercase letters, digits, `-` and `.` are allowed, not `{bad}`"
        ));
    }
    let parts_ok = name.split('.').all(|part| {
        part.chars().next().is_some_and(lower) && part.chars().last().is_some_and(lower)
    });
    (!parts_ok).then(|| {
        "each `.`-separated part must begin and end with a lowercase letter or digit".to_owned()
    })
}

/// Why `name` is not a valid path segment name; `None` when it is.
pub fn path_segment(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("`{name}` is not allowed"));
    }
    ['/', '%']
        .into_iter()
        .find(|c| name.contains(*c))
        .map(|c| format!("it may not contain `{c}`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codes(object: &Value) -> Vec<&'static str> {
        check(object).into_iter().map(|p| p.code).collect()
    }

    #[test]
    fn qualified_names_follow_the_api_server() {
        for ok in [
            "app",
            "app.kubernetes.io/name",
            "a",
            "A_b.C-9",
            "example.com/x",
        ] {
            assert_eq!(qualified_name(ok), None, "{ok}");
        }
        let long = "a".repeat(64);
        let long_prefix = format!("{}/x", "a".repeat(254));
        for bad in [
            "a/b/c",
            "/x",
            "x/",
            "-a",
            "a-",
            "a b",
            "Example.com/x",
            long.as_str(),
            long_prefix.as_str(),
            "",
        ] {
            assert!(qualified_name(bad).is_some(), "{bad}");
        }
        assert!(qualified_name("a/b/c").unwrap().contains("at most one `/`"));
    }

    #[test]
    fn label_values_names_and_namespaces_follow_the_api_server() {
        for ok in ["", "v1", "1.0.0", "a_b-c.d"] {
            assert_eq!(label_value(ok), None, "{ok}");
        }
        for bad in ["1.0.0+build", "-x", "x.", &"a".repeat(64)] {
            assert!(label_value(bad).is_some(), "{bad}");
        }
        assert_eq!(dns1123_label("my-ns"), None);
        for bad in ["My", "a.b", "-a", "", &"a".repeat(64)] {
            assert!(dns1123_label(bad).is_some(), "{bad}");
        }
        assert_eq!(dns1123_subdomain("a.b-c.d"), None);
        for bad in ["a..b", "A", "a_b", ".a"] {
            assert!(dns1123_subdomain(bad).is_some(), "{bad}");
        }
        assert_eq!(path_segment("system:aggregate-to-admin"), None);
        assert!(path_segment("a/b").is_some());
    }

    #[test]
    fn objects_are_checked_by_kind_with_their_pod_templates() {
        assert_eq!(
            codes(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a.b"}})),
            Vec::<&str>::new()
        );
        assert_eq!(
            codes(&json!({"kind": "ConfigMap", "metadata": {"name": "a"}})),
            vec!["missing-api-version"]
        );
        assert_eq!(
            codes(&json!({"apiVersion": "v1", "metadata": {"name": "a"}})),
            vec!["missing-kind"]
        );
        assert_eq!(
            codes(&json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a.b"}})),
            vec!["invalid-name"]
        );
        assert_eq!(
            codes(
                &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "x:Y"}})
            ),
            Vec::<&str>::new()
        );
        assert_eq!(
            codes(
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "Bad_NS"}})
            ),
            vec!["invalid-namespace"]
        );
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"a/b/c": "x", "ok": 5}, "annotations": {"bad key": "v", "n": 1}},
            "spec": {"template": {"metadata": {"labels": {"app": "-web"}}}},
        });
        let problems = check(&deployment);
        assert_eq!(
            problems.iter().map(|p| p.code).collect::<Vec<_>>(),
            vec![
                "invalid-label-key",
                "invalid-label-value",
                "invalid-annotation-key",
                "invalid-annotation-value",
                "invalid-label-value"
            ]
        );
        assert_eq!(problems[0].needle.as_deref(), Some("a/b/c"));
        assert!(
            problems[4]
                .message
                .contains("spec.template.metadata.labels"),
            "{}",
            problems[4].message
        );
        let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": {"x": "y".repeat(ANNOTATIONS_LIMIT)}}});
        assert_eq!(codes(&big), vec!["annotations-too-large"]);
    }

    #[test]
    fn a_missing_api_version_names_the_version_of_a_well_known_kind() {
        for (kind, version) in [
            ("Deployment", "apps/v1"),
            ("ConfigMap", "v1"),
            ("Ingress", "networking.k8s.io/v1"),
            ("CronJob", "batch/v1"),
            ("ClusterRole", "rbac.authorization.k8s.io/v1"),
            ("HorizontalPodAutoscaler", "autoscaling/v2"),
        ] {
            assert_eq!(api_version_of(kind), Some(version), "{kind}");
            let problems = check(&json!({"kind": kind, "metadata": {"name": "x"}}));
            let message = &problems[0].message;
            assert!(
                message.contains(&format!("add `apiVersion: {version}`")),
                "{message}"
            );
        }
        assert_eq!(api_version_of("Certificate"), None);
        let problems = check(&json!({"kind": "Certificate", "metadata": {"name": "x"}}));
        assert!(
            problems[0].message.contains("`kubectl api-resources`"),
            "{}",
            problems[0].message
        );
    }
}
