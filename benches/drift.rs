//! Drift benchmark: an addon of 50 objects (a Namespace, ConfigMaps, Services, ServiceAccounts
//! and Roles) enabled with the direct engine on every managed API server of the environment,
//! then checked for drift: with a cold cache, warm and unchanged (goal: one metadata list per
//! kind and namespace per cluster, no full read), right after a hand edit of one object
//! (detection latency), and corrected. Prints wall times, requests and full reads.
//!
//! Needs the environment of `scripts/k8s/up.sh --managed 3` (`ADDONCTL_TEST_ENV`).
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
use std::time::{Duration, Instant};

use addonctl::context::{Context, EngineChoice, NoopReporter, Settings};
use addonctl::drift::engine::{check_with, desired_objects, record};
use addonctl::drift::{DriftCache, DriftSpec, Policy, Report};
use addonctl::plan::EnableRequest;
use env::{connect, median, EnvFile};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

/// Objects per cluster: 1 Namespace + 49 namespaced objects.
const OBJECTS: usize = 50;
/// Warm, unchanged checks measured.
const WARM_ROUNDS: usize = 5;
const SELECTOR: (&str, &str) = ("bench", "drift");

fn template() -> String {
    let per_kind = (OBJECTS - 1) / 4;
    let config_maps = OBJECTS - 1 - 3 * per_kind;
    format!(
        r#"let ns = context.namespace;
let labels = #{{ "app.kubernetes.io/part-of": "bench" }};
let objects = [#{{ apiVersion: "v1", kind: "Namespace", metadata: #{{ name: ns, labels: labels }} }}];
for i in 0..{config_maps} {{
    objects.push(#{{ apiVersion: "v1", kind: "ConfigMap", metadata: #{{ name: `drift-${{i}}`, labels: labels }},
        data: #{{ index: `${{i}}`, "settings.yaml": "level: info\nretries: 3\n" }} }});
}}
for i in 0..{per_kind} {{
    objects.push(#{{ apiVersion: "v1", kind: "Service", metadata: #{{ name: `drift-${{i}}`, labels: labels }},
        spec: #{{ selector: #{{ app: `drift-${{i}}` }}, ports: [#{{ name: "http", protocol: "TCP", port: 80, targetPort: 8080 }}] }} }});
    objects.push(#{{ apiVersion: "v1", kind: "ServiceAccount", metadata: #{{ name: `drift-${{i}}`, labels: labels }} }});
    objects.push(#{{ apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: #{{ name: `drift-${{i}}`, labels: labels }},
        rules: [#{{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] }}] }});
}}
#{{ output: application(#{{
    components: [k8s_objects("driftbench", objects)],
    policies: [#{{ name: "fleet", type: "topology",
        properties: #{{ clusterLabelSelector: #{{ "{key}": "{value}" }} }} }}],
}}) }}
"#,
        key = SELECTOR.0,
        value = SELECTOR.1,
    )
}

fn line(what: &str, wall: Duration, report: &Report) {
    println!(
        "{what}: {:.1} ms wall, {} objects on {} clusters, {} requests ({:.2} per cluster), {} full reads, {} drifted, {} corrected",
        wall.as_secs_f64() * 1e3,
        report.objects,
        report.objects / OBJECTS.max(1),
        report.requests,
        report.requests as f64 / (report.objects / OBJECTS).max(1) as f64,
        report.full_reads,
        report.drifts.len(),
        report.corrected.len(),
    );
}

#[tokio::main]
async fn main() {
    let env = EnvFile::load("scripts/k8s/up.sh --managed 3");
    let control_plane = env.control_plane();
    let managed = env.managed(1);
    let registry = tempfile::tempdir().unwrap();
    let addon = registry.path().join("driftbench");
    fs_err::create_dir_all(&addon).unwrap();
    fs_err::write(
        addon.join("metadata.yaml"),
        "name: driftbench\nversion: 1.0.0\ndescription: 50 objects for every cluster\n",
    )
    .unwrap();
    fs_err::write(addon.join("template.rhai"), template()).unwrap();
    let namespace = format!("bench-drift-{}", std::process::id());
    let settings = Settings {
        engine: EngineChoice::Direct,
        registry_dirs: vec![registry.path().to_path_buf()],
        ..Settings::new(&namespace)
    };
    let ctx = Context::with_cluster(&settings, connect(&control_plane.kubeconfig).await).unwrap();
    for cluster in &managed {
        addonctl::apply::clusters::join(
            &ctx.applier(),
            &cluster.name,
            &cluster.kubeconfig,
            None,
            &BTreeMap::from([(SELECTOR.0.to_owned(), SELECTOR.1.to_owned())]),
        )
        .await
        .unwrap();
    }
    let request = EnableRequest {
        reference: "driftbench".to_owned(),
        ..EnableRequest::default()
    };
    addonctl::apply::enable(&ctx, &request, &NoopReporter)
        .await
        .unwrap();
    println!(
        "drift benchmark: addon of {OBJECTS} objects, direct engine, {} managed API servers",
        managed.len()
    );
    let started = Instant::now();
    let stored = record(&ctx, "driftbench").await.unwrap();
    let desired = desired_objects(&ctx, &stored).await.unwrap();
    println!(
        "record + re-render of the desired objects (once per revision): {:.1} ms wall",
        started.elapsed().as_secs_f64() * 1e3
    );
    let warn = DriftSpec {
        policy: Policy::Warn,
        exclusions: Vec::new(),
    };
    let mut cache = DriftCache::new();
    let started = Instant::now();
    let cold = check_with(&ctx, &stored, &desired, &warn, &mut cache)
        .await
        .unwrap();
    line("cold cache", started.elapsed(), &cold);

    let mut walls: Vec<f64> = Vec::new();
    for round in 0..WARM_ROUNDS {
        let started = Instant::now();
        let warm = check_with(&ctx, &stored, &desired, &warn, &mut cache)
            .await
            .unwrap();
        walls.push(started.elapsed().as_secs_f64());
        if round == WARM_ROUNDS - 1 {
            line(
                "warm cache, unchanged (last round)",
                started.elapsed(),
                &warm,
            );
        }
    }
    println!(
        "warm cache, unchanged: median {:.1} ms over {WARM_ROUNDS} rounds",
        median(&walls) * 1e3
    );

    // A hand edit on the first managed cluster.
    let first = connect(&managed[0].kubeconfig).await;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
    let api: Api<DynamicObject> =
        Api::namespaced_with(first.client().clone(), &namespace, &resource);
    let params = PatchParams {
        field_manager: Some("kubectl-edit".to_owned()),
        ..PatchParams::default()
    };
    api.patch(
        "drift-0",
        &params,
        &Patch::Merge(json!({"data": {"index": "edited"}})),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let found = check_with(&ctx, &stored, &desired, &warn, &mut cache)
        .await
        .unwrap();
    line("after one hand edit (detection)", started.elapsed(), &found);
    assert_eq!(found.drifts.len(), 1, "{:?}", found.drifts);
    let correct = DriftSpec {
        policy: Policy::Correct,
        exclusions: Vec::new(),
    };
    let started = Instant::now();
    let corrected = check_with(&ctx, &stored, &desired, &correct, &mut cache)
        .await
        .unwrap();
    line("correction", started.elapsed(), &corrected);

    addonctl::apply::disable(&ctx.applier(), "driftbench", true, &NoopReporter)
        .await
        .unwrap();
    let namespace_gvk = GroupVersionKind::gvk("", "v1", "Namespace");
    for cluster in &managed {
        let _ = connect(&cluster.kubeconfig)
            .await
            .delete(&namespace_gvk, None, &namespace)
            .await;
    }
    let _ = ctx.cluster.delete(&namespace_gvk, None, &namespace).await;
}
