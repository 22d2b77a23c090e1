//! Lowering parsed parameter terms to JSON Schema: predeclared types, conjunctions and bounds,
//! disjunctions with their defaults, enums and descriptions.

#[allow(unused_imports)]
use serde_json::{Map, Number, Value};

use super::schema::{Disjunct, Schema, Term};
use super::{beyond_subset, error, short, CueError, Pos, Result};

/// The schema of a predeclared CUE type, or `None` for any other name.
pub(super) fn predeclared_type(name: &str) -> Option<Schema> {
    let typed = |ty: &str| object_map([("type", Value::from(ty))]);
    let ranged = |min: i64, max: Option<u64>| {
        let mut schema = typed("integer");
        schema.insert("minimum".into(), Value::from(min));
        if let Some(max) = max {
            schema.insert("maximum".into(), Value::from(max));
        }
        schema
    };
    Some(match name {
        "string" => typed("string"),
        "bool" => typed("boolean"),
        "int" | "int64" => typed("integer"),
        "float" | "number" | "float32" | "float64" => typed("number"),
        "uint" | "uint64" => ranged(0, None),
        "int8" => ranged(-128, Some(127)),
        "int16" => ranged(-32_768, Some(32_767)),
        "int32" => ranged(-2_147_483_648, Some(2_147_483_647)),
        "uint8" => ranged(0, Some(255)),
        "uint16" => ranged(0, Some(65_535)),
        "uint32" => ranged(0, Some(4_294_967_295)),
        "_" => Map::new(),
        _ => return None,
    })
}

