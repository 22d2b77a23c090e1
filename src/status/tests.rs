//! Status decisions against the in-process fake API: the phase of an addon (from its
//! Application, or from what the direct engine dispatched) and per-cluster health.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::health::{ClusterStatus, ResourceState, ResourceStatus};
use super::phase::{targeted_clusters, untargeted_clusters};
use super::{phase, phase_of_application, status, Phase};
use crate::cluster::fake::FakeApi;
use crate::context::{Context, Settings};
use crate::state::record::{
    ClusterInventory, DispatchedObject, ObjectRef, PendingRevision, Record,
};
use crate::state::Installed;

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
                revision: None,
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

/// The ConfigMaps of namespace `team` (read with a metadata-only list, not a GET).
const TEAM_CONFIG_MAPS: &str = "/api/v1/namespaces/team/configmaps";

/// A control plane holding `record`'s Secret (and no ConfigMap in `team`).
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
        TEAM_CONFIG_MAPS,
        200,
        list("PartialObjectMetadataList", vec![settings()]),
    )
}

fn context(api: &FakeApi) -> Context {
    Context::with_cluster(&Settings::new("vela-system"), api.cluster("local"))
        .expect("a context over the fake API")
}

#[tokio::test]
async fn a_dispatched_addon_whose_deployment_has_its_ready_replicas_is_enabled() {
    let api = serving(&record(&["local"]), deployment(2, 2));

    let status = status(context(&api).state(), "a", None)
        .await
        .expect("status");

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

    let status = status(context(&api).state(), "a", None)
        .await
        .expect("status");

    assert_eq!(status.phase, Phase::Enabling);
    assert_eq!(
        (status.workload_count, status.ready_workload_count),
        (Some(1), Some(0))
    );
    assert_eq!(status.resources[0].readiness(), (0, 1, 0));
}

#[tokio::test]
async fn a_missing_object_is_shown_missing_and_its_workload_not_ready() {
    // Neither the Deployment (404) nor the ConfigMap (an empty list) is there.
    let api = api(&record(&["local"])).on(
        "GET",
        TEAM_CONFIG_MAPS,
        200,
        list("PartialObjectMetadataList", Vec::new()),
    );

    let status = status(context(&api).state(), "a", None)
        .await
        .expect("status");

    assert_eq!(status.phase, Phase::Enabling);
    let local = &status.resources[0];
    assert!(local.resources.iter().all(|r| !r.exists));
    assert_eq!(local.readiness(), (0, 1, 2));
    assert_eq!(local.resources[0].replicas, None);
}

#[tokio::test]
async fn a_cluster_no_longer_joined_fails_the_addon_naming_that_cluster() {
    let api = serving(&record(&["local", "gone"]), deployment(1, 1));

    let status = status(context(&api).state(), "a", None)
        .await
        .expect("status");

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

    let status = status(context(&api).state(), "a", None)
        .await
        .expect("status");

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
    assert!(
        api.requests().contains(&format!("GET {TEAM_CONFIG_MAPS}")),
        "the planned ConfigMap is looked for: {:?}",
        api.requests()
    );
    assert!(status.resources[0].resources[1].exists);
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

    let status = status(context(&api).state(), "b", None)
        .await
        .expect("status");

    assert_eq!(status.phase, Phase::Failed);
    assert_eq!(status.installed_version.as_deref(), Some("2.0.0"));
    assert_eq!(status.registry.as_deref(), Some("KubeVela"));
    assert_eq!(status.clusters, ["local"]);

    let missing = super::status(context(&api).state(), "c", None)
        .await
        .expect("status");
    assert_eq!(missing.phase, Phase::Disabled);
}

