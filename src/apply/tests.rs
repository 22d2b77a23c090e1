//! Decisions of applying, against the in-process fake API: the control-plane apply order and
//! the prune of what an addon no longer holds (`deletion::remove`).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::control_plane::{apply_order, covers};
use super::deletion::{empty_intent, remove, Removal, Site};
use crate::cluster::fake::FakeApi;
use crate::state::record::{
    ClusterInventory, DispatchedObject, ObjectRef, PendingRevision, Record,
};

const SYSTEM: &str = "vela-system";
const CONFIG_MAP: &str = "/api/v1/namespaces/team/configmaps";

fn kind_and_name(object: &Value) -> String {
    format!("{} {}", object["kind"], object["metadata"]["name"])
}

fn object(kind: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}})
}

#[test]
fn namespaces_and_crds_come_first_then_definitions_config_maps_views_then_other_outputs() {
    let outputs = vec![
        ("cm".to_owned(), object("ConfigMap", "out")),
        ("crd".to_owned(), object("CustomResourceDefinition", "crd")),
        ("ns".to_owned(), object("Namespace", "team")),
    ];
    let definitions = vec![object("ComponentDefinition", "worker")];
    let config_maps = vec![object("ConfigMap", "schema")];
    let views = vec![object("ConfigMap", "view")];

    let order: Vec<String> = apply_order(&outputs, [&definitions, &config_maps, &views])
        .into_iter()
        .map(kind_and_name)
        .collect();

    assert_eq!(
        order,
        [
            r#""Namespace" "team""#,
            r#""CustomResourceDefinition" "crd""#,
            r#""ComponentDefinition" "worker""#,
            r#""ConfigMap" "schema""#,
            r#""ConfigMap" "view""#,
            r#""ConfigMap" "out""#,
        ]
    );
}

fn reference(kind: &str, namespace: Option<&str>, name: &str) -> ObjectRef {
    ObjectRef {
        api_version: "v1".to_owned(),
        kind: kind.to_owned(),
        namespace: namespace.map(str::to_owned),
        name: name.to_owned(),
    }
}

fn recorded(name: &str, uid: &str, created: bool) -> DispatchedObject {
    DispatchedObject {
        object: reference("ConfigMap", Some("team"), name),
        uid: uid.to_owned(),
        created,
    }
}

fn stored(name: &str, uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "team", "uid": uid}})
}

fn deleted() -> Value {
    json!({"apiVersion": "v1", "kind": "Status", "status": "Success", "metadata": {}})
}

trait ConfigMaps {
    /// Serves the ConfigMap `team/<name>` with `uid`, and deletes it.
    fn deletable(self, name: &str, uid: &str) -> Self;
}

impl ConfigMaps for FakeApi {
    fn deletable(self, name: &str, uid: &str) -> Self {
        let path = format!("{CONFIG_MAP}/{name}");
        self.on("GET", &path, 200, stored(name, uid))
            .on("DELETE", &path, 200, deleted())
    }
}

fn api() -> FakeApi {
    FakeApi::default()
        .serves("v1", "configmaps", "ConfigMap")
        .serves_cluster_wide("v1", "namespaces", "Namespace")
}

async fn prune(
    api: &FakeApi,
    objects: &[DispatchedObject],
    others: Option<&BTreeMap<ObjectRef, (String, bool)>>,
    dry_run: bool,
) -> Removal {
    let cluster = api.cluster("m1");
    let site = Site {
        cluster: &cluster,
        name: "m1",
        system_namespace: SYSTEM,
        others,
        dry_run,
        trust_record: false,
    };
    remove(&site, &objects.iter().collect::<Vec<_>>()).await
}

/// The requests on objects (discovery left out), as `METHOD /path`.
fn object_requests(api: &FakeApi) -> Vec<String> {
    let mut requests = api.requests();
    requests.retain(|r| r != "GET /api/v1");
    requests
}

fn names(entries: &[super::deletion::Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.name.as_str()).collect()
}

