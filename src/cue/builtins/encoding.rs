//! `encoding/json`, `encoding/yaml`, `encoding/base64` and `math`, and JSON values as
//! evaluator values.

use std::sync::Arc;

use base64::Engine as _;
use num_bigint::BigInt;
use num_traits::{FromPrimitive as _, Signed};
use serde_json::Value;

use super::{arity, concrete, fail, number, s, string, R};
use crate::cue::ast::{Decl, Elem, Expr, ExprKind, Field, Label, Marker, Pos, StructLit};
use crate::cue::error::ErrorKind;
use crate::cue::eval::{Evaluator, Src};
use crate::cue::value::{bottom, kind, show, Val};

pub(super) fn encoding(ev: &mut Evaluator, name: &str, a: &[Val], pos: Pos) -> R {
    let at = |i: usize| a.get(i).cloned().unwrap_or(Val::Top);
    match name {
        "json.Marshal" | "yaml.Marshal" => {
            arity(name, a, 1, pos)?;
            let as_bottom = |e: crate::cue::Error| {
                let k = if e.kind == ErrorKind::Incomplete {
                    ErrorKind::Incomplete
                } else {
                    ErrorKind::Builtin
                };
                bottom(k, e.to_string(), vec![pos])
            };
            if name == "json.Marshal" {
                let text = ev.text_of(&at(0)).map_err(as_bottom)?;
                Ok(s(escape_line_separators(&text)))
            } else {
                let json = ev.json_of(&at(0)).map_err(as_bottom)?;
                Ok(s(crate::cue::yaml::marshal(&json)))
            }
        }
        "json.Unmarshal" | "yaml.Unmarshal" => {
            arity(name, a, 1, pos)?;
            let text = string(&at(0), pos)?;
            let value: Value = if name == "json.Unmarshal" {
                serde_json::from_str(&text).map_err(|e| fail(format!("invalid JSON: {e}"), pos))?
            } else {
                serde_yaml::from_str(&text).map_err(|e| fail(format!("invalid YAML: {e}"), pos))?
            };
            Ok(from_json(ev, &value, pos))
        }
        "json.Valid" => {
            arity(name, a, 1, pos)?;
            let text = string(&at(0), pos)?;
            Ok(Val::Bool(serde_json::from_str::<Value>(&text).is_ok()))
        }
        "base64.Encode" => {
            arity(name, a, 2, pos)?;
            let data = match concrete(&at(1), pos)? {
                Val::Bytes(b) => b.to_vec(),
                Val::Str(t) => t.as_bytes().to_vec(),
                other => {
                    return Err(fail(
                        format!("expected bytes or a string, got {}", show(&other)),
                        pos,
                    ))
                }
            };
            Ok(s(base64::engine::general_purpose::STANDARD.encode(data)))
        }
        "base64.Decode" => {
            arity(name, a, 2, pos)?;
            let text = string(&at(1), pos)?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text.as_bytes())
                .map_err(|e| fail(format!("invalid base64: {e}"), pos))?;
            Ok(Val::Bytes(Arc::from(bytes)))
        }
        _ if name.starts_with("math.") => math(name, a, pos),
        _ => Err(fail("not supported", pos)),
    }
}

pub(super) fn math(name: &str, a: &[Val], pos: Pos) -> R {
    let short = name.trim_start_matches("math.");
    let two = matches!(short, "Pow");
    arity(name, a, if two { 2 } else { 1 }, pos)?;
    let x = number(a.first().unwrap_or(&Val::Top), pos)?;
    let whole = match short {
        "Floor" => Some(x.floor()),
        "Ceil" => Some(x.ceil()),
        // Half away from zero, as CUE rounds.
        "Round" => Some(x.round()),
        "Trunc" => Some(x.trunc()),
        _ => None,
    };
    if let Some(w) = whole {
        // CUE's Floor, Ceil, Round and Trunc give integers (`int & math.Floor(2.7)` is 2).
        return BigInt::from_f64(w)
            .map(Val::Int)
            .ok_or_else(|| fail("the result is not a finite number", pos));
    }
    let r = match short {
        "Abs" => {
            if let Ok(Val::Int(i)) = concrete(a.first().unwrap_or(&Val::Top), pos) {
                return Ok(Val::Int(i.abs()));
            }
            x.abs()
        }
        "Sqrt" => x.sqrt(),
        "Log" => x.ln(),
        "Log10" => x.log10(),
        "Log2" => x.log2(),
        "Exp" => x.exp(),
        _ => x.powf(number(a.get(1).unwrap_or(&Val::Top), pos)?),
    };
    // CUE's results print without a fraction when they are whole (`math.Log10(1000)` is `3`,
    // `math.Pow(2, 10)` is `1024`): the shortest form.
    crate::cue::value::float(r).map_err(|m| fail(m, pos))
}

/// CUE's `json.Marshal` writes `<`, `>` and `&` as they are (Go's encoder without HTML
/// escaping), but Go's encoder always escapes U+2028 and U+2029.
pub(super) fn escape_line_separators(text: &str) -> String {
    text.replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// A JSON value as an evaluator value (structs and lists become vertices).
pub(crate) fn from_json(ev: &mut Evaluator, value: &Value, pos: Pos) -> Val {
    match value {
        Value::Object(_) | Value::Array(_) => {
            let expr = json_expr(value, pos);
            ev.anonymous(Src::Expr(expr), 0, pos)
        }
        other => scalar_from_json(other),
    }
}

pub(super) fn scalar_from_json(value: &Value) -> Val {
    match value {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Val::Int(BigInt::from(i))
            } else if let Some(u) = n.as_u64() {
                Val::Int(BigInt::from(u))
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                // `1.0` in JSON text stays a float with its point.
                let scale = if f.fract() == 0.0 {
                    1
                } else {
                    crate::cue::value::SHORTEST
                };
                Val::Float(f, scale)
            }
        }
        Value::String(t) => s(t.as_str()),
        _ => Val::Kind(kind::STRUCT),
    }
}

/// A JSON value as a syntax tree (used for `parameter` and `context` values too).
pub(crate) fn json_expr(value: &Value, pos: Pos) -> Arc<Expr> {
    let kind = match value {
        Value::Object(map) => ExprKind::Struct(Arc::new(StructLit {
            decls: map
                .iter()
                .map(|(k, v)| {
                    Decl::Field(Field {
                        label: Label::Str(k.clone()),
                        marker: Marker::Regular,
                        value: json_expr(v, pos),
                        pos,
                    })
                })
                .collect(),
            open: false,
            pos,
        })),
        Value::Array(items) => ExprKind::List {
            elems: items
                .iter()
                .map(|v| Elem::Expr(json_expr(v, pos)))
                .collect(),
            rest: None,
        },
        other => ExprKind::Value(Box::new(scalar_from_json(other))),
    };
    Arc::new(Expr { kind, pos })
}
