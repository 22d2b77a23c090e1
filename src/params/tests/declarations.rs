//! Declarations: constructors, refinements, required parameters, order, errors in the
//! script, nesting, and JSON Schema accepted as is.

use super::*;

#[test]
fn constructors_compile_to_their_schema_fragments() {
    let table: &[(&str, Value)] = &[
        ("int()", json!({"type": "integer"})),
        ("int(-3)", json!({"type": "integer", "default": -3})),
        ("uint()", json!({"type": "integer", "minimum": 0})),
        (
            "uint(2)",
            json!({"type": "integer", "minimum": 0, "default": 2}),
        ),
        ("pint()", json!({"type": "integer", "minimum": 1})),
        (
            "pint(3)",
            json!({"type": "integer", "minimum": 1, "default": 3}),
        ),
        ("float()", json!({"type": "number"})),
        ("float(1)", json!({"type": "number", "default": 1.0})),
        ("float(0.5)", json!({"type": "number", "default": 0.5})),
        ("string()", json!({"type": "string"})),
        (
            r#"string("nginx:1.25")"#,
            json!({"type": "string", "default": "nginx:1.25"}),
        ),
        ("bool()", json!({"type": "boolean"})),
        ("bool(false)", json!({"type": "boolean", "default": false})),
        (
            "list(string())",
            json!({"type": "array", "items": {"type": "string"}}),
        ),
        (
            "list(int(), [1, 2])",
            json!({"type": "array", "items": {"type": "integer"}, "default": [1, 2]}),
        ),
        (
            r"object(#{ a: int(1), b: string() })",
            json!({
                "type": "object",
                "properties": {"a": {"type": "integer", "default": 1}, "b": {"type": "string"}},
                "required": ["b"],
                "additionalProperties": false,
            }),
        ),
        (
            r"object(#{ a: int(1), b: string().optional() })",
            json!({
                "type": "object",
                "properties": {"a": {"type": "integer", "default": 1}, "b": {"type": "string"}},
                "additionalProperties": false,
                "default": {"a": 1},
            }),
        ),
        (
            "map_of(string())",
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
        ),
        (
            "map_of(int(), #{ a: 1 })",
            json!({"type": "object", "additionalProperties": {"type": "integer"}, "default": {"a": 1}}),
        ),
        (
            r#"enum_of(["a", "b"])"#,
            json!({"type": "string", "enum": ["a", "b"]}),
        ),
        (
            r#"enum_of(["a", "b"], "b")"#,
            json!({"type": "string", "enum": ["a", "b"], "default": "b"}),
        ),
        (
            "enum_of([1, 2])",
            json!({"type": "integer", "enum": [1, 2]}),
        ),
        (
            "enum_of([1, 2.5])",
            json!({"type": "number", "enum": [1, 2.5]}),
        ),
        (
            r#"enum_of([1, "auto"], "auto")"#,
            json!({"enum": [1, "auto"], "default": "auto"}),
        ),
        ("any()", json!({})),
        (
            r#"any(#{ a: [1, "x", ()] })"#,
            json!({"default": {"a": [1, "x", null]}}),
        ),
    ];
    for (expression, expected) in table {
        assert_eq!(&fragment(expression), expected, "{expression}");
    }
}

