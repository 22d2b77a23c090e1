//! The standard-library functions KubeVela addons use, and the predeclared `len`, `close`,
//! `and`, `or`, `div`, `mod`, `quo`, `rem`.

use std::sync::Arc;

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

use super::ast::{Expr, Pos};
use super::error::ErrorKind;
use super::eval::{EnvId, Evaluator, Key, Library, Src};
use crate::cue::value::{bottom, normalize_disj, show, small_uint, to_f64, Val};

#[rustfmt::skip]
mod encoding;
mod list;

use encoding::encoding;
use list::list;

const FUNCS: &[&str] = &[
    "len",
    "close",
    "and",
    "or",
    "div",
    "mod",
    "quo",
    "rem",
    "strings.Join",
    "strings.Split",
    "strings.HasPrefix",
    "strings.HasSuffix",
    "strings.Contains",
    "strings.Replace",
    "strings.ToLower",
    "strings.ToUpper",
    "strings.TrimSpace",
    "strings.TrimPrefix",
    "strings.TrimSuffix",
    "strings.Trim",
    "strings.Repeat",
    "strings.Index",
    "strings.SplitN",
    "strings.Fields",
    "strings.Count",
    "strings.LastIndex",
    "strconv.FormatInt",
    "strconv.FormatFloat",
    "strconv.FormatBool",
    "strconv.Quote",
    "strconv.Atoi",
    "strconv.ParseInt",
    "strconv.ParseBool",
    "strconv.ParseFloat",
    "strconv.Itoa",
    "list.Concat",
    "list.Range",
    "list.Contains",
    "list.FlattenN",
    "list.Flatten",
    "list.Sum",
    "list.Max",
    "list.Min",
    "list.Repeat",
    "json.Marshal",
    "json.Unmarshal",
    "json.Valid",
    "yaml.Marshal",
    "yaml.Unmarshal",
    "base64.Encode",
    "base64.Decode",
    "math.Floor",
    "math.Ceil",
    "math.Round",
    "math.Abs",
    "math.Sqrt",
    "math.Pow",
    "math.Trunc",
    "math.Log",
    "math.Exp",
    "math.Log10",
    "math.Log2",
];

/// Packages of CUE's standard library that addonctl does not evaluate (an import of another
/// path is not CUE at all).
#[rustfmt::skip]
pub(crate) const OTHER_STDLIB: &[&str] = &[
    "crypto/ed25519", "crypto/hmac", "crypto/md5", "crypto/sha1", "crypto/sha256", "crypto/sha512",
    "encoding/csv", "encoding/hex", "encoding/toml", "html", "math/bits", "net", "path", "regexp",
    "struct", "text/tabwriter", "text/template", "time", "tool", "tool/cli", "tool/exec",
    "tool/file", "tool/http", "tool/os", "uuid",
];

/// Functions of the supported packages that CUE has but addonctl does not evaluate.
#[rustfmt::skip]
const OTHER_FUNCS: &[&str] = &[
    "strings.ByteAt", "strings.ByteSlice", "strings.Compare", "strings.ContainsAny",
    "strings.IndexAny", "strings.LastIndexAny", "strings.MaxRunes", "strings.MinRunes",
    "strings.Runes", "strings.SplitAfter", "strings.SplitAfterN", "strings.Title",
    "strings.ToCamel", "strings.ToTitle", "strings.TrimLeft", "strings.TrimRight",
    "strings.IndexByte", "strings.IndexRune", "strings.EqualFold", "strings.Map",
    "strconv.FormatUint", "strconv.ParseUint", "strconv.QuoteToASCII", "strconv.Unquote",
    "strconv.QuoteRune", "strconv.CanBackquote", "strconv.IsPrint", "list.Avg", "list.Drop",
    "list.Take", "list.Slice", "list.Sort", "list.SortStable", "list.SortStrings", "list.IsSorted",
    "list.IsSortedStrings", "list.MinItems", "list.MaxItems", "list.UniqueItems", "list.Product",
    "list.Median", "list.Variance", "json.Indent", "json.Compact", "json.HTMLEscape",
    "json.MarshalStream", "json.Validate", "yaml.MarshalStream", "yaml.Validate",
    "yaml.ValidatePartial", "yaml.UnmarshalStream", "base64.EncodedLen", "base64.DecodedLen",
    "math.Cbrt", "math.Dim", "math.Erf", "math.Expm1", "math.Frexp", "math.Hypot", "math.Inf",
    "math.Ldexp", "math.Log1p", "math.Logb", "math.Mod", "math.Modf", "math.NaN", "math.Nextafter",
    "math.Remainder", "math.Signbit", "math.Sin", "math.Cos", "math.Tan", "math.Asin", "math.Acos",
    "math.Atan", "math.Atan2", "math.Sinh", "math.Cosh", "math.Tanh", "math.Gamma",
    "math.Copysign", "math.IsInf", "math.IsNaN", "math.MultipleOf", "math.Exp2", "math.Ilogb",
    "math.RoundToEven", "math.Max", "math.Min",
];

