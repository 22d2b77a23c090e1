//! The controller's trust model on the real API servers: an `Addon` never makes the controller
//! do what its author could not do themselves. The author is a user whose only rights are on
//! `addons.addonctl.io` in the system namespace (the environment's token user without
//! bindings, given a Role here); the shipped admission policy keeps the author annotation true.

use serde_json::{json, Value};

use crate::controller::{
    addon, condition, ensure_namespace, fixture, in_process, install_crd, wait_for, ADDON,
    ADMIN_AUTHOR,
};
use crate::declarative::wait_event;
use crate::support::builders::TestAddon;
use crate::support::k8s::{get_on, Env, Kind, Sandbox};

const CLUSTER_ROLE_BINDING: Kind = Kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding");
const ROLE: Kind = Kind("rbac.authorization.k8s.io/v1", "Role");
const ROLE_BINDING: Kind = Kind("rbac.authorization.k8s.io/v1", "RoleBinding");

/// The environment's user without bindings, as an `Addon`'s author annotations name them.
fn user_annotations() -> Value {
    json!({"addonctl.io/author": Env::get().control_plane().user_name, "addonctl.io/author-groups": "system:authenticated"})
}

/// Lets the user without bindings write `Addon`s in the system namespace, and nothing else.
async fn grant_addon_rights(sb: &Sandbox) {
    ensure_namespace(sb).await;
    let user = Env::get().control_plane().user_name.clone();
    sb.api()
        .apply(
            &json!({"apiVersion": ROLE.0, "kind": ROLE.1,
                    "metadata": {"name": "addon-writer", "namespace": sb.ns()},
                    "rules": [{"apiGroups": ["addonctl.io"], "resources": ["addons"],
                               "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]}),
            sb.ns(),
        )
        .await
        .unwrap();
    sb.api()
        .apply(
            &json!({"apiVersion": ROLE_BINDING.0, "kind": ROLE_BINDING.1,
                    "metadata": {"name": "addon-writer", "namespace": sb.ns()},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "addon-writer"},
                    "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]}),
            sb.ns(),
        )
        .await
        .unwrap();
}

/// Writes the `Addon` `name` as the user without bindings; the API server's answer.
async fn user_writes(
    sb: &Sandbox,
    name: &str,
    annotations: Value,
    spec: Value,
) -> Result<(), String> {
    let user = sb.user_context().await;
    let object = json!({
        "apiVersion": ADDON.0, "kind": ADDON.1,
        "metadata": {"name": name, "namespace": sb.ns(), "annotations": annotations},
        "spec": spec,
    });
    // The Role may take a moment to reach the authorizer's cache.
    let mut last = String::new();
    for _ in 0..20 {
        match user.cluster.apply(&object, sb.ns()).await {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
        if !last.contains("cannot patch resource") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    Err(last)
}

/// Writes the `Addon` `name` as the administrator (its author).
async fn admin_writes(sb: &Sandbox, name: &str, spec: Value) {
    let object = json!({
        "apiVersion": ADDON.0, "kind": ADDON.1,
        "metadata": {"name": name, "namespace": sb.ns(), "annotations": ADMIN_AUTHOR.annotations()},
        "spec": spec,
    });
    sb.api().apply(&object, sb.ns()).await.unwrap();
}

/// The `Addon`'s last error once it has one that contains `needle`.
async fn error_with(sb: &Sandbox, name: &str, needle: &str) -> Value {
    wait_for(&format!("`{name}` refused with `{needle}`"), || async {
        let addon = addon(sb, name).await?;
        addon["status"]["lastError"]
            .as_str()
            .is_some_and(|e| e.contains(needle))
            .then_some(addon)
    })
    .await
}

/// A ConfigMap and a binding of `cluster-admin` (to a user nobody is), on the control plane.
fn granting(name: &str) -> TestAddon {
    let template = format!(
        r#"let ns = context.namespace;
let objects = [
    #{{ apiVersion: "v1", kind: "ConfigMap", metadata: #{{ name: "{name}-settings", namespace: ns }}, data: #{{ a: "1" }} }},
    #{{ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: #{{ name: ns + "-grant" }},
       roleRef: #{{ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" }},
       subjects: [#{{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: ns + "-nobody" }}] }},
];
#{{ output: application(#{{ components: [k8s_objects("{name}", objects)],
    policies: [topology("where", parameter.clusters)] }}) }}
"#
    );
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture {name}\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    clusters: list(string()).optional(),\n}\n",
        )
        .file("template.rhai", &template)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_addon_never_makes_the_controller_do_what_its_author_could_not() {
    let addon_dir = granting("grant");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon_dir]);
    install_crd(&sb).await;
    grant_addon_rights(&sb).await;
    let binding = format!("{}-grant", sb.ns());
    sb.clean_up_on(
        Env::get().control_plane(),
        CLUSTER_ROLE_BINDING,
        None,
        &binding,
    );
    let (controller, stop, admin, address) =
        in_process(&sb, &[&addon_dir], addonctl::controller::Backoff::default()).await;
    let spec = json!({"clusters": ["local"]});

    // Claiming to be someone else, or allowing what a review flags, is refused on write.
    let claimed = user_writes(&sb, "grant", ADMIN_AUTHOR.annotations(), spec.clone()).await;
    let claimed = claimed.expect_err("the policy refuses another author");
    assert!(claimed.contains("must name the user writing"), "{claimed}");
    let allowed = user_writes(
        &sb,
        "grant",
        user_annotations(),
        json!({"clusters": ["local"], "allow": ["privilegedRbac"]}),
    )
    .await
    .expect_err("the policy refuses `allow` to a non-approver");
    assert!(allowed.contains("approve"), "{allowed}");

    // As themselves: written, and refused by the controller, naming what they lack.
    user_writes(&sb, "grant", user_annotations(), spec.clone())
        .await
        .unwrap();
    let refused = error_with(&sb, "grant", "may not do what the addon does").await;
    let error = refused["status"]["lastError"].as_str().unwrap();
    let user = &Env::get().control_plane().user_name;
    assert!(error.contains(&format!("`{user}`")), "{error}");
    assert!(
        error.contains("bind clusterroles.rbac.authorization.k8s.io `cluster-admin`"),
        "{error}"
    );
    assert!(error.contains("create clusterrolebindings"), "{error}");
    assert_eq!(condition(&refused, "Ready").unwrap()["reason"], "Refused");
    assert!(wait_event(&sb, "grant", "Refused")
        .await
        .contains("cluster-admin"));
    assert!(get_on(&admin, CLUSTER_ROLE_BINDING, None, &binding)
        .await
        .is_none());
    assert!(
        get_on(&admin, Kind::CONFIG_MAP, Some(sb.ns()), "grant-settings")
            .await
            .is_none()
    );

    // An administrator may do it, but only once `allow` lets the flagged binding through.
    admin_writes(&sb, "grant", spec.clone()).await;
    let flagged = error_with(&sb, "grant", "allow `privilegedRbac`").await;
    assert!(
        flagged["status"]["lastError"]
            .as_str()
            .unwrap()
            .contains("cluster-admin"),
        "{flagged:#}"
    );
    assert!(get_on(&admin, CLUSTER_ROLE_BINDING, None, &binding)
        .await
        .is_none());
    admin_writes(
        &sb,
        "grant",
        json!({"clusters": ["local"], "allow": ["privilegedRbac"]}),
    )
    .await;
    let applied = crate::controller::wait_ready(&sb, "grant").await;
    // The administrator's rights were checked for the refused apply moments ago: this apply's
    // checks were answered from the controller's cache of access reviews.
    let (_, metrics) = crate::controller::http_get(&address, "/metrics").await;
    let reviews = |answer: &str| {
        crate::controller::metric(
            &metrics,
            &format!("addonctl_controller_access_reviews_total{{answer=\"{answer}\"}}"),
        )
    };
    assert!(reviews("asked") > 0, "{metrics}");
    assert!(reviews("cached") > 0, "{metrics}");
    assert!(
        applied["status"]["flags"].as_array().is_some_and(|f| f
            .iter()
            .any(|f| f.as_str().unwrap().contains("cluster-admin"))),
        "{applied:#}"
    );
    assert!(get_on(&admin, CLUSTER_ROLE_BINDING, None, &binding)
        .await
        .is_some());
    assert!(wait_event(&sb, "grant", "Flagged")
        .await
        .contains("cluster-admin"));

    // Deleting it disables the addon: the binding goes.
    sb.api()
        .delete(&ADDON.gvk(), Some(sb.ns()), "grant")
        .await
        .unwrap();
    wait_for("the binding removed with the Addon", || async {
        get_on(&admin, CLUSTER_ROLE_BINDING, None, &binding)
            .await
            .is_none()
            .then_some(())
    })
    .await;
    let _ = stop.send(());
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), controller).await;
}

