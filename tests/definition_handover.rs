//! Objects two addons share, on the real control plane with kube-controller-manager's garbage
//! collector running: an object that outlives the addon that last applied it names the addon
//! that keeps it, and taking a definition over is stable across unchanged re-enables.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::builders::TestAddon;
use crate::support::k8s::{Kind, Sandbox};

/// How long the garbage collector is given to delete what it would delete.
const GARBAGE_COLLECTION: Duration = Duration::from_secs(25);

/// A definition of `kind` named `name`, as a registry file writes it.
fn definition_yaml(kind: &str, name: &str, template: &str) -> String {
    format!(
        "apiVersion: core.oam.dev/v1beta1\nkind: {kind}\nmetadata:\n  name: {name}\nspec:\n  schematic:\n    cue:\n      template: |\n        {template}\n"
    )
}

/// `fluxy` brings ComponentDefinition `shared-helm`; `example-keeper` depends on `fluxy` and
/// brings its own `shared-helm` too (as KubeVela's `example` and `fluxcd` bring `helm`), plus a
/// ConfigMap output both addons render, labelled with the addon's name and version (as
/// KubeVela labels the outputs of `template.cue`).
fn fluxy_and_example() -> (TestAddon, TestAddon) {
    let output = |addon: &str| {
        format!(
            "#{{ output: application(#{{ components: [] }}), outputs: #{{ settings: #{{ apiVersion: \"v1\", kind: \"ConfigMap\", metadata: #{{ name: \"shared-settings\", labels: #{{ \"addons.oam.dev/name\": \"{addon}\", \"addons.oam.dev/version\": \"1.0.0\" }} }}, data: #{{ by: \"{addon}\" }} }} }} }}"
        )
    };
    let fluxy = TestAddon::new("fluxy")
        .file(
            "definitions/helm.yaml",
            &definition_yaml("ComponentDefinition", "shared-helm", "parameter: {}"),
        )
        .file("template.rhai", &output("fluxy"));
    let example = TestAddon::new("example-keeper")
        .file(
            "metadata.yaml",
            "name: example-keeper\nversion: 1.0.0\ndependencies:\n  - name: fluxy\n",
        )
        .file(
            "definitions/helm.yaml",
            &definition_yaml(
                "ComponentDefinition",
                "shared-helm",
                "parameter: {chart: *\"x\" | string}",
            ),
        )
        .file("template.rhai", &output("example-keeper"));
    (fluxy, example)
}

/// Whether `object`'s owner references, labels or annotations name `addon` (its Application,
/// its record, or the label `addons.oam.dev/name`).
fn names_addon(object: &Value, addon: &str) -> bool {
    let metadata = &object["metadata"];
    let owners = metadata["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|o| {
            o["name"] == format!("addon-{addon}") || o["name"] == format!("addon-record-{addon}")
        });
    let labelled = ["labels", "annotations"].iter().any(|key| {
        metadata[*key]
            .as_object()
            .into_iter()
            .flatten()
            .any(|(k, v)| k.starts_with("addons.oam.dev/") && k.ends_with("name") && v == addon)
    });
    owners || labelled
}

