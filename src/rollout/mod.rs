//! Staged rollout: an addon's new revision goes to clusters stage by stage (staging before
//! production), each stage in batches, and the next stage starts only when every cluster of the
//! stage has stayed healthy **on the new revision** for the stage's soak time.
//!
//! Parts: the spec ([`Rollout`], [`Stage`], [`LabelSelector`]; serde camelCase, as the `Addon`
//! resource's `rollout` field), the pure planner ([`plan`]: clusters → ordered stages with
//! batches), the gate ([`gate`]: observations → waiting, passed or failed, with a persisted
//! [`RolloutState`] so a controller resumes after a restart), and the one-shot runner of the CLI
//! ([`engine::run`]: apply, wait for the gate, soak, next batch; every call into `plan`, `apply`
//! and `state` of this module is in `engine`).
//!
//! Guarantees: a cluster is in the first stage whose selector selects it; clusters no stage
//! selects are reported and never touched; a failed gate stops the rollout before any later
//! batch or stage is applied; a health observed for another revision (the old version, or
//! before this batch's apply was recorded) never counts.

pub mod engine;
pub mod gate;
mod planner;
mod selector;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use gate::{evaluate, GateState, Observation, RolloutState, Verdict};
pub use planner::{plan, ClusterLabels, PlannedStage, RolloutPlan};
pub use selector::{LabelSelector, Operator, Requirement};

/// The progress deadline when none is given.
pub const DEFAULT_PROGRESS_DEADLINE_SECONDS: u64 = 600;

/// Longest soak or deadline accepted (a week), in seconds.
pub const MAX_SECONDS: u64 = 7 * 24 * 3600;

/// Most stages accepted.
pub const MAX_STAGES: usize = 100;

/// How an addon's new revision reaches its clusters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rollout {
    /// The stages, in order.
    pub stages: Vec<Stage>,
    /// How long one gate (a batch's clusters becoming healthy and soaking) may take, in seconds.
    #[serde(default = "default_deadline")]
    pub progress_deadline_seconds: u64,
}

fn default_deadline() -> u64 {
    DEFAULT_PROGRESS_DEADLINE_SECONDS
}

/// One stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Stage {
    /// Its name (unique).
    pub name: String,
    /// The clusters it covers (those no earlier stage took); `{}` = every cluster.
    #[serde(default)]
    pub cluster_selector: LabelSelector,
    /// Clusters applied at once (a number, or `"NN%"` of the stage's clusters, rounded up);
    /// absent = all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<MaxConcurrency>,
    /// Failed clusters the stage tolerates (default 0).
    #[serde(default)]
    pub max_failures: u32,
    /// How long every cluster of a batch must stay healthy on the new revision, in seconds.
    #[serde(default)]
    pub soak_seconds: u64,
}

/// A batch size: a number of clusters or a percentage of the stage's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxConcurrency {
    /// At most this many clusters.
    Count(u32),
    /// At most this percentage of the stage's clusters (rounded up, at least one).
    Percent(u8),
}

impl MaxConcurrency {
    /// The batch size for a stage of `clusters` clusters (at least 1).
    pub fn batch_size(self, clusters: usize) -> usize {
        let size = match self {
            MaxConcurrency::Count(n) => usize::try_from(n).unwrap_or(usize::MAX),
            MaxConcurrency::Percent(p) => (clusters * usize::from(p)).div_ceil(100),
        };
        size.max(1)
    }

    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Some(number) = text.strip_suffix('%') {
            return match number.trim().parse::<u8>() {
                Ok(p) if (1..=100).contains(&p) => Ok(MaxConcurrency::Percent(p)),
                _ => Err(format!("`{text}`: a percentage must be 1% to 100%")),
            };
        }
        match text.parse::<u32>() {
            Ok(n) if n > 0 => Ok(MaxConcurrency::Count(n)),
            _ => Err(format!(
                "`{text}`: expected a number of clusters (at least 1) or a percentage such as `25%`"
            )),
        }
    }
}

impl Serialize for MaxConcurrency {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            MaxConcurrency::Count(n) => serializer.serialize_u32(*n),
            MaxConcurrency::Percent(p) => serializer.serialize_str(&format!("{p}%")),
        }
    }
}

impl<'de> Deserialize<'de> for MaxConcurrency {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Number(u64),
            Text(String),
        }
        let text = match Given::deserialize(deserializer)? {
            Given::Number(n) => n.to_string(),
            Given::Text(t) => t,
        };
        MaxConcurrency::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Rollout {
    /// Checks what serde cannot: at least one stage, unique names, selectors' operators and
    /// values, bounded times.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] naming the stage and the field.
    pub fn validate(&self) -> Result<()> {
        let invalid = |message: String| Err(Error::Invalid { message });
        if self.stages.is_empty() {
            return invalid("`stages` is empty: give at least one stage".to_owned());
        }
        if self.stages.len() > MAX_STAGES {
            return invalid(format!("more than {MAX_STAGES} stages"));
        }
        if self.progress_deadline_seconds == 0 || self.progress_deadline_seconds > MAX_SECONDS {
            return invalid(format!(
                "`progressDeadlineSeconds` must be 1 to {MAX_SECONDS}"
            ));
        }
        let mut names = BTreeMap::new();
        for (i, stage) in self.stages.iter().enumerate() {
            if stage.name.trim().is_empty() {
                return invalid(format!("stage {}: `name` is empty", i + 1));
            }
            if let Some(first) = names.insert(stage.name.as_str(), i) {
                return invalid(format!(
                    "stages {} and {} are both named `{}`",
                    first + 1,
                    i + 1,
                    stage.name
                ));
            }
            if stage.soak_seconds > MAX_SECONDS {
                return invalid(format!(
                    "stage `{}`: `soakSeconds` must be at most {MAX_SECONDS}",
                    stage.name
                ));
            }
            stage
                .cluster_selector
                .validate()
                .map_err(|message| Error::Invalid {
                    message: format!("stage `{}`: `clusterSelector`: {message}", stage.name),
                })?;
        }
        Ok(())
    }
}

