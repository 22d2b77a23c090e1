//! The arguments of one addon, from the door to the record.
//!
//! # Expected flow
//!
//! 1. A front end hands over what the user typed as an [`Input`]: values files (`-f`), `key=value`
//!    pairs, `--set-file key=path` and `--clusters`. [`Input::read`] reads the files at once (so a
//!    missing or malformed file fails before anything else is done) but types nothing.
//! 2. Whoever loads the addon's package parses the input once against its schema
//!    ([`Input::parse`]) into typed [`Arguments`]: values files, then pairs, then `--set-file`
//!    (later wins, deeply), then `--clusters`.
//! 3. On upgrade (and for installed dependencies) the stored arguments are read back with
//!    [`Arguments::from_map`] and the given ones laid over them with [`Arguments::over`]: the one
//!    merge, deep, whose result is both what is stored (the argument Secret) and what the schema
//!    turns into the values the scripts see.
//!
//! # Guarantees
//!
//! - `clusters` is a typed field: a list of cluster names, or absent; anything else is refused.
//! - A partial nested override keeps its stored siblings (`{resources: {cpu: 1, memory: 2}}` with
//!   `resources.cpu=3` is `{resources: {cpu: 3, memory: 2}}`); lists and scalars are replaced.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::error::{Error, Result};
use super::{merge_values, ParameterSchema, CLUSTERS};

/// What a user gave for one addon's parameters, files already read, nothing typed yet.
#[derive(Clone, Debug, Default)]
pub struct Input {
    /// Values files in order: (path as given, its mapping).
    values: Vec<(String, Map<String, Value>)>,
    /// `key=value` pairs.
    pairs: Vec<String>,
    /// `--set-file`: (dotted key, the file's text).
    files: Vec<(Vec<String>, String)>,
    /// `--clusters`.
    clusters: Option<Vec<String>>,
}

/// The raw parameter input of a command line, before the files are read.
#[derive(Clone, Debug, Default)]
pub struct RawInput<'a> {
    /// Values files (`-f`), later wins.
    pub values_files: &'a [PathBuf],
    /// `key=value` pairs.
    pub pairs: &'a [String],
    /// `--set-file key=path`.
    pub set_files: &'a [String],
    /// `--clusters a,b`.
    pub clusters: Option<&'a [String]>,
}

impl Input {
    /// The values of a request (a server's form or JSON body): one mapping, as a values file
    /// named `source` would give it, and the clusters asked for.
    pub fn from_values(
        source: &str,
        values: Map<String, Value>,
        clusters: Option<Vec<String>>,
    ) -> Self {
        Input {
            values: vec![(source.to_owned(), values)],
            pairs: Vec::new(),
            files: Vec::new(),
            clusters,
        }
    }

    /// Reads the files the input names (values files and `--set-file` files, each capped at
    /// [`super::input::MAX_INPUT_BYTES`]) and checks their form.
    ///
    /// # Errors
    ///
    /// [`Error::File`] for a file that cannot be read; [`Error::ValuesFile`] for a values file
    /// that is not YAML or not a mapping; [`Error::SetFile`] for a malformed `--set-file`.
    pub fn read(raw: &RawInput<'_>) -> Result<(Self, Vec<String>)> {
        let mut warnings = Vec::new();
        let mut values = Vec::with_capacity(raw.values_files.len());
        for file in raw.values_files {
            let shown = file.display().to_string();
            let text = super::input::read_text(file, "values file")?;
            let (value, found) =
                crate::yaml::parse_single(&text).map_err(|e| Error::ValuesFile {
                    path: shown.clone(),
                    message: format!("is not valid YAML: {e}"),
                })?;
            warnings.extend(found.into_iter().map(|w| format!("`{shown}`: {w}")));
            match value {
                Value::Null => {}
                Value::Object(map) => values.push((shown, map)),
                _ => {
                    return Err(Error::ValuesFile {
                        path: shown,
                        message: "must hold a mapping of parameter names to values".to_owned(),
                    })
                }
            }
        }
        let mut files = Vec::with_capacity(raw.set_files.len());
        for spec in raw.set_files {
            let set_file = |message: &str| Error::SetFile {
                spec: spec.clone(),
                message: message.to_owned(),
            };
            let Some((key, path)) = spec.split_once('=') else {
                return Err(set_file("expected `key=path`"));
            };
            let text = super::input::read_text(Path::new(path), &format!("`--set-file {key}`"))?;
            let segments: Vec<String> = key.split('.').map(str::to_owned).collect();
            if segments.iter().any(String::is_empty) {
                return Err(set_file("the key has an empty segment"));
            }
            files.push((segments, text));
        }
        let input = Input {
            values,
            pairs: raw.pairs.to_vec(),
            files,
            clusters: raw.clusters.map(<[String]>::to_vec),
        };
        Ok((input, warnings))
    }

