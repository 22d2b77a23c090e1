//! Loading an addon for lint: every problem of its files is reported, and what can still be
//! checked is. A `metadata.yaml` that cannot be read (invalid YAML, a required key missing or
//! misspelt, a value of the wrong shape) is reported key by key and replaced by a stand-in (the
//! keys that can be read, a name made from the directory, version `0.0.0`); a file that is not
//! UTF-8 and the second of two templates or notes are reported and left out. The rest of the
//! addon is then checked as usual.
//!
//! Findings name the addon as its `metadata.yaml` does when the name can be read there (under a
//! misspelt key too), else by its directory.

use serde_json::{Map, Value};

use super::{key_position, Location, Severity, Sink};
use crate::loader::{self, classify};
use crate::model::{metadata, AddonMeta, AddonPackage, MetadataError};
use crate::source::local::{LocalReader, LOCAL_REGISTRY};

/// The keys `metadata.yaml` must have.
const REQUIRED: &[&str] = &["name", "version"];

/// At most this many problems of `metadata.yaml` (each found by reading it again without the
/// key before) and of the files (two templates, …) are reported.
const MAX_ROUNDS: usize = 16;

/// An addon as lint reads it.
pub(super) struct Loaded {
    /// The package (with a stand-in `metadata.yaml` when the addon's cannot be read).
    pub(super) package: AddonPackage,
    /// `metadata.yaml` as written (empty when there is none).
    pub(super) metadata_text: String,
    /// `metadata.yaml` as written, parsed (`Null` when it is not YAML).
    pub(super) metadata_raw: Value,
    /// Unknown keys already reported as the misspelling of a missing required key.
    pub(super) reported_keys: Vec<String>,
}

/// Reads and loads the addon; `None` (with a finding) when nothing of it can be read.
pub(super) async fn load(
    dir: &std::path::Path,
    label: &str,
    sink: &mut Sink<'_>,
) -> Option<Loaded> {
    let (mut files, skipped) = read(dir, sink).await?;
    let metadata_path = files
        .iter()
        .find(|(path, _)| classify::classify(path) == classify::FileKind::Metadata)
        .map(|(path, _)| path.clone());
    let metadata_text = files
        .iter()
        .find(|(path, _)| Some(path) == metadata_path.as_ref())
        .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
        .unwrap_or_default();
    // Findings name the addon as its metadata does, when it can be read.
    if let Some(name) = readable_name(&metadata_text) {
        sink.addon = name;
    }
    for why in skipped {
        // The reason starts with the path in back-ticks.
        let location = why
            .strip_prefix('`')
            .and_then(|rest| rest.split_once('`'))
            .map(|(path, _)| Location::file(path))
            .unwrap_or_default();
        sink.at(
            Severity::Error,
            "skipped-file",
            location,
            format!("{why}: addonctl does not read it, so the addon would be incomplete; copy the file into the addon or remove the link"),
        );
    }
    files.retain(|(path, bytes)| {
        let text = classify::classify(path) == classify::FileKind::Ignored
            || std::str::from_utf8(bytes).is_ok();
        if !text {
            sink.at(
                Severity::Error,
                "load-error",
                Location::file(path),
                "the file is not valid UTF-8 text; addonctl reads addon files as UTF-8: save it as UTF-8 (the rest of the addon is checked without it)".to_owned(),
            );
        }
        text
    });
    let checked = check_metadata(metadata_path.is_some(), &metadata_text, label, sink);
    if let Some(stand_in) = &checked.stand_in {
        let path = metadata_path.unwrap_or_else(|| "metadata.yaml".to_owned());
        files.retain(|(p, _)| *p != path);
        files.push((path, stand_in.clone().into_bytes()));
    }
    for _ in 0..MAX_ROUNDS {
        let error = match loader::from_files(LOCAL_REGISTRY, label, files.clone()) {
            Ok(mut package) => {
                if checked.stand_in.is_some() {
                    // The stand-in has no duplicated keys; the file as written may have.
                    package.warnings.extend(
                        checked
                            .warnings
                            .iter()
                            .map(|w| format!("`metadata.yaml`: {w}")),
                    );
                }
                return Some(Loaded {
                    package,
                    metadata_text,
                    metadata_raw: checked.raw,
                    reported_keys: checked.reported_keys,
                });
            }
            Err(e) => e,
        };
        let left_out = match &error {
            loader::Error::TwoTemplates { first, second, .. } => {
                sink.at(
                    Severity::Error,
                    "load-error",
                    Location::file(second),
                    format!("both `{first}` and `{second}` exist; keep one of them (the rest of the addon is checked with `{first}`)"),
                );
                second.clone()
            }
            loader::Error::TwoNotes { .. } => {
                sink.at(
                    Severity::Error,
                    "load-error",
                    Location::file("NOTES.rhai"),
                    "both `NOTES.cue` and `NOTES.rhai` exist; keep one of them (the rest of the addon is checked with `NOTES.cue`)".to_owned(),
                );
                "NOTES.rhai".to_owned()
            }
            other => {
                sink.push(
                    Severity::Error,
                    "load-error",
                    without_addon(&other.to_string()),
                );
                return None;
            }
        };
        files.retain(|(path, _)| *path != left_out);
    }
    None
}

