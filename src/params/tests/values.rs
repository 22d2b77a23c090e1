//! Values: defaults, layering, validation errors, unknown parameters, secrets, `key=value`
//! arguments and merging.

use super::*;

#[test]
fn empty_schema_accepts_only_clusters() {
    let schema = ParameterSchema::empty().unwrap();
    assert_eq!(schema.known(), ["clusters"]);
    assert_eq!(
        resolve_args(&schema, &["clusters=a,b"]),
        Ok(json!({"clusters": ["a", "b"]}))
    );
    assert_eq!(resolve_args(&schema, &[]), Ok(json!({})));
    assert_eq!(
        resolve_args(&schema, &["foo=1"]),
        Err("unknown parameter `foo`; known parameters: `clusters`".to_owned())
    );
}

#[test]
fn clusters_is_accepted_when_not_declared_and_may_be_declared_as_a_list_of_strings() {
    let schema = schema_of("#{ a: int(1) }");
    assert_eq!(schema.known(), ["a", "clusters"]);
    assert_eq!(
        schema.schema()["properties"]["clusters"]["items"],
        json!({"type": "string"})
    );
    assert_eq!(
        resolve_args(&schema, &["clusters={c1,c2}"]),
        Ok(json!({"a": 1, "clusters": ["c1", "c2"]}))
    );
    let declared = schema_of("#{ clusters: list(string(), [\"local\"]) }");
    assert_eq!(
        resolve_args(&declared, &[]),
        Ok(json!({"clusters": ["local"]}))
    );
    assert!(declaration_error("#{ clusters: string() }")
        .contains("`clusters` is reserved for the target clusters"));
}

