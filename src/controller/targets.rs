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

/// The parameters of an `Addon` for its targets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parameters {
    /// What the control-plane objects, and the clusters no override sets apart, are rendered
    /// from: `parameters`, the overrides that select every target (in order), the secret
    /// values, then `clusters` (the targets, when the spec names them).
    pub base: Map<String, Value>,
    /// Each override's parameters (secret paths left out: the secret values are the same
    /// everywhere), to be checked against the addon's schema, and the groups of target
    /// clusters that get other overrides than every target does (none: every target gets
    /// `base`).
    pub overrides: crate::plan::Overrides,
}

/// The parameters of `spec` for its targets, as KubeVela's override policy gives them: the
/// target clusters are grouped by the overrides whose selector matches them; the overrides
/// every target gets are folded into [`Parameters::base`], and each group that gets others
/// becomes an [`crate::plan::OverrideGroup`] (`local` is a cluster like the others: it has no
/// labels).
pub fn parameters(
    spec: &AddonSpec,
    targets: &Targets,
    known: &[KnownCluster],
    secrets: &[(String, Value)],
) -> Result<Parameters, Error> {
    let mut base = spec.parameters.clone().unwrap_or_default();
    let groups = assignment(spec, targets, known)?;
    // The overrides every target gets (all of them when no target is known yet).
    let common: Vec<usize> = match groups.keys().next() {
        Some(first) => first
            .iter()
            .copied()
            .filter(|i| groups.keys().all(|chosen| chosen.contains(i)))
            .collect(),
        None => Vec::new(),
    };
    for i in &common {
        merge(&mut base, &spec.overrides[*i].parameters);
    }
    // Every override is handed over (the planner checks each against the schema, naming it and
    // the clusters it selects); only the groups that get others than every target are rendered
    // apart.
    let selects = (0..spec.overrides.len())
        .map(|i| {
            groups
                .iter()
                .filter(|(chosen, _)| chosen.contains(&i))
                .flat_map(|(_, clusters)| clusters.iter().cloned())
                .collect()
        })
        .collect();
    let overrides = crate::plan::Overrides {
        selects,
        parameters: spec
            .overrides
            .iter()
            .map(|o| {
                let mut parameters = o.parameters.clone();
                for (path, _) in secrets {
                    remove_path(&mut parameters, path);
                }
                parameters
            })
            .collect(),
        groups: groups
            .into_iter()
            .filter(|(chosen, _)| *chosen != common)
            .map(|(chosen, clusters)| crate::plan::OverrideGroup {
                overrides: chosen,
                clusters,
            })
            .collect(),
    };
    for (path, value) in secrets {
        set_path(&mut base, path, value.clone());
    }
    if let Some(clusters) = &targets.clusters {
        base.insert(
            "clusters".to_owned(),
            Value::Array(clusters.iter().cloned().map(Value::String).collect()),
        );
    }
    Ok(Parameters { base, overrides })
}

