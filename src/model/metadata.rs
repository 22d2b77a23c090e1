//! `metadata.yaml`: an addon's name, version, dependencies and placement (DESIGN §2.2).
//!
//! Reading is lenient where real registries are untidy (unknown keys ignored, though `lint`
//! reports them through [`unknown_keys`]; a duplicated key keeps its last value with a warning;
//! numbers accepted where strings are expected) and strict where a wrong value would mislead (`name` and `version` are required, `name` must be a DNS
//! label-like identifier, list fields must be lists).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::AddonVersion;
use crate::yaml;

/// `metadata.yaml` could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MetadataError {
    /// The text is not valid YAML.
    #[error("`metadata.yaml` is not valid YAML: {0}")]
    Yaml(#[from] yaml::YamlError),
    /// A field is missing or has the wrong shape.
    #[error("`metadata.yaml`: {0}")]
    Field(String),
}

/// One entry of `dependencies`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dependency {
    /// The addon depended on.
    pub name: String,
    /// A version constraint (`>=1.2.0`, `^1.2`, …); `None` accepts any version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `system`: constraints on the platform the addon runs on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SystemRequirements {
    /// Constraint on the KubeVela version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vela: Option<String>,
    /// Constraint on the Kubernetes version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<String>,
    /// Constraint on the addonctl version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addonctl: Option<String>,
}

/// `deployTo`: where the addon's resources go.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployTo {
    /// Deploy to the managed (runtime) clusters too (`runtimeCluster` or `runtime_cluster`).
    pub runtime_cluster: bool,
    /// Do not deploy to the control plane.
    pub disable_control_plane: bool,
}

/// The parsed `metadata.yaml`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddonMeta {
    /// The addon's name (`^[a-z0-9]+(-[a-z0-9]+)*$`).
    pub name: String,
    /// The version as written, with its semver reading.
    #[serde(serialize_with = "serialize_version")]
    pub version: AddonVersion,
    /// One-line description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icon URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// Home page URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Tags; `system` marks a system addon.
    pub tags: Vec<String>,
    /// Hidden from listings.
    pub invisible: bool,
    /// Namespaces the addon needs (each becomes a `raw` Namespace component).
    pub need_namespace: Vec<String>,
    /// Other addons this one needs.
    pub dependencies: Vec<Dependency>,
    /// Platform constraints.
    pub system: SystemRequirements,
    /// Placement.
    pub deploy_to: DeployTo,
    /// Free annotations.
    pub annotations: BTreeMap<String, String>,
    /// The whole document as read (what scripts see as `context.metadata`).
    #[serde(skip)]
    pub raw: Value,
}

fn serialize_version<S: serde::Serializer>(v: &AddonVersion, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v.raw())
}

/// Whether `name` is a valid addon name: lowercase letters and digits in groups joined by `-`.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

impl AddonMeta {
    /// Parses `metadata.yaml`. Returns the metadata and warnings (duplicated keys, ignored values).
    pub fn parse(text: &str) -> Result<(Self, Vec<String>), MetadataError> {
        let (value, mut warnings) = yaml::parse_single(text)?;
        let Value::Object(map) = value else {
            return Err(field(
                "the document must be a mapping with at least `name` and `version`",
            ));
        };
        let meta = Self::from_map(&map, &mut warnings)?;
        Ok((meta, warnings))
    }

    fn from_map(
        map: &Map<String, Value>,
        warnings: &mut Vec<String>,
    ) -> Result<Self, MetadataError> {
        let name = scalar_string(map, "name")?
            .ok_or_else(|| field("`name` is required (the addon's name, e.g. `name: my-addon`)"))?;
        if !is_valid_name(&name) {
            return Err(field(&format!(
                "`name` `{name}` is invalid: use lowercase letters, digits and single `-` between them (at most 63 characters)"
            )));
        }
        let version = scalar_string(map, "version")?
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| field("`version` is required (e.g. `version: 1.0.0`)"))?;
        let version = AddonVersion::parse(&version);
        if version.semver().is_none() {
            warnings.push(format!(
                "`version` `{version}` is not semver; it is accepted but never chosen by a version range"
            ));
        }
        let dependencies = match map.get("dependencies") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| dependency(i, item))
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(field(&format!(
                    "`dependencies` must be a list of `{{name, version}}`, found {}",
                    kind(other)
                )))
            }
        };
        let system = match map.get("system") {
            None | Some(Value::Null) => SystemRequirements::default(),
            Some(Value::Object(m)) => SystemRequirements {
                vela: scalar_string(m, "vela")?,
                kubernetes: scalar_string(m, "kubernetes")?,
                addonctl: scalar_string(m, "addonctl")?,
            },
            Some(other) => {
                return Err(field(&format!(
                    "`system` must be a mapping, found {}",
                    kind(other)
                )))
            }
        };
        let deploy_to = match map.get("deployTo") {
            None | Some(Value::Null) => DeployTo::default(),
            Some(Value::Object(m)) => DeployTo {
                runtime_cluster: flag(m, "runtimeCluster", "deployTo.")?
                    || flag(m, "runtime_cluster", "deployTo.")?,
                disable_control_plane: flag(m, "disableControlPlane", "deployTo.")?,
            },
            Some(other) => {
                return Err(field(&format!(
                    "`deployTo` must be a mapping, found {}",
                    kind(other)
                )))
            }
        };
        let annotations = match map.get("annotations") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| {
                    scalar(v).map(|s| (k.clone(), s)).ok_or_else(|| {
                        field(&format!(
                            "`annotations.{k}` must be a string, found {}",
                            kind(v)
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(field(&format!(
                    "`annotations` must be a mapping, found {}",
                    kind(other)
                )))
            }
        };
        Ok(AddonMeta {
            name,
            version,
            description: scalar_string(map, "description")?,
            icon: scalar_string(map, "icon")?,
            url: scalar_string(map, "url")?,
            tags: string_list(map, "tags")?,
            invisible: flag(map, "invisible", "")?,
            need_namespace: string_list(map, "needNamespace")?,
            dependencies,
            system,
            deploy_to,
            annotations,
            raw: Value::Object(map.clone()),
        })
    }

    /// Whether `tags` marks this as a system addon.
    pub fn is_system(&self) -> bool {
        self.tags.iter().any(|t| t == "system")
    }
}

fn field(message: &str) -> MetadataError {
    MetadataError::Field(message.to_owned())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn scalar_string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, MetadataError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => scalar(v)
            .map(Some)
            .ok_or_else(|| field(&format!("`{key}` must be a string, found {}", kind(v)))),
    }
}

