//! What a multi-cluster admin does with the controller, through the CLI and a controller
//! process on the real API servers: an `Addon` written by `enable --declarative` for the
//! clusters a selector picks, under `--drift correct`; its workloads not ready at first. The
//! status says what is true (`Ready` only when every selected cluster is healthy, counted as
//! `clusterSummary` counts them, as `addonctl status` reads them) and every kind of drift —
//! a scaled workload, a deleted object, a changed field — is put back within the interval,
//! ready or not.

use std::time::Duration;

use serde_json::{json, Value};

use crate::controller::{addon, condition, install_crd, managed, metric, Child};
use crate::support::builders::TestAddon;
use crate::support::k8s::{get_on, release_pods_on, Kind, Sandbox, HELD_POOL_RHAI};

const CRON_JOB: Kind = Kind("batch/v1", "CronJob");

/// A controller's workload, its metrics Service and a scheduled job, as the user's addon has
/// them; its pods held until the test releases them (so it is not ready at its first apply).
fn operator(name: &str) -> TestAddon {
    let template = r#"let ns = context.namespace;
let addon = context.metadata.name;
let labels = #{ app: addon };
let pod = #{ nodeSelector: held_pool(ns), containers: [#{ name: "main", image: "registry.example/operator:1" }] };
let objects = [
    #{ apiVersion: "apps/v1", kind: "Deployment", metadata: #{ name: addon, namespace: ns },
       spec: #{ replicas: 1, selector: #{ matchLabels: labels },
                template: #{ metadata: #{ labels: labels }, spec: pod } } },
    #{ apiVersion: "v1", kind: "Service", metadata: #{ name: addon + "-metrics", namespace: ns },
       spec: #{ selector: labels, ports: [#{ name: "metrics", port: 8080 }] } },
    #{ apiVersion: "batch/v1", kind: "CronJob", metadata: #{ name: addon + "-compaction", namespace: ns },
       spec: #{ schedule: "17 3 * * *", jobTemplate: #{ spec: #{ template: #{ spec: #{
           restartPolicy: "OnFailure", nodeSelector: held_pool(ns),
           containers: [#{ name: "compact", image: "registry.example/operator:1" }] } } } } } },
];
#{ output: application(#{ components: [k8s_objects(addon, objects)],
    policies: [topology("where", parameter.clusters)] }) }
"#;
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.3.0\ndescription: Fixture operator {name}\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    clusters: list(string()).optional(),\n}\n",
        )
        .file("template.rhai", &format!("{HELD_POOL_RHAI}{template}"))
}

