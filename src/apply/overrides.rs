//! Clusters that get the addon's components with parameters of their own (a plan's variants,
//! [`crate::plan::overrides`]) as the record keeps them: each parameter set once, by key
//! ([`Record::overrides`]), and per cluster the key of the set it got, next to its version and
//! revision ([`crate::state::record::ClusterRevision::parameters`]) — a few bytes per cluster.

use std::collections::BTreeSet;

use crate::plan::Variant;
use crate::state::record::{storage::sha256_hex, Record};
use crate::{Error, Result};

/// KubeVela's Application puts one revision, the same components, on every cluster: clusters
/// held at another version, or getting other parameters (variants), are refused there.
pub(super) fn direct_only(
    addon: &str,
    variants: &[Variant],
    hold: &BTreeSet<String>,
    vela: bool,
) -> Result<()> {
    if !vela {
        Ok(())
    } else if !hold.is_empty() {
        Err(Error::HoldNeedsDirectEngine {
            addon: addon.to_owned(),
            clusters: hold.iter().cloned().collect(),
        })
    } else if !variants.is_empty() {
        let clusters: BTreeSet<String> = variants
            .iter()
            .flat_map(|v| v.clusters.iter().cloned())
            .collect();
        Err(Error::OverridesNeedDirectEngine {
            addon: addon.to_owned(),
            clusters: clusters.into_iter().collect(),
        })
    } else {
        Ok(())
    }
}

