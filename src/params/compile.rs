//! Compiles [`ParameterType`] declarations into JSON Schema (draft 2020-12), checking every
//! declaration on the way: refinements that do not apply to the type, contradictory bounds, bad
//! regular expressions, defaults that break their own declaration.
//!
//! Rules decided here:
//! - a parameter is required (listed in `required`) when `.required()` is set, or when it has no
//!   default and is not `.optional()`; defaults are filled before validation, so a `.required()`
//!   parameter with a default is always present (`.required()` is then redundant, not wrong);
//! - an `object(…)` whose fields are all defaulted or optional gets a default built from the
//!   defaulted fields, unless it is `.optional()` (then it stays absent until given);
//! - `uint` and `pint` imply `minimum` 0 and 1; an explicit `.min(n)` below that is ignored.

use serde_json::{json, Map, Number, Value};

use super::error::{Error, Result};
use super::types::{Kind, ParameterType, Presence, MAX_TYPE_DEPTH};
use super::values;

/// The compiled fields of a map (the top level, or an `object(…)`).
pub(crate) struct CompiledFields {
    /// `properties`, in declaration order.
    pub(crate) properties: Map<String, Value>,
    /// `required`, in declaration order.
    pub(crate) required: Vec<Value>,
    /// The defaults of the fields, when no field is required.
    pub(crate) default: Option<Map<String, Value>>,
}

/// Compiles the fields of a map (the top level, or an `object(…)`).
pub(crate) fn compile_fields(
    prefix: &str,
    fields: &[(String, ParameterType)],
    depth: usize,
) -> Result<CompiledFields> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut default = Some(Map::new());
    for (name, field) in fields {
        let path = join(prefix, name);
        check_name(&path, name)?;
        let schema = compile_type(&path, field, depth + 1)?;
        let has_default = schema.get("default").is_some();
        let is_required = match field.presence {
            Presence::Required => true,
            Presence::Optional => false,
            Presence::Implied => !has_default,
        };
        if is_required {
            required.push(Value::String(name.clone()));
        }
        // The object's own default exists when every field is defaulted or optional.
        match (default.as_mut(), schema.get("default")) {
            (Some(default), Some(value)) => {
                default.insert(name.clone(), value.clone());
            }
            (Some(_), None) if is_required => default = None,
            _ => {}
        }
        properties.insert(name.clone(), schema);
    }
    Ok(CompiledFields {
        properties,
        required,
        default,
    })
}

/// Compiles one type into its schema fragment.
pub(crate) fn compile_type(path: &str, t: &ParameterType, depth: usize) -> Result<Value> {
    if depth > MAX_TYPE_DEPTH {
        return Err(declaration(
            path,
            format!("types may nest at most {MAX_TYPE_DEPTH} levels deep"),
        ));
    }
    check_refinements(path, t)?;

    let mut schema = Map::new();
    let mut synthesized_default = None;
    if let Some(keyword) = type_keyword(&t.kind) {
        schema.insert("type".into(), keyword.into());
    }
    if let Some(usage) = &t.usage {
        schema.insert("description".into(), usage.clone().into());
    }
    match &t.kind {
        Kind::Enum(options) => {
            schema.insert("enum".into(), Value::Array(options.clone()));
        }
        Kind::Int | Kind::Uint | Kind::Pint | Kind::Float => {
            let (minimum, maximum) = bounds(path, t)?;
            if let Some(minimum) = minimum {
                schema.insert("minimum".into(), Value::Number(minimum));
            }
            if let Some(maximum) = maximum {
                schema.insert("maximum".into(), Value::Number(maximum));
            }
        }
        Kind::String => {
            insert_lengths(&mut schema, t, "minLength", "maxLength");
            if let Some(pattern) = &t.pattern {
                check_pattern(path, pattern)?;
                schema.insert("pattern".into(), pattern.clone().into());
            }
        }
        Kind::List(item) => {
            insert_lengths(&mut schema, t, "minItems", "maxItems");
            let items = compile_type(&format!("{path}[*]"), item, depth + 1)?;
            schema.insert("items".into(), items);
        }
        Kind::Object(fields) => {
            let CompiledFields {
                properties,
                required,
                default,
            } = compile_fields(path, fields, depth)?;
            schema.insert("properties".into(), Value::Object(properties));
            if !required.is_empty() {
                schema.insert("required".into(), Value::Array(required));
            }
            schema.insert("additionalProperties".into(), false.into());
            if t.presence != Presence::Optional {
                synthesized_default = default.map(Value::Object);
            }
        }
        Kind::MapOf(item) => {
            insert_lengths(&mut schema, t, "minProperties", "maxProperties");
            let values = compile_type(&join(path, "*"), item, depth + 1)?;
            schema.insert("additionalProperties".into(), values);
        }
        Kind::Bool | Kind::Any => {}
    }

    if let Some(default) = &t.default {
        let default = check_default(path, &schema, default, t.secret)?;
        schema.insert("default".into(), default);
    } else if let Some(default) = synthesized_default {
        schema.insert("default".into(), default);
    }
    if t.secret {
        schema.insert("writeOnly".into(), true.into());
    }
    Ok(Value::Object(schema))
}