/// Polls `check` every 250 ms for at most `limit`.
async fn within<T, F, Fut>(limit: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = std::time::Instant::now();
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn ready_of(addon: &Value) -> (String, String) {
    let ready = condition(addon, "Ready").cloned().unwrap_or(Value::Null);
    (
        ready["status"].as_str().unwrap_or_default().to_owned(),
        ready["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// The `Addon`'s `Ready` reason and the phase `addonctl status -o json` says: one word, the
/// reason being the phase capitalised.
fn assert_one_vocabulary(sb: &Sandbox, addon: &Value, phase: &str) {
    let output = sb
        .cli()
        .args([
            "status",
            addon["metadata"]["name"].as_str().unwrap(),
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(status["phase"], phase, "addonctl status: {status:#}");
    let reason = condition(addon, "Ready").unwrap()["reason"].clone();
    let capitalised = format!("{}{}", phase[..1].to_uppercase(), &phase[1..]);
    assert_eq!(reason, json!(capitalised), "the Addon: {addon:#}");
    assert_eq!(
        addonctl::controller::crd::reason_phase(&capitalised).map(|p| p.to_string()),
        Some(phase.to_owned())
    );
}

/// The per-cluster health `addonctl status -o json` reads: (cluster, ready, workloads, missing).
fn cli_health(sb: &Sandbox, name: &str) -> Vec<(String, usize, usize, usize)> {
    let output = sb
        .cli()
        .args(["status", name, "-o", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    status["resources"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|cluster| {
            let resources = cluster["resources"].as_array().cloned().unwrap_or_default();
            let workloads: Vec<&Value> = resources
                .iter()
                .filter(|r| {
                    ["Deployment", "StatefulSet", "DaemonSet"]
                        .contains(&r["kind"].as_str().unwrap_or(""))
                })
                .collect();
            (
                cluster["cluster"].as_str().unwrap_or_default().to_owned(),
                workloads.iter().filter(|r| r["state"] == "ready").count(),
                workloads.len(),
                resources.iter().filter(|r| r["state"] == "missing").count(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn drift_is_corrected_ready_or_not_and_ready_means_every_selected_cluster_is_healthy() {
    let name = "vault-op";
    let addon_dir = operator(name);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon_dir]);
    install_crd(&sb).await;
    sb.join("m1", managed(1), &[("env", "prod")]).await;
    sb.join("m2", managed(2), &[("env", "dev")]).await;
    let m1 = managed(1).admin().await;
    let ns = sb.ns().to_owned();

    let output = sb
        .cli()
        .args([
            "enable",
            name,
            "--declarative",
            "--cluster-selector",
            "env=prod",
        ])
        .args(["--drift", "correct"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let controller = Child::start(&sb, &["--leader-elect=false", "--drift-interval", "5s"]).await;

    // Applied on m1 only, its pods held: not ready, and the status says so, counted alike.
    let deployment = within(Duration::from_secs(60), "the Deployment on m1", || async {
        get_on(&m1, Kind::DEPLOYMENT, Some(&ns), name).await
    })
    .await;
    assert_eq!(deployment["spec"]["replicas"], 1);
    let waiting = within(
        Duration::from_secs(60),
        "the Addon's status at the first apply",
        || async {
            let addon = addon(&sb, name).await?;
            (addon["status"]["clusterSummary"] == "0/1").then_some(addon)
        },
    )
    .await;
    let (ready, message) = ready_of(&waiting);
    assert_eq!(ready, "False", "nothing is ready: {waiting:#}");
    assert!(message.contains("0 of 1 cluster(s) healthy"), "{message}");
    assert!(
        message.contains("m1") && message.contains("0/1 workloads ready"),
        "{message}"
    );
    assert_eq!(waiting["status"]["clusters"][0]["name"], "m1");
    assert_eq!(waiting["status"]["clusters"][0]["health"], "progressing");
    assert_eq!(cli_health(&sb, name), [("m1".to_owned(), 0, 1, 0)]);
    assert_one_vocabulary(&sb, &waiting, "enabling");

    // Not ready yet, a deleted object is put back all the same.
    let services: kube::Api<k8s_openapi::api::core::v1::Service> =
        kube::Api::namespaced(m1.client().clone(), &ns);
    let service = format!("{name}-metrics");
    services
        .delete(&service, &kube::api::DeleteParams::default())
        .await
        .unwrap();
    within(
        Duration::from_secs(20),
        "the Service put back while not ready",
        || async { get_on(&m1, Kind::SERVICE, Some(&ns), &service).await },
    )
    .await;

    // Once the pods run, Ready follows, with the same count as clusterSummary and `status`.
    release_pods_on(&m1, &ns).await;
    let ready_addon = within(
        Duration::from_secs(90),
        "Ready=True once the pods run",
        || async {
            let addon = addon(&sb, name).await?;
            (ready_of(&addon).0 == "True").then_some(addon)
        },
    )
    .await;
    assert_eq!(ready_of(&ready_addon).1, "healthy on 1 of 1 cluster(s)");
    assert_eq!(ready_addon["status"]["clusterSummary"], "1/1");
    assert_eq!(ready_addon["status"]["clusters"][0]["health"], "healthy");
    assert!(
        ready_addon["status"]["clusters"][0]["message"].is_null(),
        "no stale message: {ready_addon:#}"
    );
    assert_eq!(cli_health(&sb, name), [("m1".to_owned(), 1, 1, 0)]);
    assert_one_vocabulary(&sb, &ready_addon, "enabled");

    // What the user did on m1: scale the Deployment, delete the Service, change the schedule.
    let manager = kube::api::PatchParams {
        field_manager: Some("kubectl-edit".to_owned()),
        ..kube::api::PatchParams::default()
    };
    let deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(m1.client().clone(), &ns);
    deployments
        .patch(
            name,
            &manager,
            &kube::api::Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    services
        .delete(&service, &kube::api::DeleteParams::default())
        .await
        .unwrap();
    let cron_jobs: kube::Api<k8s_openapi::api::batch::v1::CronJob> =
        kube::Api::namespaced(m1.client().clone(), &ns);
    let cron_job = format!("{name}-compaction");
    cron_jobs
        .patch(
            &cron_job,
            &manager,
            &kube::api::Patch::Merge(json!({"spec": {"schedule": "1 1 * * *"}})),
        )
        .await
        .unwrap();

    // Each is put back within the interval (5 s; the bound leaves room for a busy machine).
    within(Duration::from_secs(30), "every drift corrected", || async {
        let replicas =
            get_on(&m1, Kind::DEPLOYMENT, Some(&ns), name).await?["spec"]["replicas"].clone();
        let service = get_on(&m1, Kind::SERVICE, Some(&ns), &service).await;
        let schedule =
            get_on(&m1, CRON_JOB, Some(&ns), &cron_job).await?["spec"]["schedule"].clone();
        (replicas == 1 && service.is_some() && schedule == "17 3 * * *").then_some(())
    })
    .await;
    // Reported as corrected, or (once an apply that followed put the rest back) in sync:
    // never `Drifted=True`, never stale.
    let (reason, message) = within(
        Duration::from_secs(30),
        "Drifted=False (Corrected or InSync) reported",
        || async {
            let addon = addon(&sb, name).await?;
            let drifted = condition(&addon, "Drifted")?;
            (drifted["status"] == "False"
                && (drifted["reason"] == "Corrected" || drifted["reason"] == "InSync"))
                .then(|| {
                    (
                        drifted["reason"].as_str().unwrap_or_default().to_owned(),
                        drifted["message"].as_str().unwrap_or_default().to_owned(),
                    )
                })
        },
    )
    .await;
    if reason == "Corrected" {
        assert!(message.contains("applied again"), "{message}");
    }
    let (_, metrics) = controller.get("/metrics").await;
    // At least the correction made while not ready counts; the user's three changes were put
    // back (checked above) by the drift check, or by the apply that follows when a re-created
    // object's new uid enters the record, whichever ran first.
    let corrections = metric(
        &metrics,
        &format!("addonctl_controller_drift_corrections_total{{addon=\"{name}\"}}"),
    );
    assert!(corrections >= 1, "{metrics}");
    // m2 (env=dev) was never a target.
    let m2 = managed(2).admin().await;
    assert!(get_on(&m2, Kind::DEPLOYMENT, Some(&ns), name)
        .await
        .is_none());
}