/// Whether `path.name` is a CUE builtin that addonctl does not evaluate.
pub(crate) fn is_other_builtin(path: &str, name: &str) -> bool {
    let short = path.rsplit('/').next().unwrap_or(path);
    OTHER_FUNCS.contains(&format!("{short}.{name}").as_str())
}

/// The standard library the evaluator is built with.
pub(crate) const LIBRARY: Library = Library {
    lookup,
    is_other: is_other_builtin,
    call,
};

/// The function (or constant) `name` of the imported package `path` (`""` for predeclared).
pub(crate) fn lookup(path: &str, name: &str) -> Option<Val> {
    let short = path.rsplit('/').next().unwrap_or(path);
    if short == "math" {
        match name {
            "Pi" => {
                return Some(Val::Float(
                    std::f64::consts::PI,
                    crate::cue::value::SHORTEST,
                ))
            }
            "E" => return Some(Val::Float(std::f64::consts::E, crate::cue::value::SHORTEST)),
            "MaxInt64" => return Some(Val::Int(BigInt::from(i64::MAX))),
            _ => {}
        }
    }
    let key = if short.is_empty() {
        name.to_string()
    } else {
        format!("{short}.{name}")
    };
    let known = [
        "", "strings", "strconv", "list", "json", "yaml", "base64", "math",
    ];
    let full_ok = matches!(
        path,
        "" | "strings"
            | "strconv"
            | "list"
            | "encoding/json"
            | "encoding/yaml"
            | "encoding/base64"
            | "math"
    );
    if !known.contains(&short) || !full_ok {
        return None;
    }
    FUNCS.iter().find(|f| **f == key).map(|f| Val::Func(f))
}

type R = Result<Val, Val>;

fn fail(message: impl Into<String>, pos: Pos) -> Val {
    bottom(ErrorKind::Builtin, message, vec![pos])
}

/// Call the builtin `name` with argument expressions evaluated in `env`.
pub(crate) fn call(
    ev: &mut Evaluator,
    name: &'static str,
    args: &[Arc<Expr>],
    env: EnvId,
    pos: Pos,
) -> Val {
    let vals: Vec<Val> = args.iter().map(|a| ev.eval(a, env)).collect();
    match dispatch(ev, name, &vals, pos) {
        Ok(v) | Err(v) => match v {
            Val::Bottom(b) if b.kind == ErrorKind::Builtin => {
                let mut b = (*b).clone();
                b.message = format!("{name}: {}", b.message);
                Val::Bottom(Arc::new(b))
            }
            other => other,
        },
    }
}

fn arity(name: &str, vals: &[Val], n: usize, pos: Pos) -> Result<(), Val> {
    if vals.len() == n {
        Ok(())
    } else {
        Err(fail(
            format!("takes {n} argument(s), got {} (in {name})", vals.len()),
            pos,
        ))
    }
}

fn concrete(v: &Val, pos: Pos) -> R {
    let v = v.default_value();
    match v {
        Val::Bottom(_) => Err(v),
        ref other if !other.is_concrete() => Err(bottom(
            ErrorKind::Incomplete,
            format!("incomplete argument {}", show(other)),
            vec![pos],
        )),
        other => Ok(other),
    }
}

