//! KubeVela's CUE addons, unchanged: the fixture addons of `tests/fixtures/cue-addons` render to
//! what the real CUE evaluator gives (the goldens `scripts/cue-addon-goldens.sh` writes with
//! CUE v0.9.2, building the files exactly as `vela` does), and enable on the control plane with
//! KubeVela's CRDs (see `support::k8s`).

use std::path::PathBuf;

use addonctl::loader;
use addonctl::render::{RenderOptions, Rendered, Renderer};
use addonctl::source::local::LocalReader;
use addonctl::source::AddonRef;
use serde_json::{json, Map, Value};

use crate::support::k8s::{args, owned_by, Kind, Sandbox};
use crate::support::root;

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/cue-addons")
}

fn fixture(addon: &str) -> PathBuf {
    fixtures().join(addon)
}

/// One case of `cases.json`.
struct Case {
    addon: String,
    name: String,
    args: Map<String, Value>,
    upgrade: bool,
}

fn cases() -> Vec<Case> {
    let text = fs_err::read_to_string(fixtures().join("cases.json")).unwrap();
    let list: Vec<Value> = serde_json::from_str(&text).unwrap();
    list.into_iter()
        .map(|c| Case {
            addon: c["addon"].as_str().unwrap().to_owned(),
            name: c["case"].as_str().unwrap().to_owned(),
            args: c["args"].as_object().unwrap().clone(),
            upgrade: c["upgrade"].as_bool().unwrap_or(false),
        })
        .collect()
}

async fn render(addon: &str, args: &Map<String, Value>, upgrade: bool) -> Rendered {
    let reader = LocalReader::new(fixture(addon)).unwrap();
    let package = loader::load(&reader, &AddonRef::latest(addon))
        .await
        .unwrap();
    let options = RenderOptions {
        args: args.clone(),
        upgrade,
        ..RenderOptions::default()
    };
    Renderer::new()
        .render(&package, &options)
        .unwrap_or_else(|e| panic!("{addon}: {e}"))
}

/// The Application `vela` makes of a golden: the template's `output` (or an empty one), its
/// components, one `raw` component per needed namespace, `<addon>-resources`, the legacy CUE
/// components; named, namespaced and labelled as KubeVela does.
fn expected_application(case: &Case, golden: &Value, rendered: &Value) -> Value {
    let template_yaml = fixture(&case.addon).join("template.yaml");
    let mut app = if !golden["output"].is_null() {
        golden["output"].clone()
    } else if template_yaml.exists() {
        serde_yaml::from_str(&fs_err::read_to_string(&template_yaml).unwrap()).unwrap()
    } else {
        json!({"apiVersion": "core.oam.dev/v1beta1", "kind": "Application", "spec": {}})
    };
    let mut components: Vec<Value> = app["spec"]["components"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let metadata_text = fs_err::read_to_string(fixture(&case.addon).join("metadata.yaml")).unwrap();
    let metadata: Value = serde_yaml::from_str(&metadata_text).unwrap();
    for ns in metadata["needNamespace"].as_array().into_iter().flatten() {
        components.push(json!({
            "name": format!("{}-namespace", ns.as_str().unwrap()),
            "type": "raw",
            "properties": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        }));
    }
    // `<addon>-resources` is not CUE: taken from the render, checked by the other render tests.
    components.extend(
        rendered["spec"]["components"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["name"] == format!("{}-resources", case.addon))
            .cloned(),
    );
    components.extend(golden["components"].as_array().unwrap().iter().cloned());
    app["spec"]["components"] = json!(components);
    let runtime_cluster = metadata["deployTo"]["runtimeCluster"] == true;
    if golden["output"].is_null() && runtime_cluster {
        app["spec"]["policies"] = json!([{
            "name": "deploy-addon-to-all-clusters",
            "type": "topology",
            "properties": {"clusterLabelSelector": {}},
        }]);
    }
    app["metadata"] = json!({
        "name": format!("addon-{}", case.addon),
        "namespace": "vela-system",
        "labels": {
            "addons.oam.dev/name": case.addon,
            "addons.oam.dev/version": metadata["version"],
            "addons.oam.dev/registry": "local",
        },
        "annotations": rendered["metadata"]["annotations"],
    });
    app
}

/// What `addonctl render <dir> -f <args> -o json` prints: the Application, the auxiliary outputs
/// (key, object) and the notes (stderr). In a process of its own, so that an evaluator that
/// crashes fails one case, not the test binary.
/// What a render gives: the Application, the auxiliary outputs (key, object), the notes.
type RenderResult = (Value, Vec<(String, Value)>, String);

fn render_cli(case: &Case) -> Result<RenderResult, String> {
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("values.yaml");
    fs_err::write(&values, serde_json::to_string(&case.args).unwrap()).unwrap();
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin("addonctl"))
        .arg("render")
        .arg(fixture(&case.addon))
        .arg("-f")
        .arg(&values)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        return Err(format!("render failed ({}): {stderr}", output.status));
    }
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    let items = list["items"].as_array().unwrap();
    let application = items
        .iter()
        .find(|o| o["kind"] == "Application")
        .cloned()
        .unwrap();
    let outputs = items
        .iter()
        .filter_map(|o| {
            let key = o["metadata"]["labels"]["addons.oam.dev/auxiliary-name"].as_str()?;
            Some((key.to_owned(), o.clone()))
        })
        .collect();
    Ok((application, outputs, stderr))
}