fn string_list(map: &Map<String, Value>, key: &str) -> Result<Vec<String>, MetadataError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                scalar(v).ok_or_else(|| {
                    field(&format!("`{key}[{i}]` must be a string, found {}", kind(v)))
                })
            })
            .collect(),
        Some(other) => Err(field(&format!(
            "`{key}` must be a list of strings, found {}",
            kind(other)
        ))),
    }
}

fn flag(map: &Map<String, Value>, key: &str, prefix: &str) -> Result<bool, MetadataError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(s == "true"),
        Some(other) => Err(field(&format!(
            "`{prefix}{key}` must be true or false, found {}",
            kind(other)
        ))),
    }
}

fn dependency(index: usize, item: &Value) -> Result<Dependency, MetadataError> {
    let Value::Object(m) = item else {
        return Err(field(&format!(
            "`dependencies[{index}]` must be a mapping `{{name, version}}`, found {}",
            kind(item)
        )));
    };
    let name = scalar_string(m, "name")?
        .ok_or_else(|| field(&format!("`dependencies[{index}].name` is required")))?;
    if !is_valid_name(&name) {
        return Err(field(&format!(
            "`dependencies[{index}].name` `{name}` is not a valid addon name"
        )));
    }
    let version = scalar_string(m, "version")?.filter(|v| !v.trim().is_empty());
    Ok(Dependency { name, version })
}

/// A key of `metadata.yaml` that neither addonctl nor KubeVela reads: its value is ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// Where it is: `dependancies`, `system.velaa`, `dependencies[0].versoin`.
    pub path: String,
    /// The key itself.
    pub key: String,
    /// The known key it most likely means (`dependencies` for `dependancies`).
    pub suggestion: Option<&'static str>,
}

/// The keys `metadata.yaml` may hold at the top level.
pub const KNOWN_KEYS: &[&str] = &[
    "name",
    "version",
    "description",
    "icon",
    "url",
    "tags",
    "invisible",
    "needNamespace",
    "dependencies",
    "system",
    "deployTo",
    "annotations",
    // KubeVela's VelaUX plugins; addonctl does not use them.
    "uxPlugins",
];

/// The keys of the nested mappings of `metadata.yaml` (`annotations` is free).
const NESTED_KEYS: &[(&str, &[&str])] = &[
    ("system", &["vela", "kubernetes", "addonctl"]),
    (
        "deployTo",
        // `controlPlane`/`control_plane`: older KubeVela releases.
        &[
            "runtimeCluster",
            "runtime_cluster",
            "disableControlPlane",
            "controlPlane",
            "control_plane",
        ],
    ),
    ("dependencies", &["name", "version"]),
];

/// The keys of a parsed `metadata.yaml` (its `raw` document) that nothing reads, in document
/// order, each with the known key it most likely misspells.
pub fn unknown_keys(raw: &Value) -> Vec<UnknownKey> {
    let mut out = Vec::new();
    let Value::Object(map) = raw else {
        return out;
    };
    let mut check = |path: String, key: &str, known: &[&'static str]| {
        if !known.contains(&key) {
            out.push(UnknownKey {
                path,
                key: key.to_owned(),
                suggestion: closest(key, known),
            });
        }
    };
    for (key, value) in map {
        check(key.clone(), key, KNOWN_KEYS);
        let Some((_, nested)) = NESTED_KEYS.iter().find(|(parent, _)| parent == key) else {
            continue;
        };
        let items: Vec<(String, &Map<String, Value>)> = match value {
            Value::Object(m) => vec![(key.clone(), m)],
            Value::Array(list) => list
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.as_object().map(|m| (format!("{key}[{i}]"), m)))
                .collect(),
            _ => Vec::new(),
        };
        for (prefix, m) in items {
            for inner in m.keys() {
                check(format!("{prefix}.{inner}"), inner, nested);
            }
        }
    }
    out
}

