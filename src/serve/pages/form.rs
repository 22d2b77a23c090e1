//! The form an addon's parameter JSON Schema gives, and the values a submitted form gives back.
//!
//! Each property becomes a field named `p.<dotted path>`: strings and numbers as inputs with the
//! schema's bounds, enums and booleans as selects, nested objects as fieldsets, lists as one
//! item per line (or JSON), free-form objects as YAML/JSON, secrets (`writeOnly: true`, or
//! `x-secret: true`) as password inputs that are never filled in. An empty field is not sent,
//! so the parameter's default applies. The server's own validation decides: a value that does
//! not convert to the declared type is sent as text, and the server's message comes back at
//! the field.

use serde_json::{Map, Value};

use crate::serve::error::FieldError;

/// The prefix of every parameter field's name.
pub const PREFIX: &str = "p.";

/// How deep nested objects become fieldsets; deeper ones are one YAML field.
const MAX_DEPTH: usize = 6;

/// One row of the form: a fieldset opening, a field, or a fieldset's end.
#[derive(Debug, Clone)]
pub struct Item {
    /// A nested object starts here.
    pub open: Option<Group>,
    /// A field.
    pub field: Option<Field>,
    /// The innermost fieldset ends here.
    pub close: bool,
}

/// A nested object's fieldset.
#[derive(Debug, Clone)]
pub struct Group {
    /// Its dotted path.
    pub path: String,
    /// Its description.
    pub description: String,
}

/// One option of a select.
#[derive(Debug, Clone)]
pub struct Choice {
    /// The value sent.
    pub value: String,
    /// What is shown.
    pub label: String,
    /// Chosen now.
    pub selected: bool,
}

/// How a field is entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// `<input>` of [`Field::input_type`].
    Input,
    /// `<select>` of [`Field::choices`].
    Select,
    /// `<textarea>`: one item per line, or JSON/YAML.
    Text,
}

/// One parameter's field.
#[derive(Debug, Clone)]
pub struct Field {
    /// Its dotted path (`resources.cpu`), as the server names it in errors.
    pub path: String,
    /// The path's segments.
    segments: Vec<String>,
    /// The form field's name (`p.resources.cpu`).
    pub name: String,
    /// The element id.
    pub id: String,
    /// Its description (the schema's `description`).
    pub description: String,
    /// How it is entered.
    pub control: Control,
    /// `text`, `number`, `password`, `url`, `email`.
    pub input_type: &'static str,
    /// `step` of a number input.
    pub step: &'static str,
    /// The choices of a select.
    pub choices: Vec<Choice>,
    /// Required (and no default to fall back on).
    pub required: bool,
    /// `min` of a number input.
    pub min: Option<String>,
    /// `max` of a number input.
    pub max: Option<String>,
    /// `minlength`.
    pub min_length: Option<u64>,
    /// `maxlength`.
    pub max_length: Option<u64>,
    /// The HTML `pattern` (the schema's, anchored as HTML anchors it).
    pub pattern: Option<String>,
    /// The schema's pattern as written (shown in the hint).
    pub pattern_shown: Option<String>,
    /// The text in the field now (never a secret's).
    pub value: String,
    /// The default, as text, when there is one.
    pub default_text: Option<String>,
    /// A secret: a password input, never filled in.
    pub secret: bool,
    /// How to enter it (one item per line, JSON…).
    pub hint: String,
    /// The server's message about it.
    pub error: Option<String>,
    /// The schema of the field.
    schema: Value,
}

impl Field {
    /// The id of the field's description, for `aria-describedby`.
    pub fn described_by(&self) -> String {
        let mut ids = vec![format!("{}-help", self.id)];
        if self.error.is_some() {
            ids.push(format!("{}-error", self.id));
        }
        ids.join(" ")
    }
}

/// Whether `schema` marks a secret.
pub fn is_secret(schema: &Value) -> bool {
    schema.get("writeOnly").and_then(Value::as_bool) == Some(true)
        || schema.get("x-secret").and_then(Value::as_bool) == Some(true)
}

/// The schema's first type other than `null` (`type` may be a list).
fn type_of(schema: &Value) -> &str {
    match schema.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or(""),
        _ => {
            if schema.get("properties").is_some() {
                "object"
            } else {
                ""
            }
        }
    }
}