/// Polls for the garbage collector's time: panics as soon as one of `objects` is gone.
async fn assert_survive_garbage_collection(sb: &Sandbox, objects: &[(Kind, &str)]) {
    let started = Instant::now();
    while started.elapsed() < GARBAGE_COLLECTION {
        for (kind, name) in objects {
            assert!(
                sb.get(*kind, name).await.is_some(),
                "{} `{name}` was deleted {:?} after the disable",
                kind.1,
                started.elapsed()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_definition_kept_for_another_addon_survives_the_garbage_collector_and_names_it() {
    let (fluxy, example) = fluxy_and_example();
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&[&fluxy, &example]);
    sb.cli()
        .args(["enable", "example-keeper", "--override-definitions"])
        .assert()
        .success();
    let taken = sb
        .get(Kind::COMPONENT_DEFINITION, "shared-helm")
        .await
        .unwrap();
    assert!(names_addon(&taken, "example-keeper"), "{taken:#}");

    let out = sb
        .cli()
        .args(["disable", "example-keeper"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("fluxy"), "{stdout}");
    sb.assert_absent(&[(Kind::APPLICATION, "addon-example-keeper")])
        .await;

    assert_survive_garbage_collection(
        &sb,
        &[
            (Kind::COMPONENT_DEFINITION, "shared-helm"),
            (Kind::CONFIG_MAP, "shared-settings"),
        ],
    )
    .await;
    let fluxy_app = sb.get(Kind::APPLICATION, "addon-fluxy").await.unwrap();
    for (kind, name) in [
        (Kind::COMPONENT_DEFINITION, "shared-helm"),
        (Kind::CONFIG_MAP, "shared-settings"),
    ] {
        let kept = sb.get(kind, name).await.unwrap();
        assert!(!names_addon(&kept, "example-keeper"), "{kept:#}");
        let owners = kept["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(owners.len(), 1, "{kept:#}");
        assert_eq!(owners[0]["uid"], fluxy_app["metadata"]["uid"], "{kept:#}");
        assert_eq!(owners[0]["controller"], true, "{kept:#}");
    }
    let settings = sb.get(Kind::CONFIG_MAP, "shared-settings").await.unwrap();
    assert_eq!(
        settings["metadata"]["labels"]["addons.oam.dev/name"], "fluxy",
        "{settings:#}"
    );

    // Disabling the keeper takes them: nothing is left behind.
    sb.cli().args(["disable", "fluxy"]).assert().success();
    sb.assert_absent(&[
        (Kind::COMPONENT_DEFINITION, "shared-helm"),
        (Kind::CONFIG_MAP, "shared-settings"),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unchanged_re_enable_after_taking_a_definition_over_writes_nothing() {
    unchanged_after_takeover(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unchanged_re_enable_after_taking_a_definition_over_writes_nothing_direct() {
    unchanged_after_takeover(true).await;
}

async fn unchanged_after_takeover(direct: bool) {
    let ingress = |kind: &str| definition_yaml(kind, "plain-ingress", "parameter: {}");
    let builtin = TestAddon::new("ingress-builtin")
        .file("definitions/ingress.yaml", &ingress("TraitDefinition"))
        .file(
            "definitions/other.yaml",
            &definition_yaml("TraitDefinition", "builtin-only", "parameter: {}"),
        );
    let assets = TestAddon::new("ingress-assets")
        .file(
            "definitions/ingress.yaml",
            &definition_yaml(
                "TraitDefinition",
                "plain-ingress",
                "parameter: {domain: *\"example.com\" | string}",
            ),
        )
        .file(
            "template.rhai",
            "#{ output: application(#{ components: [] }), outputs: #{ dash: #{ apiVersion: \"v1\", kind: \"ConfigMap\", metadata: #{ name: \"assets-dash\" }, data: #{ a: \"1\" } } } }",
        );
    let sb = Sandbox::with_kubevela().await;
    let sb = if direct { sb.direct() } else { sb };
    let sb = sb.registries(&[&builtin, &assets]);
    sb.cli()
        .args(["enable", "ingress-builtin"])
        .assert()
        .success();
    sb.cli().args(["enable", "ingress-assets"]).assert().code(2);
    sb.cli()
        .args(["enable", "ingress-assets", "--override-definitions"])
        .assert()
        .success();
    let after_takeover = sb.resource_versions().await;

    for args in [
        &["enable", "ingress-assets", "--override-definitions"][..],
        &["enable", "ingress-assets"][..],
        &["enable", "ingress-assets", "--override-definitions"][..],
    ] {
        let out = sb.cli().args(args).assert().success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert_eq!(
            sb.resource_versions().await,
            after_takeover,
            "{args:?}: {stdout}"
        );
        assert!(
            stdout.starts_with("addon `ingress-assets` 1.0.0 unchanged"),
            "{args:?}: {stdout}"
        );
    }
    let owner = if direct {
        sb.get(Kind::SECRET, "addon-record-ingress-assets").await
    } else {
        sb.get(Kind::APPLICATION, "addon-ingress-assets").await
    };
    let app = owner.unwrap();
    let taken = sb
        .get(Kind::TRAIT_DEFINITION, "plain-ingress")
        .await
        .unwrap();
    assert_eq!(
        taken["metadata"]["ownerReferences"][0]["uid"],
        app["metadata"]["uid"]
    );
}
