#![allow(clippy::many_single_char_names)]

//! Scalar values and constraints, and their unification (meet).
//!
//! Structs and lists are vertices of the evaluator ([`Val::Struct`], [`Val::List`] hold their
//! ids); everything else — concrete scalars, basic types, bounds, conjunctions of constraints and
//! disjunctions with defaults — is a [`Val`] unified here.

use std::fmt::Write as _;
use std::sync::Arc;

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

use super::error::ErrorKind;
use super::error::Pos;

/// A vertex id of the evaluator.
pub(crate) type VId = usize;

/// Basic kinds as a bit set.
pub(crate) mod kind {
    pub(crate) const NULL: u8 = 1;
    pub(crate) const BOOL: u8 = 2;
    pub(crate) const INT: u8 = 4;
    pub(crate) const FLOAT: u8 = 8;
    pub(crate) const STRING: u8 = 16;
    pub(crate) const BYTES: u8 = 32;
    pub(crate) const STRUCT: u8 = 64;
    pub(crate) const LIST: u8 = 128;
    pub(crate) const NUMBER: u8 = INT | FLOAT;
    pub(crate) const ALL: u8 = 255;
}

/// Why a value is bottom.
#[derive(Debug, Clone)]
pub(crate) struct Bottom {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
    pub(crate) positions: Vec<Pos>,
    pub(crate) path: Option<String>,
}

/// A bound's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoundOp {
    Lt,
    Le,
    Gt,
    Ge,
    Ne,
    Match,
    NotMatch,
}

impl BoundOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            BoundOp::Lt => "<",
            BoundOp::Le => "<=",
            BoundOp::Gt => ">",
            BoundOp::Ge => ">=",
            BoundOp::Ne => "!=",
            BoundOp::Match => "=~",
            BoundOp::NotMatch => "!~",
        }
    }
}

/// A value of the evaluator.
#[derive(Debug, Clone)]
pub(crate) enum Val {
    Top,
    Bottom(Arc<Bottom>),
    Null,
    Bool(bool),
    Int(BigInt),
    /// A decimal number: its value and the digits after the point it keeps (as CUE's
    /// decimals do: `2 * 1.0` is `2.0`, `0.1 + 0.2` is `0.3`); `SHORTEST` when unknown.
    Float(f64, i16),
    Str(Arc<str>),
    Bytes(Arc<[u8]>),
    /// A basic type (or a union of them): `int`, `string`, `number`, …
    Kind(u8),
    Bound(BoundOp, Arc<Val>),
    /// A conjunction of constraints that is not concrete yet (`int & >0`).
    All(Arc<Vec<Val>>),
    /// Disjuncts with their default marks.
    Disj(Arc<Vec<(Val, bool)>>),
    Struct(VId),
    List(VId),
    /// A standard-library function (`strings.Join`, `len`).
    Func(&'static str),
}

pub(crate) fn bottom(kind: ErrorKind, message: impl Into<String>, positions: Vec<Pos>) -> Val {
    Val::Bottom(Arc::new(Bottom {
        kind,
        message: message.into(),
        positions,
        path: None,
    }))
}

pub(crate) fn conflict(message: impl Into<String>) -> Val {
    bottom(ErrorKind::Conflict, message, Vec::new())
}

impl Val {
    pub(crate) fn is_bottom(&self) -> bool {
        matches!(self, Val::Bottom(_))
    }

    pub(crate) fn is_concrete(&self) -> bool {
        matches!(
            self,
            Val::Null
                | Val::Bool(_)
                | Val::Int(_)
                | Val::Float(..)
                | Val::Str(_)
                | Val::Bytes(_)
                | Val::Struct(_)
                | Val::List(_)
        )
    }

