//! The Rhai side of parameter declarations: the [`ParameterType`] custom type, its constructors
//! (`int`, `uint`, `pint`, `float`, `string`, `bool`, `list`, `object`, `map_of`, `enum_of`, `any`)
//! and its refinements (`.min`, `.max`, `.min_len`, `.max_len`, `.pattern`, `.optional`,
//! `.required`, `.usage`, `.secret`).
//!
//! Constructors and refinements only check the Rhai types of their arguments (a wrong one is a
//! script error with the script's line and column). Whether a refinement applies to the type and
//! whether a default satisfies the declaration is checked when the declarations are compiled, where
//! the parameter's name is known (see `compile`).
//!
//! Rhai object maps are sorted by key, so the declaration order of `#{ … }` is lost in the
//! evaluated value. Every constructor call therefore takes a number from a global counter; map
//! literal values are evaluated in source order, so sorting the entries by the first number of
//! their expression restores the order in which the parameters were written.

use std::sync::atomic::{AtomicU64, Ordering};

use rhai::{CustomType, Dynamic, EvalAltResult, TypeBuilder, INT};
use serde_json::Value;

/// How deeply types may nest (`list(list(…))`, `object(#{ a: object(…) })`).
pub(crate) const MAX_TYPE_DEPTH: usize = 32;

type ScriptResult<T> = Result<T, Box<EvalAltResult>>;

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

fn next_sequence() -> u64 {
    SEQUENCE.fetch_add(1, Ordering::Relaxed)
}

/// Whether a parameter must, may or (by default rules) must-unless-defaulted be given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Presence {
    /// Required when it has no default.
    Implied,
    /// `.optional()`: may be absent.
    Optional,
    /// `.required()`: must be given.
    Required,
}

/// The shape of a parameter type.
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    Int,
    Uint,
    Pint,
    Float,
    String,
    Bool,
    List(Box<ParameterType>),
    Object(Vec<(String, ParameterType)>),
    MapOf(Box<ParameterType>),
    Enum(Vec<Value>),
    Any,
}

impl Kind {
    /// The constructor that makes this kind, as the script writes it.
    pub(crate) fn constructor(&self) -> &'static str {
        match self {
            Self::Int => "int",
            Self::Uint => "uint",
            Self::Pint => "pint",
            Self::Float => "float",
            Self::String => "string",
            Self::Bool => "bool",
            Self::List(_) => "list",
            Self::Object(_) => "object",
            Self::MapOf(_) => "map_of",
            Self::Enum(_) => "enum_of",
            Self::Any => "any",
        }
    }
}

/// A parameter type as built by `parameter.rhai` (`pint(1).max(10).usage("…")`).
///
/// Opaque to scripts: it is only built with the constructors and refined with the methods that
/// [`register`](super::register) adds, then compiled by
/// [`ParameterSchema::from_rhai`](super::ParameterSchema::from_rhai).
#[derive(Clone, Debug, CustomType)]
#[rhai_type(name = "ParameterType", extra = Self::build_rhai_api)]
pub struct ParameterType {
    #[rhai_type(skip)]
    pub(crate) kind: Kind,
    #[rhai_type(skip)]
    pub(crate) default: Option<Value>,
    #[rhai_type(skip)]
    pub(crate) min: Option<serde_json::Number>,
    #[rhai_type(skip)]
    pub(crate) max: Option<serde_json::Number>,
    #[rhai_type(skip)]
    pub(crate) min_len: Option<u64>,
    #[rhai_type(skip)]
    pub(crate) max_len: Option<u64>,
    #[rhai_type(skip)]
    pub(crate) pattern: Option<String>,
    #[rhai_type(skip)]
    pub(crate) presence: Presence,
    #[rhai_type(skip)]
    pub(crate) usage: Option<String>,
    #[rhai_type(skip)]
    pub(crate) secret: bool,
    /// Order of construction (smallest of the subtree), used to restore declaration order.
    #[rhai_type(skip)]
    pub(crate) sequence: u64,
    /// Nesting depth (1 for a scalar).
    #[rhai_type(skip)]
    pub(crate) depth: usize,
}