#[tokio::test]
async fn a_stale_object_addonctl_created_is_deleted_only_while_it_has_the_recorded_uid() {
    let api = api().deletable("old", "u1");

    let removal = prune(&api, &[recorded("old", "u1", true)], None, false).await;

    assert_eq!(names(&removal.deleted), ["old"]);
    assert!(removal.kept.is_empty() && removal.failure.is_none());
    let bodies = api.bodies(&format!("DELETE {CONFIG_MAP}/old"));
    assert_eq!(bodies.len(), 1, "{:?}", api.requests());
    assert_eq!(bodies[0]["preconditions"]["uid"], "u1");
    assert_eq!(bodies[0]["propagationPolicy"], "Background");
    // The uid decides: the object is not read first.
    assert_eq!(object_requests(&api), [format!("DELETE {CONFIG_MAP}/old")]);
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

#[tokio::test]
async fn an_object_re_created_by_someone_else_is_kept_and_not_deleted() {
    // Another uid under the name: the server refuses the precondition (409) and deletes nothing.
    let conflict = status(
        409,
        "Conflict",
        "Precondition failed: UID in precondition: u1, UID in object meta: u2",
    );
    let api = api().on("DELETE", &format!("{CONFIG_MAP}/old"), 409, conflict);

    let removal = prune(&api, &[recorded("old", "u1", true)], None, false).await;

    assert!(removal.deleted.is_empty() && removal.failure.is_none());
    assert_eq!(names(&removal.kept), ["old"]);
    let reason = removal.kept[0].reason.clone().unwrap_or_default();
    assert!(reason.contains("re-created"), "{reason}");
    assert_eq!(object_requests(&api), [format!("DELETE {CONFIG_MAP}/old")]);
    assert_eq!(
        api.bodies(&format!("DELETE {CONFIG_MAP}/old"))[0]["preconditions"]["uid"],
        "u1"
    );
}

#[tokio::test]
async fn an_object_already_gone_is_neither_reported_nor_read() {
    // No route: the fake answers 404 NotFound.
    let api = api();

    let removal = prune(&api, &[recorded("gone", "u1", true)], None, false).await;

    assert!(removal.deleted.is_empty() && removal.kept.is_empty());
    assert!(removal.failure.is_none());
    assert_eq!(object_requests(&api), [format!("DELETE {CONFIG_MAP}/gone")]);
}

#[tokio::test]
async fn an_object_known_only_from_a_plan_is_read_and_deleted_with_the_uid_read() {
    let managed_by = |manager: &str| {
        let mut object = stored("planned", "p1");
        object["metadata"]["managedFields"] = json!([{"manager": manager,
            "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}]);
        object
    };
    let path = format!("{CONFIG_MAP}/planned");
    let api =
        api()
            .on("GET", &path, 200, managed_by("addonctl"))
            .on("DELETE", &path, 200, deleted());

    let removal = prune(&api, &[recorded("planned", "", true)], None, false).await;

    assert_eq!(names(&removal.deleted), ["planned"]);
    assert_eq!(
        object_requests(&api),
        [format!("GET {path}"), format!("DELETE {path}")]
    );
    assert_eq!(
        api.bodies(&format!("DELETE {path}"))[0]["preconditions"]["uid"],
        "p1"
    );

    // Someone else writes it too: not addonctl's alone, kept, not deleted.
    let theirs = self::api().on("GET", &path, 200, managed_by("kubectl"));
    let removal = prune(&theirs, &[recorded("planned", "", true)], None, false).await;
    assert_eq!(names(&removal.kept), ["planned"]);
    assert!(theirs.writes().is_empty(), "{:?}", theirs.writes());
}

#[tokio::test]
async fn a_trusted_record_without_uids_deletes_in_one_request_each() {
    let api = api().deletable("a", "u1").deletable("b", "u2");
    let cluster = api.cluster("local");
    let site = Site {
        cluster: &cluster,
        name: "local",
        system_namespace: SYSTEM,
        others: None,
        dry_run: false,
        trust_record: true,
    };
    let objects = [recorded("a", "", true), recorded("b", "", true)];

    let removal = remove(&site, &objects.iter().collect::<Vec<_>>()).await;

    assert_eq!(names(&removal.deleted), ["a", "b"]);
    let mut requests = object_requests(&api);
    requests.sort();
    assert_eq!(
        requests,
        [
            format!("DELETE {CONFIG_MAP}/a"),
            format!("DELETE {CONFIG_MAP}/b")
        ]
    );
    for name in ["a", "b"] {
        let body = &api.bodies(&format!("DELETE {CONFIG_MAP}/{name}"))[0];
        assert!(
            body.get("preconditions").is_none_or(Value::is_null),
            "{body}"
        );
    }
}

#[tokio::test]
async fn others_objects_and_the_system_namespace_are_kept_without_asking_the_cluster() {
    let api = api();
    let shared = recorded("shared", "u1", true);
    let others = BTreeMap::from([(shared.object.clone(), ("beta".to_owned(), true))]);
    let system = DispatchedObject {
        object: reference("Namespace", None, SYSTEM),
        uid: "n1".to_owned(),
        created: true,
    };

    let removal = prune(&api, &[shared, system], Some(&others), false).await;

    assert_eq!(names(&removal.kept), ["shared", SYSTEM]);
    assert!(removal.kept[0]
        .reason
        .as_deref()
        .is_some_and(|r| r.contains("beta")));
    assert!(removal.deleted.is_empty() && removal.given_back.is_empty());
    assert!(api.requests().is_empty(), "{:?}", api.requests());
}

#[tokio::test]
async fn an_adopted_object_is_given_back_with_an_empty_intent_not_deleted() {
    let path = format!("{CONFIG_MAP}/theirs");
    let api = api().on("GET", &path, 200, stored("theirs", "t1")).on(
        "PATCH",
        &path,
        200,
        stored("theirs", "t1"),
    );
    let adopted = recorded("theirs", "t1", false);

    let removal = prune(&api, std::slice::from_ref(&adopted), None, false).await;

    assert_eq!(names(&removal.given_back), ["theirs"]);
    assert!(removal.deleted.is_empty());
    assert_eq!(api.writes(), [format!("PATCH {path}")]);
    assert_eq!(
        api.bodies(&format!("PATCH {path}")),
        [empty_intent(&adopted.object)]
    );
}

#[tokio::test]
async fn a_dry_run_decides_as_a_real_run_and_writes_nothing() {
    let api = api()
        .on(
            "GET",
            &format!("{CONFIG_MAP}/old"),
            200,
            stored("old", "u1"),
        )
        .on(
            "GET",
            &format!("{CONFIG_MAP}/theirs"),
            200,
            stored("theirs", "t1"),
        )
        .on(
            "GET",
            &format!("{CONFIG_MAP}/moved"),
            200,
            stored("moved", "m2"),
        );
    let objects = [
        recorded("old", "u1", true),
        recorded("theirs", "t1", false),
        recorded("moved", "m1", true),
        recorded("gone", "g1", true),
    ];

    let removal = prune(&api, &objects, None, true).await;

    assert_eq!(names(&removal.deleted), ["old"]);
    assert_eq!(names(&removal.given_back), ["theirs"]);
    // Re-created under another uid: kept, as a real run's precondition would.
    assert_eq!(names(&removal.kept), ["moved"]);
    assert!(removal.failure.is_none());
    assert!(api.writes().is_empty(), "{:?}", api.writes());
}

#[tokio::test]
async fn a_failure_stops_the_removal_and_returns_what_is_left_for_the_record() {
    let failure = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "message": "etcd is down", "reason": "InternalError", "code": 500});
    let api = api()
        .deletable("a", "u1")
        .on("DELETE", &format!("{CONFIG_MAP}/b"), 500, failure);
    // The ConfigMaps go together; the namespace they live in only after them.
    let objects = [
        recorded("a", "u1", true),
        recorded("b", "u2", true),
        team_namespace(),
    ];

    let removal = prune(&api, &objects, None, false).await;

    assert_eq!(names(&removal.deleted), ["a"]);
    let (why, left) = removal.failure.expect("the removal stops at `b`");
    assert!(why.contains("etcd is down"), "{why}");
    let left: Vec<&str> = left.iter().map(|o| o.object.name.as_str()).collect();
    assert_eq!(left, ["b", "team"]);
    // Neither checked nor deleted: nothing of the namespace was asked.
    let requests = api.requests();
    for asked in [
        "GET /api".to_owned(),
        format!("GET {CONFIG_MAP}"),
        "DELETE /api/v1/namespaces/team".to_owned(),
    ] {
        assert!(!requests.contains(&asked), "{asked}: {requests:?}");
    }
}

/// A cluster whose discovery lists ConfigMaps and Namespaces, and whose namespace `team` holds
/// the ConfigMaps `items`.
fn namespace_api(items: &[Value]) -> FakeApi {
    api()
        .on(
            "GET",
            "/api",
            200,
            json!({"kind": "APIVersions", "versions": ["v1"]}),
        )
        .on(
            "GET",
            "/apis",
            200,
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": []}),
        )
        .on(
            "GET",
            CONFIG_MAP,
            200,
            json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {}, "items": items}),
        )
        .on(
            "GET",
            "/api/v1/namespaces/team",
            200,
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "team", "uid": "n1"}}),
        )
        .on("DELETE", "/api/v1/namespaces/team", 200, deleted())
}