    /// The kinds this value may still take.
    pub(crate) fn kinds(&self) -> u8 {
        match self {
            Val::Top => kind::ALL,
            Val::Bottom(_) | Val::Func(_) => 0,
            Val::Null => kind::NULL,
            Val::Bool(_) => kind::BOOL,
            Val::Int(_) => kind::INT,
            Val::Float(..) => kind::FLOAT,
            Val::Str(_) => kind::STRING,
            Val::Bytes(_) => kind::BYTES,
            Val::Kind(k) => *k,
            Val::Bound(op, v) => match op {
                BoundOp::Match | BoundOp::NotMatch => kind::STRING,
                BoundOp::Ne => kind::ALL,
                _ => {
                    v.kinds()
                        | if v.kinds() & kind::NUMBER != 0 {
                            kind::NUMBER
                        } else {
                            0
                        }
                }
            },
            Val::All(vs) => vs.iter().fold(kind::ALL, |k, v| k & v.kinds()),
            Val::Disj(ds) => ds.iter().fold(0, |k, (v, _)| k | v.kinds()),
            Val::Struct(_) => kind::STRUCT,
            Val::List(_) => kind::LIST,
        }
    }

    /// The default of a disjunction (the value itself otherwise).
    pub(crate) fn default_value(&self) -> Val {
        let Val::Disj(ds) = self else {
            return self.clone();
        };
        let defaults: Vec<(Val, bool)> = ds
            .iter()
            .filter(|(_, d)| *d)
            .map(|(v, _)| (v.clone(), false))
            .collect();
        if defaults.is_empty() {
            return self.clone();
        }
        normalize_disj(defaults)
    }
}

/// Render a value for messages (`2`, `"two"`, `int`, `>=1`, `{…}`).
pub(crate) fn show(v: &Val) -> String {
    match v {
        Val::Top => "_".into(),
        Val::Bottom(b) => format!("_|_ ({})", b.message),
        Val::Null => "null".into(),
        Val::Bool(b) => b.to_string(),
        Val::Int(i) => i.to_string(),
        Val::Float(f, s) => show_float(*f, *s),
        Val::Str(s) => {
            let mut out = serde_json::to_string(&**s).unwrap_or_default();
            if out.len() > 60 {
                let cut = out.char_indices().nth(50).map_or(out.len(), |(i, _)| i);
                out.truncate(cut);
                out.push_str("…\"");
            }
            out
        }
        Val::Bytes(b) => format!("'{}'", String::from_utf8_lossy(b)),
        Val::Kind(k) => kind_name(*k),
        Val::Bound(op, v) => format!("{}{}", op.symbol(), show(v)),
        Val::All(vs) => vs.iter().map(show).collect::<Vec<_>>().join(" & "),
        Val::Disj(ds) => ds
            .iter()
            .map(|(v, d)| format!("{}{}", if *d { "*" } else { "" }, show(v)))
            .collect::<Vec<_>>()
            .join(" | "),
        Val::Struct(_) => "{…}".into(),
        Val::List(_) => "[…]".into(),
        Val::Func(name) => format!("{name} (a function)"),
    }
}

/// The scale of a float whose digits are unknown (printed in the shortest form).
pub(crate) const SHORTEST: i16 = -1;

/// The "scale" of a whole quotient with two or more trailing zeros: CUE keeps one of them as a
/// digit and prints the rest as an exponent (`200 / 2` is `1.0E+2`, `3000 / 2` is `1.50E+3`).
pub(crate) const SCIENTIFIC: i16 = -2;

/// A float as CUE prints it: with its scale, or in the shortest form (`2`, `3.5`).
pub(crate) fn show_float(f: f64, scale: i16) -> String {
    if scale == SCIENTIFIC && f.fract() == 0.0 && f.abs() < 1e15 && f != 0.0 {
        return scientific(f);
    }
    match usize::try_from(scale) {
        Ok(s) if s <= 17 && f.abs() < 1e15 => format!("{f:.s$}"),
        _ => {
            if f.abs() >= 1e21 || (f != 0.0 && f.abs() < 1e-6) {
                format!("{f:e}")
            } else {
                format!("{f}")
            }
        }
    }
}

/// A whole number with two or more trailing zeros as CUE prints a quotient of that value: the
/// digits without all but one trailing zero, a point after the first, the exponent.
fn scientific(f: f64) -> String {
    let digits = format!("{:.0}", f.abs());
    let zeros = digits.len() - digits.trim_end_matches('0').len();
    let kept = &digits[..digits.len() - zeros.saturating_sub(1)];
    let sign = if f < 0.0 { "-" } else { "" };
    format!("{sign}{}.{}E+{}", &kept[..1], &kept[1..], digits.len() - 1)
}

/// The scale CUE v0.9 gives a quotient that is a whole number: its decimal division keeps 34
/// digits and then drops all trailing zeros but one, so `4 / 2` is `2.0` (a float), `20 / 2`
/// is `10` (one zero: the digit kept makes it look whole), `200 / 2` is `1.0E+2`, `0 / 5` is `0`.
fn whole_quotient_scale(q: &BigInt) -> i16 {
    if q.is_zero() {
        return 0;
    }
    let digits = q.abs().to_string();
    match digits.len() - digits.trim_end_matches('0').len() {
        0 => 1,
        1 => 0,
        _ => SCIENTIFIC,
    }
}

/// A number as an exact decimal `coefficient / 10^scale`, when its digits are known.
fn decimal(v: &Val) -> Option<(BigInt, u32)> {
    match v {
        Val::Int(i) => Some((i.clone(), 0)),
        Val::Float(f, s) if *s >= 0 && *s <= 17 && f.abs() < 1e15 => {
            let scale = usize::try_from(*s).ok()?;
            let text = format!("{f:.scale$}").replace('.', "");
            Some((text.parse().ok()?, u32::try_from(scale).ok()?))
        }
        _ => None,
    }
}

/// `a / b` as CUE's decimal division gives it, when both digits are known and the quotient is
/// a whole number.
fn whole_quotient(a: &Val, b: &Val) -> Option<Val> {
    let ((x, sx), (y, sy)) = (decimal(a)?, decimal(b)?);
    if y.is_zero() {
        return None;
    }
    // x / 10^sx ÷ y / 10^sy = (x · 10^sy) / (y · 10^sx)
    let num = x * BigInt::from(10u32).pow(sy);
    let den = y * BigInt::from(10u32).pow(sx);
    if !(&num % &den).is_zero() {
        return None;
    }
    let q = num / den;
    let f = q.to_f64()?;
    f.is_finite()
        .then(|| Val::Float(f, whole_quotient_scale(&q)))
}

/// Round `f` to `scale` digits after the point (the decimal result CUE computes).
pub(crate) fn round_to(f: f64, scale: i16) -> f64 {
    match usize::try_from(scale) {
        Ok(s) if s <= 17 && f.abs() < 1e15 => format!("{f:.s$}").parse().unwrap_or(f),
        _ => f,
    }
}

pub(crate) fn kind_name(k: u8) -> String {
    const NAMES: [(u8, &str); 8] = [
        (kind::NULL, "null"),
        (kind::BOOL, "bool"),
        (kind::INT, "int"),
        (kind::FLOAT, "float"),
        (kind::STRING, "string"),
        (kind::BYTES, "bytes"),
        (kind::STRUCT, "struct"),
        (kind::LIST, "list"),
    ];
    if k == kind::ALL {
        return "_".into();
    }
    if k == 0 {
        return "_|_".into();
    }
    let mut rest = k;
    let mut parts = Vec::new();
    if rest & kind::NUMBER == kind::NUMBER {
        parts.push("number");
        rest &= !kind::NUMBER;
    }
    for (bit, name) in NAMES {
        if rest & bit != 0 {
            parts.push(name);
        }
    }
    parts.join(" | ")
}

/// Equality of two concrete scalars (structs and lists compare by the evaluator).
pub(crate) fn scalar_eq(a: &Val, b: &Val) -> Option<bool> {
    Some(match (a, b) {
        (Val::Null, Val::Null) => true,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (Val::Int(x), Val::Int(y)) => x == y,
        (Val::Float(x, _), Val::Float(y, _)) => x == y,
        (Val::Int(x), Val::Float(y, _)) | (Val::Float(y, _), Val::Int(x)) => x.to_f64() == Some(*y),
        (Val::Str(x), Val::Str(y)) => x == y,
        (Val::Bytes(x), Val::Bytes(y)) => x == y,
        (Val::Kind(x), Val::Kind(y)) => x == y,
        (Val::Struct(_) | Val::List(_), _) | (_, Val::Struct(_) | Val::List(_)) => return None,
        _ if a.is_concrete() && b.is_concrete() => false,
        _ => return None,
    })
}

/// Unify two non-struct values. Structs and lists are unified by the evaluator; here they
/// only meet kinds and `_`.
pub(crate) fn meet(a: &Val, b: &Val) -> Val {
    match (a, b) {
        (Val::Bottom(_), _) | (_, Val::Top) => a.clone(),
        (_, Val::Bottom(_)) | (Val::Top, _) => b.clone(),
        (Val::Disj(_), _) | (_, Val::Disj(_)) => meet_disj(a, b),
        (Val::All(_), _) | (_, Val::All(_)) => meet_all(a, b),
        (Val::Kind(x), Val::Kind(y)) => {
            let k = x & y;
            if k == 0 {
                conflict(format!(
                    "conflicting values {} and {} (mismatched types)",
                    show(a),
                    show(b)
                ))
            } else {
                Val::Kind(k)
            }
        }
        (Val::Kind(k), v) | (v, Val::Kind(k)) => meet_kind(*k, v, a, b),
        (Val::Bound(..), Val::Bound(..)) => {
            if a.kinds() & b.kinds() == 0 {
                return conflict(format!("conflicting values {} and {}", show(a), show(b)));
            }
            Val::All(Arc::new(vec![a.clone(), b.clone()]))
        }
        (Val::Bound(op, limit), v) | (v, Val::Bound(op, limit)) => {
            if !v.is_concrete() {
                return Val::All(Arc::new(vec![a.clone(), b.clone()]));
            }
            match check_bound(*op, limit, v) {
                Ok(true) => v.clone(),
                Ok(false) => conflict(format!(
                    "invalid value {} (out of bound {}{})",
                    show(v),
                    op.symbol(),
                    show(limit)
                )),
                Err(message) => conflict(message),
            }
        }
        (Val::Func(x), Val::Func(y)) if x == y => a.clone(),
        _ => match scalar_eq(a, b) {
            Some(true) if a.kinds() == b.kinds() => a.clone(),
            Some(_) if a.kinds() != b.kinds() => conflict(format!(
                "conflicting values {} and {} (mismatched types {} and {})",
                show(a),
                show(b),
                kind_name(a.kinds()),
                kind_name(b.kinds())
            )),
            _ => conflict(format!("conflicting values {} and {}", show(a), show(b))),
        },
    }
}

/// Unify conjunctions of constraints without recursion: a concrete value is checked against
/// every constraint; otherwise the constraints are collected (kinds intersected).
fn meet_all(a: &Val, b: &Val) -> Val {
    let mut parts: Vec<Val> = Vec::new();
    for v in [a, b] {
        match v {
            Val::All(xs) => parts.extend(xs.iter().cloned()),
            other => parts.push(other.clone()),
        }
    }
    if let Some(c) = parts.iter().find(|p| p.is_concrete()).cloned() {
        let mut acc = c;
        for p in &parts {
            if matches!(p, Val::All(_)) {
                continue;
            }
            acc = meet(&acc, p);
            if acc.is_bottom() {
                return acc;
            }
        }
        return acc;
    }
    let mut k = kind::ALL;
    let mut rest: Vec<Val> = Vec::new();
    for p in parts {
        k &= p.kinds();
        match p {
            Val::Kind(_) | Val::Top => {}
            other => {
                if !rest.iter().any(|r| same_constraint(r, &other)) {
                    rest.push(other);
                }
            }
        }
    }
    if k == 0 {
        return conflict(format!("conflicting values {} and {}", show(a), show(b)));
    }
    let implied = rest.iter().fold(kind::ALL, |acc, r| acc & r.kinds());
    let mut out = Vec::new();
    if implied & !k != 0 || rest.is_empty() {
        out.push(Val::Kind(k));
    }
    out.extend(rest);
    if out.len() == 1 {
        return out.pop().unwrap_or(Val::Top);
    }
    Val::All(Arc::new(out))
}

fn same_constraint(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Bound(x, l), Val::Bound(y, m)) => x == y && scalar_eq(l, m) == Some(true),
        _ => false,
    }
}

