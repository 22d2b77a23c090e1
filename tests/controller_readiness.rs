//! `/readyz` on the real API servers: a controller whose reconciles keep failing for a reason
//! no `Addon` author can fix (here: the control plane refuses every write to the `Addon`, so
//! not even its finalizer can be added) answers 503 after 3 such failures in a row, saying
//! why, and 200 again once a reconcile succeeds.

use std::time::Duration;

use serde_json::json;

use crate::controller::{
    apply_addon, fixture, http_get, in_process_with, install_crd, wait_for, wait_ready, ADDON,
};
use crate::support::k8s::{Env, Kind, Sandbox};

const POLICY: Kind = Kind(
    "admissionregistration.k8s.io/v1",
    "ValidatingAdmissionPolicy",
);
const BINDING: Kind = Kind(
    "admissionregistration.k8s.io/v1",
    "ValidatingAdmissionPolicyBinding",
);

#[tokio::test(flavor = "multi_thread")]
async fn readyz_answers_503_after_three_failures_no_author_can_fix_and_200_once_one_succeeds() {
    let addon_dir = fixture("frozen", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon_dir]);
    install_crd(&sb).await;
    apply_addon(&sb, "frozen", json!({"clusters": ["local"]})).await;

    // Every update of an `Addon` in this namespace (its finalizer, its status) is refused.
    let name = format!("{}-frozen", sb.ns());
    let control_plane = Env::get().control_plane();
    sb.clean_up_on(control_plane, BINDING, None, &name);
    sb.clean_up_on(control_plane, POLICY, None, &name);
    sb.api()
        .apply(
            &json!({"apiVersion": POLICY.0, "kind": POLICY.1, "metadata": {"name": name},
                    "spec": {"failurePolicy": "Fail",
                             "matchConstraints": {"resourceRules": [{
                                 "apiGroups": ["addonctl.io"], "apiVersions": ["*"],
                                 "operations": ["UPDATE"], "resources": ["addons", "addons/status"]}]},
                             "validations": [{"expression": "false",
                                              "message": "Addons are frozen in this namespace"}]}}),
            sb.ns(),
        )
        .await
        .unwrap();
    sb.api()
        .apply(
            &json!({"apiVersion": BINDING.0, "kind": BINDING.1, "metadata": {"name": name},
                    "spec": {"policyName": name, "validationActions": ["Deny"],
                             "matchResources": {"namespaceSelector": {"matchLabels": {
                                 "kubernetes.io/metadata.name": sb.ns()}}}}}),
            sb.ns(),
        )
        .await
        .unwrap();
    // The policy takes effect once the API server has read it.
    wait_for("the freeze in effect", || async {
        let patch = json!({"metadata": {"labels": {"probe": "1"}}});
        let refused = sb
            .api()
            .merge_patch(&ADDON.gvk(), Some(sb.ns()), "frozen", &patch)
            .await
            .is_err_and(|e| e.to_string().contains("frozen"));
        refused.then_some(())
    })
    .await;

    let (controller, stop, _, address) = in_process_with(
        &sb,
        &[&addon_dir],
        addonctl::controller::ControllerSettings {
            backoff: addonctl::controller::Backoff {
                initial: Duration::from_secs(1),
                max: Duration::from_secs(2),
                budget: 100,
            },
            ..addonctl::controller::ControllerSettings::default()
        },
    )
    .await;
    // (Before its cache synced it answers 503 too, saying so: wait for the reason.)
    let (status, body) = wait_for("/readyz answering 503: cannot reconcile", || async {
        let (status, body) = http_get(&address, "/readyz").await;
        (status == 503 && body.contains("cannot reconcile")).then_some((status, body))
    })
    .await;
    assert_eq!(status, 503);
    assert!(
        body.contains("cannot reconcile: the last 3 reconciles failed") && body.contains("frozen"),
        "{body}"
    );
    // Still alive: only readiness says it cannot work.
    let (status, _) = http_get(&address, "/healthz").await;
    assert_eq!(status, 200);

    // Writes go through again: the next retry succeeds, and it is ready.
    sb.api().delete(&BINDING.gvk(), None, &name).await.unwrap();
    wait_ready(&sb, "frozen").await;
    let (status, body) = wait_for("/readyz answering 200 again", || async {
        let (status, body) = http_get(&address, "/readyz").await;
        (status == 200).then_some((status, body))
    })
    .await;
    assert_eq!((status, body.as_str()), (200, "ready\n"));
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), controller).await;
}