impl ParameterType {
    fn new(kind: Kind, default: Option<Value>) -> ScriptResult<Self> {
        let own = next_sequence();
        let (sequence, depth) = match &kind {
            Kind::List(item) | Kind::MapOf(item) => (item.sequence.min(own), item.depth + 1),
            Kind::Object(fields) => (
                fields
                    .iter()
                    .map(|(_, field)| field.sequence)
                    .fold(own, u64::min),
                fields
                    .iter()
                    .map(|(_, field)| field.depth)
                    .max()
                    .unwrap_or(0)
                    + 1,
            ),
            _ => (own, 1),
        };
        if depth > MAX_TYPE_DEPTH {
            return Err(
                format!("parameter types may nest at most {MAX_TYPE_DEPTH} levels deep").into(),
            );
        }
        Ok(Self {
            kind,
            default,
            min: None,
            max: None,
            min_len: None,
            max_len: None,
            pattern: None,
            presence: Presence::Implied,
            usage: None,
            secret: false,
            sequence,
            depth,
        })
    }

    /// Registers the constructors and refinements (called by `Engine::build_type`).
    fn build_rhai_api(builder: &mut TypeBuilder<Self>) {
        builder
            .on_print(|t| format!("{}(…)", t.kind.constructor()))
            .on_debug(|t| format!("{}(…)", t.kind.constructor()));

        Self::register_scalars(builder);
        Self::register_composites(builder);
        Self::register_refinements(builder);
    }

    /// `int()` and `int(default)`, and likewise for every scalar and `any`.
    fn register_scalars(builder: &mut TypeBuilder<Self>) {
        // Scalars: `int()` and `int(default)`. Defaults are taken as `Dynamic` so that a wrong
        // one gets a clear message instead of "function not found".
        builder
            .with_fn("int", || Self::new(Kind::Int, None))
            .with_fn("int", |d: Dynamic| {
                Self::new(Kind::Int, Some(integer_default("int", &d)?))
            })
            .with_fn("uint", || Self::new(Kind::Uint, None))
            .with_fn("uint", |d: Dynamic| {
                Self::new(Kind::Uint, Some(integer_default("uint", &d)?))
            })
            .with_fn("pint", || Self::new(Kind::Pint, None))
            .with_fn("pint", |d: Dynamic| {
                Self::new(Kind::Pint, Some(integer_default("pint", &d)?))
            })
            .with_fn("float", || Self::new(Kind::Float, None))
            .with_fn("float", |d: Dynamic| {
                Self::new(Kind::Float, Some(float_default(&d)?))
            })
            .with_fn("string", || Self::new(Kind::String, None))
            .with_fn("string", |d: Dynamic| {
                let Some(text) = d
                    .read_lock::<rhai::ImmutableString>()
                    .map(|s| s.to_string())
                else {
                    return Err(wrong("string(default)", "a string", &d));
                };
                Self::new(Kind::String, Some(Value::String(text)))
            })
            .with_fn("bool", || Self::new(Kind::Bool, None))
            .with_fn("bool", |d: Dynamic| {
                let Ok(flag) = d.as_bool() else {
                    return Err(wrong("bool(default)", "`true` or `false`", &d));
                };
                Self::new(Kind::Bool, Some(Value::Bool(flag)))
            })
            .with_fn("any", || Self::new(Kind::Any, None))
            .with_fn("any", |d: Dynamic| {
                Self::new(Kind::Any, Some(to_json("any(default)", &d)?))
            });
    }

