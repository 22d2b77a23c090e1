//! The JSON Schema of `parameter.cue` for the constructs of KubeVela's catalog addons:
//! definitions referenced from `parameter`, `null` defaults, open lists.

use serde_json::{json, Value};

use super::parameter_schema_from_cue;

fn schema(text: &str, others: &[&str]) -> Value {
    parameter_schema_from_cue(text, others)
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or(Value::Null)
}

#[test]
fn a_definition_of_the_same_file_gives_its_schema_closed() {
    let s = schema(
        "parameter: {\n\tvalues: #values\n\tupgradeCRD: *false | bool\n}\n\
         #values: {\n\timage: *\"controller:1\" | string\n\treplicas: *1 | int\n}\n",
        &[],
    );
    let values = &s["properties"]["values"];
    assert_eq!(values["type"], "object", "{s:#}");
    assert_eq!(values["properties"]["image"]["default"], "controller:1");
    assert_eq!(values["properties"]["replicas"]["type"], "integer");
    assert_eq!(values["additionalProperties"], json!(false), "{s:#}");
    assert_eq!(s["properties"]["upgradeCRD"]["default"], false);
    // `parameter` itself is no definition: it stays open as before.
    assert!(s.get("additionalProperties").is_none(), "{s:#}");
}

#[test]
fn an_open_definition_and_its_nested_structs() {
    let s = schema(
        "#values: {\n\timage: string\n\tresources: {cpu: *\"1\" | string}\n\t...\n}\n\
         parameter: values: #values\n",
        &[],
    );
    let values = &s["properties"]["values"];
    assert!(values.get("additionalProperties").is_none(), "{s:#}");
    // A struct inside a definition is closed too, unless it is open itself.
    assert_eq!(
        values["properties"]["resources"]["additionalProperties"],
        json!(false),
        "{s:#}"
    );
    assert!(
        values["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("image"))),
        "{s:#}"
    );
}

#[test]
fn nested_definitions_and_definitions_of_other_files() {
    let defs = "package main\n\n#host: {\n\tname: *\"h\" | string\n\t#tls: {secret: string}\n\ttls?: #tls\n}\n";
    let s = schema(
        "package main\n\nparameter: {\n\thost: #host\n\ttls?: #host.#tls\n\tlocal: #l\n\t#l: {a: *1 | int, ...}\n}\n",
        &[defs],
    );
    let host = &s["properties"]["host"];
    assert_eq!(host["properties"]["name"]["default"], "h", "{s:#}");
    assert!(host["properties"].get("#tls").is_none(), "{s:#}");
    assert_eq!(
        host["properties"]["tls"]["properties"]["secret"]["type"],
        "string"
    );
    assert_eq!(
        s["properties"]["tls"]["required"],
        json!(["secret"]),
        "{s:#}"
    );
    assert_eq!(s["properties"]["tls"]["additionalProperties"], json!(false));
    assert_eq!(s["properties"]["local"]["properties"]["a"]["default"], 1);
    assert!(s["properties"].get("#l").is_none(), "{s:#}");
}

#[test]
fn definitions_that_cannot_be_lowered_say_why() {
    let error = |text: &str, others: &[&str]| {
        parameter_schema_from_cue(text, others)
            .err()
            .map(|e| e.message)
            .unwrap_or_default()
    };
    let missing = error("parameter: a: #nowhere\n", &[]);
    assert!(
        missing.contains("reference \"#nowhere\" not found"),
        "{missing}"
    );
    let recursive = error("#a: {b?: #a}\nparameter: a: #a\n", &[]);
    assert!(
        recursive.contains("recursive definition `#a`"),
        "{recursive}"
    );
    let twice = error("#a: {b: int}\nparameter: a: #a\n", &["#a: {c: int}\n"]);
    assert!(twice.contains("declared more than once"), "{twice}");
    let elsewhere = error("parameter: a: #a\n", &["#a: {b: int | string}\n"]);
    assert!(
        elsewhere.contains("in the definition `#a`, declared in another file"),
        "{elsewhere}"
    );
    // Each reference lowers the definition again: the work stays bounded.
    let mut text = String::from("parameter: a: #d0\n#d20: {x: int}\n");
    for i in 0..20 {
        text.push_str(&format!("#d{i}: {{a: #d{n}, b: #d{n}}}\n", n = i + 1));
    }
    let bounded = error(&text, &[]);
    assert!(bounded.contains("references to definitions"), "{bounded}");
}

#[test]
fn null_joins_the_type_of_a_disjunction() {
    let s = schema(
        "parameter: {\n\tpostgresURL: *null | string\n\tmode: *null | \"a\" | \"b\"\n\tport: int | null\n}\n",
        &[],
    );
    let url = &s["properties"]["postgresURL"];
    assert_eq!(url["type"], json!(["string", "null"]), "{s:#}");
    assert_eq!(url["default"], Value::Null);
    assert!(url.as_object().is_some_and(|o| o.contains_key("default")));
    let mode = &s["properties"]["mode"];
    assert_eq!(mode["type"], json!(["string", "null"]), "{s:#}");
    assert_eq!(mode["enum"], json!(["a", "b", null]));
    assert_eq!(s["properties"]["port"]["type"], json!(["integer", "null"]));
    assert_eq!(s["required"], json!(["port"]));
}

#[test]
fn an_open_list_without_default_is_a_list_type() {
    let s = schema(
        "parameter: gatewayListeners: [...{name: *\"web\" | string, port: *8050 | int}]\n",
        &[],
    );
    let listeners = &s["properties"]["gatewayListeners"];
    assert_eq!(listeners["type"], "array", "{s:#}");
    assert_eq!(listeners["items"]["properties"]["port"]["default"], 8050);
}

#[test]
fn a_default_of_the_wrong_type_is_a_type_error_naming_the_field() {
    let error = |text: &str| match parameter_schema_from_cue(text, &[]) {
        Err(e) => e,
        Ok(s) => panic!("accepted: {s:?}"),
    };
    let e = error("parameter: {\n\treplicas: *\"1\" | int\n}\n");
    assert_eq!((e.line, e.column), (2, 12), "{e}");
    assert!(e.message.starts_with(super::DEFAULT_TYPE_MISMATCH), "{e}");
    for part in [
        "`parameter.replicas`",
        "`\"1\"` (a string)",
        "its type is `int`",
        "write `*1 | int`",
    ] {
        assert!(e.message.contains(part), "{part}: {e}");
    }
    assert!(!e.message.contains("beyond the supported"), "{e}");
    let e =
        error("parameter: {\n\tresources: {\n\t\tcpu: *1 | string & =~\"^[0-9]+m?$\"\n\t}\n}\n");
    assert_eq!((e.line, e.column), (3, 8), "{e}");
    assert!(
        e.message
            .contains("`parameter.resources.cpu` is `1` (an int)"),
        "{e}"
    );
    assert!(
        e.message
            .contains("write `*\"1\" | string & =~\"^[0-9]+m?$\"`"),
        "{e}"
    );
    let e = error("parameter: enabled: *\"yes\" | bool\n");
    assert!(
        e.message
            .contains("its type is `bool`; give it a default of that type"),
        "{e}"
    );
    // A literal beside a type that is not the default is still a disjunction of types.
    let e = error("parameter: x: \"a\" | int\n");
    assert!(e.message.contains("beyond the supported"), "{e}");
}