#[test]
fn defaults_are_filled_recursively_and_optional_fields_stay_absent() {
    let schema = schema_of(
        r#"#{
            resources: object(#{
                cpu: string("100m"),
                memory: string("128Mi"),
                limits: object(#{ cpu: string("1"), burst: bool(false) }),
                note: string().optional(),
            }),
            hosts: list(object(#{ name: string(), port: pint(80) })).optional(),
            labels: map_of(object(#{ value: string(), shown: bool(true) })).optional(),
            extra: any().optional(),
            level: int(2).optional(),
        }"#,
    );
    let values = resolve_args(
        &schema,
        &[
            "resources.limits.cpu=2",
            "hosts=[{name: a}, {name: b, port: 8080}]",
            "labels={x: {value: v}}",
        ],
    )
    .expect("valid");
    assert_eq!(
        values,
        json!({
            "resources": {"cpu": "100m", "memory": "128Mi", "limits": {"cpu": "2", "burst": false}},
            "hosts": [{"name": "a", "port": 80}, {"name": "b", "port": 8080}],
            "labels": {"x": {"value": "v", "shown": true}},
            "level": 2,
        })
    );
    // Output keeps declaration order even when the user gave fields in another order.
    let given = object(json!({"resources": {"memory": "1Gi", "cpu": "1"}}));
    let values = schema.resolve(&[&given]).expect("valid");
    assert_eq!(
        values["resources"].to_string(),
        r#"{"cpu":"1","memory":"1Gi","limits":{"cpu":"1","burst":false}}"#
    );
}

#[test]
fn layers_merge_defaults_then_stored_then_given() {
    let schema = schema_of(
        r#"#{ replicas: pint(1), image: string("a:1"), resources: object(#{ cpu: string("100m"), memory: string("128Mi") }), tags: list(string(), ["x"]) }"#,
    );
    let stored = object(json!({"replicas": 3, "resources": {"cpu": "200m"}, "tags": ["s1", "s2"]}));
    let given = object(json!({"replicas": 5, "resources": {"memory": "1Gi"}, "tags": ["g"]}));
    let values = schema.resolve(&[&stored, &given]).expect("valid");
    assert_eq!(
        values,
        json!({
            "replicas": 5,
            "image": "a:1",
            "resources": {"cpu": "200m", "memory": "1Gi"},
            "tags": ["g"],
        })
    );
    let values = schema.resolve(&[&stored]).expect("valid");
    assert_eq!(values["replicas"], 3);
    assert_eq!(values["tags"], json!(["s1", "s2"]));
}

#[test]
fn validation_errors_name_the_path_the_rule_and_the_value() {
    let schema = schema_of(
        r#"#{
            replicas: pint(1).max(10),
            mode: enum_of(["standalone", "ha"], "standalone"),
            name: string("a").pattern("^[a-z]+$"),
            short: string("ab").min_len(2).max_len(3),
            ratio: float(0.5).min(0).max(1),
            flag: bool(true),
            hosts: list(string(), []).max_len(1),
            resources: object(#{ cpu: string("100m") }),
        }"#,
    );
    let table: &[(&[&str], &str)] = &[
        (
            &["replicas=11"],
            "invalid parameter `replicas`: must be <= 10, got 11",
        ),
        (
            &["replicas=0"],
            "invalid parameter `replicas`: must be >= 1, got 0",
        ),
        (
            &["mode=cluster"],
            "invalid parameter `mode`: must be one of `standalone`, `ha`, got \"cluster\"",
        ),
        (
            &["name=Bad"],
            "invalid parameter `name`: must match the pattern `^[a-z]+$`, got \"Bad\"",
        ),
        (
            &["short=a"],
            "invalid parameter `short`: must be at least 2 characters long, got \"a\"",
        ),
        (
            &["short=abcd"],
            "invalid parameter `short`: must be at most 3 characters long, got \"abcd\"",
        ),
        (
            &["ratio=1.5"],
            "invalid parameter `ratio`: must be <= 1, got 1.5",
        ),
        (
            &["hosts=a,b"],
            "invalid parameter `hosts`: must have at most 1 item, got [\"a\",\"b\"]",
        ),
    ];
    for (given, expected) in table {
        assert_eq!(
            resolve_args(&schema, given),
            Err((*expected).to_owned()),
            "{given:?}"
        );
    }
    // Wrong types arrive through files and stored arguments, not only the command line.
    let table: &[(Value, &str)] = &[
        (
            json!({"replicas": "three"}),
            "invalid parameter `replicas`: expected integer, got \"three\"",
        ),
        (
            json!({"flag": "yes"}),
            "invalid parameter `flag`: expected boolean, got \"yes\"",
        ),
        (
            json!({"resources": {"cpu": 2}}),
            "invalid parameter `resources.cpu`: expected string, got 2",
        ),
        (
            json!({"hosts": [1]}),
            "invalid parameter `hosts[0]`: expected string, got 1",
        ),
        (
            json!({"resources": "big"}),
            "invalid parameter `resources`: expected object, got \"big\"",
        ),
    ];
    for (given, expected) in table {
        let given = object(given.clone());
        let error = schema.resolve(&[&given]).expect_err("invalid").to_string();
        assert_eq!(error, *expected);
    }
}

#[test]
fn all_violations_are_reported_together() {
    let schema = schema_of(
        r#"#{ replicas: pint(1).max(10), mode: enum_of(["a", "b"], "a"), image: string() }"#,
    );
    let given = object(json!({"replicas": 0, "mode": "c"}));
    let error = schema.resolve(&[&given]).expect_err("invalid");
    let Error::Invalid(violations) = &error else {
        panic!("expected violations, got {error}");
    };
    assert_eq!(violations.len(), 3, "{error}");
    assert_eq!(
        error.to_string(),
        "3 invalid parameters:\n  `replicas`: must be >= 1, got 0\n  `mode`: must be one of `a`, `b`, got \"c\"\n  `image`: missing required parameter"
    );
}

#[test]
fn unknown_parameters_are_reported_with_the_known_ones() {
    let schema =
        schema_of(r#"#{ a: int(1), b: object(#{ cpu: string("1"), memory: string("1") }) }"#);
    assert_eq!(
        resolve_args(&schema, &["foo=1"]),
        Err("unknown parameter `foo`; known parameters: `a`, `b`, `clusters`".to_owned())
    );
    assert_eq!(
        resolve_args(&schema, &["b.gpu=1"]),
        Err("unknown parameter `b.gpu`; known parameters: `b.cpu`, `b.memory`".to_owned())
    );
    assert_eq!(
        resolve_args(&schema, &["foo=1", "bar=2", "b.gpu=1", "a=2"]),
        Err("unknown parameters `foo`, `bar`; known parameters: `a`, `b`, `clusters`\nunknown parameter `b.gpu`; known parameters: `b.cpu`, `b.memory`".to_owned())
    );
    // Unknown fields inside list items of a declared object type.
    let schema = schema_of("#{ hosts: list(object(#{ name: string() })) }");
    let given = object(json!({"hosts": [{"name": "a", "port": 1}]}));
    assert_eq!(
        schema.resolve(&[&given]).expect_err("unknown").to_string(),
        "unknown parameter `hosts[0].port`; known parameters: `hosts[0].name`"
    );
    // Free keys of `map_of` are not unknown.
    let schema = schema_of("#{ labels: map_of(string()) }");
    assert_eq!(
        resolve_args(&schema, &["labels.anything=x"]),
        Ok(json!({"labels": {"anything": "x"}}))
    );
}

#[test]
fn secrets_are_masked_in_errors_and_output() {
    let schema = schema_of(
        r#"#{
            token: string().secret().pattern("^[a-z]+$"),
            port: int(1).secret(),
            auth: object(#{ user: string("me"), password: string("pw").secret() }).secret(),
            login: object(#{ user: string("me"), password: string("pw").secret() }),
            keys: list(string().secret(), []),
        }"#,
    );
    let error = resolve_args(&schema, &["token=HUNTER2"]).expect_err("invalid");
    assert_eq!(
        error,
        "invalid parameter `token`: must match the pattern `^[a-z]+$`, got ******"
    );
    assert!(!error.contains("HUNTER2"));
    let error = resolve_args(&schema, &["token=abc", "port=sekrit"]).expect_err("not an integer");
    assert_eq!(error, "invalid argument `port=******`: expected integer");
    let given = object(json!({"token": "abc", "login": "s3cr3t-but-wrong-place"}));
    let error = schema.resolve(&[&given]).expect_err("invalid").to_string();
    assert_eq!(
        error,
        "invalid parameter `login`: expected object, got \"s3cr3t-but-wrong-place\""
    );
    let given = object(json!({"token": "abc", "login": {"user": 3, "password": "x"}}));
    let error = schema.resolve(&[&given]).expect_err("invalid").to_string();
    assert_eq!(
        error,
        "invalid parameter `login.user`: expected string, got 3"
    );
    let given = object(json!({"token": "abc", "login": {"password": 42}}));
    let error = schema.resolve(&[&given]).expect_err("invalid").to_string();
    assert_eq!(
        error,
        "invalid parameter `login.password`: expected string, got ******"
    );
    let given = object(json!({"token": "abc", "keys": ["k1", 7]}));
    let error = schema.resolve(&[&given]).expect_err("invalid").to_string();
    assert_eq!(
        error,
        "invalid parameter `keys[1]`: expected string, got ******"
    );

    let values = resolve_args(&schema, &["token=abc", "keys=k1,k2"]).expect("valid");
    assert_eq!(
        schema.mask(&values),
        json!({
            "token": MASK,
            "port": MASK,
            "auth": MASK,
            "login": {"user": "me", "password": MASK},
            "keys": [MASK, MASK],
        })
    );
    let table = [
        ("token", true),
        ("port", true),
        ("auth", true),
        ("auth.user", true),
        ("login", false),
        ("login.user", false),
        ("login.password", true),
        ("keys", false),
        ("keys.0", true),
        ("keys[3]", true),
        ("login[0]", false),
        ("unknown", false),
        ("clusters", false),
    ];
    for (path, secret) in table {
        assert_eq!(schema.is_secret(path), secret, "{path}");
    }
}

#[test]
fn parse_args_types_values_by_the_schema() {
    let schema = schema_of(
        r#"#{
            replicas: pint(1),
            tag: string("latest"),
            ratio: float(0.5),
            debug_mode: bool(false),
            ports: list(int(), []),
            names: list(string(), []),
            mode: enum_of(["1", "2"], "1"),
            level: enum_of([1, 2], 1),
            mixed: enum_of([1, "auto"], "auto"),
            resources: object(#{ cpu: string("100m"), count: int(1) }),
            extra: any().optional(),
            labels: map_of(int()).optional(),
        }"#,
    );
    let table: &[(&str, Value)] = &[
        ("replicas=3", json!({"replicas": 3})),
        ("tag=3", json!({"tag": "3"})),
        ("tag=", json!({"tag": ""})),
        ("tag=a=b", json!({"tag": "a=b"})),
        ("ratio=2", json!({"ratio": 2})),
        ("ratio=0.25", json!({"ratio": 0.25})),
        ("debug_mode=true", json!({"debug_mode": true})),
        ("debug_mode=False", json!({"debug_mode": false})),
        ("ports={80,443}", json!({"ports": [80, 443]})),
        ("ports=80,443", json!({"ports": [80, 443]})),
        ("ports=80", json!({"ports": [80]})),
        ("ports={}", json!({"ports": []})),
        ("ports=[1, 2]", json!({"ports": [1, 2]})),
        ("names={a, b}", json!({"names": ["a", "b"]})),
        ("names=1,2", json!({"names": ["1", "2"]})),
        ("mode=2", json!({"mode": "2"})),
        ("level=2", json!({"level": 2})),
        ("mixed=1", json!({"mixed": 1})),
        ("mixed=auto", json!({"mixed": "auto"})),
        ("resources.cpu=200m", json!({"resources": {"cpu": "200m"}})),
        ("resources.count=2", json!({"resources": {"count": 2}})),
        (
            "resources={cpu: 1, count: 2}",
            json!({"resources": {"cpu": 1, "count": 2}}),
        ),
        ("extra=3", json!({"extra": 3})),
        ("extra=true", json!({"extra": true})),
        ("extra=hello", json!({"extra": "hello"})),
        ("extra=a: b", json!({"extra": "a: b"})),
        ("extra={a: [1, x]}", json!({"extra": {"a": [1, "x"]}})),
        ("extra=null", json!({"extra": null})),
        ("labels.x=1", json!({"labels": {"x": 1}})),
        ("unknown.deep=1.5", json!({"unknown": {"deep": 1.5}})),
        ("clusters=a,b", json!({"clusters": ["a", "b"]})),
        ("clusters={a}", json!({"clusters": ["a"]})),
        ("clusters=1", json!({"clusters": ["1"]})),
        ("clusters=", json!({"clusters": []})),
    ];
    for (arg, expected) in table {
        let parsed = schema.parse_args(&args(&[arg])).expect(arg);
        assert_eq!(Value::Object(parsed), *expected, "{arg}");
    }
}

#[test]
fn parse_args_last_wins_and_dotted_paths_nest() {
    let schema = schema_of(r#"#{ a: int(1), r: object(#{ cpu: string("1"), mem: string("1") }) }"#);
    let parsed = schema
        .parse_args(&args(&["a=1", "r.cpu=2", "a=3", "r.mem=4", "r.cpu=5"]))
        .expect("valid");
    assert_eq!(
        Value::Object(parsed),
        json!({"a": 3, "r": {"cpu": "5", "mem": "4"}})
    );
    let parsed = schema
        .parse_args(&args(&["r.cpu=2", "r={}"]))
        .expect("valid");
    assert_eq!(Value::Object(parsed), json!({"r": {}}));
    let parsed = schema
        .parse_args(&args(&["r={mem: \"3\"}", "r.cpu=2"]))
        .expect("valid");
    assert_eq!(
        Value::Object(parsed),
        json!({"r": {"mem": "3", "cpu": "2"}})
    );
    let schema = schema_of("#{ extra: any().optional() }");
    let parsed = schema
        .parse_args(&args(&["extra=x", "extra.y=2"]))
        .expect("valid");
    assert_eq!(Value::Object(parsed), json!({"extra": {"y": 2}}));
    let parsed = schema
        .parse_args(&args(&["extra.y=2", "extra=x"]))
        .expect("valid");
    assert_eq!(Value::Object(parsed), json!({"extra": "x"}));
}

#[test]
fn parse_args_rejects_malformed_arguments() {
    let schema = schema_of(
        "#{ replicas: pint(1), ratio: float(1), on: bool(true), ports: list(int(), []) }",
    );
    let table: &[(&str, &str)] = &[
        (
            "replicas",
            "invalid argument `replicas`: expected `key=value`",
        ),
        (
            "replicas=three",
            "invalid argument `replicas=three`: expected integer",
        ),
        (
            "replicas=1.5",
            "invalid argument `replicas=1.5`: expected integer",
        ),
        ("ratio=abc", "invalid argument `ratio=abc`: expected number"),
        ("ratio=inf", "invalid argument `ratio=inf`: expected number"),
        (
            "on=yes",
            "invalid argument `on=yes`: expected boolean (`true` or `false`)",
        ),
        (
            "ports=1,x",
            "invalid argument `ports=1,x`: list item `x`: expected integer",
        ),
        (
            "a..b=1",
            "invalid argument `a..b`: a parameter path must not have empty segments (`a.b`, not `a..b`, `.a` or `a.`)",
        ),
        (
            ".a=1",
            "invalid argument `.a`: a parameter path must not have empty segments (`a.b`, not `a..b`, `.a` or `a.`)",
        ),
        (
            "a.=1",
            "invalid argument `a.`: a parameter path must not have empty segments (`a.b`, not `a..b`, `.a` or `a.`)",
        ),
        (
            "=1",
            "invalid argument ``: a parameter path must not have empty segments (`a.b`, not `a..b`, `.a` or `a.`)",
        ),
    ];
    for (arg, expected) in table {
        let error = schema.parse_args(&args(&[arg])).expect_err(arg).to_string();
        assert_eq!(error, *expected, "{arg}");
    }
    let error = schema
        .parse_args(&args(&["replicas=x", "on=maybe"]))
        .expect_err("two problems")
        .to_string();
    assert_eq!(
        error,
        "2 invalid arguments:\n  `replicas=x`: expected integer\n  `on=maybe`: expected boolean (`true` or `false`)"
    );
}

#[test]
fn merge_values_merges_objects_and_replaces_everything_else() {
    let table: &[(Value, Value, Value)] = &[
        (
            json!({"a": 1, "b": {"c": 1, "d": 2}}),
            json!({"b": {"c": 3}, "e": 4}),
            json!({"a": 1, "b": {"c": 3, "d": 2}, "e": 4}),
        ),
        (json!({"a": [1, 2]}), json!({"a": [3]}), json!({"a": [3]})),
        (json!({"a": {"b": 1}}), json!({"a": 2}), json!({"a": 2})),
        (
            json!({"a": 2}),
            json!({"a": {"b": 1}}),
            json!({"a": {"b": 1}}),
        ),
        (json!({"a": 1}), json!({"a": null}), json!({"a": null})),
        (json!(1), json!({"a": 1}), json!({"a": 1})),
    ];
    for (base, over, expected) in table {
        let mut merged = base.clone();
        merge_values(&mut merged, over);
        assert_eq!(&merged, expected, "{base} <- {over}");
    }
}

#[test]
fn parameter_schema_is_cheap_to_clone_and_shareable() {
    fn assert_send_sync<T: Send + Sync>(_: &T) {}
    let schema = schema_of(DESIGN_EXAMPLE);
    let copy = schema.clone();
    assert!(Arc::ptr_eq(&schema.inner, &copy.inner));
    assert_send_sync(&schema);
}