    /// The clusters given with `--clusters`, if any (known before the input is parsed).
    #[must_use]
    pub fn clusters(&self) -> Option<&[String]> {
        self.clusters.as_deref()
    }

    /// Whether nothing at all was given.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
            && self.pairs.is_empty()
            && self.files.is_empty()
            && self.clusters.is_none()
    }

    /// Parses the input against the addon's schema: values files, then `key=value` pairs, then
    /// `--set-file` (each deep-merged over the previous), then `--clusters`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArguments`] for pairs that do not parse; [`Error::Clusters`] when
    /// `clusters` is not a list of names.
    pub fn parse(&self, schema: &ParameterSchema) -> Result<Arguments> {
        let mut merged = Value::Object(Map::new());
        for (_, map) in &self.values {
            merge_values(&mut merged, &Value::Object(map.clone()));
        }
        let pairs = schema.parse_args(&self.pairs)?;
        merge_values(&mut merged, &Value::Object(pairs));
        for (segments, text) in &self.files {
            let mut value = Value::String(text.clone());
            for segment in segments.iter().rev() {
                let mut map = Map::new();
                map.insert(segment.clone(), value);
                value = Value::Object(map);
            }
            merge_values(&mut merged, &value);
        }
        let Value::Object(map) = merged else {
            return Ok(Arguments::default());
        };
        let mut arguments = Arguments::from_map(map)?;
        if let Some(clusters) = &self.clusters {
            arguments.clusters = Some(clusters.clone());
        }
        Ok(arguments)
    }
}

/// Arguments already typed (a library caller's, or a test's): taken as one values layer.
impl From<Map<String, Value>> for Input {
    fn from(map: Map<String, Value>) -> Self {
        Input {
            values: vec![("arguments".to_owned(), map)],
            ..Input::default()
        }
    }
}

/// The typed arguments of one addon: the clusters it goes to, and the values of its parameters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Arguments {
    clusters: Option<Vec<String>>,
    values: Map<String, Value>,
}

impl Arguments {
    /// Types a map of arguments (as stored in the argument Secret, or given by a library caller).
    ///
    /// # Errors
    ///
    /// [`Error::Clusters`] when `clusters` is present and not a list of strings (`null` counts as
    /// absent).
    pub fn from_map(mut values: Map<String, Value>) -> Result<Self> {
        let clusters = match values.shift_remove(CLUSTERS) {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .into_iter()
                    .map(|item| match item {
                        Value::String(name) => Ok(name),
                        _ => Err(Error::Clusters),
                    })
                    .collect::<Result<Vec<_>>>()?,
            ),
            Some(_) => return Err(Error::Clusters),
        };
        Ok(Arguments { clusters, values })
    }

    /// The clusters the addon goes to; `None` = where its topology says.
    #[must_use]
    pub fn clusters(&self) -> Option<&[String]> {
        self.clusters.as_deref()
    }

    /// Sets the clusters the addon goes to.
    pub fn set_clusters(&mut self, clusters: Option<Vec<String>>) {
        self.clusters = clusters;
    }

    /// The values of the parameters, `clusters` aside.
    #[must_use]
    pub fn values(&self) -> &Map<String, Value> {
        &self.values
    }

    /// Whether there are no arguments at all (then no argument Secret is stored).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.clusters.is_none() && self.values.is_empty()
    }

    /// These arguments laid over `stored`: the one merge of stored and given arguments. Objects
    /// merge key by key at every depth; anything else (lists, scalars, `clusters`) given replaces
    /// what is stored.
    #[must_use]
    pub fn over(&self, stored: &Arguments) -> Arguments {
        let mut merged = Value::Object(stored.values.clone());
        merge_values(&mut merged, &Value::Object(self.values.clone()));
        let values = match merged {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Arguments {
            clusters: self.clusters.clone().or_else(|| stored.clusters.clone()),
            values,
        }
    }

    /// The arguments as one map (`clusters` last): what the argument Secret holds and what the
    /// schema resolves into values.
    #[must_use]
    pub fn to_map(&self) -> Map<String, Value> {
        let mut map = self.values.clone();
        if let Some(clusters) = &self.clusters {
            map.insert(
                CLUSTERS.to_owned(),
                Value::Array(clusters.iter().cloned().map(Value::String).collect()),
            );
        }
        map
    }
}

