//! Config-template files → the `config-template-<name>` ConfigMap.

#[allow(unused_imports)]
use serde_json::{Map, Number, Value};

use super::{
    beyond_subset, error, expect_str, lit_lookup, lit_to_json, object, short, unify, validate_name,
    Kind, LitField, Parser, Pos, Result, CONFIG_ALIAS_ANNOTATION, CONFIG_CATALOG_LABEL,
    CONFIG_CATALOG_VALUE, CONFIG_DEFAULT_CONTEXT, CONFIG_DESCRIPTION_ANNOTATION,
    CONFIG_SCOPE_LABEL, CONFIG_SENSITIVE_ANNOTATION, CONFIG_TEMPLATE_PREFIX,
};

// Skimmed values (config template `template` blocks)
// ---------------------------------------------------------------------------------------------

/// What the skimming parser learned about a value: the fields of a struct, a scalar literal,
/// or nothing (any other expression).
#[derive(Debug)]
pub(super) enum Loose {
    Struct(Vec<LooseField>),
    Scalar(Value),
    Opaque,
}

#[derive(Debug)]
pub(super) struct LooseField {
    pub(super) key: String,
    pub(super) pos: Pos,
    /// Index of the value's first token, to parse it again with another parser.
    pub(super) value_index: usize,
    pub(super) value: Loose,
}

impl Parser<'_> {
    pub(super) fn loose_value(&mut self) -> Result<Loose> {
        if self.is_field_start() {
            let field = self.loose_field()?;
            return Ok(Loose::Struct(vec![field]));
        }
        if self.at_punct("{") {
            return self.nested(Self::loose_struct);
        }
        let scalar_alone = self.scalar_len().is_some_and(|len| {
            matches!(
                self.kind_at(len),
                Kind::Comma { .. } | Kind::Punct("}") | Kind::Eof
            )
        });
        if scalar_alone {
            return Ok(Loose::Scalar(self.scalar_literal()?));
        }
        self.skip_expression()?;
        Ok(Loose::Opaque)
    }

    pub(super) fn loose_field(&mut self) -> Result<LooseField> {
        let label = self.label()?;
        self.marker();
        self.expect_punct(":", "after the field name")?;
        let value_index = self.index;
        let value = self.nested(Self::loose_value)?;
        Ok(LooseField {
            key: label.name,
            pos: label.pos,
            value_index,
            value,
        })
    }

    pub(super) fn loose_struct(&mut self) -> Result<Loose> {
        let mut fields = Vec::new();
        self.struct_body(|p| {
            if p.is_field_start() {
                fields.push(p.loose_field()?);
            } else {
                p.skip_expression()?;
            }
            p.field_end()
        })?;
        Ok(Loose::Struct(fields))
    }
}

/// The only field named `key`, or an error when it is missing or declared twice.
pub(super) fn find_single_field<'f>(
    fields: &'f [LooseField],
    key: &str,
    parent: Pos,
) -> Result<&'f LooseField> {
    let mut found = fields.iter().filter(|f| f.key == key);
    let first = found
        .next()
        .ok_or_else(|| error(parent, format!("`template.{key}` is missing")))?;
    if let Some(second) = found.next() {
        return Err(beyond_subset(
            second.pos,
            &format!("declaring `{key}` more than once (unification)"),
        ));
    }
    Ok(first)
}

pub(super) fn loose_str<'l>(value: &'l Loose, path: &[&str]) -> Option<&'l str> {
    match (value, path.split_first()) {
        (Loose::Scalar(Value::String(text)), None) => Some(text),
        (Loose::Struct(fields), Some((head, tail))) => fields
            .iter()
            .filter(|f| f.key == *head)
            .find_map(|f| loose_str(&f.value, tail)),
        _ => None,
    }
}

/// The `expanded-writer` data: KubeVela's Nacos writer settings, present when the template
/// declares a `nacos` block (its `format` and `endpoint.name` are kept when literal).
pub(super) fn expanded_writer(template: &[LooseField]) -> Value {
    let Some(nacos) = template.iter().find(|f| f.key == "nacos") else {
        return object([("nacos", Value::Null)]);
    };
    let format = loose_str(&nacos.value, &["format"]).unwrap_or("");
    let endpoint = loose_str(&nacos.value, &["endpoint", "name"]).unwrap_or("");
    object([(
        "nacos",
        object([
            (
                "endpoint",
                object([
                    ("name", Value::from(endpoint)),
                    ("namespace", Value::from("")),
                ]),
            ),
            ("format", Value::from(format)),
            (
                "metadata",
                object([
                    ("dataId", Value::from("")),
                    ("group", Value::from("")),
                    ("namespaceId", Value::from("")),
                ]),
            ),
        ]),
    )])
}