/// An addon with a plain parameter and a `secret()` one, rendered into a ConfigMap.
fn with_token(name: &str) -> TestAddon {
    let template = format!(
        r#"let ns = context.namespace;
let objects = [#{{ apiVersion: "v1", kind: "ConfigMap", metadata: #{{ name: "{name}-cm", namespace: ns }},
    data: #{{ note: parameter.note }} }}];
#{{ output: application(#{{ components: [k8s_objects("{name}", objects)],
    policies: [topology("where", parameter.clusters)] }}) }}
"#
    );
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture {name}\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    note: string(\"plain\"),\n    token: string().optional().secret(),\n    clusters: list(string()).optional(),\n}\n",
        )
        .file("template.rhai", &template)
}

#[tokio::test(flavor = "multi_thread")]
async fn secret_parameters_read_only_secrets_meant_for_them_and_only_into_secret_parameters() {
    let addon_dir = with_token("vaulted");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon_dir]);
    install_crd(&sb).await;
    grant_addon_rights(&sb).await;
    sb.join("m1", crate::controller::managed(1), &[]).await;
    let secret = |name: &str, labelled: bool| {
        let mut metadata = json!({"name": name, "namespace": sb.ns()});
        if labelled {
            metadata["labels"] = json!({"addonctl.io/secret-parameter": "true"});
        }
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": metadata,
               "stringData": {"token": "hunter2-value", "note": "hunter2-note"}})
    };
    for (name, labelled) in [
        ("plain", false),
        ("meant", true),
        ("addon-params-other", true),
    ] {
        sb.api()
            .apply(&secret(name, labelled), sb.ns())
            .await
            .unwrap();
    }
    let cluster_secret = sb
        .list(Kind::SECRET)
        .await
        .into_iter()
        .find(|s| {
            s["metadata"]["labels"]
                .as_object()
                .is_some_and(|l| l.keys().any(|k| k.starts_with("cluster.core.oam.dev/")))
        })
        .expect("the joined cluster's credential Secret");
    let cluster_secret = cluster_secret["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let (controller, stop, admin, _) =
        in_process(&sb, &[&addon_dir], addonctl::controller::Backoff::default()).await;
    let reference = |parameter: &str, secret: &str, key: &str| {
        json!({"clusters": ["local"],
               "secretParameters": [{"name": parameter, "secretRef": {"name": secret, "key": key}}]})
    };

    // E2: a cluster's credentials, an unlabelled Secret, another addon's parameters.
    admin_writes(&sb, "vaulted", reference("token", &cluster_secret, "token")).await;
    error_with(&sb, "vaulted", "a joined cluster's credentials").await;
    admin_writes(&sb, "vaulted", reference("token", "plain", "token")).await;
    error_with(
        &sb,
        "vaulted",
        "is not labelled `addonctl.io/secret-parameter=true`",
    )
    .await;
    admin_writes(
        &sb,
        "vaulted",
        reference("token", "addon-params-other", "token"),
    )
    .await;
    error_with(&sb, "vaulted", "another addon's parameters").await;
    // S2: a Secret's value never goes into an ordinary (shown unmasked) parameter.
    admin_writes(&sb, "vaulted", reference("note", "meant", "note")).await;
    let s2 = error_with(&sb, "vaulted", "is not a `secret()` parameter").await;
    assert!(
        get_on(&admin, Kind::CONFIG_MAP, Some(sb.ns()), "vaulted-cm")
            .await
            .is_none()
    );
    // A labelled Secret its author may not read is not read for them.
    sb.api()
        .delete(&ADDON.gvk(), Some(sb.ns()), "vaulted")
        .await
        .unwrap();
    wait_for("the refused Addon gone", || async {
        addon(&sb, "vaulted").await.is_none().then_some(())
    })
    .await;
    user_writes(
        &sb,
        "vaulted",
        user_annotations(),
        reference("token", "meant", "token"),
    )
    .await
    .unwrap();
    let unreadable = error_with(&sb, "vaulted", "may not read Secret `meant`").await;
    // The right one goes through.
    admin_writes(&sb, "vaulted", reference("token", "meant", "token")).await;
    crate::controller::wait_ready(&sb, "vaulted").await;
    for shown in [&s2, &unreadable] {
        assert!(!shown.to_string().contains("hunter2"), "{shown:#}");
    }
    let _ = stop.send(());
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), controller).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_installation_made_with_the_cli_is_taken_over_only_when_asked_and_released_untouched() {
    let addon_dir = fixture("taken", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon_dir]);
    install_crd(&sb).await;
    grant_addon_rights(&sb).await;
    let output = sb
        .cli()
        .args(["enable", "taken", "--clusters", "local"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let (controller, stop, admin, _) =
        in_process(&sb, &[&addon_dir], addonctl::controller::Backoff::default()).await;
    let present = || async {
        get_on(&admin, Kind::CONFIG_MAP, Some(sb.ns()), "taken-0")
            .await
            .is_some()
    };
    assert!(present().await);

    // E3: a suspended Addon over it, deleted: nothing is disabled.
    admin_writes(
        &sb,
        "taken",
        json!({"clusters": ["local"], "suspend": true}),
    )
    .await;
    wait_for("the suspended Addon seen", || async {
        let addon = addon(&sb, "taken").await?;
        (condition(&addon, "Progressing")?["reason"] == "Suspended").then_some(())
    })
    .await;
    sb.api()
        .delete(&ADDON.gvk(), Some(sb.ns()), "taken")
        .await
        .unwrap();
    wait_for("the Addon gone", || async {
        addon(&sb, "taken").await.is_none().then_some(())
    })
    .await;
    assert!(
        present().await,
        "deleting a suspended Addon disabled the addon"
    );

    // Without `adopt` the installation is left alone, and deleting the Addon releases it.
    admin_writes(&sb, "taken", json!({"clusters": ["local"]})).await;
    let refused = error_with(&sb, "taken", "installed already").await;
    assert!(
        refused["status"]["lastError"]
            .as_str()
            .unwrap()
            .contains("spec.adopt: true"),
        "{refused:#}"
    );
    sb.api()
        .delete(&ADDON.gvk(), Some(sb.ns()), "taken")
        .await
        .unwrap();
    wait_for("the refused Addon gone", || async {
        addon(&sb, "taken").await.is_none().then_some(())
    })
    .await;
    assert!(
        present().await,
        "deleting a refused Addon disabled the addon"
    );

    // Taking over needs `approve`: refused to the user with only Addon rights.
    let denied = user_writes(
        &sb,
        "taken",
        user_annotations(),
        json!({"clusters": ["local"], "adopt": true}),
    )
    .await
    .expect_err("the policy refuses `adopt` to a non-approver");
    assert!(denied.contains("approve"), "{denied}");
    // An approver takes it over; then deleting the Addon disables the addon.
    admin_writes(&sb, "taken", json!({"clusters": ["local"], "adopt": true})).await;
    let adopted = crate::controller::wait_ready(&sb, "taken").await;
    assert_eq!(adopted["status"]["installation"], "Adopted");
    sb.api()
        .delete(&ADDON.gvk(), Some(sb.ns()), "taken")
        .await
        .unwrap();
    wait_for("the adopted addon disabled with its Addon", || async {
        (!present().await).then_some(())
    })
    .await;
    let _ = stop.send(());
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), controller).await;
}

