//! X-Definition files → `<Type>Definition` objects.

#[allow(unused_imports)]
use serde_json::{Map, Number, Value};

use super::{
    error, lit_lookup, lit_to_json, short, Lit, LitField, LitKind, Pos, Result, ALIAS_ANNOTATION,
    DEFINITION_API_VERSION, DESCRIPTION_ANNOTATION, USER_PREFIX,
};

// Definitions
// ---------------------------------------------------------------------------------------------

pub(super) fn definition_kind(definition_type: &str) -> Option<&'static str> {
    match definition_type {
        "component" => Some("ComponentDefinition"),
        "trait" => Some("TraitDefinition"),
        "policy" => Some("PolicyDefinition"),
        "workflow-step" => Some("WorkflowStepDefinition"),
        "workload" => Some("WorkloadDefinition"),
        _ => None,
    }
}

/// Keys naming `oam.dev` are kept; the others get the user prefix, as KubeVela does.
pub(super) fn user_key(key: &str) -> String {
    if key.contains("oam.dev") {
        key.to_string()
    } else {
        format!("{USER_PREFIX}{key}")
    }
}

/// What the metadata block of a definition sets, before it is assembled into an object.
#[derive(Default)]
pub(super) struct DefinitionParts {
    pub(super) kind: Option<&'static str>,
    pub(super) annotations: Map<String, Value>,
    pub(super) labels: Map<String, Value>,
    pub(super) spec: Map<String, Value>,
}

impl DefinitionParts {
    /// Apply one metadata field, as KubeVela's `FromCUE` does; unknown keys are ignored.
    pub(super) fn apply(&mut self, key: &str, value: &Value, lit: &Lit) -> Result<()> {
        match key {
            "type" => {
                let name = expect_str(value, lit.pos, "type")?;
                let kind = definition_kind(name).ok_or_else(|| {
                    error(
                        lit.pos,
                        format!(
                            "unknown definition type \"{name}\" \
                             (expected component, trait, policy, workflow-step or workload)"
                        ),
                    )
                })?;
                self.kind = Some(kind);
            }
            "alias" => {
                let alias = expect_str(value, lit.pos, "alias")?;
                insert_str(&mut self.annotations, ALIAS_ANNOTATION, alias);
            }
            "description" => {
                let description = expect_str(value, lit.pos, "description")?;
                insert_str(&mut self.annotations, DESCRIPTION_ANNOTATION, description);
            }
            "annotations" => copy_string_map(value, lit, "annotations", &mut self.annotations)?,
            "labels" => copy_string_map(value, lit, "labels", &mut self.labels)?,
            "attributes" => match value {
                Value::Object(attributes) => self.spec.clone_from(attributes),
                _ => return Err(error(lit.pos, "`attributes` must be a struct")),
            },
            _ => {}
        }
        Ok(())
    }
}

pub(super) fn build_definition(
    metadata: &LitField,
    template: String,
    namespace: &str,
) -> Result<Value> {
    let (LitKind::Struct(fields), Value::Object(merged)) =
        (&metadata.value.kind, lit_to_json(&metadata.value)?)
    else {
        return Err(error(
            metadata.value.pos,
            format!(
                "the metadata field `{}` must be a struct `{{ … }}`",
                metadata.key
            ),
        ));
    };
    validate_name(&metadata.key, metadata.pos, "definition name")?;
    let mut parts = DefinitionParts::default();
    let mut seen: Vec<&str> = Vec::new();
    for field in fields {
        if !seen.contains(&field.key.as_str()) {
            seen.push(&field.key);
            let value = merged.get(&field.key).unwrap_or(&Value::Null);
            parts.apply(&field.key, value, &field.value)?;
        }
    }
    let kind = parts.kind.ok_or_else(|| {
        error(
            metadata.pos,
            format!(
                "the metadata field `{}` has no `type` (component, trait, policy, …)",
                metadata.key
            ),
        )
    })?;
    set_template(&mut parts.spec, template, metadata.value.pos)?;
    let mut meta = Map::new();
    meta.insert("name".into(), Value::String(metadata.key.clone()));
    meta.insert("namespace".into(), Value::String(namespace.to_string()));
    if !parts.annotations.is_empty() {
        meta.insert("annotations".into(), Value::Object(parts.annotations));
    }
    if !parts.labels.is_empty() {
        meta.insert("labels".into(), Value::Object(parts.labels));
    }
    Ok(object([
        ("apiVersion", Value::from(DEFINITION_API_VERSION)),
        ("kind", Value::from(kind)),
        ("metadata", Value::Object(meta)),
        ("spec", Value::Object(parts.spec)),
    ]))
}

pub(super) fn expect_str<'v>(value: &'v Value, pos: Pos, field: &str) -> Result<&'v str> {
    value.as_str().ok_or_else(|| {
        error(
            pos,
            format!("`{field}` must be a string, found {}", short(value)),
        )
    })
}

pub(super) fn insert_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    map.insert(key.to_string(), Value::String(value.to_string()));
}

/// Copy `annotations`/`labels` (a struct of strings) into `into`, prefixing user keys.
pub(super) fn copy_string_map(
    value: &Value,
    lit: &Lit,
    field: &str,
    into: &mut Map<String, Value>,
) -> Result<()> {
    let Value::Object(entries) = value else {
        return Err(error(
            lit.pos,
            format!("`{field}` must be a struct of strings"),
        ));
    };
    for (key, entry) in entries {
        let pos = lit_lookup(lit, key).map_or(lit.pos, |l| l.pos);
        let text = expect_str(entry, pos, &format!("{field}.{key}"))?;
        insert_str(into, &user_key(key), text);
    }
    Ok(())
}

pub(super) fn set_template(
    spec: &mut Map<String, Value>,
    template: String,
    pos: Pos,
) -> Result<()> {
    let schematic = spec
        .entry("schematic")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(schematic) = schematic else {
        return Err(error(pos, "`attributes.schematic` must be a struct"));
    };
    let cue = schematic
        .entry("cue")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(cue) = cue else {
        return Err(error(pos, "`attributes.schematic.cue` must be a struct"));
    };
    cue.insert("template".into(), Value::String(template));
    Ok(())
}

/// Kubernetes object names are DNS subdomains: lowercase alphanumerics, `-` and `.`.
pub(super) fn validate_name(name: &str, pos: Pos, what: &str) -> Result<()> {
    let bytes = name.as_bytes();
    let allowed = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-' || *b == b'.');
    let edges = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if allowed && edges(bytes.first()) && edges(bytes.last()) && bytes.len() <= 253 {
        Ok(())
    } else {
        Err(error(
            pos,
            format!(
                "{what} \"{name}\" is not a valid Kubernetes name (lowercase letters, digits, `-` and `.`, \
                 starting and ending with a letter or digit, at most 253 characters)"
            ),
        ))
    }
}

pub(super) fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

// ---------------------------------------------------------------------------------------------