/// A value as a field shows it: strings bare, the rest as JSON.
pub fn display(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The rows of the form of `schema`, filled with `given` (the submitted texts, by field name)
/// and `errors` (the server's, by parameter path). Fields that appear in no row's path — the
/// errors not placed at a field — are answered too.
pub fn build(
    schema: &Value,
    given: &[(String, String)],
    errors: &[FieldError],
) -> (Vec<Item>, Vec<FieldError>) {
    let mut items = Vec::new();
    walk(schema, &mut Vec::new(), true, given, &mut items, 0);
    let mut unplaced = Vec::new();
    for error in errors {
        let field = items
            .iter_mut()
            .filter_map(|i| i.field.as_mut())
            .find(|f| placed_at(&error.path, &f.path));
        match field {
            Some(field) => {
                let message = match &field.error {
                    Some(before) => format!("{before}; {}", error.message),
                    None => error.message.clone(),
                };
                field.error = Some(message);
            }
            None => unplaced.push(error.clone()),
        }
    }
    (items, unplaced)
}

/// Whether the server's error at `error_path` is about the field at `field_path` (itself, or an
/// item or key inside a list or free-form field).
fn placed_at(error_path: &str, field_path: &str) -> bool {
    error_path == field_path
        || error_path
            .strip_prefix(field_path)
            .is_some_and(|rest| rest.starts_with('[') || rest.starts_with('.'))
}

fn walk(
    schema: &Value,
    segments: &mut Vec<String>,
    required_chain: bool,
    given: &[(String, String)],
    items: &mut Vec<Item>,
    depth: usize,
) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, property) in properties {
        if depth == 0 && name == "clusters" {
            // The request's own field (the clusters to reach) stands for it.
            continue;
        }
        segments.push(name.clone());
        let is_required = required_chain && required.contains(&name.as_str());
        let nested = type_of(property) == "object"
            && property
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty())
            && depth < MAX_DEPTH
            && !is_secret(property);
        if nested {
            items.push(Item {
                open: Some(Group {
                    path: segments.join("."),
                    description: text(property, "description"),
                }),
                field: None,
                close: false,
            });
            walk(property, segments, is_required, given, items, depth + 1);
            items.push(Item {
                open: None,
                field: None,
                close: true,
            });
        } else {
            items.push(Item {
                open: None,
                field: Some(field(property, segments, is_required, given)),
                close: false,
            });
        }
        segments.pop();
    }
}

