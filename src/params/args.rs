//! Parsing of command-line arguments `key=value` into parameter values, typed by the schema.
//!
//! - `key` is a dotted path (`resources.cpu`); an empty segment (`a..b`, `.a`, `a.`) is an error;
//! - the value is typed by the schema at that path: `integer`, `number` and `boolean` are parsed
//!   (a value that does not parse is an error), `string` stays as written (`tag=3` is `"3"`),
//!   `array` is `{a,b}` or `a,b` (or a YAML flow sequence `[a, b]`) with items typed by `items`,
//!   an `enum` keeps the spelling of the option it matches;
//! - without a schema (`any()`, unknown paths) the value is read as a YAML scalar or flow
//!   collection (`3` → 3, `true` → true, `{a: 1}` → object), else kept as a string;
//! - `clusters` is always a list of strings;
//! - a key given twice: the last one wins.

use serde_json::{Map, Value};

use super::error::{InvalidArgument, MASK};
use super::values::{schema_at, Segment};

/// Parses `args` against `schema`; every malformed argument is reported.
pub(crate) fn parse(
    schema: &Value,
    args: &[String],
) -> Result<Map<String, Value>, Vec<InvalidArgument>> {
    let mut out = Map::new();
    let mut problems = Vec::new();
    for arg in args {
        let Some((key, raw)) = arg.split_once('=') else {
            problems.push(InvalidArgument {
                argument: arg.clone(),
                message: "expected `key=value`".to_owned(),
            });
            continue;
        };
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|part| part.is_empty()) {
            problems.push(InvalidArgument {
                argument: key.to_owned(),
                message: "a parameter path must not have empty segments (`a.b`, not `a..b`, `.a` or `a.`)"
                    .to_owned(),
            });
            continue;
        }
        let segments: Vec<Segment> = parts
            .iter()
            .map(|part| Segment::Key((*part).to_owned()))
            .collect();
        let (node, secret) = schema_at(schema, &segments);
        let typed = if parts == ["clusters"] {
            Ok(Value::Array(
                split_list(raw)
                    .into_iter()
                    .map(|s| Value::String(s.to_owned()))
                    .collect(),
            ))
        } else {
            typed_value(node, raw)
        };
        match typed {
            Ok(value) => set_path(&mut out, &parts, value),
            Err(message) => problems.push(InvalidArgument {
                argument: format!("{key}={}", if secret { MASK } else { raw }),
                message,
            }),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// Sets `out[a][b]… = value`, replacing anything in the way that is not an object.
fn set_path(out: &mut Map<String, Value>, parts: &[&str], value: Value) {
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut current = out;
    for part in parents {
        let entry = current
            .entry((*part).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let Value::Object(next) = entry else {
            return;
        };
        current = next;
    }
    current.insert((*last).to_owned(), value);
}

/// The JSON types a schema node allows (`type` as a string or an array).
fn types(node: &Value) -> Vec<&str> {
    match node.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Types one raw value by its schema node; `Err` carries the rule it breaks.
fn typed_value(node: Option<&Value>, raw: &str) -> Result<Value, String> {
    let Some(node) = node else {
        return Ok(untyped(raw));
    };
    let option = node
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|options| matching_option(options, raw));
    if let Some(option) = option {
        return Ok(option.clone());
    }
    let allowed = types(node);
    match allowed.as_slice() {
        [] => Ok(untyped(raw)),
        ["string"] => Ok(Value::String(raw.to_owned())),
        ["integer"] => integer(raw).ok_or_else(|| "expected integer".to_owned()),
        ["number"] => number(raw).ok_or_else(|| "expected number".to_owned()),
        ["boolean"] => {
            boolean(raw).ok_or_else(|| "expected boolean (`true` or `false`)".to_owned())
        }
        ["null"] => null(raw).ok_or_else(|| "expected null".to_owned()),
        ["array"] => list(node, raw),
        ["object"] => flow_collection(raw)
            .filter(Value::is_object)
            .ok_or_else(|| "expected an object such as `{a: 1, b: x}`".to_owned()),
        _ => {
            // Several types allowed: the first reading that fits, strings last.
            for t in &allowed {
                let candidate = match *t {
                    "integer" => integer(raw),
                    "number" => number(raw),
                    "boolean" => boolean(raw),
                    "null" => null(raw),
                    "array" => list(node, raw).ok(),
                    "object" => flow_collection(raw).filter(Value::is_object),
                    _ => None,
                };
                if let Some(value) = candidate {
                    return Ok(value);
                }
            }
            if allowed.contains(&"string") {
                Ok(Value::String(raw.to_owned()))
            } else {
                Err(format!("expected {}", allowed.join(" or ")))
            }
        }
    }
}

/// The enum option spelled like `raw` (a string option as written, a number option by value).
fn matching_option<'o>(options: &'o [Value], raw: &str) -> Option<&'o Value> {
    options
        .iter()
        .find(|o| o.as_str() == Some(raw))
        .or_else(|| {
            let n = number(raw)?.as_f64()?;
            options
                .iter()
                .find(|o| o.as_f64().is_some_and(|v| (v - n).abs() < f64::EPSILON))
        })
}

fn integer(raw: &str) -> Option<Value> {
    raw.trim().parse::<i64>().ok().map(Value::from)
}

fn number(raw: &str) -> Option<Value> {
    let raw = raw.trim();
    if let Ok(i) = raw.parse::<i64>() {
        return Some(Value::from(i));
    }
    let f = raw.parse::<f64>().ok().filter(|f| f.is_finite())?;
    serde_json::Number::from_f64(f).map(Value::Number)
}

fn boolean(raw: &str) -> Option<Value> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        _ => None,
    }
}