fn team_namespace() -> DispatchedObject {
    DispatchedObject {
        object: reference("Namespace", None, "team"),
        uid: "n1".to_owned(),
        created: true,
    }
}

#[tokio::test]
async fn a_namespace_holding_someone_elses_object_is_kept_and_one_holding_only_ours_deleted() {
    let api = namespace_api(&[stored("mine", "c1"), stored("notes", "c2")]);
    let ours = recorded("mine", "c1", true);
    let api = api.deletable("mine", "c1");

    let removal = prune(&api, &[ours.clone(), team_namespace()], None, false).await;

    assert_eq!(names(&removal.deleted), ["mine"]);
    assert_eq!(names(&removal.kept), ["team"]);
    let reason = removal.kept[0].reason.clone().unwrap_or_default();
    assert!(reason.contains("ConfigMap `notes`"), "{reason}");
    assert!(!api
        .writes()
        .contains(&"DELETE /api/v1/namespaces/team".to_owned()));

    let api = namespace_api(&[stored("mine", "c1")]).deletable("mine", "c1");
    let removal = prune(&api, &[ours, team_namespace()], None, false).await;
    assert_eq!(names(&removal.deleted), ["mine", "team"]);
    assert!(api
        .writes()
        .contains(&"DELETE /api/v1/namespaces/team".to_owned()));
}

