//! The controller drives `spec.rollout` against the real API servers: `m1`, `m2`, `m3`
//! (managed-1..3) in stages, the controller as a child process. The clusters' controllers,
//! scheduler and kwok make the fixture's Deployment `web` ready; a test that needs it not ready
//! somewhere holds its pods and releases them only where it should become healthy.

use std::collections::BTreeMap;
use std::time::Duration;

use addonctl::cluster::Cluster;
use serde_json::{json, Value};

use crate::controller::{addon, apply_addon, condition, install_crd, managed, wait_for, Child};
use crate::drift::{workload_addon, workload_addon_with, Pods};
use crate::rollout::created_at;
use crate::support::k8s::{fault_cluster_lock, get_on, release_pods_on, Kind, Sandbox};

/// Joins managed-1..3 as `m1`, `m2`, `m3` with `tier` = `one`, `two`, `three`.
async fn fleet(sb: &Sandbox) -> Vec<(&'static str, Cluster)> {
    let mut clusters = Vec::new();
    for (name, n, tier) in [("m1", 1, "one"), ("m2", 2, "two"), ("m3", 3, "three")] {
        sb.join(name, managed(n), &[("tier", tier)]).await;
        clusters.push((name, managed(n).admin().await));
    }
    clusters
}

/// Joins managed-1 and managed-2 as `m1` (`tier` = `one`) and `m2` (`two`); returns the
/// clusters.
async fn two_tiers(sb: &Sandbox) -> Vec<(&'static str, Cluster)> {
    let mut clusters = Vec::new();
    for (name, n, tier) in [("m1", 1, "one"), ("m2", 2, "two")] {
        sb.join(name, managed(n), &[("tier", tier)]).await;
        clusters.push((name, managed(n).admin().await));
    }
    clusters
}

/// One stage per tier, in order, each soaking `soak` seconds.
fn stages(tiers: &[&str], soak: u64, deadline: u64) -> Value {
    let stages: Vec<Value> = tiers
        .iter()
        .map(|tier| {
            json!({"name": tier, "clusterSelector": {"matchLabels": {"tier": tier}},
                   "soakSeconds": soak, "maxFailures": 0})
        })
        .collect();
    json!({"stages": stages, "progressDeadlineSeconds": deadline})
}

/// The `Addon`'s `status.rollout` once `check` holds for it.
async fn rollout_where(
    sb: &Sandbox,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    wait_for(what, || async {
        let addon = addon(sb, name).await?;
        let rollout = addon["status"]["rollout"].clone();
        check(&rollout).then_some(addon)
    })
    .await
}

/// `addonctl rollout pause NAME`, then waits for the `Addon`'s rollout to say `Paused`.
async fn pause(sb: &Sandbox, name: &str) {
    rollout_verb(sb, "pause", name);
    rollout_where(sb, name, "the rollout paused", |r| r["phase"] == "Paused").await;
}

/// `addonctl rollout VERB NAME`, which must succeed.
fn rollout_verb(sb: &Sandbox, verb: &str, name: &str) {
    let output = sb.cli().args(["rollout", verb, name]).output().unwrap();
    assert!(output.status.success(), "{output:?}");
}

async fn has_web(cluster: &Cluster, namespace: &str) -> bool {
    get_on(cluster, Kind::DEPLOYMENT, Some(namespace), "web")
        .await
        .is_some()
}