/// How one case differs from its golden; empty when it matches.
async fn differences(case: &Case) -> Vec<String> {
    let golden_file = fixtures()
        .join("goldens")
        .join(format!("{}.{}.json", case.addon, case.name));
    let golden: Value =
        serde_json::from_str(&fs_err::read_to_string(&golden_file).unwrap()).unwrap();
    let what = format!("{} ({})", case.addon, case.name);
    let (application, outputs, notes) = if case.upgrade {
        let rendered = render(&case.addon, &case.args, true).await;
        let notes = rendered.notes.clone().unwrap_or_default();
        (rendered.application, rendered.outputs, notes)
    } else {
        match render_cli(case) {
            Ok(found) => found,
            Err(e) => return vec![format!("{what}: {e}")],
        }
    };
    let mut out = Vec::new();
    let expected = expected_application(case, &golden, &application);
    if application != expected {
        out.push(format!(
            "{what}: the Application differs\n  rendered: {application}\n  expected: {expected}"
        ));
    }
    // KubeVela labels each output with its key, then with the addon's name and version (the
    // text of metadata.yaml), over the labels the template gives.
    let metadata: Value = serde_yaml::from_str(
        &fs_err::read_to_string(fixture(&case.addon).join("metadata.yaml")).unwrap(),
    )
    .unwrap();
    let expected_outputs: Vec<(String, Value)> = golden["outputs"]
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|(key, mut object)| {
            let labels = &mut object["metadata"]["labels"];
            labels["addons.oam.dev/auxiliary-name"] = json!(key);
            labels["addons.oam.dev/name"] = json!(case.addon);
            labels["addons.oam.dev/version"] = metadata["version"].clone();
            (key, object)
        })
        .collect();
    let mut sorted = outputs.clone();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut expected_sorted = expected_outputs;
    expected_sorted.sort_by(|a, b| a.0.cmp(&b.0));
    if sorted != expected_sorted {
        out.push(format!(
            "{what}: the outputs differ\n  rendered: {sorted:?}\n  expected: {expected_sorted:?}"
        ));
    }
    if let Some(text) = golden["notes"].as_str() {
        if !notes.contains(text) {
            out.push(format!(
                "{what}: the notes differ: `{notes}`, expected `{text}`"
            ));
        }
    }
    out
}

