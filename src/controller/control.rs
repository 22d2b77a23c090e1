//! What `addonctl rollout status|pause|resume` do to an `Addon` resource: read its rollout's
//! progress from the status (stage, clusters done, pending and failed, the soak left), and set
//! or clear `spec.rollout.paused` with a merge patch (the controller then applies nothing new,
//! or continues).

use std::time::{SystemTime, UNIX_EPOCH};

use kube::api::Patch;
use kube::Api;
use serde::Serialize;
use serde_json::json;

use super::crd::{Addon, FailedCluster, RolloutPhase};
use super::{Error, Result};
use crate::cluster::Cluster;
use crate::rollout::{RolloutPlan, RolloutState};

/// A rollout's progress, for people and scripts.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutReport {
    /// The addon.
    pub addon: String,
    /// The version rolled out (`None` before the controller started it).
    pub version: Option<String>,
    /// `Progressing`, `Paused`, `Succeeded`, `Failed`; `None` before it started.
    pub phase: Option<RolloutPhase>,
    /// Whether `spec.rollout.paused` is set.
    pub paused: bool,
    /// The current stage.
    pub stage: Option<String>,
    /// Per stage.
    pub stages: Vec<StageReport>,
    /// Failed clusters with the reasons.
    pub failed: Vec<FailedCluster>,
    /// The longest soak left in the current batch, in seconds (`None`: a cluster of it is not
    /// healthy yet, or no batch is soaking).
    pub soak_remaining_seconds: Option<u64>,
    /// Why it stopped or waits.
    pub message: Option<String>,
}

/// One stage of a [`RolloutReport`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StageReport {
    /// The stage.
    pub name: String,
    /// Clusters whose gate passed.
    pub done: Vec<String>,
    /// Clusters not done and not failed.
    pub pending: Vec<String>,
    /// Failed clusters.
    pub failed: Vec<String>,
    /// Its soak time.
    pub soak_seconds: u64,
}

/// The `Addon` `name` of the namespace; a clear error when there is none (or the CRD is not
/// installed) or it has no `spec.rollout`.
pub async fn addon_with_rollout(cluster: &Cluster, namespace: &str, name: &str) -> Result<Addon> {
    let api: Api<Addon> = Api::namespaced(cluster.client().clone(), namespace);
    let Some(addon) = api
        .get_opt(name)
        .await
        .map_err(|e| missing(e, namespace, name))?
    else {
        return Err(no_addon(namespace, name));
    };
    if addon.spec.rollout.is_none() {
        return Err(Error::Control(format!(
            "the `Addon` `{name}` (namespace `{namespace}`) has no `spec.rollout`: there is no staged rollout to show, pause or resume; add `rollout: {{stages: […]}}` to it"
        )));
    }
    Ok(addon)
}

/// Sets (`true`) or clears `spec.rollout.paused`; returns the `Addon` as stored.
pub async fn set_paused(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    paused: bool,
) -> Result<Addon> {
    addon_with_rollout(cluster, namespace, name).await?;
    let api: Api<Addon> = Api::namespaced(cluster.client().clone(), namespace);
    let value = if paused { json!(true) } else { json!(null) };
    let mut patch = json!({"spec": {"rollout": {"paused": value}}});
    // Whoever changes the spec is its author from now on (the admission policy checks it).
    if let Some((user, groups)) = crate::declare::whoami(cluster).await {
        patch["metadata"] = json!({
            "annotations": super::trust::author_annotations(&user, &groups)
        });
    }
    Ok(api
        .patch(name, &crate::cluster::patch_params(), &Patch::Merge(&patch))
        .await?)
}

/// The report of an `Addon`'s rollout (as its status says).
pub fn report(addon: &Addon) -> RolloutReport {
    let name = addon.metadata.name.clone().unwrap_or_default();
    let paused = addon.spec.rollout.as_ref().is_some_and(|r| r.paused);
    let Some(rollout) = addon.status.as_ref().and_then(|s| s.rollout.clone()) else {
        return RolloutReport {
            addon: name,
            version: None,
            phase: None,
            paused,
            stage: None,
            stages: Vec::new(),
            failed: Vec::new(),
            soak_remaining_seconds: None,
            message: Some("the controller has not started this rollout yet".to_owned()),
        };
    };
    let stages = rollout
        .stages
        .iter()
        .map(|stage| {
            let failed: Vec<String> = rollout
                .failed
                .iter()
                .filter(|f| f.stage == stage.name)
                .map(|f| f.cluster.clone())
                .collect();
            StageReport {
                name: stage.name.clone(),
                done: stage.done.clone(),
                pending: stage
                    .clusters
                    .iter()
                    .filter(|c| !stage.done.contains(c) && !failed.contains(c))
                    .cloned()
                    .collect(),
                failed,
                soak_seconds: stage.soak_seconds,
            }
        })
        .collect();
    RolloutReport {
        addon: name,
        version: Some(rollout.version.clone()),
        phase: Some(rollout.phase),
        paused,
        stage: rollout.stage.clone(),
        stages,
        failed: rollout.failed.clone(),
        soak_remaining_seconds: soak_remaining(&rollout.state, &rollout.plan, now_ms()),
        message: rollout.message.clone(),
    }
}

/// The longest soak left in the current batch, when every cluster of it is healthy.
fn soak_remaining(state: &serde_json::Value, plan: &serde_json::Value, now: u64) -> Option<u64> {
    let mut state: RolloutState = serde_json::from_value(state.clone()).ok()?;
    let plan: RolloutPlan = serde_json::from_value(plan.clone()).ok()?;
    let soak_ms = state.limits(&plan)?.soak_ms;
    let gate = state.gate.as_ref()?;
    let mut left = 0;
    for cluster in gate.clusters.values().filter(|c| c.failed.is_none()) {
        let since = cluster.healthy_since_ms?;
        left = left.max((since + soak_ms).saturating_sub(now));
    }
    Some(left.div_ceil(1000))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn no_addon(namespace: &str, name: &str) -> Error {
    Error::Control(format!(
        "there is no `Addon` resource `{name}` in namespace `{namespace}`: `rollout status|pause|resume` act on the controller's `Addon`s (`rollout run` rolls out from the command line); create one, or check `--system-namespace`"
    ))
}

/// A 404 of the `Addon` kind itself (the CRD is not installed) reads as "no `Addon`".
fn missing(error: kube::Error, namespace: &str, name: &str) -> Error {
    match &error {
        kube::Error::Api(response) if response.code == 404 => no_addon(namespace, name),
        _ => Error::Kube(error),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_soak_left_is_the_longest_of_the_batch_and_unknown_while_one_is_unhealthy() {
        let plan = json!({"stages": [{"name": "a", "batches": [["m1", "m2"]], "maxFailures": 0,
            "soakSeconds": 10}], "unselected": [], "progressDeadlineSeconds": 60});
        let state = |m2: serde_json::Value| {
            json!({"revision": "1.0.0", "stage": 0, "batch": 0, "phase": "Progressing",
                "gate": {"startedMs": 0, "clusters": {"m1": {"healthySinceMs": 1000}, "m2": m2}},
                "done": []})
        };
        let soaking = state(json!({"healthySinceMs": 4000}));
        assert_eq!(soak_remaining(&soaking, &plan, 5000), Some(9));
        let unhealthy = state(json!({"reason": "0 of 1 replicas ready"}));
        assert_eq!(soak_remaining(&unhealthy, &plan, 5000), None);
    }
}
