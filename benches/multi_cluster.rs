//! Multi-cluster benchmark (DESIGN §8): enable an addon of 50 objects (a Namespace, ConfigMaps,
//! Services, ServiceAccounts and Roles) with the direct engine to every managed API server of the
//! environment, then enable it again unchanged, then disable it. Prints wall times, API calls per
//! object per cluster (goal: ≤ 5 s, one apply per object per cluster) and, for the unchanged
//! enable, write requests and objects changed (goal: 0 changed). The control plane's calls are
//! counted apart from the managed clusters'.
//!
//! Needs the environment of `scripts/k8s/up.sh --managed 10` (`ADDONCTL_TEST_ENV`);
//! `scripts/bench-multi-cluster.sh` starts one of its own and stops it afterwards.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_precision_loss
)]

#[path = "support/env.rs"]
mod env;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use addonctl::apply::direct::ClusterOutcome;
use addonctl::cluster::Cluster;
use addonctl::context::EngineChoice;
use addonctl::context::NoopReporter;
use addonctl::context::{Context, Settings};
use addonctl::plan::EnableRequest;
use env::{connect, median, EnvFile};
use kube::core::GroupVersionKind;

/// Objects per addon: 1 Namespace + 49 namespaced objects.
const OBJECTS: usize = 50;
/// Rounds, each in fresh namespaces.
const ROUNDS: usize = 3;
/// The label the benchmark's clusters are joined with; the addon selects it.
const SELECTOR: (&str, &str) = ("bench", "multi-cluster");

