//! The one phase of an addon: `status`, `list`, `wait` and `status --watch` all compute it here,
//! from the same inputs (the Application KubeVela reports on, or the record addonctl keeps and
//! what its clusters hold), so they never disagree. Also which clusters an addon actually
//! targets, and which clusters of a `clusters` argument a render does not reach. Pure: no IO.

use serde::Serialize;
use serde_json::{Map, Value};

use super::health::ClusterStatus;
use crate::cluster::set::ClusterInfo;
use crate::state::record::placements;
use crate::state::record::Record;
use crate::state::{clusters_of, Installed};

/// The phase of an addon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    /// Running.
    Enabled,
    /// Applied, not yet running.
    Enabling,
    /// Its clusters run different versions: a staged upgrade under way, or stopped by a failed
    /// gate (direct engine).
    Upgrading,
    /// Being deleted.
    Disabling,
    /// Its workflow is suspended.
    Suspend,
    /// Its workflow failed.
    Failed,
    /// Not installed.
    Disabled,
    /// Not known: no cluster could be asked (`list` offline).
    Unknown,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::Enabled => "enabled",
            Phase::Enabling => "enabling",
            Phase::Upgrading => "upgrading",
            Phase::Disabling => "disabling",
            Phase::Suspend => "suspend",
            Phase::Failed => "failed",
            Phase::Disabled => "disabled",
            Phase::Unknown => "unknown",
        })
    }
}

/// The phase KubeVela reports for an addon's Application.
pub fn phase_of_application(app: &Value) -> Phase {
    if app
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return Phase::Disabling;
    }
    // A suspended workflow comes first, whatever the phase, as for `vela addon status`.
    if app
        .pointer("/status/workflow/suspend")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return Phase::Suspend;
    }
    match app.pointer("/status/status").and_then(Value::as_str) {
        Some("running") => Phase::Enabled,
        Some("deleting") => Phase::Disabling,
        Some("workflowFailed" | "workflowTerminated") => Phase::Failed,
        Some("workflowSuspending") => Phase::Suspend,
        _ => Phase::Enabling,
    }
}

/// Why an Application KubeVela deploys is still `enabling` with nothing to show for it: KubeVela
/// has not reported on it at all (no `status.status`, no workflow), which it does within seconds
/// while vela-core runs. `None` once it has reported, or while the Application is being deleted.
pub fn unreported_application_reason(app: &Value) -> Option<String> {
    if app
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return None;
    }
    let reported = app
        .pointer("/status/status")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
        || app
            .pointer("/status/workflow")
            .is_some_and(|w| !w.is_null());
    if reported {
        return None;
    }
    let name = app
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("its Application");
    let namespace = app
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("vela-system");
    Some(format!(
        "KubeVela has not reported on `{name}` yet; is vela-core running? (check with `kubectl -n {namespace} get application {name}` and `kubectl get pods -A -l app.kubernetes.io/name=vela-core`)"
    ))
}

/// The record of an addon the direct engine dispatched (or is dispatching): the addon whose
/// phase depends on what its clusters hold, read with [`super::health::health`]. `None` for an
/// addon KubeVela deploys (its Application says) or one with nothing dispatched.
pub fn dispatched_record(installed: &Installed) -> Option<&Record> {
    installed.record.as_ref().filter(|r| {
        installed.application.is_none() && (!r.dispatched.is_empty() || r.pending.is_some())
    })
}

/// The phase of an addon: `disabled` when not installed, or when KubeVela deployed it and its
/// Application is gone; KubeVela's phase of its Application;
/// for what the direct engine dispatched, from `clusters` (its objects read back, see
/// [`dispatched_record`]): `failed` when a cluster has an error, `upgrading` while its clusters
/// run different versions ([`upgrade_progress`] says how far), `enabling` while a revision is
/// pending or a workload is missing or short of ready replicas, else `enabled`. Without
/// `clusters` (not read), `upgrading` or `enabling` as said, else `enabled`.
pub fn phase(installed: Option<&Installed>, clusters: Option<&[ClusterStatus]>) -> Phase {
    let Some(installed) = installed else {
        return Phase::Disabled;
    };
    if let Some(app) = &installed.application {
        return phase_of_application(app);
    }
    // KubeVela deployed it and its Application is gone while no enable is under way: `vela addon
    // disable` (or a person) removed the addon, and only addonctl's record is left, which
    // `disable` deletes.
    if installed
        .record
        .as_ref()
        .is_some_and(|r| r.application && r.pending.is_none())
    {
        return Phase::Disabled;
    }
    let pending = installed
        .record
        .as_ref()
        .is_some_and(|r| r.pending.is_some());
    let mixed = installed.record.as_ref().is_some_and(Record::is_mixed);
    let Some(clusters) = clusters else {
        return match (mixed, pending) {
            (true, _) => Phase::Upgrading,
            (false, true) => Phase::Enabling,
            (false, false) => Phase::Enabled,
        };
    };
    if clusters.iter().any(|c| c.error.is_some()) {
        return Phase::Failed;
    }
    if mixed {
        return Phase::Upgrading;
    }
    let all_ready = clusters
        .iter()
        .flat_map(|c| c.resources.iter())
        .filter(|r| r.is_workload())
        .all(super::health::ResourceStatus::is_ready);
    if pending || !all_ready {
        Phase::Enabling
    } else {
        Phase::Enabled
    }
}

