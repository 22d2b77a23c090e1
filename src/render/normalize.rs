//! The KubeVela normalisation of an addon's Application (DESIGN §2.4), on plain JSON.

use serde_json::{json, Map, Value};

use crate::model::AddonMeta;

pub use crate::model::wire::{
    application_name, args_secret_name, LABEL_AUXILIARY, LABEL_NAME, LABEL_REGISTRY, LABEL_VERSION,
    LOCAL_CLUSTER,
};

/// Policy appended for `deployTo.runtimeCluster` without given clusters.
pub const POLICY_ALL_CLUSTERS: &str = "deploy-addon-to-all-clusters";
/// Policy appended for `deployTo.runtimeCluster` with given clusters.
pub const POLICY_SPECIFIED_CLUSTERS: &str = "deploy-addon-to-specified-clusters";

/// The `raw` component that creates a namespace the addon needs.
pub fn namespace_component(namespace: &str) -> Value {
    json!({
        "name": format!("{namespace}-namespace"),
        "type": "raw",
        "properties": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    })
}

/// Everything the normalisation needs besides the Application itself.
pub(crate) struct Normalisation<'a> {
    pub metadata: &'a AddonMeta,
    pub registry: &'a str,
    pub namespace: &'a str,
    /// Components appended after the template's: namespaces, `<addon>-resources`, scripted ones.
    pub extra_components: Vec<Value>,
    /// Whether the template was `template.rhai` (the topology policy is then the script's job).
    pub scripted_template: bool,
    /// The `clusters` argument, when given.
    pub clusters: Option<Vec<String>>,
}

/// Normalises `app` in place. Errors describe what is wrong with the template's Application.
pub(crate) fn normalise(app: &mut Value, n: Normalisation<'_>) -> Result<(), String> {
    if app.is_null() {
        *app = json!({});
    }
    let Value::Object(object) = app else {
        return Err("the Application must be a mapping".to_owned());
    };
    match object.get("kind") {
        None | Some(Value::Null) => {}
        Some(Value::String(k)) if k == "Application" => {}
        Some(other) => {
            return Err(format!(
                "the template must produce an `Application`, found kind {other}"
            ))
        }
    }
    object.insert("apiVersion".into(), json!("core.oam.dev/v1beta1"));
    object.insert("kind".into(), json!("Application"));

    let metadata = object_entry(object, "metadata")?;
    metadata.insert("name".into(), json!(application_name(&n.metadata.name)));
    metadata.insert("namespace".into(), json!(n.namespace));
    let labels = object_entry(metadata, "labels")?;
    labels.insert(LABEL_NAME.into(), json!(n.metadata.name));
    labels.insert(LABEL_VERSION.into(), json!(n.metadata.version.raw()));
    labels.insert(LABEL_REGISTRY.into(), json!(n.registry));

    let spec = object_entry(object, "spec")?;
    let components = match spec.entry("components").or_insert(Value::Null) {
        v @ Value::Null => {
            *v = json!([]);
            v
        }
        v => v,
    };
    let Value::Array(components) = components else {
        return Err("`spec.components` must be a list".to_owned());
    };
    components.extend(n.extra_components);

    if !n.scripted_template && n.metadata.deploy_to.runtime_cluster {
        let policies = match spec.entry("policies").or_insert(Value::Null) {
            v @ Value::Null => {
                *v = json!([]);
                v
            }
            v => v,
        };
        let Value::Array(policies) = policies else {
            return Err("`spec.policies` must be a list".to_owned());
        };
        let has_topology = policies
            .iter()
            .any(|p| p.get("type").and_then(Value::as_str) == Some("topology"));
        if !has_topology {
            policies.push(match &n.clusters {
                Some(given) => {
                    let mut clusters = given.clone();
                    if !n.metadata.deploy_to.disable_control_plane && !clusters.iter().any(|c| c == LOCAL_CLUSTER) {
                        clusters.push(LOCAL_CLUSTER.to_owned());
                    }
                    json!({"name": POLICY_SPECIFIED_CLUSTERS, "type": "topology", "properties": {"clusters": clusters}})
                }
                None => json!({
                    "name": POLICY_ALL_CLUSTERS,
                    "type": "topology",
                    "properties": {"clusterLabelSelector": {}},
                }),
            });
        }
    }
    Ok(())
}

/// The object at `key`, created when absent or `null`.
fn object_entry<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Map<String, Value>, String> {
    let slot = parent.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
        .ok_or_else(|| format!("`{key}` of the Application must be a mapping"))
}

/// Adds the definition-name annotations KubeVela puts on an addon's Application.
pub(crate) fn annotate_definitions(app: &mut Value, definitions: &[Value]) {
    let names = |kind: &str| -> String {
        let mut names: Vec<&str> = definitions
            .iter()
            .filter(|d| d.get("kind").and_then(Value::as_str) == Some(kind))
            .filter_map(|d| d.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        names.sort_unstable();
        names.join(",")
    };
    let pairs = [
        (
            "addon.oam.dev/componentDefinitions",
            names("ComponentDefinition"),
        ),
        ("addon.oam.dev/traitDefinitions", names("TraitDefinition")),
        (
            "addon.oam.dev/workflowStepDefinitions",
            names("WorkflowStepDefinition"),
        ),
        ("addon.oam.dev/policyDefinitions", names("PolicyDefinition")),
    ];
    if let Some(Value::Object(metadata)) = app.get_mut("metadata") {
        if let Ok(annotations) = object_entry(metadata, "annotations") {
            for (key, value) in pairs {
                annotations.insert(key.into(), json!(value));
            }
        }
    }
}

/// Adds a label to an object's metadata (creating `metadata.labels` when missing).
pub(crate) fn add_label(object: &mut Value, key: &str, value: &str) -> Result<(), String> {
    let Value::Object(map) = object else {
        return Err("expected a mapping".to_owned());
    };
    let metadata = object_entry(map, "metadata")?;
    object_entry(metadata, "labels")?.insert(key.into(), json!(value));
    Ok(())
}
