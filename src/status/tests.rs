//! Status decisions against the in-process fake API: the phase of an addon (from its
//! Application, or from what the direct engine dispatched) and per-cluster health.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{phase_of_application, status, Phase};
use crate::cluster::fake::FakeApi;
use crate::context::{Context, Settings};
use crate::state::record::{
    ClusterInventory, DispatchedObject, ObjectRef, PendingRevision, Record,
};

const SECRETS: &str = "/api/v1/namespaces/vela-system/secrets";
const APPLICATIONS: &str = "/apis/core.oam.dev/v1beta1/namespaces/vela-system/applications";
const WEB: &str = "/apis/apps/v1/namespaces/team/deployments/web";

fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "metadata": {}, "items": items})
}

/// An addon `a` the direct engine dispatched to `clusters`: the Deployment `team/web`, and the
/// ConfigMap `team/settings`.
fn record(clusters: &[&str]) -> Record {
    let mut record: Record = serde_json::from_value(json!({
        "name": "a", "version": "1.0.0", "registry": "local", "installedBy": "user",
        "argsHash": "", "application": false,
    }))
    .expect("a record");
    let object = |api_version: &str, kind: &str, name: &str| DispatchedObject {
        object: ObjectRef {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: Some("team".to_owned()),
            name: name.to_owned(),
        },
        uid: format!("{name}-uid"),
        created: true,
    };
    for cluster in clusters {
        record.dispatched.insert(
            (*cluster).to_owned(),
            ClusterInventory {
                objects: vec![
                    object("apps/v1", "Deployment", "web"),
                    object("v1", "ConfigMap", "settings"),
                ],
                error: None,
            },
        );
    }
    record
}

fn deployment(replicas: i64, ready: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "team", "uid": "web-uid"},
           "spec": {"replicas": replicas}, "status": {"readyReplicas": ready}})
}

fn settings() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "settings", "namespace": "team", "uid": "settings-uid"}})
}

/// A control plane holding `record`'s Secret.
fn api(record: &Record) -> FakeApi {
    FakeApi::default()
        .serves("v1", "secrets", "Secret")
        .serves("v1", "configmaps", "ConfigMap")
        .serves("apps/v1", "deployments", "Deployment")
        .on(
            "GET",
            SECRETS,
            200,
            list("SecretList", vec![record.to_secret("vela-system")]),
        )
}

/// [`api`], with the Deployment `team/web` as `web` and the ConfigMap `team/settings`.
fn serving(record: &Record, web: Value) -> FakeApi {
    api(record).on("GET", WEB, 200, web).on(
        "GET",
        "/api/v1/namespaces/team/configmaps/settings",
        200,
        settings(),
    )
}

fn context(api: &FakeApi) -> Context {
    Context::with_cluster(&Settings::new("vela-system"), api.cluster("local"))
        .expect("a context over the fake API")
}

#[tokio::test]
async fn a_dispatched_addon_whose_deployment_has_its_ready_replicas_is_enabled() {
    let api = serving(&record(&["local"]), deployment(2, 2));

    let status = status(&context(&api), "a", false).await.expect("status");

    assert_eq!(status.phase, Phase::Enabled);
    assert_eq!(
        (status.workload_count, status.ready_workload_count),
        (Some(1), Some(1))
    );
    let local = &status.resources[0];
    assert_eq!(local.cluster, "local");
    assert_eq!(local.readiness(), (1, 1, 0));
    assert_eq!(local.resources[0].replicas, Some(2));
    assert_eq!(local.resources[0].ready_replicas, Some(2));
    assert!(
        api.writes().is_empty(),
        "status writes nothing: {:?}",
        api.writes()
    );
}

#[tokio::test]
async fn a_deployment_short_of_ready_replicas_keeps_the_addon_enabling() {
    let api = serving(&record(&["local"]), deployment(3, 1));

    let status = status(&context(&api), "a", false).await.expect("status");

    assert_eq!(status.phase, Phase::Enabling);
    assert_eq!(
        (status.workload_count, status.ready_workload_count),
        (Some(1), Some(0))
    );
    assert_eq!(status.resources[0].readiness(), (0, 1, 0));
}

#[tokio::test]
async fn a_missing_object_is_shown_missing_and_its_workload_not_ready() {
    // Neither the Deployment nor the ConfigMap is there (404).
    let api = api(&record(&["local"]));

    let status = status(&context(&api), "a", false).await.expect("status");

    assert_eq!(status.phase, Phase::Enabling);
    let local = &status.resources[0];
    assert!(local.resources.iter().all(|r| !r.exists));
    assert_eq!(local.readiness(), (0, 1, 2));
    assert_eq!(local.resources[0].replicas, None);
}

