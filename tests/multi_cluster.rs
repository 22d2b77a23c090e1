//! The direct engine across clusters, against real API servers (see `support::k8s`): a control
//! plane plus `managed-1`, `managed-2` and `managed-3` (reserved for stopping it). Every test
//! joins the managed clusters into its own system namespace under names of its own, deploys
//! into a namespace named after that system namespace, deploys with the direct engine even
//! though the control plane serves KubeVela's CRDs, and checks what each cluster stores.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::time::{Duration, Instant};

use addonctl::apply::UpgradeRequest;
use addonctl::cluster::set::ClusterCredentials;
use addonctl::cluster::Cluster;
use addonctl::context::NoopReporter;
use addonctl::plan::EnableRequest;
use addonctl::state::record::{ClusterInventory, Placement, Record};
use addonctl::status::Phase;
use base64::Engine as _;
use predicates::prelude::*;
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{
    apply_as_on, args, assert_never_established, fault_cluster_lock, get_on, list_on,
    release_pods_on, server_version, widget_crd, ClusterEnv, Env, Kind, Sandbox, Stopped,
    HELD_POOL_RHAI, HELD_SPREAD_RHAI,
};

/// The label every fixture object carries: the addon's name.
const LABEL: &str = "addonctl.test/addon";

/// A fixture addon for the direct engine: one `k8s-objects` component whose objects Rhai
/// statements (`body`) push onto `objects`, placed by `policies` (a Rhai array). In scope:
/// `ns` (the system namespace), `addon` (the name) and `labels`.
struct Fixture {
    name: String,
    version: String,
    parameters: Vec<String>,
    body: Vec<String>,
    components: Vec<String>,
    policies: String,
}

/// The Namespace every fixture deploys into on each cluster (named after the system namespace).
const NAMESPACE: &str = r#"objects.push(#{ apiVersion: "v1", kind: "Namespace", metadata: #{ name: ns, labels: labels } });"#;

/// `count` ConfigMaps `<addon>-<i>`.
const CONFIG_MAPS: &str = r#"for i in 0..parameter.count {
    objects.push(#{ apiVersion: "v1", kind: "ConfigMap",
        metadata: #{ name: `${addon}-${i}`, labels: labels }, data: #{ index: `${i}` } });
}"#;

/// A Deployment `web` (2 replicas) and a DaemonSet `agent`, their pods held until the test
/// releases them on a cluster (`release_pods_on`).
fn workloads() -> String {
    format!(
        r#"{HELD_POOL_RHAI}{HELD_SPREAD_RHAI}for w in [["Deployment", "web"], ["DaemonSet", "agent"]] {{
    let pod = #{{ containers: [#{{ name: w[1], image: `registry.example/${{w[1]}}:1` }}] }};
    if w[0] == "Deployment" {{
        pod.nodeSelector = held_pool(ns);
    }} else {{
        pod.topologySpreadConstraints = held_spread(ns);
    }}
    let spec = #{{
        selector: #{{ matchLabels: #{{ app: w[1] }} }},
        template: #{{ metadata: #{{ labels: #{{ app: w[1] }} }}, spec: pod }},
    }};
    if w[0] == "Deployment" {{ spec.replicas = 2; }}
    objects.push(#{{ apiVersion: "apps/v1", kind: w[0],
        metadata: #{{ name: w[1], labels: labels }}, spec: spec }});
}}"#
    )
}

/// An addon `name` at 1.0.0: the Namespace and `count` (default 2) ConfigMaps, on the clusters of
/// the `clusters` argument (every cluster without it).
fn addon(name: &str) -> Fixture {
    Fixture {
        name: name.to_owned(),
        version: "1.0.0".to_owned(),
        parameters: vec![
            "count: pint(2)".to_owned(),
            "clusters: list(string()).optional()".to_owned(),
        ],
        body: vec![NAMESPACE.to_owned(), CONFIG_MAPS.to_owned()],
        components: Vec::new(),
        policies: r#"[topology("where", parameter.clusters)]"#.to_owned(),
    }
}

impl Fixture {
    /// Replaces the objects.
    fn body(mut self, statements: &[&str]) -> Self {
        self.body = statements.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Replaces the policies (a Rhai array).
    fn policies(mut self, policies: &str) -> Self {
        policies.clone_into(&mut self.policies);
        self
    }

    /// Another component (a Rhai expression).
    fn component(mut self, component: &str) -> Self {
        self.components.push(component.to_owned());
        self
    }

    fn write(self) -> TestAddon {
        let template = format!(
            "let ns = context.namespace;\n\
             let addon = context.metadata.name;\n\
             let labels = #{{ \"{LABEL}\": addon }};\n\
             let objects = [];\n\
             {}\n\
             let components = [k8s_objects(addon, objects)];\n\
             {}\n\
             #{{ output: application(#{{ components: components, policies: {} }}) }}\n",
            self.body.join("\n"),
            self.components
                .iter()
                .map(|c| format!("components.push({c});"))
                .collect::<Vec<_>>()
                .join("\n"),
            self.policies,
        );
        TestAddon::new(&self.name)
            .file(
                "metadata.yaml",
                &format!(
                    "name: {}\nversion: {}\ndescription: Fixture addon {}\n",
                    self.name, self.version, self.name
                ),
            )
            .file(
                "parameter.rhai",
                &format!("#{{\n    {},\n}}\n", self.parameters.join(",\n    ")),
            )
            .file("template.rhai", &template)
    }
}

fn managed(n: usize) -> &'static ClusterEnv {
    Env::get().managed_n(n)
}

