//! Tests of the config-template converter and robustness.

use serde_json::json;

use super::tests_fixtures::*;
use super::*;

// --- config templates ----------------------------------------------------------------------

#[test]
fn config_template_config_map() {
    let cm = config(CONFIG);
    assert_eq!(cm["apiVersion"], "v1");
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(
        cm["metadata"],
        json!({
            "name": "config-template-demo-config",
            "namespace": "vela-system",
            "labels": {"config.oam.dev/catalog": "velacore-config", "config.oam.dev/scope": "project"},
            "annotations": {
                "config.oam.dev/alias": "Demo Config",
                "config.oam.dev/description": "Every construct of the supported subset",
                "config.oam.dev/sensitive": "true"
            }
        })
    );
    assert_eq!(
        cm["data"]["template"],
        format!("{CONFIG}\n\n\tcontext: {{\n\t\tname: string\n\t\tnamespace: string\n\t}}\n")
    );
    assert_eq!(cm["data"]["expanded-writer"], "{\"nacos\":null}");
}

#[test]
fn config_template_schema_covers_the_subset() {
    let expected = json!({
        "type": "object",
        "properties": {
            "url": {"type": "string", "title": "url", "description": "The server URL"},
            "token": {"type": "string", "title": "token", "description": "An access token"},
            "port": {"type": "integer", "default": 8080, "title": "port", "description": "The port"},
            "ratio": {"type": "number", "default": 0.5, "title": "ratio"},
            "weight": {"type": "number", "title": "weight"},
            "enabled": {"type": "boolean", "default": true, "title": "enabled"},
            "protocol": {
                "type": "string", "enum": ["https", "http", "grpc"], "default": "https",
                "title": "protocol", "description": "The protocol,\none of three"
            },
            "level": {"type": "string", "enum": ["debug", "info"], "title": "level"},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "title": "replicas"},
            "percent": {"type": "integer", "minimum": 1, "maximum": 99, "title": "percent"},
            "code": {"type": "string", "pattern": "^[a-z]+$", "title": "code"},
            "tags": {"type": "array", "items": {"type": "string"}, "title": "tags"},
            "servers": {
                "type": "array", "title": "servers",
                "items": {
                    "type": "object",
                    "properties": {
                        "host": {"type": "string", "title": "host"},
                        "port": {"type": "integer", "default": 80, "title": "port", "description": "The server port"}
                    },
                    "required": ["host"]
                }
            },
            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "title": "labels"},
            "extra": {"type": "object", "additionalProperties": {"type": "integer"}, "title": "extra"},
            "auth": {
                "type": "object", "title": "auth",
                "properties": {
                    "username": {"type": "string", "title": "username"},
                    "password": {"type": "string", "title": "password"}
                },
                "required": ["username"]
            },
            "tls": {
                "type": "object", "title": "tls",
                "properties": {"enabled": {"type": "boolean", "default": false, "title": "enabled"}}
            },
            "content": {"type": "object", "title": "content"},
            "anything": {"title": "anything"},
            "kind": {"type": "string", "enum": ["Demo"], "default": "Demo", "title": "kind"},
            "zones": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"], "title": "zones"},
            "quoted-key": {"type": "string", "title": "quoted-key"},
            "notes": {"type": "string", "title": "notes", "description": "A plain comment describes too\nover two lines"},
            "ttl": {"type": "integer", "minimum": 0, "title": "ttl"}
        },
        "required": [
            "url", "level", "replicas", "percent", "code", "tags", "labels", "extra", "auth", "tls",
            "content", "anything"
        ]
    });
    assert_eq!(parameter_schema(&config(CONFIG)), expected);
}

#[test]
fn config_template_defaults_and_nacos_writer() {
    let cm = config(NACOS);
    assert_eq!(cm["metadata"]["labels"]["config.oam.dev/scope"], "system");
    assert_eq!(
        cm["metadata"]["annotations"]["config.oam.dev/sensitive"],
        "false"
    );
    let writer: Value = serde_json::from_str(cm["data"]["expanded-writer"].as_str().unwrap_or(""))
        .unwrap_or(Value::Null);
    assert_eq!(
        writer,
        json!({"nacos": {
            "endpoint": {"name": "nacos", "namespace": ""},
            "format": "yaml",
            "metadata": {"dataId": "", "group": "", "namespaceId": ""}
        }})
    );
    let schema = parameter_schema(&cm);
    assert_eq!(schema["required"], json!(["dataId", "content"]));
    assert_eq!(
        schema["properties"]["contentType"],
        json!({"type": "string", "enum": ["json", "yaml", "properties", "toml"], "default": "json", "title": "contentType"})
    );

    let minimal = config("metadata: name: \"m\"\ntemplate: parameter: {}\n");
    assert_eq!(minimal["metadata"]["labels"]["config.oam.dev/scope"], "");
    assert_eq!(
        minimal["metadata"]["annotations"]["config.oam.dev/alias"],
        ""
    );
    assert_eq!(
        minimal["metadata"]["annotations"]["config.oam.dev/sensitive"],
        "false"
    );
    assert_eq!(parameter_schema(&minimal), json!({"type": "object"}));

    let map = config(
        "metadata: {name: \"m\"}\nmetadata: {alias: \"M\"}\ntemplate: {parameter: [string]: string}\n",
    );
    assert_eq!(map["metadata"]["annotations"]["config.oam.dev/alias"], "M");
    assert_eq!(
        parameter_schema(&map),
        json!({"type": "object", "additionalProperties": {"type": "string"}})
    );
}