fn text(schema: &Value, key: &str) -> String {
    schema
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn number_text(schema: &Value, key: &str) -> Option<String> {
    schema
        .get(key)
        .filter(|v| v.is_number())
        .map(Value::to_string)
}

fn field(schema: &Value, segments: &[String], required: bool, given: &[(String, String)]) -> Field {
    let path = segments.join(".");
    let name = format!("{PREFIX}{path}");
    let id = format!(
        "f-{}",
        path.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>()
    );
    let secret = is_secret(schema);
    let kind = type_of(schema);
    let default = schema.get("default");
    let default_text = default.filter(|_| !secret).map(|d| match kind {
        "array" => list_text(d),
        "object" => yaml_text(d),
        _ => display(d),
    });
    let submitted = given
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.clone());
    let value = if secret {
        String::new()
    } else {
        submitted.clone().unwrap_or_default()
    };
    let mut field = Field {
        path: path.clone(),
        segments: segments.to_vec(),
        name,
        id,
        description: text(schema, "description"),
        control: Control::Input,
        input_type: "text",
        step: "any",
        choices: Vec::new(),
        required: required && default.is_none(),
        min: None,
        max: None,
        min_length: schema.get("minLength").and_then(Value::as_u64),
        max_length: schema.get("maxLength").and_then(Value::as_u64),
        pattern: None,
        pattern_shown: None,
        value,
        default_text,
        secret,
        hint: String::new(),
        error: None,
        schema: schema.clone(),
    };
    if let Some(choices) = schema.get("enum").and_then(Value::as_array) {
        field.control = Control::Select;
        let current = submitted.unwrap_or_default();
        let mut options = vec![Choice {
            value: String::new(),
            label: match &field.default_text {
                Some(d) => format!("(default: {d})"),
                None => "(not set)".to_owned(),
            },
            selected: current.is_empty(),
        }];
        options.extend(choices.iter().map(|c| {
            let value = display(c);
            Choice {
                selected: !current.is_empty() && value == current,
                label: value.clone(),
                value,
            }
        }));
        field.choices = options;
        return field;
    }
    match kind {
        "boolean" => {
            field.control = Control::Select;
            let current = submitted.unwrap_or_default();
            field.choices = [
                (
                    "",
                    field
                        .default_text
                        .as_ref()
                        .map_or_else(|| "(not set)".to_owned(), |d| format!("(default: {d})")),
                ),
                ("true", "true".to_owned()),
                ("false", "false".to_owned()),
            ]
            .into_iter()
            .map(|(value, label)| Choice {
                selected: value == current,
                value: value.to_owned(),
                label,
            })
            .collect();
        }
        "integer" | "number" => {
            field.input_type = "number";
            field.step = if kind == "integer" { "1" } else { "any" };
            field.min = number_text(schema, "minimum");
            field.max = number_text(schema, "maximum");
            if kind == "integer" {
                "A whole number".clone_into(&mut field.hint);
            }
        }
        "array" => {
            field.control = Control::Text;
            let items = schema.get("items").unwrap_or(&Value::Null);
            field.hint = if matches!(type_of(items), "object" | "array") {
                "A JSON list, e.g. [{\"key\": \"value\"}]".to_owned()
            } else {
                "One item per line (or a JSON list)".to_owned()
            };
            if let Some(pattern) = items.get("pattern").and_then(Value::as_str) {
                field.pattern_shown = Some(pattern.to_owned());
            }
        }
        "object" => {
            field.control = Control::Text;
            "YAML or JSON, e.g. `key: value`".clone_into(&mut field.hint);
        }
        "string" => {
            if secret {
                field.input_type = "password";
            } else if schema.get("format").and_then(Value::as_str) == Some("uri") {
                field.input_type = "url";
            } else if schema.get("format").and_then(Value::as_str) == Some("email") {
                field.input_type = "email";
            }
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
                field.pattern_shown = Some(pattern.to_owned());
                field.pattern = Some(html_pattern(pattern));
            }
        }
        _ => {
            "A value, as JSON or text".clone_into(&mut field.hint);
            if secret {
                field.input_type = "password";
            }
        }
    }
    field
}

/// A JSON Schema pattern (unanchored) as an HTML `pattern` (anchored at both ends).
fn html_pattern(pattern: &str) -> String {
    if pattern.starts_with('^') && pattern.ends_with('$') && !pattern.ends_with("\\$") {
        pattern.to_owned()
    } else {
        format!(".*(?:{pattern}).*")
    }
}

/// A list as the textarea shows it: one scalar per line, or JSON.
fn list_text(value: &Value) -> String {
    match value.as_array() {
        Some(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            items.iter().map(display).collect::<Vec<_>>().join("\n")
        }
        _ => value.to_string(),
    }
}

/// A value as YAML text (JSON when it cannot be written).
pub fn yaml_text(value: &Value) -> String {
    serde_yaml::to_string(value).unwrap_or_else(|_| value.to_string())
}

/// The values of a submitted form (`given`: every field by name) over `items`, and the fields
/// whose text could not be read (JSON or YAML that does not parse).
pub fn values(items: &[Item], given: &[(String, String)]) -> (Map<String, Value>, Vec<FieldError>) {
    let mut values = Map::new();
    let mut errors = Vec::new();
    for field in items.iter().filter_map(|i| i.field.as_ref()) {
        let Some(text) = given
            .iter()
            .find(|(n, _)| *n == field.name)
            .map(|(_, v)| v.as_str())
        else {
            continue;
        };
        if text.trim().is_empty() {
            continue;
        }
        match convert(&field.schema, text) {
            Ok(value) => insert(&mut values, &field.segments, value),
            Err(message) => errors.push(FieldError {
                path: field.path.clone(),
                message,
            }),
        }
    }
    (values, errors)
}

