//! The controller under faults, on the real API servers: a flood of idle connections to its
//! metrics port takes neither its descriptors nor its reconciles; an `Addon`'s metric series go
//! with it.

use std::time::Duration;

use serde_json::json;

use crate::controller::{
    addon, apply_addon, fixture, http_get, in_process, install_crd, wait_for, wait_ready, Child,
    ADDON,
};
use crate::support::k8s::Sandbox;

/// Descriptors the process `pid` holds.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_connections_to_the_metrics_port_are_capped_and_timed_out() {
    let addon_dir = fixture("flooded", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon_dir]);
    install_crd(&sb).await;
    let controller = Child::start(&sb, &["--leader-elect=false"]).await;
    let before = descriptors(controller.pid());
    // 300 connections that never send a byte (a scanner, a half-open flood).
    let mut idle = Vec::new();
    for _ in 0..300 {
        if let Ok(stream) = tokio::net::TcpStream::connect(&controller.address).await {
            idle.push(stream);
        }
    }
    assert!(idle.len() >= 250, "only {} connections made", idle.len());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = descriptors(controller.pid());
    assert!(
        during < before + 100,
        "{during} descriptors with 300 idle connections (before: {before})"
    );
    // Reconciles go on meanwhile.
    apply_addon(&sb, "flooded", json!({"clusters": ["local"]})).await;
    wait_ready(&sb, "flooded").await;
    // The idle ones are closed after the header timeout; the endpoint answers.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (status, body) = controller.get("/healthz").await;
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (status, body) = controller.get("/readyz").await;
    assert_eq!(status, 200, "{body}");
    let after = descriptors(controller.pid());
    assert!(
        after < before + 20,
        "{after} descriptors once the idle connections timed out (before: {before})"
    );
    drop(idle);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_metric_series_of_an_addon_go_with_its_addon_resource() {
    let addon_dir = fixture("counted", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon_dir]);
    install_crd(&sb).await;
    let (controller, stop, _, address) =
        in_process(&sb, &[&addon_dir], addonctl::controller::Backoff::default()).await;
    apply_addon(
        &sb,
        "counted",
        json!({"clusters": ["local"], "drift": {"policy": "warn"}}),
    )
    .await;
    wait_ready(&sb, "counted").await;
    let series = "addon=\"counted\"";
    let (_, metrics) = http_get(&address, "/metrics").await;
    assert!(metrics.contains(series), "{metrics}");
    sb.api()
        .delete(&ADDON.gvk(), Some(sb.ns()), "counted")
        .await
        .unwrap();
    wait_for("the Addon gone", || async {
        addon(&sb, "counted").await.is_none().then_some(())
    })
    .await;
    let (_, metrics) = http_get(&address, "/metrics").await;
    assert!(!metrics.contains(series), "{metrics}");
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), controller).await;
}
