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

#[tokio::test]
async fn a_lease_another_holder_renewed_recently_refuses_a_second_holder_and_writes_nothing() {
    let api = api().on("GET", &lease_path(), 200, lease("other", 5, "7"));
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
    assert!(api.writes().is_empty(), "{:?}", api.writes());
}

#[tokio::test]
async fn an_expired_lease_is_taken_over_with_its_resource_version_as_precondition() {
    let path = lease_path();
    let api = api().on("GET", &path, 200, lease("other", 120, "7")).on(
        "PUT",
        &path,
        200,
        lease("me", 0, "8"),
    );
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
    assert_eq!(api.writes(), [format!("POST {LEASES}")]);
    assert_eq!(
        api.bodies(&format!("POST {LEASES}"))[0]["spec"]["holderIdentity"],
        "me"
    );

    // Released while someone else holds it (taken over): left alone.
    let api = api.on("GET", &path, 200, lease("other", 0, "9"));
    lock.release().await.expect("release");
    assert_eq!(api.writes(), [format!("POST {LEASES}")]);

    // Released while ours: deleted with its resourceVersion as precondition.
    let api =
        api.on("GET", &path, 200, lease("me", 0, "10"))
            .on("PUT", &path, 200, lease("me", 0, "11"));
    let lock = acquire(&cluster, "vela-system", &addon_lease("a"), "a", "me", false)
        .await
        .expect("own lease");
    let api = api.on("GET", &path, 200, lease("me", 0, "11"));
    lock.release().await.expect("release");
    let deletes = api.bodies(&format!("DELETE {path}"));
    assert_eq!(deletes.len(), 1, "{:?}", api.requests());
    assert_eq!(deletes[0]["preconditions"]["resourceVersion"], "11");
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
