//! Pure decisions of a reconcile: which clusters an `Addon` targets (a list or a label selector
//! over the known clusters), which parameters they get (the spec's, the overrides', the
//! secret ones), and the digest of those inputs that tells an unchanged `Addon` from a changed
//! one.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::crd::{AddonSpec, LabelSelector};
use super::Error;
use crate::model::wire::LOCAL_CLUSTER;

/// A cluster the control plane knows, with the labels of its cluster Secret (`local` has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownCluster {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

/// The clusters an `Addon` targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets {
    /// The clusters, sorted; `None` = neither `clusters` nor `clusterSelector`: the addon's own
    /// topology decides (every known cluster is then a possible target).
    pub clusters: Option<Vec<String>>,
    /// Names in `clusters` that are not joined.
    pub unknown: Vec<String>,
}

impl Targets {
    /// The clusters whose health and outcome the status lists.
    pub fn names<'a>(&'a self, known: &'a [KnownCluster]) -> Vec<&'a str> {
        match &self.clusters {
            Some(list) => list.iter().map(String::as_str).collect(),
            None => known.iter().map(|c| c.name.as_str()).collect(),
        }
    }
}

/// Whether `labels` satisfy `selector`; an unknown operator is an error naming it.
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> Result<bool, Error> {
    if !selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
    {
        return Ok(false);
    }
    for expression in &selector.match_expressions {
        let value = labels.get(&expression.key);
        let holds = match expression.operator.as_str() {
            "In" => value.is_some_and(|v| expression.values.contains(v)),
            "NotIn" => value.is_none_or(|v| !expression.values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            other => {
                return Err(Error::Spec(format!(
                    "label selector operator `{other}` (key `{}`) is not one of `In`, `NotIn`, `Exists`, `DoesNotExist`",
                    expression.key
                )))
            }
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The target clusters of `spec` among `known` (which lists `local` first).
pub fn resolve(spec: &AddonSpec, known: &[KnownCluster]) -> Result<Targets, Error> {
    if spec.clusters.is_some() && spec.cluster_selector.is_some() {
        return Err(Error::Spec(
            "`clusters` and `clusterSelector` are both set: keep one of them".to_owned(),
        ));
    }
    if let Some(list) = &spec.clusters {
        let mut clusters: Vec<String> = Vec::new();
        let mut unknown = Vec::new();
        for name in list {
            if known.iter().any(|c| &c.name == name) {
                clusters.push(name.clone());
            } else {
                unknown.push(name.clone());
            }
        }
        clusters.sort();
        clusters.dedup();
        return Ok(Targets {
            clusters: Some(clusters),
            unknown,
        });
    }
    let Some(selector) = &spec.cluster_selector else {
        return Ok(Targets {
            clusters: None,
            unknown: Vec::new(),
        });
    };
    let mut clusters = Vec::new();
    for cluster in known {
        if matches(selector, &cluster.labels)? {
            clusters.push(cluster.name.clone());
        }
    }
    clusters.sort();
    Ok(Targets {
        clusters: Some(clusters),
        unknown: Vec::new(),
    })
}

/// The parameters of `spec` for its targets: `parameters`, then every override whose selector
/// matches the target clusters (in order), then the secret values, then `clusters` (the
/// targets, when the spec names them). addonctl keeps one parameter set per addon (one record):
/// overrides that would give target clusters different parameters are refused, naming the
/// groups.
pub fn parameters(
    spec: &AddonSpec,
    targets: &Targets,
    known: &[KnownCluster],
    secrets: &[(String, Value)],
) -> Result<Map<String, Value>, Error> {
    let mut out = spec.parameters.clone().unwrap_or_default();
    if !spec.overrides.is_empty() {
        let names = targets.names(known);
        let mut groups: BTreeMap<Vec<usize>, Vec<&str>> = BTreeMap::new();
        for name in &names {
            let labels = known
                .iter()
                .find(|c| c.name == *name)
                .map(|c| c.labels.clone())
                .unwrap_or_default();
            let mut chosen = Vec::new();
            for (i, o) in spec.overrides.iter().enumerate() {
                if matches(&o.cluster_selector, &labels)? {
                    chosen.push(i);
                }
            }
            groups.entry(chosen).or_default().push(name);
        }
        if groups.len() > 1 {
            let described: Vec<String> = groups
                .iter()
                .map(|(overrides, clusters)| {
                    format!(
                        "overrides {overrides:?} for clusters {}",
                        clusters.join(", ")
                    )
                })
                .collect();
            return Err(Error::OverridesDiverge(described.join("; ")));
        }
        if let Some(chosen) = groups.keys().next() {
            for i in chosen {
                merge(&mut out, &spec.overrides[*i].parameters);
            }
        }
    }
    for (path, value) in secrets {
        set_path(&mut out, path, value.clone());
    }
    if let Some(clusters) = &targets.clusters {
        out.insert(
            "clusters".to_owned(),
            Value::Array(clusters.iter().cloned().map(Value::String).collect()),
        );
    }
    Ok(out)
}

/// Merges `over` into `base`: objects key by key, anything else replaced.
fn merge(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (key, value) in over {
        match (base.get_mut(key), value) {
            (Some(Value::Object(inner)), Value::Object(theirs)) => merge(inner, theirs),
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Sets `a.b.c` in `map`, making the objects on the way.
fn set_path(map: &mut Map<String, Value>, path: &str, value: Value) {
    let mut parts = path.split('.').peekable();
    let mut current = map;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            current.insert(part.to_owned(), value);
            return;
        }
        let entry = current
            .entry(part.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let Value::Object(next) = entry else { return };
        current = next;
    }
}

/// A digest of what an apply is made from: the spec, the target clusters (every known cluster
/// and its labels when the addon's topology decides), and the referenced Secrets' versions.
/// Secret values never enter it.
pub fn digest(
    spec: &AddonSpec,
    targets: &Targets,
    known: &[KnownCluster],
    secret_versions: &[String],
) -> String {
    let mut hasher = Sha256::new();
    hasher.update(serde_json::to_vec(spec).unwrap_or_default());
    match &targets.clusters {
        Some(list) => hasher.update(list.join(",")),
        None => {
            for cluster in known {
                hasher.update(&cluster.name);
                hasher.update(format!("{:?}", cluster.labels));
            }
        }
    }
    hasher.update(secret_versions.join(","));
    short_hex(&hasher.finalize())
}

/// The first 16 bytes of a digest, in hexadecimal.
pub(super) fn short_hex(bytes: &[u8]) -> String {
    bytes.iter().take(16).fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

/// `local` and the joined clusters (name, labels), `local` first.
pub fn known_clusters(joined: Vec<KnownCluster>) -> Vec<KnownCluster> {
    let mut out = vec![KnownCluster {
        name: LOCAL_CLUSTER.to_owned(),
        labels: BTreeMap::new(),
    }];
    let mut joined = joined;
    joined.sort_by(|a, b| a.name.cmp(&b.name));
    out.extend(joined.into_iter().filter(|c| c.name != LOCAL_CLUSTER));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::crd::{LabelExpression, Override};
    use serde_json::json;

    fn cluster(name: &str, labels: &[(&str, &str)]) -> KnownCluster {
        KnownCluster {
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    fn known() -> Vec<KnownCluster> {
        known_clusters(vec![
            cluster("m2", &[("env", "prod"), ("region", "west")]),
            cluster("m1", &[("env", "prod"), ("region", "east")]),
            cluster("m3", &[("env", "staging")]),
        ])
    }

    fn selector(labels: &[(&str, &str)]) -> LabelSelector {
        LabelSelector {
            match_labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            match_expressions: Vec::new(),
        }
    }

    #[test]
    fn a_selector_picks_the_matching_clusters_and_an_empty_one_every_cluster() {
        let spec = AddonSpec {
            cluster_selector: Some(selector(&[("env", "prod")])),
            ..AddonSpec::default()
        };
        assert_eq!(
            resolve(&spec, &known()).unwrap().clusters.unwrap(),
            ["m1", "m2"]
        );
        let every = AddonSpec {
            cluster_selector: Some(LabelSelector::default()),
            ..AddonSpec::default()
        };
        assert_eq!(
            resolve(&every, &known()).unwrap().clusters.unwrap(),
            ["local", "m1", "m2", "m3"]
        );
    }

    #[test]
    fn expressions_are_anded_and_an_unknown_operator_is_an_error() {
        let mut s = selector(&[]);
        s.match_expressions = vec![
            LabelExpression {
                key: "env".into(),
                operator: "In".into(),
                values: vec!["prod".into(), "staging".into()],
            },
            LabelExpression {
                key: "region".into(),
                operator: "NotIn".into(),
                values: vec!["west".into()],
            },
        ];
        let spec = AddonSpec {
            cluster_selector: Some(s.clone()),
            ..AddonSpec::default()
        };
        assert_eq!(
            resolve(&spec, &known()).unwrap().clusters.unwrap(),
            ["m1", "m3"]
        );
        s.match_expressions[0].operator = "Like".into();
        let error = matches(&s, &BTreeMap::new()).unwrap_err().to_string();
        assert!(error.contains("`Like`"), "{error}");
    }

    #[test]
    fn a_list_keeps_known_clusters_and_names_unknown_ones() {
        let spec = AddonSpec {
            clusters: Some(vec!["m3".into(), "gone".into(), "local".into()]),
            ..AddonSpec::default()
        };
        let targets = resolve(&spec, &known()).unwrap();
        assert_eq!(targets.clusters.unwrap(), ["local", "m3"]);
        assert_eq!(targets.unknown, ["gone"]);
    }

    #[test]
    fn overrides_apply_when_every_target_gets_the_same_ones_and_are_refused_otherwise() {
        let mut spec = AddonSpec {
            parameters: Some(
                json!({"replicas": 1, "image": {"tag": "a"}})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            cluster_selector: Some(selector(&[("env", "prod")])),
            overrides: vec![Override {
                cluster_selector: selector(&[("env", "prod")]),
                parameters: json!({"image": {"tag": "b"}}).as_object().unwrap().clone(),
            }],
            ..AddonSpec::default()
        };
        let targets = resolve(&spec, &known()).unwrap();
        let secrets = [("auth.token".to_owned(), json!("s3cr3t"))];
        let params = parameters(&spec, &targets, &known(), &secrets).unwrap();
        assert_eq!(
            Value::Object(params),
            json!({"replicas": 1, "image": {"tag": "b"}, "auth": {"token": "s3cr3t"}, "clusters": ["m1", "m2"]})
        );
        spec.overrides[0].cluster_selector = selector(&[("region", "east")]);
        let error = parameters(&spec, &targets, &known(), &[])
            .unwrap_err()
            .to_string();
        assert!(error.contains("m1") && error.contains("m2"), "{error}");
    }

    #[test]
    fn the_digest_changes_with_the_targets_and_not_with_unrelated_clusters() {
        let spec = AddonSpec {
            cluster_selector: Some(selector(&[("env", "prod")])),
            ..AddonSpec::default()
        };
        let before = digest(&spec, &resolve(&spec, &known()).unwrap(), &known(), &[]);
        let mut more = known();
        more.push(cluster("m4", &[("env", "dev")]));
        assert_eq!(
            before,
            digest(&spec, &resolve(&spec, &more).unwrap(), &more, &[])
        );
        more.push(cluster("m5", &[("env", "prod")]));
        assert_ne!(
            before,
            digest(&spec, &resolve(&spec, &more).unwrap(), &more, &[])
        );
    }
}
