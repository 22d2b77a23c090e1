//! The lock against the in-process fake API: a held Lease refuses a second holder, an expired or
//! missing one is taken (with the read `resourceVersion` as precondition), a release deletes
//! only the holder's own Lease. A `Store` reads the stored arguments from its own namespace.

use k8s_openapi::chrono::{Duration, SecondsFormat, Utc};
use serde_json::{json, Value};

use super::lease::{acquire, addon_lease};
use super::Store;
use crate::cluster::fake::FakeApi;
use crate::Error;

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/vela-system/leases";

fn lease_path() -> String {
    format!("{LEASES}/{}", addon_lease("a"))
}

/// The Lease `addonctl-lock-a` held by `holder`, last renewed `seconds_ago`.
fn lease(holder: &str, seconds_ago: i64, resource_version: &str) -> Value {
    let renewed =
        (Utc::now() - Duration::seconds(seconds_ago)).to_rfc3339_opts(SecondsFormat::Micros, true);
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": addon_lease("a"), "namespace": "vela-system",
                     "resourceVersion": resource_version},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 60,
                 "acquireTime": renewed, "renewTime": renewed, "leaseTransitions": 4},
    })
}

fn api() -> FakeApi {
    FakeApi::default().serves("coordination.k8s.io/v1", "leases", "Lease")
}

/// A server's answer to a create of what exists, or to a write whose precondition failed.
fn conflict(reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
           "message": "the object changed or exists", "reason": reason, "code": 409})
}

/// A Lease API where `addonctl-lock-a` exists: a create of it is refused.
fn api_with_lease(lease: Value) -> FakeApi {
    api()
        .on("GET", &lease_path(), 200, lease)
        .on("POST", LEASES, 409, conflict("AlreadyExists"))
}

#[tokio::test]
async fn a_lease_another_holder_renewed_recently_refuses_a_second_holder_and_writes_nothing() {
    let api = api_with_lease(lease("other", 5, "7"));
    let cluster = api.cluster("local");

    let result = acquire(&cluster, "vela-system", &addon_lease("a"), "a", "me", false).await;

    match result {
        Err(Error::Busy(busy)) => {
            assert_eq!(busy.holder, "other");
            assert_eq!(busy.subject, "a");
            assert_eq!(busy.lease, addon_lease("a"));
        }
        other => panic!("expected Busy, got {other:?}"),
    }
    // Only the create tried first, which the server refused: nothing was written.
    assert_eq!(api.writes(), [format!("POST {LEASES}")]);
}

/// The two ways a lock is found contended — another holder's live Lease, or a Lease that kept
/// changing under every attempt to take it — are one kind of failure (and one exit code).
#[tokio::test]
async fn a_held_lock_and_a_lock_that_kept_changing_are_the_same_conflict() {
    let api = api_with_lease(lease("other", 5, "7"));
    let cluster = api.cluster("local");
    let busy = acquire(&cluster, "vela-system", &addon_lease("a"), "a", "me", false)
        .await
        .expect_err("held by another");
    assert!(matches!(busy, Error::Busy(_)), "{busy:?}");

    // Expired, but every take-over loses to another writer (`409` on its precondition).
    let api = api_with_lease(lease("other", 120, "7")).on(
        "PUT",
        &lease_path(),
        409,
        conflict("Conflict"),
    );
    let cluster = api.cluster("local");
    let contended = acquire(&cluster, "vela-system", &addon_lease("a"), "a", "me", false)
        .await
        .expect_err("kept changing");
    assert!(
        matches!(contended, Error::LockContended { .. }),
        "{contended:?}"
    );

    assert_eq!(busy.kind(), crate::ErrorKind::Conflict);
    assert_eq!(contended.kind(), busy.kind());
    assert!(busy.is_user_error() && contended.is_user_error());
}

#[tokio::test]
async fn an_expired_lease_is_taken_over_with_its_resource_version_as_precondition() {
    let path = lease_path();
    let api = api_with_lease(lease("other", 120, "7")).on("PUT", &path, 200, lease("me", 0, "8"));
    let cluster = api.cluster("local");

    let lock = acquire(&cluster, "vela-system", &addon_lease("a"), "a", "me", false)
        .await
        .expect("an expired lease is free");

    assert_eq!(lock.resource_version(), "8");
    let written = api.bodies(&format!("PUT {path}"));
    assert_eq!(written.len(), 1, "{:?}", api.requests());
    assert_eq!(written[0]["metadata"]["resourceVersion"], "7");
    assert_eq!(written[0]["spec"]["holderIdentity"], "me");
    assert_eq!(written[0]["spec"]["leaseTransitions"], 5);
    assert!(lock.ensure_held().is_ok());
}