#[test]
fn config_template_skips_what_it_does_not_read() {
    let text = "package main\n\nimport \"strings\"\n\n#Helper: {a: string}\n_hidden: 1\nlet x = 2\ntemplate: {\n\tnacos: {format: parameter.f, endpoint: name: strings.ToLower(\"N\")}\n\tif x > 1 {\n\t\toutputs: {}\n\t}\n\tparameter: f: *\"json\" | \"yaml\"\n}\nmetadata: name: \"skim\"\n";
    let cm = config(text);
    assert_eq!(cm["metadata"]["name"], "config-template-skim");
    let writer: Value = serde_json::from_str(cm["data"]["expanded-writer"].as_str().unwrap_or(""))
        .unwrap_or(Value::Null);
    assert_eq!(writer["nacos"]["format"], "");
    assert_eq!(writer["nacos"]["endpoint"]["name"], "");
    assert_eq!(parameter_schema(&cm)["properties"]["f"]["default"], "json");
}

#[test]
fn config_template_beyond_subset_is_named() {
    let cases: [(&str, usize, usize, &str); 13] = [
        ("\t\tref: parameter.url", 4, 8, "reference `parameter.url`"),
        (
            "\t\tif context.name != _|_ {\n\t\t\tx: string\n\t\t}",
            4,
            3,
            "`if` comprehension",
        ),
        ("\t\tl: [for x in [1] {x}]", 4, 7, "`for` comprehension"),
        (
            "\t\tc: close({a: string})",
            4,
            6,
            "function call `close(…)`",
        ),
        (
            "\t\td: strings.ToLower(\"A\")",
            4,
            6,
            "function call `strings.ToLower(…)`",
        ),
        ("\t\te: string | int", 4, 15, "several types"),
        ("\t\tf: string & !=\"\"", 4, 15, "`!=` constraint"),
        ("\t\th: float & >0", 4, 14, "exclusive bound `>`"),
        ("\t\ti: *1 | *2 | int", 4, 11, "second `*` default"),
        ("\t\tj: \"a\" | 1", 4, 12, "enum mixing value types"),
        ("\t\tk: string\n\t\tk: \"x\"", 5, 3, "declaring `k` twice"),
        ("\t\tlet x = 1", 4, 3, "`let` declaration"),
        ("\t\tm: 1 + 2", 4, 8, "expression with `+`"),
    ];
    // A definition that is declared nowhere.
    let e = config_error(&config_with("\t\tg: #Port"));
    assert_error(&e, 4, 6, &["reference \"#Port\" not found"]);
    for (parameter, line, column, needle) in cases {
        let e = config_error(&config_with(parameter));
        assert_error(
            &e,
            line,
            column,
            &[needle, "beyond the supported CUE subset"],
        );
    }
}

#[test]
fn config_template_metadata_errors() {
    let e = config_error("template: {parameter: {}}\n");
    assert_error(&e, 2, 1, &["no `metadata"]);
    let e = config_error("metadata: {alias: \"a\"}\ntemplate: {parameter: {}}\n");
    assert_error(&e, 1, 1, &["`metadata.name` is required"]);
    let e = config_error("metadata: {name: \"a\", scope: \"global\"}\ntemplate: {parameter: {}}\n");
    assert_error(&e, 1, 30, &["`scope`", "\"global\""]);
    let e =
        config_error("metadata: {name: \"a\", sensitive: \"yes\"}\ntemplate: {parameter: {}}\n");
    assert_error(&e, 1, 34, &["`sensitive` must be a bool"]);
    let e = config_error("metadata: {name: \"a\"}\n");
    assert_error(&e, 2, 1, &["no `template"]);
    let e = config_error("metadata: {name: \"a\"}\ntemplate: {output: {}}\n");
    assert_error(&e, 2, 1, &["`template.parameter` is missing"]);
    let e = config_error(
        "metadata: {name: \"a\"}\ntemplate: {parameter: {}}\ntemplate: parameter: {}\n",
    );
    assert_error(&e, 3, 11, &["more than once"]);
    let e = config_error("metadata: {name: context.name}\ntemplate: {parameter: {}}\n");
    assert_error(&e, 1, 18, &["reference `context`", "literal"]);
    let e = config_error("metadata: {name: \"Bad_Name\"}\ntemplate: {parameter: {}}\n");
    assert_error(&e, 1, 18, &["not a valid Kubernetes name"]);
    let e = config_error("metadata: {name: \"a\"}\ntemplate: {parameter: {a: string}\n");
    assert_error(&e, 2, 11, &["never closed"]);
}