#[tokio::test]
async fn a_namespace_whose_contents_cannot_be_listed_is_kept() {
    // No `/api` answer: discovery fails, so nothing tells what lives in the namespace.
    let api = api().on(
        "GET",
        "/api/v1/namespaces/team",
        200,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "uid": "n1"}}),
    );

    let removal = prune(&api, &[team_namespace()], None, false).await;

    assert!(removal.deleted.is_empty());
    assert_eq!(names(&removal.kept), ["team"]);
    let reason = removal.kept[0].reason.clone().unwrap_or_default();
    assert!(reason.contains("could not be checked"), "{reason}");
    assert!(api.writes().is_empty(), "{:?}", api.writes());
}

fn settled(on: &[(&str, &[DispatchedObject])]) -> Record {
    let mut record: Record = serde_json::from_value(json!({
        "name": "a", "version": "1.0.0", "registry": "local", "installedBy": "user",
        "argsHash": "", "application": false,
    }))
    .expect("a record");
    for (cluster, objects) in on {
        record.dispatched.insert(
            (*cluster).to_owned(),
            ClusterInventory {
                objects: objects.to_vec(),
                error: None,
                revision: None,
            },
        );
    }
    record
}

#[test]
fn a_cluster_the_settled_record_never_had_needs_a_pending_revision_even_when_empty_planned() {
    let web = recorded("web", "u1", true);
    let previous = settled(&[("m1", std::slice::from_ref(&web))]);
    let planned = |on: &[(&str, Vec<DispatchedObject>)]| PendingRevision {
        version: "1.0.0".to_owned(),
        inventory: Vec::new(),
        dispatched: on
            .iter()
            .map(|(cluster, objects)| ((*cluster).to_owned(), objects.clone()))
            .collect(),
    };
    // Planned without a uid, the same object on the same cluster: covered.
    let unplaced = DispatchedObject {
        uid: String::new(),
        ..web.clone()
    };
    assert!(covers(&previous, &planned(&[("m1", vec![unplaced])])));
    // The same object on a cluster the record does not list: not covered.
    assert!(!covers(
        &previous,
        &planned(&[("m1", vec![web.clone()]), ("m2", vec![web.clone()])])
    ));
    // A cluster with nothing planned on it is still a cluster the record must learn of.
    assert!(!covers(&previous, &planned(&[("m2", Vec::new())])));
}

