//! How definitions (and the other control-plane objects) are applied, against the real control
//! plane (see `support::k8s`): server-set metadata registry files carry as `null`, API versions
//! the control plane does not serve, taking definitions over, empty annotation maps, and which
//! definition types count as provided.

use addonctl::context::NoopReporter;
use addonctl::plan::EnableRequest;
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{owned_by, Kind, Sandbox};

/// A definition of `kind` named `name`, as a registry file writes it (`kubectl … -o yaml`
/// leaves `creationTimestamp: null`; some files carry `annotations: {}`).
fn definition_yaml(api_version: &str, kind: &str, name: &str) -> String {
    format!(
        "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n  creationTimestamp: null\n  annotations: {{}}\nspec:\n  schematic:\n    cue:\n      template: |\n        parameter: {{}}\n"
    )
}

/// An addon with a few definitions and a ConfigMap output, every object carrying
/// `creationTimestamp: null`.
fn registry_style_addon(name: &str) -> TestAddon {
    TestAddon::new(name)
        .file(
            "definitions/widget.yaml",
            &definition_yaml("core.oam.dev/v1beta1", "ComponentDefinition", "widget"),
        )
        .file(
            "definitions/tuned.yaml",
            &definition_yaml("core.oam.dev/v1beta1", "TraitDefinition", "tuned"),
        )
        .file(
            "definitions/notify.yaml",
            &definition_yaml("core.oam.dev/v1beta1", "WorkflowStepDefinition", "notify"),
        )
        .file(
            "template.yaml",
            "apiVersion: core.oam.dev/v1beta1\nkind: Application\nmetadata:\n  creationTimestamp: null\nspec:\n  components: []\n",
        )
        .file(
            "schemas/ui-widget.yaml",
            "- jsonKey: replicas\n  sort: 1\n",
        )
}