    /// `list`, `object`, `map_of`, `enum_of`.
    fn register_composites(builder: &mut TypeBuilder<Self>) {
        builder
            .with_fn("list", |item: Dynamic| {
                Self::new(Kind::List(Box::new(parameter_type("list(T)", &item)?)), None)
            })
            .with_fn("list", |item: Dynamic, d: Dynamic| {
                let item = parameter_type("list(T, default)", &item)?;
                if !d.is_array() {
                    return Err(wrong("list(T, default)", "an array as default", &d));
                }
                Self::new(Kind::List(Box::new(item)), Some(to_json("list(T, default)", &d)?))
            })
            .with_fn("object", |fields: Dynamic| {
                let Some(map) = d_map(&fields) else {
                    return Err(wrong("object(fields)", "a map `#{ name: type, … }`", &fields));
                };
                let mut out = Vec::with_capacity(map.len());
                for (name, value) in map {
                    let Some(field) = value.clone().flatten().try_cast::<Self>() else {
                        return Err(format!(
                            "`object(fields)`: field `{name}` must be a parameter type such as `string()`, got {}",
                            describe(&value)
                        )
                        .into());
                    };
                    out.push((name.to_string(), field));
                }
                sort_declarations(&mut out);
                Self::new(Kind::Object(out), None)
            })
            .with_fn("map_of", |item: Dynamic| {
                Self::new(Kind::MapOf(Box::new(parameter_type("map_of(T)", &item)?)), None)
            })
            .with_fn("map_of", |item: Dynamic, d: Dynamic| {
                let item = parameter_type("map_of(T, default)", &item)?;
                if !d.is_map() {
                    return Err(wrong("map_of(T, default)", "a map as default", &d));
                }
                Self::new(Kind::MapOf(Box::new(item)), Some(to_json("map_of(T, default)", &d)?))
            })
            .with_fn("enum_of", |values: Dynamic| Self::new(Kind::Enum(enum_values(&values)?), None))
            .with_fn("enum_of", |values: Dynamic, d: Dynamic| {
                let values = enum_values(&values)?;
                let default = enum_value("enum_of(values, default)", &d)?;
                Self::new(Kind::Enum(values), Some(default))
            });
    }

    /// `.min`, `.max`, `.min_len`, `.max_len`, `.pattern`, `.usage`, `.optional`, `.required`,
    /// `.secret`: each returns a refined copy.
    fn register_refinements(builder: &mut TypeBuilder<Self>) {
        builder
            .with_fn("min", |t: Self, n: Dynamic| {
                Ok::<_, Box<EvalAltResult>>(Self {
                    min: Some(number(".min(n)", &n)?),
                    ..t
                })
            })
            .with_fn("max", |t: Self, n: Dynamic| {
                Ok::<_, Box<EvalAltResult>>(Self {
                    max: Some(number(".max(n)", &n)?),
                    ..t
                })
            })
            .with_fn("min_len", |t: Self, n: Dynamic| {
                Ok::<_, Box<EvalAltResult>>(Self {
                    min_len: Some(length(".min_len(n)", &n)?),
                    ..t
                })
            })
            .with_fn("max_len", |t: Self, n: Dynamic| {
                Ok::<_, Box<EvalAltResult>>(Self {
                    max_len: Some(length(".max_len(n)", &n)?),
                    ..t
                })
            })
            .with_fn("pattern", |t: Self, re: Dynamic| {
                Ok::<_, Box<EvalAltResult>>(Self {
                    pattern: Some(text(".pattern(re)", &re)?),
                    ..t
                })
            })
            .with_fn("usage", |t: Self, s: Dynamic| {
                Ok::<_, Box<EvalAltResult>>(Self {
                    usage: Some(text(".usage(text)", &s)?),
                    ..t
                })
            })
            .with_fn("optional", |t: Self| Self {
                presence: Presence::Optional,
                ..t
            })
            .with_fn("required", |t: Self| Self {
                presence: Presence::Required,
                ..t
            })
            .with_fn("secret", |t: Self| Self { secret: true, ..t });
    }
}

/// Sorts declarations into the order they were written (see the module header); ties (one type
/// value used for several names) keep the map's order, which is by name.
pub(crate) fn sort_declarations(entries: &mut [(String, ParameterType)]) {
    entries.sort_by_key(|(_, t)| t.sequence);
}

fn d_map(d: &Dynamic) -> Option<rhai::Map> {
    d.clone().flatten().try_cast::<rhai::Map>()
}

