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

/// `tests/fixtures/lint-many`: addons whose problems are of every kind, one per directory.
fn lint_many() -> std::path::PathBuf {
    crate::support::root().join("tests/fixtures/lint-many")
}

/// The text output of `addonctl lint <path>`, which must exit 2 (errors found).
fn lint_text(path: &std::path::Path) -> String {
    let out = addonctl().arg("lint").arg(path).assert().code(2);
    String::from_utf8_lossy(&out.get_output().stdout).into_owned()
}

/// Asserts that `text` has the line `line`.
fn assert_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "no line {line:?} in:\n{text}"
    );
}

#[test]
fn cli_lint_text_names_the_addon_file_and_line_of_every_finding() {
    let dir = lint_many();
    let text = lint_text(&dir);
    let findings = lint_json(&dir);
    assert!(findings.len() >= 10, "{findings:#?}");
    for finding in &findings {
        let addon = finding["addon"].as_str().unwrap();
        let file = finding["file"]
            .as_str()
            .unwrap_or_else(|| panic!("{finding}"));
        let line = finding["line"]
            .as_u64()
            .unwrap_or_else(|| panic!("{finding}"));
        let message = finding["message"].as_str().unwrap();
        let place = match finding["column"].as_u64() {
            Some(column) => format!("{addon}: {file}:{line}:{column}: "),
            None => format!("{addon}: {file}:{line}: "),
        };
        assert!(message.starts_with(&place), "{place:?}: {finding}");
        assert_line(
            &text,
            &format!("{}: {message}", finding["severity"].as_str().unwrap()),
        );
    }
    // Every line but the summary is a finding of one of the addons, at a file and line.
    let addons = [
        "cue-default",
        "meta-typo",
        "objects",
        "outputs",
        "param-broken",
    ];
    let lines: Vec<&str> = text.lines().collect();
    let (summary, findings_text) = lines.split_last().unwrap();
    assert_eq!(
        *summary,
        format!("checked 5 addons: {} errors, 0 warnings", findings.len())
    );
    assert_eq!(findings_text.len(), findings.len(), "{text}");
    for line in findings_text {
        let rest = line
            .strip_prefix("error: ")
            .unwrap_or_else(|| panic!("{line}"));
        let (addon, rest) = rest.split_once(": ").unwrap();
        assert!(addons.contains(&addon), "{line}");
        let (place, _) = rest.split_once(": ").unwrap();
        let mut parts = place.split(':');
        let file = parts.next().unwrap();
        assert!(dir.join(addon).join(file).is_file(), "{line}");
        let line_number: usize = parts.next().unwrap_or_default().parse().unwrap_or(0);
        assert!(line_number > 0, "{line}");
    }
    assert_line(
        &text,
        "error: objects: template.rhai:2:5: rendered CronJob `nightly` has no `apiVersion`; the API server needs it to know which API serves the object: add `apiVersion: batch/v1`",
    );
}

