//! Drift detection and correction against real API servers: an addon enabled with the direct
//! engine on `managed-1`, its objects edited and deleted by hand there.

use addonctl::drift::engine::check;
use addonctl::drift::{DriftCache, DriftKind, DriftSpec, Exclusion, Policy, Report};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{get_on, Env, Kind, Sandbox, HELD_POOL_RHAI};

/// A fixture addon `name` at `version` for the direct engine, on the clusters of its `clusters`
/// argument: the Namespace named after the system namespace, a ConfigMap `settings`, and a
/// Deployment `web` with 2 replicas, ready as soon as the cluster's controllers make it so.
pub(crate) fn workload_addon(name: &str, version: &str) -> TestAddon {
    workload_addon_with(name, version, Pods::Ready)
}

/// When the pods of [`workload_addon_with`]'s Deployment `web` become ready.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pods {
    /// As soon as they are scheduled.
    Ready,
    /// Not before the test releases them on a cluster (`release_pods_on(cluster, namespace)`).
    Held,
    /// This long (`"3s"`) after they are scheduled: a slow rollout.
    ReadyAfter(&'static str),
}

/// [`workload_addon`] whose pods become ready as `pods` says.
pub(crate) fn workload_addon_with(name: &str, version: &str, pods: Pods) -> TestAddon {
    let template = r#"let ns = context.namespace;
let addon = context.metadata.name;
let labels = #{ "addonctl.test/addon": addon };
let objects = [];
objects.push(#{ apiVersion: "v1", kind: "Namespace", metadata: #{ name: ns, labels: labels } });
objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: "settings", labels: labels },
    data: #{ mode: "strict" } });
objects.push(#{ apiVersion: "apps/v1", kind: "Deployment", metadata: #{ name: "web", labels: labels },
    spec: #{
        replicas: 2,
        selector: #{ matchLabels: #{ app: "web" } },
        template: #{
            metadata: #{ labels: #{ app: "web" } },
            spec: #{ containers: [#{ name: "web", image: `registry.example/web:${context.metadata.version}` }] },
        },
    } });
#{ output: application(#{ components: [k8s_objects(addon, objects)],
    policies: [topology("where", parameter.clusters)] }) }
"#;
    let edited = |from: &str, to: &str| {
        assert!(template.contains(from), "no `{from}` in the template");
        template.replace(from, to)
    };
    let template = match pods {
        Pods::Ready => template.to_owned(),
        Pods::Held => format!(
            "{HELD_POOL_RHAI}{}",
            edited(
                "spec: #{ containers:",
                "spec: #{ nodeSelector: held_pool(ns), containers:",
            )
        ),
        Pods::ReadyAfter(delay) => edited(
            r#"metadata: #{ labels: #{ app: "web" } }"#,
            &format!(
                r#"metadata: #{{ labels: #{{ app: "web" }},
                annotations: #{{ "pod-ready.stage.kwok.x-k8s.io/delay": "{delay}" }} }}"#
            ),
        ),
    };
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: {version}\ndescription: Fixture addon {name}\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    clusters: list(string()).optional(),\n}\n",
        )
        .file("template.rhai", &template)
}

fn spec(policy: Policy, exclusions: Vec<Exclusion>) -> DriftSpec {
    DriftSpec { policy, exclusions }
}

/// Enables `drifty` on `m1` (managed-1) and returns the sandbox and managed-1's admin client.
async fn enabled() -> (Sandbox, addonctl::cluster::Cluster, TestAddon) {
    let addon = workload_addon("drifty", "1.0.0");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    sb.join("m1", Env::get().managed_n(1), &[]).await;
    sb.enable("drifty", json!({"clusters": ["m1"]}))
        .await
        .unwrap();
    let m1 = Env::get().managed_n(1).admin().await;
    (sb, m1, addon)
}

/// Patches an object as a person with `kubectl edit` would (another field manager).
async fn edit_deployment(m1: &addonctl::cluster::Cluster, ns: &str, patch: Value) {
    let api: Api<Deployment> = Api::namespaced(m1.client().clone(), ns);
    let params = PatchParams {
        field_manager: Some("kubectl-edit".to_owned()),
        ..PatchParams::default()
    };
    api.patch("web", &params, &Patch::Merge(&patch))
        .await
        .unwrap();
}

async fn web(m1: &addonctl::cluster::Cluster, ns: &str) -> Value {
    get_on(m1, Kind::DEPLOYMENT, Some(ns), "web").await.unwrap()
}

fn changed_paths(report: &Report) -> Vec<(String, Vec<String>)> {
    report
        .drifts
        .iter()
        .filter_map(|d| match &d.kind {
            DriftKind::Changed { paths } => Some((d.object.name.clone(), paths.clone())),
            DriftKind::Deleted | DriftKind::Shared { .. } => None,
        })
        .collect()
}