/// Adds the step's parameter sets to the record (those it carries over stay until no cluster
/// names them: held clusters may), and makes its arguments' hash tell which clusters get which
/// set, so that a revision with other overrides is another revision.
pub(super) fn note_variants(record: &mut Record, variants: &[Variant]) {
    if variants.is_empty() {
        return;
    }
    let mut text = record.args_hash.clone();
    for variant in variants {
        record
            .overrides
            .insert(variant.key.clone(), variant.parameters.clone());
        text.push_str(&format!(
            ";{}={}",
            variant.key,
            variant
                .clusters
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    record.args_hash = sha256_hex(text.as_bytes());
}

/// The parameter sets of `variants` as a revision keeps them: by key, with their clusters.
pub(super) fn revision_overrides(
    variants: &[Variant],
) -> std::collections::BTreeMap<String, crate::state::revisions::RevisionOverride> {
    variants
        .iter()
        .map(|v| {
            (
                v.key.clone(),
                crate::state::revisions::RevisionOverride {
                    parameters: v.parameters.clone(),
                    clusters: v.clusters.iter().cloned().collect(),
                },
            )
        })
        .collect()
}

/// The overrides a rollback lays over a revision's arguments: each of its parameter sets on
/// the clusters that got it.
pub(super) fn from_revision(
    overrides: &std::collections::BTreeMap<String, crate::state::revisions::RevisionOverride>,
) -> crate::plan::Overrides {
    let mut out = crate::plan::Overrides::default();
    for set in overrides.values() {
        out.groups.push(crate::plan::OverrideGroup {
            overrides: vec![out.parameters.len()],
            clusters: set.clusters.clone(),
        });
        out.parameters.push(set.parameters.clone());
    }
    out
}

/// Every cluster the apply worked on (all but the held ones) says which parameter set it got
/// (none: the arguments alone); sets no cluster names any more are dropped.
pub(super) fn stamp_parameters(record: &mut Record, variants: &[Variant], hold: &BTreeSet<String>) {
    let current = record.current_revision();
    for (name, inventory) in &mut record.dispatched {
        if hold.contains(name) {
            continue;
        }
        let revision = inventory.revision.get_or_insert_with(|| current.clone());
        revision.parameters = variants
            .iter()
            .find(|v| v.clusters.contains(name))
            .map(|v| v.key.clone());
    }
    record.forget_unused_overrides();
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map, Value};

    use super::*;
    use crate::state::record::ClusterInventory;

    fn variant(count: u64, clusters: &[&str]) -> Variant {
        let parameters: Map<String, Value> = json!({ "count": count })
            .as_object()
            .cloned()
            .unwrap_or_default();
        Variant {
            key: crate::plan::overrides::parameters_key(&parameters),
            parameters,
            clusters: clusters.iter().map(|c| (*c).to_owned()).collect(),
            application: Value::Null,
        }
    }

    fn record(clusters: &[&str]) -> Record {
        let mut record: Record = serde_json::from_value(json!({
            "name": "a", "version": "1.0.0", "registry": "local", "installedBy": "user",
            "argsHash": "base", "application": false,
        }))
        .expect("a record");
        for cluster in clusters {
            record
                .dispatched
                .insert((*cluster).to_owned(), ClusterInventory::default());
        }
        record
    }

    #[test]
    fn each_cluster_names_the_set_it_got_and_each_set_is_kept_once() {
        let variants = [variant(3, &["m1", "m2"])];
        let mut next = record(&["local", "m1", "m2"]);
        note_variants(&mut next, &variants);
        stamp_parameters(&mut next, &variants, &BTreeSet::new());
        assert_eq!(next.overrides.len(), 1);
        assert_eq!(next.cluster_parameters("m1"), next.cluster_parameters("m2"));
        assert_eq!(
            next.cluster_parameters("m1")
                .map(|(_, p)| Value::Object(p.clone())),
            Some(json!({"count": 3}))
        );
        assert_eq!(next.cluster_parameters("local"), None);
        assert_ne!(
            next.args_hash, "base",
            "other overrides make another revision"
        );
        // Per cluster, a key of 16 characters: `"parameters":"…"` inside its revision.
        let text = serde_json::to_string(&next.dispatched["m1"]).unwrap_or_default();
        assert_eq!(
            text.len()
                - serde_json::to_string(&next.dispatched["local"])
                    .unwrap_or_default()
                    .len(),
            r#","parameters":"0123456789abcdef""#.len()
        );

        // m2 moves back to the addon's parameters; m1 is held: it keeps what it got, and so does
        // the record its set.
        let moved = [variant(3, &["m1"])];
        let mut after = record(&["local", "m1", "m2"]);
        after.dispatched = next.dispatched.clone();
        after.overrides = next.overrides.clone();
        note_variants(&mut after, &moved);
        stamp_parameters(&mut after, &[], &BTreeSet::from(["m1".to_owned()]));
        assert_eq!(after.cluster_parameters("m2"), None);
        assert!(after.cluster_parameters("m1").is_some());
        assert_eq!(after.overrides.len(), 1);
        // Nobody names it any more: forgotten.
        stamp_parameters(&mut after, &[], &BTreeSet::new());
        assert!(after.overrides.is_empty());
    }

    #[test]
    fn kubevela_refuses_clusters_with_parameters_of_their_own_naming_them() {
        let none = BTreeSet::new();
        let variants = [variant(3, &["m2", "m1"])];
        assert!(direct_only("a", &variants, &none, false).is_ok());
        assert!(direct_only("a", &[], &none, true).is_ok());
        let error = direct_only("a", &variants, &none, true).unwrap_err();
        let text = error.to_string();
        assert!(
            matches!(&error, Error::OverridesNeedDirectEngine { clusters, .. } if clusters == &["m1", "m2"]),
            "{text}"
        );
        assert!(error.is_user_error());
        assert!(
            text.contains("`m1`, `m2`") && text.contains("direct engine"),
            "{text}"
        );
        let held = BTreeSet::from(["m3".to_owned()]);
        assert!(matches!(
            direct_only("a", &[], &held, true),
            Err(Error::HoldNeedsDirectEngine { .. })
        ));
    }

    #[test]
    fn without_overrides_the_record_is_as_before() {
        let mut next = record(&["m1"]);
        note_variants(&mut next, &[]);
        stamp_parameters(&mut next, &[], &BTreeSet::new());
        assert_eq!(next.args_hash, "base");
        let text = serde_json::to_value(&next).unwrap_or_default();
        assert!(text.get("overrides").is_none(), "{text}");
        assert!(
            text["dispatched"]["m1"]["revision"]
                .get("parameters")
                .is_none(),
            "{text}"
        );
    }
}