/// The files of the addon and why some were not read (links leaving it); `None` with a finding
/// when the directory cannot be read.
async fn read(
    dir: &std::path::Path,
    sink: &mut Sink<'_>,
) -> Option<(Vec<(String, Vec<u8>)>, Vec<String>)> {
    let read = match LocalReader::new(dir) {
        Ok(reader) => {
            reader
                .read_tree_checked(|p| classify::classify(p) != classify::FileKind::Ignored)
                .await
        }
        Err(e) => Err(e),
    };
    match read {
        Ok(read) => Some(read),
        Err(e) => {
            sink.push(Severity::Error, "load-error", e.to_string());
            None
        }
    }
}

/// `message` without the `addon \`x\`: ` the loader and the renderer start theirs with (the
/// finding names its addon).
pub(super) fn without_addon(message: &str) -> String {
    message
        .strip_prefix("addon `")
        .and_then(|rest| rest.split_once("`: "))
        .map_or_else(|| message.to_owned(), |(_, rest)| rest.to_owned())
}

/// What reading `metadata.yaml` found.
struct MetadataCheck {
    /// The text to load instead of the addon's, when that cannot be read.
    stand_in: Option<String>,
    /// The document as written (`Null` when it is not YAML).
    raw: Value,
    /// The warnings of reading it (duplicated keys, …).
    warnings: Vec<String>,
    /// Unknown keys reported here as a misspelt required key.
    reported_keys: Vec<String>,
}

/// Reports every problem of `metadata.yaml` and, when there is one, makes the stand-in.
fn check_metadata(exists: bool, text: &str, label: &str, sink: &mut Sink<'_>) -> MetadataCheck {
    let mut check = MetadataCheck {
        stand_in: None,
        raw: Value::Null,
        warnings: Vec::new(),
        reported_keys: Vec::new(),
    };
    if !exists {
        sink.at(
            Severity::Error,
            "load-error",
            Location::file("metadata.yaml"),
            "the addon has no `metadata.yaml` it can read; every addon needs one with at least `name` and `version`".to_owned(),
        );
        check.stand_in = Some(stand_in_text(Map::new(), label));
        return check;
    }
    if AddonMeta::parse(text).is_ok() {
        check.raw = crate::yaml::parse_single(text)
            .map(|(raw, _)| raw)
            .unwrap_or_default();
        return check;
    }
    let mut map = match crate::yaml::parse_single(text) {
        Ok((Value::Object(map), warnings)) => {
            check.raw = Value::Object(map.clone());
            check.warnings = warnings;
            map
        }
        Ok((other, warnings)) => {
            check.raw = other;
            check.warnings = warnings;
            sink.at(
                Severity::Error,
                "load-error",
                line_one(),
                "the document must be a mapping with at least `name` and `version`".to_owned(),
            );
            check.stand_in = Some(stand_in_text(Map::new(), label));
            return check;
        }
        Err(e) => {
            sink.at(
                Severity::Error,
                "load-error",
                yaml_error_location(&e.message),
                format!("not valid YAML: {}", e.message),
            );
            check.stand_in = Some(stand_in_text(Map::new(), label));
            return check;
        }
    };
    for (required, typo) in misspelt_required_keys(&check.raw, &mut map) {
        let location = key_position(text, &typo).map_or_else(
            || Location::file("metadata.yaml"),
            |(l, c)| Location::at("metadata.yaml", l, c),
        );
        sink.at(
            Severity::Error,
            "unknown-metadata-key",
            location,
            format!(
                "`{required}` is required, and `{typo}` is no known key: did you mean `{required}`?"
            ),
        );
        check.reported_keys.push(typo);
    }
    for _ in 0..MAX_ROUNDS {
        let Err(error) = AddonMeta::parse(&Value::Object(map.clone()).to_string()) else {
            break;
        };
        let MetadataError::Field(message) = error else {
            // The text was made from JSON: it is YAML.
            map = Map::new();
            break;
        };
        let key = named_key(&message);
        let location = key
            .as_deref()
            .and_then(|key| key_position(text, key))
            .map_or_else(line_one, |(l, c)| Location::at("metadata.yaml", l, c));
        sink.at(Severity::Error, "load-error", location, message);
        // Read the file again without what is wrong, for the next problem.
        match key.as_deref() {
            Some("name") => {
                map.insert("name".into(), Value::String(name_from(label)));
            }
            Some("version") => {
                map.insert("version".into(), Value::String("0.0.0".into()));
            }
            Some(key) if map.remove(key).is_some() => {}
            _ => {
                map = Map::new();
                break;
            }
        }
    }
    check.stand_in = Some(stand_in_text(map, label));
    check
}