const IMAGE_EDIT: &str = "registry.example/evil:6";

fn image_patch() -> Value {
    json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": IMAGE_EDIT}]}}}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hand_edit_is_reported_under_warn_and_reverted_under_correct() {
    let (sb, m1, _addon) = enabled().await;
    let mut cache = DriftCache::new();

    let first = check(&sb.ctx, "drifty", &spec(Policy::Warn, vec![]), &mut cache)
        .await
        .unwrap();
    assert!(first.drifts.is_empty(), "{:?}", first.drifts);
    assert_eq!(first.objects, 3, "Namespace, ConfigMap, Deployment");
    assert_eq!(cache.len(), 3);

    edit_deployment(&m1, sb.ns(), image_patch()).await;
    let warned = check(&sb.ctx, "drifty", &spec(Policy::Warn, vec![]), &mut cache)
        .await
        .unwrap();
    assert_eq!(
        changed_paths(&warned),
        [(
            "web".to_owned(),
            vec!["spec.template.spec.containers[0].image".to_owned()]
        )]
    );
    assert_eq!(warned.drifts[0].cluster, "m1");
    assert!(warned.corrected.is_empty());
    assert_eq!(
        web(&m1, sb.ns()).await["spec"]["template"]["spec"]["containers"][0]["image"],
        IMAGE_EDIT,
        "warn changes nothing"
    );

    let corrected = check(
        &sb.ctx,
        "drifty",
        &spec(Policy::Correct, vec![]),
        &mut cache,
    )
    .await
    .unwrap();
    assert_eq!(corrected.corrected.len(), 1, "{corrected:?}");
    assert_eq!(
        web(&m1, sb.ns()).await["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.example/web:1.0.0"
    );
    let after = check(&sb.ctx, "drifty", &spec(Policy::Warn, vec![]), &mut cache)
        .await
        .unwrap();
    assert!(after.drifts.is_empty(), "{:?}", after.drifts);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_object_is_reported_and_recreated() {
    let (sb, m1, _addon) = enabled().await;
    let mut cache = DriftCache::new();
    let api: Api<ConfigMap> = Api::namespaced(m1.client().clone(), sb.ns());
    api.delete("settings", &DeleteParams::default())
        .await
        .unwrap();

    let report = check(
        &sb.ctx,
        "drifty",
        &spec(Policy::Correct, vec![]),
        &mut cache,
    )
    .await
    .unwrap();

    assert_eq!(report.drifts.len(), 1, "{:?}", report.drifts);
    assert_eq!(report.drifts[0].kind, DriftKind::Deleted);
    assert_eq!(report.drifts[0].object.name, "settings");
    assert_eq!(report.corrected.len(), 1);
    let recreated = get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "settings")
        .await
        .expect("recreated");
    assert_eq!(recreated["data"]["mode"], "strict");
    assert_eq!(
        recreated["metadata"]["labels"]["addons.oam.dev/name"],
        "drifty"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_excluded_path_is_neither_reported_nor_reverted() {
    let (sb, m1, _addon) = enabled().await;
    let mut cache = DriftCache::new();
    let replicas = Exclusion {
        kind: "Deployment".to_owned(),
        paths: vec!["spec.replicas".to_owned()],
        ..Exclusion::default()
    };
    let mut patch = image_patch();
    patch["spec"]["replicas"] = json!(5);
    edit_deployment(&m1, sb.ns(), patch).await;

    let report = check(
        &sb.ctx,
        "drifty",
        &spec(Policy::Correct, vec![replicas.clone()]),
        &mut cache,
    )
    .await
    .unwrap();

    assert_eq!(
        changed_paths(&report),
        [(
            "web".to_owned(),
            vec!["spec.template.spec.containers[0].image".to_owned()]
        )],
        "the replicas are excluded"
    );
    let live = web(&m1, sb.ns()).await;
    assert_eq!(live["spec"]["replicas"], 5, "left to its new owner");
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.example/web:1.0.0"
    );
    let again = check(
        &sb.ctx,
        "drifty",
        &spec(Policy::Correct, vec![replicas]),
        &mut cache,
    )
    .await
    .unwrap();
    assert!(again.drifts.is_empty(), "{:?}", again.drifts);
    assert_eq!(web(&m1, sb.ns()).await["spec"]["replicas"], 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unchanged_cluster_costs_one_list_per_kind_and_no_full_read() {
    let (sb, m1, _addon) = enabled().await;
    // Unchanged: the Deployment's controller has finished its rollout and writes no more.
    crate::controller::wait_for("`web` rolled out", || async {
        let web = web(&m1, sb.ns()).await;
        let progressing = web["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Progressing")?
            .clone();
        (web["status"]["readyReplicas"] == 2 && progressing["reason"] == "NewReplicaSetAvailable")
            .then_some(())
    })
    .await;
    let mut cache = DriftCache::new();
    check(&sb.ctx, "drifty", &spec(Policy::Warn, vec![]), &mut cache)
        .await
        .unwrap();
    let names = ["m1".to_owned()].into_iter().collect();
    let clients = sb.ctx.state().clients(&names).await.unwrap();
    let client = clients["m1"].as_ref().unwrap();
    let before = client.counters().requests();
    let writes = client.counters().writes();

    let report = check(&sb.ctx, "drifty", &spec(Policy::Warn, vec![]), &mut cache)
        .await
        .unwrap();

    assert!(report.drifts.is_empty(), "{:?}", report.drifts);
    assert_eq!(report.full_reads, 0);
    let made = client.counters().requests() - before;
    assert_eq!(made, report.requests);
    assert_eq!(
        made, 3,
        "one metadata list per kind: Namespace, ConfigMap, Deployment"
    );
    assert_eq!(client.counters().writes(), writes, "nothing written");

    let ignored = check(&sb.ctx, "drifty", &spec(Policy::Ignore, vec![]), &mut cache)
        .await
        .unwrap();
    assert_eq!(ignored.requests, 0);
    assert_eq!(
        client.counters().requests() - before,
        3,
        "ignore reads nothing"
    );
}

/// Two addons that render the same objects differently (`drifty` and `twin`: the same
/// Namespace, ConfigMap and Deployment, labelled each with its own name) are reported, not
/// corrected: under `correct` each would undo the other at every check.
#[tokio::test(flavor = "multi_thread")]
async fn objects_two_addons_render_differently_are_reported_and_never_flipped() {
    let (sb, m1, drifty) = enabled().await;
    let twin = workload_addon("twin", "1.0.0");
    let sb = sb.registries(&[&drifty, &twin]);
    let enabled = sb
        .cli()
        .args(["enable", "twin", "--clusters", "m1"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&enabled.get_output().stderr).into_owned();
    assert!(
        stderr.contains("`twin` applies objects other addons apply too")
            && stderr.contains("on cluster `m1` (also addon `drifty`)"),
        "{stderr}"
    );
    let label = |object: &Value| object["metadata"]["labels"]["addonctl.test/addon"].clone();
    assert_eq!(label(&web(&m1, sb.ns()).await), json!("twin"));

    let correct = spec(Policy::Correct, vec![]);
    for round in 0..2 {
        let mut cache = DriftCache::new();
        let report = check(&sb.ctx, "drifty", &correct, &mut cache)
            .await
            .unwrap();
        let mut shared: Vec<(String, String, Vec<String>)> = report
            .drifts
            .iter()
            .filter_map(|d| match &d.kind {
                DriftKind::Shared { with, paths } => {
                    Some((d.object.kind.clone(), with.clone(), paths.clone()))
                }
                _ => None,
            })
            .collect();
        shared.sort();
        let expected: Vec<(String, String, Vec<String>)> = ["ConfigMap", "Deployment", "Namespace"]
            .iter()
            .map(|kind| {
                (
                    (*kind).to_owned(),
                    "twin".to_owned(),
                    vec!["metadata.labels[addonctl.test/addon]".to_owned()],
                )
            })
            .collect();
        assert_eq!(shared, expected, "round {round}: {:?}", report.drifts);
        assert_eq!(report.drifts.len(), 3, "{:?}", report.drifts);
        assert!(report.corrected.is_empty(), "{:?}", report.corrected);
        let text = report.drifts[0].to_string();
        assert!(text.contains("also applied by addon `twin`"), "{text}");
        // `twin`, which applied last, is in sync: nothing flips back and forth.
        let mut cache = DriftCache::new();
        let other = check(&sb.ctx, "twin", &correct, &mut cache).await.unwrap();
        assert!(other.drifts.is_empty(), "{:?}", other.drifts);
        assert_eq!(label(&web(&m1, sb.ns()).await), json!("twin"));
    }

    // A hand edit of a shared object is still drift of the one applied last, and corrected.
    edit_deployment(&m1, sb.ns(), image_patch()).await;
    let mut cache = DriftCache::new();
    let corrected = check(&sb.ctx, "twin", &correct, &mut cache).await.unwrap();
    assert_eq!(corrected.corrected.len(), 1, "{:?}", corrected.drifts);
    assert_ne!(
        web(&m1, sb.ns()).await["spec"]["template"]["spec"]["containers"][0]["image"],
        json!(IMAGE_EDIT)
    );
}
