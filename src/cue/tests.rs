//! Unit tests of the evaluator, one per construct.

use serde_json::json;

use super::{evaluate, ErrorKind, Limits, Source};

fn eval_all(text: &str) -> Result<serde_json::Value, super::Error> {
    let inst = evaluate(&[Source::new("test.cue", text)], &Limits::default())?;
    inst.export_all()
}

fn ok(text: &str) -> serde_json::Value {
    match eval_all(text) {
        Ok(v) => v,
        Err(e) => panic!("{text}\n=> error: {e}"),
    }
}

fn err(text: &str) -> super::Error {
    match eval_all(text) {
        Ok(v) => panic!("{text}\n=> expected an error, got {v}"),
        Err(e) => e,
    }
}

#[test]
fn scalars_and_structs() {
    assert_eq!(
        ok("a: 1\nb: \"x\"\nc: {d: true, e: null}\nf: 1.0\ng: [1, 2]"),
        json!({"a": 1, "b": "x", "c": {"d": true, "e": null}, "f": 1, "g": [1, 2]})
    );
}

#[test]
fn unification_is_order_independent() {
    assert_eq!(ok("a: b + 1\nb: 2"), json!({"a": 3, "b": 2}));
    assert_eq!(
        ok("a: b: c: 1\na: b: d: 2"),
        json!({"a": {"b": {"c": 1, "d": 2}}})
    );
    assert_eq!(
        ok("x: {a: int, b: a + 1}\nx: a: 4"),
        json!({"x": {"a": 4, "b": 5}})
    );
}

#[test]
fn references_rebind_in_copies() {
    assert_eq!(
        ok("#A: {x: int, y: x * 2}\nb: #A & {x: 3}"),
        json!({"b": {"x": 3, "y": 6}})
    );
}

#[test]
fn defaults() {
    assert_eq!(
        ok("a: *1 | int\nb: *\"x\" | string\nb: \"y\""),
        json!({"a": 1, "b": "y"})
    );
    assert_eq!(ok("a: *1 | 2\nc: a + 1"), json!({"a": 1, "c": 2}));
}

#[test]
fn conflicts_name_path_values_and_positions() {
    let e = err("out: spec: replicas: 2\nout: spec: replicas: \"two\"");
    assert_eq!(e.kind, ErrorKind::Conflict);
    let text = e.to_string();
    assert!(
        text.starts_with("out.spec.replicas: conflicting values 2 and \"two\""),
        "{text}"
    );
    assert!(
        text.contains("test.cue:1:22") && text.contains("test.cue:2:22"),
        "{text}"
    );
}

#[test]
fn incomplete_values_name_the_path() {
    let e = err("out: image: string");
    assert_eq!(e.kind, ErrorKind::Incomplete);
    assert!(
        e.to_string()
            .starts_with("out.image: incomplete value string"),
        "{e}"
    );
}

#[test]
fn optional_fields_and_bottom_tests() {
    assert_eq!(
        ok("p: {a?: string, b: 1}\nx: {if p.a != _|_ {a: p.a}, if p.b != _|_ {b: p.b}}\ny: p.a == _|_"),
        json!({"p": {"b": 1}, "x": {"b": 1}, "y": true})
    );
}

#[test]
fn comprehensions_and_interpolated_labels() {
    assert_eq!(
        ok("l: [1, 2]\nm: {for i, v in l {\"k\\(i)\": v * 10}}\nn: [for v in l if v > 1 {v}]"),
        json!({"l": [1, 2], "m": {"k0": 10, "k1": 20}, "n": [2]})
    );
    assert_eq!(
        ok("s: {a: 1, b: 2}\nt: [for k, v in s {\"\\(k)=\\(v)\"}]"),
        json!({"s": {"a": 1, "b": 2}, "t": ["a=1", "b=2"]})
    );
}

#[test]
fn lists_with_types_and_ellipsis() {
    assert_eq!(
        ok("a: [...int]\na: [1, 2]\nb: [...string]"),
        json!({"a": [1, 2], "b": []})
    );
    assert!(err("a: [...int]\na: [\"x\"]")
        .to_string()
        .contains("conflicting"));
    assert_eq!(
        ok("a: [1] + [2, 3]\nb: [0] * 2"),
        json!({"a": [1, 2, 3], "b": [0, 0]})
    );
}