fn parameter_type(call: &str, d: &Dynamic) -> ScriptResult<ParameterType> {
    d.clone()
        .flatten()
        .try_cast::<ParameterType>()
        .ok_or_else(|| wrong(call, "a parameter type such as `string()` for T", d))
}

fn integer_default(name: &str, d: &Dynamic) -> ScriptResult<Value> {
    d.as_int()
        .map(Value::from)
        .map_err(|_| wrong(&format!("{name}(default)"), "an integer", d))
}

/// A float default; an integer is accepted and stored as a float (`float(1)` → `1.0`).
fn float_default(d: &Dynamic) -> ScriptResult<Value> {
    let n = number("float(default)", d)?;
    Ok(n.as_f64()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Number(n), Value::Number))
}

/// A finite number (integer or float) as JSON.
fn number(call: &str, d: &Dynamic) -> ScriptResult<serde_json::Number> {
    if let Ok(i) = d.as_int() {
        return Ok(i.into());
    }
    d.as_float()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .ok_or_else(|| wrong(call, "a finite number", d))
}

fn length(call: &str, d: &Dynamic) -> ScriptResult<u64> {
    d.as_int()
        .ok()
        .and_then(|i: INT| u64::try_from(i).ok())
        .ok_or_else(|| wrong(call, "an integer >= 0", d))
}

fn text(call: &str, d: &Dynamic) -> ScriptResult<String> {
    d.read_lock::<rhai::ImmutableString>()
        .map(|s| s.to_string())
        .ok_or_else(|| wrong(call, "a string", d))
}

fn enum_values(d: &Dynamic) -> ScriptResult<Vec<Value>> {
    let call = "enum_of(values)";
    let Some(values) = d.clone().flatten().try_cast::<rhai::Array>() else {
        return Err(wrong(call, "an array of strings or numbers", d));
    };
    if values.is_empty() {
        return Err(format!("`{call}` expects at least one value").into());
    }
    let mut out: Vec<Value> = Vec::with_capacity(values.len());
    for value in &values {
        let value = enum_value(call, value)?;
        if out.contains(&value) {
            return Err(format!("`{call}`: the value {value} is listed twice").into());
        }
        out.push(value);
    }
    Ok(out)
}

fn enum_value(call: &str, d: &Dynamic) -> ScriptResult<Value> {
    if let Some(s) = d.read_lock::<rhai::ImmutableString>() {
        return Ok(Value::String(s.to_string()));
    }
    number(call, d)
        .map(Value::Number)
        .map_err(|_| wrong(call, "strings or numbers", d))
}

fn to_json(call: &str, d: &Dynamic) -> ScriptResult<Value> {
    rhai::serde::from_dynamic::<Value>(d).map_err(|error| {
        format!("`{call}`: the value cannot be used as a parameter value ({error})").into()
    })
}

#[expect(
    clippy::unnecessary_box_returns,
    reason = "Rhai functions fail with `Box<EvalAltResult>`"
)]
fn wrong(call: &str, expected: &str, got: &Dynamic) -> Box<EvalAltResult> {
    format!("`{call}` expects {expected}, got {}", describe(got)).into()
}

/// `string "x"`, `integer 3`, `map`, … for messages.
pub(crate) fn describe(d: &Dynamic) -> String {
    const LIMIT: usize = 60;
    let kind = if d.is_int() {
        "integer"
    } else if d.is_float() {
        "float"
    } else if d.is_string() {
        "string"
    } else if d.is_bool() {
        "bool"
    } else if d.is_unit() {
        return "`()`".to_owned();
    } else if d.is_array() {
        return "an array".to_owned();
    } else if d.is_map() {
        return "a map".to_owned();
    } else if d.is::<ParameterType>() {
        return "a parameter type".to_owned();
    } else {
        return format!("a value of type `{}`", d.type_name());
    };
    let mut shown = format!("{d:?}");
    if shown.chars().count() > LIMIT {
        shown = shown.chars().take(LIMIT).collect::<String>() + "…";
    }
    format!("{kind} {shown}")
}
