//! `addonctl lint -o json`: every rule placed at its file, line and column with a stable code.

use assert_cmd::Command;
use serde_json::Value;

use crate::support::builders::TestAddon;

fn addonctl() -> Command {
    let mut cmd = Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBEVELA_SYSTEM_NAMESPACE")
        .env("NO_COLOR", "1");
    cmd
}

const SCRIPT: &str = r#"// Objects with problems the API server would reject.
let labels = #{ "app.kubernetes.io/name": "typos", "example.com/a/b": "x" };
let config = #{
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: #{ name: "Typos_Config", labels: labels },
    data: #{ image: parameter.imagee, cpu: parameter["resources"].cpu },
};
let no_kind = #{ apiVersion: "v1", metadata: #{ name: "kindless" } };
let versioned = #{
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: #{ name: "versioned", labels: #{ release: "1.0.0+build" } },
    data: #{ memory: parameter.resources.memroy },
};
k8s_objects("typos", [config, no_kind, versioned])
"#;

fn lint_json(path: &std::path::Path) -> Vec<Value> {
    let out = addonctl()
        .args(["lint", "-o", "json"])
        .arg(path)
        .assert()
        .code(2);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    report["findings"].as_array().unwrap().clone()
}

/// The finding with `code` whose message contains `text`: (file, line, column, severity).
fn placed(findings: &[Value], code: &str, text: &str) -> (String, u64, u64, String) {
    let f = findings
        .iter()
        .find(|f| f["code"] == code && f["message"].as_str().unwrap().contains(text))
        .unwrap_or_else(|| panic!("no `{code}` finding with {text:?} in {findings:#?}"));
    (
        f["file"].as_str().unwrap_or("<none>").to_owned(),
        f["line"].as_u64().unwrap_or(0),
        f["column"].as_u64().unwrap_or(0),
        f["severity"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn cli_lint_json_places_every_rule_at_file_line_and_column() {
    let addon = TestAddon::new("typos")
        .file(
            "metadata.yaml",
            "name: typos\nversion: 1.0.0\ndependancies:\n  - name: other\nmaintainer: me\n",
        )
        .file(
            "parameter.rhai",
            "#{\n    image: string(\"nginx\").usage(\"Image\"),\n    resources: object(#{ cpu: string(\"1\").usage(\"CPU\"), memory: string(\"1Mi\").usage(\"Memory\") }).usage(\"Resources\"),\n}\n",
        )
        .file("resources/typos.rhai", SCRIPT);
    let findings = lint_json(addon.path());
    let error = "error".to_owned();
    assert_eq!(
        placed(
            &findings,
            "unknown-metadata-key",
            "did you mean `dependencies`"
        ),
        ("metadata.yaml".into(), 3, 1, error.clone())
    );
    assert_eq!(
        placed(&findings, "unknown-metadata-key", "`maintainer`"),
        ("metadata.yaml".into(), 5, 1, "warning".into())
    );
    assert_eq!(
        placed(&findings, "undeclared-parameter", "parameter.imagee"),
        ("resources/typos.rhai".into(), 7, 31, error.clone())
    );
    assert!(
        placed(&findings, "undeclared-parameter", "parameter.imagee").0 == "resources/typos.rhai"
    );
    assert_eq!(
        placed(
            &findings,
            "undeclared-parameter",
            "parameter.resources.memroy"
        ),
        ("resources/typos.rhai".into(), 14, 42, error.clone())
    );
    assert!(
        !findings.iter().any(|f| f["message"]
            .as_str()
            .unwrap()
            .contains("parameter.resources.cpu")),
        "{findings:#?}"
    );
    assert_eq!(
        placed(&findings, "invalid-label-key", "example.com/a/b"),
        ("resources/typos.rhai".into(), 2, 53, error.clone())
    );
    assert_eq!(
        placed(&findings, "invalid-name", "Typos_Config"),
        ("resources/typos.rhai".into(), 6, 25, error.clone())
    );
    assert_eq!(
        placed(&findings, "invalid-label-value", "1.0.0+build"),
        ("resources/typos.rhai".into(), 13, 58, error.clone())
    );
    assert_eq!(
        placed(&findings, "missing-kind", "kindless").0,
        "resources/typos.rhai"
    );
    for finding in &findings {
        for key in [
            "file", "line", "column", "severity", "code", "addon", "message",
        ] {
            assert!(finding.get(key).is_some(), "`{key}` missing in {finding}");
        }
    }
}

#[test]
fn cli_lint_places_yaml_objects_without_api_version_at_their_document() {
    let addon = TestAddon::new("kindless").file(
        "resources/objects.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n---\n# no apiVersion\nkind: ConfigMap\nmetadata:\n  name: broken\n",
    );
    let findings = lint_json(addon.path());
    assert_eq!(
        placed(&findings, "missing-api-version", "broken"),
        ("resources/objects.yaml".into(), 7, 1, "error".into())
    );
}

#[test]
fn cli_lint_checks_cue_templates_against_parameter_cue() {
    let addon = TestAddon::new("cue-typo")
        .file(
            "parameter.cue",
            "parameter: {\n\t// +usage=Replicas\n\treplicas: *1 | int\n}\n",
        )
        .file(
            "template.cue",
            "package main\n\noutput: {\n\ttype: \"k8s-objects\"\n\tproperties: objects: [{\n\t\tapiVersion: \"v1\"\n\t\tkind: \"ConfigMap\"\n\t\tmetadata: name: \"cue-typo\"\n\t\tdata: replicas: \"\\(parameter.replicaz)\"\n\t}]\n}\n",
        );
    let findings = lint_json(addon.path());
    let (file, line, column, severity) =
        placed(&findings, "undeclared-parameter", "parameter.replicaz");
    assert_eq!(
        (file.as_str(), line, severity.as_str()),
        ("template.cue", 9, "error")
    );
    assert_eq!(column, 32);
    assert!(
        placed(&findings, "undeclared-parameter", "did you mean `replicas`").1 == 9,
        "{findings:#?}"
    );
}

#[test]
fn cli_lint_places_a_link_leaving_the_addon_at_the_link() {
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        outside.path(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let addon = TestAddon::new("linked");
    std::fs::create_dir_all(addon.path().join("resources")).unwrap();
    std::os::unix::fs::symlink(outside.path(), addon.path().join("resources/x.yaml")).unwrap();
    let findings = lint_json(addon.path());
    let skipped = findings
        .iter()
        .find(|f| f["code"] == "skipped-file")
        .unwrap_or_else(|| panic!("{findings:#?}"));
    assert_eq!(skipped["file"], "resources/x.yaml");
    assert_eq!(skipped["severity"], "error");
    assert_eq!(skipped["line"], Value::Null);
}

#[test]
fn cli_lint_never_shows_a_secret_value_it_finds_invalid() {
    let addon = TestAddon::new("leaky")
        .file(
            "parameter.rhai",
            "#{ token: string(\"Hunter2+Secret\").secret().usage(\"Token\") }\n",
        )
        .file(
            "resources/leak.rhai",
            "k8s_objects(\"leak\", [#{ apiVersion: \"v1\", kind: \"ConfigMap\", metadata: #{ name: \"leak\", labels: #{ token: parameter.token } } }])\n",
        );
    let out = addonctl()
        .args(["lint", "-o", "json"])
        .arg(addon.path())
        .assert()
        .code(2);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    let finding = findings
        .iter()
        .find(|f| f["code"] == "invalid-label-value")
        .unwrap_or_else(|| panic!("{findings:#?}"));
    assert!(
        finding["message"].as_str().unwrap().contains("******"),
        "{finding}"
    );
    assert!(!stdout.contains("Hunter2"), "{stdout}");
}