#[tokio::test]
async fn a_cluster_no_longer_joined_fails_the_addon_naming_that_cluster() {
    let api = serving(&record(&["local", "gone"]), deployment(1, 1));

    let status = status(&context(&api), "a", false).await.expect("status");

    assert_eq!(status.phase, Phase::Failed);
    let reason = status.reason.unwrap_or_default();
    assert!(reason.starts_with("gone: "), "{reason}");
    assert!(reason.contains("no longer joined"), "{reason}");
    let health: BTreeMap<&str, (usize, usize, usize)> = status
        .resources
        .iter()
        .map(|c| (c.cluster.as_str(), c.readiness()))
        .collect();
    assert_eq!(
        health,
        BTreeMap::from([("gone", (0, 0, 0)), ("local", (1, 1, 0))])
    );
}

#[tokio::test]
async fn a_pending_revision_keeps_the_addon_enabling_and_its_planned_objects_are_read() {
    let mut record = record(&["local"]);
    let planned = record.dispatched["local"].objects.clone();
    if let Some(local) = record.dispatched.get_mut("local") {
        local.objects.truncate(1);
    }
    record.pending = Some(PendingRevision {
        version: "1.1.0".to_owned(),
        inventory: Vec::new(),
        dispatched: BTreeMap::from([("local".to_owned(), planned)]),
    });
    let api = serving(&record, deployment(1, 1));

    let status = status(&context(&api), "a", false).await.expect("status");

    assert_eq!(status.phase, Phase::Enabling);
    assert!(
        status
            .notes
            .iter()
            .any(|n| n.starts_with("revision 1.1.0 is pending")),
        "{:?}",
        status.notes
    );
    let names: Vec<&str> = status.resources[0]
        .resources
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["web", "settings"]);
    assert!(api
        .requests()
        .contains(&"GET /api/v1/namespaces/team/configmaps/settings".to_owned()));
}

fn application(status: Value) -> Value {
    json!({"apiVersion": "core.oam.dev/v1beta1", "kind": "Application",
           "metadata": {"name": "addon-b", "namespace": "vela-system",
                        "labels": {"addons.oam.dev/name": "b", "addons.oam.dev/version": "2.0.0",
                                   "addons.oam.dev/registry": "KubeVela"}},
           "spec": {"components": []}, "status": status})
}

#[tokio::test]
async fn an_addon_with_an_application_takes_its_phase_from_it() {
    let api = FakeApi::default()
        .serves("v1", "secrets", "Secret")
        .serves("core.oam.dev/v1beta1", "applications", "Application")
        .on("GET", SECRETS, 200, list("SecretList", Vec::new()))
        .on(
            "GET",
            APPLICATIONS,
            200,
            list(
                "ApplicationList",
                vec![application(json!({"status": "workflowFailed"}))],
            ),
        );

    let status = status(&context(&api), "b", false).await.expect("status");

    assert_eq!(status.phase, Phase::Failed);
    assert_eq!(status.version.as_deref(), Some("2.0.0"));
    assert_eq!(status.registry.as_deref(), Some("KubeVela"));
    assert_eq!(status.clusters, ["local"]);

    let missing = super::status(&context(&api), "c", false)
        .await
        .expect("status");
    assert_eq!(missing.phase, Phase::Disabled);
}

#[test]
fn an_applications_phase_follows_its_status_and_deletion() {
    let phase = |status: Value| phase_of_application(&application(status));
    assert_eq!(phase(json!({"status": "running"})), Phase::Enabled);
    assert_eq!(phase(json!({"status": "runningWorkflow"})), Phase::Enabling);
    assert_eq!(phase(json!({})), Phase::Enabling);
    assert_eq!(
        phase(json!({"status": "workflowTerminated"})),
        Phase::Failed
    );
    assert_eq!(
        phase(json!({"status": "workflowSuspending"})),
        Phase::Suspend
    );
    assert_eq!(
        phase(json!({"status": "runningWorkflow", "workflow": {"suspend": true}})),
        Phase::Suspend
    );
    assert_eq!(phase(json!({"status": "deleting"})), Phase::Disabling);
    let mut deleted = application(json!({"status": "running"}));
    deleted["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(phase_of_application(&deleted), Phase::Disabling);
}
