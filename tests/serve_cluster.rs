//! `addonctl serve --in-cluster` against the real control plane: every request carries a bearer
//! token the API server reviews, every read and write is made as its owner (impersonation), a
//! system addon is seen only by subjects allowed to create `addons.addonctl.io` in the system
//! namespace — through a group binding here — and a plan made through one server is applied
//! through another, once.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{Kind, Sandbox};
use crate::support::serve::{serve_in_cluster, token_of, Server};

/// `method` of `path` on `server`, with `token` as the bearer (none: without one).
async fn call(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    server.with_token(token).call(method, path, body).await
}

fn names(list: &Value) -> Vec<String> {
    list["addons"]
        .as_array()
        .unwrap_or_else(|| panic!("a catalogue: {list}"))
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn in_a_cluster_each_caller_acts_as_themselves_and_sees_system_addons_only_with_the_right_through_a_group(
) {
    let open = TestAddon::new("serve-open")
        .file(
            "metadata.yaml",
            "name: serve-open\nversion: 1.0.0\ndescription: open to all\ntags: [demo]\n",
        )
        .file(
            "resources/config.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: serve-open-config\ndata:\n  a: b\n",
        );
    let system = TestAddon::new("serve-core")
        .file(
            "metadata.yaml",
            "name: serve-core\nversion: 1.0.0\ndescription: platform only\ntags: [system]\n",
        )
        .file(
            "resources/config.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: serve-core-config\ndata:\n  a: b\n",
        );
    let sandbox = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&open, &system]);
    let ns = sandbox.ns().to_owned();
    sandbox
        .api()
        .create_if_missing(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await
        .unwrap();
    let elsewhere = sandbox.other_namespace("callers").await;
    let outside = sandbox.other_namespace("outside").await;
    // The ServiceAccounts of two namespaces may read and write what addonctl keeps in the
    // system namespace (group bindings); only the system namespace's own — again through their
    // group — may declare addons; those of a third namespace may do nothing.
    for (name, rules, groups) in [
        (
            "serve-state",
            json!([{"apiGroups": [""], "resources": ["secrets", "configmaps", "namespaces"], "verbs": ["*"]},
                   {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
                   {"apiGroups": ["authorization.k8s.io"], "resources": ["*"], "verbs": ["create"]}]),
            vec![
                format!("system:serviceaccounts:{elsewhere}"),
                format!("system:serviceaccounts:{ns}"),
            ],
        ),
        (
            "serve-declare",
            json!([{"apiGroups": ["addonctl.io"], "resources": ["addons"], "verbs": ["create"]}]),
            vec![format!("system:serviceaccounts:{ns}")],
        ),
    ] {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|g| json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": g}))
            .collect();
        sandbox
            .api()
            .apply(
                &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                        "metadata": {"name": name, "namespace": ns}, "rules": rules}),
                &ns,
            )
            .await
            .unwrap();
        sandbox
            .api()
            .apply(
                &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                        "metadata": {"name": name, "namespace": ns},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                        "subjects": subjects}),
                &ns,
            )
            .await
            .unwrap();
    }
    // The manager may do everything (cluster-admin, through their namespace's group).
    let admin_binding = format!("{ns}-serve-manager");
    sandbox.clean_up_on(
        sandbox.cluster,
        Kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        None,
        &admin_binding,
    );
    sandbox
        .api()
        .apply(
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": admin_binding},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                    "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                                  "name": format!("system:serviceaccounts:{ns}")}]}),
            &ns,
        )
        .await
        .unwrap();
    let reader = token_of(&sandbox, &elsewhere, "reader").await;
    let manager = token_of(&sandbox, &ns, "manager").await;
    let nobody = token_of(&sandbox, &outside, "nobody").await;
    let a = serve_in_cluster(sandbox.command());
    let b = serve_in_cluster(sandbox.command());

    // No token, or one the API server does not accept: refused before anything is read.
    let (status, body) = call(&a, reqwest::Method::GET, "/api/v1/addons", None, None).await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = call(
        &a,
        reqwest::Method::GET,
        "/api/v1/addons",
        Some("not-a-token"),
        None,
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["code"], "unauthenticated");

    // The reader sees the open addon only; the system addon does not exist for them.
    let (status, list) = call(
        &a,
        reqwest::Method::GET,
        "/api/v1/addons",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(status, 200, "{list}");
    let seen = names(&list);
    assert!(seen.contains(&"serve-open".to_owned()), "{seen:?}");
    assert!(!seen.contains(&"serve-core".to_owned()), "{seen:?}");
    for path in ["serve-core", "serve-core/status", "serve-core/history"] {
        let (status, body) = call(
            &a,
            reqwest::Method::GET,
            &format!("/api/v1/addons/{path}"),
            Some(&reader),
            None,
        )
        .await;
        assert_eq!(status, 404, "{path}: {body}");
    }
    let (status, body) = call(
        &a,
        reqwest::Method::POST,
        "/api/v1/plans",
        Some(&reader),
        Some(json!({"action": "enable", "addon": "serve-core"})),
    )
    .await;
    assert_eq!(status, 404, "{body}");

    // The manager, allowed through their group, sees it.
    let (status, list) = call(
        &a,
        reqwest::Method::GET,
        "/api/v1/addons",
        Some(&manager),
        None,
    )
    .await;
    assert_eq!(status, 200, "{list}");
    assert!(names(&list).contains(&"serve-core".to_owned()), "{list}");
    let (status, detail) = call(
        &a,
        reqwest::Method::GET,
        "/api/v1/addons/serve-core",
        Some(&manager),
        None,
    )
    .await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["system"], true);

    // Someone with no rights at all: the catalogue of the registries (phases unknown, and
    // why), and a plan refused by the API server as them — nothing written.
    let (status, list) = call(
        &a,
        reqwest::Method::GET,
        "/api/v1/addons",
        Some(&nobody),
        None,
    )
    .await;
    assert_eq!(status, 200, "{list}");
    assert!(
        list["warnings"].to_string().contains("cannot be read"),
        "{list}"
    );
    assert!(names(&list).contains(&"serve-open".to_owned()), "{list}");
    let (status, body) = call(
        &a,
        reqwest::Method::POST,
        "/api/v1/plans",
        Some(&nobody),
        Some(json!({"action": "enable", "addon": "serve-open"})),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["code"], "denied", "{body}");
    assert!(
        body["message"]
            .to_string()
            .contains(&format!("system:serviceaccount:{outside}:nobody")),
        "the refusal names the caller, not the server: {body}"
    );

    // A plan made through one server is applied through the other, and only once.
    let (status, plan) = call(
        &a,
        reqwest::Method::POST,
        "/api/v1/plans",
        Some(&manager),
        Some(json!({"action": "enable", "addon": "serve-core"})),
    )
    .await;
    assert_eq!(status, 201, "{plan}");
    let id = plan["planId"].as_str().unwrap().to_owned();
    // Another caller does not see it.
    let (status, _) = call(
        &b,
        reqwest::Method::GET,
        &format!("/api/v1/plans/{id}"),
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(status, 404);
    let mut events = a.with_token(Some(&manager)).events().await;
    let (status, body) = call(
        &b,
        reqwest::Method::POST,
        &format!("/api/v1/plans/{id}/apply"),
        Some(&manager),
        None,
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let (status, body) = call(
        &a,
        reqwest::Method::POST,
        &format!("/api/v1/plans/{id}/apply"),
        Some(&manager),
        None,
    )
    .await;
    assert_eq!(status, 409, "{body}");
    b.with_token(Some(&manager)).until_applied(&id).await;
    // The browser following the apply through the other server hears how it went: the
    // applying server relays its progress and outcome.
    events
        .until(Duration::from_secs(60), "a relayed progress event", |e| {
            e["type"] == "progress" && e["planId"] == id.as_str()
        })
        .await;
    let applied = events
        .until(
            Duration::from_secs(60),
            "the relayed `applied` event",
            |e| e["type"] == "applied" && e["planId"] == id.as_str(),
        )
        .await;
    assert_eq!(applied["outcome"], "succeeded", "{applied}");
    // Once: not also from the applying server's own stream to this one.
    let copies = events
        .seen
        .iter()
        .filter(|e| e["type"] == "applied" && e["planId"] == id.as_str())
        .count();
    assert_eq!(copies, 1, "{:?}", events.seen);
    // Made as the manager: the record names the addon, and its ConfigMap exists.
    assert!(
        sandbox
            .get(Kind::SECRET, "addon-record-serve-core")
            .await
            .is_some(),
        "the record of the addon applied"
    );
}