fn string(v: &Val, pos: Pos) -> Result<String, Val> {
    match concrete(v, pos)? {
        Val::Str(s) => Ok(s.to_string()),
        Val::Bytes(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        other => Err(fail(
            format!("expected a string, got {}", show(&other)),
            pos,
        )),
    }
}

fn int(v: &Val, pos: Pos) -> Result<BigInt, Val> {
    match concrete(v, pos)? {
        Val::Int(i) => Ok(i),
        other => Err(fail(format!("expected an int, got {}", show(&other)), pos)),
    }
}

fn number(v: &Val, pos: Pos) -> Result<f64, Val> {
    let c = concrete(v, pos)?;
    to_f64(&c).ok_or_else(|| fail(format!("expected a number, got {}", show(&c)), pos))
}

fn strs(ev: &mut Evaluator, v: &Val, pos: Pos) -> Result<Vec<String>, Val> {
    let items = ev.list_items(&concrete(v, pos)?, pos)?;
    items.iter().map(|i| string(i, pos)).collect()
}

fn str_list(ev: &mut Evaluator, items: Vec<String>, pos: Pos) -> Val {
    ev.make_list(
        items.into_iter().map(|s| Val::Str(Arc::from(s))).collect(),
        pos,
    )
}

fn s(v: impl Into<String>) -> Val {
    Val::Str(Arc::from(v.into()))
}

fn dispatch(ev: &mut Evaluator, name: &'static str, a: &[Val], pos: Pos) -> R {
    let n = |k: usize| arity(name, a, k, pos);
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Val::Top);
    match name {
        "len" => {
            n(1)?;
            length(ev, &arg(0), pos)
        }
        "close" => {
            n(1)?;
            close(ev, &arg(0), pos)
        }
        "and" => {
            n(1)?;
            let items = ev.list_items(&concrete(&arg(0), pos)?, pos)?;
            let anon = ev.new_vertex(
                Some(crate::cue::eval::ROOT),
                Key::regular(Arc::from("<and>")),
                false,
                pos,
            );
            ev.vm(anon).regular = true;
            for i in items {
                ev.add(anon, Src::Val(i, pos), 0, None);
            }
            Ok(ev.value_of(anon))
        }
        "or" => {
            n(1)?;
            let items = ev.list_items(&concrete(&arg(0), pos)?, pos)?;
            Ok(normalize_disj(
                items.into_iter().map(|v| (v, false)).collect(),
            ))
        }
        "div" | "mod" | "quo" | "rem" => {
            n(2)?;
            int_division(name, &int(&arg(0), pos)?, &int(&arg(1), pos)?, pos)
        }
        _ if name.starts_with("strings.") => strings(ev, name, a, pos),
        _ if name.starts_with("strconv.") => strconv(name, a, pos),
        _ if name.starts_with("list.") => list(ev, name, a, pos),
        _ => encoding(ev, name, a, pos),
    }
}

fn length(ev: &mut Evaluator, v: &Val, pos: Pos) -> R {
    let count = match concrete(v, pos)? {
        Val::Str(s) => s.len(),
        Val::Bytes(b) => b.len(),
        l @ Val::List(_) => ev.list_items(&l, pos)?.len(),
        Val::Struct(w) => {
            ev.expand(w);
            ev.v(w)
                .arcs
                .iter()
                .filter(|(k, &a)| k.is_regular() && ev.v(a).regular)
                .count()
        }
        other => {
            return Err(fail(
                format!("invalid argument {} to len", show(&other)),
                pos,
            ))
        }
    };
    Ok(Val::Int(BigInt::from(count)))
}

fn close(ev: &mut Evaluator, v: &Val, pos: Pos) -> R {
    match v {
        Val::Struct(_) => {
            let g = ev.fresh_group(None);
            if let Some(group) = ev.groups.get_mut(g) {
                group.active = true;
            }
            let parent = crate::cue::eval::ROOT;
            let anon = ev.new_vertex(Some(parent), Key::regular(Arc::from("<close>")), false, pos);
            ev.vm(anon).regular = true;
            ev.add(anon, Src::Val(v.clone(), pos), 0, Some(g));
            Ok(ev.value_of(anon))
        }
        Val::Bottom(_) => Err(v.clone()),
        other => Err(fail(
            format!("close needs a struct, got {}", show(other)),
            pos,
        )),
    }
}

fn int_division(name: &str, x: &BigInt, y: &BigInt, pos: Pos) -> R {
    if y.is_zero() {
        return Err(fail("division by zero", pos));
    }
    let q = x / y;
    let r = x - &q * y;
    Ok(Val::Int(match name {
        "quo" => q,
        "rem" => r,
        "div" => {
            if r.is_negative() {
                if y.is_positive() {
                    q - 1
                } else {
                    q + 1
                }
            } else {
                q
            }
        }
        _ => {
            if r.is_negative() {
                r + y.abs()
            } else {
                r
            }
        }
    }))
}

