//! Walks over a parameter schema and a value together: filling defaults, masking secrets, finding
//! unknown parameters, and turning `jsonschema` errors into [`Violation`]s with dotted paths.
//!
//! Every walk follows the schema (`properties`, `additionalProperties`, `items`) and stops where the
//! schema stops, so its depth is bounded by the schema's; `$ref` and the combinators (`allOf`, …)
//! are not followed.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::{Map, Value};

use super::error::{backticked, UnknownParameter, Violation, MASK};

/// Recursion bound of the walks (schemas are checked to be shallower than this).
pub(crate) const MAX_WALK_DEPTH: usize = 128;

/// How much of an offending value a message shows.
const SHOW_LIMIT: usize = 80;

/// Compiles a schema with the options used everywhere in this module (draft detected from
/// `$schema`, 2020-12 when absent; no remote references can be resolved).
pub(crate) fn build_validator(
    schema: &Value,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    jsonschema::options().build(schema)
}

/// One step of a parameter path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

/// `a.b[2].c`.
pub(crate) fn display_path(segments: &[Segment]) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Index(index) => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// The schema of the property `key` of an object schema (`properties`, else an
/// `additionalProperties` schema).
pub(crate) fn property_schema<'s>(node: &'s Value, key: &str) -> Option<&'s Value> {
    node.get("properties")
        .and_then(|properties| properties.get(key))
        .or_else(|| node.get("additionalProperties").filter(|v| v.is_object()))
}

fn item_schema(node: &Value) -> Option<&Value> {
    node.get("items").filter(|v| v.is_object())
}

fn is_write_only(node: &Value) -> bool {
    node.get("writeOnly").and_then(Value::as_bool) == Some(true)
}

/// The schema at `segments` (if the schema describes it) and whether it is a secret or lies
/// inside one.
pub(crate) fn schema_at<'s>(root: &'s Value, segments: &[Segment]) -> (Option<&'s Value>, bool) {
    let mut node = root;
    let mut secret = is_write_only(node);
    for segment in segments {
        let next = match segment {
            Segment::Key(key) => property_schema(node, key),
            Segment::Index(_) => item_schema(node),
        };
        let Some(next) = next else {
            return (None, secret);
        };
        node = next;
        secret |= is_write_only(node);
    }
    (Some(node), secret)
}

/// `value` with every secret (a `writeOnly` schema) replaced by [`MASK`].
pub(crate) fn mask_value(node: &Value, value: &Value, depth: usize) -> Value {
    if is_write_only(node) {
        return Value::String(MASK.to_owned());
    }
    if depth > MAX_WALK_DEPTH {
        return value.clone();
    }
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, v)| {
                    let masked = match property_schema(node, key) {
                        Some(sub) => mask_value(sub, v, depth + 1),
                        None => v.clone(),
                    };
                    (key.clone(), masked)
                })
                .collect(),
        ),
        Value::Array(items) => match item_schema(node) {
            Some(sub) => Value::Array(
                items
                    .iter()
                    .map(|v| mask_value(sub, v, depth + 1))
                    .collect(),
            ),
            None => value.clone(),
        },
        _ => value.clone(),
    }
}

/// Compact JSON, shortened for messages.
pub(crate) fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > SHOW_LIMIT {
        text.chars().take(SHOW_LIMIT).collect::<String>() + "…"
    } else {
        text
    }
}