fn meet_kind(k: u8, v: &Val, a: &Val, b: &Val) -> Val {
    let vk = v.kinds();
    if k & vk == 0 {
        return conflict(format!(
            "conflicting values {} and {} (mismatched types {} and {})",
            show(a),
            show(b),
            kind_name(a.kinds()),
            kind_name(b.kinds())
        ));
    }
    if v.is_concrete() {
        return v.clone();
    }
    if vk & !k == 0 {
        return v.clone();
    }
    Val::All(Arc::new(vec![Val::Kind(k), v.clone()]))
}

fn disjuncts(v: &Val) -> (Vec<(Val, bool)>, bool) {
    match v {
        Val::Disj(ds) => {
            let has = ds.iter().any(|(_, d)| *d);
            (ds.as_ref().clone(), has)
        }
        _ => (vec![(v.clone(), false)], false),
    }
}

fn meet_disj(a: &Val, b: &Val) -> Val {
    let (xs, xd) = disjuncts(a);
    let (ys, yd) = disjuncts(b);
    let mut out = Vec::new();
    for (x, dx) in &xs {
        for (y, dy) in &ys {
            let m = meet(x, y);
            let default = (xd || yd) && (*dx || !xd) && (*dy || !yd);
            out.push((m, default));
        }
    }
    match normalize_disj(out) {
        // No disjunct fits: name the whole disjunction, as `*1 | int`.
        Val::Bottom(e) if e.kind == ErrorKind::Conflict => {
            conflict(format!("conflicting values {} and {}", show(a), show(b)))
        }
        other => other,
    }
}

