//! Helpers registered on the engine (DESIGN §2.4–2.5): data formats, hashing, map paths, semver,
//! and the shape helpers that make Applications short to write.

use base64::Engine as _;
use rhai::{Array, Dynamic, Engine, EvalAltResult, ImmutableString, Map, NativeCallContext, INT};
use sha2::{Digest, Sha256};

use crate::model::{AddonVersion, Constraint};

type Fallible<T> = Result<T, Box<EvalAltResult>>;

fn fail<T>(message: impl Into<String>) -> Fallible<T> {
    Err(message.into().into())
}

/// Converts a script value to JSON, dropping map entries whose value is `()`.
pub(crate) fn to_json_value(value: &Dynamic) -> Fallible<serde_json::Value> {
    let mut json: serde_json::Value = rhai::serde::from_dynamic(value)?;
    strip_nulls(&mut json);
    Ok(json)
}

/// Removes `null` entries from objects, recursively (an optional parameter left unset in a
/// script means "absent", as in CUE).
pub(crate) fn strip_nulls(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Converts JSON to a script value.
pub(crate) fn from_json_value(value: &serde_json::Value) -> Fallible<Dynamic> {
    rhai::serde::to_dynamic(value)
}

fn to_yaml(value: Dynamic) -> Fallible<String> {
    let json = to_json_value(&value)?;
    crate::yaml::to_string(&json).map_err(|e| e.message.into())
}

fn to_json(value: Dynamic) -> Fallible<String> {
    serde_json::to_string(&to_json_value(&value)?).map_err(|e| e.to_string().into())
}

fn to_json_pretty(value: Dynamic, pretty: bool) -> Fallible<String> {
    let json = to_json_value(&value)?;
    let text = if pretty {
        serde_json::to_string_pretty(&json)
    } else {
        serde_json::to_string(&json)
    };
    text.map_err(|e| e.to_string().into())
}

fn parse_yaml(text: &str) -> Fallible<Dynamic> {
    let (value, _) =
        crate::yaml::parse_single(text).map_err(|e| format!("parse_yaml: {}", e.message))?;
    from_json_value(&value)
}

fn parse_yaml_all(text: &str) -> Fallible<Array> {
    let docs =
        crate::yaml::parse_documents(text).map_err(|e| format!("parse_yaml_all: {}", e.message))?;
    docs.documents.iter().map(from_json_value).collect()
}

fn parse_json(text: &str) -> Fallible<Dynamic> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("parse_json: {e}"))?;
    from_json_value(&value)
}

fn base64_encode(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

fn base64_decode(text: &str) -> Fallible<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim().as_bytes())
        .map_err(|e| format!("base64_decode: {e}"))?;
    String::from_utf8(bytes)
        .map_err(|_| "base64_decode: the decoded bytes are not UTF-8 text".into())
}