#[test]
fn refinements_compile_to_their_schema_keywords() {
    let table: &[(&str, Value)] = &[
        (
            "int().min(1).max(5)",
            json!({"type": "integer", "minimum": 1, "maximum": 5}),
        ),
        (
            "int().min(-1.5)",
            json!({"type": "integer", "minimum": -1.5}),
        ),
        (
            "float().min(0.5).max(2)",
            json!({"type": "number", "minimum": 0.5, "maximum": 2}),
        ),
        ("uint().min(3)", json!({"type": "integer", "minimum": 3})),
        ("pint().min(0)", json!({"type": "integer", "minimum": 1})),
        (
            "pint(1).max(10)",
            json!({"type": "integer", "minimum": 1, "maximum": 10, "default": 1}),
        ),
        (
            "string().min_len(1).max_len(3)",
            json!({"type": "string", "minLength": 1, "maxLength": 3}),
        ),
        (
            "list(int()).min_len(1).max_len(2)",
            json!({"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "integer"}}),
        ),
        (
            "map_of(int()).min_len(1).max_len(2)",
            json!({"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "integer"}}),
        ),
        (
            r#"string().pattern("^[a-z]+$")"#,
            json!({"type": "string", "pattern": "^[a-z]+$"}),
        ),
        (
            r#"string().usage("The image")"#,
            json!({"type": "string", "description": "The image"}),
        ),
        (
            "string().secret()",
            json!({"type": "string", "writeOnly": true}),
        ),
        ("string().optional()", json!({"type": "string"})),
        ("string().required()", json!({"type": "string"})),
        (
            "int().min(1).min(2)",
            json!({"type": "integer", "minimum": 2}),
        ),
    ];
    for (expression, expected) in table {
        assert_eq!(&fragment(expression), expected, "{expression}");
    }
}

#[test]
fn required_lists_parameters_without_default_unless_optional_and_those_marked_required() {
    let schema = schema_of(
        r#"#{
            a: int(),
            b: int(1),
            c: int().optional(),
            d: int(1).optional(),
            e: string().optional().required(),
            f: object(#{ x: int(1) }),
            g: object(#{ x: int() }),
            h: object(#{ x: int(1) }).required(),
            i: object(#{ x: int(1) }).optional(),
            j: list(string()),
            k: any(),
            l: string("x").required(),
            m: object(#{ x: int(1), y: int(2).required(), z: int().optional() }),
        }"#,
    );
    assert_eq!(
        schema.schema()["required"],
        json!(["a", "e", "g", "h", "j", "k", "l"])
    );
    let properties = &schema.schema()["properties"];
    assert_eq!(properties["f"]["default"], json!({"x": 1}));
    assert_eq!(properties["h"]["default"], json!({"x": 1}));
    assert_eq!(properties["l"]["default"], json!("x"));
    assert_eq!(properties["m"]["required"], json!(["y"]));
    assert_eq!(properties["m"]["default"], json!({"x": 1, "y": 2}));
    for name in ["g", "i"] {
        assert!(properties[name].get("default").is_none(), "{name}");
    }
    // Required parameters with a default are satisfied by it.
    let given = object(json!({"a": 1, "e": "e", "g": {"x": 1}, "j": [], "k": null}));
    let values = schema.resolve(&[&given]).expect("valid");
    assert_eq!(values["l"], "x");
    assert_eq!(values["h"], json!({"x": 1}));
    assert_eq!(values["m"], json!({"x": 1, "y": 2}));
    assert!(values.get("c").is_none() && values.get("i").is_none());
}

#[test]
fn design_example_compiles_to_the_expected_schema_in_declaration_order() {
    let schema = schema_of(DESIGN_EXAMPLE);
    let expected = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "replicas": {
                "type": "integer",
                "description": "Number of controller replicas",
                "minimum": 1,
                "maximum": 10,
                "default": 1
            },
            "image": {
                "type": "string",
                "description": "Controller image",
                "default": "ghcr.io/example/controller:1.4.2"
            },
            "mode": {"type": "string", "enum": ["standalone", "ha"], "default": "standalone"},
            "namespace": {"type": "string", "default": "example-system"},
            "clusters": {
                "type": "array",
                "description": "Clusters to deploy to; all clusters when absent",
                "items": {"type": "string"}
            },
            "resources": {
                "type": "object",
                "properties": {
                    "cpu": {"type": "string", "default": "100m"},
                    "memory": {"type": "string", "default": "128Mi"}
                },
                "additionalProperties": false,
                "default": {"cpu": "100m", "memory": "128Mi"}
            }
        },
        "additionalProperties": false
    });
    // Compare the text: equality of maps ignores order, the text does not.
    assert_eq!(
        serde_json::to_string_pretty(schema.schema()).expect("serializes"),
        serde_json::to_string_pretty(&expected).expect("serializes"),
    );
    assert_eq!(
        schema.known(),
        [
            "replicas",
            "image",
            "mode",
            "namespace",
            "clusters",
            "resources"
        ]
    );
    let values = schema.resolve(&[]).expect("everything has a default");
    assert_eq!(
        values.to_string(),
        r#"{"replicas":1,"image":"ghcr.io/example/controller:1.4.2","mode":"standalone","namespace":"example-system","resources":{"cpu":"100m","memory":"128Mi"}}"#
    );
}

#[test]
fn declaration_order_follows_construction_order_of_the_types() {
    let schema =
        schema_of("#{ zeta: int(1), alpha: object(#{ z: int(1), a: int(2) }), mid: int(3) }");
    assert_eq!(schema.known(), ["zeta", "alpha", "mid", "clusters"]);
    let fields: Vec<&String> = schema.schema()["properties"]["alpha"]["properties"]
        .as_object()
        .expect("object")
        .keys()
        .collect();
    assert_eq!(fields, ["z", "a"]);
    // A type built earlier and stored in a variable counts where it was built.
    let schema = schema_of("let common = string(\"x\"); #{ b: int(1), a: common }");
    assert_eq!(schema.known(), ["a", "b", "clusters"]);
}

#[test]
#[expect(clippy::too_many_lines, reason = "one table of cases")]
fn declaration_errors_name_the_parameter_and_the_problem() {
    let table: &[(&str, &str)] = &[
        (
            "#{ a: string().min(1) }",
            "invalid declaration of parameter `a`: `.min` applies to numbers (`int`, `uint`, `pint`, `float`), not to `string`; use `.min_len` for a length",
        ),
        (
            "#{ a: bool().max(1) }",
            "invalid declaration of parameter `a`: `.max` applies to numbers (`int`, `uint`, `pint`, `float`), not to `bool`",
        ),
        (
            "#{ a: int().min_len(1) }",
            "invalid declaration of parameter `a`: `.min_len` applies to `string`, `list` and `map_of`, not to `int`",
        ),
        (
            "#{ a: list(int()).pattern(\"x\") }",
            "invalid declaration of parameter `a`: `.pattern` applies to `string`, not to `list`",
        ),
        (
            "#{ a: string().pattern(\"[\") }",
            "invalid declaration of parameter `a`: `.pattern(\"[\")` is not a valid regular expression (ECMA-262 syntax, as in JSON Schema)",
        ),
        (
            "#{ a: int().min(5).max(1) }",
            "invalid declaration of parameter `a`: `.min(5)` is greater than `.max(1)`",
        ),
        (
            "#{ a: pint().max(0) }",
            "invalid declaration of parameter `a`: the minimum 1 of `pint` is greater than `.max(0)`",
        ),
        (
            "#{ a: string().min_len(3).max_len(1) }",
            "invalid declaration of parameter `a`: `.min_len(3)` is greater than `.max_len(1)`",
        ),
        (
            "#{ a: enum_of([\"x\", \"y\"], \"z\") }",
            "invalid declaration of parameter `a`: the default \"z\" does not satisfy the declaration: must be one of `x`, `y`",
        ),
        (
            "#{ a: pint(0) }",
            "invalid declaration of parameter `a`: the default 0 does not satisfy the declaration: must be >= 1",
        ),
        (
            "#{ a: uint(-1) }",
            "invalid declaration of parameter `a`: the default -1 does not satisfy the declaration: must be >= 0",
        ),
        (
            "#{ a: int(11).max(10) }",
            "invalid declaration of parameter `a`: the default 11 does not satisfy the declaration: must be <= 10",
        ),
        (
            "#{ a: string(\"Ab\").pattern(\"^[a-z]+$\") }",
            "invalid declaration of parameter `a`: the default \"Ab\" does not satisfy the declaration: must match the pattern `^[a-z]+$`",
        ),
        (
            "#{ a: string(\"hunter2\").secret().min_len(10) }",
            "invalid declaration of parameter `a`: the default ****** does not satisfy the declaration: must be at least 10 characters long",
        ),
        (
            "#{ a: list(int(), [1, \"x\"]) }",
            "invalid declaration of parameter `a`: the default [1,\"x\"] does not satisfy the declaration: `a[1]`: expected integer, got \"x\"",
        ),
        (
            "#{ a: list(object(#{ n: string() }), [#{}]) }",
            "invalid declaration of parameter `a`: the default [{}] does not satisfy the declaration: `a[0].n`: missing required parameter",
        ),
        (
            "#{ a: object(#{ b: pint(0) }) }",
            "invalid declaration of parameter `a.b`: the default 0 does not satisfy the declaration: must be >= 1",
        ),
        (
            "#{ a: list(string().min(1)) }",
            "invalid declaration of parameter `a[*]`: `.min` applies to numbers (`int`, `uint`, `pint`, `float`), not to `string`; use `.min_len` for a length",
        ),
        (
            "#{ a: map_of(bool().pattern(\"x\")) }",
            "invalid declaration of parameter `a.*`: `.pattern` applies to `string`, not to `bool`",
        ),
        (
            "#{ \"a.b\": int() }",
            "invalid declaration of parameter `a.b`: parameter names must not contain `.` (dots separate the levels of a parameter path)",
        ),
        (
            "#{ \"\": int() }",
            "invalid declaration of parameter ``: parameter names must not be empty",
        ),
        (
            "#{ a: 3 }",
            "invalid declaration of parameter `a`: expected a parameter type such as `string(\"x\")` or `pint(1)`, got integer 3",
        ),
        (
            "#{ a: \"int\" }",
            "invalid declaration of parameter `a`: expected a parameter type such as `string(\"x\")` or `pint(1)`, got string \"int\"",
        ),
        (
            "3",
            "`parameter.rhai` must evaluate to a map of parameter types such as `#{ replicas: pint(1) }`, got integer 3",
        ),
        (
            "[int()]",
            "`parameter.rhai` must evaluate to a map of parameter types such as `#{ replicas: pint(1) }`, got an array",
        ),
        (
            "int()",
            "`parameter.rhai` must evaluate to a map of parameter types such as `#{ replicas: pint(1) }`, got a parameter type",
        ),
    ];
    for (script, expected) in table {
        assert_eq!(declaration_error(script), *expected, "{script}");
    }
}

#[test]
fn wrong_use_in_the_script_is_a_clear_script_error() {
    let table: &[(&str, &str)] = &[
        (
            "pint(\"x\")",
            "`pint(default)` expects an integer, got string \"x\"",
        ),
        (
            "int(1.5)",
            "`int(default)` expects an integer, got float 1.5",
        ),
        (
            "string(3)",
            "`string(default)` expects a string, got integer 3",
        ),
        (
            "bool(1)",
            "`bool(default)` expects `true` or `false`, got integer 1",
        ),
        (
            "float(\"1\")",
            "`float(default)` expects a finite number, got string \"1\"",
        ),
        (
            "int().min(\"a\")",
            "`.min(n)` expects a finite number, got string \"a\"",
        ),
        (
            "string().min_len(-1)",
            "`.min_len(n)` expects an integer >= 0, got integer -1",
        ),
        (
            "string().pattern(1)",
            "`.pattern(re)` expects a string, got integer 1",
        ),
        (
            "string().usage(#{})",
            "`.usage(text)` expects a string, got a map",
        ),
        (
            "list(1)",
            "`list(T)` expects a parameter type such as `string()` for T, got integer 1",
        ),
        (
            "list(int(), 1)",
            "`list(T, default)` expects an array as default, got integer 1",
        ),
        (
            "object(1)",
            "`object(fields)` expects a map `#{ name: type, … }`, got integer 1",
        ),
        (
            "object(#{ a: 1 })",
            "`object(fields)`: field `a` must be a parameter type such as `string()`, got integer 1",
        ),
        (
            "map_of(\"x\")",
            "`map_of(T)` expects a parameter type such as `string()` for T, got string \"x\"",
        ),
        (
            "enum_of([])",
            "`enum_of(values)` expects at least one value",
        ),
        (
            "enum_of(\"a\")",
            "`enum_of(values)` expects an array of strings or numbers, got string \"a\"",
        ),
        (
            "enum_of([true])",
            "`enum_of(values)` expects strings or numbers, got bool true",
        ),
        (
            "enum_of([\"a\", \"a\"])",
            "`enum_of(values)`: the value \"a\" is listed twice",
        ),
        (
            "any(int())",
            "`any(default)`: the value cannot be used as a parameter value",
        ),
    ];
    for (script, expected) in table {
        let error = script_error(script);
        assert!(error.contains(expected), "{script}: {error}");
        assert!(error.contains("line 1"), "{script}: {error}");
    }
}

#[test]
fn types_nest_at_most_32_levels() {
    let fine = "let t = int(1); let i = 0; while i < 31 { t = list(t); i += 1; } #{ a: t }";
    let schema = ParameterSchema::from_rhai(eval(fine).expect("32 levels are fine"))
        .expect("32 levels compile");
    assert_eq!(
        schema.schema()["properties"]["a"]["items"]["items"]["type"],
        "array"
    );
    let error = script_error("let t = int(); let i = 0; while i < 40 { t = list(t); i += 1; } t");
    assert!(
        error.contains("parameter types may nest at most 32 levels deep"),
        "{error}"
    );
    let error = script_error(
        "let t = int(1); let i = 0; while i < 40 { t = object(#{ x: t }); i += 1; } t",
    );
    assert!(error.contains("at most 32 levels"), "{error}");
}

#[test]
fn json_schema_is_accepted_as_is_with_clusters_added() {
    let schema = ParameterSchema::from_json_schema(json!({
        "type": "object",
        "properties": {
            "replicas": {"type": "integer", "minimum": 1, "default": 2},
            "token": {"type": "string", "writeOnly": true},
            "nested": {
                "type": "object",
                "properties": {"x": {"type": "integer", "default": 1}},
            },
        },
        "required": ["token"],
    }))
    .expect("valid");
    assert_eq!(schema.known(), ["replicas", "token", "nested", "clusters"]);
    assert!(schema.is_secret("token"));
    assert_eq!(
        resolve_args(&schema, &["token=t", "nested.y=2", "clusters=a"]),
        Ok(json!({"replicas": 2, "token": "t", "nested": {"x": 1, "y": 2}, "clusters": ["a"]}))
    );
    assert_eq!(
        resolve_args(&schema, &["bogus=1"]),
        Err("unknown parameter `bogus`; known parameters: `replicas`, `token`, `nested`, `clusters`".to_owned())
    );
    assert_eq!(
        resolve_args(&schema, &["token=t", "replicas=0"]),
        Err("invalid parameter `replicas`: must be >= 1, got 0".to_owned())
    );
    assert_eq!(
        resolve_args(&schema, &[]),
        Err("invalid parameter `token`: missing required parameter".to_owned())
    );
}

#[test]
fn json_schema_of_older_drafts_and_with_local_references_works() {
    let schema = ParameterSchema::from_json_schema(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"small": {"type": "integer", "maximum": 3}},
        "properties": {
            "a": {"$ref": "#/definitions/small"},
            "b": {"type": ["integer", "string"], "default": 1},
        },
    }))
    .expect("valid");
    assert_eq!(
        resolve_args(&schema, &["a=2", "b=x"]),
        Ok(json!({"a": 2, "b": "x"}))
    );
    assert_eq!(
        resolve_args(&schema, &["a=2", "b=7"]),
        Ok(json!({"a": 2, "b": 7}))
    );
    assert_eq!(
        resolve_args(&schema, &["a=4"]),
        Err("invalid parameter `a`: must be <= 3, got 4".to_owned())
    );
}

#[test]
fn json_schema_errors_are_reported() {
    let table: &[(Value, &str)] = &[
        (json!([1]), "must be a JSON object"),
        (json!(true), "must be a JSON object"),
        (json!({"properties": 3}), "`properties` must be an object"),
        (
            json!({"type": "integr"}),
            "invalid parameter schema: at `/type`: ",
        ),
        (
            json!({"properties": {"a": {"pattern": "["}}}),
            "invalid parameter schema: at `/properties/a",
        ),
        (
            json!({"properties": {"a": {"$ref": "https://example.com/s.json"}}}),
            "invalid parameter schema: the reference `https://example.com/s.json` points to another document; only references inside the schema (`#/$defs/…`) are supported, other documents are never fetched",
        ),
        (
            json!({"properties": {"a": {"$ref": "file:///etc/passwd"}}}),
            "the reference `file:///etc/passwd` points to another document",
        ),
        (
            json!({"properties": {"a": {"$ref": "#/$defs/missing"}}}),
            "invalid parameter schema: bad reference: ",
        ),
    ];
    for (schema, expected) in table {
        let error = ParameterSchema::from_json_schema(schema.clone())
            .expect_err("rejected")
            .to_string();
        assert!(error.contains(expected), "{schema}: {error}");
    }
    let hidden = json!({
        "$defs": {"token": {"type": "string", "writeOnly": true}},
        "properties": {"token": {"$ref": "#/$defs/token"}},
    });
    let error = ParameterSchema::from_json_schema(hidden)
        .expect_err("secret behind $ref")
        .to_string();
    assert!(
        error.contains("secret (`writeOnly`) parameters must be declared through `properties`"),
        "{error}"
    );
    let hidden = json!({"properties": {"a": {"allOf": [{"writeOnly": true}]}}});
    assert!(ParameterSchema::from_json_schema(hidden).is_err());
    let visible = json!({"properties": {"a": {"type": "array", "items": {"writeOnly": true}, "default": [{"writeOnly": true}]}}});
    assert!(ParameterSchema::from_json_schema(visible).is_ok());
    let mut deep = json!({"type": "string"});
    for _ in 0..100 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    let error = ParameterSchema::from_json_schema(deep)
        .expect_err("too deep")
        .to_string();
    assert!(error.contains("nests deeper than"), "{error}");
}