/// Drop failed disjuncts, merge equal ones, and collapse a single one.
pub(crate) fn normalize_disj(ds: Vec<(Val, bool)>) -> Val {
    let mut first_error = None;
    let mut out: Vec<(Val, bool)> = Vec::new();
    for (v, d) in ds {
        match v {
            Val::Bottom(_) => {
                if first_error.is_none() {
                    first_error = Some(v);
                }
            }
            Val::Disj(inner) => {
                let inner_has = inner.iter().any(|(_, x)| *x);
                for (iv, id) in inner.iter() {
                    push_unique(&mut out, iv.clone(), d && (*id || !inner_has));
                }
            }
            _ => push_unique(&mut out, v, d),
        }
    }
    match out.len() {
        0 => first_error.unwrap_or_else(|| conflict("empty disjunction")),
        1 => out.pop().map_or(Val::Top, |(v, _)| v),
        _ => Val::Disj(Arc::new(out)),
    }
}

fn push_unique(out: &mut Vec<(Val, bool)>, v: Val, d: bool) {
    for (existing, ed) in out.iter_mut() {
        if scalar_eq(existing, &v) == Some(true) && existing.kinds() == v.kinds() {
            *ed |= d;
            return;
        }
    }
    out.push((v, d));
}

/// Whether the concrete `v` satisfies `op limit`.
pub(crate) fn check_bound(op: BoundOp, limit: &Val, v: &Val) -> Result<bool, String> {
    match op {
        BoundOp::Ne => Ok(scalar_eq(limit, v) != Some(true)),
        BoundOp::Match | BoundOp::NotMatch => {
            let (Val::Str(re), Val::Str(s)) = (limit, v) else {
                return Ok(false);
            };
            let matched = regex_match(re, s)?;
            Ok(matched == (op == BoundOp::Match))
        }
        _ => {
            let Some(ord) = compare(v, limit) else {
                return Ok(false);
            };
            Ok(match op {
                BoundOp::Lt => ord.is_lt(),
                BoundOp::Le => ord.is_le(),
                BoundOp::Gt => ord.is_gt(),
                _ => ord.is_ge(),
            })
        }
    }
}