#[tokio::test]
async fn a_live_lease_is_taken_only_when_forced() {
    let path = lease_path();
    let api = api().on("GET", &path, 200, lease("other", 5, "7")).on(
        "PUT",
        &path,
        200,
        lease("me", 0, "8"),
    );
    let cluster = api.cluster("local");

    let lock = acquire(&cluster, "vela-system", &addon_lease("a"), "a", "me", true).await;

    assert!(lock.is_ok(), "{lock:?}");
    assert_eq!(api.writes(), [format!("PUT {path}")]);
}

#[tokio::test]
async fn a_missing_lease_is_created_and_a_release_deletes_it_while_it_is_ours() {
    let path = lease_path();
    let api = api().on("POST", LEASES, 201, lease("me", 0, "3")).on(
        "DELETE",
        &path,
        200,
        json!({"kind": "Status", "apiVersion": "v1",
                                          "status": "Success", "metadata": {}}),
    );
    let cluster = api.cluster("local");

    let lock = acquire(&cluster, "vela-system", &addon_lease("a"), "a", "me", false)
        .await
        .expect("no lease: created");
    // Created straight away: nothing read first (discovery aside).
    assert_eq!(
        api.requests(),
        [
            "GET /apis/coordination.k8s.io/v1".to_owned(),
            format!("POST {LEASES}")
        ]
    );
    assert_eq!(
        api.bodies(&format!("POST {LEASES}"))[0]["spec"]["holderIdentity"],
        "me"
    );

    // Released while someone else holds it (taken over: another resourceVersion, so the
    // delete's precondition fails): read, and left alone.
    let api = api.on("DELETE", &path, 409, conflict("Conflict")).on(
        "GET",
        &path,
        200,
        lease("other", 0, "9"),
    );
    lock.release().await.expect("release");
    let deletes = api.bodies(&format!("DELETE {path}"));
    assert_eq!(deletes.len(), 1, "{:?}", api.requests());
    assert_eq!(deletes[0]["preconditions"]["resourceVersion"], "3");

    // Released while ours: deleted in one request, with the resourceVersion of its last write
    // as precondition.
    let api = api
        .on("POST", LEASES, 409, conflict("AlreadyExists"))
        .on("GET", &path, 200, lease("me", 0, "10"))
        .on("PUT", &path, 200, lease("me", 0, "11"))
        .on(
            "DELETE",
            &path,
            200,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "metadata": {}}),
        );
    let lock = acquire(&cluster, "vela-system", &addon_lease("a"), "a", "me", false)
        .await
        .expect("own lease");
    let before = api.requests().len();
    lock.release().await.expect("release");
    assert_eq!(api.requests()[before..], [format!("DELETE {path}")]);
    let deletes = api.bodies(&format!("DELETE {path}"));
    assert_eq!(deletes.len(), 2, "{:?}", api.requests());
    assert_eq!(deletes[1]["preconditions"]["resourceVersion"], "11");
}

fn secret_api() -> FakeApi {
    FakeApi::default().serves("v1", "secrets", "Secret")
}

/// The argument Secret `addon-secret-<name>` in `namespace`, holding `args` (base64 of `text`).
fn args_secret(namespace: &str, name: &str, text: &str) -> Value {
    use base64::Engine as _;
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("addon-secret-{name}"), "namespace": namespace},
        "data": {"addonParameterDataKey": base64::engine::general_purpose::STANDARD.encode(text)},
    })
}