/// Fills absent properties that have a `default`, recursively (inside given objects, list items
/// and map values too). Objects with declared properties come out in declaration order.
pub(crate) fn fill_defaults(node: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = node.get("properties").and_then(Value::as_object);
            let extra = node.get("additionalProperties").filter(|v| v.is_object());
            if let Some(properties) = properties {
                let mut given = std::mem::take(map);
                let mut ordered = Map::with_capacity(given.len().max(properties.len()));
                for (name, sub) in properties {
                    let entry = match given.remove(name) {
                        Some(v) => Some(v),
                        None => sub.get("default").cloned(),
                    };
                    if let Some(mut v) = entry {
                        fill_defaults(sub, &mut v, depth + 1);
                        ordered.insert(name.clone(), v);
                    }
                }
                for (name, mut v) in given {
                    if let Some(extra) = extra {
                        fill_defaults(extra, &mut v, depth + 1);
                    }
                    ordered.insert(name, v);
                }
                *map = ordered;
            } else if let Some(extra) = extra {
                for v in map.values_mut() {
                    fill_defaults(extra, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = item_schema(node) {
                for v in items {
                    fill_defaults(sub, v, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Parses a dotted path as users and messages write it: `a.b`, `a[2].c`, `a.2.c`.
pub(crate) fn parse_path(path: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    for part in path.split('.') {
        let (name, mut rest) = match part.find('[') {
            Some(at) => part.split_at(at),
            None => (part, ""),
        };
        if !name.is_empty() {
            segments.push(Segment::Key(name.to_owned()));
        }
        while let Some(inner) = rest.strip_prefix('[') {
            let Some((index, after)) = inner.split_once(']') else {
                segments.push(Segment::Key(rest.to_owned()));
                break;
            };
            match index.parse::<usize>() {
                Ok(index) => segments.push(Segment::Index(index)),
                Err(_) => segments.push(Segment::Key(index.to_owned())),
            }
            rest = after;
        }
    }
    segments
}

/// Keywords whose value maps names to schemas.
const SCHEMA_MAP_KEYWORDS: [&str; 5] = [
    "properties",
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];

/// Keywords whose value is data, not a schema.
const DATA_KEYWORDS: [&str; 4] = ["default", "enum", "const", "examples"];

/// Counts the `writeOnly: true` schemas anywhere in a schema document.
pub(crate) fn count_write_only(node: &Value, depth: usize) -> usize {
    let Value::Object(map) = node else {
        return 0;
    };
    if depth > MAX_WALK_DEPTH {
        return 0;
    }
    let mut count = usize::from(is_write_only(node));
    for (key, value) in map {
        if DATA_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        match value {
            Value::Object(sub) if SCHEMA_MAP_KEYWORDS.contains(&key.as_str()) => {
                count += sub
                    .values()
                    .map(|v| count_write_only(v, depth + 1))
                    .sum::<usize>();
            }
            Value::Object(_) => count += count_write_only(value, depth + 1),
            Value::Array(items) => {
                count += items
                    .iter()
                    .map(|v| count_write_only(v, depth + 1))
                    .sum::<usize>();
            }
            _ => {}
        }
    }
    count
}

/// Counts the `writeOnly: true` schemas that the walks of this module reach (through
/// `properties`, `additionalProperties` and `items`), and so can mask.
pub(crate) fn count_reachable_write_only(node: &Value, depth: usize) -> usize {
    if depth > MAX_WALK_DEPTH {
        return 0;
    }
    let mut count = usize::from(is_write_only(node));
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        count += properties
            .values()
            .map(|v| count_reachable_write_only(v, depth + 1))
            .sum::<usize>();
    }
    for keyword in ["additionalProperties", "items"] {
        if let Some(sub) = node.get(keyword).filter(|v| v.is_object()) {
            count += count_reachable_write_only(sub, depth + 1);
        }
    }
    count
}

/// Keywords that make the set of allowed properties more than `properties` says.
const OPENING_KEYWORDS: [&str; 9] = [
    "$ref",
    "$dynamicRef",
    "allOf",
    "anyOf",
    "oneOf",
    "if",
    "patternProperties",
    "dependentSchemas",
    "unevaluatedProperties",
];

/// The names of the properties declared at `node`, as dotted paths under `segments`.
pub(crate) fn known_at(node: &Value, segments: &[Segment]) -> Vec<String> {
    node.get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .keys()
                .map(|key| {
                    let mut path = segments.to_vec();
                    path.push(Segment::Key(key.clone()));
                    display_path(&path)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Collects the keys of `value` that the schema does not declare. The top level is closed unless
/// the schema opens it explicitly; nested objects are closed by `additionalProperties: false`.
pub(crate) fn find_unknown(
    node: &Value,
    value: &Value,
    segments: &mut Vec<Segment>,
    out: &mut Vec<UnknownParameter>,
) {
    if segments.len() > MAX_WALK_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = node.get("properties").and_then(Value::as_object);
            let additional = node.get("additionalProperties");
            let closed = match additional {
                Some(Value::Bool(false)) => true,
                None => segments.is_empty() && properties.is_some(),
                Some(_) => false,
            } && !OPENING_KEYWORDS.iter().any(|k| node.get(*k).is_some());
            for (key, v) in map {
                segments.push(Segment::Key(key.clone()));
                match property_schema(node, key) {
                    Some(sub) => find_unknown(sub, v, segments, out),
                    None if closed => {
                        let parent = &segments[..segments.len() - 1];
                        out.push(UnknownParameter {
                            path: display_path(segments),
                            known: known_at(node, parent),
                        });
                    }
                    None => {}
                }
                segments.pop();
            }
        }
        Value::Array(items) => {
            if let Some(sub) = item_schema(node) {
                for (index, v) in items.iter().enumerate() {
                    segments.push(Segment::Index(index));
                    find_unknown(sub, v, segments, out);
                    segments.pop();
                }
            }
        }
        _ => {}
    }
}

/// Splits a JSON pointer into segments, using the instance to tell array indices from keys.
fn pointer_segments(pointer: &str, instance: &Value) -> Vec<Segment> {
    let mut current = Some(instance);
    let mut segments = Vec::new();
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        match (current, token.parse::<usize>()) {
            (Some(Value::Array(items)), Ok(index)) => {
                current = items.get(index);
                segments.push(Segment::Index(index));
            }
            (Some(Value::Object(map)), _) => {
                current = map.get(&token);
                segments.push(Segment::Key(token));
            }
            _ => {
                current = None;
                segments.push(Segment::Key(token));
            }
        }
    }
    segments
}

/// Every violation of `schema` by `instance`, with dotted paths and masked values.
pub(crate) fn violations(
    validator: &jsonschema::Validator,
    schema: &Value,
    instance: &Value,
) -> Vec<Violation> {
    let mut out: Vec<Violation> = Vec::new();
    for error in validator.iter_errors(instance) {
        let segments = pointer_segments(error.instance_path().as_str(), instance);
        let found: Vec<Violation> = match error.kind() {
            ValidationErrorKind::Required { property } => {
                let mut path = segments.clone();
                let name = property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_owned);
                path.push(Segment::Key(name.clone()));
                // A missing struct is missing what it requires: name those fields.
                let node = schema_at(schema, &segments)
                    .0
                    .and_then(|parent| property_schema(parent, &name));
                let mut leaves = Vec::new();
                missing_fields(node, &mut path, &mut leaves);
                leaves
                    .into_iter()
                    .map(|path| Violation {
                        path,
                        rule: "missing required parameter".to_owned(),
                        value: None,
                    })
                    .collect()
            }
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                let (node, _) = schema_at(schema, &segments);
                let known = node.map(|n| known_at(n, &segments)).unwrap_or_default();
                unexpected
                    .iter()
                    .map(|name| {
                        let mut path = segments.clone();
                        path.push(Segment::Key(name.clone()));
                        Violation {
                            path: display_path(&path),
                            rule: format!(
                                "unknown parameter; known parameters: {}",
                                backticked(&known)
                            ),
                            value: None,
                        }
                    })
                    .collect()
            }
            kind => {
                let (node, secret) = schema_at(schema, &segments);
                let value = if secret {
                    MASK.to_owned()
                } else {
                    let instance = error.instance();
                    match node {
                        Some(node) => show(&mask_value(node, instance, 0)),
                        None => show(instance),
                    }
                };
                vec![Violation {
                    path: display_path(&segments),
                    rule: rule(kind),
                    value: Some(value),
                }]
            }
        };
        for violation in found {
            if !out.contains(&violation) {
                out.push(violation);
            }
        }
    }
    out
}

/// The paths of what a missing value at `path` (of schema `node`) lacks: for an object that
/// requires fields without defaults, each of them (recursively, as far as they require more);
/// else `path`.
fn missing_fields(node: Option<&Value>, path: &mut Vec<Segment>, out: &mut Vec<String>) {
    let required: Vec<&str> = node
        .filter(|_| path.len() <= MAX_WALK_DEPTH)
        .and_then(|n| n.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|name| {
            node.and_then(|n| property_schema(n, name))
                .is_none_or(|sub| sub.get("default").is_none())
        })
        .collect();
    if required.is_empty() {
        out.push(display_path(path));
        return;
    }
    for name in required {
        path.push(Segment::Key(name.to_owned()));
        missing_fields(node.and_then(|n| property_schema(n, name)), path, out);
        path.pop();
    }
}

/// The rule a `jsonschema` error kind stands for, worded as a requirement.
fn rule(kind: &ValidationErrorKind) -> String {
    match kind {
        ValidationErrorKind::Type { kind } => match kind {
            TypeKind::Single(t) => format!("expected {t}"),
            TypeKind::Multiple(set) => format!(
                "expected {}",
                set.iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        },
        ValidationErrorKind::Minimum { limit } => format!("must be >= {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("must be <= {limit}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => format!("must be > {limit}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!("must be < {limit}"),
        ValidationErrorKind::MinLength { limit } => {
            format!(
                "must be at least {limit} {} long",
                plural(*limit, "character")
            )
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!(
                "must be at most {limit} {} long",
                plural(*limit, "character")
            )
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("must have at least {limit} {}", plural(*limit, "item"))
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("must have at most {limit} {}", plural(*limit, "item"))
        }
        ValidationErrorKind::MinProperties { limit } => {
            format!("must have at least {limit} {}", plural(*limit, "entry"))
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!("must have at most {limit} {}", plural(*limit, "entry"))
        }
        ValidationErrorKind::Pattern { pattern } => format!("must match the pattern `{pattern}`"),
        ValidationErrorKind::BacktrackLimitExceeded { .. }
        | ValidationErrorKind::RegexEngineFailure { .. } => {
            "cannot be checked against its pattern (the regular expression is too costly)"
                .to_owned()
        }
        ValidationErrorKind::Enum { options } => {
            let options: Vec<String> = options
                .as_array()
                .map(|values| values.iter().map(plain).collect())
                .unwrap_or_default();
            format!("must be one of {}", backticked(&options))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("must be `{}`", plain(expected_value))
        }
        ValidationErrorKind::Format { format } => format!("must be a valid `{format}`"),
        ValidationErrorKind::UniqueItems => "must not contain duplicate items".to_owned(),
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("must be a multiple of {multiple_of}")
        }
        ValidationErrorKind::FalseSchema => "is not allowed".to_owned(),
        ValidationErrorKind::AnyOf { .. } | ValidationErrorKind::OneOfNotValid { .. } => {
            "does not match any of the allowed forms".to_owned()
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "matches more than one of the mutually exclusive forms".to_owned()
        }
        ValidationErrorKind::Not { .. } => "must not match the excluded form".to_owned(),
        ValidationErrorKind::Contains => "must contain at least one matching item".to_owned(),
        ValidationErrorKind::PropertyNames { .. } => "has a key that is not allowed".to_owned(),
        other => format!("does not satisfy `{}`", other.keyword()),
    }
}

fn plural(n: u64, word: &str) -> String {
    match (n, word) {
        (1, _) => word.to_owned(),
        (_, "entry") => "entries".to_owned(),
        _ => format!("{word}s"),
    }
}

/// A string without its quotes, anything else as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_parse_and_display_round_trip() {
        let table: &[(&str, Vec<Segment>, &str)] = &[
            ("a", vec![Segment::Key("a".into())], "a"),
            (
                "a.b",
                vec![Segment::Key("a".into()), Segment::Key("b".into())],
                "a.b",
            ),
            (
                "a[2].c",
                vec![
                    Segment::Key("a".into()),
                    Segment::Index(2),
                    Segment::Key("c".into()),
                ],
                "a[2].c",
            ),
            (
                "a[1][2]",
                vec![
                    Segment::Key("a".into()),
                    Segment::Index(1),
                    Segment::Index(2),
                ],
                "a[1][2]",
            ),
            (
                "a.0",
                vec![Segment::Key("a".into()), Segment::Key("0".into())],
                "a.0",
            ),
            (
                "a[x]",
                vec![Segment::Key("a".into()), Segment::Key("x".into())],
                "a.x",
            ),
        ];
        for (path, segments, shown) in table {
            assert_eq!(&parse_path(path), segments, "{path}");
            assert_eq!(display_path(segments), *shown, "{path}");
        }
    }

    #[test]
    fn pointers_tell_indices_from_numeric_keys_by_the_instance() {
        let instance = json!({"list": [{"a/b": 1}], "map": {"0": {"~": 2}}});
        assert_eq!(
            display_path(&pointer_segments("/list/0/a~1b", &instance)),
            "list[0].a/b"
        );
        assert_eq!(
            display_path(&pointer_segments("/map/0/~0", &instance)),
            "map.0.~"
        );
        assert_eq!(display_path(&pointer_segments("", &instance)), "");
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let long = Value::String("x".repeat(200));
        let shown = show(&long);
        assert_eq!(shown.chars().count(), SHOW_LIMIT + 1);
        assert!(shown.ends_with('…'));
        assert_eq!(show(&json!({"a": 1})), r#"{"a":1}"#);
    }

    #[test]
    fn write_only_counts_skip_data_and_follow_schema_maps() {
        let schema = json!({
            "properties": {
                "a": {"writeOnly": true},
                "b": {"type": "array", "items": {"writeOnly": true}},
                "c": {"default": {"writeOnly": true}, "enum": [{"writeOnly": true}]},
                "writeOnly": {"type": "string"},
            },
            "additionalProperties": {"writeOnly": true},
        });
        assert_eq!(count_write_only(&schema, 0), 3);
        assert_eq!(count_reachable_write_only(&schema, 0), 3);
        let hidden = json!({"$defs": {"s": {"writeOnly": true}}, "properties": {"a": {"$ref": "#/$defs/s"}}});
        assert_eq!(count_write_only(&hidden, 0), 1);
        assert_eq!(count_reachable_write_only(&hidden, 0), 0);
    }
}