#[test]
fn cli_lint_a_metadata_or_parameter_error_does_not_hide_the_templates_findings() {
    // metadata.yaml misspells `version`: the template is still checked.
    let text = lint_text(&lint_many().join("meta-typo"));
    assert_line(
        &text,
        "error: meta-typo: metadata.yaml:2:1: `version` is required, and `verison` is no known key: did you mean `version`?",
    );
    assert_line(
        &text,
        "error: meta-typo: template.rhai:6:31: `parameter.imagee` is not declared in `parameter.rhai`, so it is always empty; did you mean `image`?",
    );
    assert!(
        text.contains("error: meta-typo: template.rhai:5:25: rendered ConfigMap `Meta_Typo`: the name must be a DNS-1123 subdomain"),
        "{text}"
    );
    assert!(
        text.ends_with("checked 1 addon: 3 errors, 0 warnings\n"),
        "{text}"
    );

    // parameter.rhai fails: the resources and the template (rendered without the parameters)
    // are still checked.
    let text = lint_text(&lint_many().join("param-broken"));
    assert_line(
        &text,
        "error: param-broken: parameter.rhai:2:15: Runtime error: `int(default)` expects an integer, got string \"two\"",
    );
    assert_line(
        &text,
        "error: param-broken: resources/settings.yaml:2:1: ConfigMap `settings` has no `apiVersion`; the API server needs it to know which API serves the object: add `apiVersion: v1`",
    );
    assert_line(
        &text,
        "error: param-broken: template.rhai:3:5: rendered Deployment `web` has no `apiVersion`; the API server needs it to know which API serves the object: add `apiVersion: apps/v1`",
    );
    assert!(
        text.ends_with("checked 1 addon: 3 errors, 0 warnings\n"),
        "{text}"
    );

    // Invalid YAML in metadata.yaml, a file that is not UTF-8 and two templates: each is
    // reported, and the rest of the addon is checked. The addon is named by its directory.
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("many-problems");
    for (path, text) in [
        ("metadata.yaml", "name: many-problems\nversion: [1.0\n"),
        ("template.yaml", "kind: Application\n"),
        ("template.rhai", "let x = ;\n"),
        (
            "resources/web.yaml",
            "kind: Deployment\nmetadata:\n  name: web\n",
        ),
    ] {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::write(dir.join("NOTES.rhai"), b"\xff\xfe").unwrap();
    let text = lint_text(&dir);
    assert!(
        text.contains("error: many-problems: metadata.yaml:3:1: not valid YAML: "),
        "{text}"
    );
    assert_line(
        &text,
        "error: many-problems: NOTES.rhai: the file is not valid UTF-8 text; addonctl reads addon files as UTF-8: save it as UTF-8 (the rest of the addon is checked without it)",
    );
    assert_line(
        &text,
        "error: many-problems: template.yaml: both `template.rhai` and `template.yaml` exist; keep one of them (the rest of the addon is checked with `template.rhai`)",
    );
    assert!(
        text.contains("error: many-problems: template.rhai:1:9: `template.rhai` line 1, column 9: syntax error"),
        "{text}"
    );
    assert_line(
        &text,
        "error: many-problems: resources/web.yaml:1:1: Deployment `web` has no `apiVersion`; the API server needs it to know which API serves the object: add `apiVersion: apps/v1`",
    );
}

#[test]
fn cli_lint_points_at_the_object_without_api_version_and_names_its_version() {
    let text = lint_text(&lint_many().join("objects"));
    for line in [
        "error: objects: resources/web.yaml:6:1: Deployment `web` has no `apiVersion`; the API server needs it to know which API serves the object: add `apiVersion: apps/v1`",
        "error: objects: template.rhai:2:5: rendered CronJob `nightly` has no `apiVersion`; the API server needs it to know which API serves the object: add `apiVersion: batch/v1`",
        "error: objects: template.rhai:7:5: rendered ClusterRole `objects-reader` has no `apiVersion`; the API server needs it to know which API serves the object: add `apiVersion: rbac.authorization.k8s.io/v1`",
        "error: objects: template.rhai:17:5: rendered Certificate `tls` has no `apiVersion`; the API server needs it to know which API serves the object: set the group/version of the API that serves `Certificate` (`kubectl api-resources` lists them)",
    ] {
        assert_line(&text, line);
    }
    // The ConfigMap that has one, and the Service beside the Deployment, are fine.
    assert!(!text.contains("`fine`"), "{text}");
    assert!(!text.contains("Service"), "{text}");
    assert!(
        text.ends_with("checked 1 addon: 4 errors, 0 warnings\n"),
        "{text}"
    );

    // An auxiliary output stops the render: it is placed at its `kind`.
    let text = lint_text(&lint_many().join("outputs"));
    assert_line(
        &text,
        "error: outputs: template.rhai:5:13: a ConfigMap (`outputs.settings`) has no `apiVersion`; the API server needs it to know which API serves the object: add `apiVersion: v1`; the render stops at it, so what it would render next was not checked",
    );

    // In a CUE template too.
    let text = lint_text(&lint_many().join("cue-default"));
    assert_line(
        &text,
        "error: cue-default: template.cue:10:4: rendered Ingress `web` has no `apiVersion`; the API server needs it to know which API serves the object: add `apiVersion: networking.k8s.io/v1`",
    );
}

#[test]
fn cli_lint_suggests_the_required_metadata_key_an_unknown_key_misspells() {
    let text = lint_text(&lint_many().join("meta-typo"));
    assert_line(
        &text,
        "error: meta-typo: metadata.yaml:2:1: `version` is required, and `verison` is no known key: did you mean `version`?",
    );
    // One finding for the one typo.
    assert_eq!(
        text.lines().filter(|l| l.contains("verison")).count(),
        1,
        "{text}"
    );
    let addon = TestAddon::new("both-keys").file(
        "metadata.yaml",
        "nmae: both-keys\nversoin: 1.0.0\ndescription: x\n",
    );
    let findings = lint_json(addon.path());
    assert_eq!(
        placed(&findings, "unknown-metadata-key", "did you mean `name`?"),
        ("metadata.yaml".into(), 1, 1, "error".into())
    );
    assert_eq!(
        placed(&findings, "unknown-metadata-key", "did you mean `version`?"),
        ("metadata.yaml".into(), 2, 1, "error".into())
    );
    assert_eq!(findings.len(), 2, "{findings:#?}");
    // A required key missing with no likely typo: placed at the document.
    let addon = TestAddon::new("no-version").file("metadata.yaml", "name: no-version\nhome: x\n");
    let text = lint_text(addon.path());
    assert_line(
        &text,
        "error: no-version: metadata.yaml:1: `version` is required (e.g. `version: 1.0.0`)",
    );
}

#[test]
fn cli_lint_reports_a_cue_default_of_the_wrong_type_as_a_type_error() {
    let dir = lint_many().join("cue-default");
    let text = lint_text(&dir);
    assert_line(
        &text,
        "error: cue-default: parameter.cue:3:12: type mismatch: the default of `parameter.replicas` is `\"1\"` (a string), but its type is `int`; write `*1 | int`, or change the type",
    );
    assert!(!text.contains("beyond the supported"), "{text}");
    let findings = lint_json(&dir);
    assert_eq!(
        placed(&findings, "parameter-schema", "type mismatch"),
        ("parameter.cue".into(), 3, 12, "error".into())
    );
}