pub(super) fn object_map<const N: usize>(entries: [(&str, Value); N]) -> Schema {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

pub(super) fn object_schema(
    properties: Map<String, Value>,
    required: Vec<String>,
    additional: Option<Schema>,
) -> Schema {
    let mut schema = object_map([("type", Value::from("object"))]);
    if !properties.is_empty() {
        schema.insert("properties".into(), Value::Object(properties));
    }
    if !required.is_empty() {
        schema.insert(
            "required".into(),
            Value::Array(required.into_iter().map(Value::String).collect()),
        );
    }
    if let Some(additional) = additional {
        schema.insert("additionalProperties".into(), Value::Object(additional));
    }
    schema
}

pub(super) fn array_schema(items: Schema) -> Schema {
    object_map([
        ("type", Value::from("array")),
        ("items", Value::Object(items)),
    ])
}

/// The JSON Schema type name of a concrete value.
pub(super) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `value` is an instance of `schema` as far as its `type` and `enum` go.
pub(super) fn schema_accepts(schema: &Schema, value: &Value) -> bool {
    let type_ok = match schema.get("type").and_then(Value::as_str) {
        None => true,
        Some("number") => value.is_number(),
        Some(ty) => json_type(value) == ty,
    };
    let enum_ok = match schema.get("enum") {
        Some(Value::Array(options)) => options.contains(value),
        _ => true,
    };
    type_ok && enum_ok
}

/// The schema of a single term.
pub(super) fn lower_term(term: Term, pos: Pos) -> Result<Schema> {
    match term {
        Term::Value(value) => {
            let mut schema = object_map([("type", Value::from(json_type(&value)))]);
            if !value.is_array() && !value.is_object() {
                schema.insert("enum".into(), Value::Array(vec![value.clone()]));
            }
            schema.insert("default".into(), value);
            Ok(schema)
        }
        Term::Type { schema, .. } => Ok(schema),
        Term::Bound { .. } | Term::Pattern(_) => lower_conjunction(vec![(term, pos)]),
    }
}

/// `T & >=a & <=b & =~"re"`: one type (or none) refined by bounds and patterns.
pub(super) fn lower_conjunction(terms: Vec<(Term, Pos)>) -> Result<Schema> {
    let mut base: Option<Schema> = None;
    let mut constraints = Vec::new();
    for (term, pos) in terms {
        match term {
            Term::Type { schema, .. } => {
                if base.is_some() {
                    return Err(beyond_subset(pos, "a conjunction `&` of two types"));
                }
                base = Some(schema);
            }
            Term::Value(_) => {
                return Err(beyond_subset(
                    pos,
                    "a conjunction `&` with a concrete value",
                ));
            }
            constraint => constraints.push((constraint, pos)),
        }
    }
    let implied = if constraints
        .iter()
        .any(|(t, _)| matches!(t, Term::Pattern(_)))
    {
        "string"
    } else {
        "number"
    };
    let mut schema = base.unwrap_or_else(|| object_map([("type", Value::from(implied))]));
    for (constraint, pos) in constraints {
        match constraint {
            Term::Bound { op, limit } => apply_bound(&mut schema, op, &limit, pos)?,
            Term::Pattern(pattern) => {
                if schema.get("type").and_then(Value::as_str) != Some("string") {
                    return Err(beyond_subset(
                        pos,
                        "a `=~` pattern on a type other than string",
                    ));
                }
                if schema
                    .insert("pattern".into(), Value::String(pattern))
                    .is_some()
                {
                    return Err(beyond_subset(pos, "a second `=~` pattern"));
                }
            }
            Term::Type { .. } | Term::Value(_) => {}
        }
    }
    Ok(schema)
}

/// Add `minimum`/`maximum` for a bound, keeping the tighter one. Exclusive bounds are only
/// accepted on integers (where `>n` is `>=n+1`): JSON Schema and OpenAPI 3.0 disagree on how
/// to write them, and KubeVela reads these schemas as OpenAPI 3.0.
pub(super) fn apply_bound(schema: &mut Schema, op: &str, limit: &Number, pos: Pos) -> Result<()> {
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    if ty != "integer" && ty != "number" {
        return Err(beyond_subset(
            pos,
            &format!("the bound `{op}` on a non-numeric type"),
        ));
    }
    let exclusive = |shift: i64| -> Result<Number> {
        match (ty, limit.as_i64()) {
            ("integer", Some(n)) => n
                .checked_add(shift)
                .map(Number::from)
                .ok_or_else(|| beyond_subset(pos, &format!("the bound `{op}{n}`"))),
            _ => Err(beyond_subset(
                pos,
                &format!("the exclusive bound `{op}` on a non-integer type"),
            )),
        }
    };
    let (key, value, tighter_is_greater) = match op {
        ">=" => ("minimum", limit.clone(), true),
        ">" => ("minimum", exclusive(1)?, true),
        "<=" => ("maximum", limit.clone(), false),
        _ => ("maximum", exclusive(-1)?, false),
    };
    let new = value.as_f64().unwrap_or(0.0);
    let keep_old = schema.get(key).and_then(Value::as_f64).is_some_and(|old| {
        if tighter_is_greater {
            old >= new
        } else {
            old <= new
        }
    });
    if !keep_old {
        schema.insert(key.into(), Value::Number(value));
    }
    Ok(())
}

/// `*default | type`, enums `"a" | "b"`, or a single term. `fields` is where the declaration
/// is (`resources`, `cpu`), for the messages.
pub(super) fn lower_disjunction(disjuncts: Vec<Disjunct>, fields: &[String]) -> Result<Schema> {
    let first_pos = disjuncts
        .first()
        .map_or(Pos { line: 1, column: 1 }, |d| d.pos);
    let mut disjuncts = disjuncts;
    if disjuncts.len() == 1 && disjuncts.first().is_some_and(|d| !d.default) {
        let only = disjuncts.remove(0);
        return lower_term(only.term, only.pos);
    }
    let mut default: Option<(Value, Pos)> = None;
    let mut literals: Vec<(Value, Pos)> = Vec::new();
    let mut types: Vec<(Schema, Pos, String)> = Vec::new();
    for Disjunct {
        term,
        default: is_default,
        pos,
        text,
    } in disjuncts
    {
        let concrete = match &term {
            Term::Value(value) => Some(value.clone()),
            Term::Type {
                literal: Some(value),
                ..
            } if is_default => Some(value.clone()),
            _ => None,
        };
        if is_default {
            if default.is_some() {
                return Err(beyond_subset(pos, "a second `*` default"));
            }
            let value = concrete
                .ok_or_else(|| beyond_subset(pos, "a `*` default that is not a concrete value"))?;
            default = Some((value.clone(), pos));
            literals.push((value, pos));
        } else if let Some(value) = concrete {
            literals.push((value, pos));
        } else {
            types.push((lower_term(term, pos)?, pos, text));
        }
    }
    if let Some((_, pos, _)) = types.get(1) {
        return Err(beyond_subset(
            *pos,
            "a disjunction of several types (such as `string | int`)",
        ));
    }
    // `null` beside a type or an enum (`*null | string`): the type also allows null.
    let nullable = literals.iter().any(|(v, _)| v.is_null())
        && (!types.is_empty() || literals.iter().any(|(v, _)| !v.is_null()));
    if nullable {
        literals.retain(|(v, _)| !v.is_null());
    }
    let mut schema = match types.pop() {
        Some((schema, _, written)) => {
            if let Some((value, pos)) = literals.iter().find(|(v, _)| !schema_accepts(&schema, v)) {
                if default.as_ref().is_some_and(|(_, at)| at == pos) {
                    return Err(default_type_error(fields, value, &schema, &written, *pos));
                }
                return Err(beyond_subset(
                    *pos,
                    &format!(
                        "a disjunction of several types ({} and a type)",
                        short(value)
                    ),
                ));
            }
            schema
        }
        None => enum_schema(&literals, first_pos)?,
    };
    if nullable {
        allow_null(&mut schema);
    }
    if let Some((value, _)) = default {
        schema.insert("default".into(), value);
    }
    Ok(schema)
}

/// The start of the message of a default whose type is not the declared one.
pub(crate) const DEFAULT_TYPE_MISMATCH: &str = "type mismatch: the default of";

/// `*"1" | int`: the default is not of the field's type. Names the field, the default and its
/// type, the declared type, and the default written in that type when the text converts.
fn default_type_error(
    fields: &[String],
    value: &Value,
    schema: &Schema,
    written: &str,
    pos: Pos,
) -> CueError {
    let field = std::iter::once("parameter")
        .chain(fields.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(".");
    let expected = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let found = match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(n) if n.is_f64() => "a float",
        Value::Number(_) => "an int",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a struct",
    };
    let written = if written.is_empty() {
        match expected {
            "integer" => "int",
            "boolean" => "bool",
            "array" => "[...]",
            "object" => "{...}",
            other => other,
        }
    } else {
        written
    };
    let converted = value.as_str().and_then(|text| match expected {
        "integer" => text.trim().parse::<i64>().ok().map(|n| n.to_string()),
        "number" => text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|_| text.trim().to_owned()),
        "boolean" => matches!(text.trim(), "true" | "false").then(|| text.trim().to_owned()),
        _ => None,
    });
    let converted = converted.or_else(|| match (expected, value) {
        ("string", Value::Number(_) | Value::Bool(_)) => Some(format!("\"{value}\"")),
        _ => None,
    });
    let fix = converted.map_or_else(
        || "give it a default of that type or change the type".to_owned(),
        |default| format!("write `*{default} | {written}`, or change the type"),
    );
    error(
        pos,
        format!(
            "{DEFAULT_TYPE_MISMATCH} `{field}` is `{}` ({found}), but its type is `{written}`; {fix}",
            short(value)
        ),
    )
}