fn insert(values: &mut Map<String, Value>, segments: &[String], value: Value) {
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    let mut map = values;
    for segment in parents {
        let entry = map
            .entry(segment.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let Value::Object(inner) = entry else {
            return;
        };
        map = inner;
    }
    map.insert(last.clone(), value);
}

/// The text of one field as the value of its schema's type (text that is not of that type is
/// sent as it is: the server says what is wrong with it, at the field).
fn convert(schema: &Value, text: &str) -> Result<Value, String> {
    if let Some(choices) = schema.get("enum").and_then(Value::as_array) {
        return Ok(choices
            .iter()
            .find(|c| display(c) == text)
            .cloned()
            .unwrap_or_else(|| Value::String(text.to_owned())));
    }
    let trimmed = text.trim();
    Ok(match type_of(schema) {
        "string" => Value::String(text.to_owned()),
        "integer" => trimmed
            .parse::<i64>()
            .map_or_else(|_| Value::String(text.to_owned()), Value::from),
        "number" => trimmed
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::String(text.to_owned()), Value::Number),
        "boolean" => match trimmed {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(text.to_owned()),
        },
        "array" => {
            if trimmed.starts_with('[') {
                serde_json::from_str(trimmed).map_err(|e| format!("not a JSON list: {e}"))?
            } else {
                let items = schema.get("items").unwrap_or(&Value::Null);
                Value::Array(
                    trimmed
                        .lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(|line| convert(items, line))
                        .collect::<Result<Vec<_>, _>>()?,
                )
            }
        }
        "object" => {
            let value: Value =
                serde_yaml::from_str(trimmed).map_err(|e| format!("not YAML or JSON: {e}"))?;
            if !value.is_object() {
                return Err("expected a mapping (key: value)".to_owned());
            }
            value
        }
        _ => serde_json::from_str(trimmed).unwrap_or_else(|_| Value::String(text.to_owned())),
    })
}

/// The texts of `items`' fields holding `values` (by field name), as a submitted form would
/// give them: secret fields and masked values left out, so that they are never shown again.
pub fn pairs_of(items: &[Item], values: &Map<String, Value>) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for field in items.iter().filter_map(|i| i.field.as_ref()) {
        if field.secret {
            continue;
        }
        let mut value = values.get(field.segments.first().map_or("", String::as_str));
        for segment in field.segments.iter().skip(1) {
            value = value.and_then(|v| v.get(segment));
        }
        let Some(value) = value.filter(|v| !v.is_null()) else {
            continue;
        };
        if value.to_string().contains(crate::params::MASK) {
            continue;
        }
        let text = match value {
            Value::Array(_) => list_text(value),
            Value::Object(_) => yaml_text(value),
            other => display(other),
        };
        pairs.push((field.name.clone(), text));
    }
    pairs
}

/// The values written in the YAML mode: a mapping, or what is wrong with it.
pub fn yaml_values(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_yaml::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(_) => Err("the values must be a YAML mapping (key: value)".to_owned()),
        Err(e) => Err(format!("the values are not valid YAML: {e}")),
    }
}