fn enable_request(reference: &str, override_definitions: bool) -> EnableRequest {
    EnableRequest {
        reference: reference.to_owned(),
        override_definitions,
        ..EnableRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn objects_with_null_creation_timestamps_are_not_written_again_by_an_unchanged_enable() {
    let addon = registry_style_addon("stamped");
    let sb = Sandbox::with_kubevela().await.registries(&[&addon]);
    sb.cli().args(["enable", "stamped"]).assert().success();
    let before = sb.resource_versions().await;

    let out = sb.cli().args(["enable", "stamped"]).assert().success();

    assert!(before.len() >= 6, "{before:#?}");
    assert_eq!(sb.resource_versions().await, before);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout.starts_with("addon `stamped` 1.0.0 unchanged"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_enable_reports_updated() {
    let template = "#{ output: application(#{ components: [] }), outputs: #{ cm: #{ apiVersion: \"v1\", kind: \"ConfigMap\", metadata: #{ name: \"sized\", creationTimestamp: () }, data: #{ size: parameter.size } } } }";
    let addon = TestAddon::new("changing")
        .file("parameter.rhai", "#{ size: string(\"small\") }")
        .file("template.rhai", template);
    let sb = Sandbox::with_kubevela().await.registries(&[&addon]);
    sb.cli().args(["enable", "changing"]).assert().success();

    let out = sb
        .cli()
        .args(["enable", "changing", "size=large"])
        .assert()
        .success();

    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout.starts_with("addon `changing` 1.0.0 updated"),
        "{stdout}"
    );
    let config_map = sb.get(Kind::CONFIG_MAP, "sized").await.unwrap();
    assert_eq!(config_map["data"]["size"], "large");
}

#[tokio::test(flavor = "multi_thread")]
async fn definitions_get_no_empty_annotation_maps() {
    let addon = registry_style_addon("plain");
    let sb = Sandbox::with_kubevela().await.registries(&[&addon]);

    let rendered = sb
        .cli()
        .arg("render")
        .arg(addon.path())
        .args(["-o", "json"])
        .assert()
        .success();
    sb.enable("plain", json!({})).await.unwrap();

    let list: Value = serde_json::from_slice(&rendered.get_output().stdout).unwrap();
    let definitions: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"].as_str().unwrap().ends_with("Definition"))
        .collect();
    assert_eq!(definitions.len(), 3, "{list:#}");
    for definition in definitions {
        let metadata = definition["metadata"].as_object().unwrap();
        assert!(!metadata.contains_key("annotations"), "{definition:#}");
        assert!(
            !metadata.contains_key("creationTimestamp"),
            "{definition:#}"
        );
    }
    let stored = sb.get(Kind::COMPONENT_DEFINITION, "widget").await.unwrap();
    let fields = stored["metadata"]["managedFields"].to_string();
    assert!(!fields.contains("f:annotations"), "{fields}");
    assert!(!fields.contains("f:creationTimestamp"), "{fields}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_definition_of_an_api_version_not_served_is_named_with_the_versions_served() {
    let addon = TestAddon::new("aged")
        .file(
            "definitions/old-trait.yaml",
            &definition_yaml("core.oam.dev/v1alpha2", "TraitDefinition", "old-trait"),
        )
        .file(
            "definitions/new-trait.yaml",
            &definition_yaml("core.oam.dev/v1beta1", "TraitDefinition", "new-trait"),
        );
    let sb = Sandbox::with_kubevela().await.registries(&[&addon]);

    let reports = sb.enable("aged", json!({})).await.unwrap();

    let notes = reports[0].notes.join("\n");
    assert_eq!(
        notes,
        "skipped TraitDefinition `old-trait`: written for `core.oam.dev/v1alpha2`, which the control plane does not serve (it serves `TraitDefinition` as `core.oam.dev/v1beta1`); the addon must move it to a served version"
    );
    sb.assert_present(&[(Kind::TRAIT_DEFINITION, "new-trait")])
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn taking_definitions_over_is_complete_in_one_run() {
    let first = registry_style_addon("first");
    let second = TestAddon::new("second")
        .file(
            "definitions/widget.yaml",
            &definition_yaml("core.oam.dev/v1beta1", "ComponentDefinition", "widget"),
        )
        .file(
            "definitions/tuned.yaml",
            &definition_yaml("core.oam.dev/v1beta1", "TraitDefinition", "tuned"),
        )
        .file(
            "definitions/placed.yaml",
            &definition_yaml("core.oam.dev/v1beta1", "PolicyDefinition", "placed"),
        );
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&[&first, &second]);
    sb.enable("first", json!({})).await.unwrap();
    // Written by KubeVela's CLI, owned by nobody.
    sb.apply_as(
        "vela-cli",
        json!({
            "apiVersion": "core.oam.dev/v1beta1", "kind": "PolicyDefinition",
            "metadata": {"name": "placed", "annotations": {"definition.oam.dev/description": "by hand"}},
            "spec": {"schematic": {"cue": {"template": "parameter: {}\n"}}},
        }),
    )
    .await;

    addonctl::apply::enable(&sb.ctx, &enable_request("second", true), &NoopReporter)
        .await
        .unwrap();
    let after_takeover = sb.resource_versions().await;
    addonctl::apply::enable(&sb.ctx, &enable_request("second", false), &NoopReporter)
        .await
        .unwrap();

    assert_eq!(sb.resource_versions().await, after_takeover);
    let app = sb.get(Kind::APPLICATION, "addon-second").await.unwrap();
    for (kind, name) in [
        (Kind::COMPONENT_DEFINITION, "widget"),
        (Kind::TRAIT_DEFINITION, "tuned"),
        (Kind::POLICY_DEFINITION, "placed"),
    ] {
        let taken = sb.get(kind, name).await.unwrap();
        assert_eq!(
            taken["metadata"]["ownerReferences"],
            owned_by(&app),
            "{name}"
        );
    }
}

/// An addon whose Application uses two KubeVela 1.10 built-ins: the component `webservice` and
/// the workflow step `apply-remaining`.
fn builtin_user() -> TestAddon {
    TestAddon::new("builtin-user").file(
        "template.yaml",
        "apiVersion: core.oam.dev/v1beta1\nkind: Application\nspec:\n  components:\n    - name: web\n      type: webservice\n      properties:\n        image: nginx:1.25\n  workflow:\n    steps:\n      - name: rest\n        type: apply-remaining\n",
    )
}

/// KubeVela's own Deployment in the system namespace: KubeVela is running.
async fn run_kubevela(sb: &Sandbox) {
    sb.apply_as("kubectl", Kind::NAMESPACE.object(json!({"name": sb.ns()})))
        .await;
    let mut deployment = Kind::DEPLOYMENT.object(json!({
        "name": "kubevela-vela-core",
        "labels": {"app.kubernetes.io/name": "vela-core"},
    }));
    deployment["spec"] = json!({
        "selector": {"matchLabels": {"app": "vela-core"}},
        "template": {
            "metadata": {"labels": {"app": "vela-core"}},
            "spec": {"containers": [{"name": "kubevela", "image": "oamdev/vela-core:v1.10.3"}]},
        },
    });
    sb.apply_as("helm", deployment).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_kubevela_running_its_1_10_built_ins_count_as_provided() {
    let addon = builtin_user();
    let sb = Sandbox::with_kubevela().await.registries(&[&addon]);

    sb.enable("builtin-user", json!({})).await.unwrap();

    sb.assert_present(&[(Kind::APPLICATION, "addon-builtin-user")])
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_kubevela_running_the_definitions_the_control_plane_has_decide() {
    let addon = builtin_user();
    let sb = Sandbox::with_kubevela().await.registries(&[&addon]);
    run_kubevela(&sb).await;

    let error = sb
        .enable("builtin-user", json!({}))
        .await
        .unwrap_err()
        .to_string();

    assert!(
        error.contains("`builtin-user` uses ComponentDefinition `webservice`"),
        "{error}"
    );
    assert!(
        error.contains("`builtin-user` uses WorkflowStepDefinition `apply-remaining`"),
        "{error}"
    );
    assert!(error.contains("--skip-api-check"), "{error}");
    sb.assert_absent(&[(Kind::APPLICATION, "addon-builtin-user")])
        .await;

    for (kind, name) in [
        (Kind::COMPONENT_DEFINITION, "webservice"),
        (Kind::WORKFLOW_STEP_DEFINITION, "apply-remaining"),
    ] {
        sb.apply_as(
            "kubevela",
            json!({
                "apiVersion": "core.oam.dev/v1beta1", "kind": kind.1,
                "metadata": {"name": name},
                "spec": {"schematic": {"cue": {"template": "parameter: {}\n"}}},
            }),
        )
        .await;
    }
    sb.enable("builtin-user", json!({})).await.unwrap();
    sb.assert_present(&[(Kind::APPLICATION, "addon-builtin-user")])
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn skip_api_check_enables_with_what_is_missing_as_notes() {
    let addon = TestAddon::new("env-needing").file(
        "template.yaml",
        "apiVersion: core.oam.dev/v1beta1\nkind: Application\nspec:\n  components:\n    - name: db\n      type: cloud-database\n",
    );
    let sb = Sandbox::with_kubevela().await.registries(&[&addon]);

    sb.cli().args(["enable", "env-needing"]).assert().code(2);
    let out = sb
        .cli()
        .args(["enable", "env-needing", "--skip-api-check"])
        .assert()
        .success();

    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("`env-needing` uses ComponentDefinition `cloud-database`")
            && stderr.contains("enabling anyway: `--skip-api-check`"),
        "{stderr}"
    );
    sb.assert_present(&[(Kind::APPLICATION, "addon-env-needing")])
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unchanged_re_enable_with_the_direct_engine_says_unchanged() {
    let addon = TestAddon::new("direct-stamped").file(
        "resources/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: direct-stamped\n  creationTimestamp: null\ndata:\n  a: \"1\"\n",
    );
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    let report = |args: &[&str]| -> Value {
        let out = sb
            .cli()
            .args(["enable", "direct-stamped", "-o", "json"])
            .args(args)
            .assert()
            .success();
        serde_json::from_slice(&out.get_output().stdout).unwrap()
    };

    let first = report(&[]);
    let second = report(&[]);
    let text = sb
        .cli()
        .args(["enable", "direct-stamped"])
        .assert()
        .success();

    assert!(
        first[0]["clusters"][0]["changed"].as_u64().unwrap() >= 1,
        "{first:#}"
    );
    assert_eq!(second[0]["clusters"][0]["changed"], 0, "{second:#}");
    assert_eq!(second[0]["changed"], json!([]), "{second:#}");
    let stdout = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert!(
        stdout.starts_with("addon `direct-stamped` 1.0.0 unchanged"),
        "{stdout}"
    );
}

/// Two addons of one plan (an addon and the dependency it installs) that bring the same
/// definition: refused up front, naming both addons and the definition, unless overridden.
#[tokio::test(flavor = "multi_thread")]
async fn a_definition_two_addons_of_one_plan_bring_is_refused_naming_both() {
    let fluxy = TestAddon::new("fluxy").file(
        "definitions/helm.yaml",
        &definition_yaml(
            "core.oam.dev/v1beta1",
            "ComponentDefinition",
            "helm-release",
        ),
    );
    let example = TestAddon::new("example-user")
        .file(
            "metadata.yaml",
            "name: example-user\nversion: 1.0.0\ndependencies:\n  - name: fluxy\n",
        )
        .file(
            "definitions/helm.yaml",
            &definition_yaml(
                "core.oam.dev/v1beta1",
                "ComponentDefinition",
                "helm-release",
            ),
        );
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&[&fluxy, &example]);

    let out = sb.cli().args(["enable", "example-user"]).assert().code(2);

    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    for needle in [
        "helm-release",
        "addon `example-user`",
        "addon `fluxy`",
        "--override-definitions",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    // Refused before anything was applied.
    assert!(sb.get(Kind::APPLICATION, "addon-fluxy").await.is_none());
    assert!(sb
        .get(Kind::COMPONENT_DEFINITION, "helm-release")
        .await
        .is_none());

    // Overridden: the addon asked for takes the definition.
    sb.cli()
        .args(["enable", "example-user", "--override-definitions"])
        .assert()
        .success();
    let definition = sb
        .get(Kind::COMPONENT_DEFINITION, "helm-release")
        .await
        .unwrap();
    assert_eq!(
        definition["metadata"]["ownerReferences"][0]["name"],
        "addon-example-user"
    );
}