/// A secret of the system namespace, as a list or a read returns it (written by addonctl alone).
fn system_secret(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": name, "namespace": SYSTEM, "uid": format!("uid-{name}"), "labels": labels,
                        "managedFields": [{"manager": "addonctl", "operation": "Apply",
                                           "apiVersion": "v1", "fieldsType": "FieldsV1",
                                           "fieldsV1": {"f:data": {}}}]}})
}

#[tokio::test]
async fn disable_deletes_the_revisions_before_the_record_and_its_shards_after_it() {
    use crate::apply::disable::{disable_one, DisableOptions};
    use crate::state::Installed;
    let secrets = format!("/api/v1/namespaces/{SYSTEM}/secrets");
    let of =
        |part: &str| json!({"addonctl.io/record-of": "tuned", "addonctl.io/record-part": part});
    let mut api = FakeApi::default().serves("v1", "secrets", "Secret").on(
        "GET",
        &secrets,
        200,
        json!({"apiVersion": "v1", "kind": "SecretList", "metadata": {}, "items": [
            system_secret("addon-record-tuned-rev-1", of("revision")),
            system_secret("addon-record-tuned-rev-2", of("revision")),
            system_secret("addon-record-tuned-0a1b-0", of("shard")),
        ]}),
    );
    for name in [
        "addon-record-tuned",
        "addon-record-tuned-rev-1",
        "addon-record-tuned-rev-2",
        "addon-record-tuned-0a1b-0",
    ] {
        let path = format!("{secrets}/{name}");
        api = api
            .on("GET", &path, 200, system_secret(name, json!({})))
            .on("DELETE", &path, 200, deleted());
    }
    let record: Record = serde_json::from_value(json!({
        "name": "tuned", "version": "1.0.0", "registry": "local", "installedBy": "user",
        "argsHash": "", "application": false,
    }))
    .unwrap();
    let all = BTreeMap::from([(
        "tuned".to_owned(),
        Installed {
            name: "tuned".to_owned(),
            version: "1.0.0".to_owned(),
            registry: "local".to_owned(),
            application: None,
            record: Some(record),
        },
    )]);
    let cluster = api.cluster("local");
    let lock = crate::context::LockOptions::default();
    let ctx = super::Applier {
        cluster: &cluster,
        namespace: SYSTEM,
        engine: crate::context::EngineChoice::Direct,
        lock: &lock,
    };
    let options = DisableOptions {
        force: true,
        prune_dependencies: false,
        dry_run: false,
    };

    disable_one(&ctx, &all, "tuned", &options, &crate::context::NoopReporter)
        .await
        .unwrap();

    let deletes: Vec<String> = api
        .writes()
        .into_iter()
        .filter_map(|w| {
            w.strip_prefix(&format!("DELETE {secrets}/"))
                .map(str::to_owned)
        })
        .filter(|name| name.starts_with("addon-record-"))
        .collect();
    let at = |name: &str| {
        deletes
            .iter()
            .position(|d| d == name)
            .unwrap_or_else(|| panic!("`{name}` was not deleted: {deletes:?}"))
    };
    let record = at("addon-record-tuned");
    assert!(at("addon-record-tuned-rev-1") < record, "{deletes:?}");
    assert!(at("addon-record-tuned-rev-2") < record, "{deletes:?}");
    assert!(at("addon-record-tuned-0a1b-0") > record, "{deletes:?}");
}

#[tokio::test]
async fn a_refused_check_is_said_first_and_at_once() {
    use std::time::Duration;

    use super::checked_first;

    // The work fails first: the check's refusal is still the one returned.
    let slow_refusal = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Err::<(), _>("refused")
    };
    let outcome = checked_first(slow_refusal, async { Err::<u8, _>("unreadable") }).await;
    assert_eq!(outcome, Err("refused"));
    // A refusal does not wait for the work (which never ends here).
    let outcome = tokio::time::timeout(
        Duration::from_secs(5),
        checked_first(
            async { Err::<(), _>("refused") },
            std::future::pending::<Result<u8, &str>>(),
        ),
    )
    .await;
    assert_eq!(outcome, Ok(Err("refused")));
    // Allowed: the work's outcome, whichever ends first.
    let late_work = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok::<_, &str>(7)
    };
    assert_eq!(checked_first(async { Ok(()) }, late_work).await, Ok(7));
    let late_check = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(())
    };
    assert_eq!(
        checked_first(late_check, async { Err::<u8, _>("bad") }).await,
        Err("bad")
    );
}