/// Match with an RE2-compatible regular expression (size-capped).
pub(crate) fn regex_match(re: &str, s: &str) -> Result<bool, String> {
    let compiled = regex::RegexBuilder::new(re)
        .size_limit(1 << 20)
        .dfa_size_limit(1 << 20)
        .build()
        .map_err(|e| format!("invalid regular expression {re:?}: {e}"))?;
    Ok(compiled.is_match(s))
}

/// Order of two numbers or two strings.
pub(crate) fn compare(a: &Val, b: &Val) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => Some(x.cmp(y)),
        (Val::Str(x), Val::Str(y)) => Some(x.cmp(y)),
        (Val::Bytes(x), Val::Bytes(y)) => Some(x.cmp(y)),
        _ => to_f64(a)?.partial_cmp(&to_f64(b)?),
    }
}

pub(crate) fn to_f64(v: &Val) -> Option<f64> {
    match v {
        Val::Int(i) => i.to_f64(),
        Val::Float(f, _) => Some(*f),
        _ => None,
    }
}

/// Arithmetic on concrete numbers (`/` always yields a float, as in CUE).
pub(crate) fn arith(op: char, a: &Val, b: &Val) -> Result<Val, String> {
    if let (Val::Int(x), Val::Int(y)) = (a, b) {
        return match op {
            '+' => Ok(Val::Int(x + y)),
            '-' => Ok(Val::Int(x - y)),
            '*' => Ok(Val::Int(x * y)),
            _ => {
                if y.is_zero() {
                    return Err("division by zero".into());
                }
                if let Some(q) = whole_quotient(a, b) {
                    return Ok(q);
                }
                float(x.to_f64().unwrap_or(f64::NAN) / y.to_f64().unwrap_or(f64::NAN))
            }
        };
    }
    let scale = |v: &Val| match v {
        Val::Float(_, s) => *s,
        _ => 0,
    };
    let (sa, sb) = (scale(a), scale(b));
    let result_scale = if sa < 0 || sb < 0 {
        SHORTEST
    } else {
        match op {
            '+' | '-' => sa.max(sb),
            '*' => sa.saturating_add(sb),
            _ => SHORTEST,
        }
    };
    let (Some(x), Some(y)) = (to_f64(a), to_f64(b)) else {
        return Err(format!(
            "invalid operands {} and {} to `{op}`",
            show(a),
            show(b)
        ));
    };
    if op == '/' && y == 0.0 {
        return Err("division by zero".into());
    }
    if op == '/' {
        if let Some(q) = whole_quotient(a, b) {
            return Ok(q);
        }
    }
    let f = match op {
        '+' => x + y,
        '-' => x - y,
        '*' => x * y,
        _ => x / y,
    };
    float(round_to(f, result_scale)).map(|v| match v {
        Val::Float(f, _) => Val::Float(f, result_scale),
        other => other,
    })
}