fn strings(ev: &mut Evaluator, name: &str, a: &[Val], pos: Pos) -> R {
    let str_at = |i: usize| string(a.get(i).unwrap_or(&Val::Top), pos);
    let want = |k: usize| arity(name, a, k, pos);
    let short = name.trim_start_matches("strings.");
    Ok(match short {
        "Join" => {
            want(2)?;
            let items = strs(ev, a.first().unwrap_or(&Val::Top), pos)?;
            s(items.join(&str_at(1)?))
        }
        "Split" | "SplitN" => {
            want(if short == "Split" { 2 } else { 3 })?;
            let (text, sep) = (str_at(0)?, str_at(1)?);
            let limit = if short == "SplitN" {
                int(a.get(2).unwrap_or(&Val::Top), pos)?
                    .to_i64()
                    .unwrap_or(-1)
            } else {
                -1
            };
            let parts: Vec<String> = if limit == 0 {
                Vec::new()
            } else if sep.is_empty() {
                text.chars().map(String::from).collect()
            } else if limit < 0 {
                text.split(sep.as_str()).map(String::from).collect()
            } else {
                text.splitn(usize::try_from(limit).unwrap_or(usize::MAX), sep.as_str())
                    .map(String::from)
                    .collect()
            };
            return Ok(str_list(ev, parts, pos));
        }
        "Fields" => {
            want(1)?;
            let parts = str_at(0)?.split_whitespace().map(String::from).collect();
            return Ok(str_list(ev, parts, pos));
        }
        "HasPrefix" => {
            want(2)?;
            Val::Bool(str_at(0)?.starts_with(&str_at(1)?))
        }
        "HasSuffix" => {
            want(2)?;
            Val::Bool(str_at(0)?.ends_with(&str_at(1)?))
        }
        "Contains" => {
            want(2)?;
            Val::Bool(str_at(0)?.contains(&str_at(1)?))
        }
        "Count" => {
            want(2)?;
            let (t, sub) = (str_at(0)?, str_at(1)?);
            let c = if sub.is_empty() {
                t.chars().count() + 1
            } else {
                t.matches(sub.as_str()).count()
            };
            Val::Int(BigInt::from(c))
        }
        "Index" | "LastIndex" => {
            want(2)?;
            let (t, sub) = (str_at(0)?, str_at(1)?);
            let found = if short == "Index" {
                t.find(&sub)
            } else {
                t.rfind(&sub)
            };
            Val::Int(found.map_or(BigInt::from(-1), BigInt::from))
        }
        "Replace" => {
            want(4)?;
            let (t, old, new) = (str_at(0)?, str_at(1)?, str_at(2)?);
            let count = int(a.get(3).unwrap_or(&Val::Top), pos)?;
            match count.to_usize() {
                Some(c) if !count.is_negative() => s(t.replacen(old.as_str(), &new, c)),
                _ => s(t.replace(old.as_str(), &new)),
            }
        }
        "Repeat" => {
            want(2)?;
            let t = str_at(0)?;
            let c = small_uint(&concrete(a.get(1).unwrap_or(&Val::Top), pos)?)
                .filter(|c| c.saturating_mul(t.len()) <= ev.limits.max_bytes)
                .ok_or_else(|| fail("invalid repeat count", pos))?;
            s(t.repeat(c))
        }
        "ToLower" => {
            want(1)?;
            s(str_at(0)?.to_lowercase())
        }
        "ToUpper" => {
            want(1)?;
            s(str_at(0)?.to_uppercase())
        }
        "TrimSpace" => {
            want(1)?;
            s(str_at(0)?.trim())
        }
        "TrimPrefix" => {
            want(2)?;
            let (t, p) = (str_at(0)?, str_at(1)?);
            s(t.strip_prefix(p.as_str()).unwrap_or(&t))
        }
        "TrimSuffix" => {
            want(2)?;
            let (t, p) = (str_at(0)?, str_at(1)?);
            s(t.strip_suffix(p.as_str()).unwrap_or(&t))
        }
        "Trim" => {
            want(2)?;
            let (t, cut) = (str_at(0)?, str_at(1)?);
            s(t.trim_matches(|c| cut.contains(c)))
        }
        _ => return Err(fail("not supported", pos)),
    })
}

