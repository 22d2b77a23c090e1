//! Deletion safety, state protection, privileged objects and adoption, against real API servers
//! (see `support::k8s`): a control plane (playing KubeVela installed, deploying with the direct
//! engine) and `managed-1`, joined as `m1` into each test's own system namespace.

use std::collections::BTreeMap;

use addonctl::cluster::Cluster;
use addonctl::context::NoopReporter;
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{apply_as_on, get_on, list_on, ClusterEnv, Env, Kind, Sandbox};

mod adoption;
mod followups;

/// An addon `name` 1.0.0 whose template (Rhai statements) pushes objects onto `objects`, all in
/// one `k8s-objects` component sent to `m1`; `outputs` (a Rhai map) are auxiliary outputs. In
/// scope: `ns` (the system namespace) and `addon`.
fn addon(name: &str, body: &str, outputs: &str) -> TestAddon {
    let template = format!(
        "let ns = context.namespace;\n\
         let addon = context.metadata.name;\n\
         let objects = [];\n\
         {body}\n\
         #{{ output: application(#{{ components: [k8s_objects(addon, objects)], \
         policies: [topology(\"where\", [\"m1\"])] }}), outputs: {outputs} }}\n"
    );
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture addon {name}\n"),
        )
        .file("parameter.rhai", "#{}\n")
        .file("template.rhai", &template)
}

/// Two ConfigMaps `<addon>-0`, `<addon>-1` in the system namespace (which `m1` lacks).
const CONFIG_MAPS: &str = r#"for i in 0..2 {
    objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `${addon}-${i}` },
        data: #{ index: `${i}` } });
}"#;

fn managed_1() -> &'static ClusterEnv {
    Env::get().managed_n(1)
}

async fn sandbox(addons: &[&TestAddon]) -> (Sandbox, Cluster) {
    let sb = Sandbox::with_kubevela().await.direct().registries(addons);
    sb.join("m1", managed_1(), &[]).await;
    (sb, managed_1().admin().await)
}

/// Gone, or on its way (a Namespace stays `Terminating` without kube-controller-manager).
fn is_gone(object: Option<&Value>) -> bool {
    object.is_none_or(|o| !o["metadata"]["deletionTimestamp"].is_null())
}

fn is_live(object: Option<&Value>) -> bool {
    object.is_some_and(|o| o["metadata"]["deletionTimestamp"].is_null())
}

fn output_of(cmd: &mut assert_cmd::Command) -> (bool, String, String) {
    let output = cmd.output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A ConfigMap a person makes with kubectl.
fn persons_config_map(namespace: &str, name: &str, data: Value) -> Value {
    let mut object = Kind::CONFIG_MAP.object(json!({"name": name, "namespace": namespace}));
    object["data"] = data;
    object
}

// ------------------------------------------------------------------------------ namespaces

#[tokio::test(flavor = "multi_thread")]
async fn the_system_namespace_and_a_persons_config_map_on_a_managed_cluster_survive_disable() {
    let first = addon("first", CONFIG_MAPS, "#{}");
    let (sb, m1) = sandbox(&[&first]).await;
    sb.enable("first", json!({})).await.unwrap();
    let record = sb.record("first").await;
    assert_eq!(
        record.dispatched["m1"].objects[0].object.to_string(),
        format!("Namespace `{}`", sb.ns()),
        "the first addon on m1 creates the system namespace there"
    );
    assert!(record.dispatched["m1"].objects[0].created);
    let notes = persons_config_map(sb.ns(), "notes", json!({"text": "mine"}));
    apply_as_on(&m1, "kubectl", notes, sb.ns()).await;

    let (ok, stdout, stderr) = output_of(sb.cli().args(["disable", "first"]));

    assert!(ok, "{stderr}");
    let ns = sb.ns();
    for line in [
        format!("deleted ConfigMap `{ns}/first-0` on cluster `m1`"),
        format!("deleted ConfigMap `{ns}/first-1` on cluster `m1`"),
        format!("kept Namespace `{ns}` on cluster `m1`: it is the system namespace"),
    ] {
        assert!(stdout.contains(&line), "`{line}` missing:\n{stdout}");
    }
    assert!(is_live(
        get_on(&m1, Kind::NAMESPACE, None, ns).await.as_ref()
    ));
    let kept = get_on(&m1, Kind::CONFIG_MAP, Some(ns), "notes")
        .await
        .unwrap();
    assert_eq!(kept["data"]["text"], "mine");
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(ns), "first-0")
        .await
        .is_none());
    assert!(sb.get(Kind::SECRET, "addon-record-first").await.is_none());
}

