//! The `addonctl` binary: output formats, exit codes, the built-in registry, `init` → `lint`.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

use crate::support::{builders::TestAddon, fixture_registry};

fn addonctl() -> Command {
    let mut cmd = Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBEVELA_SYSTEM_NAMESPACE")
        .env("NO_COLOR", "1");
    cmd
}

#[test]
fn render_prints_a_json_list_and_notes_on_stderr() {
    let out = addonctl()
        .args(["render", "-o", "json"])
        .arg(fixture_registry().join("full"))
        .arg("replicas=3")
        .assert()
        .success()
        .stderr(predicate::str::contains("is enabled in mode standalone"))
        .get_output()
        .stdout
        .clone();
    let list: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(list["kind"], "List");
    let app = list["items"].as_array().unwrap().last().unwrap();
    assert_eq!(app["kind"], "Application");
    assert_eq!(
        app["spec"]["components"][0]["properties"]["objects"][0]["spec"]["replicas"],
        3
    );
}

#[test]
fn render_yaml_stream_is_the_default() {
    addonctl()
        .arg("render")
        .arg(fixture_registry().join("minimal"))
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "---\napiVersion: v1\nkind: Namespace\n",
        ));
}

#[test]
fn render_schema_prints_the_json_schema() {
    let out = addonctl()
        .args(["render", "--schema", "-o", "json"])
        .arg(fixture_registry().join("full"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let schema: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(schema["properties"]["replicas"]["type"], "integer");
    assert_eq!(schema["properties"]["replicas"]["default"], 2);
}

#[test]
fn render_values_file_and_args_are_merged_args_winning() {
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("values.yaml");
    std::fs::write(&values, "replicas: 4\nmode: ha\n").unwrap();
    let out = addonctl()
        .args(["render", "-o", "json", "--values"])
        .arg(&values)
        .arg(fixture_registry().join("full"))
        .arg("replicas=5")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let list: Value = serde_json::from_slice(&out).unwrap();
    let text = list.to_string();
    assert!(text.contains("\"replicas\":5"), "{text}");
    assert!(text.contains("\"mode\":\"ha\""), "{text}");
}

#[test]
fn user_errors_exit_2_with_a_clear_message() {
    addonctl()
        .args(["render", "no-such-addon"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no addon `no-such-addon` in the built-in registry",
        ));
    addonctl()
        .arg("render")
        .arg(fixture_registry().join("full"))
        .arg("bogus=1")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bogus"));
    addonctl()
        .arg("render")
        .arg(fixture_registry().join("full"))
        .arg("replicas=99")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("replicas"));
}

#[test]
fn builtin_addons_render_and_lint_clean() {
    addonctl()
        .args(["lint"])
        .arg(crate::support::root().join("addons"))
        .assert()
        .success();
    let out = addonctl()
        .args(["render", "-o", "json"])
        .arg("builtin/strongbox-operator")
        .assert()
        .success();
    let list: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(
        list["items"].as_array().unwrap().last().unwrap()["metadata"]["labels"]
            ["addons.oam.dev/registry"],
        "builtin"
    );
}

#[test]
fn init_scaffolds_an_addon_that_lints_clean_and_renders() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("my-addon");
    addonctl()
        .args(["init", "my-addon", "--dir"])
        .arg(&target)
        .assert()
        .success();
    addonctl()
        .args(["lint", "--strict"])
        .arg(&target)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "checked 1 addon: 0 errors, 0 warnings",
        ));
    addonctl()
        .arg("render")
        .arg(&target)
        .arg("replicas=2")
        .assert()
        .success();
    // A second init into the same directory refuses to overwrite.
    addonctl()
        .args(["init", "my-addon", "--dir"])
        .arg(&target)
        .assert()
        .code(2);
    addonctl().args(["init", "Bad_Name"]).assert().code(2);
}

#[test]
fn lint_reports_errors_and_exits_2() {
    let addon = TestAddon::new("broken")
        .file("template.rhai", "let x = ;")
        .file("parameter.rhai", "#{ a: int(1) }");
    addonctl()
        .arg("lint")
        .arg(addon.path())
        .assert()
        .code(2)
        .stdout(predicate::str::contains("`template.rhai` line 1"))
        .stdout(predicate::str::contains("parameter `a` has no `.usage"));
    let out = addonctl()
        .args(["lint", "-o", "json"])
        .arg(addon.path())
        .assert()
        .code(2);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert!(report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["severity"] == "error"));
}

#[test]
fn lint_fixture_registry_is_clean() {
    addonctl()
        .arg("lint")
        .arg(fixture_registry())
        .assert()
        .success();
}

#[test]
fn a_looping_script_fails_within_the_deadline_plus_one_second() {
    for file in [
        "template.rhai",
        "parameter.rhai",
        "resources/spin.rhai",
        "NOTES.rhai",
    ] {
        let addon = TestAddon::new("spin").file(file, "loop {}");
        let started = std::time::Instant::now();
        addonctl()
            .args([
                "render",
                "--script-timeout",
                "1",
                "--script-max-operations",
                "18446744073709551615",
            ])
            .arg(addon.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains("ran longer than the 1s limit"));
        let elapsed = started.elapsed();
        assert!(
            elapsed < std::time::Duration::from_secs(2),
            "{file}: {elapsed:?}"
        );
    }
}