fn sha256(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().fold(String::with_capacity(64), |mut out, b| {
        use std::fmt::Write as _;
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Deep merge: maps are merged key by key, everything else in `b` replaces `a`.
pub(crate) fn merge_maps(mut a: Map, b: Map) -> Map {
    for (key, value) in b {
        let merged = match (a.remove(&key), value) {
            (Some(old), new) if old.is_map() && new.is_map() => {
                let (Some(old), Some(new)) = (old.try_cast::<Map>(), new.try_cast::<Map>()) else {
                    continue;
                };
                Dynamic::from_map(merge_maps(old, new))
            }
            (_, new) => new,
        };
        a.insert(key, merged);
    }
    a
}

fn lookup_owned(value: Dynamic, rest: &str) -> Option<Dynamic> {
    let mut current = value;
    for segment in rest.split('.').filter(|s| !s.is_empty()) {
        let next = current.read_lock::<Map>()?.get(segment).cloned()?;
        current = next;
    }
    Some(current)
}

/// `get(map, "a.b.c", default)`: the value at a dotted path, or `default` when any part is
/// missing or `()`.
fn get_path(map: Map, path: &str, default: Dynamic) -> Dynamic {
    match lookup_owned(Dynamic::from_map(map), path) {
        Some(v) if !v.is_unit() => v,
        _ => default,
    }
}

/// `has(map, "a.b")`: whether the dotted path exists and is not `()`.
fn has_path(map: Map, path: &str) -> bool {
    lookup_owned(Dynamic::from_map(map), path).is_some_and(|v| !v.is_unit())
}

fn semver_satisfies(version: &str, constraint: &str) -> Fallible<bool> {
    let c = Constraint::parse(constraint).map_err(|e| format!("semver_satisfies: {e}"))?;
    Ok(c.matches(&AddonVersion::parse(version)))
}

fn str_map(pairs: impl IntoIterator<Item = (&'static str, Dynamic)>) -> Map {
    pairs.into_iter().map(|(k, v)| (k.into(), v)).collect()
}

/// `application(#{ components, policies, workflow })`: a KubeVela Application (name and
/// namespace are filled in by normalisation).
fn application(spec: Map) -> Map {
    let mut spec = spec;
    spec.entry("components".into())
        .or_insert_with(|| Dynamic::from_array(Array::new()));
    str_map([
        ("apiVersion", "core.oam.dev/v1beta1".into()),
        ("kind", "Application".into()),
        ("metadata", Dynamic::from_map(Map::new())),
        ("spec", Dynamic::from_map(spec)),
    ])
}

fn component(name: ImmutableString, kind: ImmutableString, properties: Dynamic) -> Fallible<Map> {
    if name.is_empty() {
        return fail("component: the name must not be empty");
    }
    Ok(str_map([
        ("name", name.into()),
        ("type", kind.into()),
        ("properties", properties),
    ]))
}

fn component_with_traits(
    name: ImmutableString,
    kind: ImmutableString,
    properties: Dynamic,
    traits: Array,
) -> Fallible<Map> {
    let mut c = component(name, kind, properties)?;
    c.insert("traits".into(), Dynamic::from_array(traits));
    Ok(c)
}

fn k8s_objects(name: ImmutableString, objects: Array) -> Fallible<Map> {
    component(
        name,
        "k8s-objects".into(),
        Dynamic::from_map(str_map([("objects", Dynamic::from_array(objects))])),
    )
}

/// `topology(name, clusters)`: `clusters` when given (an array), else every cluster
/// (`clusterLabelSelector: #{}`).
fn topology(name: ImmutableString, clusters: Dynamic) -> Fallible<Map> {
    let properties = if clusters.is_unit() {
        str_map([("clusterLabelSelector", Dynamic::from_map(Map::new()))])
    } else if clusters.is_array() {
        str_map([("clusters", clusters)])
    } else {
        return fail(format!(
            "topology: `clusters` must be an array of cluster names or `()`, found {}",
            clusters.type_name()
        ));
    };
    Ok(str_map([
        ("name", name.into()),
        ("type", "topology".into()),
        ("properties", Dynamic::from_map(properties)),
    ]))
}

/// Rhai checks the size of values a method returns, not of the array it mutates in place; these
/// replacements of the in-place array growers enforce the array-size limit on every call.
fn check_array_growth(ctx: &NativeCallContext, new_len: usize) -> Fallible<()> {
    let max = ctx.engine().max_array_size();
    if max > 0 && new_len > max {
        return Err(Box::new(EvalAltResult::ErrorDataTooLarge(
            "Size of array".into(),
            ctx.call_position(),
        )));
    }
    Ok(())
}

fn register_bounded_array_growth(engine: &mut Engine) {
    engine
        .register_fn(
            "push",
            |ctx: NativeCallContext, array: &mut Array, item: Dynamic| -> Fallible<()> {
                check_array_growth(&ctx, array.len() + 1)?;
                array.push(item);
                Ok(())
            },
        )
        .register_fn(
            "append",
            |ctx: NativeCallContext, array: &mut Array, other: Array| -> Fallible<()> {
                check_array_growth(&ctx, array.len() + other.len())?;
                array.extend(other);
                Ok(())
            },
        )
        .register_fn(
            "insert",
            |ctx: NativeCallContext,
             array: &mut Array,
             index: INT,
             item: Dynamic|
             -> Fallible<()> {
                check_array_growth(&ctx, array.len() + 1)?;
                let len = INT::try_from(array.len()).unwrap_or(INT::MAX);
                let position = if index < 0 {
                    (len + index).max(0)
                } else {
                    index.min(len)
                };
                array.insert(usize::try_from(position).unwrap_or(array.len()), item);
                Ok(())
            },
        );
}

/// Registers every helper on the engine.
pub(crate) fn register(engine: &mut Engine) {
    register_bounded_array_growth(engine);
    engine
        .register_fn("to_yaml", to_yaml)
        .register_fn("to_json", to_json)
        .register_fn("to_json", to_json_pretty)
        .register_fn("parse_yaml", |s: &str| parse_yaml(s))
        .register_fn("parse_yaml_all", |s: &str| parse_yaml_all(s))
        .register_fn("parse_json", |s: &str| parse_json(s))
        .register_fn("base64_encode", |s: &str| base64_encode(s))
        .register_fn("base64_decode", |s: &str| base64_decode(s))
        .register_fn("sha256", |s: &str| sha256(s))
        .register_fn("merge", merge_maps)
        .register_fn("get", |m: Map, p: &str, d: Dynamic| get_path(m, p, d))
        .register_fn("get", |m: Map, p: &str| get_path(m, p, Dynamic::UNIT))
        .register_fn("has", |m: Map, p: &str| has_path(m, p))
        .register_fn("semver_satisfies", |v: &str, c: &str| {
            semver_satisfies(v, c)
        })
        .register_fn("application", application)
        .register_fn("application", || application(Map::new()))
        .register_fn("component", component)
        .register_fn("component", component_with_traits)
        .register_fn("k8s_objects", k8s_objects)
        .register_fn("topology", topology);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        let mut e = Engine::new();
        register(&mut e);
        e
    }

    fn eval_json(script: &str) -> serde_json::Value {
        let value: Dynamic = engine().eval(script).unwrap();
        to_json_value(&value).unwrap()
    }

    #[test]
    fn data_format_helpers_round_trip() {
        assert_eq!(
            eval_json(r#"parse_yaml("a: [1, 2]\nb: x")"#),
            serde_json::json!({"a": [1, 2], "b": "x"})
        );
        assert_eq!(
            eval_json(r#"parse_json("{\"a\":true}")"#),
            serde_json::json!({"a": true})
        );
        assert_eq!(
            eval_json(r"to_json(#{a: 1})"),
            serde_json::json!("{\"a\":1}")
        );
        assert_eq!(
            eval_json(r"to_yaml(#{a: 1, b: ()})"),
            serde_json::json!("a: 1\n")
        );
        assert_eq!(
            eval_json(r#"base64_decode(base64_encode("héllo"))"#),
            serde_json::json!("héllo")
        );
        assert_eq!(
            eval_json(r#"sha256("abc")"#),
            serde_json::json!("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(
            eval_json(r#"parse_yaml_all("a: 1\n---\nb: 2\n").len()"#),
            serde_json::json!(2)
        );
        assert!(engine().eval::<Dynamic>(r#"base64_decode("***")"#).is_err());
        assert!(engine().eval::<Dynamic>(r#"parse_yaml("a: [")"#).is_err());
    }

    #[test]
    fn map_helpers_walk_dotted_paths() {
        assert_eq!(
            eval_json(r"merge(#{a: #{x: 1, y: 2}, b: 1}, #{a: #{y: 3, z: 4}, c: 5})"),
            serde_json::json!({"a": {"x": 1, "y": 3, "z": 4}, "b": 1, "c": 5})
        );
        assert_eq!(
            eval_json(r#"get(#{a: #{b: #{c: 7}}}, "a.b.c", 0)"#),
            serde_json::json!(7)
        );
        assert_eq!(
            eval_json(r#"get(#{a: #{b: 1}}, "a.x.c", "d")"#),
            serde_json::json!("d")
        );
        assert_eq!(
            eval_json(r#"get(#{a: 1}, "a.b", "d")"#),
            serde_json::json!("d")
        );
        assert_eq!(
            eval_json(r#"has(#{a: #{b: 1}}, "a.b")"#),
            serde_json::json!(true)
        );
        assert_eq!(
            eval_json(r#"has(#{a: #{b: ()}}, "a.b")"#),
            serde_json::json!(false)
        );
        assert_eq!(
            eval_json(r#"semver_satisfies("v1.4.0", ">=1.2, <2")"#),
            serde_json::json!(true)
        );
        assert!(engine()
            .eval::<Dynamic>(r#"semver_satisfies("1.0.0", ">=>")"#)
            .is_err());
    }

    #[test]
    fn shape_helpers_build_kubevela_shapes() {
        assert_eq!(
            eval_json(r#"topology("t", ())"#),
            serde_json::json!({"name": "t", "properties": {"clusterLabelSelector": {}}, "type": "topology"})
        );
        assert_eq!(
            eval_json(r#"topology("t", ["a"])"#),
            serde_json::json!({"name": "t", "properties": {"clusters": ["a"]}, "type": "topology"})
        );
        assert_eq!(
            eval_json(r#"k8s_objects("x", [#{kind: "ConfigMap"}])"#),
            serde_json::json!({"name": "x", "properties": {"objects": [{"kind": "ConfigMap"}]}, "type": "k8s-objects"})
        );
        let app = eval_json(
            r#"application(#{ components: [component("c", "webservice", #{image: "i"})] })"#,
        );
        assert_eq!(app["kind"], "Application");
        assert_eq!(app["spec"]["components"][0]["type"], "webservice");
        assert!(engine().eval::<Dynamic>(r#"topology("t", 3)"#).is_err());
    }
}
