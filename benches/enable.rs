//! Enable benchmark (issue figures): API calls and wall time of enabling the largest built-in
//! addon on a real API server, then calls, writes and changed objects of re-enabling it unchanged
//! (goal: 0 objects changed). Needs the environment of `scripts/k8s/up.sh`
//! (`ADDONCTL_TEST_ENV`, default `/tmp/addonctl-k8s`); `scripts/bench-enable.sh` starts it.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout
)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use addonctl::context::NoopReporter;
use addonctl::context::{Context, Settings};
use addonctl::plan::EnableRequest;
use addonctl::render::{RenderOptions, Renderer};
use addonctl::source::builtin::BuiltinReader;
use addonctl::source::{AddonRef, AsyncReader};

async fn resource_versions(ctx: &Context, name: &str) -> BTreeMap<String, String> {
    let installed = ctx.state().installed().await.unwrap();
    let record = installed[name].record.clone().unwrap();
    let mut out = BTreeMap::new();
    for object in &record.inventory {
        let stored = ctx
            .cluster
            .get(&object.gvk(), object.namespace.as_deref(), &object.name)
            .await
            .unwrap()
            .unwrap();
        out.insert(
            object.to_string(),
            stored.metadata.resource_version.unwrap_or_default(),
        );
    }
    for (kind, gvk, obj) in [
        (
            "Application",
            addonctl::model::wire::application_gvk(),
            format!("addon-{name}"),
        ),
        (
            "Secret",
            kube::core::GroupVersionKind::gvk("", "v1", "Secret"),
            format!("addon-record-{name}"),
        ),
    ] {
        if let Some(stored) = ctx
            .cluster
            .get(&gvk, Some(&ctx.namespace), &obj)
            .await
            .unwrap()
        {
            out.insert(
                format!("{kind} {obj}"),
                stored.metadata.resource_version.unwrap_or_default(),
            );
        }
    }
    out
}

#[tokio::main]
async fn main() {
    let dir = PathBuf::from(
        std::env::var("ADDONCTL_TEST_ENV").unwrap_or_else(|_| "/tmp/addonctl-k8s".into()),
    );
    let kubeconfig = dir.join("kubeconfig-control-plane");
    assert!(
        kubeconfig.exists(),
        "no test environment in {}: run scripts/bench-enable.sh",
        dir.display()
    );

    // The largest built-in addon: the one whose render has the most objects.
    let reader = BuiltinReader::new();
    let renderer = Renderer::new();
    let mut largest = (String::new(), 0usize);
    for summary in reader.list_addons().await.unwrap() {
        let package = addonctl::loader::load(&reader, &AddonRef::latest(&summary.name))
            .await
            .unwrap();
        let rendered = renderer
            .render(&package, &RenderOptions::default())
            .unwrap();
        let nested: usize = rendered.application["spec"]["components"]
            .as_array()
            .map_or(0, |cs| {
                cs.iter()
                    .map(|c| c["properties"]["objects"].as_array().map_or(1, Vec::len))
                    .sum()
            });
        let count = rendered.objects().len() + nested;
        if count > largest.1 {
            largest = (summary.name.clone(), count);
        }
    }
    let namespace = format!("bench-enable-{}", std::process::id());
    // Discovery kept on disk as the CLI keeps it: cold for the first run, warm afterwards.
    let cache = tempfile::tempdir().unwrap();
    let connect = || async {
        Context::connect(&Settings {
            kubeconfig: Some(kubeconfig.clone()),
            discovery_cache: Some(cache.path().to_path_buf()),
            ..Settings::new(&namespace)
        })
        .await
        .unwrap()
    };
    let request = EnableRequest {
        reference: largest.0.clone(),
        skip_version_check: true,
        ..EnableRequest::default()
    };

    let ctx = connect().await;
    let started = Instant::now();
    let reports = addonctl::apply::enable(&ctx, &request, &NoopReporter)
        .await
        .unwrap();
    let first = started.elapsed();
    let applied: usize = reports.iter().map(|r| r.applied.len()).sum();
    println!(
        "enable `{}` ({} objects rendered, {} addons in the plan, {applied} control-plane objects applied): {:.1} ms, {} API calls, {} writes",
        largest.0,
        largest.1,
        reports.len(),
        first.as_secs_f64() * 1e3,
        ctx.cluster.counters().requests(),
        ctx.cluster.counters().writes()
    );
    let before = resource_versions(&ctx, &largest.0).await;

    let ctx = connect().await;
    let started = Instant::now();
    addonctl::apply::enable(&ctx, &request, &NoopReporter)
        .await
        .unwrap();
    let second = started.elapsed();
    let (calls, writes) = (
        ctx.cluster.counters().requests(),
        ctx.cluster.counters().writes(),
    );
    let after = resource_versions(&ctx, &largest.0).await;
    let changed = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(*v))
        .count();
    println!(
        "re-enable unchanged (warm discovery cache): {:.1} ms, {calls} API calls, {writes} write requests (server-side apply), {changed} of {} objects changed",
        second.as_secs_f64() * 1e3,
        before.len()
    );
    let ctx = connect().await;
    let started = Instant::now();
    addonctl::apply::disable(&ctx.applier(), &largest.0, true, &NoopReporter)
        .await
        .unwrap();
    println!(
        "disable (warm discovery cache): {:.1} ms, {} API calls, {} writes",
        started.elapsed().as_secs_f64() * 1e3,
        ctx.cluster.counters().requests(),
        ctx.cluster.counters().writes()
    );
    let _ = ctx
        .cluster
        .delete(
            &kube::core::GroupVersionKind::gvk("", "v1", "Namespace"),
            None,
            &namespace,
        )
        .await;
}