/// An addon whose auxiliary output is the CRD `gizmos.<group>` (a ConfigMap beside it).
fn with_crd(name: &str, group: &str) -> TestAddon {
    let template = format!(
        r#"let ns = context.namespace;
let objects = [#{{ apiVersion: "v1", kind: "ConfigMap", metadata: #{{ name: "{name}-cm", namespace: ns }}, data: #{{ a: "1" }} }}];
#{{ output: application(#{{ components: [k8s_objects("{name}", objects)],
    policies: [topology("where", parameter.clusters)] }}),
   outputs: #{{ crd: #{{ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition",
       metadata: #{{ name: "gizmos.{group}" }},
       spec: #{{ group: "{group}", scope: "Namespaced",
           names: #{{ plural: "gizmos", singular: "gizmo", kind: "Gizmo", listKind: "GizmoList" }},
           versions: [#{{ name: "v1", served: true, storage: true,
               schema: #{{ openAPIV3Schema: #{{ type: "object", "x-kubernetes-preserve-unknown-fields": true }} }} }}] }} }} }} }}
"#
    );
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture {name}\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    clusters: list(string()).optional(),\n}\n",
        )
        .file("template.rhai", &template)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_addon_replacing_a_crd_it_does_not_own_is_refused_unless_allowed_and_flagged() {
    const CRD: Kind = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    let sb = Sandbox::with_kubevela().await.direct();
    let group = format!("{}.example.com", sb.ns());
    let crd_name = format!("gizmos.{group}");
    let addon_dir = with_crd("gizmos", &group);
    let sb = sb.registries(&[&addon_dir]);
    install_crd(&sb).await;
    ensure_namespace(&sb).await;
    sb.clean_up_on(Env::get().control_plane(), CRD, None, &crd_name);
    // Someone else's CRD of that name, already there.
    sb.api()
        .apply(
            &json!({"apiVersion": CRD.0, "kind": CRD.1,
                    "metadata": {"name": crd_name, "labels": {"owner": "someone-else"}},
                    "spec": {"group": group, "scope": "Namespaced",
                             "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
                             "versions": [{"name": "v1", "served": true, "storage": true,
                                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
            sb.ns(),
        )
        .await
        .unwrap();
    let (controller, stop, admin, _) =
        in_process(&sb, &[&addon_dir], addonctl::controller::Backoff::default()).await;

    // Refused as the review flags it (`enable --dry-run` does too): nothing applied.
    admin_writes(&sb, "gizmos", json!({"clusters": ["local"]})).await;
    let refused = error_with(&sb, "gizmos", "allow `customResourceDefinition`").await;
    let error = refused["status"]["lastError"].as_str().unwrap();
    assert!(error.contains(&crd_name), "{error}");
    assert!(error.contains("not created by addonctl"), "{error}");
    assert_eq!(condition(&refused, "Ready").unwrap()["reason"], "Refused");
    assert!(wait_event(&sb, "gizmos", "Refused")
        .await
        .contains(&crd_name));
    assert!(get_on(&admin, Kind::CONFIG_MAP, Some(sb.ns()), "gizmos-cm")
        .await
        .is_none());
    let crd = get_on(&admin, CRD, None, &crd_name).await.unwrap();
    assert_eq!(crd["metadata"]["labels"]["owner"], "someone-else");
    assert!(
        crd["metadata"]["labels"]
            .as_object()
            .is_some_and(|l| l.len() == 1),
        "the CRD was written: {crd:#}"
    );

    // Allowed by an approver (with the adoption it is): applied, and the flag is shown.
    admin_writes(
        &sb,
        "gizmos",
        json!({"clusters": ["local"], "allow": ["customResourceDefinition", "adopts"]}),
    )
    .await;
    let applied = crate::controller::wait_ready(&sb, "gizmos").await;
    assert!(
        applied["status"]["flags"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f.as_str().unwrap().contains(&crd_name))),
        "{applied:#}"
    );
    let _ = stop.send(());
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), controller).await;
}
