//! What `status` shows of an addon declared by an `Addon` resource: its conditions (with their
//! age), whether the controller has seen the latest spec, the drift policy and the rollout
//! stage.

use k8s_openapi::chrono::{DateTime, Utc};
use serde::Serialize;

use crate::controller::crd::{Addon, DriftPolicy};

/// The `Addon` block of `status` (`addon` in `-o json`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Declared {
    /// The `Addon`'s name and namespace.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// Its `metadata.generation` (the spec's revision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// The generation the controller last reconciled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Whether the controller has not seen the latest spec yet.
    pub stale: bool,
    /// The version constraint declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The version the controller applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_version: Option<String>,
    /// `correct`, `warn` or `ignore`.
    pub drift_policy: DriftPolicy,
    /// Whether it is suspended.
    pub suspended: bool,
    /// The current rollout stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout_stage: Option<String>,
    /// Healthy / target clusters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_summary: Option<String>,
    /// Failed reconciles in a row.
    pub consecutive_failures: u32,
    /// The last failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The conditions, as the controller wrote them.
    pub conditions: Vec<DeclaredCondition>,
}

/// One condition of the `Addon`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DeclaredCondition {
    /// `Ready`, `Progressing`, `Degraded`, `Drifted`, `Stalled`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False`, `Unknown`.
    pub status: String,
    /// One CamelCase word.
    pub reason: String,
    /// What happened.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When `status` last changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// Since then, for people (`45s`, `12m`, `3h`, `2d`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age: Option<String>,
}

/// The block of `addon`, ages as of `now`.
pub fn declared(addon: &Addon, now: DateTime<Utc>) -> Declared {
    let status = addon.status.clone().unwrap_or_default();
    let generation = addon.metadata.generation;
    let conditions = status
        .conditions
        .iter()
        .map(|c| DeclaredCondition {
            type_: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_transition_time: c.last_transition_time.clone(),
            age: c
                .last_transition_time
                .as_deref()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| {
                    age(now
                        .signed_duration_since(t.with_timezone(&Utc))
                        .num_seconds())
                }),
        })
        .collect();
    Declared {
        name: addon.metadata.name.clone().unwrap_or_default(),
        namespace: addon.metadata.namespace.clone().unwrap_or_default(),
        generation,
        observed_generation: status.observed_generation,
        stale: generation.is_some() && status.observed_generation != generation,
        version: addon.spec.version.clone(),
        applied_version: status.applied_version.clone(),
        drift_policy: addon
            .spec
            .drift
            .as_ref()
            .map(|d| d.policy)
            .unwrap_or_default(),
        suspended: addon.spec.suspend,
        rollout_stage: status.rollout_stage.clone(),
        cluster_summary: status.cluster_summary.clone(),
        consecutive_failures: status.consecutive_failures,
        last_error: status.last_error.clone(),
        conditions,
    }
}

/// Seconds as kubectl shows ages.
fn age(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m", s / 60),
        7200..=172_799 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::crd::{AddonSpec, AddonStatus, Condition, Drift};

    #[test]
    fn the_block_says_stale_when_the_controller_has_not_seen_the_spec() {
        let mut addon = Addon::new(
            "demo",
            AddonSpec {
                version: Some("^1.0".into()),
                drift: Some(Drift {
                    policy: DriftPolicy::Warn,
                    exclusions: Vec::new(),
                }),
                ..AddonSpec::default()
            },
        );
        addon.metadata.generation = Some(3);
        addon.status = Some(AddonStatus {
            observed_generation: Some(2),
            conditions: vec![Condition {
                type_: "Ready".into(),
                status: "True".into(),
                reason: "Enabled".into(),
                message: "enabled on 1 cluster(s)".into(),
                observed_generation: Some(2),
                last_transition_time: Some("2026-01-01T00:00:00Z".into()),
            }],
            ..AddonStatus::default()
        });
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:05:30Z")
            .unwrap()
            .with_timezone(&Utc);
        let block = declared(&addon, now);
        assert!(block.stale);
        assert_eq!(block.drift_policy, DriftPolicy::Warn);
        assert_eq!(block.conditions[0].age.as_deref(), Some("5m"));
        let json = serde_json::to_value(&block).unwrap();
        assert_eq!(json["observedGeneration"], 2);
        assert_eq!(json["driftPolicy"], "warn");
        assert_eq!(json["conditions"][0]["type"], "Ready");
        addon.status.as_mut().unwrap().observed_generation = Some(3);
        assert!(!declared(&addon, now).stale);
    }

    #[test]
    fn ages_read_as_kubectl_shows_them() {
        assert_eq!(age(-5), "0s");
        assert_eq!(age(59), "59s");
        assert_eq!(age(600), "10m");
        assert_eq!(age(3 * 3600), "3h");
        assert_eq!(age(3 * 86_400), "3d");
    }
}