/// A Namespace `<ns>-team` the addon declares, and a ConfigMap `<addon>-cm` in it.
const TEAM: &str = r#"let team = `${ns}-team`;
objects.push(#{ apiVersion: "v1", kind: "Namespace", metadata: #{ name: team } });
objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `${addon}-cm`, namespace: team },
    data: #{ a: "1" } });"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_holding_a_persons_config_map_is_kept_and_the_output_says_why() {
    let teamed = addon("teamed", TEAM, "#{}");
    let (sb, m1) = sandbox(&[&teamed]).await;
    let team = format!("{}-team", sb.ns());
    sb.clean_up_on(managed_1(), Kind::NAMESPACE, None, &team);
    sb.enable("teamed", json!({})).await.unwrap();
    apply_as_on(
        &m1,
        "kubectl",
        persons_config_map(&team, "notes", json!({"text": "mine"})),
        &team,
    )
    .await;

    let (ok, stdout, stderr) = output_of(sb.cli().args(["disable", "teamed", "-o", "json"]));

    assert!(ok, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let kept: Vec<&Value> = report["kept"].as_array().unwrap().iter().collect();
    let namespace = kept
        .iter()
        .find(|k| k["kind"] == "Namespace" && k["name"] == team.as_str())
        .unwrap_or_else(|| panic!("the namespace is not reported kept: {report}"));
    assert_eq!(namespace["cluster"], "m1");
    assert!(
        namespace["reason"].as_str().unwrap().contains(
            "objects addonctl did not create for this addon live in it: ConfigMap `notes`"
        ),
        "{namespace}"
    );
    assert!(report["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["name"] == "teamed-cm" && d["cluster"] == "m1"));
    assert!(is_live(
        get_on(&m1, Kind::NAMESPACE, None, &team).await.as_ref()
    ));
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(&team), "notes")
        .await
        .is_some());
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(&team), "teamed-cm")
        .await
        .is_none());
}

/// A ConfigMap in a namespace `<ns>-named` that nothing declares.
const NAMED: &str = r#"objects.push(#{ apiVersion: "v1", kind: "ConfigMap",
    metadata: #{ name: `${addon}-cm`, namespace: `${ns}-named` }, data: #{ a: "1" } });"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_objects_name_is_created_on_a_managed_cluster_and_removed_on_disable() {
    let named = addon("named", NAMED, "#{}");
    let (sb, m1) = sandbox(&[&named]).await;
    let namespace = format!("{}-named", sb.ns());
    sb.clean_up_on(managed_1(), Kind::NAMESPACE, None, &namespace);

    sb.enable("named", json!({})).await.unwrap();

    assert!(is_live(
        get_on(&m1, Kind::NAMESPACE, None, &namespace)
            .await
            .as_ref()
    ));
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(&namespace), "named-cm")
        .await
        .is_some());
    let record = sb.record("named").await;
    let created = &record.dispatched["m1"].objects[0];
    assert_eq!(
        created.object.to_string(),
        format!("Namespace `{namespace}`")
    );
    assert!(created.created, "recorded as created by addonctl");

    let report = addonctl::apply::disable(&sb.ctx.applier(), "named", false, &NoopReporter)
        .await
        .unwrap();

    assert!(
        report
            .deleted
            .iter()
            .any(|d| d.kind == "Namespace" && d.name == namespace && d.cluster == "m1"),
        "{:?}",
        report.deleted
    );
    assert!(is_gone(
        get_on(&m1, Kind::NAMESPACE, None, &namespace)
            .await
            .as_ref()
    ));
}

// ---------------------------------------------------------------------------------- dry runs

