//! Answers parsed into what addonctl reads of them, not into whole Kubernetes types: a
//! metadata-only list's items ([`MetadataList`]) and a server-side apply's answer
//! ([`Applied`]). Most of an answer is managed fields (`fieldsV1`, a tree per manager) and the
//! object's own body; parsing them into `serde_json::Value`s only to drop them was a sixth of
//! a fleet apply's CPU.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, Time};
use kube::core::ObjectMeta;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// A metadata-only list (`PartialObjectMetadataList`): the list's `resourceVersion` and each
/// item's metadata as [`Metadata`] keeps it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct MetadataList {
    #[serde(default)]
    pub metadata: ListMeta,
    /// An empty list's `items` is `null` (the API server's empty Go slice).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub items: Vec<Item>,
}

fn null_as_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Item>, D::Error> {
    Ok(Option::<Vec<Item>>::deserialize(deserializer)?.unwrap_or_default())
}

/// A list's own metadata.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListMeta {
    pub resource_version: Option<String>,
}

/// One item of a [`MetadataList`].
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Item {
    #[serde(default)]
    pub metadata: Metadata,
}

/// The metadata fields addonctl reads (identity, versions, times, labels, and who manages
/// which top-level fields); annotations, owner references and finalizers are skipped.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Metadata {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    labels: Option<BTreeMap<String, String>>,
    managed_fields: Option<Vec<ManagedFields>>,
}

/// One managed-fields entry: the manager, the operation, the subresource and the top-level
/// fields it manages.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ManagedFields {
    manager: Option<String>,
    operation: Option<String>,
    subresource: Option<String>,
    api_version: Option<String>,
    fields_type: Option<String>,
    fields_v1: Option<TopLevel>,
}

/// A `fieldsV1` tree cut to its top-level keys (`f:metadata`, `f:spec`, `f:status`…), each
/// with an empty tree: whether a manager owns only status is all that is asked of it.
#[derive(Debug)]
struct TopLevel(Map<String, Value>);

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = TopLevel;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a fieldsV1 object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
                let mut keys = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    map.next_value::<IgnoredAny>()?;
                    keys.insert(key, Value::Object(Map::new()));
                }
                Ok(TopLevel(keys))
            }
        }
        deserializer.deserialize_map(Keys)
    }
}

impl From<Metadata> for ObjectMeta {
    fn from(m: Metadata) -> Self {
        ObjectMeta {
            name: m.name,
            namespace: m.namespace,
            uid: m.uid,
            resource_version: m.resource_version,
            generation: m.generation,
            creation_timestamp: m.creation_timestamp,
            deletion_timestamp: m.deletion_timestamp,
            finalizers: m.finalizers,
            labels: m.labels,
            managed_fields: m.managed_fields.map(|entries| {
                entries
                    .into_iter()
                    .map(|e| ManagedFieldsEntry {
                        manager: e.manager,
                        operation: e.operation,
                        subresource: e.subresource,
                        api_version: e.api_version,
                        fields_type: e.fields_type,
                        fields_v1: e.fields_v1.map(|t| FieldsV1(Value::Object(t.0))),
                        time: None,
                    })
                    .collect()
            }),
            ..ObjectMeta::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_metadata_list_keeps_what_is_read_and_cuts_fields_to_their_top_level() {
        let answer = json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "42"},
            "items": [{
                "kind": "PartialObjectMetadata",
                "metadata": {
                    "name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "40",
                    "generation": 2, "creationTimestamp": "2026-11-29T10:00:00Z",
                    "labels": {"addons.oam.dev/name": "x"},
                    "annotations": {"big": "ignored"},
                    "managedFields": [
                        {"manager": "addonctl", "operation": "Apply", "apiVersion": "v1",
                         "fieldsType": "FieldsV1", "time": "2026-11-29T10:00:00Z",
                         "fieldsV1": {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {".": {}}}}},
                        {"manager": "kubelet", "operation": "Update", "subresource": "status",
                         "fieldsV1": {"f:status": {"f:phase": {}}}}
                    ]
                }
            }]
        });
        let list: MetadataList = serde_json::from_value(answer).unwrap();
        assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
        let meta: ObjectMeta = list.items.into_iter().next().unwrap().metadata.into();
        assert_eq!(meta.name.as_deref(), Some("a"));
        assert_eq!(meta.uid.as_deref(), Some("u-1"));
        assert_eq!(meta.resource_version.as_deref(), Some("40"));
        assert!(meta.creation_timestamp.is_some());
        assert!(meta.annotations.is_none());
        let fields = meta.managed_fields.unwrap();
        assert_eq!(fields[0].manager.as_deref(), Some("addonctl"));
        assert_eq!(
            fields[0].fields_v1.as_ref().unwrap().0,
            json!({"f:data": {}, "f:metadata": {}})
        );
        assert_eq!(fields[1].subresource.as_deref(), Some("status"));
        assert_eq!(
            fields[1].fields_v1.as_ref().unwrap().0,
            json!({"f:status": {}})
        );
    }

    #[test]
    fn an_empty_list_may_say_its_items_are_null() {
        let answer = json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "7"},
            "items": null
        });
        let list: MetadataList = serde_json::from_value(answer).unwrap();
        assert!(list.items.is_empty());
        assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
        let absent: MetadataList = serde_json::from_value(json!({"metadata": {}})).unwrap();
        assert!(absent.items.is_empty());
    }

    #[test]
    fn a_fields_tree_that_is_not_an_object_is_refused() {
        let answer = json!({"items": [{"metadata": {"managedFields": [{"fieldsV1": 3}]}}]});
        assert!(serde_json::from_value::<MetadataList>(answer).is_err());
    }
}
