//! Staged rollouts against real API servers: `m1` (managed-1) in a first stage, `m2` and `m3`
//! (managed-2 and managed-3) in a second. The clusters' controllers, scheduler and kwok make the
//! workloads ready; a test holds their pods (`Pods::Held`) or slows them (`Pods::ReadyAfter`).

use std::collections::BTreeMap;
use std::time::Duration;

use addonctl::cluster::Cluster;
use addonctl::context::NoopReporter;
use addonctl::rollout::engine::{run, RunRequest};
use addonctl::rollout::Rollout;
use serde_json::{json, Value};

use crate::drift::{workload_addon, workload_addon_with, Pods};
use crate::support::k8s::{fault_cluster_lock, get_on, Env, Kind, Sandbox};

fn two_stages(soak_seconds: u64, deadline_seconds: u64) -> Rollout {
    serde_json::from_value(json!({
        "stages": [
            {"name": "canary", "clusterSelector": {"matchLabels": {"tier": "canary"}},
             "soakSeconds": soak_seconds},
            {"name": "rest", "clusterSelector": {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["rest"]}]},
             "soakSeconds": soak_seconds},
        ],
        "progressDeadlineSeconds": deadline_seconds,
    }))
    .unwrap()
}

/// Joins managed-1 as `m1` (canary), managed-2 and managed-3 as `m2`, `m3` (rest).
async fn fleet(sb: &Sandbox) -> Vec<(&'static str, Cluster)> {
    let mut clusters = Vec::new();
    for (name, n, tier) in [("m1", 1, "canary"), ("m2", 2, "rest"), ("m3", 3, "rest")] {
        let env = Env::get().managed_n(n);
        sb.join(name, env, &[("tier", tier)]).await;
        clusters.push((name, env.admin().await));
    }
    clusters
}

