//! Rendering fixture addons: normalisation, ordering, secrets, snapshots.

use addonctl::loader;
use addonctl::render::{output, RenderOptions, Rendered, Renderer};
use addonctl::source::local::LocalReader;
use addonctl::source::AddonRef;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::support::fixture_registry;

async fn render(name: &str, args: Value) -> Rendered {
    let reader = LocalReader::new(fixture_registry()).unwrap();
    let package = loader::load(&reader, &AddonRef::latest(name))
        .await
        .unwrap();
    let options = RenderOptions {
        args: args.as_object().cloned().unwrap_or_default(),
        ..RenderOptions::default()
    };
    Renderer::new().render(&package, &options).unwrap()
}

fn kinds(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn full_fixture_renders_every_file_kind_in_apply_order() {
    let rendered = render("full", json!({"token": "s3cr3t-token", "replicas": 3})).await;
    assert_eq!(
        kinds(&rendered.objects()),
        [
            "Namespace/vela-system",
            "WorkflowStepDefinition/full-notify",
            "TraitDefinition/full-scaler",
            "ComponentDefinition/full-widget",
            "ConfigMap/full-widget",
            "ConfigMap/config-template-full-endpoint",
            "ConfigMap/full-view",
            "ConfigMap/full-settings",
            "Secret/full-token",
            "Secret/addon-secret-full",
            "Application/addon-full",
        ]
    );
    insta::assert_yaml_snapshot!("full_masked", rendered.masked_objects());
    insta::assert_snapshot!("full_notes", rendered.masked_notes().unwrap());
}

#[tokio::test]
async fn application_components_follow_kubevela_order_and_labels() {
    let rendered = render("full", json!({})).await;
    let app = &rendered.application;
    assert_eq!(app["metadata"]["name"], "addon-full");
    assert_eq!(app["metadata"]["namespace"], "vela-system");
    assert_eq!(
        app["metadata"]["labels"],
        json!({"addons.oam.dev/name": "full", "addons.oam.dev/version": "v1.2.0", "addons.oam.dev/registry": "local"})
    );
    let names: Vec<_> = app["spec"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // template's, then needNamespace (not the system namespace), then YAML resources, then scripts.
    assert_eq!(
        names,
        [
            "full-controller",
            "full-system-namespace",
            "full-resources",
            "full-service"
        ]
    );
    let resources = &app["spec"]["components"][2];
    assert_eq!(resources["type"], "k8s-objects");
    let objects: Vec<_> = resources["properties"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].clone())
        .collect();
    assert_eq!(
        objects,
        [
            json!("CustomResourceDefinition"),
            json!("ServiceAccount"),
            json!("ClusterRole")
        ]
    );
    // The scripted template owns its topology: no policy is appended.
    let policies = app["spec"]["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 1);
    assert_eq!(
        policies[0]["properties"],
        json!({"clusterLabelSelector": {}})
    );
    assert_eq!(
        app["metadata"]["annotations"]["addon.oam.dev/traitDefinitions"],
        "full-scaler"
    );
    assert_eq!(
        app["metadata"]["annotations"]["addon.oam.dev/componentDefinitions"],
        "full-widget"
    );
    assert_eq!(
        app["metadata"]["annotations"]["addon.oam.dev/workflowStepDefinitions"],
        "full-notify"
    );
    assert_eq!(
        app["metadata"]["annotations"]["addon.oam.dev/policyDefinitions"],
        ""
    );
    // Definitions are forced into the system namespace; outputs carry their key.
    assert!(rendered
        .definitions
        .iter()
        .all(|d| d["metadata"]["namespace"] == "vela-system"));
    assert_eq!(
        rendered.outputs[0].1["metadata"]["labels"]["addons.oam.dev/auxiliary-name"],
        "full-settings"
    );
    assert!(rendered.args_secret.is_none(), "no arguments, no Secret");
}

#[tokio::test]
async fn secrets_are_masked_everywhere_but_kept_in_the_unmasked_objects() {
    let rendered = render("full", json!({"token": "s3cr3t-token"})).await;
    let masked = output::format_objects(&rendered.masked_objects(), output::Format::Yaml).unwrap();
    assert!(!masked.contains("s3cr3t-token"), "{masked}");
    assert!(!rendered.masked_notes().unwrap().contains("s3cr3t-token"));
    // A Secret inside a component, and the base64 form of a secret parameter, are masked too.
    let mut addon = crate::support::builders::TestAddon::new("nested")
        .file("parameter.rhai", "#{ token: string().secret().usage(\"t\") }")
        .file(
            "resources/secret.rhai",
            "k8s_objects(\"s\", [#{ apiVersion: \"v1\", kind: \"Secret\", metadata: #{ name: \"s\" }, \
             data: #{ token: base64_encode(parameter.token) } }, #{ apiVersion: \"v1\", kind: \"ConfigMap\", \
             metadata: #{ name: \"c\" }, data: #{ copy: base64_encode(parameter.token), get: `${get(parameter, \"token\", \"\")}` } }])",
        );
    addon = addon.file("template.rhai", "#{ output: application() }");
    let reader = LocalReader::new(addon.path()).unwrap();
    let package = loader::load(&reader, &AddonRef::latest("nested"))
        .await
        .unwrap();
    let options = RenderOptions {
        args: json!({"token": "hunter22"}).as_object().cloned().unwrap(),
        ..RenderOptions::default()
    };
    let nested = Renderer::new().render(&package, &options).unwrap();
    let masked = serde_json::to_string(&nested.masked_objects()).unwrap();
    let encoded = base64::engine::general_purpose::STANDARD.encode("hunter22");
    assert!(
        !masked.contains("hunter22") && !masked.contains(&encoded),
        "{masked}"
    );
    assert!(serde_json::to_string(&nested.objects())
        .unwrap()
        .contains(&encoded));

    let plain = serde_json::to_string(&rendered.objects()).unwrap();
    assert!(plain.contains("s3cr3t-token"));
    let secret = rendered.args_secret.as_ref().unwrap();
    let encoded = secret["data"]["addonParameterDataKey"].as_str().unwrap();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    let args: Map<String, Value> = serde_json::from_slice(&decoded).unwrap();
    assert_eq!(args["token"], "s3cr3t-token");
    assert_eq!(
        args.len(),
        1,
        "only given arguments are stored, not defaults"
    );
}

#[tokio::test]
async fn legacy_yaml_template_is_normalised_like_kubevela() {
    let rendered = render("legacy", json!({})).await;
    insta::assert_yaml_snapshot!("legacy_application", rendered.application);
    let app = &rendered.application;
    assert_eq!(app["metadata"]["labels"]["team"], "platform");
    assert_eq!(app["metadata"]["namespace"], "vela-system");
    assert_eq!(
        app["spec"]["policies"][0]["name"],
        "deploy-addon-to-all-clusters"
    );

    let rendered = render("legacy", json!({"clusters": ["east", "west"]})).await;
    let policy = &rendered.application["spec"]["policies"][0];
    assert_eq!(policy["name"], "deploy-addon-to-specified-clusters");
    assert_eq!(
        policy["properties"]["clusters"],
        json!(["east", "west", "local"])
    );
}

#[tokio::test]
async fn minimal_addon_renders_an_empty_application() {
    let rendered = render("minimal", json!({})).await;
    assert_eq!(rendered.application["spec"], json!({"components": []}));
    assert_eq!(
        kinds(&rendered.objects()),
        ["Namespace/vela-system", "Application/addon-minimal"]
    );
    let json_list = output::format_objects(&rendered.objects(), output::Format::Json).unwrap();
    let list: Value = serde_json::from_str(&json_list).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn rendering_is_deterministic_and_cached() {
    let reader = LocalReader::new(fixture_registry()).unwrap();
    let package = loader::load(&reader, &AddonRef::latest("full"))
        .await
        .unwrap();
    let renderer = Renderer::new();
    let a = renderer
        .render(&package, &RenderOptions::default())
        .unwrap();
    let b = renderer
        .render(&package, &RenderOptions::default())
        .unwrap();
    assert_eq!(a.objects(), b.objects());
}

#[test]
fn the_parameter_schema_cache_tells_apart_the_contexts_parameter_rhai_reads() {
    let files = vec![
        (
            "metadata.yaml".to_owned(),
            b"name: placed\nversion: 1.0.0\n".to_vec(),
        ),
        (
            "parameter.rhai".to_owned(),
            b"if context.clusters.len() > 0 { #{ region: string(\"eu\") } } else { #{ zone: string(\"a\") } }\n"
                .to_vec(),
        ),
    ];
    let package = loader::from_files("test", "placed", files).unwrap();
    let renderer = Renderer::new();
    let nowhere = renderer.parameter_schema(&package).unwrap();
    assert_eq!(nowhere.known(), ["zone", "clusters"]);
    let somewhere = RenderOptions {
        clusters: Some(vec!["edge-1".to_owned()]),
        ..RenderOptions::default()
    };
    let placed = renderer.parameter_schema_in(&package, &somewhere).unwrap();
    assert_eq!(placed.known(), ["region", "clusters"]);

    // The same file text in the other context: the render sees the schema of its own context.
    let mut args = Map::new();
    args.insert("region".to_owned(), json!("us"));
    let rendered = renderer
        .render(&package, &RenderOptions { args, ..somewhere })
        .unwrap();
    assert_eq!(rendered.values["region"], "us");
}

#[tokio::test]
async fn another_system_namespace_is_used_everywhere() {
    let reader = LocalReader::new(fixture_registry()).unwrap();
    let package = loader::load(&reader, &AddonRef::latest("full"))
        .await
        .unwrap();
    let options = RenderOptions {
        namespace: "platform".into(),
        ..RenderOptions::default()
    };
    let rendered = Renderer::new().render(&package, &options).unwrap();
    assert_eq!(rendered.application["metadata"]["namespace"], "platform");
    assert!(rendered
        .definitions
        .iter()
        .all(|d| d["metadata"]["namespace"] == "platform"));
    assert_eq!(rendered.objects()[0]["metadata"]["name"], "platform");
}