/// `addonctl_controller_cluster_applies_total{cluster=…,outcome=…}` per (cluster, outcome).
fn applies(metrics: &str) -> BTreeMap<(String, String), u64> {
    metrics
        .lines()
        .filter_map(|line| line.strip_prefix("addonctl_controller_cluster_applies_total{"))
        .filter_map(|rest| {
            let (labels, n) = rest.split_once("} ")?;
            let value = |key: &str| {
                labels
                    .split(',')
                    .find_map(|l| l.strip_prefix(&format!("{key}=\"")))
                    .map(|v| v.trim_end_matches('"').to_owned())
            };
            Some((
                (value("cluster")?, value("outcome")?),
                n.trim().parse().ok()?,
            ))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stage_whose_cluster_never_becomes_healthy_stops_the_rollout_and_later_stages_get_nothing(
) {
    let _managed_3 = fault_cluster_lock().await;
    let web = workload_addon_with("gated", "1.0.0", Pods::Held);
    let sb = Sandbox::with_kubevela().await.direct().registries(&[&web]);
    install_crd(&sb).await;
    let clusters = fleet(&sb).await;
    // Only m1 and m3 would ever become healthy: m2 (stage two) never does.
    for (name, cluster) in &clusters {
        if *name != "m2" {
            release_pods_on(cluster, sb.ns()).await;
        }
    }
    let controller = Child::start(&sb, &["--leader-elect=false"]).await;

    apply_addon(
        &sb,
        "gated",
        json!({"clusterSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
               "rollout": stages(&["one", "two", "three"], 1, 8)}),
    )
    .await;
    let stopped = rollout_where(&sb, "gated", "the rollout stops", |r| {
        r["phase"] == "Failed"
    })
    .await;
    let rollout = &stopped["status"]["rollout"];
    assert_eq!(rollout["stage"], "two", "{rollout}");
    assert_eq!(rollout["failed"][0]["cluster"], "m2", "{rollout}");
    assert_eq!(rollout["failed"][0]["stage"], "two");
    let reason = rollout["failed"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("progress deadline"), "{reason}");
    assert_eq!(rollout["stages"][0]["done"], json!(["m1"]));
    assert_eq!(rollout["stages"][2]["done"], json!([]));
    let progressing = condition(&stopped, "Progressing").unwrap();
    assert_eq!(
        (&progressing["status"], &progressing["reason"]),
        (&json!("False"), &json!("RolloutFailed"))
    );
    let degraded = condition(&stopped, "Degraded").unwrap();
    assert_eq!(degraded["status"], "True");
    assert!(
        degraded["message"].as_str().unwrap().contains("`m2`"),
        "{degraded}"
    );
    // Stage one has the addon, stage two got it (and failed), stage three got nothing.
    let on = |n: usize| clusters[n].1.clone();
    assert!(has_web(&on(0), sb.ns()).await);
    assert!(has_web(&on(1), sb.ns()).await);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!has_web(&on(2), sb.ns()).await, "stage three was touched");
    let record = sb.record("gated").await;
    assert_eq!(record.dispatched.keys().collect::<Vec<_>>(), ["m1", "m2"]);

    // `rollout status` says the same.
    let output = sb
        .cli()
        .args(["rollout", "status", "gated", "-o", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["phase"], "Failed");
    assert_eq!(report["stages"][1]["failed"], json!(["m2"]));
    assert_eq!(report["stages"][2]["pending"], json!(["m3"]));
    drop(controller);
}

/// A gate is looked at again when a workload of its batch changes (watched) and when its soak
/// ends, not only when its poll comes: ten minutes here, as the drift checks.
#[tokio::test(flavor = "multi_thread")]
async fn a_gate_is_looked_at_when_a_workload_changes_not_only_when_its_poll_comes() {
    // Ready 3 s after each Deployment's pods are scheduled: after the gate's first looks, which
    // find it not ready and have nothing new to write (no status change to wake the
    // controller).
    let web = workload_addon_with("woken", "1.0.0", Pods::ReadyAfter("3s"));
    let sb = Sandbox::with_kubevela().await.direct().registries(&[&web]);
    install_crd(&sb).await;
    let mut clusters = Vec::new();
    for (name, n, tier) in [("m1", 1, "one"), ("m2", 2, "two")] {
        sb.join(name, managed(n), &[("tier", tier)]).await;
        clusters.push((name, managed(n).admin().await));
    }
    let controller = Child::start(
        &sb,
        &[
            "--leader-elect=false",
            "--gate-poll",
            "10m",
            "--drift-interval",
            "10m",
        ],
    )
    .await;

    apply_addon(
        &sb,
        "woken",
        json!({"clusterSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
               "rollout": stages(&["one", "two"], 1, 300)}),
    )
    .await;
    let done = rollout_where(&sb, "woken", "the rollout succeeds", |r| {
        r["phase"] == "Succeeded"
    })
    .await;
    assert_eq!(
        done["status"]["rollout"]["stages"][1]["done"],
        json!(["m2"])
    );
    for (name, cluster) in &clusters {
        assert!(has_web(cluster, sb.ns()).await, "nothing on {name}");
    }
    drop(controller);
}

#[tokio::test(flavor = "multi_thread")]
async fn rollout_pause_holds_the_next_stage_and_resume_finishes_it() {
    let web = workload_addon("pausing", "1.0.0");
    let sb = Sandbox::with_kubevela().await.direct().registries(&[&web]);
    install_crd(&sb).await;
    let clusters = two_tiers(&sb).await;
    let controller = Child::start(&sb, &["--leader-elect=false"]).await;

    // No Addon (and then no rollout in it): exit 2, saying so.
    let output = sb
        .cli()
        .args(["rollout", "pause", "pausing"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no `Addon` resource `pausing`"), "{stderr}");

    apply_addon(
        &sb,
        "pausing",
        json!({"clusters": ["m1", "m2"], "rollout": stages(&["one", "two"], 2, 60)}),
    )
    .await;
    wait_for("stage one applied", || async {
        has_web(&clusters[0].1, sb.ns()).await.then_some(())
    })
    .await;
    pause(&sb, "pausing").await;
    // Well past stage one's soak: stage two gets nothing while paused.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(
        !has_web(&clusters[1].1, sb.ns()).await,
        "a paused rollout applied"
    );
    let paused = addon(&sb, "pausing").await.unwrap();
    assert_eq!(
        condition(&paused, "Progressing").unwrap()["reason"],
        "Paused"
    );
    let output = sb
        .cli()
        .args(["rollout", "status", "pausing", "-o", "yaml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("paused: true") && text.contains("phase: Paused"),
        "{text}"
    );

    rollout_verb(&sb, "resume", "pausing");
    let done = rollout_where(&sb, "pausing", "the rollout succeeds", |r| {
        r["phase"] == "Succeeded"
    })
    .await;
    assert!(has_web(&clusters[1].1, sb.ns()).await);
    assert_eq!(done["spec"]["rollout"].get("paused"), None);
    wait_for("Ready after the rollout", || async {
        let addon = addon(&sb, "pausing").await?;
        (condition(&addon, "Ready")?["status"] == "True").then_some(())
    })
    .await;
    let output = sb
        .cli()
        .args(["rollout", "status", "pausing"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("phase:    Succeeded"), "{text}");

    // New stages give the clusters nothing new: the succeeded rollout stays, nothing re-gates.
    let key = done["status"]["rollout"]["key"].clone();
    apply_addon(
        &sb,
        "pausing",
        json!({"clusters": ["m1", "m2"], "rollout": stages(&["one", "two"], 30, 90)}),
    )
    .await;
    let restaged = wait_for("the new stages observed", || async {
        let addon = addon(&sb, "pausing").await?;
        (addon["status"]["observedGeneration"] == addon["metadata"]["generation"]).then_some(addon)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let restaged = addon(&sb, "pausing").await.unwrap_or(restaged);
    assert_eq!(
        (
            restaged["status"]["rollout"]["phase"].clone(),
            restaged["status"]["rollout"]["key"].clone()
        ),
        (json!("Succeeded"), key),
        "{restaged:#}"
    );
    assert_eq!(condition(&restaged, "Ready").unwrap()["status"], "True");
    drop(controller);
}

/// The `mode` of the fixture's ConfigMap `settings` on a cluster.
async fn settings_mode(cluster: &Cluster, namespace: &str) -> Option<String> {
    let settings = get_on(cluster, Kind::CONFIG_MAP, Some(namespace), "settings").await?;
    settings["data"]["mode"].as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parameter_change_at_the_same_version_is_rolled_out_by_stages_too() {
    let base = workload_addon("tuned", "1.0.0");
    let template = std::fs::read_to_string(base.path().join("template.rhai")).unwrap();
    let tuned = base
        .file(
            "parameter.rhai",
            "#{\n    mode: string(\"strict\"),\n    clusters: list(string()).optional(),\n}\n",
        )
        .file(
            "template.rhai",
            &template.replace("mode: \"strict\"", "mode: parameter.mode"),
        );
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&tuned]);
    install_crd(&sb).await;
    let clusters = two_tiers(&sb).await;
    let controller = Child::start(&sb, &["--leader-elect=false", "--drift-interval", "1s"]).await;
    apply_addon(
        &sb,
        "tuned",
        json!({"clusters": ["m1", "m2"], "drift": {"policy": "correct"},
               "rollout": stages(&["one", "two"], 1, 60)}),
    )
    .await;
    rollout_where(&sb, "tuned", "the first rollout succeeds", |r| {
        r["phase"] == "Succeeded"
    })
    .await;
    for (name, cluster) in &clusters {
        assert_eq!(
            settings_mode(cluster, sb.ns()).await.as_deref(),
            Some("strict"),
            "{name}"
        );
    }

    // Same version, another parameter; stage one soaks long enough to look at stage two.
    apply_addon(
        &sb,
        "tuned",
        json!({"clusters": ["m1", "m2"], "drift": {"policy": "correct"},
               "parameters": {"mode": "relaxed"},
               "rollout": stages(&["one", "two"], 8, 60)}),
    )
    .await;
    wait_for("stage one gets the new parameter", || async {
        (settings_mode(&clusters[0].1, sb.ns()).await.as_deref() == Some("relaxed")).then_some(())
    })
    .await;
    pause(&sb, "tuned").await;
    // Several drift checks later (every second, policy `correct`): m2 is held, not corrected.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        settings_mode(&clusters[1].1, sb.ns()).await.as_deref(),
        Some("strict"),
        "stage two got the new parameter before its stage"
    );
    // One word for this state: the `Addon` says `Upgrading` where `addonctl status` says
    // `upgrading` (its clusters run different revisions).
    let paused = addon(&sb, "tuned").await.unwrap();
    let ready = condition(&paused, "Ready").unwrap();
    assert_eq!(
        (&ready["status"], &ready["reason"]),
        (&json!("False"), &json!("Upgrading")),
        "{paused:#}"
    );
    let output = sb
        .cli()
        .args(["status", "tuned", "-o", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(status["phase"], "upgrading", "{status:#}");
    rollout_verb(&sb, "resume", "tuned");
    rollout_where(&sb, "tuned", "the rollout succeeds", |r| {
        r["phase"] == "Succeeded"
    })
    .await;
    wait_for("stage two gets the new parameter", || async {
        (settings_mode(&clusters[1].1, sb.ns()).await.as_deref() == Some("relaxed")).then_some(())
    })
    .await;
    drop(controller);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_standby_finishes_a_rollout_whose_leader_died_during_a_soak_applying_nothing_twice() {
    let _managed_3 = fault_cluster_lock().await;
    let web = workload_addon("relay", "1.0.0");
    let sb = Sandbox::with_kubevela().await.direct().registries(&[&web]);
    install_crd(&sb).await;
    let clusters = fleet(&sb).await;
    let first = Child::start(&sb, &["--leader-elect"]).await;
    wait_for("a leader", || async {
        let lease = sb.get(Kind::LEASE, "addonctl-controller").await?;
        lease["spec"]["holderIdentity"]
            .as_str()?
            .contains(&format!("pid {} ", first.pid()))
            .then_some(())
    })
    .await;
    let second = Child::start(&sb, &["--leader-elect"]).await;

    apply_addon(
        &sb,
        "relay",
        json!({"clusters": ["m1", "m2", "m3"], "rollout": stages(&["one", "two", "three"], 3, 120)}),
    )
    .await;
    // Stage one soaks: m1 healthy on the new revision, the gate's clock running.
    rollout_where(&sb, "relay", "stage one soaking", |r| {
        r["state"]["gate"]["clusters"]["m1"]["healthySinceMs"].is_u64()
    })
    .await;
    let (_, before) = first.get("/metrics").await;
    let mut first = first;
    first.process.kill().await.unwrap();
    let second_pid = second.pid();
    wait_for("the standby leads", || async {
        let lease = sb.get(Kind::LEASE, "addonctl-controller").await?;
        lease["spec"]["holderIdentity"]
            .as_str()?
            .contains(&format!("pid {second_pid} "))
            .then_some(())
    })
    .await;
    let done = rollout_where(&sb, "relay", "the standby finishes", |r| {
        r["phase"] == "Succeeded"
    })
    .await;
    assert_eq!(
        done["status"]["rollout"]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["done"].clone())
            .collect::<Vec<_>>(),
        [json!(["m1"]), json!(["m2"]), json!(["m3"])]
    );
    let created = created_at(&clusters, sb.ns()).await;
    let (_, after) = second.get("/metrics").await;
    let (before, after) = (applies(&before), applies(&after));
    // Every cluster's objects were created by exactly one apply across both processes: m1 by
    // the first leader, m2 and m3 by the second (m1 applied again, unchanged, with each batch).
    for cluster in ["m1", "m2", "m3"] {
        let key = (cluster.to_owned(), "applied".to_owned());
        let total = before.get(&key).unwrap_or(&0) + after.get(&key).unwrap_or(&0);
        assert_eq!(total, 1, "{cluster}: before {before:?}, after {after:?}");
    }
    assert_eq!(before.get(&("m1".into(), "applied".into())), Some(&1));
    assert_eq!(before.get(&("m2".into(), "applied".into())), None);
    // In stage order, each after the previous stage soaked (timestamps have seconds).
    let second_of = |c: &str| {
        let text = created[c].trim_matches('"').to_owned();
        let time: String = text.chars().skip(11).take(8).collect();
        let parts: Vec<u64> = time.split(':').map(|p| p.parse().unwrap()).collect();
        parts[0] * 3600 + parts[1] * 60 + parts[2]
    };
    assert!(second_of("m2") >= second_of("m1") + 3, "{created:?}");
    assert!(second_of("m3") >= second_of("m2") + 3, "{created:?}");
}

/// `POST`s `body` to the controller's registry webhook; the status code.
async fn webhook(address: &str, method: reqwest::Method, body: Vec<u8>) -> u16 {
    reqwest::Client::new()
        .request(method, format!("http://{address}/webhook/registry"))
        .body(body)
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Publishes `version` of the fixture in its registry directory (a directory registry holds
/// one version of an addon: the new one replaces the old).
fn publish(registry: &std::path::Path, name: &str, version: &str) {
    std::fs::write(
        registry.join("metadata.yaml"),
        format!("name: {name}\nversion: {version}\ndescription: Fixture addon {name}\n"),
    )
    .unwrap();
}

/// The image of the fixture's Deployment `web` on a cluster.
async fn web_image(cluster: &Cluster, namespace: &str) -> Option<String> {
    let web = get_on(cluster, Kind::DEPLOYMENT, Some(namespace), "web").await?;
    web["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_version_published_and_announced_by_the_webhook_is_rolled_out_by_stages() {
    let web = workload_addon("announced", "1.0.0");
    let sb = Sandbox::with_kubevela().await.direct().registries(&[&web]);
    install_crd(&sb).await;
    let clusters = two_tiers(&sb).await;
    // No periodic re-list: only the webhook can make the new version seen.
    let controller = Child::start(&sb, &["--leader-elect=false", "--registry-interval", "0"]).await;

    apply_addon(
        &sb,
        "announced",
        json!({"clusters": ["m1", "m2"], "version": "^1", "rollout": stages(&["one", "two"], 3, 60)}),
    )
    .await;
    rollout_where(&sb, "announced", "1.0.0 rolled out", |r| {
        r["phase"] == "Succeeded" && r["version"] == "1.0.0"
    })
    .await;
    let image = |v: &str| format!("registry.example/web:{v}");
    assert_eq!(
        web_image(&clusters[1].1, sb.ns()).await,
        Some(image("1.0.0"))
    );

    publish(web.path(), "announced", "1.1.0");
    let address = controller.address.clone();
    assert_eq!(
        webhook(&address, reqwest::Method::GET, Vec::new()).await,
        405
    );
    let too_large = vec![b'x'; 64 * 1024 + 1];
    assert_eq!(
        webhook(&address, reqwest::Method::POST, too_large).await,
        413
    );
    let announcement = br#"{"addon": "announced", "version": "1.1.0"}"#.to_vec();
    assert_eq!(
        webhook(&address, reqwest::Method::POST, announcement).await,
        202
    );

    // Stage one soaks on 1.1.0 while m2 (stage two) still runs 1.0.0, untouched.
    rollout_where(&sb, "announced", "stage one of 1.1.0 soaking", |r| {
        r["version"] == "1.1.0" && r["state"]["gate"]["clusters"]["m1"]["healthySinceMs"].is_u64()
    })
    .await;
    assert_eq!(
        web_image(&clusters[0].1, sb.ns()).await,
        Some(image("1.1.0"))
    );
    assert_eq!(
        web_image(&clusters[1].1, sb.ns()).await,
        Some(image("1.0.0"))
    );
    let record = sb.record("announced").await;
    assert_eq!(record.cluster_version("m2"), Some("1.0.0"));

    let done = rollout_where(&sb, "announced", "1.1.0 rolled out", |r| {
        r["phase"] == "Succeeded" && r["version"] == "1.1.0"
    })
    .await;
    assert_eq!(
        done["status"]["rollout"]["stages"][1]["done"],
        json!(["m2"])
    );
    assert_eq!(
        web_image(&clusters[1].1, sb.ns()).await,
        Some(image("1.1.0"))
    );
    wait_for("Ready on 1.1.0", || async {
        let addon = addon(&sb, "announced").await?;
        (condition(&addon, "Ready")?["status"] == "True"
            && addon["status"]["appliedVersion"] == "1.1.0")
            .then_some(())
    })
    .await;
    let record = sb.record("announced").await;
    assert_eq!(record.version, "1.1.0");
    assert!(!record.is_mixed(), "{record:?}");
    let (_, metrics) = controller.get("/metrics").await;
    for line in [
        "addonctl_controller_registry_relists_total 1",
        "addonctl_controller_registry_webhooks_total 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
}