/// The target clusters grouped by the overrides whose selector matches them (indexes, in
/// order); empty without overrides.
fn assignment(
    spec: &AddonSpec,
    targets: &Targets,
    known: &[KnownCluster],
) -> Result<BTreeMap<Vec<usize>, Vec<String>>, Error> {
    let mut groups: BTreeMap<Vec<usize>, Vec<String>> = BTreeMap::new();
    if spec.overrides.is_empty() {
        return Ok(groups);
    }
    let none = BTreeMap::new();
    for name in targets.names(known) {
        let labels = known
            .iter()
            .find(|c| c.name == name)
            .map_or(&none, |c| &c.labels);
        let mut chosen = Vec::new();
        for (i, o) in spec.overrides.iter().enumerate() {
            if matches(&o.cluster_selector, labels)? {
                chosen.push(i);
            }
        }
        groups.entry(chosen).or_default().push(name.to_owned());
    }
    Ok(groups)
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

/// Removes `a.b.c` from `map`, if there.
fn remove_path(map: &mut Map<String, Value>, path: &str) {
    match path.split_once('.') {
        None => {
            map.remove(path);
        }
        Some((first, rest)) => {
            if let Some(Value::Object(inner)) = map.get_mut(first) {
                remove_path(inner, rest);
            }
        }
    }
}

/// A digest of what an apply is made from: the spec, the target clusters (every known cluster
/// and its labels when the addon's topology decides), which overrides each target gets, and
/// the referenced Secrets' versions.
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
    // Which target gets which overrides (labels can move a cluster between groups without
    // changing the targets).
    if let (false, Ok(groups)) = (spec.overrides.is_empty(), assignment(spec, targets, known)) {
        hasher.update(format!("{groups:?}"));
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

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    fn spec_with(overrides: Vec<Override>) -> AddonSpec {
        AddonSpec {
            parameters: Some(object(json!({"replicas": 1, "image": {"tag": "a"}}))),
            cluster_selector: Some(LabelSelector::default()),
            overrides,
            ..AddonSpec::default()
        }
    }

    fn set(labels: &[(&str, &str)], parameters: Value) -> Override {
        Override {
            cluster_selector: selector(labels),
            parameters: object(parameters),
        }
    }

    #[test]
    fn overrides_every_target_gets_are_folded_into_the_base_parameters() {
        let mut spec = spec_with(vec![set(
            &[("env", "prod")],
            json!({"image": {"tag": "b"}}),
        )]);
        spec.cluster_selector = Some(selector(&[("env", "prod")]));
        let targets = resolve(&spec, &known()).unwrap();
        let secrets = [("auth.token".to_owned(), json!("s3cr3t"))];
        let params = parameters(&spec, &targets, &known(), &secrets).unwrap();
        assert_eq!(
            Value::Object(params.base),
            json!({"replicas": 1, "image": {"tag": "b"}, "auth": {"token": "s3cr3t"}, "clusters": ["m1", "m2"]})
        );
        // Handed over to be checked against the schema; no group is rendered apart.
        assert!(params.overrides.groups.is_empty());
        assert_eq!(params.overrides.parameters.len(), 1);
    }

    #[test]
    fn targets_are_grouped_by_the_overrides_that_select_them_local_included() {
        let spec = spec_with(vec![
            set(&[("env", "prod")], json!({"replicas": 3})),
            set(&[("region", "east")], json!({"image": {"tag": "east"}})),
            // Every target: folded into the base parameters.
            set(&[], json!({"image": {"pull": "always"}})),
        ]);
        let targets = resolve(&spec, &known()).unwrap();
        let params = parameters(&spec, &targets, &known(), &[]).unwrap();
        assert_eq!(
            Value::Object(params.base.clone()),
            json!({"replicas": 1, "image": {"tag": "a", "pull": "always"},
                   "clusters": ["local", "m1", "m2", "m3"]})
        );
        // One group per distinct set of overrides, not one per cluster; `local` and m3 get the
        // base parameters (no group).
        let groups: Vec<(Vec<usize>, Vec<String>)> = params
            .overrides
            .groups
            .iter()
            .map(|g| (g.overrides.clone(), g.clusters.clone()))
            .collect();
        assert_eq!(
            groups,
            [
                (vec![0, 1, 2], vec!["m1".to_owned()]),
                (vec![0, 2], vec!["m2".to_owned()]),
            ]
        );
        assert_eq!(params.overrides.parameters.len(), 3);
        assert_eq!(
            params.overrides.parameters[1],
            object(json!({"image": {"tag": "east"}}))
        );
    }

    #[test]
    fn secret_paths_and_the_targets_stay_out_of_the_overrides() {
        let mut spec = spec_with(vec![set(
            &[("env", "staging")],
            json!({"auth": {"token": "plain", "user": "u"}, "replicas": 2}),
        )]);
        spec.clusters = Some(vec!["m1".into(), "m3".into()]);
        spec.cluster_selector = None;
        let targets = resolve(&spec, &known()).unwrap();
        let secrets = [("auth.token".to_owned(), json!("s3cr3t"))];
        let params = parameters(&spec, &targets, &known(), &secrets).unwrap();
        assert_eq!(params.base["auth"], json!({"token": "s3cr3t"}));
        assert_eq!(
            params.overrides.parameters,
            [object(json!({"auth": {"user": "u"}, "replicas": 2}))]
        );
        assert_eq!(params.overrides.groups[0].clusters, ["m3"]);
        let text = format!("{:?}", params.overrides);
        assert!(
            !text.contains("s3cr3t") && !text.contains("plain"),
            "{text}"
        );
    }

    #[test]
    fn the_digest_follows_a_cluster_moving_between_override_groups() {
        let mut spec = spec_with(vec![set(&[("tier", "canary")], json!({"replicas": 3}))]);
        spec.clusters = Some(vec!["m1".into(), "m2".into()]);
        spec.cluster_selector = None;
        let before = known();
        let digest_of =
            |known: &[KnownCluster]| digest(&spec, &resolve(&spec, known).unwrap(), known, &[]);
        let mut relabelled = known();
        if let Some(m2) = relabelled.iter_mut().find(|c| c.name == "m2") {
            m2.labels.insert("tier".into(), "canary".into());
        }
        assert_ne!(digest_of(&before), digest_of(&relabelled));
        let mut unrelated = known();
        if let Some(m2) = unrelated.iter_mut().find(|c| c.name == "m2") {
            m2.labels.insert("team".into(), "a".into());
        }
        assert_eq!(digest_of(&before), digest_of(&unrelated));
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
