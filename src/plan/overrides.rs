//! Parameters some target clusters get over the addon's own (an `Addon`'s `overrides`, as
//! KubeVela's override policy): the control-plane objects and the clusters no override sets
//! apart get the addon rendered with its arguments; each group of clusters the overrides give
//! other parameters gets the addon's components rendered once more, with the group's
//! parameters laid over the arguments — once per distinct parameter set, not once per cluster.
//!
//! Every override is checked against the addon's schema before anything is rendered: a value
//! the schema refuses, or a secret parameter (its value would be kept in the record, which lists
//! per cluster what it got), is an error naming the override and the parameter.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::model::AddonPackage;
use crate::params::{merge_values, ParameterSchema};
use crate::render::{RenderOptions, Renderer};
use crate::{Error, Result};

/// Parameters some target clusters of the addon asked for get over its arguments, grouped by
/// the clusters they select. Empty: every cluster gets the arguments alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// Each override's parameters, in order (errors name an override by its index here).
    pub parameters: Vec<Map<String, Value>>,
    /// The groups of clusters that get the same overrides.
    pub groups: Vec<OverrideGroup>,
    /// Per override (by index), every target cluster its selector matches, when the caller
    /// knows them: an override every target gets is in no group, yet its errors name them.
    pub selects: Vec<Vec<String>>,
}

/// Clusters that get the same overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverrideGroup {
    /// The overrides they get (indexes into [`Overrides::parameters`]), merged in this order.
    pub overrides: Vec<usize>,
    /// The clusters.
    pub clusters: Vec<String>,
}

/// The addon's components rendered for some clusters with parameters of their own.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// What the record calls these parameters ([`parameters_key`]).
    pub key: String,
    /// The parameters laid over the addon's arguments (never a secret one).
    pub parameters: Map<String, Value>,
    /// The clusters that get them.
    pub clusters: BTreeSet<String>,
    /// The Application rendered with them: its components are what these clusters get.
    pub application: Value,
}

