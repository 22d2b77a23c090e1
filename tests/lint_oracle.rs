//! `lint`'s object rules against the real API server: for each name, label and annotation, lint
//! finds a problem exactly when a server-side dry-run create is refused.

use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, PostParams};
use serde_json::{json, Value};

use crate::support::k8s::Sandbox;

async fn server_accepts<K>(api: &Api<K>, object: &Value) -> bool
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let typed: K = serde_json::from_value(object.clone()).unwrap();
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match api.create(&params, &typed).await {
        Ok(_) => true,
        Err(kube::Error::Api(status)) if status.code == 422 => false,
        Err(e) => panic!("unexpected answer for {object}: {e}"),
    }
}

fn config_map(name: &str, labels: Value, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
    })
}

#[tokio::test]
async fn lint_object_rules_agree_with_the_api_server() {
    let sandbox = Sandbox::without_kubevela().await;
    sandbox
        .api()
        .create_if_missing(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": sandbox.ns()}}),
        )
        .await
        .unwrap();
    let client = sandbox.api().client().clone();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), sandbox.ns());
    let services: Api<Service> = Api::namespaced(client, sandbox.ns());
    let long = |n: usize| "a".repeat(n);
    let mut cases: Vec<(String, Value)> = Vec::new();
    let keys = [
        "app".to_owned(),
        "a/b/c".to_owned(),
        "example.com/x".to_owned(),
        "Example.com/x".to_owned(),
        "-a".to_owned(),
        "a_b.C".to_owned(),
        "x/".to_owned(),
        "/x".to_owned(),
        long(63),
        long(64),
        format!("{}/x", long(254)),
        "my.domain/A_b".to_owned(),
        "a b".to_owned(),
    ];
    for key in &keys {
        cases.push((
            format!("label key {key:?}"),
            config_map("probe", json!({key: "v"}), json!({})),
        ));
        cases.push((
            format!("annotation key {key:?}"),
            config_map("probe", json!({}), json!({key: "v"})),
        ));
    }
    for value in ["", "1.0.0+build", "v1", "-x", "A.b_c", &long(63), &long(64)] {
        cases.push((
            format!("label value {value:?}"),
            config_map("probe", json!({"k": value}), json!({})),
        ));
    }
    for name in ["a.b", "A", "a_b", "a..b", &long(253), &long(254), "x-1"] {
        cases.push((
            format!("ConfigMap name {name:?}"),
            config_map(name, json!({}), json!({})),
        ));
    }
    let mut disagreements = Vec::new();
    for (what, object) in &cases {
        let lint_ok = addonctl::lint::objects::check(object).is_empty();
        if lint_ok != server_accepts(&config_maps, object).await {
            disagreements.push(format!("{what}: lint says {lint_ok}"));
        }
    }
    for name in ["web", "a.b", "Web", &long(63), &long(64)] {
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name},
            "spec": {"ports": [{"port": 80}]},
        });
        let lint_ok = addonctl::lint::objects::check(&service).is_empty();
        if lint_ok != server_accepts(&services, &service).await {
            disagreements.push(format!("Service name {name:?}: lint says {lint_ok}"));
        }
    }
    assert!(
        disagreements.is_empty(),
        "lint and the API server disagree: {disagreements:#?}"
    );
}