/// The known key closest to `key` when it is close enough to be a typo: equal but for case, or
/// at most two edits away (one for short keys).
pub fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let lower = key.to_ascii_lowercase();
    let limit = if key.chars().count() <= 4 { 1 } else { 2 };
    known
        .iter()
        .map(|k| {
            (
                strsim::damerau_levenshtein(&lower, &k.to_ascii_lowercase()),
                *k,
            )
        })
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k)
}

/// Who asked for an installed addon: recorded with it, so `disable --prune-dependencies` knows
/// what came in only as a dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InstalledBy {
    /// The user named it.
    User,
    /// It came in as another addon's dependency.
    Dependency,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_registry_metadata_is_read_leniently() {
        let text = "---\n# comment\nname: fluxcd\nversion: v2.3.0\nappVersion: 2.1.0\ndescription: GitOps\n\
                    description: GitOps toolkit\ntags: [gitops, system]\nneedNamespace: [flux-system]\n\
                    dependencies:\n  - name: cert-manager\n    version: '>= 1.0.0, < 2.0.0'\n  - name: base\n\
                    system:\n  vela: '>=1.5.0'\ndeployTo:\n  runtime_cluster: true\n  controlPlane: true\n";
        let (meta, warnings) = AddonMeta::parse(text).unwrap();
        assert_eq!(meta.name, "fluxcd");
        assert_eq!(meta.version.raw(), "v2.3.0");
        assert_eq!(meta.version.semver().unwrap().to_string(), "2.3.0");
        assert_eq!(meta.description.as_deref(), Some("GitOps toolkit"));
        assert!(meta.is_system());
        assert!(meta.deploy_to.runtime_cluster);
        assert_eq!(
            meta.dependencies[0].version.as_deref(),
            Some(">= 1.0.0, < 2.0.0")
        );
        assert_eq!(meta.dependencies[1].version, None);
        assert_eq!(meta.system.vela.as_deref(), Some(">=1.5.0"));
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("`description`"));
    }

    #[test]
    fn numeric_and_non_semver_versions_are_accepted() {
        let (meta, warnings) = AddonMeta::parse("name: a\nversion: 1.0\n").unwrap();
        assert_eq!(meta.version.raw(), "1.0");
        assert!(warnings.is_empty());
        let (meta, warnings) = AddonMeta::parse("name: a\nversion: nightly\n").unwrap();
        assert!(meta.version.semver().is_none());
        assert!(warnings[0].contains("not semver"));
    }

    #[test]
    fn bad_metadata_is_a_clear_error() {
        let cases = [
            ("version: 1.0.0\n", "`name` is required"),
            ("name: a\n", "`version` is required"),
            (
                "name: My_Addon\nversion: 1.0.0\n",
                "`name` `My_Addon` is invalid",
            ),
            (
                "name: a\nversion: 1.0.0\ntags: x\n",
                "`tags` must be a list",
            ),
            (
                "name: a\nversion: 1.0.0\ndependencies: [x]\n",
                "`dependencies[0]` must be a mapping",
            ),
            ("- a\n", "must be a mapping"),
            ("name: [\n", "not valid YAML"),
        ];
        for (text, expected) in cases {
            let err = AddonMeta::parse(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn names_are_checked() {
        for ok in ["a", "a-b", "a1-2b", "fluxcd"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a.b"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn unknown_keys_are_found_with_a_suggestion_when_they_look_like_a_typo() {
        let text = "name: a\nversion: 1.0.0\ndependancies: []\nappVersion: 2.0\nsystem:\n  velaa: '>=1'\n\
                    deployTo:\n  runtimeCluster: true\ndependencies:\n  - name: b\n    versoin: '1'\n\
                    annotations:\n  anything: goes\nNeedNamespace: [x]\n";
        let (meta, _) = AddonMeta::parse(text).unwrap();
        let found: Vec<(String, Option<&str>)> = unknown_keys(&meta.raw)
            .into_iter()
            .map(|u| (u.path, u.suggestion))
            .collect();
        assert_eq!(
            found,
            vec![
                ("dependancies".to_owned(), Some("dependencies")),
                ("appVersion".to_owned(), None),
                ("system.velaa".to_owned(), Some("vela")),
                ("dependencies[0].versoin".to_owned(), Some("version")),
                ("NeedNamespace".to_owned(), Some("needNamespace")),
            ]
        );
        let (clean, _) = AddonMeta::parse("name: a\nversion: 1.0.0\ntags: [x]\n").unwrap();
        assert!(unknown_keys(&clean.raw).is_empty());
    }
}