pub(crate) fn float(f: f64) -> Result<Val, String> {
    if f.is_finite() {
        Ok(Val::Float(f, SHORTEST))
    } else {
        Err("the result is not a finite number".into())
    }
}

/// An integer that fits in `usize` (for repetition counts and indexes).
pub(crate) fn small_uint(v: &Val) -> Option<usize> {
    match v {
        Val::Int(i) if !i.is_negative() => i.to_usize(),
        _ => None,
    }
}

/// A short, stable text of a label for paths (`a.b`, `a["x-y"]`, `a[0]`).
pub(crate) fn push_label(path: &mut String, label: &str, index: bool) {
    if index {
        let _ = write!(path, "[{label}]");
        return;
    }
    let plain = label
        .chars()
        .enumerate()
        .all(|(i, c)| c.is_alphanumeric() || c == '_' || c == '$' || (c == '#' && i == 0))
        && !label.is_empty()
        && !label.starts_with(|c: char| c.is_ascii_digit());
    if !path.is_empty() && plain {
        path.push('.');
    }
    if plain {
        path.push_str(label);
    } else {
        let quoted = serde_json::to_string(label).unwrap_or_default();
        if path.is_empty() {
            path.push_str(&quoted);
        } else {
            let _ = write!(path, "[{quoted}]");
        }
    }
}