/// `template.rhai` of the benchmark addon: objects spread over four kinds in the namespace named
/// after the system namespace, on every cluster labelled `bench=multi-cluster`.
fn template() -> String {
    let per_kind = (OBJECTS - 1) / 4;
    let config_maps = OBJECTS - 1 - 3 * per_kind;
    format!(
        r#"let ns = context.namespace;
let labels = #{{ "app.kubernetes.io/name": "fleet", "app.kubernetes.io/part-of": "bench" }};
let objects = [#{{ apiVersion: "v1", kind: "Namespace", metadata: #{{ name: ns, labels: labels }} }}];
for i in 0..{config_maps} {{
    objects.push(#{{ apiVersion: "v1", kind: "ConfigMap", metadata: #{{ name: `fleet-${{i}}`, labels: labels }},
        data: #{{ index: `${{i}}`, "settings.yaml": "level: info\nretries: 3\n" }} }});
}}
for i in 0..{per_kind} {{
    objects.push(#{{ apiVersion: "v1", kind: "Service", metadata: #{{ name: `fleet-${{i}}`, labels: labels }},
        spec: #{{ selector: #{{ app: `fleet-${{i}}` }}, ports: [#{{ name: "http", protocol: "TCP", port: 80, targetPort: 8080 }}] }} }});
    objects.push(#{{ apiVersion: "v1", kind: "ServiceAccount", metadata: #{{ name: `fleet-${{i}}`, labels: labels }} }});
    objects.push(#{{ apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: #{{ name: `fleet-${{i}}`, labels: labels }},
        rules: [#{{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] }}] }});
}}
#{{ output: application(#{{
    components: [k8s_objects("fleet", objects)],
    policies: [#{{ name: "fleet", type: "topology",
        properties: #{{ clusterLabelSelector: #{{ "{key}": "{value}" }} }} }}],
}}) }}
"#,
        key = SELECTOR.0,
        value = SELECTOR.1,
    )
}

fn write_addon(dir: &Path) {
    fs_err::write(
        dir.join("metadata.yaml"),
        "name: fleet\nversion: 1.0.0\ndescription: 50 objects for every cluster\n",
    )
    .unwrap();
    fs_err::write(dir.join("template.rhai"), template()).unwrap();
}

/// `cluster Kind namespace/name` → resourceVersion of everything the record lists.
async fn resource_versions(
    ctx: &Context,
    clusters: &BTreeMap<String, Cluster>,
) -> BTreeMap<String, String> {
    let installed = ctx.state().installed().await.unwrap();
    let record = installed["fleet"].record.clone().unwrap();
    let reads = record.dispatched.iter().flat_map(|(name, inventory)| {
        inventory.objects.iter().map(move |o| async move {
            let stored = clusters[name]
                .get(
                    &o.object.gvk(),
                    o.object.namespace.as_deref(),
                    &o.object.name,
                )
                .await
                .unwrap()
                .unwrap();
            (
                format!("{name} {}", o.object),
                stored.metadata.resource_version.unwrap_or_default(),
            )
        })
    });
    futures::future::join_all(reads).await.into_iter().collect()
}

struct Figures {
    wall: Duration,
    managed_requests: u64,
    managed_writes: u64,
    clusters: usize,
    control_plane_requests: u64,
    control_plane_writes: u64,
    failed: usize,
}

fn figures(wall: Duration, outcomes: &[ClusterOutcome], ctx: &Context) -> Figures {
    Figures {
        wall,
        managed_requests: outcomes.iter().map(|o| o.requests).sum(),
        managed_writes: outcomes.iter().map(|o| o.writes).sum(),
        clusters: outcomes.len(),
        control_plane_requests: ctx.cluster.counters().requests(),
        control_plane_writes: ctx.cluster.counters().writes(),
        failed: outcomes.iter().filter(|o| o.error.is_some()).count(),
    }
}

impl Figures {
    fn per_object(&self, count: u64) -> f64 {
        count as f64 / (OBJECTS * self.clusters.max(1)) as f64
    }
}

#[tokio::main]
async fn main() {
    let env = EnvFile::load("scripts/bench-multi-cluster.sh");
    let control_plane = env.control_plane();
    let managed = env.managed(1);
    let addon = tempfile::tempdir().unwrap();
    write_addon(addon.path());
    let mut readers = BTreeMap::new();
    for cluster in &managed {
        readers.insert(cluster.name.clone(), connect(&cluster.kubeconfig).await);
    }
    println!(
        "multi-cluster benchmark: addon of {OBJECTS} objects, direct engine, {} managed API servers, {ROUNDS} rounds",
        managed.len()
    );

    let mut first_walls = Vec::new();
    let mut calls_per_object = Vec::new();
    let mut applies_per_object = Vec::new();
    let mut unchanged_changed = Vec::new();
    for round in 0..ROUNDS {
        let namespace = format!("bench-mc-{}-{round}", std::process::id());
        let context = || async {
            let settings = Settings {
                engine: EngineChoice::Direct,
                ..Settings::new(&namespace)
            };
            Context::with_cluster(&settings, connect(&control_plane.kubeconfig).await).unwrap()
        };
        let setup = context().await;
        for cluster in &managed {
            addonctl::apply::clusters::join(
                &setup.applier(),
                &cluster.name,
                &cluster.kubeconfig,
                None,
                &BTreeMap::from([(SELECTOR.0.to_owned(), SELECTOR.1.to_owned())]),
            )
            .await
            .unwrap();
        }
        let request = EnableRequest {
            reference: addon.path().display().to_string(),
            ..EnableRequest::default()
        };

        let ctx = context().await;
        let started = Instant::now();
        let reports = addonctl::apply::enable(&ctx, &request, &NoopReporter)
            .await
            .unwrap();
        let first = figures(started.elapsed(), &reports[0].clusters, &ctx);
        let applied: usize = reports[0].clusters.iter().map(|c| c.applied).sum();
        println!(
            "round {round}: enable: {:.0} ms wall, {} clusters ({} failed), {applied} objects applied; managed clusters: {} requests ({:.2} per object per cluster), {} writes ({:.2} per object per cluster); control plane: {} requests, {} writes",
            first.wall.as_secs_f64() * 1e3,
            first.clusters,
            first.failed,
            first.managed_requests,
            first.per_object(first.managed_requests),
            first.managed_writes,
            first.per_object(first.managed_writes),
            first.control_plane_requests,
            first.control_plane_writes,
        );
        first_walls.push(first.wall.as_secs_f64());
        calls_per_object.push(first.per_object(first.managed_requests));
        applies_per_object.push(first.per_object(first.managed_writes));
        let before = resource_versions(&ctx, &readers).await;

        let ctx = context().await;
        let started = Instant::now();
        let reports = addonctl::apply::enable(&ctx, &request, &NoopReporter)
            .await
            .unwrap();
        let again = figures(started.elapsed(), &reports[0].clusters, &ctx);
        let after = resource_versions(&ctx, &readers).await;
        let changed = before
            .iter()
            .filter(|(k, v)| after.get(*k) != Some(*v))
            .count();
        println!(
            "round {round}: re-enable unchanged: {:.0} ms wall; managed clusters: {} requests, {} write requests (server-side apply, {:.2} per object per cluster), {changed} of {} objects changed; control plane: {} requests, {} writes",
            again.wall.as_secs_f64() * 1e3,
            again.managed_requests,
            again.managed_writes,
            again.per_object(again.managed_writes),
            before.len(),
            again.control_plane_requests,
            again.control_plane_writes,
        );
        unchanged_changed.push(changed as f64);

        let ctx = context().await;
        let started = Instant::now();
        addonctl::apply::disable(&ctx.applier(), "fleet", true, &NoopReporter)
            .await
            .unwrap();
        println!(
            "round {round}: disable: {:.0} ms wall",
            started.elapsed().as_secs_f64() * 1e3
        );
        let namespace_gvk = GroupVersionKind::gvk("", "v1", "Namespace");
        for cluster in readers.values() {
            let _ = cluster.delete(&namespace_gvk, None, &namespace).await;
        }
        let _ = ctx.cluster.delete(&namespace_gvk, None, &namespace).await;
    }
    println!(
        "median over {ROUNDS} rounds: enable {:.0} ms wall (goal ≤ 5000 ms), {:.2} API calls and {:.2} applies per object per cluster (goal: 1 apply), re-enable unchanged: {} objects changed (goal 0)",
        median(&first_walls) * 1e3,
        median(&calls_per_object),
        median(&applies_per_object),
        median(&unchanged_changed),
    );
}