#[test]
fn hidden_fields_definitions_and_closedness() {
    assert_eq!(
        ok("_h: 1\n#D: {a: int}\nx: #D & {a: _h}"),
        json!({"x": {"a": 1}})
    );
    let e = err("#D: {a: int}\nx: #D & {b: 1}");
    assert!(e.to_string().contains("not allowed"), "{e}");
    assert_eq!(
        ok("#D: {a: int, ...}\nx: #D & {a: 1, b: 1}"),
        json!({"x": {"a": 1, "b": 1}})
    );
    assert_eq!(
        ok("#A: {a: int}\n#B: {#A, b: int}\nx: #B & {a: 1, b: 2}"),
        json!({"x": {"a": 1, "b": 2}})
    );
}

#[test]
fn patterns_and_bounds() {
    assert_eq!(
        ok("m: [string]: {n: int | *3}\nm: a: {}\nm: b: n: 4"),
        json!({"m": {"a": {"n": 3}, "b": {"n": 4}}})
    );
    assert_eq!(
        ok("a: >=1 & <=10\na: 5\nb: int & >0 | *1"),
        json!({"a": 5, "b": 1})
    );
    assert!(err("a: >=1 & <=10\na: 11")
        .to_string()
        .contains("out of bound"));
    assert_eq!(ok("a: string & =~\"^x\"\na: \"xy\""), json!({"a": "xy"}));
    assert!(err("a: =~\"^x\"\na: \"y\"").kind == ErrorKind::Conflict);
}

#[test]
fn struct_disjunctions() {
    assert_eq!(
        ok("a: *null | {x: int}\nb: *null | {x: int}\nb: x: 1"),
        json!({"a": null, "b": {"x": 1}})
    );
    assert_eq!(
        ok("#A: {kind: \"a\", x: int}\n#B: {kind: \"b\", y: int}\nv: #A | #B\nv: {kind: \"b\", y: 2}"),
        json!({"v": {"kind": "b", "y": 2}})
    );
}

#[test]
fn builtins() {
    assert_eq!(
        ok(
            "import (\n\t\"strings\"\n\tb64 \"encoding/base64\"\n\t\"encoding/json\"\n)\n\
            a: strings.Join([\"a\", \"b\"], \"-\")\nb: b64.Encode(null, \"hi\")\n\
            c: json.Marshal({x: 1, y: \"<\"})\nd: len([1, 2, 3])\ne: strings.ToUpper(\"q\")"
        ),
        json!({"a": "a-b", "b": "aGk=", "c": "{\"x\":1,\"y\":\"<\"}", "d": 3, "e": "Q"})
    );
}

#[test]
fn let_and_interpolation() {
    assert_eq!(
        ok("let n = \"web\"\nout: {name: \"\\(n)-svc\", port: 80, url: \"http://\\(name):\\(port)\"}"),
        json!({"out": {"name": "web-svc", "port": 80, "url": "http://web-svc:80"}})
    );
}

#[test]
fn limits_stop_runaway_input() {
    let deep = format!("a: {}1{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(err(&deep).kind, ErrorKind::Limit);
    let chain = format!("{}1", "a: ".repeat(100_000));
    assert_eq!(err(&chain).kind, ErrorKind::Limit);
    let e = err("a: {b: a}");
    assert!(matches!(e.kind, ErrorKind::Other | ErrorKind::Limit), "{e}");
    let limits = Limits {
        max_steps: 10_000,
        ..Limits::default()
    };
    let r = evaluate(
        &[Source::new(
            "x.cue",
            "import \"list\"\nr: [for i in list.Range(0, 100000, 1) {i}]",
        )],
        &limits,
    )
    .and_then(|i| i.export_all());
    assert_eq!(r.map_err(|e| e.kind).err(), Some(ErrorKind::Limit));
}

#[test]
fn unsupported_constructs_are_named() {
    let e = err("import \"time\"\na: 1");
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.to_string().contains("test.cue:1:"), "{e}");
}

#[test]
fn several_files_share_the_package_scope() {
    let inst = evaluate(
        &[
            Source::new("a.cue", "package main\nout: x: parameter.n"),
            Source::new("b.cue", "package main\nparameter: n: *3 | int"),
        ],
        &Limits::default(),
    )
    .expect("evaluates");
    assert_eq!(
        inst.export(&["out"]).expect("exports"),
        Some(json!({"x": 3}))
    );
    assert_eq!(inst.export(&["missing"]).expect("absent"), None);
}

