//! The parameter diff: the stored arguments against those an enable or upgrade would store,
//! key by key at every depth, `secret()` parameters never shown.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::params::ParameterSchema;

/// How one argument changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ParamChangeKind {
    /// Given now, not stored before.
    Added,
    /// Stored with another value.
    Changed,
    /// Stored, and no longer given (`--reset-values`): the default applies.
    ResetToDefault,
    /// A `secret()` parameter given, changed or dropped (its values are never shown).
    SecretChanged,
}

/// One argument that changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParamChange {
    /// Its dotted path (`resources.cpu`).
    pub path: String,
    /// How it changes.
    pub change: ParamChangeKind,
    /// The stored value (none for secrets and added keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<Value>,
    /// The new value (none for secrets and keys reset to their default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<Value>,
}

impl std::fmt::Display for ParamChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| v.as_ref().map_or_else(String::new, ToString::to_string);
        match self.change {
            ParamChangeKind::Added => write!(f, "{}: (unset) → {}", self.path, show(&self.to)),
            ParamChangeKind::Changed => write!(
                f,
                "{}: {} → {}",
                self.path,
                show(&self.from),
                show(&self.to)
            ),
            ParamChangeKind::ResetToDefault => {
                write!(
                    f,
                    "{}: {} → (reset to default)",
                    self.path,
                    show(&self.from)
                )
            }
            ParamChangeKind::SecretChanged => write!(f, "{}: (secret changed)", self.path),
        }
    }
}

/// Every argument that differs between `stored` and `new`, in key order.
pub fn diff(
    stored: &Map<String, Value>,
    new: &Map<String, Value>,
    schema: &ParameterSchema,
) -> Vec<ParamChange> {
    let mut out = Vec::new();
    walk(stored, new, "", schema, &mut out);
    out
}

fn walk(
    stored: &Map<String, Value>,
    new: &Map<String, Value>,
    prefix: &str,
    schema: &ParameterSchema,
    out: &mut Vec<ParamChange>,
) {
    let mut keys: Vec<&String> = stored.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let path = crate::params::dotted(prefix, key);
        let (before, after) = (stored.get(key), new.get(key));
        if before == after {
            continue;
        }
        if schema.is_secret(&path) {
            out.push(ParamChange {
                path,
                change: ParamChangeKind::SecretChanged,
                from: None,
                to: None,
            });
            continue;
        }
        let change = match (before, after) {
            (Some(Value::Object(b)), Some(Value::Object(a))) => {
                walk(b, a, &path, schema, out);
                continue;
            }
            (None, Some(_)) => ParamChangeKind::Added,
            (Some(_), None) => ParamChangeKind::ResetToDefault,
            _ => ParamChangeKind::Changed,
        };
        // A dropped or added object may hold secrets: its leaves are listed one by one.
        let nested = |v: Option<&Value>| v.and_then(Value::as_object).cloned();
        if let (Some(b), None) | (None, Some(b)) = (nested(before), nested(after)) {
            let empty = Map::new();
            let (b, a) = if before.is_some() {
                (&b, &empty)
            } else {
                (&empty, &b)
            };
            walk(b, a, &path, schema, out);
            continue;
        }
        out.push(ParamChange {
            path,
            change,
            from: before.cloned(),
            to: (change != ParamChangeKind::ResetToDefault)
                .then(|| after.cloned())
                .flatten(),
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::params::{map, object_schema};

    fn schema() -> ParameterSchema {
        object_schema(json!({
            "replicas": {"type": "integer", "default": 1},
            "token": {"type": "string", "writeOnly": true},
            "mode": {"type": "string", "default": "a"},
            "extra": {"type": "boolean"},
            "resources": {"type": "object", "properties": {
                "cpu": {"type": "string"}, "memory": {"type": "string"}}},
        }))
    }

    #[test]
    fn changes_additions_resets_and_secrets_are_listed_by_path() {
        let stored = map(json!({"replicas": 1, "token": "old-secret", "mode": "slow",
            "resources": {"cpu": "1", "memory": "1Gi"}}));
        let new = map(json!({"replicas": 3, "token": "new-secret",
            "resources": {"cpu": "2", "memory": "1Gi"}, "extra": true}));
        let changes = diff(&stored, &new, &schema());
        let lines: Vec<String> = changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            vec![
                "extra: (unset) → true",
                "mode: \"slow\" → (reset to default)",
                "replicas: 1 → 3",
                "resources.cpu: \"1\" → \"2\"",
                "token: (secret changed)",
            ]
        );
        let text = serde_json::to_string(&changes).unwrap();
        assert!(!text.contains("secret\""), "{text}");
        assert!(!text.contains("old-secret") && !text.contains("new-secret"));
    }

    #[test]
    fn the_same_arguments_make_no_changes() {
        let args = map(json!({"replicas": 2, "resources": {"cpu": "1"}}));
        assert!(diff(&args, &args, &schema()).is_empty());
    }
}
