//! Record writes retried on a conflict, disable taking its own lock in the library, and the
//! permissions pruning and `needNamespace` namespaces need, against the real API servers.

use std::sync::atomic::{AtomicUsize, Ordering};

use addonctl::apply::access::{self, Need};
use addonctl::context::NoopReporter;
use addonctl::plan::EnableRequest;
use addonctl::state::lease;
use addonctl::state::record::{self, ClusterInventory, DispatchedObject, ObjectRef};
use serde_json::json;

use super::{addon, sandbox, CONFIG_MAPS};
use crate::support::k8s::{apply_as_on, Kind};

fn config_map(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef {
        api_version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
        namespace: Some(namespace.to_owned()),
        name: name.to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_record_written_by_someone_else_meanwhile_is_read_again_and_nothing_it_lists_is_lost() {
    let first = addon("first", CONFIG_MAPS, "#{}");
    let (sb, _m1) = sandbox(&[&first]).await;
    sb.enable("first", json!({})).await.unwrap();
    let ns = sb.ns().to_owned();
    // Someone else (not taking addonctl's lock) lists one more object on `m2` between this
    // command's read and its write: the conditional write conflicts, and the retry keeps it.
    let mut theirs = sb.record("first").await;
    theirs.dispatched.insert(
        "m2".to_owned(),
        ClusterInventory {
            objects: vec![DispatchedObject {
                object: config_map(&ns, "theirs"),
                uid: String::new(),
                created: true,
            }],
            error: None,
            revision: None,
        },
    );
    let foreign = theirs.to_secret(&ns);
    let attempts = AtomicUsize::new(0);
    let handle = tokio::runtime::Handle::current();
    record::update(sb.api(), &ns, "first", |stored| {
        if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
            tokio::task::block_in_place(|| {
                handle.block_on(apply_as_on(sb.api(), "someone", foreign.clone(), &ns))
            });
        }
        let mut ours = stored?;
        ours.dispatched.remove("m1");
        Some(ours)
    })
    .await
    .unwrap();

    assert_eq!(
        attempts.load(Ordering::SeqCst),
        2,
        "one conflict, one retry"
    );
    let stored = sb.record("first").await;
    assert!(!stored.dispatched.contains_key("m1"), "our change landed");
    assert_eq!(
        stored.dispatched["m2"].objects[0].object,
        config_map(&ns, "theirs"),
        "their change was not overwritten"
    );
}

#[test]
fn a_record_absorbs_what_another_writer_listed_and_keeps_its_own() {
    let object = |name: &str, created: bool| DispatchedObject {
        object: config_map("ns", name),
        uid: String::new(),
        created,
    };
    let mut ours: record::Record = serde_json::from_value(json!({
        "name": "a", "version": "2.0.0", "registry": "local", "installedBy": "user",
        "argsHash": "", "application": false,
        "inventory": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "mine"}],
        "dispatched": {"east": {"objects": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "one", "created": true}]}},
    }))
    .unwrap();
    let mut theirs = ours.clone();
    theirs.version = "1.0.0".to_owned();
    theirs.inventory = vec![config_map("ns", "adopted")];
    theirs.adopted = vec![config_map("ns", "adopted")];
    theirs.dispatched.get_mut("east").unwrap().objects = vec![object("two", false)];

    ours.absorb(&theirs);

    assert_eq!(ours.version, "2.0.0");
    assert_eq!(
        ours.inventory,
        [config_map("ns", "mine"), config_map("ns", "adopted")]
    );
    assert_eq!(ours.adopted, [config_map("ns", "adopted")]);
    assert_eq!(
        ours.dispatched["east"].objects,
        [object("one", true), object("two", false)]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_library_disable_takes_the_addons_lock_and_a_dry_run_does_not() {
    let first = addon("first", CONFIG_MAPS, "#{}");
    let (sb, _m1) = sandbox(&[&first]).await;
    sb.enable("first", json!({})).await.unwrap();
    let held = lease::acquire(
        sb.api(),
        sb.ns(),
        &lease::addon_lease("first"),
        "first",
        "another command",
        false,
    )
    .await
    .unwrap();

    let refused = addonctl::apply::disable(&sb.ctx.applier(), "first", false, &NoopReporter).await;
    let options = addonctl::apply::DisableOptions {
        dry_run: true,
        ..addonctl::apply::DisableOptions::default()
    };
    let dry =
        addonctl::apply::disable_all_with(&sb.ctx.applier(), "first", &options, &NoopReporter)
            .await;

    assert!(
        matches!(refused, Err(addonctl::Error::Busy(_))),
        "{refused:?}"
    );
    assert!(refused.unwrap_err().to_string().contains("another command"));
    sb.record("first").await; // still there
    let dry = dry.unwrap();
    assert!(dry[0].dry_run && !dry[0].deleted.is_empty());
    held.release().await.unwrap();
    addonctl::apply::disable(&sb.ctx.applier(), "first", false, &NoopReporter)
        .await
        .unwrap();
    assert!(sb.get(Kind::SECRET, "addon-record-first").await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_re_enable_needs_delete_on_what_it_prunes_and_disable_on_need_namespaces() {
    let first = addon(
        "first",
        CONFIG_MAPS,
        "#{ local: #{ apiVersion: \"v1\", kind: \"ConfigMap\", metadata: #{ name: \"first-local\" } } }",
    );
    let (sb, _m1) = sandbox(&[&first]).await;
    sb.enable("first", json!({})).await.unwrap();
    let ns = sb.ns().to_owned();
    // The record lists a Role this version no longer renders (as an older version would have
    // applied) and a `needNamespace` namespace.
    let role = ObjectRef {
        api_version: "rbac.authorization.k8s.io/v1".to_owned(),
        kind: "Role".to_owned(),
        namespace: Some(ns.clone()),
        name: "first-old".to_owned(),
    };
    record::update(sb.api(), &ns, "first", |stored| {
        let mut record = stored?;
        record.inventory.push(role.clone());
        record.need_namespaces = vec![format!("{ns}-team")];
        Some(record)
    })
    .await
    .unwrap();
    let request = EnableRequest {
        reference: "first".to_owned(),
        ..EnableRequest::default()
    };
    let plan = addonctl::plan::plan(&sb.ctx.planner(), &request, false)
        .await
        .unwrap();

    let enable = access::plan_needs(&sb.ctx.applier(), &plan).await.unwrap();
    let disable = access::disable_needs(&sb.ctx.applier(), "first")
        .await
        .unwrap();

    let delete_role = Need::new("delete", "rbac.authorization.k8s.io", "roles", Some(&ns));
    assert!(enable.contains(&delete_role), "{enable:?}");
    let delete_kept = Need::new("delete", "", "configmaps", Some(&ns));
    assert!(
        !enable.contains(&delete_kept),
        "what is still rendered is not pruned: {enable:?}"
    );
    assert!(
        !enable
            .iter()
            .any(|n| n.resource == "namespaces" && n.verb == "create"),
        "the system namespace exists: {enable:?}"
    );
    assert!(disable.contains(&Need::new("delete", "", "namespaces", None)));
    assert!(disable.contains(&delete_role));
}