/// A name usable as a parameter (or field) name in dotted paths.
pub(crate) fn check_name(path: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(declaration(path, "parameter names must not be empty"));
    }
    if name.contains('.') {
        return Err(declaration(
            path,
            "parameter names must not contain `.` (dots separate the levels of a parameter path)",
        ));
    }
    Ok(())
}

fn check_refinements(path: &str, t: &ParameterType) -> Result<()> {
    let constructor = t.kind.constructor();
    let numeric = matches!(t.kind, Kind::Int | Kind::Uint | Kind::Pint | Kind::Float);
    let sized = matches!(t.kind, Kind::String | Kind::List(_) | Kind::MapOf(_));
    for (set, name) in [(t.min.is_some(), ".min"), (t.max.is_some(), ".max")] {
        if set && !numeric {
            let hint = if sized {
                format!("; use `{name}_len` for a length")
            } else {
                String::new()
            };
            return Err(declaration(
                path,
                format!(
                    "`{name}` applies to numbers (`int`, `uint`, `pint`, `float`), not to `{constructor}`{hint}"
                ),
            ));
        }
    }
    for (set, name) in [
        (t.min_len.is_some(), ".min_len"),
        (t.max_len.is_some(), ".max_len"),
    ] {
        if set && !sized {
            return Err(declaration(
                path,
                format!(
                    "`{name}` applies to `string`, `list` and `map_of`, not to `{constructor}`"
                ),
            ));
        }
    }
    if t.pattern.is_some() && !matches!(t.kind, Kind::String) {
        return Err(declaration(
            path,
            format!("`.pattern` applies to `string`, not to `{constructor}`"),
        ));
    }
    if let (Some(min), Some(max)) = (t.min_len, t.max_len) {
        if min > max {
            return Err(declaration(
                path,
                format!("`.min_len({min})` is greater than `.max_len({max})`"),
            ));
        }
    }
    Ok(())
}

