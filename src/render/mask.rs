//! Secret parameter values masked in errors, logs and printed objects.

use base64::Engine as _;
use serde_json::{json, Value};

use super::Error;
use crate::params::ParameterSchema;

pub use crate::model::secret::{mask_message, mask_strings, mask_text, MASK};

/// Masks the data of every Secret, including Secrets nested in components.
pub(super) fn mask_secret_objects(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("kind").and_then(Value::as_str) == Some("Secret") {
                for key in ["data", "stringData"] {
                    if let Some(Value::Object(data)) = map.get_mut(key) {
                        data.values_mut().for_each(|v| *v = json!(MASK));
                    }
                }
            }
            map.values_mut().for_each(mask_secret_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(mask_secret_objects),
        _ => {}
    }
}

pub(super) fn collect_secrets(
    schema: &ParameterSchema,
    value: &Value,
    path: &str,
    out: &mut Vec<(String, String)>,
) {
    if !path.is_empty() && schema.is_secret(path) {
        match value {
            Value::String(s) if !s.is_empty() => out.push((path.to_owned(), s.clone())),
            Value::String(_) | Value::Null => {}
            other => out.push((path.to_owned(), other.to_string())),
        }
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                collect_secrets(schema, v, &child, out);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| collect_secrets(schema, v, path, out)),
        _ => {}
    }
}

/// The secret parameter values of `values` (and their base64 forms), to mask in errors and logs.
pub(super) fn secret_strings(schema: &ParameterSchema, values: &Value) -> Vec<String> {
    let mut pairs = Vec::new();
    collect_secrets(schema, values, "", &mut pairs);
    let mut found: Vec<String> = pairs.into_iter().map(|(_, value)| value).collect();
    let encoded: Vec<String> = found
        .iter()
        .map(|s| base64::engine::general_purpose::STANDARD.encode(s))
        .collect();
    found.extend(encoded);
    found
}

impl Error {
    /// The error with every secret value masked.
    pub(super) fn masked(self, secrets: &[String]) -> Self {
        if secrets.is_empty() {
            return self;
        }
        match self {
            Error::Script {
                addon,
                file,
                line,
                column,
                message,
            } => Error::Script {
                addon,
                file,
                line,
                column,
                message: mask_message(&message, secrets),
            },
            Error::File {
                addon,
                file,
                message,
            } => Error::File {
                addon,
                file,
                message: mask_message(&message, secrets),
            },
            Error::Addon { addon, message } => Error::Addon {
                addon,
                message: mask_message(&message, secrets),
            },
            other @ Error::Parameters { .. } => other,
        }
    }
}