/// `values` without the secrets of `schema` (for showing them again, in YAML).
pub fn without_secrets(schema: &Value, values: &Map<String, Value>) -> Map<String, Value> {
    let properties = schema.get("properties").and_then(Value::as_object);
    values
        .iter()
        .filter_map(|(key, value)| {
            let property = properties.and_then(|p| p.get(key));
            match property {
                Some(p) if is_secret(p) => None,
                Some(p) => match value {
                    Value::Object(inner) if p.get("properties").is_some() => {
                        Some((key.clone(), Value::Object(without_secrets(p, inner))))
                    }
                    _ => Some((key.clone(), value.clone())),
                },
                None => Some((key.clone(), value.clone())),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 10, "pattern": "^[a-z]+$"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
                "level": {"enum": ["debug", "info"], "default": "info"},
                "on": {"type": "boolean"},
                "hosts": {"type": "array", "items": {"type": "string"}},
                "token": {"type": "string", "writeOnly": true},
                "resources": {"type": "object", "properties": {"cpu": {"type": "string", "default": "100m"}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "clusters": {"type": "array", "items": {"type": "string"}}
            }
        })
    }

    fn given(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn installed_values_fill_the_form_but_never_secrets() {
        let (items, _) = build(&schema(), &[], &[]);
        let values = json!({"name": "web", "replicas": 3, "hosts": ["a", "b"], "token": "s3cret",
            "resources": {"cpu": "250m"}, "labels": {"team": crate::params::MASK}, "on": false});
        let Value::Object(values) = values else {
            unreachable!()
        };
        let pairs = pairs_of(&items, &values);
        let text = |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(text("p.name"), Some("web"));
        assert_eq!(text("p.replicas"), Some("3"));
        assert_eq!(text("p.hosts"), Some("a\nb"));
        assert_eq!(text("p.resources.cpu"), Some("250m"));
        assert_eq!(text("p.on"), Some("false"));
        assert_eq!(text("p.token"), None, "a secret is never shown again");
        assert_eq!(text("p.labels"), None, "a masked value is not a value");
        // Read back, the texts give the same values.
        let (read, errors) = self::values(&items, &pairs);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(read["replicas"], json!(3));
        assert_eq!(read["hosts"], json!(["a", "b"]));
    }

    #[test]
    fn fields_follow_the_schema() {
        let (items, _) = build(&schema(), &[], &[]);
        let fields: Vec<&Field> = items.iter().filter_map(|i| i.field.as_ref()).collect();
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "p.name",
                "p.replicas",
                "p.level",
                "p.on",
                "p.hosts",
                "p.token",
                "p.resources.cpu",
                "p.labels"
            ]
        );
        assert!(fields[0].required);
        assert_eq!(fields[0].pattern.as_deref(), Some("^[a-z]+$"));
        assert_eq!(fields[1].input_type, "number");
        assert_eq!(fields[1].max.as_deref(), Some("5"));
        assert_eq!(fields[2].control, Control::Select);
        assert_eq!(fields[5].input_type, "password");
        assert!(items.iter().any(|i| i.open.is_some()));
    }

    #[test]
    fn submitted_texts_become_typed_values_and_secrets_are_not_echoed() {
        let form = given(&[
            ("p.name", "web"),
            ("p.replicas", "3"),
            ("p.level", "debug"),
            ("p.on", "true"),
            ("p.hosts", "a.example\n\nb.example\n"),
            ("p.token", "s3cret"),
            ("p.resources.cpu", "200m"),
            ("p.labels", "team: x"),
        ]);
        let (items, _) = build(&schema(), &form, &[]);
        let (values, errors) = values(&items, &form);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            Value::Object(values),
            json!({"name": "web", "replicas": 3, "level": "debug", "on": true,
                   "hosts": ["a.example", "b.example"], "token": "s3cret",
                   "resources": {"cpu": "200m"}, "labels": {"team": "x"}})
        );
        let token = items
            .iter()
            .filter_map(|i| i.field.as_ref())
            .find(|f| f.name == "p.token")
            .unwrap();
        assert_eq!(token.value, "");
    }

    #[test]
    fn errors_land_at_their_fields() {
        let errors = vec![
            FieldError {
                path: "hosts[1]".into(),
                message: "bad host".into(),
            },
            FieldError {
                path: "elsewhere".into(),
                message: "unknown".into(),
            },
        ];
        let (items, unplaced) = build(&schema(), &[], &errors);
        let hosts = items
            .iter()
            .filter_map(|i| i.field.as_ref())
            .find(|f| f.path == "hosts")
            .unwrap();
        assert_eq!(hosts.error.as_deref(), Some("bad host"));
        assert_eq!(unplaced.len(), 1);
    }

    #[test]
    fn unreadable_texts_are_refused_at_the_field() {
        let form = given(&[("p.labels", "[unclosed"), ("p.replicas", "three")]);
        let (items, _) = build(&schema(), &form, &[]);
        let (values, errors) = values(&items, &form);
        assert_eq!(values.get("replicas"), Some(&json!("three")));
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path, "labels");
        assert!(yaml_values("- a").is_err());
        assert_eq!(yaml_values("a: 1").unwrap().get("a"), Some(&json!(1)));
    }
}