/// The map of a JSON object (empty for any other value): arguments written with `json!` in tests.
#[cfg(test)]
pub(crate) fn map(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// The schema of an object with these `properties` (JSON Schema), for tests.
#[cfg(test)]
pub(crate) fn object_schema(properties: Value) -> ParameterSchema {
    let schema = serde_json::json!({"type": "object", "properties": properties});
    ParameterSchema::from_json_schema(schema).unwrap()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> ParameterSchema {
        object_schema(json!({
            "resources": {"type": "object", "properties": {
                "cpu": {"type": "integer"}, "memory": {"type": "integer"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
        }))
    }

    #[test]
    fn a_partial_nested_override_keeps_the_stored_siblings() {
        let stored = Arguments::from_map(map(
            json!({"resources": {"cpu": 1, "memory": 2}, "tags": ["a", "b"], "clusters": ["x"]}),
        ))
        .unwrap();
        let given =
            Arguments::from_map(map(json!({"resources": {"cpu": 3}, "tags": ["c"]}))).unwrap();
        let merged = given.over(&stored);
        assert_eq!(
            Value::Object(merged.to_map()),
            json!({"resources": {"cpu": 3, "memory": 2}, "tags": ["c"], "clusters": ["x"]})
        );
        assert_eq!(merged.clusters(), Some(&["x".to_owned()][..]));
    }

    #[test]
    fn given_clusters_replace_the_stored_ones() {
        let stored = Arguments::from_map(map(json!({"clusters": ["a", "b"]}))).unwrap();
        let given = Arguments::from_map(map(json!({"clusters": ["c"]}))).unwrap();
        assert_eq!(given.over(&stored).clusters(), Some(&["c".to_owned()][..]));
    }

    #[test]
    fn clusters_that_are_not_a_list_of_names_are_refused() {
        for bad in [json!("a"), json!([1]), json!({"a": 1})] {
            let err = Arguments::from_map(map(json!({ "clusters": bad }))).unwrap_err();
            assert!(matches!(err, Error::Clusters), "{err}");
        }
        let none = Arguments::from_map(map(json!({"clusters": null}))).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn the_input_is_layered_files_then_pairs_then_set_files_then_clusters() {
        let dir = tempfile::tempdir().unwrap();
        let values = dir.path().join("v.yaml");
        fs_err::write(&values, "resources: {cpu: 1, memory: 2}\nclusters: [a]\n").unwrap();
        let note = dir.path().join("note.txt");
        fs_err::write(&note, "hello").unwrap();
        let pairs = vec!["resources.cpu=5".to_owned()];
        let set_files = vec![format!("extra.note={}", note.display())];
        let clusters = vec!["b".to_owned()];
        let (input, warnings) = Input::read(&RawInput {
            values_files: &[values],
            pairs: &pairs,
            set_files: &set_files,
            clusters: Some(&clusters),
        })
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let open = ParameterSchema::from_json_schema(json!({"type": "object"})).unwrap();
        let parsed = input.parse(&open).unwrap();
        assert_eq!(
            Value::Object(parsed.to_map()),
            json!({"resources": {"cpu": 5, "memory": 2}, "extra": {"note": "hello"}, "clusters": ["b"]})
        );
    }

    #[test]
    fn pairs_are_typed_by_the_schema() {
        let pairs = vec!["resources.cpu=3".to_owned(), "tags=x,y".to_owned()];
        let (input, _) = Input::read(&RawInput {
            pairs: &pairs,
            ..RawInput::default()
        })
        .unwrap();
        let parsed = input.parse(&schema()).unwrap();
        assert_eq!(
            Value::Object(parsed.to_map()),
            json!({"resources": {"cpu": 3}, "tags": ["x", "y"]})
        );
    }

    #[test]
    fn malformed_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("list.yaml");
        fs_err::write(&list, "- a\n").unwrap();
        let err = Input::read(&RawInput {
            values_files: std::slice::from_ref(&list),
            ..RawInput::default()
        })
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "values file `{}` must hold a mapping of parameter names to values",
                list.display()
            )
        );
        for (spec, message) in [
            ("nokey", "`--set-file nokey`: expected `key=path`"),
            (
                "a..b=/dev/null",
                "`--set-file a..b=/dev/null`: the key has an empty segment",
            ),
        ] {
            let specs = vec![spec.to_owned()];
            let err = Input::read(&RawInput {
                set_files: &specs,
                ..RawInput::default()
            })
            .unwrap_err();
            assert_eq!(err.to_string(), message);
        }
    }
}
