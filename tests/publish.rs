//! `addonctl package` and `addonctl index`, for registry authors.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

use crate::support::{builders::TestAddon, fixture_registry};

fn addonctl() -> Command {
    let mut cmd = Command::cargo_bin("addonctl").unwrap();
    cmd.env("NO_COLOR", "1");
    cmd
}

fn entries(archive: &std::path::Path) -> Vec<String> {
    let bytes = std::fs::read(archive).unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    tar.entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect()
}

#[test]
fn package_writes_a_deterministic_archive_under_the_addon_name_with_a_chart_yaml() {
    let out = tempfile::tempdir().unwrap();
    addonctl()
        .arg("package")
        .arg(fixture_registry().join("full"))
        .arg("-d")
        .arg(out.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("packaged `full` v1.2.0"));
    let archive = out.path().join("full-v1.2.0.tgz");
    let names = entries(&archive);
    assert!(names.iter().all(|n| n.starts_with("full/")), "{names:?}");
    assert!(names.contains(&"full/Chart.yaml".to_owned()));
    assert!(names.contains(&"full/metadata.yaml".to_owned()));
    assert!(names.contains(&"full/resources/extra/role.yml".to_owned()));
    let first = std::fs::read(&archive).unwrap();
    addonctl()
        .arg("package")
        .arg(fixture_registry().join("full"))
        .arg("-d")
        .arg(out.path())
        .assert()
        .success();
    assert_eq!(
        first,
        std::fs::read(&archive).unwrap(),
        "same addon, same bytes"
    );
}

#[test]
fn package_refuses_an_addon_with_lint_errors_or_a_version_helm_cannot_use() {
    let broken = TestAddon::new("broken").file("template.rhai", "let x = ;\n");
    let out = tempfile::tempdir().unwrap();
    addonctl()
        .arg("package")
        .arg(broken.path())
        .arg("-d")
        .arg(out.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("lint found"));
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);

    let unversioned = TestAddon::new("odd").file("metadata.yaml", "name: odd\nversion: latest\n");
    addonctl()
        .arg("package")
        .arg(unversioned.path())
        .arg("-d")
        .arg(out.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not semver"));
}

#[test]
fn index_lists_every_package_and_merging_keeps_existing_entries() {
    let out = tempfile::tempdir().unwrap();
    addonctl()
        .arg("package")
        .arg(fixture_registry())
        .arg("-d")
        .arg(out.path())
        .assert()
        .success();
    addonctl()
        .args(["index"])
        .arg(out.path())
        .args(["--url", "https://charts.example.invalid/addons"])
        .assert()
        .success()
        .stdout(predicate::str::contains("3 added"));
    let text = std::fs::read_to_string(out.path().join("index.yaml")).unwrap();
    let (index, _) = addonctl::yaml::parse_single(&text).unwrap();
    assert_eq!(index["apiVersion"], "v1");
    let full = &index["entries"]["full"][0];
    assert_eq!(full["version"], "v1.2.0");
    assert_eq!(full["apiVersion"], "v2");
    assert_eq!(
        full["urls"][0],
        "https://charts.example.invalid/addons/full-v1.2.0.tgz"
    );
    assert_eq!(full["digest"].as_str().unwrap().len(), 64);
    assert_eq!(full["annotations"]["addon.name"], "full");
    assert!(full["created"].as_str().unwrap().ends_with('Z'));

    // An existing index with another version of `minimal` (and a field we do not write).
    let merge = out.path().join("old-index.yaml");
    std::fs::write(
        &merge,
        "apiVersion: v1\nentries:\n  minimal:\n  - name: minimal\n    version: 0.0.1\n    urls: [https://old.example.invalid/minimal-0.0.1.tgz]\n    custom: kept\n  - name: minimal\n    version: 0.1.0\n    urls: [https://old.example.invalid/minimal-0.1.0.tgz]\n",
    )
    .unwrap();
    addonctl()
        .args(["index"])
        .arg(out.path())
        .args(["--url", "https://charts.example.invalid/addons/"])
        .arg("--merge")
        .arg(&merge)
        .assert()
        .success()
        .stdout(predicate::str::contains("2 added, 2 kept"));
    let text = std::fs::read_to_string(out.path().join("index.yaml")).unwrap();
    let (index, _) = addonctl::yaml::parse_single(&text).unwrap();
    let minimal: Vec<&Value> = index["entries"]["minimal"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(minimal.len(), 2);
    assert_eq!(minimal[0]["version"], "0.1.0");
    assert_eq!(
        minimal[0]["urls"][0], "https://old.example.invalid/minimal-0.1.0.tgz",
        "the existing entry for a version wins"
    );
    assert_eq!(minimal[1]["custom"], "kept");
}

#[test]
fn package_writes_to_its_destination_and_never_makes_a_directory_of_a_format() {
    let work = tempfile::tempdir().unwrap();
    // `-o json`, as every other command takes it: refused, no `json/` directory.
    addonctl()
        .current_dir(work.path())
        .arg("package")
        .arg(fixture_registry().join("full"))
        .args(["-o", "json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("-d DIR"));
    assert!(!work.path().join("json").exists());

    // `-d/--destination`, as helm has it.
    addonctl()
        .current_dir(work.path())
        .arg("package")
        .arg(fixture_registry().join("full"))
        .args(["-d", "dist"])
        .assert()
        .success()
        .stdout(predicate::str::contains("packaged `full` v1.2.0"))
        .stderr(predicate::str::is_empty());
    assert!(work.path().join("dist/full-v1.2.0.tgz").is_file());

    // The old `-o DIR` still works, with a note.
    addonctl()
        .current_dir(work.path())
        .arg("package")
        .arg(fixture_registry().join("full"))
        .args(["-o", "old"])
        .assert()
        .success()
        .stderr(predicate::str::contains("deprecated"));
    assert!(work.path().join("old/full-v1.2.0.tgz").is_file());
}