// --- robustness ----------------------------------------------------------------------------

#[test]
fn deep_nesting_is_refused_without_overflow() {
    let deep =
        |open: &str, close: &str, n: usize| format!("{}1{}", open.repeat(n), close.repeat(n));
    let text = format!(
        "\"x\": {{type: \"trait\", attributes: {{v: {}}}}}\ntemplate: {{patch: {{}}}}\n",
        deep("{a: ", "}", 300)
    );
    assert!(definition_error(&text)
        .message
        .contains("nesting deeper than 128"));
    let text = format!(
        "\"x\": {{type: \"trait\", attributes: {{v: {}}}}}\ntemplate: {{patch: {{}}}}\n",
        deep("[", "]", 300)
    );
    assert!(definition_error(&text)
        .message
        .contains("nesting deeper than 128"));
    let text = format!(
        "\"x\": {{type: \"trait\", attributes: v: {}}}\ntemplate: {{patch: {{}}}}\n",
        deep("a: ", "", 300)
    );
    assert!(definition_error(&text)
        .message
        .contains("nesting deeper than 128"));
    let interpolation = format!("{}{}", "\"\\(".repeat(300), ")\"".repeat(300));
    let text = format!("\"x\": {{type: \"trait\"}}\ntemplate: {{v: {interpolation}}}\n");
    assert!(definition_error(&text)
        .message
        .contains("nested deeper than 128"));
    let text = config_with(&format!("a: {}", deep("{b: ", "}", 300)));
    assert!(config_error(&text)
        .message
        .contains("nesting deeper than 128"));
    let text = config_with(&format!("a: {}", deep("[...", "]", 300)));
    assert!(config_error(&text)
        .message
        .contains("nesting deeper than 128"));
    // Deep CUE inside the template block is only skimmed, iteratively.
    let text = format!(
        "\"x\": {{type: \"trait\"}}\ntemplate: {{v: {}}}\n",
        deep("{a: [", "]}", 5000)
    );
    assert_eq!(definition(&text)["kind"], "TraitDefinition");
    let text = format!(
        "metadata: name: \"a\"\ntemplate: {{output: {}, parameter: {{}}}}\n",
        deep("{a: (", ")}", 5000)
    );
    assert_eq!(config(&text)["kind"], "ConfigMap");
}

fn fixtures() -> [&'static str; 7] {
    [
        COMPONENT,
        TRAIT,
        WORKFLOW_STEP,
        POLICY,
        LITERALS,
        CONFIG,
        NACOS,
    ]
}

/// Both entry points must answer Ok or Err, with a sensible position, never panic.
fn check_no_panic(text: &str) {
    let lines = text.lines().count() + 2;
    for result in [
        definition_from_cue(text, "ns"),
        config_template_from_cue(text, "ns"),
    ] {
        if let Err(e) = result {
            assert!(
                e.line >= 1 && e.line <= lines && e.column >= 1,
                "bad position {e} for {text:?}"
            );
        }
    }
}

#[test]
fn every_prefix_of_every_fixture_is_handled() {
    for fixture in fixtures() {
        for (i, _) in fixture.char_indices() {
            check_no_panic(&fixture[..i]);
        }
        check_no_panic(fixture);
    }
}

#[test]
fn random_mutations_are_handled() {
    const ALPHABET: &[char] = &[
        '{', '}', '[', ']', '(', ')', '"', '\'', '#', '\\', '\n', ':', '*', '|', '&', '?', '!',
        '.', ',', '/', ' ', '\t', 'a', '1', '_', '$', '>', '=', '~', '-', 'é', '\r', '\u{feff}',
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % bound.max(1) as u64).unwrap_or(0)
    };
    for round in 0..3000 {
        let fixtures = fixtures();
        let mut chars: Vec<char> = fixtures[round % fixtures.len()].chars().collect();
        for _ in 0..=next(4) {
            let at = next(chars.len() + 1);
            match next(4) {
                0 if at < chars.len() => {
                    chars.remove(at);
                }
                1 => chars.insert(at, ALPHABET[next(ALPHABET.len())]),
                2 => {
                    let len = next(40).min(chars.len() - at.min(chars.len()));
                    let copy: Vec<char> =
                        chars[at.min(chars.len())..at.min(chars.len()) + len].to_vec();
                    let to = next(chars.len() + 1);
                    chars.splice(to..to, copy);
                }
                _ => chars.truncate(at),
            }
        }
        let text: String = chars.into_iter().collect();
        check_no_panic(&text);
    }
    for _ in 0..2000 {
        let text: String = (0..next(60))
            .map(|_| ALPHABET[next(ALPHABET.len())])
            .collect();
        check_no_panic(&text);
    }
}