#[tokio::test(flavor = "multi_thread")]
async fn dry_runs_of_disable_and_detach_print_deletions_and_keeps_and_change_nothing() {
    let first = addon("first", CONFIG_MAPS, "#{}");
    let (sb, m1) = sandbox(&[&first]).await;
    sb.enable("first", json!({})).await.unwrap();
    let before = versions(&m1, sb.ns()).await;
    let record = sb.record("first").await;
    let ns = sb.ns();

    let (ok, stdout, stderr) = output_of(sb.cli().args(["disable", "first", "--dry-run"]));

    assert!(ok, "{stderr}");
    for line in [
        format!("would delete ConfigMap `{ns}/first-1` on cluster `m1`"),
        format!("would delete ConfigMap `{ns}/first-0` on cluster `m1`"),
        format!("kept Namespace `{ns}` on cluster `m1`: it is the system namespace"),
        format!("would delete Secret `{ns}/addon-record-first` on cluster `local`"),
        "# dry run: nothing was changed".to_owned(),
    ] {
        assert!(stdout.contains(&line), "`{line}` missing:\n{stdout}");
    }
    let (ok, stdout, stderr) =
        output_of(
            sb.cli()
                .args(["disable", "first", "--dry-run", "-o", "yaml"]),
        );
    assert!(ok, "{stderr}");
    let report: Value = serde_yaml::from_str(&stdout).unwrap();
    assert_eq!(report["dryRun"], true);
    assert!(report["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["name"] == "first-0" && d["cluster"] == "m1" && d["namespace"] == ns));

    let (ok, stdout, stderr) = output_of(sb.cli().args(["cluster", "detach", "m1", "--dry-run"]));

    assert!(ok, "{stderr}");
    for line in [
        "cluster `m1` would be detached".to_owned(),
        "addon `first`: 2 objects would be deleted".to_owned(),
        format!("would delete ConfigMap `{ns}/first-0` on cluster `m1`"),
        format!("kept Namespace `{ns}` on cluster `m1`: it is the system namespace"),
    ] {
        assert!(stdout.contains(&line), "`{line}` missing:\n{stdout}");
    }
    let (ok, stdout, stderr) =
        output_of(
            sb.cli()
                .args(["cluster", "detach", "m1", "--dry-run", "-o", "json"]),
        );
    assert!(ok, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["dryRun"], true);
    assert_eq!(report["deleted"].as_array().unwrap().len(), 2);

    assert_eq!(
        versions(&m1, sb.ns()).await,
        before,
        "nothing changed on m1"
    );
    assert_eq!(sb.record("first").await, record, "nor the record");
    assert!(
        sb.get(Kind::SECRET, "m1").await.is_some(),
        "m1 is still joined"
    );
}

/// `Kind name` → resourceVersion of the namespace and its ConfigMaps on a cluster.
async fn versions(cluster: &Cluster, namespace: &str) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = list_on(cluster, Kind::CONFIG_MAP, Some(namespace))
        .await
        .into_iter()
        .map(|o| {
            (
                format!("ConfigMap {}", o["metadata"]["name"].as_str().unwrap()),
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    let ns = get_on(cluster, Kind::NAMESPACE, None, namespace)
        .await
        .unwrap();
    out.insert(
        "Namespace".to_owned(),
        ns["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    out
}

// ------------------------------------------------------------------------------------ sharing

/// A Namespace `<ns>-team`, a ConfigMap `shared` in it both fixtures render, and one of the
/// addon's own.
const SHARED_TEAM: &str = r#"let team = `${ns}-team`;
objects.push(#{ apiVersion: "v1", kind: "Namespace", metadata: #{ name: team } });
objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: "shared", namespace: team },
    data: #{ owner: "everyone" } });
objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `${addon}-own`, namespace: team },
    data: #{ owner: addon } });"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_object_two_addons_list_survives_the_first_disable_and_goes_with_the_last() {
    let alpha = addon("alpha", SHARED_TEAM, "#{}");
    let beta = addon("beta", SHARED_TEAM, "#{}");
    let (sb, m1) = sandbox(&[&alpha, &beta]).await;
    let team = format!("{}-team", sb.ns());
    sb.clean_up_on(managed_1(), Kind::NAMESPACE, None, &team);
    sb.enable("alpha", json!({})).await.unwrap();
    sb.enable("beta", json!({})).await.unwrap();
    let shared = get_on(&m1, Kind::CONFIG_MAP, Some(&team), "shared")
        .await
        .unwrap();

    let report = addonctl::apply::disable(&sb.ctx.applier(), "alpha", false, &NoopReporter)
        .await
        .unwrap();

    let kept: Vec<String> = report.kept.iter().map(ToString::to_string).collect();
    assert_eq!(
        kept,
        [
            format!("ConfigMap `{team}/shared` on cluster `m1`: addon `beta` has it too"),
            format!("Namespace `{team}` on cluster `m1`: addon `beta` has it too"),
        ]
    );
    let still = get_on(&m1, Kind::CONFIG_MAP, Some(&team), "shared")
        .await
        .unwrap();
    assert_eq!(still["metadata"]["uid"], shared["metadata"]["uid"]);
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(&team), "alpha-own")
        .await
        .is_none());
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(&team), "beta-own")
        .await
        .is_some());

    let report = addonctl::apply::disable(&sb.ctx.applier(), "beta", false, &NoopReporter)
        .await
        .unwrap();

    assert!(report.kept.is_empty(), "{:?}", report.kept);
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(&team), "shared")
        .await
        .is_none());
    assert!(is_gone(
        get_on(&m1, Kind::NAMESPACE, None, &team).await.as_ref()
    ));
}

// ------------------------------------------------------------------------------------ recovery