/// Errors of staged rollouts.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The rollout spec is not usable.
    #[error("invalid rollout: {message}")]
    Invalid {
        /// What is wrong, naming the stage and field.
        message: String,
    },
    /// No stage selects any cluster.
    #[error("no stage selects any cluster (known: {})", known.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "))]
    NothingSelected {
        /// The clusters there are.
        known: Vec<String>,
    },
    /// The addon is installed at another version on clusters after the first batch and
    /// KubeVela deploys it: its Application holds one revision for every cluster, so those
    /// clusters cannot be held at their version until their stage comes.
    #[error("addon `{addon}` {installed} is installed on {} and KubeVela deploys it: its Application puts one revision on every cluster, so a staged rollout of {target} cannot keep them on {installed} until their stage comes; upgrade every cluster at once with `addonctl upgrade {addon}`", clusters.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "))]
    StagedUpgrade {
        /// The addon.
        addon: String,
        /// The version installed.
        installed: String,
        /// The version rolled out.
        target: String,
        /// The clusters running it outside the first batch.
        clusters: Vec<String>,
    },
    /// The addon as planned goes to clusters no stage selects (`local` for an addon whose
    /// metadata sets `deployTo.runtimeCluster`): they would change outside every gate.
    #[error("addon `{addon}` also goes to {} (`local`, the control plane, is added for an addon whose metadata sets `deployTo.runtimeCluster`, as KubeVela does), and no stage selects {}: add a stage that does (`clusterSelector: {{matchLabels: {{{CLUSTER_NAME_LABEL}: {}}}}}`) so that it is applied and gated as a stage; nothing was changed", clusters.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "), if clusters.len() == 1 { "it" } else { "them" }, clusters.first().map_or("local", String::as_str))]
    Uncovered {
        /// The addon.
        addon: String,
        /// The clusters it goes to that no stage selects.
        clusters: Vec<String>,
    },
    /// The library failed (planning, applying, reading the record or clusters).
    #[error(transparent)]
    Library(#[from] Box<crate::Error>),
}

/// The label every cluster has for a stage's selector, whatever its own labels: its name
/// (`local` for the control plane, which has no other).
pub const CLUSTER_NAME_LABEL: &str = "addonctl.io/cluster-name";

crate::error::front_end_error!(
    Error,
    Error::Invalid { .. }
        | Error::NothingSelected { .. }
        | Error::StagedUpgrade { .. }
        | Error::Uncovered { .. } => crate::ErrorKind::Invalid,
);

/// The module's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_spec_reads_as_the_addon_resource_writes_it() {
        let rollout: Rollout = serde_json::from_value(json!({
            "stages": [
                {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
                 "soakSeconds": 60},
                {"name": "prod", "clusterSelector": {"matchExpressions": [
                    {"key": "env", "operator": "In", "values": ["prod"]}]},
                 "maxConcurrency": "25%", "maxFailures": 1},
            ],
            "progressDeadlineSeconds": 900,
        }))
        .unwrap();
        rollout.validate().unwrap();
        assert_eq!(rollout.stages[0].max_failures, 0);
        assert_eq!(
            rollout.stages[1].max_concurrency,
            Some(MaxConcurrency::Percent(25))
        );
        let back = serde_json::to_value(&rollout).unwrap();
        assert_eq!(back["stages"][1]["maxConcurrency"], "25%");
        let again: Rollout = serde_json::from_value(back).unwrap();
        assert_eq!(again, rollout);
    }

    #[test]
    fn max_concurrency_is_a_positive_number_or_a_percentage() {
        for (given, expected) in [
            (json!(3), MaxConcurrency::Count(3)),
            (json!("3"), MaxConcurrency::Count(3)),
            (json!("50%"), MaxConcurrency::Percent(50)),
        ] {
            assert_eq!(
                serde_json::from_value::<MaxConcurrency>(given).unwrap(),
                expected
            );
        }
        for bad in [
            json!(0),
            json!("0%"),
            json!("150%"),
            json!("many"),
            json!(-1),
        ] {
            assert!(
                serde_json::from_value::<MaxConcurrency>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn invalid_rollouts_are_refused_naming_the_stage() {
        let stage = |name: &str| Stage {
            name: name.to_owned(),
            cluster_selector: LabelSelector::default(),
            max_concurrency: None,
            max_failures: 0,
            soak_seconds: 0,
        };
        let cases = [
            (vec![], "empty"),
            (vec![stage("a"), stage("a")], "both named `a`"),
            (vec![stage(" ")], "`name` is empty"),
        ];
        for (stages, expected) in cases {
            let rollout = Rollout {
                stages,
                progress_deadline_seconds: 60,
            };
            let error = rollout.validate().unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
        let unknown = serde_json::from_value::<Rollout>(json!({"stages": [], "steps": []}));
        assert!(unknown.is_err());
    }
}