/// Lets `schema` also accept `null`: `null` joins its type (and its enum, when it has one).
fn allow_null(schema: &mut Schema) {
    let null = Value::from("null");
    match schema.get_mut("type") {
        Some(Value::String(ty)) => {
            let ty = Value::String(std::mem::take(ty));
            schema.insert("type".into(), Value::Array(vec![ty, null]));
        }
        Some(Value::Array(types)) if !types.contains(&null) => types.push(null),
        // Any type (`_`) already accepts null.
        _ => {}
    }
    if let Some(Value::Array(options)) = schema.get_mut("enum") {
        if !options.contains(&Value::Null) {
            options.push(Value::Null);
        }
    }
}

/// `"a" | "b" | "c"`: an enum of scalars of one type.
pub(super) fn enum_schema(literals: &[(Value, Pos)], pos: Pos) -> Result<Schema> {
    let mut ty: Option<&'static str> = None;
    for (value, at) in literals {
        let this = json_type(value);
        if matches!(this, "array" | "object") {
            return Err(beyond_subset(*at, "an enum of lists or structs"));
        }
        ty = match (ty, this) {
            (None, this) => Some(this),
            (Some(prev), this) if prev == this => Some(prev),
            (Some("integer" | "number"), "integer" | "number") => Some("number"),
            _ => return Err(beyond_subset(*at, "an enum mixing value types")),
        };
    }
    let mut schema = object_map([("type", Value::from(ty.unwrap_or("string")))]);
    let mut options: Vec<Value> = Vec::new();
    for (value, _) in literals {
        if !options.contains(value) {
            options.push(value.clone());
        }
    }
    if options.is_empty() {
        return Err(beyond_subset(pos, "an empty disjunction"));
    }
    schema.insert("enum".into(), Value::Array(options));
    Ok(schema)
}

/// The description of a field from its doc comment: the `+usage=` text (continued by the
/// following lines up to the next `+tag` line), or else the comment lines that are not `+tag`
/// markers, as KubeVela's schema generator does.
pub(super) fn describe_doc(doc: &[String]) -> Option<String> {
    let lines: Vec<&str> = doc.iter().map(|line| line.trim()).collect();
    let usage_at = lines.iter().position(|line| line.starts_with("+usage="));
    let described: Vec<&str> = match usage_at {
        Some(at) => {
            let first = lines
                .get(at)
                .and_then(|l| l.strip_prefix("+usage="))
                .unwrap_or("");
            let rest = lines
                .iter()
                .skip(at + 1)
                .take_while(|l| !l.starts_with('+'));
            std::iter::once(first.trim()).chain(rest.copied()).collect()
        }
        None => lines.into_iter().filter(|l| !l.starts_with('+')).collect(),
    };
    let text = described.join("\n").trim().to_string();
    if text.is_empty() {
        None
    } else {
        Some(text)
    }
}