/// The key of a parameter set: the first 8 bytes of the SHA-256 of its JSON, in hexadecimal.
pub fn parameters_key(parameters: &Map<String, Value>) -> String {
    let digest = Sha256::digest(serde_json::to_vec(parameters).unwrap_or_default());
    digest.iter().take(8).fold(String::new(), |mut hex, b| {
        use std::fmt::Write as _;
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

/// The parameters the record says clusters got over the addon's arguments (an `Addon`'s
/// overrides, as last applied), as overrides: one group per parameter set, limited to
/// `targets` when the clusters are named. An `enable` or `upgrade` without `--reset-values`
/// keeps them, as it keeps the stored arguments.
pub fn stored(record: &crate::state::record::Record, targets: Option<&[String]>) -> Overrides {
    let mut out = Overrides::default();
    for (key, parameters) in &record.overrides {
        let clusters: Vec<String> = record
            .dispatched
            .iter()
            .filter(|(_, inventory)| {
                inventory
                    .revision
                    .as_ref()
                    .and_then(|r| r.parameters.as_ref())
                    == Some(key)
            })
            .map(|(name, _)| name.clone())
            .filter(|name| targets.is_none_or(|t| t.contains(name)))
            .collect();
        if clusters.is_empty() {
            continue;
        }
        out.groups.push(OverrideGroup {
            overrides: vec![out.parameters.len()],
            clusters,
        });
        out.parameters.push(parameters.clone());
    }
    out
}

/// Checks every override against the addon's schema (with `options`, what the addon is rendered
/// with) and renders the components once per distinct parameter set a group gets; a group whose
/// parameters change nothing gets the addon as rendered with its arguments (no variant).
pub(super) fn render_variants(
    renderer: &Renderer,
    package: &AddonPackage,
    options: &RenderOptions,
    overrides: &Overrides,
) -> Result<Vec<Variant>> {
    if overrides.parameters.is_empty() {
        return Ok(Vec::new());
    }
    let addon = package.name();
    let schema = renderer
        .parameter_schema_in(package, options)
        .map_err(crate::Error::from)?;
    for (index, parameters) in overrides.parameters.iter().enumerate() {
        let mut clusters: Vec<String> = match overrides.selects.get(index) {
            Some(selected) if !selected.is_empty() => selected.clone(),
            _ => overrides
                .groups
                .iter()
                .filter(|g| g.overrides.contains(&index))
                .flat_map(|g| g.clusters.iter().cloned())
                .collect(),
        };
        clusters.sort();
        clusters.dedup();
        check(&schema, options, parameters).map_err(|(parameter, reason)| {
            Error::OverrideInvalid {
                addon: addon.to_owned(),
                index,
                clusters,
                parameter,
                reason,
            }
        })?;
    }
    let mut base = Value::Object(options.stored_args.clone());
    merge_values(&mut base, &Value::Object(options.args.clone()));
    let mut variants: Vec<Variant> = Vec::new();
    for group in &overrides.groups {
        let mut merged = Value::Object(Map::new());
        for index in &group.overrides {
            if let Some(parameters) = overrides.parameters.get(*index) {
                merge_values(&mut merged, &Value::Object(parameters.clone()));
            }
        }
        let Value::Object(parameters) = merged else {
            continue;
        };
        let mut laid = base.clone();
        merge_values(&mut laid, &Value::Object(parameters.clone()));
        if parameters.is_empty() || laid == base {
            continue;
        }
        let key = parameters_key(&parameters);
        if let Some(known) = variants.iter_mut().find(|v| v.key == key) {
            known.clusters.extend(group.clusters.iter().cloned());
            continue;
        }
        let mut args = Value::Object(options.args.clone());
        merge_values(&mut args, &Value::Object(parameters.clone()));
        let variant_options = RenderOptions {
            args: match args {
                Value::Object(map) => map,
                _ => Map::new(),
            },
            ..options.clone()
        };
        let rendered = renderer
            .render(package, &variant_options)
            .map_err(crate::Error::from)?;
        super::check_sizes(&rendered)?;
        variants.push(Variant {
            key,
            parameters,
            clusters: group.clusters.iter().cloned().collect(),
            application: rendered.application,
        });
    }
    Ok(variants)
}

/// Checks one override: no secret parameter, nor `clusters`, and the values, laid over what the
/// addon is rendered with, valid for the schema. Returns the parameter at fault and why.
fn check(
    schema: &ParameterSchema,
    options: &RenderOptions,
    parameters: &Map<String, Value>,
) -> std::result::Result<(), (String, String)> {
    let mut paths = Vec::new();
    leaves(&Value::Object(parameters.clone()), "", &mut paths);
    for path in &paths {
        if path == crate::params::CLUSTERS || path.starts_with("clusters.") {
            return Err((
                path.clone(),
                "the target clusters are the `Addon`'s `clusters` or `clusterSelector`, not a parameter an override sets".to_owned(),
            ));
        }
        if schema.is_secret(path) {
            return Err((
                path.clone(),
                "a secret parameter cannot be overridden per cluster (its value would be kept with what each cluster got); give it to every cluster with `secretParameters`".to_owned(),
            ));
        }
    }
    schema
        .resolve(&[&options.stored_args, &options.args, parameters])
        .map(|_| ())
        .map_err(|e| (first_path(&e).unwrap_or_default(), e.to_string()))
}

/// The dotted paths of the leaves of `value` (list items as `key.0`).
fn leaves(value: &Value, path: &str, out: &mut Vec<String>) {
    let child = |key: &str| crate::params::dotted(path, key);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, v) in map {
                leaves(v, &child(key), out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            out.push(path.to_owned());
            for (i, v) in items.iter().enumerate() {
                leaves(v, &child(&i.to_string()), out);
            }
        }
        _ => out.push(path.to_owned()),
    }
}

/// The first parameter a parameters error names.
fn first_path(error: &crate::params::Error) -> Option<String> {
    match error {
        crate::params::Error::UnknownParameters(unknown) => unknown.first().map(|u| u.path.clone()),
        crate::params::Error::Invalid(violations) => violations.first().map(|v| v.path.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_key_depends_on_the_parameters_only_and_is_short() {
        let a = json!({"count": 3}).as_object().cloned().unwrap_or_default();
        let b = json!({"count": 4}).as_object().cloned().unwrap_or_default();
        assert_eq!(parameters_key(&a), parameters_key(&a.clone()));
        assert_ne!(parameters_key(&a), parameters_key(&b));
        assert_eq!(parameters_key(&a).len(), 16);
    }

    /// An addon of `count` ConfigMaps, with a secret `token`.
    fn package() -> AddonPackage {
        let file = |path: &str, text: &str| (path.to_owned(), text.as_bytes().to_vec());
        crate::loader::from_files(
            "local",
            "spread",
            vec![
                file("metadata.yaml", "name: spread\nversion: 1.0.0\n"),
                file(
                    "parameter.rhai",
                    "#{ count: pint(2), token: string().secret().optional(), clusters: list(string()).optional() }",
                ),
                file(
                    "template.rhai",
                    r#"let objects = [];
for i in 0..parameter.count {
    objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `c-${i}` } });
}
#{ output: application(#{ components: [k8s_objects("spread", objects)],
    policies: [topology("where", parameter.clusters)] }) }
"#,
                ),
            ],
        )
        .unwrap()
    }

    fn options() -> RenderOptions {
        RenderOptions {
            args: object(
                json!({"count": 2, "token": "s3cr3t-value", "clusters": ["m1", "m2", "m3", "local"]}),
            ),
            ..RenderOptions::default()
        }
    }

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    fn group(overrides: &[usize], clusters: &[&str]) -> OverrideGroup {
        OverrideGroup {
            overrides: overrides.to_vec(),
            clusters: clusters.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    fn config_maps(application: &Value) -> usize {
        crate::plan::inventory::component_objects(application).len()
    }

    #[test]
    fn each_distinct_parameter_set_is_rendered_once_and_one_changing_nothing_not_at_all() {
        let overrides = Overrides {
            parameters: vec![
                object(json!({"count": 3})),
                object(json!({"count": 3})),
                object(json!({"count": 2})),
            ],
            groups: vec![
                group(&[0], &["m1"]),
                group(&[1], &["m2"]),
                group(&[2], &["m3"]),
            ],
            ..Overrides::default()
        };
        let variants =
            render_variants(&Renderer::new(), &package(), &options(), &overrides).unwrap();
        // m1 and m2 get the same parameters by different overrides: one render for both; m3's
        // override sets what the addon has already: no render, the addon's own objects.
        assert_eq!(variants.len(), 1, "{variants:?}");
        let clusters: Vec<&str> = variants[0].clusters.iter().map(String::as_str).collect();
        assert_eq!(clusters, ["m1", "m2"]);
        assert_eq!(variants[0].parameters, object(json!({"count": 3})));
        assert_eq!(
            variants[0].key,
            parameters_key(&object(json!({"count": 3})))
        );
        assert_eq!(config_maps(&variants[0].application), 3);
        let base = Renderer::new().render(&package(), &options()).unwrap();
        assert_eq!(config_maps(&base.application), 2);
    }

    #[test]
    fn a_bad_or_secret_override_names_its_index_and_parameter_and_never_a_secret_value() {
        let bad = Overrides {
            parameters: vec![object(json!({"count": 3})), object(json!({"count": 0}))],
            groups: vec![group(&[0, 1], &["m2"])],
            ..Overrides::default()
        };
        let error = render_variants(&Renderer::new(), &package(), &options(), &bad).unwrap_err();
        assert!(
            matches!(&error, Error::OverrideInvalid { index: 1, parameter, .. } if parameter == "count"),
            "{error:?}"
        );
        let text = error.to_string();
        assert!(
            text.contains("override #2 (`overrides[1]`)")
                && text.contains("`count`")
                && text.contains("selecting cluster(s) `m2`"),
            "{text}"
        );

        // An override every target gets is in no group: its error still names what it selects.
        let everywhere = Overrides {
            parameters: vec![object(json!({"count": 0}))],
            groups: Vec::new(),
            selects: vec![vec!["m2".to_owned(), "m1".to_owned()]],
        };
        let text = render_variants(&Renderer::new(), &package(), &options(), &everywhere)
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("override #1 (`overrides[0]`)")
                && text.contains("selecting cluster(s) `m1`, `m2`"),
            "{text}"
        );
        assert!(error.is_user_error());

        let secret = Overrides {
            parameters: vec![object(json!({"token": "other-s3cr3t"}))],
            groups: vec![group(&[0], &["m1"])],
            ..Overrides::default()
        };
        let error = render_variants(&Renderer::new(), &package(), &options(), &secret).unwrap_err();
        let text = error.to_string();
        assert!(
            matches!(&error, Error::OverrideInvalid { index: 0, parameter, .. } if parameter == "token"),
            "{text}"
        );
        assert!(!text.contains("s3cr3t"), "{text}");

        let unknown = Overrides {
            parameters: vec![object(json!({"colour": "red"}))],
            groups: vec![group(&[0], &["m1"])],
            ..Overrides::default()
        };
        let error =
            render_variants(&Renderer::new(), &package(), &options(), &unknown).unwrap_err();
        assert!(
            matches!(&error, Error::OverrideInvalid { parameter, .. } if parameter == "colour"),
            "{error}"
        );
    }

    #[test]
    fn leaves_are_dotted_paths_with_list_items() {
        let mut out = Vec::new();
        leaves(&json!({"a": {"b": 1, "c": [2]}, "d": {}}), "", &mut out);
        assert_eq!(out, ["a.b", "a.c", "a.c.0", "d"]);
    }
}