fn null(raw: &str) -> Option<Value> {
    matches!(raw.trim(), "null" | "~" | "").then_some(Value::Null)
}

/// `{a,b}`, `a,b`, a single `a`, or a YAML flow sequence `[a, b]`; items typed by `items`.
fn list(node: &Value, raw: &str) -> Result<Value, String> {
    let items_schema = node.get("items").filter(|v| v.is_object());
    if raw.trim_start().starts_with('[') {
        return flow_collection(raw)
            .filter(Value::is_array)
            .ok_or_else(|| "expected a list such as `{a,b}`, `a,b` or `[a, b]`".to_owned());
    }
    let mut out = Vec::new();
    for item in split_list(raw) {
        let value = typed_value(items_schema, item)
            .map_err(|rule| format!("list item `{item}`: {rule}"))?;
        out.push(value);
    }
    Ok(Value::Array(out))
}

/// Splits `{a,b}` or `a,b` into trimmed items; `{}` and the empty string give no items.
fn split_list(raw: &str) -> Vec<&str> {
    let trimmed = raw.trim();
    let inner = trimmed
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or(trimmed);
    if inner.trim().is_empty() {
        return Vec::new();
    }
    inner.split(',').map(str::trim).collect()
}

/// A YAML flow collection (`{…}` or `[…]`), if `raw` is one.
fn flow_collection(raw: &str) -> Option<Value> {
    let trimmed = raw.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    // A value the lenient reader had to adjust (a duplicated key) is not taken as written.
    match crate::yaml::parse_single(raw) {
        Ok((value, warnings)) if warnings.is_empty() => Some(value),
        _ => None,
    }
}

/// A value with no declared type: a YAML scalar or flow collection, else the string itself.
fn untyped(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::String(raw.to_owned());
    }
    if let Some(collection) = flow_collection(raw) {
        return collection;
    }
    let parsed = crate::yaml::parse_single(raw).and_then(|(value, warnings)| {
        if warnings.is_empty() {
            Ok(value)
        } else {
            Err(crate::yaml::YamlError {
                message: warnings.join("; "),
            })
        }
    });
    match parsed {
        Ok(Value::Null) if null(raw).is_some() || raw.trim().eq_ignore_ascii_case("null") => {
            Value::Null
        }
        Ok(value @ (Value::Bool(_) | Value::Number(_) | Value::String(_))) => value,
        _ => Value::String(raw.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_split_on_commas_with_or_without_braces() {
        let table: &[(&str, &[&str])] = &[
            ("a,b", &["a", "b"]),
            ("{a,b}", &["a", "b"]),
            (" { a , b } ", &["a", "b"]),
            ("a", &["a"]),
            ("{}", &[]),
            ("", &[]),
            ("a,,b", &["a", "", "b"]),
        ];
        for (raw, expected) in table {
            assert_eq!(split_list(raw), *expected, "{raw:?}");
        }
    }

    #[test]
    fn untyped_values_read_as_yaml_scalars_or_flow_collections() {
        let table: &[(&str, Value)] = &[
            ("3", json!(3)),
            ("-1.5", json!(-1.5)),
            ("true", json!(true)),
            ("yes", json!("yes")),
            ("null", json!(null)),
            ("~", json!(null)),
            ("", json!("")),
            ("  ", json!("  ")),
            ("hello world", json!("hello world")),
            ("'3'", json!("3")),
            ("a: b", json!("a: b")),
            ("- a", json!("- a")),
            ("[1, a]", json!([1, "a"])),
            ("{a: {b: 1}}", json!({"a": {"b": 1}})),
            ("{unclosed", json!("{unclosed")),
            (".nan", json!(".nan")),
            ("1e400", json!("1e400")),
        ];
        for (raw, expected) in table {
            assert_eq!(untyped(raw), *expected, "{raw:?}");
        }
    }

    #[test]
    fn several_allowed_types_take_the_first_reading_that_fits() {
        let node = json!({"type": ["integer", "boolean", "string"]});
        let table: &[(&str, Value)] = &[("3", json!(3)), ("true", json!(true)), ("x", json!("x"))];
        for (raw, expected) in table {
            assert_eq!(typed_value(Some(&node), raw), Ok(expected.clone()), "{raw}");
        }
        let node = json!({"type": ["integer", "null"]});
        assert_eq!(typed_value(Some(&node), "null"), Ok(Value::Null));
        assert_eq!(
            typed_value(Some(&node), "x"),
            Err("expected integer or null".to_owned())
        );
    }
}