/// Names of the ConfigMaps of `addon` in `namespace` on a cluster.
async fn config_maps(cluster: &Cluster, namespace: &str, addon: &str) -> BTreeSet<String> {
    list_on(cluster, Kind::CONFIG_MAP, Some(namespace))
        .await
        .into_iter()
        .filter(|o| o["metadata"]["labels"][LABEL] == addon)
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// `<addon>-0` … `<addon>-<count - 1>`.
fn numbered(addon: &str, count: usize) -> BTreeSet<String> {
    (0..count).map(|i| format!("{addon}-{i}")).collect()
}

/// Gone, or on its way (a Namespace stays `Terminating` without kube-controller-manager).
fn is_gone(object: Option<&Value>) -> bool {
    object.is_none_or(|o| !o["metadata"]["deletionTimestamp"].is_null())
}

/// There, and not being deleted.
fn is_kept(object: Option<&Value>) -> bool {
    object.is_some_and(|o| o["metadata"]["deletionTimestamp"].is_null())
}

fn cluster_names(record: &Record) -> Vec<&str> {
    record.dispatched.keys().map(String::as_str).collect()
}

/// `Kind namespace/name` of every object of an inventory, in order.
fn refs(inventory: &ClusterInventory) -> Vec<String> {
    inventory
        .objects
        .iter()
        .map(|o| o.object.to_string())
        .collect()
}

/// Panics when an inventory lists an object twice.
fn assert_no_duplicates(record: &Record) {
    for (cluster, inventory) in &record.dispatched {
        let all = refs(inventory);
        let unique: BTreeSet<&String> = all.iter().collect();
        assert_eq!(
            unique.len(),
            all.len(),
            "duplicates on `{cluster}`: {all:?}"
        );
    }
}

/// Panics unless every object of the inventory exists on the cluster with the recorded uid.
async fn assert_recorded_objects_exist(cluster: &Cluster, inventory: &ClusterInventory) {
    for object in &inventory.objects {
        let stored = cluster
            .get(
                &object.object.gvk(),
                object.object.namespace.as_deref(),
                &object.object.name,
            )
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{} is recorded but missing", object.object));
        assert_eq!(
            stored.metadata.uid.as_deref(),
            Some(object.uid.as_str()),
            "{}",
            object.object
        );
    }
}

/// `cluster Kind namespace/name` → resourceVersion of every object the record lists.
async fn resource_versions(
    record: &Record,
    clusters: &BTreeMap<&str, &Cluster>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (name, inventory) in &record.dispatched {
        let cluster = clusters[name.as_str()];
        for object in &inventory.objects {
            let stored = cluster
                .get(
                    &object.object.gvk(),
                    object.object.namespace.as_deref(),
                    &object.object.name,
                )
                .await
                .unwrap()
                .unwrap();
            out.insert(
                format!("{name} {}", object.object),
                stored.metadata.resource_version.unwrap(),
            );
        }
    }
    out
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn run(cmd: &mut assert_cmd::Command) -> std::process::Output {
    cmd.output().unwrap()
}

// ---------------------------------------------------------------------------------- targeting

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_list_targets_exactly_those_clusters() {
    let spread = addon("spread").write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    sb.join("m1", managed(1), &[]).await;
    sb.join("m2", managed(2), &[]).await;

    let output = run(sb.cli().args(["enable", "spread", "--clusters", "m1"]));

    assert!(output.status.success(), "{}", stderr_of(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("deployed by addonctl (direct engine) to 1 cluster: `m1`"),
        "{stdout}"
    );
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    assert_eq!(
        config_maps(&m1, sb.ns(), "spread").await,
        numbered("spread", 2)
    );
    assert!(get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.is_some());
    assert!(
        get_on(&m2, Kind::NAMESPACE, None, sb.ns()).await.is_none(),
        "nothing on m2"
    );
    assert!(
        config_maps(sb.api(), sb.ns(), "spread").await.is_empty(),
        "nothing on local"
    );
    let record = sb.record("spread").await;
    assert_eq!(cluster_names(&record), ["m1"]);
    assert_eq!(
        record.placements,
        [Placement {
            clusters: Some(vec!["m1".to_owned()]),
            cluster_label_selector: None,
            namespace: None,
        }]
    );
    assert_eq!(
        refs(&record.dispatched["m1"]),
        [
            format!("Namespace `{}`", sb.ns()),
            format!("ConfigMap `{}/spread-0`", sb.ns()),
            format!("ConfigMap `{}/spread-1`", sb.ns()),
        ]
    );
    assert!(record.dispatched["m1"].objects.iter().all(|o| o.created));
    assert_eq!(record.pending, None);
    assert_recorded_objects_exist(&m1, &record.dispatched["m1"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_selector_targets_local_and_every_joined_cluster() {
    let spread = addon("spread").write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    sb.join("m1", managed(1), &[("region", "east")]).await;
    sb.join("m2", managed(2), &[]).await;

    let reports = sb.enable("spread", json!({"count": 3})).await.unwrap();

    let outcomes: Vec<(&str, usize)> = reports[0]
        .clusters
        .iter()
        .map(|c| (c.cluster.as_str(), c.applied))
        .collect();
    assert_eq!(outcomes, [("local", 4), ("m1", 4), ("m2", 4)]);
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    for (name, cluster) in [("local", sb.api()), ("m1", &m1), ("m2", &m2)] {
        assert_eq!(
            config_maps(cluster, sb.ns(), "spread").await,
            numbered("spread", 3),
            "{name}"
        );
    }
    let record = sb.record("spread").await;
    assert_eq!(cluster_names(&record), ["local", "m1", "m2"]);
    assert_eq!(
        record.placements,
        [Placement {
            clusters: None,
            cluster_label_selector: Some(BTreeMap::new()),
            namespace: None,
        }],
        "the selector is stored, not the clusters it matched"
    );
    let local_namespace = &record.dispatched["local"].objects[0];
    assert_eq!(local_namespace.object.name, sb.ns());
    assert!(
        !local_namespace.created,
        "the system namespace on the control plane was there before"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_label_selector_targets_the_matching_clusters_and_follows_label_changes() {
    let eastern = addon("eastern")
        .policies(r#"[#{ name: "east", type: "topology", properties: #{ clusterLabelSelector: #{ region: "east" } } }]"#)
        .write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&eastern]);
    sb.join("m1", managed(1), &[("region", "east"), ("tier", "gold")])
        .await;
    sb.join("m2", managed(2), &[("region", "west")]).await;
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;

    sb.enable("eastern", json!({})).await.unwrap();

    assert_eq!(
        config_maps(&m1, sb.ns(), "eastern").await,
        numbered("eastern", 2)
    );
    assert!(get_on(&m2, Kind::NAMESPACE, None, sb.ns()).await.is_none());
    assert!(config_maps(sb.api(), sb.ns(), "eastern").await.is_empty());
    assert_eq!(cluster_names(&sb.record("eastern").await), ["m1"]);

    // m2 moves east, m1 west: the next enable follows the labels.
    sb.cli()
        .args(["cluster", "labels", "m2", "region=east"])
        .assert()
        .success();
    sb.cli()
        .args(["cluster", "labels", "m1", "region=west"])
        .assert()
        .success();
    sb.enable("eastern", json!({})).await.unwrap();

    assert_eq!(
        config_maps(&m2, sb.ns(), "eastern").await,
        numbered("eastern", 2)
    );
    assert!(config_maps(&m1, sb.ns(), "eastern").await.is_empty());
    assert!(
        is_kept(get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.as_ref()),
        "the system namespace is never deleted"
    );
    assert_eq!(cluster_names(&sb.record("eastern").await), ["m2"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_topology_namespace_overrides_the_namespace_of_namespaced_objects() {
    let moved = addon("moved")
        .body(&[
            r#"objects.push(#{ apiVersion: "v1", kind: "Namespace", metadata: #{ name: `${ns}-moved` } });"#,
            r#"objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: "explicit", namespace: ns, labels: labels } });"#,
            r#"objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: "implicit", labels: labels } });"#,
        ])
        .policies(r#"[#{ name: "t", type: "topology", properties: #{ clusters: ["m1"], namespace: `${ns}-moved` } }]"#)
        .write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&moved]);
    sb.join("m1", managed(1), &[]).await;
    let target = format!("{}-moved", sb.ns());
    sb.clean_up_on(managed(1), Kind::NAMESPACE, None, &target);

    sb.enable("moved", json!({})).await.unwrap();

    let m1 = managed(1).admin().await;
    assert_eq!(
        config_maps(&m1, &target, "moved").await,
        BTreeSet::from(["explicit".to_owned(), "implicit".to_owned()])
    );
    assert!(config_maps(&m1, sb.ns(), "moved").await.is_empty());
    let record = sb.record("moved").await;
    assert_eq!(
        refs(&record.dispatched["m1"]),
        [
            format!("Namespace `{target}`"),
            format!("ConfigMap `{target}/explicit`"),
            format!("ConfigMap `{target}/implicit`"),
        ]
    );
    assert_eq!(record.placements[0].namespace.as_deref(), Some(&*target));
}

#[tokio::test(flavor = "multi_thread")]
async fn components_without_topology_go_to_local_only() {
    let homebody = addon("homebody").policies("[]").write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&homebody]);
    sb.join("m1", managed(1), &[]).await;

    let reports = sb.enable("homebody", json!({})).await.unwrap();

    assert_eq!(reports[0].clusters.len(), 1);
    assert_eq!(reports[0].clusters[0].cluster, "local");
    assert_eq!(
        config_maps(sb.api(), sb.ns(), "homebody").await,
        numbered("homebody", 2)
    );
    let m1 = managed(1).admin().await;
    assert!(get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.is_none());
    assert_eq!(cluster_names(&sb.record("homebody").await), ["local"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_of_another_type_is_refused_naming_it_and_pointing_to_vela() {
    let mixed = addon("mixed")
        .component(r#"component("frontend", "webservice", #{ image: "registry.example/web:1" })"#)
        .write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&mixed]);
    sb.join("m1", managed(1), &[]).await;

    let error = sb.enable("mixed", json!({})).await.unwrap_err();

    let message = error.to_string();
    assert!(
        message.contains("component `frontend` has type `webservice`")
            && message.contains("`--engine vela`"),
        "{message}"
    );
    assert!(error.is_user_error(), "{error:?}");
    sb.cli().args(["enable", "mixed"]).assert().code(2).stderr(
        predicate::str::contains("component `frontend` has type `webservice`")
            .and(predicate::str::contains("--engine vela")),
    );
    let m1 = managed(1).admin().await;
    assert!(
        get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.is_none(),
        "nothing was dispatched"
    );
    assert!(config_maps(sb.api(), sb.ns(), "mixed").await.is_empty());
}

// ------------------------------------------------------------------ joining and detaching

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_joined_after_enable_is_covered_by_the_next_enable() {
    let spread = addon("spread").write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    sb.join("m1", managed(1), &[]).await;
    sb.enable("spread", json!({})).await.unwrap();
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    let first = sb.record("spread").await;
    assert_eq!(cluster_names(&first), ["local", "m1"]);
    let clusters = BTreeMap::from([("local", sb.api()), ("m1", &m1)]);
    let before = resource_versions(&first, &clusters).await;

    sb.join("m2", managed(2), &[]).await;
    sb.enable("spread", json!({})).await.unwrap();

    assert_eq!(
        config_maps(&m2, sb.ns(), "spread").await,
        numbered("spread", 2)
    );
    let record = sb.record("spread").await;
    assert_eq!(cluster_names(&record), ["local", "m1", "m2"]);
    assert_eq!(record.placements, first.placements);
    assert_eq!(
        resource_versions(&first, &clusters).await,
        before,
        "the clusters that had it are untouched"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn detaching_a_cluster_deletes_what_addons_applied_there_and_forgets_it() {
    let spread = addon("spread").write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    sb.join("m1", managed(1), &[]).await;
    sb.join("m2", managed(2), &[]).await;
    sb.enable("spread", json!({})).await.unwrap();
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    assert_eq!(config_maps(&m2, sb.ns(), "spread").await.len(), 2);

    let output = run(sb.cli().args(["cluster", "detach", "m2"]));

    assert!(output.status.success(), "{}", stderr_of(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("cluster `m2` detached")
            && stdout.contains("addon `spread`: 2 objects deleted"),
        "{stdout}"
    );
    assert!(config_maps(&m2, sb.ns(), "spread").await.is_empty());
    assert!(
        is_kept(get_on(&m2, Kind::NAMESPACE, None, sb.ns()).await.as_ref()),
        "the system namespace is never deleted"
    );
    assert!(
        sb.get(Kind::SECRET, "m2").await.is_none(),
        "the cluster Secret"
    );
    let record = sb.record("spread").await;
    assert_eq!(cluster_names(&record), ["local", "m1"]);
    assert_eq!(
        config_maps(&m1, sb.ns(), "spread").await,
        numbered("spread", 2)
    );

    // The next enable does not know m2 any more.
    let reports = sb.enable("spread", json!({})).await.unwrap();
    let clusters: Vec<&str> = reports[0]
        .clusters
        .iter()
        .map(|c| c.cluster.as_str())
        .collect();
    assert_eq!(clusters, ["local", "m1"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upgrade_that_drops_a_cluster_deletes_the_objects_there() {
    let spread = addon("spread").write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    sb.join("m1", managed(1), &[]).await;
    sb.join("m2", managed(2), &[]).await;
    sb.enable("spread", json!({"clusters": ["m1", "m2"]}))
        .await
        .unwrap();
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    let uids_on_m1 = sb.record("spread").await.dispatched["m1"].clone();

    let reports = addonctl::apply::upgrade(
        &sb.ctx,
        &UpgradeRequest {
            name: "spread".to_owned(),
            enable: EnableRequest {
                args: args(json!({"clusters": ["m1"]})).into(),
                ..EnableRequest::default()
            },
            ..UpgradeRequest::default()
        },
        &NoopReporter,
    )
    .await
    .unwrap();

    let m2_outcome = reports[0]
        .clusters
        .iter()
        .find(|c| c.cluster == "m2")
        .unwrap();
    assert_eq!((m2_outcome.applied, m2_outcome.deleted), (0, 2));
    assert!(config_maps(&m2, sb.ns(), "spread").await.is_empty());
    assert!(
        is_kept(get_on(&m2, Kind::NAMESPACE, None, sb.ns()).await.as_ref()),
        "the system namespace is never deleted"
    );
    let record = sb.record("spread").await;
    assert_eq!(cluster_names(&record), ["m1"]);
    assert_eq!(
        record.dispatched["m1"].objects, uids_on_m1.objects,
        "m1's objects are untouched"
    );
    assert_eq!(
        config_maps(&m1, sb.ns(), "spread").await,
        numbered("spread", 2)
    );
}

// ------------------------------------------------------------ applying, pruning, removing

#[tokio::test(flavor = "multi_thread")]
async fn a_crd_and_its_custom_resource_are_applied_in_one_enable() {
    // The custom resource comes first in the render: the staged apply must reorder.
    let gadgets = addon("gadgets")
        .body(&[
            "let group = `${ns}.example.com`;",
            r#"objects.push(#{ apiVersion: `${group}/v1`, kind: "Gadget",
                metadata: #{ name: "first", labels: labels }, spec: #{ size: 3 } });"#,
            r#"objects.push(#{ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition",
                metadata: #{ name: `gadgets.${group}` },
                spec: #{ group: group, scope: "Namespaced",
                    names: #{ plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
                    versions: [#{ name: "v1", served: true, storage: true,
                        schema: #{ openAPIV3Schema: #{ type: "object", properties: #{
                            spec: #{ type: "object", properties: #{ size: #{ type: "integer" } } } } } } }] } });"#,
            NAMESPACE,
        ])
        .write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&gadgets]);
    sb.join("m1", managed(1), &[]).await;
    sb.join("m2", managed(2), &[]).await;
    let group = format!("{}.example.com", sb.ns());
    let crd = format!("gadgets.{group}");
    for n in [1, 2] {
        sb.clean_up_on(managed(n), Kind::CUSTOM_RESOURCE_DEFINITION, None, &crd);
    }

    sb.enable("gadgets", json!({"clusters": ["m1", "m2"]}))
        .await
        .unwrap();

    let gvk = kube::core::GroupVersionKind::gvk(&group, "v1", "Gadget");
    let record = sb.record("gadgets").await;
    for n in [1, 2] {
        let cluster = managed(n).admin().await;
        let stored = get_on(&cluster, Kind::CUSTOM_RESOURCE_DEFINITION, None, &crd)
            .await
            .unwrap();
        assert!(
            stored["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True"),
            "{stored:#}"
        );
        let gadget = cluster
            .get(&gvk, Some(sb.ns()), "first")
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no Gadget on managed-{n}"));
        assert_eq!(gadget.data["spec"]["size"], 3);
        let kinds: Vec<&str> = record.dispatched[&format!("m{n}")]
            .objects
            .iter()
            .map(|o| o.object.kind.as_str())
            .collect();
        assert_eq!(kinds, ["Namespace", "CustomResourceDefinition", "Gadget"]);
    }

    // Disable deletes in reverse order: the custom resource, then its CRD.
    addonctl::apply::disable(&sb.ctx.applier(), "gadgets", false, &NoopReporter)
        .await
        .unwrap();
    for n in [1, 2] {
        let cluster = managed(n).admin().await;
        cluster.refresh_discovery();
        let gadget = cluster.get(&gvk, Some(sb.ns()), "first").await.unwrap();
        assert!(gadget.is_none(), "Gadget left on managed-{n}");
        let stored = get_on(&cluster, Kind::CUSTOM_RESOURCE_DEFINITION, None, &crd).await;
        assert!(is_gone(stored.as_ref()), "CRD left on managed-{n}");
    }
}

/// The objects that need no CRD of the addon are applied while its CRDs become Established, not
/// after: here the CRD never does (its kind is taken by another CRD of the group), so the
/// ConfigMaps are there while the enable still waits for it; it then fails, and its record
/// keeps what was applied.
#[tokio::test(flavor = "multi_thread")]
async fn objects_that_need_no_crd_are_applied_while_the_crd_becomes_established() {
    let crd = |plural: &str| {
        format!(
            r#"objects.push(#{{ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition",
                metadata: #{{ name: `{plural}.${{ns}}.example.com` }},
                spec: #{{ group: `${{ns}}.example.com`, scope: "Namespaced",
                    names: #{{ plural: "{plural}", singular: "{plural}", kind: "Widget", listKind: "WidgetList" }},
                    versions: [#{{ name: "v1", served: true, storage: true,
                        schema: #{{ openAPIV3Schema: #{{ type: "object" }} }} }}] }} }});"#
        )
    };
    let gizmos = crd("gizmos");
    let waiting = addon("waiting")
        .body(&[NAMESPACE, CONFIG_MAPS, &gizmos])
        .write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&waiting]);
    sb.join("m1", managed(1), &[]).await;
    let group = format!("{}.example.com", sb.ns());
    for plural in ["widgets", "gizmos"] {
        sb.clean_up_on(
            managed(1),
            Kind::CUSTOM_RESOURCE_DEFINITION,
            None,
            &format!("{plural}.{group}"),
        );
    }
    // Another CRD of the group defines the kind first: the addon's is never Established.
    let m1 = managed(1).admin().await;
    m1.apply(&widget_crd(&group, "widgets"), "").await.unwrap();

    let started = Instant::now();
    let watch = async {
        while started.elapsed() < Duration::from_secs(20) {
            if config_maps(&m1, sb.ns(), "waiting").await == numbered("waiting", 2) {
                let crd = get_on(
                    &m1,
                    Kind::CUSTOM_RESOURCE_DEFINITION,
                    None,
                    &format!("gizmos.{group}"),
                )
                .await
                .unwrap();
                return Some(crd);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        None
    };
    let (enabled, seen) = tokio::join!(sb.enable("waiting", json!({"clusters": ["m1"]})), watch);

    let crd = seen.expect("the ConfigMaps were not applied while the CRD was waited for");
    assert_never_established(&crd, &enabled.unwrap_err().to_string());
    let record = sb.record("waiting").await;
    let kinds: BTreeSet<String> = record.dispatched["m1"]
        .objects
        .iter()
        .filter(|o| !o.uid.is_empty())
        .map(|o| format!("{} {}", o.object.kind, o.object.name))
        .collect();
    for name in numbered("waiting", 2) {
        assert!(kinds.contains(&format!("ConfigMap {name}")), "{kinds:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn upgrade_prunes_on_every_cluster_and_an_unchanged_enable_changes_nothing() {
    let spread = addon("spread").write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    sb.join("m1", managed(1), &[]).await;
    sb.join("m2", managed(2), &[]).await;
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    let clusters = BTreeMap::from([("local", sb.api()), ("m1", &m1), ("m2", &m2)]);
    sb.enable("spread", json!({"count": 3})).await.unwrap();
    let first = sb.record("spread").await;
    let before = resource_versions(&first, &clusters).await;

    let reports = sb.enable("spread", json!({"count": 3})).await.unwrap();

    assert_eq!(before.len(), 12, "{before:#?}");
    assert_eq!(resource_versions(&first, &clusters).await, before);
    // The record itself is written twice by every enable (the pending revision, then the
    // promoted one), with the same content in the end.
    assert_eq!(sb.record("spread").await, first);
    for outcome in &reports[0].clusters {
        assert_eq!(
            (outcome.applied, outcome.deleted, &outcome.error),
            (4, 0, &None),
            "{}",
            outcome.cluster
        );
    }

    let reports = addonctl::apply::upgrade(
        &sb.ctx,
        &UpgradeRequest {
            name: "spread".to_owned(),
            enable: EnableRequest {
                args: args(json!({"count": 1})).into(),
                ..EnableRequest::default()
            },
            ..UpgradeRequest::default()
        },
        &NoopReporter,
    )
    .await
    .unwrap();

    for outcome in &reports[0].clusters {
        assert_eq!(
            (outcome.applied, outcome.deleted),
            (2, 2),
            "{}",
            outcome.cluster
        );
    }
    let record = sb.record("spread").await;
    for (name, cluster) in &clusters {
        assert_eq!(
            config_maps(cluster, sb.ns(), "spread").await,
            numbered("spread", 1),
            "{name}"
        );
        assert_eq!(
            refs(&record.dispatched[*name]),
            [
                format!("Namespace `{}`", sb.ns()),
                format!("ConfigMap `{}/spread-0`", sb.ns()),
            ],
            "{name}"
        );
        assert_eq!(
            record.dispatched[*name].objects[1].uid, first.dispatched[*name].objects[1].uid,
            "{name}: `spread-0` was kept, not re-created"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn disable_deletes_what_it_created_on_every_cluster_and_nothing_else() {
    let spread = addon("spread").write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    sb.join("m1", managed(1), &[]).await;
    sb.join("m2", managed(2), &[]).await;
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    // On m1, someone else made the namespace (with a label of theirs) and an older copy of
    // `spread-0` with the very fields the addon sets: the forced apply takes all of them over.
    apply_as_on(
        &m1,
        "kubectl",
        Kind::NAMESPACE.object(json!({"name": sb.ns(), "labels": {"team": "platform"}})),
        sb.ns(),
    )
    .await;
    let theirs = apply_as_on(
        &m1,
        "kubectl",
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "spread-0", "namespace": sb.ns(), "labels": {LABEL: "legacy"}},
            "data": {"index": "old"},
        }),
        sb.ns(),
    )
    .await;

    let request = EnableRequest {
        reference: "spread".to_owned(),
        adopt: true,
        ..EnableRequest::default()
    };
    addonctl::apply::enable(&sb.ctx, &request, &NoopReporter)
        .await
        .unwrap();

    let record = sb.record("spread").await;
    let created = |cluster: &str| -> Vec<(String, bool)> {
        record.dispatched[cluster]
            .objects
            .iter()
            .map(|o| (o.object.name.clone(), o.created))
            .collect()
    };
    let ns = sb.ns().to_owned();
    assert_eq!(
        created("m1"),
        [
            (ns.clone(), false),
            ("spread-0".to_owned(), false),
            ("spread-1".to_owned(), true)
        ]
    );
    assert_eq!(
        created("m2"),
        [
            (ns.clone(), true),
            ("spread-0".to_owned(), true),
            ("spread-1".to_owned(), true)
        ]
    );
    assert_eq!(created("local")[0], (ns.clone(), false));
    let taken_over = get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "spread-0")
        .await
        .unwrap();
    assert_eq!(taken_over["data"]["index"], "0");
    assert_eq!(
        taken_over["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["manager"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["addonctl"],
        "every field of the old copy was taken over"
    );
    assert_eq!(taken_over["metadata"]["uid"], theirs["metadata"]["uid"]);

    let report = addonctl::apply::disable(&sb.ctx.applier(), "spread", false, &NoopReporter)
        .await
        .unwrap();

    assert!(!report.deleted.is_empty());
    // m1: what existed before survives; what the addon created is gone.
    let survivor = get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "spread-0").await;
    assert_eq!(
        survivor.unwrap()["metadata"]["uid"],
        theirs["metadata"]["uid"]
    );
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "spread-1")
        .await
        .is_none());
    let namespace = get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.unwrap();
    assert!(namespace["metadata"]["deletionTimestamp"].is_null());
    // m2 and local: everything the addon created is gone; the system namespace stays.
    assert!(config_maps(&m2, sb.ns(), "spread").await.is_empty());
    assert!(
        is_kept(get_on(&m2, Kind::NAMESPACE, None, sb.ns()).await.as_ref()),
        "the system namespace is never deleted"
    );
    assert!(config_maps(sb.api(), sb.ns(), "spread").await.is_empty());
    let system = sb.get(Kind::NAMESPACE, sb.ns()).await.unwrap();
    assert!(system["metadata"]["deletionTimestamp"].is_null());
    assert!(sb.get(Kind::SECRET, "addon-record-spread").await.is_none());
    assert!(
        sb.get(Kind::SECRET, "m1").await.is_some(),
        "clusters stay joined"
    );
}

// ---------------------------------------------------------------------------------- health

/// The status of `workloads` once `check` holds for it (polled, at most a minute).
async fn status_once(
    sb: &Sandbox,
    what: &str,
    check: impl Fn(&addonctl::status::Status) -> bool,
) -> addonctl::status::Status {
    let started = Instant::now();
    loop {
        let status = addonctl::status::status(sb.ctx.state(), "workloads", None)
            .await
            .unwrap();
        if check(&status) {
            return status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what}: not within 60 s; last: {:?} {:?}",
            status.phase,
            status.resources
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Panics naming every key of `value` (at any depth) that is not camelCase.
fn assert_camel_case(value: &Value) {
    fn walk(value: &Value, path: &str, bad: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    if key.contains('_') || key.contains('-') || key.starts_with(char::is_uppercase)
                    {
                        bad.push(format!("{path}/{key}"));
                    }
                    walk(item, &format!("{path}/{key}"), bad);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{path}/{i}"), bad);
                }
            }
            _ => {}
        }
    }
    let mut bad = Vec::new();
    walk(value, "", &mut bad);
    assert!(bad.is_empty(), "not camelCase: {bad:?}");
}

/// Kind, name, exists, replicas, ready replicas.
type Row<'a> = (&'a str, &'a str, bool, Option<i64>, Option<i64>);

#[tokio::test(flavor = "multi_thread")]
async fn status_reports_every_cluster_and_resource_and_is_enabled_once_workloads_are_ready() {
    let workloads = addon("workloads").body(&[NAMESPACE, &workloads()]).write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&workloads]);
    sb.join("m1", managed(1), &[]).await;
    sb.join("m2", managed(2), &[]).await;
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    sb.enable("workloads", json!({"clusters": ["m1", "m2"]}))
        .await
        .unwrap();

    // Once the clusters' controllers have taken the workloads in: their pods are held.
    let status = status_once(&sb, "the DaemonSets observed", |status| {
        status
            .resources
            .iter()
            .flat_map(|c| &c.resources)
            .filter(|r| r.kind == "DaemonSet")
            .all(|r| r.replicas.is_some())
    })
    .await;

    assert_eq!(status.phase, Phase::Enabling);
    assert_eq!(
        (status.workload_count, status.ready_workload_count),
        (Some(4), Some(0))
    );
    let clusters: Vec<&str> = status
        .resources
        .iter()
        .map(|c| c.cluster.as_str())
        .collect();
    assert_eq!(clusters, ["m1", "m2"]);
    for cluster in &status.resources {
        assert_eq!(cluster.error, None);
        let rows: Vec<Row> = cluster
            .resources
            .iter()
            .map(|r| {
                (
                    r.kind.as_str(),
                    r.name.as_str(),
                    r.exists,
                    r.replicas,
                    r.ready_replicas,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("Namespace", sb.ns(), true, None, None),
                ("Deployment", "web", true, Some(2), Some(0)),
                // One node: its controller wants one pod.
                ("DaemonSet", "agent", true, Some(1), Some(0)),
            ],
            "{}",
            cluster.cluster
        );
        assert!(cluster
            .resources
            .iter()
            .all(|r| r.creation_timestamp.is_some()));
        assert_eq!(cluster.resources[1].namespace.as_deref(), Some(sb.ns()));
    }

    // m1 fully ready, m2 still held: still enabling.
    release_pods_on(&m1, sb.ns()).await;
    let status = status_once(&sb, "m1 ready", |s| s.ready_workload_count == Some(2)).await;
    assert_eq!(status.phase, Phase::Enabling);
    assert_eq!(
        (status.workload_count, status.ready_workload_count),
        (Some(4), Some(2))
    );
    let m1_daemon_set = &status.resources[0].resources[2];
    assert_eq!(
        (m1_daemon_set.replicas, m1_daemon_set.ready_replicas),
        (Some(1), Some(1))
    );
    let m2_ready: Vec<Option<i64>> = status.resources[1]
        .resources
        .iter()
        .filter(|r| r.kind != "Namespace")
        .map(|r| r.ready_replicas)
        .collect();
    assert_eq!(m2_ready, [Some(0), Some(0)], "m2's pods are held");

    release_pods_on(&m2, sb.ns()).await;
    let status = status_once(&sb, "m2 ready", |s| s.ready_workload_count == Some(4)).await;
    assert_eq!(status.phase, Phase::Enabled);
    assert_eq!(
        (status.workload_count, status.ready_workload_count),
        (Some(4), Some(4))
    );
    let output = run(sb.cli().args(["status", "workloads", "-o", "json"]));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["phase"], "enabled");
    assert_eq!(
        (
            &json["workloadCount"],
            &json["readyWorkloadCount"],
            &json["installedBy"]
        ),
        (&json!(4), &json!(4), &json!("user"))
    );
    assert_camel_case(&json);
    let web_on_m2 = &json["resources"][1]["resources"][1];
    assert_eq!(json["resources"][1]["cluster"], "m2");
    assert_eq!(
        (
            &web_on_m2["name"],
            &web_on_m2["replicas"],
            &web_on_m2["readyReplicas"]
        ),
        (&json!("web"), &json!(2), &json!(2))
    );
    assert!(web_on_m2["creationTimestamp"].is_string(), "{web_on_m2}");
    let text = run(sb.cli().args(["status", "workloads"]));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("phase:     enabled") && text.contains("workloads: 4/4 ready"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn enable_wait_returns_once_every_cluster_is_ready_and_times_out_otherwise() {
    let workloads = addon("workloads").body(&[NAMESPACE, &workloads()]).write();
    // Deploys into the namespace `workloads` made, without making it; its pods wait in a pool of
    // their own, never released.
    let stuck = addon("stuck")
        .body(&[
            HELD_POOL_RHAI,
            r#"objects.push(#{ apiVersion: "apps/v1", kind: "Deployment",
                metadata: #{ name: "stuck", labels: labels },
                spec: #{ replicas: 1, selector: #{ matchLabels: #{ app: "stuck" } },
                    template: #{ metadata: #{ labels: #{ app: "stuck" } },
                        spec: #{ nodeSelector: held_pool(`${ns}-stuck`),
                            containers: [#{ name: "stuck", image: "registry.example/stuck:1" }] } } } });"#,
        ])
        .write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&workloads, &stuck]);
    sb.join("m1", managed(1), &[]).await;
    sb.join("m2", managed(2), &[]).await;
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;

    let mut enable = tokio::process::Command::from(sb.command());
    enable
        .args([
            "enable",
            "workloads",
            "--clusters",
            "m1,m2",
            "--wait",
            "--timeout",
            "120",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = enable.spawn().unwrap();
    // Once both clusters have the workloads, release their pods a little later.
    let started = Instant::now();
    for cluster in [&m1, &m2] {
        while get_on(cluster, Kind::DAEMON_SET, Some(sb.ns()), "agent")
            .await
            .is_none()
        {
            assert!(started.elapsed() < Duration::from_secs(60), "not applied");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    release_pods_on(&m1, sb.ns()).await;
    let m1_ready = Instant::now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        child.try_wait().unwrap().is_none(),
        "returned while m2 was held"
    );
    release_pods_on(&m2, sb.ns()).await;
    let all_ready = Instant::now();
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("enable --wait did not return")
        .unwrap();

    let stderr = stderr_of(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        m1_ready.elapsed() > all_ready.elapsed(),
        "returned before m2 was ready"
    );
    assert!(
        stderr.contains("`workloads` is enabling; waiting for enabled"),
        "{stderr}"
    );
    // Progress per cluster, as it changes.
    for line in [
        "m1: 0/2 workloads ready",
        "m2: 0/2 workloads ready",
        "m1: 2/2 workloads ready",
    ] {
        assert!(
            stderr.contains(&format!("  {line}\n")),
            "no `{line}`:\n{stderr}"
        );
    }
    assert_eq!(
        addonctl::status::status(sb.ctx.state(), "workloads", None)
            .await
            .unwrap()
            .phase,
        Phase::Enabled
    );

    let started = Instant::now();
    let output = run(sb.cli().args([
        "enable",
        "stuck",
        "--clusters",
        "m1,m2",
        "--wait",
        "--timeout",
        "2",
    ]));
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr
            .contains("addon `stuck` is still enabling after 2s (waiting for enabled); not ready:"),
        "{stderr}"
    );
    for cluster in ["m1", "m2"] {
        let why = format!("{cluster}: Deployment {}/stuck 0/1 ready", sb.ns());
        assert!(stderr.contains(&why), "no `{why}`:\n{stderr}");
    }
    // The per-cluster rate limit is a flag; 0 is refused as a usage error.
    let output = run(sb.cli().args(["--qps", "0", "status", "stuck"]));
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    assert!(
        stderr_of(&output).contains("--qps"),
        "{}",
        stderr_of(&output)
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(get_on(&m2, Kind::DEPLOYMENT, Some(sb.ns()), "stuck")
        .await
        .is_some());
}

// -------------------------------------------------------------------------------- failures

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_cluster_fails_alone_and_a_rerun_after_fixing_it_converges() {
    let spread = addon("spread").write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    sb.join("m1", managed(1), &[]).await;
    // `m2` is joined with an endpoint nothing listens on (its API server moved, say).
    let dir = tempfile::tempdir().unwrap();
    let (kubeconfig, server) = Env::get().unreachable_kubeconfig(dir.path());
    let broken = ClusterCredentials::from_kubeconfig(&kubeconfig, None).unwrap();
    sb.api()
        .apply(&broken.to_secret("m2", sb.ns(), &BTreeMap::new()), sb.ns())
        .await
        .unwrap();
    sb.track(managed(2));
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;

    let output = run(sb
        .cli()
        .args(["enable", "spread", "count=3", "--clusters", "m1,m2"])
        .env("ADDONCTL_CLUSTER_TIMEOUT", "3"));

    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("addon `spread`: 1 of 2 clusters failed")
            && stderr.contains(&format!("m2: cannot reach cluster `m2` at {server}")),
        "{stderr}"
    );
    assert!(!stderr.contains(&Env::get().control_plane().admin_token));
    assert_eq!(
        config_maps(&m1, sb.ns(), "spread").await,
        numbered("spread", 3),
        "the reachable cluster was applied"
    );
    let record = sb.record("spread").await;
    assert_eq!(
        record.pending.as_ref().map(|p| p.version.as_str()),
        Some("1.0.0")
    );
    assert_eq!(record.dispatched["m1"].error, None);
    assert_eq!(record.dispatched["m1"].objects.len(), 4);
    let m2_error = record.dispatched["m2"].error.as_deref().unwrap();
    assert!(m2_error.contains("cannot reach cluster `m2`"), "{m2_error}");
    assert!(record.dispatched["m2"].objects.is_empty());
    let status = addonctl::status::status(sb.ctx.state(), "spread", None)
        .await
        .unwrap();
    assert_eq!(status.phase, Phase::Failed);
    let reason = status.reason.unwrap();
    assert!(
        reason.starts_with("m2: cannot reach cluster `m2`"),
        "{reason}"
    );
    let json: Value =
        serde_json::from_slice(&run(sb.cli().args(["status", "spread", "-o", "json"])).stdout)
            .unwrap();
    assert_eq!(json["phase"], "failed");

    // Fixed: joined again with the right kubeconfig; the same command converges.
    sb.cli()
        .args(["cluster", "join", "m2", "--from-kubeconfig"])
        .arg(&managed(2).kubeconfig)
        .assert()
        .success();
    let output = run(sb
        .cli()
        .args(["enable", "spread", "count=3", "--clusters", "m1,m2"])
        .env("ADDONCTL_CLUSTER_TIMEOUT", "3"));
    assert!(output.status.success(), "{}", stderr_of(&output));

    let fixed = sb.record("spread").await;
    assert_eq!(fixed.pending, None);
    assert_eq!(
        fixed.dispatched["m1"], record.dispatched["m1"],
        "no new uids on m1"
    );
    assert_eq!(fixed.dispatched["m2"].error, None);
    assert_eq!(refs(&fixed.dispatched["m2"]), refs(&fixed.dispatched["m1"]));
    assert_no_duplicates(&fixed);
    for cluster in [&m1, &m2] {
        assert_eq!(
            config_maps(cluster, sb.ns(), "spread").await,
            numbered("spread", 3)
        );
    }
    assert_recorded_objects_exist(&m2, &fixed.dispatched["m2"]).await;
    let status = addonctl::status::status(sb.ctx.state(), "spread", None)
        .await
        .unwrap();
    assert_eq!((status.phase, status.reason), (Phase::Enabled, None));
}

/// The fixture `bulk` (kept alive by the first element), a sandbox with the direct engine that
/// offers it, with `managed-1` joined as `m1` and the fault cluster as `m3`, and their admins.
/// Hold [`fault_cluster_lock`].
async fn bulk_on_m1_and_m3() -> (TestAddon, Sandbox, Cluster, Cluster) {
    let fault = Env::get().fault_cluster();
    let bulk = addon("bulk").write();
    let sb = Sandbox::with_kubevela().await.direct().registries(&[&bulk]);
    sb.join("m1", managed(1), &[]).await;
    sb.join("m3", fault, &[]).await;
    (bulk, sb, managed(1).admin().await, fault.admin().await)
}

/// `addonctl enable bulk count=<count> --clusters m1,m3`, killed when dropped.
fn enable_bulk(sb: &Sandbox, count: usize) -> tokio::process::Command {
    let mut enable = tokio::process::Command::from(sb.command());
    enable
        .args([
            "enable",
            "bulk",
            &format!("count={count}"),
            "--clusters",
            "m1,m3",
            "--adopt",
        ])
        .kill_on_drop(true);
    enable
}

#[tokio::test(flavor = "multi_thread")]
async fn an_api_server_stopped_mid_enable_loses_and_duplicates_nothing() {
    const COUNT: usize = 400;
    let _only_us = fault_cluster_lock().await;
    let fault = Env::get().fault_cluster();
    let (_bulk, sb, m1, m3) = bulk_on_m1_and_m3().await;
    let given = json!({"count": COUNT, "clusters": ["m1", "m3"]});

    let mut child = enable_bulk(&sb, COUNT)
        .env("ADDONCTL_CLUSTER_TIMEOUT", "3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stop m3's API server once the ConfigMaps are being applied there.
    let started = Instant::now();
    loop {
        let applied = config_maps(&m3, sb.ns(), "bulk").await.len();
        if applied >= 10 {
            assert!(applied < COUNT, "m3 was done before it could be stopped");
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "enable ended before m3 could be stopped"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "nothing applied to m3"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let stopped = Stopped::apiserver(fault);
    let stopped_at = Instant::now();
    let output = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("enable hangs on a stopped API server")
        .unwrap();
    let took = stopped_at.elapsed();
    stopped.resume().await;

    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("addon `bulk`: 1 of 2 clusters failed") && stderr.contains("\n  m3: "),
        "{stderr}"
    );
    assert!(
        took < Duration::from_secs(30),
        "a stopped cluster cost {took:?}: applies went on after the first timeout"
    );
    let interrupted = sb.record("bulk").await;
    assert_eq!(
        interrupted.pending.as_ref().map(|p| p.version.as_str()),
        Some("1.0.0")
    );
    assert_no_duplicates(&interrupted);
    assert_eq!(interrupted.dispatched["m1"].error, None);
    assert_eq!(interrupted.dispatched["m1"].objects.len(), COUNT + 1);
    let on_m3 = &interrupted.dispatched["m3"];
    assert!(on_m3.error.is_some());
    assert!(
        on_m3.objects.len() >= 10 && on_m3.objects.len() < COUNT + 1,
        "{} objects recorded on m3",
        on_m3.objects.len()
    );
    // Whatever the record lists is there; what it missed (requests cut off by the timeout
    // that the server carried out after it resumed) is picked up by the next run.
    assert_recorded_objects_exist(&m3, on_m3).await;
    assert!(config_maps(&m3, sb.ns(), "bulk")
        .await
        .is_subset(&numbered("bulk", COUNT)));
    let status = addonctl::status::status(sb.ctx.state(), "bulk", None)
        .await
        .unwrap();
    assert_eq!(status.phase, Phase::Failed);
    assert!(status.reason.unwrap().contains("m3: "));

    sb.enable("bulk", given.clone()).await.unwrap();

    let finished = sb.record("bulk").await;
    assert_eq!(finished.pending, None);
    assert_no_duplicates(&finished);
    assert_eq!(
        finished.dispatched["m1"], interrupted.dispatched["m1"],
        "nothing re-created on m1"
    );
    let m3_inventory = &finished.dispatched["m3"];
    assert_eq!(m3_inventory.error, None);
    assert_eq!(m3_inventory.objects.len(), COUNT + 1);
    for before in &on_m3.objects {
        let after = m3_inventory
            .objects
            .iter()
            .find(|o| o.object == before.object)
            .unwrap();
        assert_eq!(after.uid, before.uid, "{} was re-created", before.object);
    }
    assert!(m3_inventory.objects.iter().all(|o| o.created));
    for cluster in [&m1, &m3] {
        assert_eq!(
            config_maps(cluster, sb.ns(), "bulk").await,
            numbered("bulk", COUNT)
        );
    }
    assert_recorded_objects_exist(&m3, m3_inventory).await;
    assert_eq!(
        addonctl::status::status(sb.ctx.state(), "bulk", None)
            .await
            .unwrap()
            .phase,
        Phase::Enabled
    );

    addonctl::apply::disable(&sb.ctx.applier(), "bulk", false, &NoopReporter)
        .await
        .unwrap();
    for cluster in [&m1, &m3] {
        assert!(config_maps(cluster, sb.ns(), "bulk").await.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_commands_keep_kubevela_cluster_secrets_and_never_show_credentials() {
    let western = addon("western")
        .policies(r#"[#{ name: "west", type: "topology", properties: #{ clusterLabelSelector: #{ region: "west" } } }]"#)
        .write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&western]);
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let unb64 = |value: &Value| {
        base64::engine::general_purpose::STANDARD
            .decode(value.as_str().unwrap())
            .unwrap()
    };

    sb.track(managed(1));
    let output = run(sb
        .cli()
        .args(["cluster", "join", "m1", "--from-kubeconfig"])
        .arg(&managed(1).kubeconfig)
        .args(["--labels", "region=east,tier=gold", "-o", "json"]));
    assert!(output.status.success(), "{}", stderr_of(&output));
    let joined: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        joined,
        json!({
            "name": "m1",
            "endpoint": managed(1).server,
            "credentialType": "ServiceAccountToken",
            "labels": {"region": "east", "tier": "gold"},
            "reachable": true,
            "version": server_version(managed(1)).await,
        })
    );
    let secret = sb.get(Kind::SECRET, "m1").await.unwrap();
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(
        secret["metadata"]["labels"],
        json!({
            "cluster.core.oam.dev/cluster-credential-type": "ServiceAccountToken",
            "region": "east",
            "tier": "gold",
        })
    );
    let data = secret["data"].as_object().unwrap();
    assert_eq!(
        data.keys().map(String::as_str).collect::<Vec<_>>(),
        ["ca.crt", "endpoint", "token"]
    );
    assert_eq!(unb64(&data["endpoint"]), managed(1).server.as_bytes());
    assert_eq!(unb64(&data["token"]), managed(1).admin_token.as_bytes());
    assert_eq!(
        unb64(&data["ca.crt"]),
        fs_err::read(&Env::get().ca_file).unwrap()
    );

    // A cluster KubeVela joined with a client certificate is read as it is.
    let dir = tempfile::tempdir().unwrap();
    let (certificate, key) = client_certificate(dir.path());
    sb.track(managed(2));
    sb.api()
        .apply(
            &json!({
                "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": "m2", "labels": {
                    "cluster.core.oam.dev/cluster-credential-type": "X509Certificate",
                    "region": "west",
                }},
                "data": {
                    "endpoint": b64(managed(2).server.as_bytes()),
                    "ca.crt": b64(&fs_err::read(&Env::get().ca_file).unwrap()),
                    "tls.crt": b64(&certificate),
                    "tls.key": b64(&key),
                },
            }),
            sb.ns(),
        )
        .await
        .unwrap();

    let output = run(sb.cli().args(["cluster", "list", "-o", "json"]));
    assert!(output.status.success(), "{}", stderr_of(&output));
    let rows: Value = serde_json::from_slice(&output.stdout).unwrap();
    let versions = [
        server_version(Env::get().control_plane()).await,
        server_version(managed(1)).await,
        server_version(managed(2)).await,
    ];
    let summary: Vec<(String, Value, bool, Value)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                r["credentialType"].clone(),
                r["reachable"].as_bool().unwrap(),
                r["version"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("local".to_owned(), Value::Null, true, json!(versions[0])),
            (
                "m1".to_owned(),
                json!("ServiceAccountToken"),
                true,
                json!(versions[1])
            ),
            (
                "m2".to_owned(),
                json!("X509Certificate"),
                true,
                json!(versions[2])
            ),
        ]
    );
    let text = run(sb.cli().args(["-vvv", "cluster", "list"]));
    for output in [&output, &text] {
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            stderr_of(output)
        );
        for secret in [
            managed(1).admin_token.clone(),
            b64(managed(1).admin_token.as_bytes()),
            b64(&certificate),
            b64(&key),
            "PRIVATE KEY".to_owned(),
        ] {
            assert!(!all.contains(&secret), "credentials in the output:\n{all}");
        }
    }

    // Labels are replaced as a whole and drive the selector.
    sb.cli()
        .args(["cluster", "labels", "m1", "region=west"])
        .assert()
        .success();
    assert_eq!(
        sb.get(Kind::SECRET, "m1").await.unwrap()["metadata"]["labels"],
        json!({
            "cluster.core.oam.dev/cluster-credential-type": "ServiceAccountToken",
            "region": "west",
        })
    );
    sb.cli().args(["enable", "western"]).assert().success();
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    for cluster in [&m1, &m2] {
        assert_eq!(
            config_maps(cluster, sb.ns(), "western").await,
            numbered("western", 2)
        );
    }

    sb.cli()
        .args(["cluster", "detach", "m2"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "addon `western`: 2 objects deleted",
        ));
    assert!(config_maps(&m2, sb.ns(), "western").await.is_empty());
    assert!(sb.get(Kind::SECRET, "m2").await.is_none());
    assert_eq!(cluster_names(&sb.record("western").await), ["m1"]);

    sb.cli()
        .args(["cluster", "join", "local", "--from-kubeconfig"])
        .arg(&managed(1).kubeconfig)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`local` is the control plane"));
    sb.cli()
        .args(["cluster", "detach", "nowhere"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cluster `nowhere` is not joined"));
}

fn client_certificate(dir: &std::path::Path) -> (Vec<u8>, Vec<u8>) {
    let pki = Env::get().dir.join("pki");
    let (key, csr, crt, extensions) = (
        dir.join("client.key"),
        dir.join("client.csr"),
        dir.join("client.crt"),
        dir.join("client.ext"),
    );
    // An X.509 v3 certificate (rustls refuses v1 ones).
    fs_err::write(
        &extensions,
        "basicConstraints = critical, CA:FALSE\n\
         keyUsage = critical, digitalSignature, keyEncipherment\n\
         extendedKeyUsage = clientAuth\n",
    )
    .unwrap();
    let openssl = |args: &[&std::ffi::OsStr]| {
        let output = std::process::Command::new("openssl")
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr_of(&output));
    };
    openssl(&[
        "req".as_ref(),
        "-new".as_ref(),
        "-newkey".as_ref(),
        "rsa:2048".as_ref(),
        "-nodes".as_ref(),
        "-subj".as_ref(),
        "/O=system:masters/CN=x509-admin".as_ref(),
        "-keyout".as_ref(),
        key.as_os_str(),
        "-out".as_ref(),
        csr.as_os_str(),
    ]);
    openssl(&[
        "x509".as_ref(),
        "-req".as_ref(),
        "-in".as_ref(),
        csr.as_os_str(),
        "-CA".as_ref(),
        pki.join("ca.crt").as_os_str(),
        "-CAkey".as_ref(),
        pki.join("ca.key").as_os_str(),
        "-set_serial".as_ref(),
        "0x5eed".as_ref(),
        "-days".as_ref(),
        "1".as_ref(),
        "-extfile".as_ref(),
        extensions.as_os_str(),
        "-out".as_ref(),
        crt.as_os_str(),
    ]);
    (fs_err::read(crt).unwrap(), fs_err::read(key).unwrap())
}

// ------------------------------------------------------------------- interrupted enables

/// The record of `addon`, if there is one.
async fn record_if_any(sb: &Sandbox, addon: &str) -> Option<Record> {
    sb.get(Kind::SECRET, &format!("addon-record-{addon}"))
        .await
        .and_then(|secret| Record::from_secret(&secret))
}

/// Starts `addonctl enable bulk count=<count> --clusters m1,m3` in the background, stops the
/// fault cluster (`m3`) once the pending revision is written and `m3` has some of the objects,
/// waits until `m1` has all of them, then kills the enable (SIGKILL: no cleanup of any kind) and
/// resumes `m3`. Hold [`fault_cluster_lock`].
async fn enable_killed_midway(sb: &Sandbox, count: usize) {
    let fault = Env::get().fault_cluster();
    let m1 = managed(1).admin().await;
    let m3 = fault.admin().await;
    let mut child = enable_bulk(sb, count)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let stopped = loop {
        let pending = record_if_any(sb, "bulk").await.and_then(|r| r.pending);
        let on_m3 = config_maps(&m3, sb.ns(), "bulk").await.len();
        if pending.is_some() && on_m3 >= 10 {
            assert!(on_m3 < count, "m3 was done before it could be stopped");
            break Stopped::apiserver(fault);
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "enable ended before m3 could be stopped"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "nothing applied to m3"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // m3 answers nothing now: the enable waits on it (its timeout is 30 s) while m1 finishes.
    while config_maps(&m1, sb.ns(), "bulk").await.len() < count {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "m1 did not get every object"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "enable did not wait on m3"
    );
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    stopped.resume().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_enable_killed_midway_is_not_enabled_and_disable_deletes_what_it_created() {
    const COUNT: usize = 400;
    let _only_us = fault_cluster_lock().await;
    let (_bulk, sb, m1, m3) = bulk_on_m1_and_m3().await;
    // On m1 the namespace and `bulk-0` were there before, someone else's.
    apply_as_on(
        &m1,
        "kubectl",
        Kind::NAMESPACE.object(json!({"name": sb.ns()})),
        sb.ns(),
    )
    .await;
    let theirs = apply_as_on(
        &m1,
        "kubectl",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "bulk-0", "namespace": sb.ns()}, "data": {"index": "old"}}),
        sb.ns(),
    )
    .await;

    enable_killed_midway(&sb, COUNT).await;

    // Nothing was promoted, but the pending revision lists every object the run meant to apply,
    // with what existed before marked as such.
    let record = sb.record("bulk").await;
    assert!(
        record.dispatched.is_empty(),
        "{:?}",
        record.dispatched.keys()
    );
    let pending = record.pending.clone().unwrap();
    assert_eq!(pending.version, "1.0.0");
    // Per cluster: how many objects are planned, and which of them are not addonctl's.
    let planned: BTreeMap<&str, (usize, Vec<String>)> = pending
        .dispatched
        .iter()
        .map(|(cluster, objects)| {
            let theirs = objects
                .iter()
                .filter(|o| !o.created)
                .map(|o| o.object.to_string())
                .collect();
            (cluster.as_str(), (objects.len(), theirs))
        })
        .collect();
    let ns = sb.ns();
    assert_eq!(
        planned,
        BTreeMap::from([
            (
                "m1",
                (
                    COUNT + 1,
                    vec![
                        format!("Namespace `{ns}`"),
                        format!("ConfigMap `{ns}/bulk-0`")
                    ]
                )
            ),
            ("m3", (COUNT + 1, vec![])),
        ])
    );
    assert_eq!(
        pending.dispatched["m3"][COUNT].object.to_string(),
        format!("ConfigMap `{ns}/bulk-{}`", COUNT - 1)
    );
    let status = addonctl::status::status(sb.ctx.state(), "bulk", None)
        .await
        .unwrap();
    assert_eq!(status.phase, Phase::Enabling);
    assert!(
        status
            .notes
            .iter()
            .any(|n| n.contains("revision 1.0.0 is pending")
                && n.contains("run `addonctl enable bulk` again")),
        "{:?}",
        status.notes
    );
    let on_m3 = &status.resources[1];
    assert_eq!(on_m3.cluster, "m3");
    assert_eq!(
        on_m3.resources.len(),
        COUNT + 1,
        "the planned objects are shown"
    );
    let text = run(sb.cli().args(["status", "bulk"]));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("phase:     enabling")
            && text.contains("note:      revision 1.0.0 is pending"),
        "{text}"
    );
    let listed = run(sb.cli().args(["list", "-o", "json"]));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let row = listed["addons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "bulk")
        .unwrap();
    assert_eq!(
        (&row["phase"], &row["installedVersion"]),
        (&json!("enabling"), &json!("1.0.0"))
    );

    let output = run(sb.cli().args(["disable", "bulk"]));

    assert!(output.status.success(), "{}", stderr_of(&output));
    // m1: what the run created is gone, what was there before is not.
    let left: Vec<Value> = list_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()))
        .await
        .into_iter()
        .filter(|o| o["metadata"]["name"].as_str().unwrap().starts_with("bulk-"))
        .collect();
    assert_eq!(left.len(), 1, "{left:#?}");
    assert_eq!(left[0]["metadata"]["uid"], theirs["metadata"]["uid"]);
    let namespace = get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.unwrap();
    assert!(namespace["metadata"]["deletionTimestamp"].is_null());
    // m3: everything the run applied before it stopped (and whatever the server carried out
    // after it resumed) is gone, the namespace it created too.
    assert!(config_maps(&m3, sb.ns(), "bulk").await.is_empty());
    assert!(
        is_kept(get_on(&m3, Kind::NAMESPACE, None, sb.ns()).await.as_ref()),
        "the system namespace is never deleted"
    );
    assert!(record_if_any(&sb, "bulk").await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_next_enable_finishes_an_interrupted_one_and_prunes_what_it_no_longer_renders() {
    const COUNT: usize = 400;
    let _only_us = fault_cluster_lock().await;
    let (_bulk, sb, m1, m3) = bulk_on_m1_and_m3().await;
    enable_killed_midway(&sb, COUNT).await;
    let interrupted = sb.record("bulk").await;
    let applied_on_m3 = config_maps(&m3, sb.ns(), "bulk").await;
    assert!(applied_on_m3.len() >= 10 && applied_on_m3.len() < COUNT);

    // A smaller enable: the objects the interrupted run applied beyond it are pruned.
    sb.enable("bulk", json!({"count": 5, "clusters": ["m1", "m3"]}))
        .await
        .unwrap();

    let finished = sb.record("bulk").await;
    assert_eq!(finished.pending, None);
    assert_no_duplicates(&finished);
    for (name, cluster) in [("m1", &m1), ("m3", &m3)] {
        assert_eq!(
            config_maps(cluster, sb.ns(), "bulk").await,
            numbered("bulk", 5),
            "{name}"
        );
        let inventory = &finished.dispatched[name];
        assert_eq!(inventory.objects.len(), 6, "{name}");
        assert!(inventory
            .objects
            .iter()
            .all(|o| o.created && !o.uid.is_empty()));
        assert_recorded_objects_exist(cluster, inventory).await;
    }
    // What the interrupted run applied on m1 was kept, not re-created.
    let m1_uid = |record: &Record| {
        let object = &record.dispatched["m1"].objects[1];
        (object.object.name.clone(), object.uid.clone())
    };
    let before = get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "bulk-0")
        .await
        .unwrap();
    assert_eq!(
        m1_uid(&finished),
        (
            "bulk-0".to_owned(),
            before["metadata"]["uid"].as_str().unwrap().to_owned()
        )
    );
    assert!(interrupted.dispatched.is_empty());
    assert_eq!(
        addonctl::status::status(sb.ctx.state(), "bulk", None)
            .await
            .unwrap()
            .phase,
        Phase::Enabled
    );
}

// ----------------------------------------------------------------- namespaces, labels, sharing

#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_the_engine_creates_is_recorded_and_deleted_and_one_that_existed_is_kept() {
    // ConfigMaps only: they go to the system namespace, which the addon does not render.
    let loose = addon("loose").body(&[CONFIG_MAPS]).write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&loose]);
    sb.join("m1", managed(1), &[]).await;
    sb.join("m2", managed(2), &[]).await;
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    apply_as_on(
        &m2,
        "kubectl",
        Kind::NAMESPACE.object(json!({"name": sb.ns()})),
        sb.ns(),
    )
    .await;

    sb.enable("loose", json!({"clusters": ["m1", "m2"]}))
        .await
        .unwrap();

    let record = sb.record("loose").await;
    let namespace = format!("Namespace `{}`", sb.ns());
    assert_eq!(refs(&record.dispatched["m1"])[0], namespace);
    assert!(record.dispatched["m1"].objects[0].created);
    assert!(
        !refs(&record.dispatched["m2"]).contains(&namespace),
        "a namespace that existed is not recorded"
    );
    // Every dispatched object carries the addon's name, so a label selector finds them.
    let labelled = m1
        .list(
            &Kind::CONFIG_MAP.gvk(),
            Some(sb.ns()),
            "addons.oam.dev/name=loose",
        )
        .await
        .unwrap();
    assert_eq!(labelled.len(), 2);
    let stored_namespace = get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.unwrap();
    assert!(stored_namespace["metadata"]["labels"]
        .get("addons.oam.dev/name")
        .is_none());
    let before = resource_versions(&record, &BTreeMap::from([("m1", &m1), ("m2", &m2)])).await;
    sb.enable("loose", json!({"clusters": ["m1", "m2"]}))
        .await
        .unwrap();
    assert_eq!(
        sb.record("loose").await,
        record,
        "an unchanged enable records the same"
    );
    assert_eq!(
        resource_versions(&record, &BTreeMap::from([("m1", &m1), ("m2", &m2)])).await,
        before,
        "and changes nothing"
    );

    addonctl::apply::disable(&sb.ctx.applier(), "loose", false, &NoopReporter)
        .await
        .unwrap();

    assert!(
        is_kept(get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.as_ref()),
        "the system namespace is never deleted"
    );
    let kept = get_on(&m2, Kind::NAMESPACE, None, sb.ns()).await.unwrap();
    assert!(kept["metadata"]["deletionTimestamp"].is_null());
    assert!(config_maps(&m2, sb.ns(), "loose").await.is_empty());
}

/// The Namespace, a ConfigMap `shared` both fixtures render, and one of the addon's own.
const SHARED: &str = r#"objects.push(#{ apiVersion: "v1", kind: "ConfigMap",
    metadata: #{ name: "shared", labels: #{ team: "platform" } }, data: #{ owner: "everyone" } });
objects.push(#{ apiVersion: "v1", kind: "ConfigMap",
    metadata: #{ name: `${addon}-own`, labels: labels }, data: #{ owner: addon } });"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_object_two_addons_render_is_deleted_only_with_the_last_of_them() {
    let alpha = addon("alpha").body(&[NAMESPACE, SHARED]).write();
    let beta = addon("beta").body(&[NAMESPACE, SHARED]).write();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&alpha, &beta]);
    sb.join("m1", managed(1), &[]).await;
    let m1 = managed(1).admin().await;
    sb.enable("alpha", json!({"clusters": ["m1"]}))
        .await
        .unwrap();
    sb.enable("beta", json!({"clusters": ["m1"]}))
        .await
        .unwrap();
    let shared = get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "shared")
        .await
        .unwrap();
    let created = |record: &Record| -> Vec<(String, bool)> {
        record.dispatched["m1"]
            .objects
            .iter()
            .map(|o| (o.object.name.clone(), o.created))
            .collect()
    };
    let ns = sb.ns().to_owned();
    assert_eq!(
        created(&sb.record("beta").await),
        [
            (ns.clone(), true),
            ("shared".to_owned(), true),
            ("beta-own".to_owned(), true)
        ],
        "beta takes over what alpha created as created"
    );

    let output = run(sb.cli().args(["disable", "alpha", "-o", "json"]));

    assert!(output.status.success(), "{}", stderr_of(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let kept: Vec<&str> = report["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(kept, ["shared", ns.as_str()]);
    let reasons: Vec<&str> = report["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        ["addon `beta` has it too", "addon `beta` has it too"]
    );
    let kept = get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "shared")
        .await
        .unwrap();
    assert_eq!(kept["metadata"]["uid"], shared["metadata"]["uid"]);
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "alpha-own")
        .await
        .is_none());
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "beta-own")
        .await
        .is_some());
    let namespace = get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.unwrap();
    assert!(namespace["metadata"]["deletionTimestamp"].is_null());

    addonctl::apply::disable(&sb.ctx.applier(), "beta", false, &NoopReporter)
        .await
        .unwrap();

    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "shared")
        .await
        .is_none());
    assert!(
        is_kept(get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.as_ref()),
        "the system namespace is never deleted"
    );
}

/// The labels of a cluster Secret, its credential-type label aside.
async fn cluster_labels(sb: &Sandbox, name: &str) -> Value {
    let secret = sb.get(Kind::SECRET, name).await.unwrap();
    let mut labels = secret["metadata"]["labels"].clone();
    labels
        .as_object_mut()
        .unwrap()
        .remove("cluster.core.oam.dev/cluster-credential-type");
    labels
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endpoint_joined_under_another_name_is_refused_and_a_rejoin_rotates() {
    let sb = Sandbox::with_kubevela().await;
    sb.join("m1", managed(1), &[("region", "west")]).await;

    // Through the command line: a user error naming the other cluster and what to do.
    let output = run(sb
        .cli()
        .args(["cluster", "join", "m2", "--from-kubeconfig"])
        .arg(&managed(1).kubeconfig));
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains("already joined as cluster `m1`"),
        "{stderr}"
    );
    assert!(stderr.contains("addonctl cluster detach m1"), "{stderr}");
    assert!(sb.get(Kind::SECRET, "m2").await.is_none());

    // The same server written differently (a trailing slash) is the same endpoint.
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("slash.kubeconfig");
    let text = fs_err::read_to_string(&managed(1).kubeconfig).unwrap();
    assert!(text.contains(&managed(1).server));
    fs_err::write(
        &kubeconfig,
        text.replace(&managed(1).server, &format!("{}/", managed(1).server)),
    )
    .unwrap();
    let refused = addonctl::apply::clusters::join_with(
        &sb.ctx.applier(),
        "m2",
        &kubeconfig,
        None,
        &addonctl::apply::clusters::JoinLabels::Keep,
    )
    .await;
    match refused {
        Err(addonctl::Error::EndpointAlreadyJoined { other, name, .. }) => {
            assert_eq!((other.as_str(), name.as_str()), ("m1", "m2"));
        }
        other => panic!("expected EndpointAlreadyJoined, got {other:?}"),
    }
    assert!(sb.get(Kind::SECRET, "m2").await.is_none());

    // Re-joining the same name (credential rotation) is fine, and another server is too.
    let output = run(sb
        .cli()
        .args(["cluster", "join", "m1", "--from-kubeconfig"])
        .arg(&kubeconfig));
    assert!(output.status.success(), "{}", stderr_of(&output));
    sb.track(managed(2));
    let output = run(sb
        .cli()
        .args(["cluster", "join", "m2", "--from-kubeconfig"])
        .arg(&managed(2).kubeconfig));
    assert!(output.status.success(), "{}", stderr_of(&output));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejoin_keeps_labels_unless_given_or_reset() {
    let sb = Sandbox::with_kubevela().await;
    sb.join("m1", managed(1), &[("region", "west"), ("tier", "gold")])
        .await;
    let join = |extra: &[&str]| {
        let mut cmd = sb.cli();
        cmd.args(["cluster", "join", "m1", "--from-kubeconfig"])
            .arg(&managed(1).kubeconfig)
            .args(extra);
        run(&mut cmd)
    };

    let output = join(&["-o", "json"]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let row: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(row["labels"], json!({"region": "west", "tier": "gold"}));
    assert_eq!(
        cluster_labels(&sb, "m1").await,
        json!({"region": "west", "tier": "gold"})
    );

    let output = join(&["--labels", "a=b"]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert_eq!(cluster_labels(&sb, "m1").await, json!({"a": "b"}));

    let output = join(&["--labels", "a=c", "--reset-labels"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    assert_eq!(cluster_labels(&sb, "m1").await, json!({"a": "b"}));

    let output = join(&["--reset-labels"]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert_eq!(cluster_labels(&sb, "m1").await, json!({}));
}