#[test]
fn decimals_keep_their_digits() {
    let text = "a: 0.1 + 0.2\nb: 2 * 1.0\nc: 4 / 2\nd: \"\\(3.0)\"\ne: 1.5\nf: \"\\(200 / 2)\"";
    let inst = evaluate(&[Source::new("test.cue", text)], &Limits::default()).unwrap();
    assert_eq!(
        inst.export_all_text().unwrap(),
        r#"{"a":0.3,"b":2.0,"c":2.0,"d":"3.0","e":1.5,"f":"1.0E+2"}"#
    );
}

#[test]
fn whole_floats_reach_kubernetes_objects_as_integers() {
    let text = "spec: {replicas: 4 / 2, ratio: 1.5, literal: 2.0, negative: -9 / 3, \
                hundred: 200 / 2, product: 2 * 1.0, floor: math.Floor(2.7), \
                exact: 9007199254740992.0, beyond: 9007199254740994.0, huge: 1e300, \
                small: 1 / 4, list: [6 / 3, 0.5]}\n\
                text: json.Marshal({n: 4 / 2})";
    let source = format!("import (\"math\", \"encoding/json\")\n{text}");
    let inst = evaluate(&[Source::new("test.cue", &source)], &Limits::default()).unwrap();
    let spec = inst.export(&["spec"]).unwrap().unwrap();
    assert_eq!(spec["replicas"], json!(2));
    assert!(spec["replicas"].is_i64(), "{spec}");
    assert_eq!(spec["ratio"], json!(1.5));
    assert_eq!(spec["literal"], json!(2));
    assert_eq!(spec["negative"], json!(-3));
    assert_eq!(spec["hundred"], json!(100));
    assert_eq!(spec["product"], json!(2));
    assert_eq!(spec["floor"], json!(2));
    assert_eq!(spec["exact"], json!(9_007_199_254_740_992_i64));
    // Beyond 2^53 and far beyond i64 a whole float stays a float.
    assert!(spec["beyond"].is_f64(), "{spec}");
    assert_eq!(spec["beyond"], json!(9_007_199_254_740_994.0));
    assert!(spec["huge"].is_f64(), "{spec}");
    assert_eq!(spec["huge"], json!(1e300));
    assert_eq!(spec["small"], json!(0.25));
    assert_eq!(spec["list"], json!([2, 0.5]));
    assert_eq!(inst.export_all().unwrap()["spec"], spec);
    // Serialized for the API server: `2`, never `2.0`.
    assert!(spec.to_string().contains(r#""replicas":2,"#), "{spec}");
    // The text export and the marshalled strings keep CUE's digits.
    assert_eq!(
        inst.export_text(&["spec", "replicas"]).unwrap().as_deref(),
        Some("2.0")
    );
    assert_eq!(
        inst.export_text(&["spec", "literal"]).unwrap().as_deref(),
        Some("2.0")
    );
    assert_eq!(inst.export(&["text"]).unwrap(), Some(json!(r#"{"n":2.0}"#)));
}

#[test]
fn reference_cycles_resolve_to_the_concrete_value() {
    assert_eq!(ok("a: b\nb: a\na: 5"), json!({"a": 5, "b": 5}));
}

#[test]
fn pattern_aliases_bind_the_label() {
    assert_eq!(
        ok("objects: [Name=_]: {metadata: name: Name}\nobjects: {a: {}}"),
        json!({"objects": {"a": {"metadata": {"name": "a"}}}})
    );
}

#[test]
fn notes_struct_of_comprehensions_embeds_a_string() {
    assert_eq!(
        ok("up: true\nnotes: {\n\tif up {\"upgraded\"}\n\tif !up {\"installed\"}\n}"),
        json!({"up": true, "notes": "upgraded"})
    );
}

#[test]
fn parameter_schema_lowers_parameter_cue() {
    let source = Source::new(
        "parameter.cue",
        "parameter: {\n\t// +usage=The image\n\timage: *\"nginx\" | string\n\treplicas?: int & >=1\n}",
    );
    let schema = super::parameter_schema(&source, &[], &Limits::default()).expect("schema");
    assert_eq!(schema["properties"]["image"]["default"], json!("nginx"));
    assert_eq!(
        schema["properties"]["image"]["description"],
        json!("The image")
    );
    assert_eq!(schema["properties"]["replicas"]["minimum"], json!(1));
    let bad = Source::new("parameter.cue", "parameter: {\n\ta: \n");
    let e = super::parameter_schema(&bad, &[], &Limits::default()).expect_err("syntax error");
    assert!(e.to_string().contains("parameter.cue:"), "{e}");
}

#[test]
fn self_references_and_runaway_builtins_fail_cleanly() {
    for (text, kind) in [
        ("a: {b: a}", ErrorKind::Other),
        ("#A: {a: #A}\nx: #A", ErrorKind::Other),
        ("x: {for k, v in x {\"\\(k)x\": v}}", ErrorKind::Incomplete),
        ("a: a + 1", ErrorKind::Incomplete),
        (
            "import \"strings\"\na: strings.Repeat(\"x\", 100000000)",
            ErrorKind::Builtin,
        ),
        (
            "import \"list\"\na: list.Range(0, 1000000000, 1)",
            ErrorKind::Builtin,
        ),
        ("a: [1] * 100000000", ErrorKind::Conflict),
    ] {
        let e = err(text);
        assert_eq!(e.kind, kind, "{text}: {e}");
        assert!(e.path.is_some(), "{text}: {e}");
    }
}

#[test]
fn disjunction_conflicts_name_the_whole_disjunction() {
    let inst = evaluate(
        &[
            Source::new("parameter.cue", "parameter: replicas: *1 | int"),
            Source::new("args.cue", "parameter: replicas: \"two\""),
        ],
        &Limits::default(),
    )
    .expect("evaluates");
    let e = inst.export(&["parameter"]).expect_err("conflict");
    assert_eq!(
        e.to_string(),
        "parameter.replicas: conflicting values *1 | int and \"two\" (parameter.cue:1:22, args.cue:1:22)"
    );
}

/// KubeVela 1.10 evaluates with CUE v0.9, whose `!=` on lists of different lengths is true (CUE
/// v0.4 answered false); the corpus case `cmp_lists_ne_different_lengths` checks it too.
#[test]
fn lists_of_different_lengths_differ_as_in_cue_0_9() {
    assert_eq!(
        ok("a: [1] != [1, 2]\nb: [1] == [1, 2]\nc: [1, 2] == [1, 2]"),
        json!({"a": true, "b": false, "c": true})
    );
}

#[test]
fn big_integers_export_exactly_as_text_and_fail_clearly_as_values() {
    let text = "a: 9223372036854775807 * 4\nb: {c: \"x\", d: [1.5, -18446744073709551617]}\nu: 18446744073709551615";
    let inst = evaluate(&[Source::new("big.cue", text)], &Limits::default()).unwrap();
    assert_eq!(
        inst.export_all_text().unwrap(),
        r#"{"a":36893488147419103228,"b":{"c":"x","d":[1.5,-18446744073709551617]},"u":18446744073709551615}"#
    );
    assert_eq!(
        inst.export_text(&["b", "c"]).unwrap().as_deref(),
        Some("\"x\"")
    );
    assert_eq!(inst.export_text(&["absent"]).unwrap(), None);
    // u64 still fits a serde_json number.
    assert_eq!(
        inst.export(&["u"]).unwrap(),
        Some(json!(18_446_744_073_709_551_615_u64))
    );
    let e = inst.export(&["b"]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    let shown = e.to_string();
    assert!(shown.contains("b.d[1]"), "{shown}");
    assert!(shown.contains("-18446744073709551617"), "{shown}");
    assert!(shown.contains("does not fit in 64 bits"), "{shown}");
}

#[test]
fn a_quoted_hash_label_is_a_regular_field_and_its_path_is_quoted() {
    assert_eq!(
        ok("#x: 1\n\"#x\": 2\n_y: 3\n\"_y\": #x + _y"),
        json!({"#x": 2, "_y": 4})
    );
    let e = err("s: {\"#x\": 1}\ns: {\"#x\": 2}");
    assert_eq!(e.kind, ErrorKind::Conflict);
    assert!(e.to_string().starts_with("s[\"#x\"]: "), "{e}");
    let e = err("\"_h\": 1\n\"_h\": 2");
    assert!(e.to_string().starts_with("\"_h\": "), "{e}");
}