/// Points the cluster Secret `name` at `endpoint`.
async fn move_cluster(sb: &Sandbox, name: &str, endpoint: &str) {
    sb.api()
        .merge_patch(
            &Kind::SECRET.gvk(),
            Some(sb.ns()),
            name,
            &json!({"stringData": {"endpoint": endpoint}}),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disable_that_fails_midway_says_what_to_run_and_the_next_one_finishes() {
    let first = addon("first", CONFIG_MAPS, "#{}");
    let (sb, m1) = sandbox(&[&first]).await;
    sb.enable("first", json!({})).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (_, nowhere) = Env::get().unreachable_kubeconfig(dir.path());
    move_cluster(&sb, "m1", &nowhere).await;

    let (ok, _, stderr) = output_of(
        sb.cli()
            .env("ADDONCTL_CLUSTER_TIMEOUT", "5")
            .args(["disable", "first"]),
    );

    assert!(!ok);
    assert!(
        stderr.contains("m1") && stderr.contains("run `addonctl disable first` again to finish"),
        "{stderr}"
    );
    assert!(!stderr.contains("were applied"), "{stderr}");
    let record = sb.record("first").await;
    assert_eq!(
        record.dispatched["m1"].objects.len(),
        3,
        "the record keeps what is left on m1"
    );
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "first-0")
        .await
        .is_some());

    move_cluster(&sb, "m1", &managed_1().server).await;
    let (ok, stdout, stderr) = output_of(sb.cli().args(["disable", "first"]));

    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!(
            "deleted ConfigMap `{}/first-0` on cluster `m1`",
            sb.ns()
        )),
        "{stdout}"
    );
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "first-0")
        .await
        .is_none());
    assert!(sb.get(Kind::SECRET, "addon-record-first").await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn state_an_older_record_lists_survives_disable() {
    let first = addon("first", CONFIG_MAPS, "#{}");
    let (sb, _m1) = sandbox(&[&first]).await;
    sb.enable("first", json!({})).await.unwrap();
    // As an addon enabled before such objects were refused left it: its record lists the
    // registry store, which exists.
    let store = sb
        .apply_as(
            "kubectl",
            Kind::CONFIG_MAP.object(json!({"name": "vela-addon-registry", "namespace": sb.ns()})),
        )
        .await;
    let mut record = sb.record("first").await;
    record.inventory.push(addonctl::state::record::ObjectRef {
        api_version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
        namespace: Some(sb.ns().to_owned()),
        name: "vela-addon-registry".to_owned(),
    });
    sb.api()
        .apply(&record.to_secret(sb.ns()), sb.ns())
        .await
        .unwrap();

    let (ok, stdout, stderr) = output_of(sb.cli().args(["disable", "first"]));

    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!(
            "kept ConfigMap `{}/vela-addon-registry` on cluster `local`: it is the registry store",
            sb.ns()
        )),
        "{stdout}"
    );
    let left = sb
        .get(Kind::CONFIG_MAP, "vela-addon-registry")
        .await
        .unwrap();
    assert_eq!(left["metadata"]["uid"], store["metadata"]["uid"]);
    assert!(sb.get(Kind::SECRET, "addon-record-first").await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_detach_that_cannot_clean_says_what_to_run_and_changes_no_record() {
    let first = addon("first", CONFIG_MAPS, "#{}");
    let (sb, m1) = sandbox(&[&first]).await;
    sb.enable("first", json!({})).await.unwrap();
    let record = sb.record("first").await;
    let dir = tempfile::tempdir().unwrap();
    let (_, nowhere) = Env::get().unreachable_kubeconfig(dir.path());
    move_cluster(&sb, "m1", &nowhere).await;

    let (ok, _, stderr) = output_of(
        sb.cli()
            .env("ADDONCTL_CLUSTER_TIMEOUT", "5")
            .args(["cluster", "detach", "m1"]),
    );

    assert!(!ok);
    assert!(
        stderr.contains("cannot clean addon `first` from cluster `m1`")
            && stderr.contains("--force")
            && stderr.contains("run `addonctl cluster detach m1` again to finish"),
        "{stderr}"
    );
    assert_eq!(sb.record("first").await, record, "the record keeps m1");
    assert!(
        sb.get(Kind::SECRET, "m1").await.is_some(),
        "m1 stays joined"
    );

    move_cluster(&sb, "m1", &managed_1().server).await;
    let (ok, stdout, stderr) = output_of(sb.cli().args(["cluster", "detach", "m1"]));

    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("addon `first`: 2 objects deleted"),
        "{stdout}"
    );
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "first-0")
        .await
        .is_none());
    assert!(sb.get(Kind::SECRET, "m1").await.is_none());
    assert!(sb.record("first").await.dispatched.is_empty());
}