#[tokio::test]
async fn an_application_kubevela_has_not_reported_on_is_enabling_with_the_reason() {
    let api = |app_status: Value| {
        FakeApi::default()
            .serves("v1", "secrets", "Secret")
            .serves("core.oam.dev/v1beta1", "applications", "Application")
            .on("GET", SECRETS, 200, list("SecretList", Vec::new()))
            .on(
                "GET",
                APPLICATIONS,
                200,
                list("ApplicationList", vec![application(app_status)]),
            )
    };

    for unreported in [json!({}), Value::Null] {
        let api = api(unreported);
        let status = status(context(&api).state(), "b", None)
            .await
            .expect("status");
        assert_eq!(status.phase, Phase::Enabling);
        let reason = status.reason.expect("a reason");
        assert!(
            reason.contains("KubeVela has not reported on `addon-b` yet; is vela-core running?"),
            "{reason}"
        );
    }

    // Once KubeVela reports, its word stands alone.
    let api = api(json!({"status": "runningWorkflow", "workflow": {"steps": []}}));
    let status = status(context(&api).state(), "b", None)
        .await
        .expect("status");
    assert_eq!(status.phase, Phase::Enabling);
    assert_eq!(status.reason, None);
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
    // Suspended whatever the phase, as KubeVela says.
    assert_eq!(
        phase(json!({"status": "running", "workflow": {"suspend": true}})),
        Phase::Suspend
    );
    assert_eq!(phase(json!({"status": "deleting"})), Phase::Disabling);
    let mut deleted = application(json!({"status": "running"}));
    deleted["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(phase_of_application(&deleted), Phase::Disabling);
}

fn installed(record: Option<Record>, application: Option<Value>) -> Installed {
    Installed {
        name: "a".to_owned(),
        version: "1.0.0".to_owned(),
        registry: "local".to_owned(),
        application,
        record,
    }
}

fn cluster(
    name: &str,
    error: Option<&str>,
    web: (bool, Option<i64>, Option<i64>),
) -> ClusterStatus {
    let (exists, replicas, ready_replicas) = web;
    ClusterStatus {
        cluster: name.to_owned(),
        error: error.map(str::to_owned),
        version: None,
        parameters: None,
        resources: vec![ResourceStatus {
            kind: "Deployment".to_owned(),
            namespace: Some("team".to_owned()),
            name: "web".to_owned(),
            exists,
            state: ResourceState::of("Deployment", exists, replicas, ready_replicas),
            replicas,
            ready_replicas,
            creation_timestamp: None,
            api_version: "apps/v1".to_owned(),
            resource_version: exists.then(|| "7".to_owned()),
        }],
    }
}

#[test]
fn the_one_phase_follows_installation_application_pending_revision_and_workloads() {
    assert_eq!(phase(None, None), Phase::Disabled);
    let running = application(json!({"status": "running"}));
    assert_eq!(
        phase(Some(&installed(None, Some(running))), None),
        Phase::Enabled
    );
    let direct = installed(Some(record(&["m1"])), None);
    // Not read from its clusters: what the record says.
    assert_eq!(phase(Some(&direct), None), Phase::Enabled);
    let ready = [cluster("m1", None, (true, Some(2), Some(2)))];
    assert_eq!(phase(Some(&direct), Some(&ready)), Phase::Enabled);
    let short = [
        cluster("m1", None, (true, Some(2), Some(2))),
        cluster("m2", None, (true, Some(2), Some(1))),
    ];
    assert_eq!(phase(Some(&direct), Some(&short)), Phase::Enabling);
    let missing = [cluster("m1", None, (false, None, None))];
    assert_eq!(phase(Some(&direct), Some(&missing)), Phase::Enabling);
    let broken = [cluster("m1", Some("unreachable"), (true, Some(1), Some(1)))];
    assert_eq!(phase(Some(&direct), Some(&broken)), Phase::Failed);
    assert_eq!(
        super::phase::failure_reason(&broken).as_deref(),
        Some("m1: unreachable")
    );
    let mut pending = record(&["m1"]);
    pending.pending = Some(PendingRevision {
        version: "1.1.0".to_owned(),
        inventory: Vec::new(),
        dispatched: BTreeMap::new(),
    });
    let pending = installed(Some(pending), None);
    assert_eq!(phase(Some(&pending), None), Phase::Enabling);
    assert_eq!(phase(Some(&pending), Some(&ready)), Phase::Enabling);
}

#[test]
fn clusters_on_different_versions_make_the_phase_upgrading_unless_one_failed() {
    let mut mixed = record(&["m1", "m2"]);
    mixed.version = "1.1.0".to_owned();
    if let Some(m1) = mixed.dispatched.get_mut("m1") {
        m1.revision = Some(crate::state::record::ClusterRevision {
            version: "1.1.0".to_owned(),
            number: Some(2),
            parameters: None,
        });
    }
    if let Some(m2) = mixed.dispatched.get_mut("m2") {
        m2.revision = Some(crate::state::record::ClusterRevision {
            version: "1.0.0".to_owned(),
            number: Some(1),
            parameters: None,
        });
    }
    assert_eq!(
        super::phase::upgrade_progress(&mixed).as_deref(),
        Some("1 of 2 clusters on 1.1.0 (`m2` on 1.0.0)")
    );
    let mixed = installed(Some(mixed), None);
    let ready = [
        cluster("m1", None, (true, Some(2), Some(2))),
        cluster("m2", None, (true, Some(2), Some(2))),
    ];
    assert_eq!(phase(Some(&mixed), None), Phase::Upgrading);
    assert_eq!(phase(Some(&mixed), Some(&ready)), Phase::Upgrading);
    let short = [
        cluster("m1", None, (true, Some(2), Some(1))),
        cluster("m2", None, (true, Some(2), Some(2))),
    ];
    assert_eq!(phase(Some(&mixed), Some(&short)), Phase::Upgrading);
    let broken = [cluster("m1", Some("unreachable"), (true, Some(1), Some(1)))];
    assert_eq!(phase(Some(&mixed), Some(&broken)), Phase::Failed);
    // Every cluster on the record's version (or written before clusters had versions): not mixed.
    assert_eq!(super::phase::upgrade_progress(&record(&["m1"])), None);
}

#[test]
fn a_cluster_held_at_an_older_revision_of_the_version_makes_the_phase_upgrading() {
    let mut held = record(&["m1", "m2"]);
    let revision = |number: u32| {
        serde_json::from_value(json!({
            "revision": number, "updated": "2026-01-01T00:00:00Z", "version": "1.0.0",
            "registry": "local", "status": "deployed", "description": "upgrade",
            "argsHash": "", "packageDigest": "", "packageKept": true,
            "inventoryDigest": "", "objects": 2,
        }))
        .expect("a revision")
    };
    held.revisions = vec![revision(3), revision(4)];
    for (cluster, number) in [("m1", 4), ("m2", 3)] {
        if let Some(inventory) = held.dispatched.get_mut(cluster) {
            inventory.revision = Some(crate::state::record::ClusterRevision {
                version: "1.0.0".to_owned(),
                number: Some(number),
                parameters: None,
            });
        }
    }
    assert!(held.runs_current("m1") && !held.runs_current("m2"));
    assert_eq!(
        super::phase::upgrade_progress(&held).as_deref(),
        Some("1 of 2 clusters on 1.0.0 revision 4 (`m2` on revision 3)")
    );
    assert_eq!(
        phase(Some(&installed(Some(held), None)), None),
        Phase::Upgrading
    );
}

#[test]
fn an_object_is_ready_not_ready_or_missing() {
    assert_eq!(
        ResourceState::of("Deployment", true, Some(2), Some(2)),
        ResourceState::Ready
    );
    assert_eq!(
        ResourceState::of("StatefulSet", true, Some(2), Some(1)),
        ResourceState::NotReady
    );
    assert_eq!(
        ResourceState::of("ConfigMap", true, None, None),
        ResourceState::Ready
    );
    assert_eq!(
        ResourceState::of("ConfigMap", false, None, None),
        ResourceState::Missing
    );
    assert_eq!(
        serde_json::to_value(ResourceState::NotReady).expect("json"),
        json!("notReady")
    );
}

#[test]
fn clusters_a_topology_does_not_name_are_untargeted() {
    let list = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
    let no_topology = json!({"spec": {"components": []}});
    assert_eq!(
        untargeted_clusters(Some(&list(&["m1", "m2"])), &no_topology, Some(&[])),
        ["m1", "m2"]
    );
    assert!(untargeted_clusters(None, &no_topology, Some(&[])).is_empty());
    assert!(untargeted_clusters(Some(&list(&["*"])), &no_topology, Some(&[])).is_empty());
    let topology = |properties: Value| {
        json!({"spec": {"components": [], "policies": [
            {"name": "t", "type": "topology", "properties": properties}]}})
    };
    let named = topology(json!({"clusters": ["m1"]}));
    assert_eq!(
        untargeted_clusters(Some(&list(&["m1", "m3"])), &named, Some(&[])),
        ["m3"]
    );
}

#[test]
fn a_label_selector_reaches_the_joined_clusters_whose_labels_match() {
    let list = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
    let cluster = |name: &str, labels: &[(&str, &str)]| crate::cluster::set::ClusterInfo {
        name: name.to_owned(),
        endpoint: format!("https://{name}.example"),
        credential_type: crate::cluster::set::CredentialType::ServiceAccountToken,
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    };
    let joined = [
        cluster("eu-1", &[("region", "eu"), ("tier", "prod")]),
        cluster("eu-2", &[("region", "eu")]),
        cluster("us-1", &[("region", "us")]),
    ];
    let topology = |properties: Value| {
        json!({"spec": {"components": [], "policies": [
            {"name": "t", "type": "topology", "properties": properties}]}})
    };
    let eu = topology(json!({"clusterLabelSelector": {"region": "eu"}}));
    let requested = list(&["eu-1", "eu-2", "us-1", "gone", "local"]);
    assert_eq!(
        untargeted_clusters(Some(&requested), &eu, Some(&joined)),
        ["us-1", "gone", "local"]
    );
    // Every label of the selector must match.
    let eu_prod = topology(json!({"clusterLabelSelector": {"region": "eu", "tier": "prod"}}));
    assert_eq!(
        untargeted_clusters(Some(&requested), &eu_prod, Some(&joined)),
        ["eu-2", "us-1", "gone", "local"]
    );
    // `{}` selects every cluster, `local` included; KubeVela's older `clusterSelector` too.
    let every = topology(json!({"clusterLabelSelector": {}}));
    assert_eq!(
        untargeted_clusters(Some(&requested), &every, Some(&joined)),
        ["gone"]
    );
    let older = topology(json!({"clusterSelector": {"region": "us"}}));
    assert_eq!(
        untargeted_clusters(Some(&list(&["us-1", "eu-1"])), &older, Some(&joined)),
        ["eu-1"]
    );
    // A named cluster and a selector in two policies: either reaches.
    let both = json!({"spec": {"components": [], "policies": [
        {"name": "a", "type": "topology", "properties": {"clusters": ["local"]}},
        {"name": "b", "type": "topology", "properties": {"clusterLabelSelector": {"region": "us"}}}]}});
    assert_eq!(
        untargeted_clusters(Some(&requested), &both, Some(&joined)),
        ["eu-1", "eu-2", "gone"]
    );
    // Labels unknown (the clusters could not be read): a selector may reach any cluster.
    assert!(untargeted_clusters(Some(&requested), &eu, None).is_empty());
}

#[test]
fn status_targets_the_dispatched_clusters_not_the_argument() {
    let direct = installed(Some(record(&["m1", "m2"])), None);
    let args = serde_json::Map::from_iter([("clusters".to_owned(), json!(["m9"]))]);
    assert_eq!(targeted_clusters(&direct, &args), ["m1", "m2"]);
    let app = installed(None, Some(application(json!({"status": "running"}))));
    assert_eq!(targeted_clusters(&app, &args), ["local"]);
}

#[test]
fn a_watch_backs_off_from_100ms_to_2s() {
    let mut interval = super::wait::FIRST_INTERVAL;
    let mut seen = vec![interval];
    while interval < super::wait::MAX_INTERVAL {
        interval = super::wait::backed_off(interval);
        seen.push(interval);
    }
    let millis: Vec<u128> = seen.iter().map(Duration::as_millis).collect();
    assert_eq!(millis, [100, 200, 400, 800, 1600, 2000]);
    assert_eq!(
        super::wait::backed_off(super::wait::MAX_INTERVAL),
        super::wait::MAX_INTERVAL
    );
}

#[tokio::test]
async fn a_status_within_some_clusters_reads_those_alone() {
    // `gone` is not joined: reading it would fail the addon.
    let api = serving(&record(&["local", "gone"]), deployment(2, 2));
    let ctx = context(&api);

    let only = std::collections::BTreeSet::from(["local".to_owned()]);
    let within = super::status_within(ctx.state(), "a", None, Some(&only))
        .await
        .expect("status");
    let whole = status(ctx.state(), "a", None).await.expect("status");

    let clusters = |s: &super::Status| -> Vec<String> {
        s.resources.iter().map(|c| c.cluster.clone()).collect()
    };
    assert_eq!(clusters(&within), ["local"]);
    assert_eq!(within.phase, Phase::Enabled);
    assert_eq!(clusters(&whole), ["gone", "local"]);
    assert_eq!(whole.phase, Phase::Failed);
}

#[test]
fn a_workload_counts_only_the_pods_ready_at_its_current_version() {
    use super::health::replicas_of;
    let deployment = |generation: i64, observed: i64, total: i64, updated: i64, ready: i64| {
        json!({"metadata": {"generation": generation}, "spec": {"replicas": 2},
               "status": {"observedGeneration": observed, "replicas": total,
                          "updatedReplicas": updated, "readyReplicas": ready}})
    };
    // Settled: every pod new and ready.
    assert_eq!(
        replicas_of("Deployment", &deployment(2, 2, 2, 2, 2)),
        (Some(2), Some(2))
    );
    // The new generation not yet observed: the ready pods are the old version's.
    assert_eq!(
        replicas_of("Deployment", &deployment(3, 2, 2, 2, 2)),
        (Some(2), Some(0))
    );
    // Mid-rollout (one surge pod): the two old pods serve, the new one is not ready yet.
    assert_eq!(
        replicas_of("Deployment", &deployment(3, 3, 3, 1, 2)),
        (Some(2), Some(0))
    );
    // One new pod ready, one old one left.
    assert_eq!(
        replicas_of("Deployment", &deployment(3, 3, 3, 2, 3)),
        (Some(2), Some(2))
    );
    // A StatefulSet updated on deletion keeps its ready pods counted.
    let on_delete = json!({"metadata": {"generation": 2},
        "spec": {"replicas": 2, "updateStrategy": {"type": "OnDelete"}},
        "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 0,
                   "readyReplicas": 2}});
    assert_eq!(replicas_of("StatefulSet", &on_delete), (Some(2), Some(2)));
    // A DaemonSet rolling to a new version on one of two nodes.
    let daemon_set = json!({"metadata": {"generation": 2},
        "status": {"observedGeneration": 2, "desiredNumberScheduled": 2,
                   "currentNumberScheduled": 2, "updatedNumberScheduled": 1, "numberReady": 2}});
    assert_eq!(replicas_of("DaemonSet", &daemon_set), (Some(2), Some(1)));
    // Without a status (just created): nothing ready.
    let fresh = json!({"metadata": {"generation": 1}, "spec": {"replicas": 1}});
    assert_eq!(replicas_of("Deployment", &fresh), (Some(1), Some(0)));
}