// ---------------------------------------------------------------------------------------------
// Config templates
// ---------------------------------------------------------------------------------------------

/// The literal `metadata` block of a config template.
pub(super) struct ConfigMetadata {
    pub(super) name: String,
    pub(super) alias: String,
    pub(super) description: String,
    pub(super) sensitive: bool,
    pub(super) scope: String,
}

impl ConfigMetadata {
    pub(super) fn from_fields(fields: &[LitField], end: Pos) -> Result<Self> {
        let first = fields
            .first()
            .ok_or_else(|| error(end, "no `metadata: { name: … }` field found"))?;
        let mut merged: Option<Value> = None;
        for field in fields {
            let value = lit_to_json(&field.value)?;
            match merged.as_mut() {
                Some(existing) => unify(existing, value, "metadata", field.pos)?,
                None => merged = Some(value),
            }
        }
        let Some(Value::Object(meta)) = merged else {
            return Err(error(first.value.pos, "`metadata` must be a struct"));
        };
        let pos_of = |key: &str| {
            fields
                .iter()
                .find_map(|f| lit_lookup(&f.value, key))
                .map_or(first.pos, |l| l.pos)
        };
        let text = |key: &str| -> Result<String> {
            meta.get(key).map_or(Ok(String::new()), |v| {
                expect_str(v, pos_of(key), key).map(str::to_string)
            })
        };
        let name = text("name")?;
        if name.is_empty() {
            return Err(error(
                pos_of("name"),
                "`metadata.name` is required and must not be empty",
            ));
        }
        validate_name(
            &format!("{CONFIG_TEMPLATE_PREFIX}{name}"),
            pos_of("name"),
            "config template ConfigMap name",
        )?;
        let sensitive = match meta.get("sensitive") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(error(
                    pos_of("sensitive"),
                    format!("`sensitive` must be a bool, found {}", short(other)),
                ));
            }
        };
        let scope = text("scope")?;
        if !matches!(scope.as_str(), "" | "system" | "project") {
            return Err(error(
                pos_of("scope"),
                format!("`scope` must be \"system\" or \"project\", found \"{scope}\""),
            ));
        }
        Ok(ConfigMetadata {
            name,
            alias: text("alias")?,
            description: text("description")?,
            sensitive,
            scope,
        })
    }
}

pub(super) fn config_map(
    meta: &ConfigMetadata,
    text: &str,
    namespace: &str,
    schema: Map<String, Value>,
    writer: &Value,
) -> Value {
    let labels = object([
        (CONFIG_CATALOG_LABEL, Value::from(CONFIG_CATALOG_VALUE)),
        (CONFIG_SCOPE_LABEL, Value::from(meta.scope.as_str())),
    ]);
    let annotations = object([
        (
            CONFIG_DESCRIPTION_ANNOTATION,
            Value::from(meta.description.as_str()),
        ),
        (CONFIG_ALIAS_ANNOTATION, Value::from(meta.alias.as_str())),
        (
            CONFIG_SENSITIVE_ANNOTATION,
            Value::from(if meta.sensitive { "true" } else { "false" }),
        ),
    ]);
    let data = object([
        (
            "template",
            Value::String(format!("{text}\n{CONFIG_DEFAULT_CONTEXT}")),
        ),
        ("schema", Value::String(Value::Object(schema).to_string())),
        ("expanded-writer", Value::String(writer.to_string())),
    ]);
    object([
        ("apiVersion", Value::from("v1")),
        ("kind", Value::from("ConfigMap")),
        (
            "metadata",
            object([
                (
                    "name",
                    Value::String(format!("{CONFIG_TEMPLATE_PREFIX}{}", meta.name)),
                ),
                ("namespace", Value::from(namespace)),
                ("labels", labels),
                ("annotations", annotations),
            ]),
        ),
        ("data", data),
    ])
}

// ---------------------------------------------------------------------------------------------
