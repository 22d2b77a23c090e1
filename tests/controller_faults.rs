//! The controller under faults, on the real API servers: a flood of idle connections to its
//! metrics port takes neither its descriptors nor its reconciles; an `Addon`'s metric series go
//! with it.

use std::time::Duration;

use serde_json::json;

use crate::controller::{
    addon, apply_addon, fixture, http_get, in_process, install_crd, wait_for, wait_ready, Child,
    ADDON,
};
use crate::support::k8s::{get_on, Kind, Sandbox};

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

#[tokio::test(flavor = "multi_thread")]
async fn an_object_drift_correction_creates_again_is_recorded_so_deleting_the_addon_removes_it() {
    let addon_dir = fixture("reborn", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon_dir]);
    install_crd(&sb).await;
    sb.join("m1", crate::controller::managed(1), &[]).await;
    let m1 = crate::controller::managed(1).admin().await;
    let (controller, stop, _, _) = crate::controller::in_process_with(
        &sb,
        &[&addon_dir],
        addonctl::controller::ControllerSettings {
            drift_interval: Duration::from_secs(1),
            ..addonctl::controller::ControllerSettings::default()
        },
    )
    .await;
    apply_addon(
        &sb,
        "reborn",
        json!({"clusters": ["m1"], "drift": {"policy": "correct"}}),
    )
    .await;
    wait_ready(&sb, "reborn").await;
    let uid_of = |object: Option<serde_json::Value>| {
        object.map(|o| o["metadata"]["uid"].as_str().unwrap_or_default().to_owned())
    };
    let old = uid_of(get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "reborn-1").await).unwrap();
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(m1.client().clone(), sb.ns());
    api.delete("reborn-1", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    let new = wait_for("the deleted ConfigMap created again", || async {
        uid_of(get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "reborn-1").await)
            .filter(|uid| uid != &old)
    })
    .await;
    wait_for("the record holding its new uid", || async {
        let record = sb.record("reborn").await;
        record
            .dispatched
            .get("m1")?
            .objects
            .iter()
            .any(|o| o.object.name == "reborn-1" && o.uid == new && o.created)
            .then_some(())
    })
    .await;
    sb.api()
        .delete(&ADDON.gvk(), Some(sb.ns()), "reborn")
        .await
        .unwrap();
    wait_for(
        "the re-created ConfigMap deleted with the addon",
        || async {
            get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "reborn-1")
                .await
                .is_none()
                .then_some(())
        },
    )
    .await;
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), controller).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn one_damaged_record_fails_its_own_addon_only() {
    let (first, second) = (
        fixture("broken-rec", "1.0.0", false),
        fixture("sound-rec", "1.0.0", false),
    );
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&[&first, &second]);
    for name in ["broken-rec", "sound-rec"] {
        let output = sb
            .cli()
            .args(["enable", name, "--clusters", "local"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
    }
    // Someone edits the record by hand and breaks it.
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(sb.api().client().clone(), sb.ns());
    secrets
        .patch(
            "addon-record-broken-rec",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"stringData": {"record": "{not json"}})),
        )
        .await
        .unwrap();
    let list = sb.cli().args(["list", "-o", "json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&list.stderr);
    assert!(list.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("sound-rec"),
        "{list:?}"
    );
    assert!(stderr.contains("addon-record-broken-rec"), "{stderr}");
    let sound = sb.cli().args(["status", "sound-rec"]).output().unwrap();
    assert!(sound.status.success(), "{sound:?}");
    let broken = sb.cli().args(["status", "broken-rec"]).output().unwrap();
    let error = String::from_utf8_lossy(&broken.stderr);
    assert!(!broken.status.success());
    // The hint names the record Secret itself, not a selector that misses it.
    assert!(
        error.contains(&format!(
            "kubectl get secret -n {} addon-record-broken-rec -o yaml",
            sb.ns()
        )),
        "{error}"
    );
    // Nothing is deleted while a record cannot be read.
    let disable = sb.cli().args(["disable", "sound-rec"]).output().unwrap();
    assert!(!disable.status.success(), "{disable:?}");
    assert!(
        String::from_utf8_lossy(&disable.stderr).contains("addon-record-broken-rec"),
        "{disable:?}"
    );
}

/// A leader cut off from its control plane (its API server stopped: the port accepts, nothing
/// answers) steps down by its own clock within the renew deadline (10 s), before its Lease
/// (15 s) can expire for a standby — not after the 30 s request timeout.
#[tokio::test(flavor = "multi_thread")]
async fn a_leader_cut_off_from_its_control_plane_steps_down_before_its_lease_expires() {
    use std::io::BufRead as _;
    let _only_us = crate::support::k8s::fault_cluster_lock().await;
    let fault = crate::support::k8s::Env::get().fault_cluster();
    let namespace = format!("leader-cut-{}", std::process::id());
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("addonctl"));
    command
        .env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .arg("--kubeconfig")
        .arg(&fault.kubeconfig)
        .args(["--system-namespace", &namespace])
        .args(["controller", "--metrics-addr", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap().into_owned_fd().unwrap();
    let (lines, events) = std::sync::mpsc::channel::<(std::time::Instant, String)>();
    std::thread::spawn(move || {
        let reader = std::io::BufReader::new(std::fs::File::from(stderr));
        for line in reader.lines().map_while(Result::ok) {
            eprintln!("[leader] {line}");
            let _ = lines.send((std::time::Instant::now(), line));
        }
    });
    let wait_line = move |events: std::sync::mpsc::Receiver<(std::time::Instant, String)>,
                          needle: &'static str,
                          limit: Duration| {
        let started = std::time::Instant::now();
        loop {
            let left = limit.saturating_sub(started.elapsed());
            match events.recv_timeout(left) {
                Ok((at, line)) if line.contains(needle) => return (at, events),
                Ok(_) => {}
                Err(e) => panic!("no `{needle}` within {limit:?}: {e}"),
            }
        }
    };
    let (_, events) = tokio::task::spawn_blocking(move || {
        wait_line(events, "became the leader", Duration::from_secs(30))
    })
    .await
    .unwrap();
    // Let one renewal go through, then cut the control plane off.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let stopped = crate::support::k8s::Stopped::apiserver(fault);
    let cut = std::time::Instant::now();
    let (stepped_down, _) = tokio::task::spawn_blocking(move || {
        wait_line(events, "lost the leadership", Duration::from_secs(40))
    })
    .await
    .unwrap();
    stopped.resume().await;
    let after = stepped_down.duration_since(cut);
    assert!(
        after < Duration::from_secs(12),
        "stepped down {after:?} after the cut: the Lease (15 s) may have expired for a standby first"
    );
    let _ = child.kill().await;
    let admin = fault.admin().await;
    let _ = admin.delete(&Kind::NAMESPACE.gvk(), None, &namespace).await;
}
