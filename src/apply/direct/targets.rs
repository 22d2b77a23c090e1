//! Where and what the direct engine deploys: an Application's topology policies resolved
//! against the known clusters, its components' objects, labelled and ranked for staged apply.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::cluster::set::{ClusterInfo, LOCAL};
use crate::model::wire::LABEL_NAME;
use crate::state::record::Placement;
use crate::{Error, Result};

pub use crate::state::record::placements;

/// Resolves placements to `cluster → namespace override`. Named clusters must exist.
pub fn resolve_targets(
    placements: &[Placement],
    joined: &[ClusterInfo],
) -> Result<BTreeMap<String, Option<String>>> {
    let mut out = BTreeMap::new();
    for placement in placements {
        let mut names: Vec<String> = Vec::new();
        if let Some(clusters) = &placement.clusters {
            for name in clusters {
                if name != LOCAL && !joined.iter().any(|c| &c.name == name) {
                    return Err(Error::TopologyUnknownCluster {
                        name: name.clone(),
                        joined: joined.iter().map(|c| c.name.clone()).collect(),
                    });
                }
                names.push(name.clone());
            }
        }
        if let Some(selector) = &placement.cluster_label_selector {
            if selector.is_empty() {
                names.push(LOCAL.to_owned());
            }
            names.extend(
                joined
                    .iter()
                    .filter(|c| selector.iter().all(|(k, v)| c.labels.get(k) == Some(v)))
                    .map(|c| c.name.clone()),
            );
        }
        for name in names {
            out.entry(name)
                .or_insert_with(|| placement.namespace.clone());
        }
    }
    Ok(out)
}

/// The objects of an Application's components, for the direct engine: an error names the first
/// component of a type it cannot deploy.
pub fn component_objects(application: &Value) -> Result<Vec<Value>> {
    for component in application
        .pointer("/spec/components")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = component.get("type").and_then(Value::as_str);
        if !matches!(kind, Some("k8s-objects" | "raw")) {
            return Err(Error::UndeployableComponent {
                component: component
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
                kind: kind.unwrap_or("?").to_owned(),
            });
        }
    }
    Ok(crate::plan::inventory::component_objects(application))
}

pub(crate) fn rank(object: &Value) -> u8 {
    match object.get("kind").and_then(Value::as_str) {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    }
}

/// The object with the label `addons.oam.dev/name: <addon>` (unless it sets that label itself),
/// so that what an addon dispatched can be found by label on every cluster.
pub(crate) fn labelled(object: &Value, addon: &str) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = metadata
            .entry("labels")
            .or_insert_with(|| Value::Object(Map::new()));
        if !labels.is_object() {
            *labels = Value::Object(Map::new());
        }
        if let Some(labels) = labels.as_object_mut() {
            labels
                .entry(LABEL_NAME)
                .or_insert_with(|| Value::String(addon.to_owned()));
        }
    }
    object
}

/// `(group, kind) → namespaced` for the CRDs among the objects: their kinds are not served
/// before the CRDs are applied, so the survey takes their scope from here.
pub(super) fn crd_scopes(objects: &[Value]) -> BTreeMap<(String, String), bool> {
    objects
        .iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .filter_map(|crd| {
            let text = |p: &str| crd.pointer(p).and_then(Value::as_str).map(str::to_owned);
            Some((
                (text("/spec/group")?, text("/spec/names/kind")?),
                text("/spec/scope").as_deref() != Some("Cluster"),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cluster::set::CredentialType;

    fn joined(name: &str, region: &str) -> ClusterInfo {
        ClusterInfo {
            name: name.to_owned(),
            endpoint: format!("https://{name}.invalid"),
            credential_type: CredentialType::X509Certificate,
            labels: BTreeMap::from([("region".to_owned(), region.to_owned())]),
        }
    }

    fn application(policies: &Value) -> Value {
        json!({"spec": {"components": [], "policies": policies}})
    }

    #[test]
    fn an_application_without_topology_goes_to_local_only() {
        let targets = resolve_targets(&placements(&application(&json!([]))), &[]).unwrap();
        assert_eq!(targets, BTreeMap::from([(LOCAL.to_owned(), None)]));
    }

    #[test]
    fn named_clusters_and_a_selector_are_united_the_first_namespace_winning() {
        let app = application(&json!([
            {"type": "topology", "name": "a",
             "properties": {"clusters": ["m1"], "namespace": "first"}},
            {"type": "topology", "name": "b",
             "properties": {"clusterLabelSelector": {"region": "east"}, "namespace": "second"}},
        ]));
        let clusters = [
            joined("m1", "east"),
            joined("m2", "east"),
            joined("m3", "west"),
        ];

        let targets = resolve_targets(&placements(&app), &clusters).unwrap();

        assert_eq!(
            targets,
            BTreeMap::from([
                ("m1".to_owned(), Some("first".to_owned())),
                ("m2".to_owned(), Some("second".to_owned())),
            ])
        );
    }

    #[test]
    fn an_empty_selector_widens_to_local_and_every_joined_cluster() {
        let app = application(&json!([
            {"type": "topology", "name": "all", "properties": {"clusterLabelSelector": {}}},
        ]));
        let clusters = [joined("m1", "east"), joined("m2", "west")];

        let targets = resolve_targets(&placements(&app), &clusters).unwrap();

        let names: Vec<&str> = targets.keys().map(String::as_str).collect();
        assert_eq!(names, vec!["local", "m1", "m2"]);
    }

    #[test]
    fn a_named_cluster_that_is_not_joined_is_refused_naming_the_known_ones() {
        let app = application(&json!([
            {"type": "topology", "name": "a", "properties": {"clusters": ["gone"]}},
        ]));

        let error = resolve_targets(&placements(&app), &[joined("m1", "east")]).unwrap_err();

        let message = error.to_string();
        assert!(
            matches!(error, Error::TopologyUnknownCluster { .. }),
            "{message}"
        );
        assert!(message.contains("`gone`"), "{message}");
        assert!(message.contains("known: `local`, `m1`"), "{message}");
    }

    #[test]
    fn namespaces_and_crds_rank_before_everything_else() {
        let mut objects = [
            json!({"kind": "Deployment"}),
            json!({"kind": "CustomResourceDefinition"}),
            json!({"kind": "Namespace"}),
        ];
        objects.sort_by_key(rank);
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            vec!["Namespace", "CustomResourceDefinition", "Deployment"]
        );
    }
}