/// When the Deployment `web` was created on each cluster (its creation timestamp).
pub(crate) async fn created_at(
    clusters: &[(&'static str, Cluster)],
    namespace: &str,
) -> BTreeMap<&'static str, String> {
    let mut created = BTreeMap::new();
    for (name, cluster) in clusters {
        let web = get_on(cluster, Kind::DEPLOYMENT, Some(namespace), "web")
            .await
            .unwrap_or_else(|| panic!("no Deployment `web` on {name}"));
        created.insert(*name, web["metadata"]["creationTimestamp"].to_string());
    }
    created
}

fn request(rollout: Rollout) -> RunRequest {
    RunRequest {
        reference: "staged".to_owned(),
        version: None,
        values_files: Vec::new(),
        pairs: Vec::new(),
        set_files: Vec::new(),
        rollout,
        skip_version_check: false,
        adopt: false,
        poll_interval: Duration::from_millis(200),
    }
}

/// What [`staged_on_fleet`] starts: the addon (it holds the registry's files), the sandbox and
/// the clusters of the [`fleet`].
type Staged = (
    crate::support::builders::TestAddon,
    Sandbox,
    Vec<(&'static str, Cluster)>,
);

/// The `staged` workload addon, its pods ready as `pods` says, in a sandbox with the direct
/// engine and the [`fleet`] joined.
async fn staged_on_fleet(pods: Pods) -> Staged {
    let addon = workload_addon_with("staged", "1.0.0", pods);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    let clusters = fleet(&sb).await;
    (addon, sb, clusters)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_two_stage_rollout_passes_stage_by_stage_once_each_is_healthy() {
    let _managed_3 = fault_cluster_lock().await;
    let (_addon, sb, clusters) = staged_on_fleet(Pods::Ready).await;

    let report = run(&sb.ctx, &request(two_stages(2, 60)), &NoopReporter)
        .await
        .unwrap();

    let created = created_at(&clusters, sb.ns()).await;
    assert!(report.succeeded(), "{:?}", report.state);
    assert_eq!(report.state.done, ["m1", "m2", "m3"]);
    assert!(report.untouched.is_empty());
    assert_eq!(report.plan.unselected, ["local"]);
    let record = sb.record("staged").await;
    let applied: Vec<&str> = record.dispatched.keys().map(String::as_str).collect();
    assert_eq!(applied, ["m1", "m2", "m3"]);
    assert_eq!(record.pending, None);
    // The second stage started only after the first soaked (timestamps have seconds).
    let second = |c: &str| {
        let text = created[c].trim_matches('"').to_owned();
        let time: String = text.chars().skip(11).take(8).collect();
        let parts: Vec<u64> = time.split(':').map(|p| p.parse().unwrap()).collect();
        parts[0] * 3600 + parts[1] * 60 + parts[2]
    };
    assert!(
        second("m2") > second("m1"),
        "m2 applied before m1 soaked: {created:?}"
    );
}

/// A gate observes again when a watched workload changes and when a soak ends, not when its
/// poll interval (ten minutes here) passes. The Deployments' pods become ready 2 s after they
/// are scheduled: after each gate's first observation.
#[tokio::test(flavor = "multi_thread")]
async fn a_gate_wakes_when_a_workload_changes_and_when_its_soak_ends_not_at_its_poll_interval() {
    let _managed_3 = fault_cluster_lock().await;
    let (_addon, sb, _clusters) = staged_on_fleet(Pods::ReadyAfter("2s")).await;
    let request = RunRequest {
        poll_interval: Duration::from_secs(600),
        ..request(two_stages(1, 300))
    };

    let report = tokio::time::timeout(
        Duration::from_secs(60),
        run(&sb.ctx, &request, &NoopReporter),
    )
    .await
    .expect("a gate waited for its poll interval")
    .unwrap();

    assert!(report.succeeded(), "{:?}", report.state);
    assert_eq!(report.state.done, ["m1", "m2", "m3"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stage_that_never_becomes_healthy_stops_the_rollout_and_later_stages_are_untouched() {
    let _managed_3 = fault_cluster_lock().await;
    // The pods are never released: `web` never becomes ready on m1.
    let (_addon, sb, clusters) = staged_on_fleet(Pods::Held).await;
    let stages = tempfile::NamedTempFile::new().unwrap();
    fs_err::write(
        stages.path(),
        serde_json::to_string(&two_stages(1, 3)).unwrap(),
    )
    .unwrap();

    let output = sb
        .cli()
        .args([
            "rollout",
            "run",
            "staged",
            "--poll-interval",
            "0.2",
            "--stages",
        ])
        .arg(stages.path())
        .output()
        .unwrap();

    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "rollout of `staged` 1.0.0 stopped: stage `canary`: the progress deadline passed"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("cluster `m1` (stage `canary`): not healthy on revision"),
        "{stdout}"
    );
    // Its controller has taken the Deployment in; its pods are not ready.
    let why = format!("Deployment `{}/web`: 0 of 2 replicas ready", sb.ns());
    assert!(stdout.contains(&why), "no `{why}`:\n{stdout}");
    assert!(stdout.contains("untouched: `m2`, `m3`"), "{stdout}");
    assert!(
        stderr.contains("stage `canary`: applying to `m1`"),
        "{stderr}"
    );
    assert!(stderr.contains("waiting for `m1`: Deployment"), "{stderr}");
    let record = sb.record("staged").await;
    let applied: Vec<&str> = record.dispatched.keys().map(String::as_str).collect();
    assert_eq!(applied, ["m1"]);
    for (name, cluster) in &clusters[1..] {
        assert!(
            get_on(cluster, Kind::NAMESPACE, None, sb.ns())
                .await
                .is_none(),
            "{name} was touched"
        );
    }
    let web: Option<Value> = get_on(&clusters[0].1, Kind::DEPLOYMENT, Some(sb.ns()), "web").await;
    assert!(web.is_some(), "the first stage was applied");
}

#[test]
fn a_stages_file_that_is_not_a_usable_rollout_is_refused_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stages.yaml");
    for (text, expected) in [
        (
            "stages:\n  - name: prod\n    clusterSelector: {matchExpressions: [{key: env, operator: In}]}\n",
            "stage `prod`: `clusterSelector`: `env` In needs at least one value",
        ),
        (
            "stages:\n  - name: prod\n    maxConcurrency: 150%\n",
            "a percentage must be 1% to 100%",
        ),
        ("stages: []\n", "`stages` is empty"),
    ] {
        fs_err::write(&file, text).unwrap();
        let output = assert_cmd::Command::cargo_bin("addonctl")
            .unwrap()
            .env_remove("KUBECONFIG")
            .args(["rollout", "run", "x", "--stages"])
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(stderr.contains("stages.yaml"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_staged_upgrade_of_an_addon_kubevela_deploys_is_refused_before_anything_is_applied() {
    let installed = workload_addon("staged", "1.0.0");
    let newer = workload_addon("staged", "1.1.0");
    // KubeVela's CRDs are served and no engine is forced: KubeVela deploys the addon.
    let sb = Sandbox::with_kubevela().await.registries(&[&installed]);
    for (name, n, tier) in [("m1", 1, "canary"), ("m2", 2, "rest")] {
        sb.join(name, Env::get().managed_n(n), &[("tier", tier)])
            .await;
    }
    sb.enable("staged", json!({"clusters": ["m1", "m2"]}))
        .await
        .unwrap();
    let mut upgrade = request(two_stages(1, 10));
    upgrade.reference = newer.path().display().to_string();

    let error = run(&sb.ctx, &upgrade, &NoopReporter).await.unwrap_err();

    assert!(error.is_user_error());
    let message = error.to_string();
    assert!(
        message.contains(
            "addon `staged` 1.0.0 is installed on `m2` and KubeVela deploys it: its Application puts one revision on every cluster, so a staged rollout of 1.1.0 cannot keep them on 1.0.0"
        ),
        "{message}"
    );
    assert!(message.contains("`addonctl upgrade staged`"), "{message}");
    let record = sb.record("staged").await;
    assert_eq!(record.version, "1.0.0", "nothing applied");
    assert!(record.application);
}