/// How far an upgrade of clusters stage by stage got: `2 of 3 clusters on 1.1.0 (`m3` on
/// 1.0.0)`, or for a staged parameter change `1 of 2 clusters on 1.0.0 revision 4 (`m2` on
/// revision 3)`; `None` when every cluster runs the record's revision.
pub fn upgrade_progress(record: &Record) -> Option<String> {
    let clusters: Vec<&String> = record.dispatched.keys().collect();
    let behind: Vec<String> = clusters
        .iter()
        .filter(|c| !record.runs_current(c))
        .filter_map(|c| {
            let held = record.cluster_revision(c)?;
            Some(if held.version == record.version {
                let number = held
                    .number
                    .map_or_else(|| "?".to_owned(), |n| n.to_string());
                format!("`{c}` on revision {number}")
            } else {
                format!("`{c}` on {}", held.version)
            })
        })
        .collect();
    if behind.is_empty() {
        return None;
    }
    let current = match record.current_revision().number {
        Some(number) if behind.iter().any(|b| b.contains(" on revision ")) => {
            format!("{} revision {number}", record.version)
        }
        _ => record.version.clone(),
    };
    Some(format!(
        "{} of {} clusters on {current} ({})",
        clusters.len() - behind.len(),
        clusters.len(),
        behind.join(", ")
    ))
}

/// Why the phase is `failed`: each cluster's error, `cluster: error; …` (`None` without one).
pub fn failure_reason(clusters: &[ClusterStatus]) -> Option<String> {
    let failures: Vec<String> = clusters
        .iter()
        .filter_map(|c| c.error.as_ref().map(|e| format!("{}: {e}", c.cluster)))
        .collect();
    (!failures.is_empty()).then(|| failures.join("; "))
}

/// The clusters an addon actually targets: the Application's topology (`*` for a label
/// selector; `local` without one) — never the `clusters` argument the template may ignore; for
/// the direct engine, the clusters of its record's dispatched and planned inventory, else the
/// clusters its record names. `args`: the stored arguments, used only for an addon with neither.
pub fn targeted_clusters(installed: &Installed, args: &Map<String, Value>) -> Vec<String> {
    if let Some(app) = &installed.application {
        return clusters_of(Some(app), &Map::new());
    }
    match &installed.record {
        Some(record) => {
            let inventory = record.dispatched_or_planned();
            if inventory.is_empty() {
                record.clusters.clone()
            } else {
                inventory.into_keys().collect()
            }
        }
        None => clusters_of(None, args),
    }
}

/// The clusters of a `clusters` argument (`requested`) that a rendered Application does not
/// reach: no topology policy of it names them (its `clusters` property) or selects them by label
/// (its `clusterLabelSelector`, matched against `joined`, the joined clusters and their labels;
/// `{}` selects every cluster, `local` included; `None` when the labels are unknown, and then a
/// selector may reach any cluster). `*` reaches every cluster.
pub fn untargeted_clusters(
    requested: Option<&[String]>,
    application: &Value,
    joined: Option<&[ClusterInfo]>,
) -> Vec<String> {
    let Some(requested) = requested else {
        return Vec::new();
    };
    if requested.iter().any(|c| c == "*") {
        return Vec::new();
    }
    let placements = placements(application);
    let selects = |selector: &std::collections::BTreeMap<String, String>, cluster: &str| {
        let Some(joined) = joined else {
            return true;
        };
        if cluster == crate::model::wire::LOCAL_CLUSTER {
            return selector.is_empty();
        }
        joined
            .iter()
            .any(|c| c.name == cluster && selector.iter().all(|(k, v)| c.labels.get(k) == Some(v)))
    };
    requested
        .iter()
        .filter(|c| {
            !placements.iter().any(|p| {
                p.clusters.as_ref().is_some_and(|named| named.contains(c))
                    || p.cluster_label_selector
                        .as_ref()
                        .is_some_and(|selector| selects(selector, c))
            })
        })
        .cloned()
        .collect()
}