#[tokio::test]
async fn every_fixture_addon_renders_to_what_the_real_cue_evaluator_gives() {
    let cases = cases();
    let addons: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.addon.as_str()).collect();
    assert!(addons.len() >= 8, "{addons:?}");
    let mut failures = Vec::new();
    for case in &cases {
        failures.extend(differences(case).await);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_parameter_schema_of_a_cue_addon_is_the_one_rhai_addons_get() {
    let out = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .args(["render", "--schema", "-o", "json"])
        .arg(fixture("cue-params"))
        .assert()
        .success();
    let schema: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let properties = &schema["properties"];
    assert_eq!(properties["replicas"]["type"], "integer", "{schema:#}");
    assert_eq!(properties["replicas"]["default"], 2, "{schema:#}");
    assert_eq!(properties["replicas"]["minimum"], 1, "{schema:#}");
    assert_eq!(properties["replicas"]["maximum"], 10, "{schema:#}");
    assert_eq!(
        properties["mode"]["enum"],
        json!(["standalone", "ha", "edge"]),
        "{schema:#}"
    );
    assert_eq!(
        properties["name"]["pattern"], "^[a-z][a-z0-9-]*$",
        "{schema:#}"
    );
    assert_eq!(properties["ratio"]["type"], "number", "{schema:#}");
    assert_eq!(properties["args"]["items"]["type"], "string", "{schema:#}");
    assert_eq!(
        properties["resources"]["properties"]["cpu"]["default"], "100m",
        "{schema:#}"
    );
    assert_eq!(properties["replicas"]["description"], "Replicas, 1 to 10");
    assert!(
        schema["required"]
            .as_array()
            .unwrap()
            .contains(&json!("owner")),
        "{schema:#}"
    );
}

#[test]
fn bad_arguments_of_a_cue_addon_are_parameter_errors() {
    let render = |arg: &str| {
        assert_cmd::Command::cargo_bin("addonctl")
            .unwrap()
            .arg("render")
            .arg(fixture("cue-params"))
            .args(["owner=me", arg])
            .assert()
            .code(2)
    };

    let unknown = render("colour=blue");
    let too_many = render("replicas=11");

    let unknown = String::from_utf8_lossy(&unknown.get_output().stderr).into_owned();
    assert!(unknown.contains("colour"), "{unknown}");
    assert!(
        unknown.contains("replicas"),
        "names the known parameters: {unknown}"
    );
    let too_many = String::from_utf8_lossy(&too_many.get_output().stderr).into_owned();
    assert!(too_many.contains("replicas"), "{too_many}");
    assert!(too_many.contains("11"), "{too_many}");
}

/// `addonctl render <dir> [args]`, expected to fail with exit code 2: its stderr.
fn render_refused(dir: &std::path::Path, args: &[&str]) -> String {
    let out = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .arg("render")
        .arg(dir)
        .args(args)
        .assert()
        .code(2);
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

#[test]
fn a_closed_definition_in_parameter_refuses_fields_it_does_not_declare() {
    // `host: #host` is closed; `values: #values` is open (`...`).
    let stderr = render_refused(&fixture("cue-catalog"), &["host.extra=1"]);
    assert!(stderr.contains("host.extra"), "{stderr}");
    assert!(
        stderr.contains("host.name"),
        "names the known fields: {stderr}"
    );
    assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .arg("render")
        .arg(fixture("cue-catalog"))
        .args(["values.extra=1", "postgresURL=null"])
        .assert()
        .success();
}

#[test]
fn an_unused_import_is_named_as_cue_names_it() {
    // KubeVela builds `template.cue` as `package main` even without the clause: CUE refuses
    // an import that is not used.
    let addon = crate::support::builders::TestAddon::new("unused-import")
        .file("parameter.cue", "parameter: {}\n")
        .file(
            "template.cue",
            "import \"strings\"\n\noutput: {\n\tapiVersion: \"core.oam.dev/v1beta1\"\n\tkind: \"Application\"\n}\n",
        );

    let stderr = render_refused(addon.path(), &[]);

    assert!(
        stderr.contains("imported and not used: \"strings\""),
        "{stderr}"
    );
    assert!(stderr.contains("template.cue"), "{stderr}");
}

#[test]
fn a_missing_required_parameter_is_named_by_its_field_path() {
    let addon = crate::support::builders::TestAddon::new("nested-required")
        .file(
            "parameter.cue",
            "parameter: {\n\taws: {\n\t\tbucket: string\n\t\tregion: *\"us-east-1\" | string\n\t}\n\texternalURL: string\n}\n",
        )
        .file(
            "template.cue",
            "output: {\n\tapiVersion: \"core.oam.dev/v1beta1\"\n\tkind: \"Application\"\n\tmetadata: annotations: bucket: parameter.aws.bucket\n}\n",
        );

    let stderr = render_refused(addon.path(), &[]);

    assert!(stderr.contains("`aws.bucket`"), "{stderr}");
    assert!(stderr.contains("`externalURL`"), "{stderr}");
    assert!(!stderr.contains("`aws`:"), "{stderr}");
}

#[test]
fn a_cue_error_names_the_addon_file_line_and_column() {
    let addon = crate::support::builders::TestAddon::new("broken-cue")
        .file("parameter.cue", "parameter: {\n\treplicas: *1 | int\n}\n")
        .file(
            "template.cue",
            "output: {\n\tapiVersion: \"core.oam.dev/v1beta1\"\n\tkind: \"Application\"\n\tspec: replicas: parameter.replicas\n\tspec: replicas: \"two\"\n}\n",
        );

    let out = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .arg("render")
        .arg(addon.path())
        .assert()
        .code(2);

    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("addon `broken-cue`"), "{stderr}");
    assert!(stderr.contains("template.cue"), "{stderr}");
    assert!(stderr.contains("output.spec.replicas"), "{stderr}");
    assert!(
        stderr.contains("line 5") || stderr.contains("template.cue:5:"),
        "{stderr}"
    );
}

#[test]
fn lint_evaluates_cue_addons_and_init_cue_scaffolds_one_that_lints_clean() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("fresh");
    assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .args(["init", "fresh", "--cue", "--dir"])
        .arg(&target)
        .assert()
        .success();
    for file in [
        "metadata.yaml",
        "parameter.cue",
        "template.cue",
        "README.md",
    ] {
        assert!(target.join(file).is_file(), "{file}");
    }
    assert!(target.join("resources").is_dir());

    for addon in [target.clone(), fixture("cue-params"), fixture("cue-legacy")] {
        let out = assert_cmd::Command::cargo_bin("addonctl")
            .unwrap()
            .args(["lint", "--strict"])
            .arg(&addon)
            .assert();
        let output = out.get_output();
        assert!(
            output.status.success(),
            "{}: {}{}",
            addon.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let rendered = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .args(["render", "-o", "json"])
        .arg(&target)
        .assert()
        .success();
    let list: Value = serde_json::from_slice(&rendered.get_output().stdout).unwrap();
    let app = list["items"].as_array().unwrap().last().unwrap();
    assert_eq!(
        app["spec"]["components"][0]["properties"]["objects"][0]["kind"],
        "Deployment"
    );

    let broken = crate::support::builders::TestAddon::new("lint-broken").file(
        "template.cue",
        "output: {\n\tkind: \"Application\"\n\tspec: x: parameter.missing\n}\n",
    );
    let out = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .arg("lint")
        .arg(broken.path())
        .assert()
        .failure();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("template.cue"), "{stdout}");
}

/// Enables a fixture addon (a directory) on the command line, arguments from a values file (in
/// a process of its own, like [`render_cli`]).
fn enable(sb: &Sandbox, addon: &str, given: &Value) {
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("values.yaml");
    fs_err::write(&values, given.to_string()).unwrap();
    let out = sb
        .cli()
        .arg("enable")
        .arg(fixture(addon))
        .arg("-f")
        .arg(&values)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "enabling `{addon}`: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_fixture_addon_enables_and_the_server_stores_its_application() {
    let sb = Sandbox::with_kubevela().await;
    for (addon, given) in [
        ("cue-topology", json!({"clusters": ["local"]})),
        ("cue-helm", json!({})),
        ("cue-outputs", json!({})),
        ("cue-legacy", json!({})),
        ("cue-fragments", json!({})),
        ("cue-notes", json!({})),
        ("cue-params", json!({"owner": "team-a"})),
        ("cue-version", json!({})),
        ("cue-legacy-params", json!({"greeting": "hi"})),
        ("cue-context", json!({})),
    ] {
        enable(&sb, addon, &given);

        let case = Case {
            addon: addon.to_owned(),
            name: "enable".to_owned(),
            args: args(given),
            upgrade: false,
        };
        let (application, _, _) = render_cli(&case).unwrap();
        let stored = sb
            .get(Kind::APPLICATION, &format!("addon-{addon}"))
            .await
            .unwrap_or_else(|| panic!("no Application of `{addon}`"));
        assert_eq!(stored["spec"], application["spec"], "{addon}");
        assert_eq!(
            stored["metadata"]["labels"]["addons.oam.dev/name"], addon,
            "{addon}"
        );
    }
    let version = sb
        .get(Kind::APPLICATION, "addon-cue-version")
        .await
        .unwrap();
    assert_eq!(
        version["spec"]["components"][0]["properties"]["image"],
        "ghcr.io/example/controller:v2.4.1"
    );
    let helm = sb.get(Kind::COMPONENT_DEFINITION, "helm").await.unwrap();
    let app = sb.get(Kind::APPLICATION, "addon-cue-helm").await.unwrap();
    assert_eq!(helm["metadata"]["ownerReferences"], owned_by(&app));
}

#[tokio::test(flavor = "multi_thread")]
async fn cue_outputs_are_applied_as_auxiliary_objects_of_the_application() {
    let sb = Sandbox::with_kubevela().await;

    enable(&sb, "cue-outputs", &json!({"names": ["one", "two"]}));

    let app = sb
        .get(Kind::APPLICATION, "addon-cue-outputs")
        .await
        .unwrap();
    for (kind, name, key) in [
        (Kind::CONFIG_MAP, "outputs-one", "config-one"),
        (Kind::CONFIG_MAP, "outputs-two", "config-two"),
        (Kind::SERVICE_ACCOUNT, "outputs-runner", "service-account"),
    ] {
        let object = sb
            .get(kind, name)
            .await
            .unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(
            object["metadata"]["labels"]["addons.oam.dev/auxiliary-name"], key,
            "{name}"
        );
        assert_eq!(
            object["metadata"]["ownerReferences"],
            owned_by(&app),
            "{name}"
        );
    }
    let one = sb.get(Kind::CONFIG_MAP, "outputs-one").await.unwrap();
    assert_eq!(one["data"], json!({"index": "0", "addon": "cue-outputs"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn notes_cue_sees_whether_the_enable_is_an_upgrade() {
    let sb = Sandbox::with_kubevela().await;
    let dir = fixture("cue-notes");
    let run = |args: &[&str]| {
        let out = sb
            .cli()
            .arg("enable")
            .arg(&dir)
            .args(args)
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };

    let first = run(&[]);
    let second = run(&["port=8443"]);

    assert!(
        first.ends_with("cue-notes 3.0.1 installed: the dashboard listens on port 3000\n"),
        "{first}"
    );
    assert!(
        second.ends_with("cue-notes 3.0.1 upgraded: the dashboard listens on port 8443\n"),
        "{second}"
    );
}

/// Without KubeVela (the direct engine): the CUE addon's `output` components and `outputs` are
/// applied by addonctl itself, recorded, and an unchanged re-enable writes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_cue_addon_enables_through_the_direct_engine_without_kubevela() {
    let sb = Sandbox::without_kubevela().await;
    assert!(!sb.api().serves(&Kind::APPLICATION.gvk()).await.unwrap());

    enable(
        &sb,
        "cue-outputs",
        &json!({"names": ["a"], "serviceAccount": false}),
    );
    enable(&sb, "cue-context", &json!({"prefix": "direct"}));

    // `output`'s component, evaluated from CUE, applied as an object.
    let marker = sb.get(Kind::CONFIG_MAP, "outputs-marker").await.unwrap();
    assert_eq!(marker["data"], json!({"count": "1"}));
    // An `outputs` object, labelled with its key.
    let aux = sb.get(Kind::CONFIG_MAP, "outputs-a").await.unwrap();
    assert_eq!(aux["data"], json!({"index": "0", "addon": "cue-outputs"}));
    assert_eq!(
        aux["metadata"]["labels"]["addons.oam.dev/auxiliary-name"],
        "config-a"
    );
    assert!(sb
        .get(Kind::SERVICE_ACCOUNT, "outputs-runner")
        .await
        .is_none());
    // `context.metadata` as vela gives it, read by the template.
    let context = sb
        .get(Kind::CONFIG_MAP, "direct-cue-context")
        .await
        .unwrap();
    assert_eq!(
        context["data"]["keys"],
        "name,version,description,icon,url,tags,invisible,system,annotations"
    );
    assert_eq!(context["data"]["maintainer"], "absent");
    assert_eq!(context["data"]["annotation-area"], "a");

    // The auxiliary object is on the control plane's inventory; the component's object was
    // dispatched to the cluster `local` by the direct engine.
    let record = sb.record("cue-outputs").await;
    assert!(!record.application);
    assert!(
        record.inventory.iter().any(|o| o.name == "outputs-a"),
        "{:?}",
        record.inventory
    );
    let local = &record.dispatched["local"].objects;
    assert!(
        local.iter().any(|o| o.object.kind == "ConfigMap"
            && o.object.name == "outputs-marker"
            && o.created),
        "{local:?}"
    );
    assert_eq!(sb.record("cue-context").await.version, "0.3.0");

    // Enabled again unchanged: the CUE renders the same objects and nothing is written.
    let before = sb.resource_versions().await;
    let out = sb
        .cli()
        .arg("enable")
        .arg(fixture("cue-context"))
        .arg("prefix=direct")
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("unchanged"), "{stdout}");
    assert_eq!(sb.resource_versions().await, before);
}