/// Required keys that are missing while an unknown key is within a typo of one (`verison:`):
/// each (required key, unknown key), the value moved to the required key in `map`.
fn misspelt_required_keys(
    raw: &Value,
    map: &mut Map<String, Value>,
) -> Vec<(&'static str, String)> {
    let unknown = metadata::unknown_keys(raw);
    let mut out = Vec::new();
    for required in REQUIRED {
        if map.get(*required).is_some_and(|v| !v.is_null()) {
            continue;
        }
        let Some(typo) = unknown
            .iter()
            .find(|u| u.path == u.key && u.suggestion == Some(*required))
        else {
            continue;
        };
        if let Some(value) = map.remove(&typo.key) {
            map.insert((*required).to_owned(), value);
        }
        out.push((*required, typo.key.clone()));
    }
    out
}

/// The addon's name as `metadata.yaml` gives it, when it is a valid one (under a misspelt key
/// too).
fn readable_name(text: &str) -> Option<String> {
    let Ok((raw @ Value::Object(_), _)) = crate::yaml::parse_single(text) else {
        return None;
    };
    let mut map = raw.as_object().cloned().unwrap_or_default();
    misspelt_required_keys(&raw, &mut map);
    map.get("name")
        .and_then(Value::as_str)
        .filter(|name| metadata::is_valid_name(name))
        .map(str::to_owned)
}

/// The top-level key a metadata error names first: `dependencies` for "`dependencies[0].name`
/// is required".
fn named_key(message: &str) -> Option<String> {
    let (_, rest) = message.split_once('`')?;
    let (quoted, _) = rest.split_once('`')?;
    let key = quoted.split(['.', '[']).next().unwrap_or(quoted);
    (!key.is_empty()).then(|| key.to_owned())
}

/// `metadata.yaml` line 1: where a problem of the whole document (a key missing) is placed.
fn line_one() -> Location {
    Location {
        file: Some("metadata.yaml".to_owned()),
        line: Some(1),
        column: None,
    }
}

/// The place a YAML parser's message names (`… at line 3 column 7 …`), else line 1.
fn yaml_error_location(message: &str) -> Location {
    let number_after = |word: &str| -> Option<usize> {
        let (_, rest) = message.split_once(word)?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    match (number_after("line "), number_after(" column ")) {
        (Some(line), Some(column)) => Location::at("metadata.yaml", line, column),
        (Some(line), None) => Location {
            file: Some("metadata.yaml".to_owned()),
            line: Some(line),
            column: None,
        },
        _ => line_one(),
    }
}

/// A `metadata.yaml` that loads: `map` (what could be read of the addon's) with a valid name
/// (from the directory when the addon's is missing or invalid) and a version.
fn stand_in_text(mut map: Map<String, Value>, label: &str) -> String {
    let name_ok = map
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(metadata::is_valid_name);
    if !name_ok {
        map.insert("name".into(), Value::String(name_from(label)));
    }
    let version_ok = map
        .get("version")
        .is_some_and(|v| v.as_str().is_some_and(|s| !s.trim().is_empty()) || v.is_number());
    if !version_ok {
        map.insert("version".into(), Value::String("0.0.0".into()));
    }
    let text = Value::Object(map.clone()).to_string();
    if AddonMeta::parse(&text).is_ok() {
        return text;
    }
    let mut minimal = Map::new();
    for key in REQUIRED {
        if let Some(value) = map.get(*key) {
            minimal.insert((*key).to_owned(), value.clone());
        }
    }
    Value::Object(minimal).to_string()
}

/// A valid addon name made from a directory name: lowercase, runs of other characters as `-`.
fn name_from(label: &str) -> String {
    let mut name = String::new();
    for c in label.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    let mut name: String = name.chars().take(63).collect();
    while name.ends_with('-') {
        name.pop();
    }
    if name.is_empty() {
        "addon".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_load() {
        for label in ["My_Addon", "---", "x", &"a-".repeat(40)] {
            let name = name_from(label);
            assert!(metadata::is_valid_name(&name), "{label} -> {name}");
        }
        let mut map = Map::new();
        map.insert("name".into(), Value::String("Bad Name".into()));
        map.insert("tags".into(), Value::String("not a list".into()));
        let text = stand_in_text(map, "dir");
        assert!(AddonMeta::parse(&text).is_ok(), "{text}");
    }

    #[test]
    fn metadata_errors_name_their_key_and_yaml_errors_their_place() {
        assert_eq!(
            named_key("`dependencies[0].name` is required").as_deref(),
            Some("dependencies")
        );
        assert_eq!(
            named_key("`deployTo.runtimeCluster` must be true or false").as_deref(),
            Some("deployTo")
        );
        assert_eq!(named_key("no key here"), None);
        assert_eq!(
            yaml_error_location(
                "did not find expected node content at line 2 column 10, while parsing"
            ),
            Location::at("metadata.yaml", 2, 10)
        );
        assert_eq!(yaml_error_location("oops"), line_one());
        assert_eq!(without_addon("addon `x`: `a`: b"), "`a`: b");
        assert_eq!(without_addon("plain"), "plain");
    }
}