fn strconv(name: &str, a: &[Val], pos: Pos) -> R {
    let want = |k: usize| arity(name, a, k, pos);
    let at = |i: usize| a.get(i).cloned().unwrap_or(Val::Top);
    let short = name.trim_start_matches("strconv.");
    Ok(match short {
        "FormatInt" => {
            want(2)?;
            let (i, base) = (int(&at(0), pos)?, int(&at(1), pos)?);
            let base = base
                .to_u32()
                .filter(|b| (2..=36).contains(b))
                .ok_or_else(|| fail("invalid base", pos))?;
            s(i.to_str_radix(base))
        }
        "Itoa" => {
            want(1)?;
            s(int(&at(0), pos)?.to_string())
        }
        "FormatFloat" => {
            want(4)?;
            let f = number(&at(0), pos)?;
            let fmt = int(&at(1), pos)?.to_u8().map_or('g', char::from);
            let prec = int(&at(2), pos)?.to_i64().unwrap_or(-1);
            s(format_float(f, fmt, prec))
        }
        "FormatBool" => {
            want(1)?;
            match concrete(&at(0), pos)? {
                Val::Bool(b) => s(b.to_string()),
                other => return Err(fail(format!("expected a bool, got {}", show(&other)), pos)),
            }
        }
        "Quote" => {
            want(1)?;
            s(serde_json::to_string(&string(&at(0), pos)?).unwrap_or_default())
        }
        "Atoi" | "ParseInt" => {
            let text = string(&at(0), pos)?;
            let base = if short == "ParseInt" {
                want(3)?;
                int(&at(1), pos)?.to_u32().unwrap_or(10)
            } else {
                want(1)?;
                10
            };
            let (neg, digits) = match text.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, text.strip_prefix('+').unwrap_or(&text)),
            };
            let (base, digits) = match base {
                0 => radix_prefix(digits),
                b => (b, digits),
            };
            let parsed = (2..=36)
                .contains(&base)
                .then(|| BigInt::parse_bytes(digits.as_bytes(), base))
                .flatten()
                .ok_or_else(|| fail(format!("parsing {text:?}: invalid syntax"), pos))?;
            let value = if neg { -parsed } else { parsed };
            if short == "ParseInt" {
                let bits = int(&at(2), pos)?
                    .to_u32()
                    .filter(|b| *b <= 64)
                    .unwrap_or(64);
                let bits = if bits == 0 { 64 } else { bits };
                let max = (BigInt::from(1) << (bits - 1)) - 1;
                let min = -(BigInt::from(1) << (bits - 1));
                if value > max || value < min {
                    return Err(fail(format!("parsing {text:?}: value out of range"), pos));
                }
            }
            Val::Int(value)
        }
        "ParseBool" => {
            want(1)?;
            match string(&at(0), pos)?.as_str() {
                "1" | "t" | "T" | "true" | "TRUE" | "True" => Val::Bool(true),
                "0" | "f" | "F" | "false" | "FALSE" | "False" => Val::Bool(false),
                other => return Err(fail(format!("parsing {other:?}: invalid syntax"), pos)),
            }
        }
        "ParseFloat" => {
            want(2)?;
            let text = string(&at(0), pos)?;
            let f: f64 = text
                .trim()
                .parse()
                .map_err(|_| fail(format!("parsing {text:?}: invalid syntax"), pos))?;
            crate::cue::value::float(f).map_err(|m| fail(m, pos))?
        }
        _ => return Err(fail("not supported", pos)),
    })
}

fn radix_prefix(digits: &str) -> (u32, &str) {
    let lower = digits.to_ascii_lowercase();
    if lower.starts_with("0x") {
        (16, digits.get(2..).unwrap_or(""))
    } else if lower.starts_with("0b") {
        (2, digits.get(2..).unwrap_or(""))
    } else if lower.starts_with("0o") {
        (8, digits.get(2..).unwrap_or(""))
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, digits.get(1..).unwrap_or(""))
    } else {
        (10, digits)
    }
}

fn format_float(f: f64, fmt: char, prec: i64) -> String {
    let p = usize::try_from(prec).ok();
    match (fmt, p) {
        ('f', Some(p)) => format!("{f:.p$}"),
        ('f', None) => {
            let s = format!("{f}");
            s
        }
        ('e', Some(p)) => go_exponent(&format!("{f:.p$e}")),
        ('e', None) => go_exponent(&format!("{f:e}")),
        _ => {
            let s = format!("{f}");
            if s.len() > 21 {
                go_exponent(&format!("{f:e}"))
            } else {
                s
            }
        }
    }
}

/// Rust's `1.5e3` as Go's `1.5e+03`.
fn go_exponent(s: &str) -> String {
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s.to_string(),
    }
}