#[tokio::test]
async fn a_store_reads_the_stored_arguments_from_its_own_namespace() {
    let api = secret_api().on(
        "GET",
        "/api/v1/namespaces/sys-a/secrets/addon-secret-x",
        200,
        args_secret("sys-a", "x", r#"{"replicas": 2}"#),
    );
    let cluster = api.cluster("local");
    let store = Store {
        cluster: &cluster,
        namespace: "sys-a",
    };

    let args = store.stored_args("x").await.map_err(|e| e.to_string());

    assert_eq!(
        args,
        Ok(json!({"replicas": 2})
            .as_object()
            .cloned()
            .unwrap_or_default())
    );
    assert_eq!(
        api.requests()
            .iter()
            .filter(|r| r.contains("/secrets"))
            .cloned()
            .collect::<Vec<_>>(),
        vec!["GET /api/v1/namespaces/sys-a/secrets/addon-secret-x".to_owned()],
    );
}

#[tokio::test]
async fn stored_arguments_that_are_not_an_object_are_refused_with_the_secret_named() {
    let api = secret_api().on(
        "GET",
        "/api/v1/namespaces/sys-a/secrets/addon-secret-x",
        200,
        args_secret("sys-a", "x", "[1, 2]"),
    );
    let cluster = api.cluster("local");
    let store = Store {
        cluster: &cluster,
        namespace: "sys-a",
    };

    match store.stored_args("x").await {
        Err(Error::StoredArgumentsNotObject { addon, secret }) => {
            assert_eq!(addon, "x");
            assert_eq!(secret, "addon-secret-x");
        }
        other => panic!("expected StoredArgumentsNotObject, got {other:?}"),
    }
}

mod records {
    //! The record's storage (inline, sharded, the format of earlier versions) and the revisions
    //! it keeps.

    use serde_json::{json, Map, Value};

    use crate::cluster::fake::FakeApi;
    use crate::state::record::storage::{self, Layout, RecordError, Written};
    use crate::state::record::{
        record_name, ClusterInventory, DispatchedObject, ObjectRef, PendingRevision, Record,
    };
    use crate::state::revisions::{self, History, RevisionStatus};

    const NS: &str = "vela-system";
    const SECRETS: &str = "/api/v1/namespaces/vela-system/secrets";

    fn uid(cluster: usize, object: usize) -> String {
        // Distinct and irregular, as server uids are.
        let x = (cluster as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (object as u64 + 7).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            x >> 32,
            (x >> 16) & 0xffff,
            x & 0xffff,
            (x >> 48) ^ 0x4a4a,
            x & 0xffff_ffff_ffff
        )
    }

    /// A record of `objects` ConfigMaps on each of `clusters` clusters.
    pub(super) fn large(objects: usize, clusters: usize) -> Record {
        let mut record: Record = serde_json::from_value(json!({
            "name": "big", "version": "1.0.0", "registry": "local", "installedBy": "user",
            "argsHash": "h", "application": false,
        }))
        .unwrap();
        for c in 0..clusters {
            let inventory = ClusterInventory {
                objects: (0..objects)
                    .map(|o| DispatchedObject {
                        object: ObjectRef {
                            api_version: "v1".to_owned(),
                            kind: "ConfigMap".to_owned(),
                            namespace: Some("big-system".to_owned()),
                            name: format!("big-config-{o}"),
                        },
                        uid: uid(c, o),
                        created: true,
                    })
                    .collect(),
                error: None,
                revision: None,
            };
            record.dispatched.insert(format!("cluster-{c}"), inventory);
        }
        record
    }

    #[test]
    fn a_large_inventory_is_recorded_in_shards_and_reads_back_identically() {
        let record = large(800, 10);
        let layout = Layout {
            shard_bytes: 32 * 1024,
            ..Layout::DEFAULT
        };

        let encoded = storage::encode(&record, NS, &layout).unwrap();

        assert!(encoded.shards.len() > 1, "{} shards", encoded.shards.len());
        assert!(encoded.largest_data() <= 32 * 1024 + 16);
        assert_eq!(
            encoded.main["metadata"]["labels"]["addonctl.io/record"],
            "true"
        );
        assert!(encoded.main["data"].get("record").is_none());
        let read = storage::decode(&encoded.main, &encoded.shards).unwrap();
        assert_eq!(read, Some(record));
    }

    #[test]
    fn the_inventory_that_broke_the_single_secret_fits_with_the_default_layout() {
        let record = large(800, 10);
        assert!(serde_json::to_vec(&record).unwrap().len() > 1024 * 1024);

        let encoded = storage::encode(&record, NS, &Layout::DEFAULT).unwrap();

        assert!(!encoded.shards.is_empty());
        assert!(encoded.largest_data() < 1024 * 1024);
        assert_eq!(
            storage::decode(&encoded.main, &encoded.shards).unwrap(),
            Some(record)
        );
    }

    #[test]
    fn a_small_record_stays_in_the_format_earlier_versions_read() {
        let record = large(3, 2);
        let encoded = storage::encode(&record, NS, &Layout::DEFAULT).unwrap();
        assert!(encoded.shards.is_empty());
        assert_eq!(encoded.main, record.to_secret(NS));
        assert_eq!(Record::from_secret(&encoded.main), Some(record));
    }

    #[test]
    fn an_old_format_record_still_reads() {
        // As the previous version wrote it: one Secret, uncompressed JSON under `record`, a
        // pending revision as a bare version.
        let json = json!({
            "name": "old", "version": "0.9.0", "registry": "local", "installedBy": "user",
            "dependencies": [], "argsHash": "abc", "needNamespaces": [], "application": false,
            "clusters": ["local"], "inventory": [{"apiVersion": "v1", "kind": "ConfigMap",
            "namespace": "vela-system", "name": "old-config"}],
            "dispatched": {"m1": {"objects": [{"apiVersion": "v1", "kind": "ConfigMap",
                "namespace": "old", "name": "c", "uid": "u-1", "created": true}]}},
            "pending": "1.0.0",
        });
        let text = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            serde_json::to_vec(&json).unwrap(),
        );
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": record_name("old"), "namespace": NS,
                         "labels": {"addonctl.io/record": "true", "addons.oam.dev/name": "old"}},
            "data": {"record": text}});

        let read = storage::decode(&secret, &[]).unwrap().unwrap();

        assert_eq!(read.version, "0.9.0");
        assert_eq!(read.dispatched["m1"].objects[0].uid, "u-1");
        assert_eq!(read.pending.map(|p| p.version).as_deref(), Some("1.0.0"));
        assert!(read.revisions.is_empty());
    }

    #[test]
    fn a_missing_or_changed_shard_is_an_error_never_a_shorter_record() {
        let record = large(400, 10);
        let layout = Layout {
            shard_bytes: 16 * 1024,
            ..Layout::DEFAULT
        };
        let encoded = storage::encode(&record, NS, &layout).unwrap();

        let missing = storage::decode(&encoded.main, &encoded.shards[1..]);
        let mut changed = encoded.shards.clone();
        changed[0]["data"]["chunk"] = json!("AAAA");
        let damaged = storage::decode(&encoded.main, &changed);

        for result in [missing, damaged] {
            match result {
                Err(RecordError::Unreadable { secret, .. }) => {
                    assert_eq!(secret, record_name("big"));
                }
                other => panic!("expected Unreadable, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_record_over_its_budget_is_refused_before_anything_is_applied() {
        let mut record = large(0, 0);
        record.pending = Some(PendingRevision {
            version: "1.0.0".to_owned(),
            inventory: Vec::new(),
            dispatched: large(200, 50)
                .dispatched
                .into_iter()
                .map(|(c, i)| (c, i.objects))
                .collect(),
        });
        let layout = Layout {
            inline_max: 1024,
            shard_bytes: 1024,
            max_shards: 4,
        };

        match storage::check_room(&record, &layout) {
            Err(RecordError::TooLarge { pairs, limit, .. }) => {
                assert_eq!(pairs, 10_000);
                assert_eq!(limit, 4096);
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        assert!(storage::check_room(&record, &Layout::DEFAULT).is_ok());
    }

    fn secrets_api() -> FakeApi {
        FakeApi::default().serves("v1", "secrets", "Secret")
    }

    #[tokio::test]
    async fn a_sharded_record_is_written_shards_first_and_read_back_through_the_api() {
        let record = large(800, 10);
        let stored = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": record_name("big"), "namespace": NS, "resourceVersion": "2"}});
        let encoded = storage::encode(&record, NS, &Layout::DEFAULT).unwrap();
        let mut api = secrets_api().on(
            "PATCH",
            &format!("{SECRETS}/{}", record_name("big")),
            200,
            stored,
        );
        for shard in &encoded.shards {
            let name = shard["metadata"]["name"].as_str().unwrap();
            api = api.on("PATCH", &format!("{SECRETS}/{name}"), 200, shard.clone());
        }
        let cluster = api.cluster("local");

        let written = storage::write(&cluster, NS, &record, None, false)
            .await
            .unwrap();

        assert!(matches!(written, Written::Stored(_, true)));
        let patches: Vec<String> = api
            .writes()
            .into_iter()
            .filter(|w| w.starts_with("PATCH"))
            .collect();
        assert_eq!(patches.len(), encoded.shards.len() + 1);
        assert!(patches.last().unwrap().ends_with(&record_name("big")));
        let main = api
            .bodies(&format!("PATCH {SECRETS}/{}", record_name("big")))
            .remove(0);
        let reader = secrets_api()
            .on(
                "GET",
                &format!("{SECRETS}/{}", record_name("big")),
                200,
                main,
            )
            .on(
                "GET",
                SECRETS,
                200,
                json!({"apiVersion": "v1", "kind": "SecretList", "metadata": {},
                       "items": encoded.shards}),
            );

        let read = storage::read(&reader.cluster("local"), NS, "big")
            .await
            .unwrap();

        assert!(read.sharded);
        assert_eq!(read.record, Some(record));
    }

    fn schema() -> crate::params::ParameterSchema {
        crate::params::ParameterSchema::from_json_schema(json!({
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "auth": {"type": "object", "properties": {
                    "user": {"type": "string"},
                    "token": {"type": "string", "writeOnly": true},
                }},
            },
        }))
        .unwrap()
    }

    #[test]
    fn secret_arguments_are_replaced_by_references_and_restored_from_the_revision_secret() {
        let args: Map<String, Value> = serde_json::from_value(json!({
            "replicas": 2, "auth": {"user": "admin", "token": "s3cr3t-value"},
        }))
        .unwrap();

        let (shown, secrets) = revisions::redact(&args, &schema(), "rev-secret");

        assert!(!serde_json::to_string(&shown).unwrap().contains("s3cr3t"));
        assert_eq!(shown["auth"]["user"], "admin");
        assert_eq!(
            secrets,
            vec![(
                vec!["auth".to_owned(), "token".to_owned()],
                json!("s3cr3t-value")
            )]
        );
        assert_eq!(revisions::restore(&shown, &secrets), args);
    }

    fn package(version: &str) -> crate::model::AddonPackage {
        crate::loader::from_files(
            "local",
            "big",
            vec![
                (
                    "metadata.yaml".to_owned(),
                    format!("name: big\nversion: {version}\n").into_bytes(),
                ),
                (
                    "resources/config.yaml".to_owned(),
                    b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n".to_vec(),
                ),
            ],
        )
        .unwrap()
    }

    async fn note(
        api: &FakeApi,
        record: &mut Record,
        version: &str,
        args: &Map<String, Value>,
        max: usize,
        succeeded: bool,
    ) -> Vec<String> {
        record.version = version.to_owned();
        record.args_hash = crate::state::record::storage::sha256_hex(
            serde_json::to_string(args).unwrap().as_bytes(),
        );
        let package = package(version);
        let history = History {
            max: Some(max),
            description: None,
        };
        let applied = revisions::Applied {
            package: &package,
            args,
            schema: &schema(),
            history: &history,
            succeeded,
            upgrade: !record.revisions.is_empty(),
            overrides: std::collections::BTreeMap::new(),
        };
        revisions::note(&api.cluster("local"), NS, record, &applied)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn each_change_adds_a_revision_an_unchanged_apply_none_and_history_max_is_kept() {
        let mut api = secrets_api();
        for n in 1..=5 {
            api = api.on(
                "PATCH",
                &format!("{SECRETS}/{}", revisions::secret_name("big", n)),
                200,
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
            );
        }
        let mut record = large(2, 1);
        let args: Map<String, Value> =
            serde_json::from_value(json!({"auth": {"token": "s3cr3t-value"}})).unwrap();

        assert!(note(&api, &mut record, "1.0.0", &args, 3, true)
            .await
            .is_empty());
        assert!(note(&api, &mut record, "1.0.0", &args, 3, true)
            .await
            .is_empty());
        assert_eq!(record.revisions.len(), 1, "unchanged: no new revision");
        note(&api, &mut record, "2.0.0", &args, 3, false).await;
        note(&api, &mut record, "2.0.0", &args, 3, true).await;
        assert_eq!(record.revisions.len(), 2, "a failed revision settles");
        note(&api, &mut record, "3.0.0", &args, 3, true).await;
        let dropped = note(&api, &mut record, "4.0.0", &args, 3, true).await;

        assert_eq!(dropped, vec![revisions::secret_name("big", 1)]);
        let seen: Vec<(u32, &str, RevisionStatus, &str)> = record
            .revisions
            .iter()
            .map(|r| {
                (
                    r.revision,
                    r.version.as_str(),
                    r.status,
                    r.description.as_str(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (2, "2.0.0", RevisionStatus::Superseded, "upgrade"),
                (3, "3.0.0", RevisionStatus::Superseded, "upgrade"),
                (4, "4.0.0", RevisionStatus::Deployed, "upgrade"),
            ]
        );
        let text = serde_json::to_string(&record).unwrap();
        assert!(!text.contains("s3cr3t"), "{text}");
        assert_eq!(record.revisions[2].secret_args, ["auth.token"]);
        assert!(record.revisions[2].package_kept);
        let written = api.bodies(&format!(
            "PATCH {SECRETS}/{}",
            revisions::secret_name("big", 4)
        ));
        assert!(written[0]["data"]["package"].is_string());
        assert!(written[0]["data"]["secretArgs"].is_string());
        assert_eq!(revisions::target(&record, None).unwrap().revision, 3);
        assert!(revisions::target(&record, Some(1)).is_err());
    }
}