/// The effective `minimum`/`maximum` of a numeric type.
fn bounds(path: &str, t: &ParameterType) -> Result<(Option<Number>, Option<Number>)> {
    let implicit: Option<(i32, &str)> = match t.kind {
        Kind::Uint => Some((0, "uint")),
        Kind::Pint => Some((1, "pint")),
        _ => None,
    };
    let minimum = match (implicit, &t.min) {
        (Some((floor, _)), Some(explicit)) if as_f64(explicit) <= f64::from(floor) => {
            Some(floor.into())
        }
        (_, Some(explicit)) => Some(explicit.clone()),
        (Some((floor, _)), None) => Some(floor.into()),
        (None, None) => None,
    };
    let crossed = match (&minimum, &t.max) {
        (Some(minimum), Some(maximum)) if as_f64(minimum) > as_f64(maximum) => {
            Some((minimum, maximum))
        }
        _ => None,
    };
    if let Some((minimum, maximum)) = crossed {
        let source = match (&t.min, implicit) {
            (Some(explicit), _) if explicit == minimum => format!("`.min({minimum})`"),
            (_, Some((_, constructor))) => format!("the minimum {minimum} of `{constructor}`"),
            _ => format!("the minimum {minimum}"),
        };
        return Err(declaration(
            path,
            format!("{source} is greater than `.max({maximum})`"),
        ));
    }
    Ok((minimum, t.max.clone()))
}

fn as_f64(n: &Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

fn insert_lengths(schema: &mut Map<String, Value>, t: &ParameterType, min: &str, max: &str) {
    if let Some(n) = t.min_len {
        schema.insert(min.into(), n.into());
    }
    if let Some(n) = t.max_len {
        schema.insert(max.into(), n.into());
    }
}

/// The JSON Schema `type` of a kind (`any` has none, nor has an enum of mixed values).
fn type_keyword(kind: &Kind) -> Option<&'static str> {
    match kind {
        Kind::Int | Kind::Uint | Kind::Pint => Some("integer"),
        Kind::Float => Some("number"),
        Kind::String => Some("string"),
        Kind::Bool => Some("boolean"),
        Kind::List(_) => Some("array"),
        Kind::Object(_) | Kind::MapOf(_) => Some("object"),
        Kind::Enum(options) => enum_type(options),
        Kind::Any => None,
    }
}

/// `type` for an enum whose values are all of one JSON type.
fn enum_type(options: &[Value]) -> Option<&'static str> {
    if options.iter().all(Value::is_string) {
        Some("string")
    } else if options.iter().all(|v| v.is_i64() || v.is_u64()) {
        Some("integer")
    } else if options.iter().all(Value::is_number) {
        Some("number")
    } else {
        None
    }
}

fn check_pattern(path: &str, pattern: &str) -> Result<()> {
    match values::build_validator(&json!({ "type": "string", "pattern": pattern })) {
        Ok(_) => Ok(()),
        Err(_) => Err(declaration(
            path,
            format!(
                "`.pattern({pattern:?})` is not a valid regular expression (ECMA-262 syntax, as in JSON Schema)"
            ),
        )),
    }
}

/// Fills the default's own nested defaults, then checks it against the declaration.
fn check_default(
    path: &str,
    schema: &Map<String, Value>,
    default: &Value,
    secret: bool,
) -> Result<Value> {
    let schema = Value::Object(schema.clone());
    let mut default = default.clone();
    values::fill_defaults(&schema, &mut default, 0);
    let validator = values::build_validator(&schema).map_err(|error| {
        declaration(path, format!("the declaration cannot be compiled: {error}"))
    })?;
    let violations = values::violations(&validator, &schema, &default);
    if violations.is_empty() {
        return Ok(default);
    }
    let shown = if secret {
        super::error::MASK.to_owned()
    } else {
        values::show(&values::mask_value(&schema, &default, 0))
    };
    let details = violations
        .iter()
        .map(|v| {
            if v.path.is_empty() {
                v.rule.clone()
            } else {
                let mut v = v.clone();
                v.path = format!("{path}{}", prefix_separator(&v.path));
                v.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    Err(declaration(
        path,
        format!("the default {shown} does not satisfy the declaration: {details}"),
    ))
}

fn prefix_separator(relative: &str) -> String {
    if relative.is_empty() || relative.starts_with('[') {
        relative.to_owned()
    } else {
        format!(".{relative}")
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

fn declaration(path: &str, message: impl Into<String>) -> Error {
    Error::Declaration {
        path: path.to_owned(),
        message: message.into(),
    }
}
